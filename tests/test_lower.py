"""semantics/lower.py: every primitive of the table lowers to one core operation that
carries its row, and the arguments land where the core operation reads them."""

from __future__ import annotations

import pytest

from checker import model as m
from checker.front.parse import parse
from checker.resolve import resolve
from checker.semantics import lower as lw
from checker.semantics.primitives import BUILTINS, Cls

STEP_CLASSES = {Cls.FENCE, Cls.SCHEDULE}  # steps of their own in the IR, not core operations


def calls_in(model: m.Model) -> list[m.Builtin]:
    out = []

    def walk(x) -> None:
        if isinstance(x, m.Builtin):
            out.append(x)
        if hasattr(x, "__dataclass_fields__"):
            for f in x.__dataclass_fields__:
                walk(getattr(x, f))
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)

    for p in model.processes:
        walk(p.body)
    return out


def test_every_lowered_operation_carries_its_primitives_row():
    model = resolve(parse("""model m;
var v: 0..3 = 0;
var bits: bitset(4) = {};
process p {
  var r: 0..3 = 0;
  r = atomic_read(v);
  atomic_set(v, 1);
  atomic_inc(v);
  r = xchg(v, 2);
  r = cmpxchg(v, 2, 3);
  set_bit(1, bits);
  if (test_and_clear_bit(1, bits)) { skip; }
}
""", "t.spec"), "base", {})
    calls = calls_in(model)
    assert len(calls) >= 7
    for call in calls:
        core = lw.lower(call)
        assert core.prim is BUILTINS[call.name], call.name
    kinds = {call.name: type(lw.lower(call)).__name__ for call in calls}
    assert kinds["atomic_read"] == "Load" and kinds["xchg"] == "Xchg" and kinds["cmpxchg"] == "Cas"
    assert kinds["atomic_inc"] == "Add" and kinds["test_and_clear_bit"] == "BitOp"


def test_atomic_inc_adds_a_constant_and_returns_nothing():
    model = resolve(parse("model m;\nvar v: 0..3 = 0;\nprocess p { atomic_inc(v); }\n", "t.spec"), "base", {})
    (call,) = calls_in(model)
    core = lw.lower(call)
    assert isinstance(core, lw.Add) and core.step == 1 and not core.negate and core.delta is None


@pytest.mark.parametrize("name", sorted(n for n, p in BUILTINS.items() if p.cls in STEP_CLASSES))
def test_fences_and_schedule_are_steps_not_core_operations(name):
    assert BUILTINS[name].cls in STEP_CLASSES
