"""ir.build on small models: the state layout (one slot per variable element, pc and
task state, store-buffer entries under tso) and the atomic steps of each process."""

from __future__ import annotations

from checker import ir
from checker.front.parse import parse
from checker.resolve import resolve


def build(text: str, variant: str = "base") -> ir.Program:
    return ir.build(resolve(parse(text, "t.spec"), variant, {}))


TWO = """model two;
var x: 0..3 = 1;
var a[2]: 0..1 = 0;
process p[2] {
  var r: 0..3 = 0;
  r = x;
  x = r;
}
process q { a[1] = 1; }
"""


def test_the_layout_has_a_slot_per_element_local_and_pc():
    prog = build(TWO)
    names = [s.name for s in prog.layout.slots]
    assert {"x", "a[0]", "a[1]", "p[0].r", "p[1].r"} <= set(names)
    kinds = {s.name: s.kind for s in prog.layout.slots}
    assert kinds["x"] is ir.SlotKind.VAR and sum(k is ir.SlotKind.PC for k in kinds.values()) == 3
    assert prog.initial_states == (tuple(1 if n == "x" else 0 for n in names),)  # x = 1, the rest 0
    assert prog.layout.instance_names == ("p[0]", "p[1]", "q")


def test_each_statement_is_one_step_and_the_end_is_a_pc():
    prog = build(TWO)
    p = next(pr for pr in prog.processes if pr.name == "p")
    assert [s.text for s in p.steps] == ["r = x;", "x = r;"]
    assert p.instances == 2 and len(p.steps_at) == 3 and p.end_pcs == frozenset({2})
    assert [s.label for s in p.steps] == [None, None]


def test_an_atomic_block_is_one_step_and_a_label_names_its_pc():
    prog = build("""model m;
var x: 0..2 = 0;
process p { here: atomic { x = x + 1; x = x + 1; } }
""")
    (p,) = prog.processes
    assert len(p.steps) == 1 and p.steps[0].label == "here"
    assert p.label_pcs["here"] == frozenset({0})


def test_under_tso_each_cpu_that_stores_plainly_gets_a_store_buffer():
    prog = build("""model m;
memory tso(2);
var x: 0..1 = 0;
var y: 0..1 = 0;
process a { x = 1; }
process b { y = 1; }
process c { atomic { x = 0; } }
""")
    buffers = {b.cpu: b for b in prog.layout.buffers}
    assert set(buffers) == {"a", "b"}  # c stores only in an atomic step: straight to memory
    assert buffers["a"].capacity == 2 and [s.kind for s in prog.layout.slots].count(ir.SlotKind.BUFFER) == 8
    assert {s.name for s in buffers["a"].locations} == {"x"}
