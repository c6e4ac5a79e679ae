"""The table of kernel primitives (checker/semantics/primitives.py), its one lowering
(checker/semantics/lower.py), and the primitives added as rows of it.

The table must say what the kernel documents (atomic_t.txt, atomic_bitops.txt,
memory-barriers.txt), the reference must show the table, the back ends must not name a
primitive, and every new primitive must mean the same in the explicit engine, BMC and
the Promela twin, and under sc and tso the same as its fully ordered (locked) form.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agreement import assert_engines_agree, compiled
from checker import ir
from checker.semantics.primitives import ALIASES, BUILTINS, X86, Cls, Order, Returns, reference_table
from checker.backends.python import compile_program
from checker.engines.explicit import explore
from checker.base.errors import SpecError
from checker.semantics.lower import Cas, Store, lower
from checker.front.parse import parse
from checker.resolve import resolve

ROOT = Path(__file__).resolve().parent.parent
REDUCTIONS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "checker/engines/reduce").glob("*.py"))
BACK_ENDS = ["checker/ir.py", "checker/backends/python.py", "checker/backends/promela.py", "checker/engines/smt/encode.py",
             *REDUCTIONS, "checker/semantics/lower.py", "checker/engines/explain.py"]


# ---- the table says what the kernel documents

def test_value_returning_rmws_are_fully_ordered_and_the_others_relaxed():
    for p in BUILTINS.values():
        if p.cls is not Cls.RMW or p.returns is Returns.SUCCESS:
            continue
        suffix = next((s for s in ("_relaxed", "_acquire", "_release") if p.name.endswith(s)), "")
        if suffix:
            assert p.order is Order[suffix[1:].upper()], p.name
        elif p.returns is Returns.NOTHING:
            assert p.order is Order.RELAXED, p.name  # atomic_inc, set_bit: unordered
        else:
            assert p.order is Order.FULL, p.name
        assert p.x86 is X86.LOCKED, p.name  # x86 has only the locked instruction


def test_a_failed_cmpxchg_orders_nothing():
    for name in ("cmpxchg", "cmpxchg_relaxed", "cmpxchg_acquire", "cmpxchg_release", "spin_trylock"):
        assert BUILTINS[name].failure_order is Order.RELAXED, name
    assert BUILTINS["cmpxchg"].order is Order.FULL


def test_lock_and_release_orderings():
    assert (BUILTINS["spin_lock"].order, BUILTINS["spin_lock"].x86) == (Order.ACQUIRE, X86.LOCKED)
    assert (BUILTINS["spin_unlock"].order, BUILTINS["spin_unlock"].x86) == (Order.RELEASE, X86.STORE)
    assert (BUILTINS["smp_load_acquire"].order, BUILTINS["smp_store_release"].order) == (Order.ACQUIRE,
                                                                                          Order.RELEASE)
    # on x86 smp_mb__after_spinlock is empty: the lock was already a locked instruction
    assert BUILTINS["smp_mb__after_spinlock"].x86 is X86.PLAIN


def test_every_alias_names_a_row():
    assert set(ALIASES.values()) <= set(BUILTINS)


def test_language_md_shows_the_table():
    doc = (ROOT / "spec" / "LANGUAGE.md").read_text(encoding="utf-8")
    assert reference_table() in doc
    assert reference_table(wait_queues=True) in doc


def test_the_reference_table_changes_with_a_row(monkeypatch):
    """The comparison above can fail: a changed doc line changes the rendered table."""
    import dataclasses

    import checker.semantics.primitives as b
    row = b._ROWS[0]
    monkeypatch.setattr(b, "_ROWS", [dataclasses.replace(row, doc="something else"), *b._ROWS[1:]])
    doc = (ROOT / "spec" / "LANGUAGE.md").read_text(encoding="utf-8")
    assert reference_table() not in doc


# ---- one lowering: the back ends know core operations, not names

@pytest.mark.parametrize("path", BACK_ENDS)
def test_back_ends_name_no_primitive(path):
    """A primitive's name as a string in a back end is a second definition of it."""
    code = (ROOT / path).read_text(encoding="utf-8")
    # not primitives: enum members (StepKind.BARRIER = "barrier") and the Python builtins
    # the generated code may call ("min": min)
    code = re.sub(r'^\s*[A-Z_]+ = ".*$|"__builtins__".*$', "", code, flags=re.M)
    named = sorted(n for n in set(BUILTINS) | set(ALIASES) if re.search(rf"[\"']{n}[\"']", code))
    assert named == []


@pytest.mark.parametrize("path", ["checker/ir.py", "checker/backends/python.py", "checker/backends/promela.py",
                                  *REDUCTIONS, "checker/engines/smt/encode.py"])
def test_back_ends_take_primitive_facts_from_the_table_not_resolve(path):
    code = (ROOT / path).read_text(encoding="utf-8")
    assert not re.search(r"from \.+resolve import", code)


def _builtin_call(proc_body: str, decls: str) -> object:
    model = resolve(parse(f"model t;\n{decls}\nprocess p {{ {proc_body} }}\n", "t.spec"), "base")
    found = []

    def walk(x):
        if hasattr(x, "__dataclass_fields__"):
            if type(x).__name__ == "Builtin":
                found.append(x)
            for f in x.__dataclass_fields__:
                walk(getattr(x, f))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
    walk(model.processes)
    return found[0]


def test_trylock_lowers_to_a_cas_of_false_to_true():
    b = _builtin_call("if (spin_trylock(l)) skip;", "var l: bool = false;")
    k = lower(b)
    assert isinstance(k, Cas) and k.success and (k.expect.value, k.new.value) == (0, 1)


def test_unlock_lowers_to_a_store_of_false():
    b = _builtin_call("spin_unlock(l);", "var l: bool = true;")
    k = lower(b)
    assert isinstance(k, Store) and k.value.value == 0 and k.prim.order is Order.RELEASE


# ---- the new primitives

def _states(text: str, variant: str = "base", mm: str | None = None) -> tuple[int, list]:
    """The explicit engine's state count and violated properties."""
    ex = explore(compile_program(ir.build(resolve(parse(text, "m.spec"), variant, memory=mm))))
    assert ex.stats.complete
    return ex.stats.states, sorted(ex.counterexamples)


COUNTER = """model counter;
var n: 0..6 = 0;
var total: 0..12 = 0;
process p[2] {{
  var r: 0..6 = 0;
  r = {op}(1, n);
  total = total + r;
}}
invariant fine: total <= 12;
"""


@pytest.mark.parametrize("base", ["atomic_add_return", "atomic_fetch_add"])
@pytest.mark.parametrize("suffix", ["_relaxed", "_acquire", "_release"])
def test_ordered_forms_behave_as_the_fully_ordered_form_under_sc_and_tso(base, suffix):
    for mm in ("sc", "tso"):
        assert _states(COUNTER.format(op=base + suffix), mm=mm) == _states(COUNTER.format(op=base), mm=mm)


def test_fetch_add_returns_the_old_value_and_add_return_the_new():
    src = """model r;
var n: 0..9 = 3;
var a: 0..9 = 0;
var b: 0..9 = 0;
process p { a = atomic_fetch_add(2, n); b = atomic_add_return(2, n); }
invariant vals: p@end -> (a == 3 && b == 7 && n == 7);
"""
    assert _states(src)[1] == []
    assert _states(src.replace("a == 3", "a == 5"))[1] == ["vals"]


def test_inc_and_test_is_true_only_at_zero():
    text = """model t27;
var pending: -2..3 = START;
const START = -1;
var b: bool = false;
process p { if (atomic_inc_and_test(pending)) b = true; }
invariant zero: p@end -> (b == (pending == 0));
"""
    for start in (-2, -1, 0):
        assert _states(text.replace("START;", f"{start};").replace("const START = -1;\n", ""))[1] == []


LOCKED = """model locked;
memory tso;
var lock: bool = false;
var count: 0..2 = 0;
process cpu[2] {
  var tmp: 0..2 = 0;
  spin_lock(lock);
  tmp = count;
  count = tmp + 1;
  spin_unlock(lock);
}
final both: count == 2;
"""


def test_spin_lock_is_an_await_and_set():
    """spin_lock(l) has the states of `atomic { await !l; l = true; }`, under sc and tso."""
    hand = LOCKED.replace("spin_lock(lock);", "atomic { await !lock; lock = true; }")
    for mm in ("sc", "tso"):
        assert _states(LOCKED, mm=mm) == _states(hand, mm=mm)
        assert _states(LOCKED, mm=mm)[1] == []


def test_spin_lock_drains_the_store_buffer_under_tso():
    model = resolve(parse(LOCKED, "m.spec"), "base")
    prog = ir.build(model)
    steps = [s for p in prog.processes for s in p.steps if "spin_lock" in s.text]
    assert steps and all(s.fence for s in steps)
    unlock = [s for p in prog.processes for s in p.steps if "spin_unlock" in s.text]
    assert unlock and not any(s.fence for s in unlock)  # a plain (buffered) store on x86


def test_trylock_takes_only_a_free_lock():
    text = """model try;
var lock: bool = false;
var got: 0..2 = 0;
process p[2] { if (spin_trylock(lock)) got = got + 1; }
invariant one: got <= 1;
final someone: got == 1;
"""
    assert _states(text)[1] == []


def test_spin_lock_cannot_be_inside_atomic():
    with pytest.raises(SpecError, match="cannot be inside `atomic`"):
        resolve(parse("model a;\nvar l: bool = false;\nprocess p { atomic { spin_lock(l); } }\n", "a.spec"), "base")


def test_spin_lock_needs_a_bool():
    with pytest.raises(SpecError, match="needs a lock here"):
        resolve(parse("model a;\nvar l: 0..3 = 0;\nprocess p { spin_lock(l); }\n", "a.spec"), "base")


def test_fetch_or_needs_a_fixed_width_variable():
    with pytest.raises(SpecError, match="unsigned fixed-width"):
        resolve(parse("model a;\nvar f: 0..3 = 0;\nvar o: 0..3 = 0;\nprocess p { o = atomic_fetch_or(1, f); }\n",
                      "a.spec"), "base")


def test_spin_lock_is_a_statement():
    with pytest.raises(SpecError, match="is a statement, not a value"):
        resolve(parse("model a;\nvar l: bool = false;\nvar x: bool = false;\nprocess p { x = spin_lock(l); }\n",
                      "a.spec"), "base")


# ---- the explicit engine, BMC and the Promela twin agree on every new primitive

AGREE = {
    "returning": """model returning;
var n: 0..7 = 0;
var flags: u8 = 0;
var seen: 0..7 = 0;
var old: u8 = 0;
process a {
  seen = atomic_add_return_relaxed(1, n);
  old = atomic_fetch_or_acquire(2, flags);
  if (atomic_inc_and_test(n)) seen = 0;
}
process b {
  seen = atomic_fetch_add_release(2, n);
  old = atomic_fetch_or(1, flags) | atomic_fetch_or_relaxed(4, flags);
  seen = atomic_add_return(1, n) + atomic_fetch_add(0, n) - atomic_add_return_acquire(0, n)
         + atomic_fetch_add_acquire(0, n) - atomic_fetch_add_relaxed(0, n);
  old = atomic_fetch_or_release(0, flags);
}
invariant not_all: !(a@end && b@end && flags == 7 && n == 5);
invariant small: seen < 4;
""",
    "exchange": """model exchange;
var m: 0..3 = 0;
var got: 0..3 = 0;
process a { got = xchg_relaxed(m, 1); if (cmpxchg_acquire(m, 1, 2) == 1) got = 3; }
process b { if (cmpxchg_relaxed(m, 0, 3) == 0) got = cmpxchg_release(m, 3, 1); }
invariant never_three: got != 3;
invariant not_one: !(a@end && b@end && m == 1);
""",
    "locks": """model locks;
var lock: bool = false;
var inside: 0..2 = 0;
var hits: 0..3 = 0;
process cpu[2] {
  spin_lock(lock);
  smp_mb__after_spinlock();
  inside = inside + 1;
  hits = hits + 1;
  inside = inside - 1;
  spin_unlock(lock);
}
process other {
  if (spin_trylock(lock)) { smp_load_acquire(inside); smp_store_release(hits, hits); spin_unlock(lock); }
}
invariant exclusive: inside <= 1;
invariant not_two: hits < 2;
""",
}


@pytest.mark.parametrize("name", sorted(AGREE))
def test_new_primitives_explicit_and_bmc_agree(name):
    exp, _ = assert_engines_agree(compiled(AGREE[name]), 14)
    assert exp, "each model has a violation for the engines to agree on"


@pytest.mark.parametrize("name", sorted(AGREE))
@pytest.mark.parametrize("mm", ["sc", "tso"])
def test_new_primitives_pan_agrees(name, mm, tmp_path):
    from test_promela import agreement, needs_spin
    needs_spin()
    spec = tmp_path / f"{name}.spec"
    text = AGREE[name]
    if mm == "tso":
        if "u8" in text:
            pytest.skip("u8 under tso is not translated")
        text = text.replace(f"model {name};\n", f"model {name};\nmemory tso;\n")
    spec.write_text(text)
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == []
    assert differences == {"base": []}
    assert any(o["verdict"] == "violated" for o in ours["variants"][0]["outcomes"])
