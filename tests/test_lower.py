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


class Recorder(lw.TextSpelling):
    """A back end (and its own writer) that writes down what `Spelling.core` asks of it,
    in order."""

    def __init__(self, layout=None):
        super().__init__(self)
        self.log: list[tuple] = []
        self.n = 0
        self.is_direct = False
        self.layout = layout

    @property
    def direct(self):
        return self.is_direct

    @direct.setter
    def direct(self, on):
        self.log.append(("direct", on))
        self.is_direct = on

    def running(self):
        return 0

    def value(self, x):
        name = x.sym.name if isinstance(x, (m.Var, m.Elem)) else str(x.value) if isinstance(x, m.Const) else "?"
        self.log.append(("value", name))
        return name

    def fresh(self):
        self.n += 1
        return f"t{self.n}"

    def assign(self, tmp, code):
        self.log.append(("assign", tmp, code))

    def paren(self, code):
        return f"({code})"

    def store(self, loc, value):
        self.log.append(("store", loc.sym.name))

    def store_code(self, loc, code):
        self.log.append(("store", loc.sym.name, code))

    def place(self, loc):
        return loc.sym.name

    def task(self, gid):
        return f"task{gid}"

    def read(self, place):
        return place

    def write(self, place, code, const=None):
        self.log.append(("write", place, code))

    def note(self, text):
        pass

    def when(self, cond, then, note=None):
        self.log.append(("if", cond))
        then()
        self.log.append(("end",))

    def first(self, cases):
        for cond, _, body in cases:
            self.log.append(("elif", cond))
            body()
        self.log.append(("end",))

    def bit_in_set(self, nr, bits):
        return f"checked({nr})"

    def check_bit(self, nr, place, size):
        self.log.append(("check", nr, size))

    def fits(self, t, span):
        pass

    def wrap(self, code, t):
        return f"wrap({code})"

    def min_max(self, a, b, is_min, signed):
        return f"{'min' if is_min else 'max'}({a}, {b})"

    def abs(self, x, signed):
        return f"abs({x})"


def spelled(body: str, decls: str = "var v: u8 = 0;\nvar d: 0..3 = 1;\nvar bits: bitset(4) = {};\n") -> list:
    """What `Spelling.builtin` asks a back end to write for each primitive call in `body`."""
    model = resolve(parse(f"model m;\n{decls}process p {{\n  var r: u8 = 0;\n  var i: 0..7 = 0;\n{body}\n}}\n",
                          "t.spec"), "base", {})
    logs = []
    for call in calls_in(model):
        rec = Recorder()
        code = rec.builtin(call)
        logs.append((rec.log, code))
    return logs


def test_a_fetch_add_reads_the_delta_first_wraps_and_keeps_the_old_value_before_its_store():
    [(log, code)] = spelled("r = atomic_fetch_add(d, v);")
    assert log == [("direct", True), ("value", "d"), ("value", "v"), ("assign", "t1", "wrap(v + d)"),
                   ("assign", "t2", "v"), ("store", "v", "t1"), ("direct", False)]
    assert code == "t2"


def test_a_cmpxchg_stores_only_when_the_old_value_is_the_expected_one():
    [(log, code)] = spelled("r = cmpxchg(v, 2, 3);")
    assert log[1:-1] == [("value", "v"), ("assign", "t1", "v"), ("value", "2"), ("if", "t1 == 2"), ("store", "v"),
                         ("end",)]
    assert code == "t1"  # the old value; spin_trylock's is whether it succeeded


def test_a_computed_bit_number_is_checked_and_an_unused_old_bit_is_not_read():
    (set_log, set_code), (tas_log, tas_code), (test_log, test_code) = spelled(
        "set_bit(i, bits);\n  if (test_and_set_bit(2, bits)) { skip; }\n  if (test_bit(i, bits)) { skip; }")
    assert ("check", "i", 4) in set_log and set_code is None
    assert not any(e[0] == "assign" for e in set_log)
    assert not any(e[0] == "check" for e in tas_log)  # a constant bit of the set
    assert ("assign", "t1", "(bits >> 2) & 1") in tas_log and tas_code == "t1"
    assert test_code == "((bits >> checked(i)) & 1)" and ("direct", True) not in test_log  # a plain read
