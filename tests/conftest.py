import pytest

# Two processes increment a shared counter; without `atomic` one update is lost.
COUNTER = """// Two increments; without atomic one is lost.
model counter;
const ATOMIC = false;
var x: 0..2 = 0;
process inc[2] {
  var r: 0..2 = 0;
  if (ATOMIC) { atomic { x = x + 1; } }
  else { r = x; x = r + 1; }
}
invariant both_counted: (inc[0]@end && inc[1]@end) -> x == 2;
expect violated both_counted;
variant atomic_inc { ATOMIC = true; }
"""


@pytest.fixture
def counter(tmp_path):
    p = tmp_path / "counter.spec"
    p.write_text(COUNTER)
    return str(p)
