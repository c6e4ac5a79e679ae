"""Bit-vector types u8..u64: C unsigned semantics in the explicit engine."""

import pytest

from checker import ir
from checker.cli import main
from checker.backends.python import compile_program
from checker.engines.explicit import explore
from checker.base.errors import SpecError
from checker.front.parse import parse
from checker.resolve import resolve

WRAP = """
model bv;
var x: u8 = 250;
var y: u64 = -1;
var r: 0..300 = 0;
fn low_byte(v: u64): u8 = v;
process p {
  x = x + 10;
  assert wrap: x == 4;
  y = y + 1;
  assert y0: y == 0;
  r = x - 5;
  assert r255: r == 255;
  y = y - 1;
  assert big: y > 0 && y / 2 == 0x7fffffffffffffff && (y >> 63) == 1 && (y << 64) == 0 && y % 10 == 5;
  assert neg: -y == 1 && ~y == 0 && u8(y) == 255 && u16(300) == 300 && u8(300) == 44;
  assert cmp: u64(-1) > 5 && max(x, -1) == 255 && min(u8(3), 7) == 3 && (x < 0) == false;
  assert fns: low_byte(0x1234) == 0x34;
  atomic_inc(x);
  r = xchg(x, 300);
  assert xchg_wraps: r == 5 && x == 44;
  y = -1;
  if (atomic_inc_return(y) == 0) { r = 1; } else { r = 2; }
  assert inc_wraps: r == 1 && y == 0;
}
"""


def _explore(text):
    spec = parse(text, "m.spec")
    cm = compile_program(ir.build(resolve(spec)))
    return cm, explore(cm)


def test_unsigned_arithmetic_wraps_like_c():
    cm, ex = _explore(WRAP)
    assert ex.model_error is None
    assert ex.counterexamples == {}
    assert ex.stats.complete


def test_a_failing_unsigned_assert_is_found():
    _, ex = _explore("model m; var x: u8 = 0; process p { x = x - 1; assert x < 255; }")
    assert "assertions" in ex.counterexamples


def test_any_over_u8_enumerates_256_initial_states():
    cm, ex = _explore("model m; var x: u8 = any; process p { x = x * 2; assert even: x % 2 == 0; }")
    assert len(cm.program.initial_states) == 256
    assert ex.counterexamples == {}


def test_any_over_u64_is_refused_by_the_explicit_engine(tmp_path, capsys):
    f = tmp_path / "m.spec"
    f.write_text("model m;\nvar now: u64 = any;\nprocess p { now = now + 1; }\n")
    assert main([str(f)]) == 2
    err = capsys.readouterr().err
    assert "m.spec:2:5: error: `any` gives 18,446,744,073,709,551,616 initial states" in err
    assert "--engine bmc" in err and "--engine induction" in err


def test_storing_a_large_unsigned_value_in_a_range_is_a_model_error():
    _, ex = _explore("model m; var x: u8 = 200; var r: 0..100 = 0; process p { r = x; }")
    assert ex.model_error is not None
    assert "outside the range of r" in ex.model_error.message


@pytest.mark.parametrize("text, message", [
    ("model m; var b: bool = true; var x: u8 = 0; process p { x = b; }", "type mismatch"),
    ("model m; var x: u8 = 0; process p { x = u8(true); }", "cannot convert bool to u8"),
    ("model m; var x: u9 = 0; process p { skip; }", "unknown type 'u9'"),
    ("model m; var x: u8 = 0; process p { x = u8(1, 2); }", "takes one argument"),
    ("model m; var x: u8 = 0; process p { x = x / 0; }", None),
])
def test_bitvector_errors(text, message):
    spec = parse(text, "m.spec")
    if message is None:  # a division by a variable zero is a model error, not a resolve error
        cm = compile_program(ir.build(resolve(spec)))
        assert "division by zero" in explore(cm).model_error.message
        return
    with pytest.raises(SpecError) as e:
        resolve(spec)
    assert message in e.value.message


def test_constant_division_by_zero_is_rejected():
    with pytest.raises(SpecError, match="division by zero"):
        resolve(parse("model m; var x: u8 = 0; process p { x = u8(5) / 0; }", "m.spec"))
