"""The reductions that make `memory lkmm` cheaper, each against the search without it.

* Dead views (lkmm_machine._liveness, Machine.save): a view slot that no instance can
  read again from its pc is kept canonical. Lazily compiled (the default) against the
  eager machine (`--no-por`, which keeps every slot): the same reachable states once the
  machine's own slots are left out, the same counterexamples.
* Partial-order reduction under lkmm (engines/reduce, Views.footprint): the same
  violated properties and deadlocks with and without ample sets, on generated litmus-like
  programs (stores of distinct values, loads into locals, fences, local steps, loops) and
  on shipped lkmm variants; and a footprint planted wrong (the machine's slots left out)
  makes that comparison fail, so the comparison can see a wrong footprint.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from checker import ir
from checker.backends.python import compile_program
from checker.engines import reduce
from checker.engines.explicit import Limits, explore
from checker.engines.explicit.search import Search, run_levels
from checker.front.parse import parse
from checker.ir import SlotKind
from checker.memory.lkmm import Views
from checker.pipeline import Options, check_spec, load
from checker.resolve import resolve
from checker.results.trace import Verdict

ROOT = Path(__file__).resolve().parent.parent

#: MP without smp_wmb(), the reader with smp_mb() between its loads: the LKMM allows
#: r1 == 1 && r2 == 0. With the machine's slots left out of the footprints, the writer's
#: fence-only step commutes with everything and is taken as soon as the writer reaches it,
#: before the reader's smp_mb(), whose SC view then holds both stores: the outcome is lost
#: (the planted-footprint test)
PLANTED_CATCH = """model gen; memory lkmm;
var x: 0..3 = 0; var y: 0..3 = 0;
process p0 { var r: 0..3 = 0; var t: 0..3 = 0; WRITE_ONCE(x, 1); WRITE_ONCE(y, 1); smp_mb(); t = 1; }
process p1 { var r: 0..3 = 0; var t: 0..3 = 0; r = READ_ONCE(y); smp_mb(); t = READ_ONCE(x); }
invariant mp: !(p1@end && p1.r == 1 && p1.t == 0);
"""


#: p0 reads x, stores y, then x, then reads x again: between its first read and its own
#: store to x its view of x is dead (the store resets it)
OWN_STORE = """model gen; memory lkmm;
var x: 0..3 = 0; var y: 0..3 = 0;
process p0 { var r: 0..3 = 0; var t: 0..3 = 0; r = READ_ONCE(x); WRITE_ONCE(y, 1); WRITE_ONCE(x, 2); t = READ_ONCE(x); }
process p1 { var r: 0..3 = 0; var t: 0..3 = 0; WRITE_ONCE(x, 1); r = READ_ONCE(y); if (r == 1) { x = 3; } t = x; }
invariant seen: !(p0@end && p1@end && p0.t == 2 && p1.t == 1);
"""


def _compiled(text: str, lazy: bool = True):
    return compile_program(ir.build(resolve(parse(text, "m.spec"), "base")), lazy_propagation=lazy)


def _states(text: str, lazy: bool):
    """The reachable states without the machine's slots, and the counterexamples."""
    cm = _compiled(text, lazy)
    ex = explore(cm, graph=True)
    assert ex.stats.complete
    visible = [k for k, sl in enumerate(cm.layout.slots) if sl.kind is not SlotKind.VIEW]
    return {tuple(s[k] for k in visible) for s in ex.graph.states}, set(ex.counterexamples), len(ex.graph.states)


def _found(text: str, por: bool) -> tuple[set, int]:
    """The violated properties (deadlock included) with and without ample sets, lazily."""
    cm = _compiled(text)
    red = reduce.plan(cm, por=por)
    ex = explore(cm, reduction=red if red.active else None)
    assert ex.stats.complete
    return set(ex.counterexamples), ex.stats.states


# ---- generated programs ---------------------------------------------------------

LOCS = ["x", "y"]
STORES = ["WRITE_ONCE({l}, {c});", "smp_store_release({l}, {c});", "{l} = {c};", "atomic_set({l}, {c});",
          "r = xchg({l}, {c});", "r = cmpxchg({l}, 0, {c});"]
LOADS = ["r = READ_ONCE({l});", "r = smp_load_acquire({l});", "r = {l};", "t = READ_ONCE({l});"]
FENCES = ["smp_mb();", "smp_rmb();", "smp_wmb();", "smp_mb__before_atomic();", "smp_mb__after_atomic();"]
LOCAL = ["t = r;", "t = 3;", "if (r == {c}) {{ t = 1; }}", "r = t;"]


@st.composite
def statements(draw, proc: int):
    kind = draw(st.sampled_from(["store", "load", "load", "fence", "local", "local"]))
    fill = dict(l=draw(st.sampled_from(LOCS)), c=1 + (draw(st.integers(0, 1)) + proc) % 3)  # 1..3, by process
    pool = {"store": STORES, "load": LOADS, "fence": FENCES, "local": LOCAL}[kind]
    return draw(st.sampled_from(pool)).format(**fill)


@st.composite
def programs(draw):
    procs = []
    n = draw(st.integers(2, 3))
    for i in range(n):
        body = " ".join(draw(st.lists(statements(i), min_size=2, max_size=4)))
        if draw(st.integers(0, 3)) == 0:  # sometimes a bounded loop
            body = f"while (k < 2) {{ {body} k = k + 1; }}"
        procs.append(f"process p{i} {{ var r: 0..3 = 0; var t: 0..3 = 0; var k: 0..2 = 0; {body} }}")
    ends = " && ".join(f"p{i}@end" for i in range(n))
    a, b = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    props = (f"invariant rr: !({ends} && p0.r == {a} && p1.r == {b});"
             f" invariant tx: !({ends} && p0.t == {b} && x == {a});"
             f" invariant xy: !(x == {a} && y == {b} && p1@end);")
    return "model gen; memory lkmm; var x: 0..3 = 0; var y: 0..3 = 0;\n" + "\n".join(procs) + f"\n{props}\n"


SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(programs())
@example(PLANTED_CATCH)
@example(OWN_STORE)
def test_dead_views_keep_every_state_and_counterexample(text):
    eager, eager_cx, eager_n = _states(text, lazy=False)
    lazy, lazy_cx, lazy_n = _states(text, lazy=True)
    assert lazy == eager, text
    assert lazy_cx == eager_cx, text
    assert lazy_n <= eager_n


@SETTINGS
@given(programs())
@example(PLANTED_CATCH)
def test_partial_order_reduction_keeps_every_verdict(text):
    full, full_n = _found(text, por=False)
    reduced, reduced_n = _found(text, por=True)
    assert reduced == full, text
    assert reduced_n <= full_n


def test_dead_views_cut_states_where_a_cpu_is_done():
    """After its last load a CPU's view is canonical: the same outcomes in fewer states."""
    _, cx, eager_n = _states(PLANTED_CATCH, lazy=False)
    _, lazy_cx, lazy_n = _states(PLANTED_CATCH, lazy=True)
    assert cx == lazy_cx == {"mp"}  # MP without smp_wmb() is allowed
    assert lazy_n < eager_n


def test_a_cpus_own_store_ends_its_view_of_the_location():
    """Dead views per location: a store that every run of a step makes kills its CPU's
    view of that location, so the view is canonical from the CPU's last
    read of it to its own store, and live again before a later read."""
    cm = _compiled(OWN_STORE)
    views = cm.views
    assert isinstance(views, Views)
    x = next(j for j, loc in enumerate(views.locations) if loc.name == "x")
    sure = {(cm.layout.instance_names[g], views.accesses[(g, uid)][0].sure_writes)
            for (g, uid) in views.accesses if views.accesses[(g, uid)][0].writes}
    assert ("p0", frozenset({x})) in sure  # WRITE_ONCE(x, 2)
    p0 = next(c for c in views.cpus if c.name == "p0")
    _, table = views.live[p0.gid]
    live = [p0.cur[x] in table[pc].get(p0.gid, ()) for pc in range(len(table))]
    # pc 0 reads x, pc 1 stores y (dead: x's store comes next), pc 2 stores x, pc 3 reads x
    assert live[:4] == [True, False, False, True]
    _, cx, _ = _states(OWN_STORE, lazy=True)
    assert cx == {"seen"}  # p1's t = x may read its own 1 after p0's 2 (no order between them)


def test_a_planted_wrong_footprint_fails_the_comparison(monkeypatch):
    """With the machine's slots left out of every footprint, a fence commutes with
    everything and is taken first: the comparison above sees the lost outcome."""
    full, _ = _found(PLANTED_CATCH, por=False)
    monkeypatch.setattr(Views, "footprint", lambda self, gid, uid: (frozenset(), frozenset()))
    planted, _ = _found(PLANTED_CATCH, por=True)
    assert full == {"mp"} and planted == set()


def test_footprints_see_the_machine():
    """A fence-only step (nothing in its statement's footprint) reads and writes its
    CPU's views and the SC view; a step the machine leaves alone has no machine slots."""
    cm = _compiled(PLANTED_CATCH)
    v = cm.layout.lkmm
    an = reduce.analyse(cm.program)
    p0 = cm.instances[0]
    kinds = {st.text: (pc, st.uid) for pc, at in enumerate(p0.process.steps_at) for st in at}
    fence_pc, fence_uid = kinds["smp_mb();"]
    local_pc, local_uid = kinds["t = 1;"]
    reads, writes = v.footprint(p0.gid, fence_uid)
    assert set(v.gsc) <= writes and set(v.cpus[0].cur) <= reads
    assert v.footprint(p0.gid, local_uid) == (frozenset(), frozenset())
    assert an.conflicts[(p0.gid, fence_pc)] and not an.conflicts[(p0.gid, local_pc)]


# ---- shipped lkmm variants --------------------------------------------------------

SHIPPED = [("models/vcpu_requests.spec", v) for v in
           ("lkmm", "no_wake_up_lkmm", "no_before_atomic_lkmm", "set_bit_plain_mode_lkmm",
            "set_bit_after_atomic_lkmm", "payload_lkmm", "payload_no_wmb_lkmm")] + \
          [("models/csd_wait_ipi.spec", v) for v in ("base_lkmm", "no_release_lkmm", "mb_unlock_lkmm",
                                                    "no_acquire_lkmm")]


@pytest.fixture(scope="module")
def shipped_runs():
    """Each shipped file's lkmm variants checked once with every reduction and once
    without any (`--no-por`: eager propagation, every slot, no ample sets)."""
    out = {}
    for path in sorted({p for p, _ in SHIPPED}):
        names = tuple(v for p, v in SHIPPED if p == path)
        spec = load(str(ROOT / path))
        for por in (True, False):
            result = check_spec(spec, Options(variants=names, por=por, coverage=False, use_expectations=False))
            for v in result.variants:
                out[(path, v.variant, por)] = v
    return out


@pytest.mark.parametrize("path,variant", SHIPPED, ids=[f"{Path(p).stem}-{v}" for p, v in SHIPPED])
def test_shipped_lkmm_variants_keep_their_verdicts(shipped_runs, path, variant):
    reduced, full = shipped_runs[(path, variant, True)], shipped_runs[(path, variant, False)]
    assert reduced.memory == "lkmm"
    assert {o.property: o.verdict for o in reduced.outcomes} == {o.property: o.verdict for o in full.outcomes}
    assert all(o.verdict in (Verdict.HOLDS, Verdict.VIOLATED) for o in reduced.outcomes)
    assert reduced.stats.states <= full.stats.states


# ---- symmetry under lkmm ------------------------------------------------------------


@st.composite
def symmetric_programs(draw):
    """A process array q[2] beside one other process: q's instances' views are permuted
    with their pcs and locals."""
    q = " ".join(draw(st.lists(statements(0), min_size=2, max_size=3)))
    p = " ".join(draw(st.lists(statements(1), min_size=2, max_size=3)))
    a, b = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    return ("model gen; memory lkmm; var x: 0..3 = 0; var y: 0..3 = 0;\n"
            f"process q[2] {{ var r: 0..3 = 0; var t: 0..3 = 0; {q} }}\n"
            f"process p {{ var r: 0..3 = 0; var t: 0..3 = 0; {p} }}\n"
            f"invariant px: !(p@end && p.r == {a} && x == {b}); invariant xy: !(x == {a} && y == {b});\n")


def _found_sym(text: str, symmetry: str) -> tuple[set, int]:
    cm = _compiled(text)
    red = reduce.plan(cm, por=False, symmetry=symmetry)
    ex = explore(cm, reduction=red if red.active else None)
    assert ex.stats.complete
    return set(ex.counterexamples), ex.stats.states


@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(symmetric_programs())
def test_symmetry_under_lkmm_keeps_every_verdict(text):
    full, full_n = _found_sym(text, "off")
    reduced, reduced_n = _found_sym(text, "on")
    assert reduced == full, text
    assert reduced_n <= full_n


def test_symmetry_under_lkmm_permutes_the_views():
    """Without the views among an index's belongings, states of one orbit would keep
    different views: the orbit's representative must be one state."""
    text = (
        "model s; memory lkmm; var x: 0..3 = 0; var y: 0..3 = 0;\n"
        "process q[2] { var r: 0..3 = 0; WRITE_ONCE(x, 1); r = READ_ONCE(y); }\n"
        "process p { var r: 0..3 = 0; WRITE_ONCE(y, 2); r = READ_ONCE(x); }\n"
        "invariant xy: !(p@end && p.r == 0 && q[0]@end && q[1]@end && q[0].r == 0 && q[1].r == 0);\n")
    cm = _compiled(text)
    red = reduce.plan(cm, por=False, symmetry="on")
    assert red.canonicalises and any("q[2]" in n for n in red.notes)
    full, full_n = _found_sym(text, "off")
    reduced, reduced_n = _found_sym(text, "on")
    assert reduced == full == {"xy"} and reduced_n < full_n
    # each representative is a state the model reaches (views and all): with an index's
    # views left behind when its pc and locals move, it would not be
    assert _stored(cm, red) <= _stored(cm, None)


def _stored(cm, reduction) -> set[int]:
    search = Search(cm, Limits(), False, False, reduction)
    run_levels(search, search.add_initial(), 0, 0, None)
    return set(search.seen)
