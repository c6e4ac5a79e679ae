"""Lazy propagation under lkmm against the eager machine (`--no-por`).

Lazily a store propagates to a CPU only where that CPU's next step reads, joins or
resets its view, or where the CPU holds up another's store (lkmm_machine.Machine.propagate);
liveness takes those moves as strongly fair. The claim is that nothing a property can
see changes: the same reachable states once the machine's own slots (views, older
messages) are left out, the same violated invariants, deadlocks and final conditions,
and the same liveness verdicts. Checked here on the shipped lkmm variants and on
generated looping programs with awaits, fences, acquire/release and RMWs, where an
eager move that the lazy machine left out would show as a state or a verdict of its own.
The eager machine is itself checked against the axiomatic LKMM and herd7 on litmus
programs (test_lkmm_operational.py, test_lkmm_herd7.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker import ir
from checker.backends.python import compile_program
from checker.engines.explicit import explore
from checker.ir import SlotKind
from checker.front.parse import parse
from checker.resolve import resolve
from checker.pipeline import Options, check_spec, load

ROOT = Path(__file__).resolve().parent.parent


def _reachable(text: str, variant: str, lazy: bool, memory: str | None = "lkmm"):
    program = ir.build(resolve(parse(text, "m.spec"), variant, memory=memory))
    cm = compile_program(program, lazy_propagation=lazy)
    ex = explore(cm, graph=True)
    assert ex.stats.complete
    visible = [k for k, sl in enumerate(cm.layout.slots) if sl.kind is not SlotKind.VIEW]
    return ({tuple(s[k] for k in visible) for s in ex.graph.states}, set(ex.counterexamples),
            len(ex.graph.states))


def _verdicts(result):
    return {(v.variant, o.property): o.verdict for v in result.variants for o in v.outcomes}


SHIPPED = [("models/vcpu_requests.spec", "payload_no_wmb_lkmm"), ("models/vcpu_requests.spec", "lkmm"),
           ("models/vcpu_requests.spec", "no_before_atomic_lkmm"), ("models/halt_poll.spec", "lkmm"),
           ("models/halt_poll.spec", "waker_no_mb_lkmm"), ("models/ipi_fastpath.spec", "base")]


@pytest.mark.parametrize("path,variant", SHIPPED, ids=[f"{Path(p).stem}-{v}" for p, v in SHIPPED])
def test_lazy_propagation_reaches_what_the_eager_machine_reaches(path, variant):
    text = (ROOT / path).read_text()
    eager, eager_cx, eager_n = _reachable(text, variant, lazy=False)
    lazy, lazy_cx, lazy_n = _reachable(text, variant, lazy=True)
    assert lazy == eager
    assert lazy_cx == eager_cx
    assert lazy_n <= eager_n


@pytest.mark.parametrize("path,variant", SHIPPED[:5], ids=[f"{Path(p).stem}-{v}" for p, v in SHIPPED[:5]])
def test_lazy_propagation_keeps_every_verdict_liveness_included(path, variant):
    spec = load(str(ROOT / path))
    eager = check_spec(spec, Options(variants=(variant,), por=False, coverage=False, use_expectations=False))
    lazy = check_spec(spec, Options(variants=(variant,), por=True, coverage=False, use_expectations=False))
    assert _verdicts(lazy) == _verdicts(eager)


def test_a_spinning_reader_sees_the_store_in_the_end_lazily_too(tmp_path):
    """The strong fairness of a lazy move is what lets a spin loop end: its view matters
    at the loop's read, and only there."""
    text = """model spin; memory lkmm;
var x: 0..1 = 0; var done: bool = false;
process w { WRITE_ONCE(x, 1); }
process r { var v: 0..1 = 0; loop { v = READ_ONCE(x); if (v == 1) break; barrier(); } done = true; }
property sees: always eventually done;
"""
    spec_path = tmp_path / "spin.spec"
    spec_path.write_text(text)
    for por in (False, True):
        result = check_spec(load(str(spec_path)), Options(por=por, coverage=False))
        assert _verdicts(result)[("base", "sees")].value == "holds", por


# ---- generated programs ---------------------------------------------------------

LOCS = ["x", "y", "f"]
STORES = ["WRITE_ONCE({l}, {c});", "smp_store_release({l}, {c});", "atomic_set({l}, {c});",
          "set_bit({b}, s);", "clear_bit({b}, s);", "{l} = {c};"]
LOADS = ["v = READ_ONCE({l});", "v = smp_load_acquire({l});", "v = atomic_read({l});",
         "v = xchg({l}, {c});", "v = cmpxchg({l}, {c}, {d});", "v = xchg_relaxed({l}, {c});",
         "v = test_and_set_bit({b}, s) ? 1 : 0;", "v = test_bit({b}, s) ? 1 : 0;"]
FENCES = ["smp_mb();", "smp_rmb();", "smp_wmb();", "smp_mb__before_atomic();", "smp_mb__after_atomic();"]


@st.composite
def statements(draw):
    kind = draw(st.sampled_from(["store", "load", "fence", "await", "if"]))
    fill = dict(l=draw(st.sampled_from(LOCS)), c=draw(st.integers(0, 2)), d=draw(st.integers(0, 2)), b=draw(st.integers(0, 1)))
    if kind == "store":
        return draw(st.sampled_from(STORES)).format(**fill)
    if kind == "load":
        return draw(st.sampled_from(LOADS)).format(**fill)
    if kind == "fence":
        return draw(st.sampled_from(FENCES))
    if kind == "await":
        return f"await READ_ONCE({fill['l']}) != {fill['c']} || v == {fill['d']};"
    return f"if (v == {fill['c']}) {{ WRITE_ONCE({fill['l']}, {fill['d']}); }}"


@st.composite
def programs(draw):
    procs = []
    for i in range(draw(st.integers(2, 3))):
        body = " ".join(draw(st.lists(statements(), min_size=1, max_size=3)))
        looped = draw(st.booleans())
        inner = f"loop {{ {body} seen = v; }}" if looped else f"{body} seen = v;"
        procs.append(f"process p{i} {{ var v: 0..3 = 0; {inner} }}")
    decls = " ".join(f"var {loc}: 0..3 = 0;" for loc in LOCS) + " var seen: 0..3 = 0; var s: bitset(2) = {};"
    props = " ".join(f"invariant {loc}_{k}: {loc} != {k};" for loc in LOCS for k in (1, 2)) + \
        " invariant seen_2: seen != 2; property seen_eventually: always (x == 1 -> eventually seen == 1);"
    return f"model gen; memory lkmm; {decls}\n" + "\n".join(procs) + f"\n{props}\n"


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_generated_programs_reach_the_same_states_lazily(text):
    eager, eager_cx, _ = _reachable(text, "base", lazy=False)
    lazy, lazy_cx, _ = _reachable(text, "base", lazy=True)
    assert lazy == eager, text
    assert lazy_cx == eager_cx, text


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_generated_programs_keep_their_liveness_verdicts_lazily(text):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "gen.spec"
        path.write_text(text)
        spec = load(str(path))
    eager = check_spec(spec, Options(por=False, coverage=False, use_expectations=False))
    lazy = check_spec(spec, Options(por=True, coverage=False, use_expectations=False))
    assert _verdicts(lazy) == _verdicts(eager), text


# ------------------------------------------------ normalising only what a step changed

def _packed_states(text: str, variant: str, incremental: bool, monkeypatch) -> set:
    from checker.memory import lkmm

    monkeypatch.setattr(lkmm.Machine, "incremental", incremental)
    program = ir.build(resolve(parse(text, "m.spec"), variant, memory="lkmm"))
    ex = explore(compile_program(program), graph=True)
    assert ex.stats.complete
    return set(ex.graph.states.packed)


@pytest.mark.parametrize("path,variant", SHIPPED, ids=[f"{Path(p).stem}-{v}" for p, v in SHIPPED])
def test_normalising_what_a_step_changed_is_normalising_everything(path, variant, monkeypatch):
    """Machine.settle re-normalises only the locations whose slots a step changed (the
    rest were canonical): the very same states, machine's slots included, as normalising
    every location after every step."""
    text = (ROOT / path).read_text()
    assert _packed_states(text, variant, True, monkeypatch) == _packed_states(text, variant, False, monkeypatch)


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(text=programs())
def test_generated_programs_normalise_the_same_incrementally(text, monkeypatch):
    assert _packed_states(text, "base", True, monkeypatch) == _packed_states(text, "base", False, monkeypatch), text
