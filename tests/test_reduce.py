"""Partial-order reduction and symmetry (engines/reduce/) keep every verdict.

Three kinds of evidence:
- every shipped model, litmus test and test model, checked with and without each
  reduction: the same verdicts, no more states, and counterexamples that are runs of
  the model (with partial-order reduction alone, the very traces of the unreduced
  search);
- the footprints the reduction rests on, checked against what the compiled steps
  really do: changing a slot a step neither reads nor writes changes nothing else;
- tiny models, analysed by hand, where a careless reduction would miss a violation
  (a side effect in a condition, a label another process reads, a property that reads
  a local, a loop that would starve the other processes, an ample set with no enabled
  step, a fair process left out of a liveness graph), and where symmetry must
  collapse N! orderings into one and must refuse an asymmetric model, saying why.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from checker import ir
from checker.cli import main
from checker.backends.python import AssertionViolation, ModelError, StoreBufferFull, compile_program
from checker.engines import liveness, reduce
from checker.engines.explicit import explore
from checker.engines.replay import replay
from checker.front.parse import parse
from checker.resolve import resolve
from checker.pipeline import Options, check_spec, compile_variant, load, selected_variants
from checker.results.trace import Verdict
from shared_runs import checked
from variant_cover import covering_variants

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "models").glob("*.spec")) + sorted((ROOT / "tests" / "litmus").glob("*.spec")) \
    + sorted((ROOT / "tests" / "models").glob("*.spec"))
IDS = [f"{p.parent.name}/{p.stem}" for p in SPECS]

NONE = dict(por=False, symmetry="off")
CONFIGS = {"por": dict(por=True, symmetry="off"), "symmetry": dict(por=False, symmetry="on"),
           "both": dict(por=True, symmetry="on")}


def compiled(text: str, variant: str = "base"):
    return compile_program(ir.build(resolve(parse(text, "t.spec"), variant)))


def check_text(tmp_path, text: str, *flags: str) -> tuple[int, str]:
    import contextlib
    import io

    p = tmp_path / "t.spec"
    p.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main([str(p), "--brief", *flags])
    return rc, out.getvalue()


def verdicts(result) -> dict:
    return {(v.variant, o.property): o.verdict for v in result.variants for o in v.outcomes} | \
        {(v.variant, "model error"): v.model_error is not None for v in result.variants}


# ---- every shipped model ----------------------------------------------------------


class _Unreduced(dict):
    """Spec path -> its unreduced search, made on first use (so that under xdist a test
    about one model searches only that model, in that model's group)."""

    def __missing__(self, path):
        self[path] = checked(path, **NONE)
        return self[path]


@pytest.fixture(scope="module")
def unreduced():
    return _Unreduced()


SYMMETRY_APPLIED = "symmetry: states counted up to permutations of"


def searched(path, config: str):
    """The run of `path` with CONFIGS[config], shared with the other tests' runs where it
    is the same search: symmetry "on" reduces exactly as the default "auto" does (it only
    adds notes where it cannot apply), so "both" is the default run; and where no variant
    has symmetric processes, symmetry "on" without partial-order reduction searches what
    "off" does, and partial-order reduction with symmetry "off" what the default run does
    (test_symmetry_on_without_symmetric_processes_is_the_plain_search)."""
    if config == "both":
        return checked(path)
    if not any(n.startswith(SYMMETRY_APPLIED) for v in checked(path).variants for n in v.stats.reductions):
        # symmetry left nothing to reduce: "symmetry" is the plain search, "por" the default one
        return checked(path, **NONE) if config == "symmetry" else checked(path)
    return checked(path, **CONFIGS[config])


THREE_INCREMENTS = """model sym;
var x: 0..3 = 0;
process inc[3] { var r: 0..3 = 0; r = x; x = min(r + 1, 3); }
invariant bounded: x <= 2;
"""


@pytest.mark.xdist_group("timer_migration")  # reads timer_migration's shared search (shared_runs)
def test_symmetry_on_without_symmetric_processes_is_the_plain_search(tmp_path):
    """What `searched` relies on: on a model with no symmetric processes the same states,
    verdicts and counterexamples with symmetry on as off (and with partial-order reduction
    alone as in the default run); and "both" is the default run,
    also where symmetry applies."""
    plain = ROOT / "models" / "timer_migration.spec"
    on, off = checked(plain, **CONFIGS["symmetry"]), checked(plain, **NONE)
    assert not any(n.startswith(SYMMETRY_APPLIED) for v in on.variants for n in v.stats.reductions)
    assert [(v.variant, v.stats.states, v.outcomes) for v in on.variants] == \
        [(v.variant, v.stats.states, v.outcomes) for v in off.variants]
    por_alone, default = checked(plain, **CONFIGS["por"]), checked(plain)
    assert [(v.variant, v.stats.states, v.stats.transitions, v.outcomes) for v in por_alone.variants] == \
        [(v.variant, v.stats.states, v.stats.transitions, v.outcomes) for v in default.variants]
    sym = tmp_path / "sym.spec"
    sym.write_text(THREE_INCREMENTS)
    for path in (plain, sym):
        both = checked(path, **CONFIGS["both"])
        assert [(v.variant, v.stats.states, v.outcomes) for v in both.variants] == \
            [(v.variant, v.stats.states, v.outcomes) for v in checked(path).variants]
    assert any(n.startswith(SYMMETRY_APPLIED) for v in both.variants for n in v.stats.reductions)


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_every_model_keeps_its_verdicts_with_each_reduction(path, config, unreduced):
    full = unreduced[path]
    reduced = searched(path, config)
    assert verdicts(reduced) == verdicts(full)
    for a, b in zip(full.variants, reduced.variants):
        assert b.stats.states <= a.stats.states, (a.variant, b.stats.states, a.stats.states)
        assert b.stats.complete == a.stats.complete
        if config != "por":
            continue
        # partial-order reduction alone: every counterexample but a lasso is the unreduced one
        # (a lasso is the reduced graph's own: see the replay test below). Under lkmm the
        # reduction is lazy propagation, whose runs are runs of the eager machine with
        # fewer moves: a counterexample of the same property, no longer (it needs no
        # moves that nothing reads), and it replays (below)
        if a.memory == "lkmm":
            assert [(o.property, o.counterexample is None) for o in a.outcomes] == \
                [(o.property, o.counterexample is None) for o in b.outcomes]
            assert all(y.counterexample.trace.length <= x.counterexample.trace.length
                       for x, y in zip(a.outcomes, b.outcomes) if x.counterexample and x.kind != "liveness")
        else:
            assert [(o.property, o.counterexample) for o in a.outcomes if o.kind != "liveness"] == \
                [(o.property, o.counterexample) for o in b.outcomes if o.kind != "liveness"]
        assert a.model_error == b.model_error


@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_counterexamples_found_with_reductions_replay(path):
    """Every trace is a run of the model: replayed step by step, it reaches the violation."""
    spec = load(str(path))
    result = searched(path, "both")
    for v in result.variants:
        cm = compile_variant(spec, v.variant, Options())
        for cx in [o.counterexample for o in v.outcomes] + [v.model_error]:
            if cx is not None and cx.kind != "lemma":  # a lemma's counterexample is values, not a run
                r = replay(cm, cx, "-", v.variant, False)
                assert r.reproduced, (v.variant, cx.property, r.reason)


def readme_rows():
    """The README's "Reductions" table: model -> (states, with POR, with symmetry, with both)."""
    import re

    section = (ROOT / "README.md").read_text().split("## Reductions", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`models/"):
            nums = [int(re.match(r"[\d,]+", c).group(0).replace(",", "")) for c in cells[1:]]
            yield cells[0].strip("`"), tuple(nums)


SHIPPED = sorted((ROOT / "models").glob("*.spec"))


def test_readme_reduction_table_has_every_model():
    assert sorted(dict(readme_rows())) == sorted(f"models/{p.name}" for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_readme_reduction_table_matches_the_checker(path):
    """A shipped model's row of the README's table: states summed over every variant,
    without reductions, with each, and with both (with the same verdicts, as above).
    One test per model, so that under xdist its searches are made in its group."""
    want = dict(readme_rows())[f"models/{path.name}"]
    got = []
    # the same searches as the verdict test above, shared in this group
    got.append(sum(v.stats.states for v in checked(path, **NONE).variants))
    for config in ("por", "symmetry", "both"):
        got.append(sum(v.stats.states for v in searched(path, config).variants))
    assert tuple(got) == want, path


# ---- the footprints are what the steps do -------------------------------------------


def _other_value(cm, k: int, v: int) -> int | None:
    """Another value slot k can hold (within the bounds its packed field allows)."""
    lo, hi = cm.packing.lo[k], cm.packing.hi[k]
    if lo == hi:
        return None
    return lo if v != lo else hi


def _outcome(fn, s):
    try:
        r = fn(s)
    except (AssertionViolation, ModelError, StoreBufferFull) as e:
        return type(e).__name__
    return None if r is None else tuple(r)


@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_footprints_cover_what_every_step_reads_and_writes(path):
    """For reachable states s (a sample) and every step t: t changes only slots in its
    write set; and for every slot k it does not read, setting k to another value
    changes neither whether t runs nor what it does elsewhere (and t leaves k alone
    unless it writes it). A pc slot counts as read when t reads a label of that
    instance; a step's own pc is its own."""
    spec = load(str(path))
    # of a shipped model, its covering set (variant_cover): what this checks is each step's code
    for variant in covering_variants(path) if path.parent == ROOT / "models" else selected_variants(spec, ()):
        cm = compile_variant(spec, variant, Options())
        if cm.program.model.memory == "lkmm":
            continue  # the machine canonicalises views outside a step's footprint (Views.footprint): tests/test_lkmm_cost.py
        an = reduce.analyse(cm.program)
        layout = cm.layout
        states = explore(cm, graph=True).graph.states
        sample = states[:: max(1, len(states) // 25)]
        pc_of = {inst.pc_slot: inst.gid for inst in cm.instances}
        actors = [(inst.gid, inst.pc_slot, inst.steps_at) for inst in cm.instances] + \
            [(f.gid, f.slot, f.steps_at) for f in cm.flushes]
        for s in sample:
            for gid, slot, steps_at in actors:
                pc = s[slot] if gid < len(cm.instances) else 0
                key = (gid, pc)
                for cs, fp in zip(steps_at[s[slot]], an.footprints[key] if steps_at[s[slot]] else ()):
                    before = _outcome(cs.fn, s)
                    if isinstance(before, tuple):
                        wrote = {k for k in range(len(s)) if before[k] != s[k]} - {slot}
                        assert wrote <= fp.writes, (variant, cs.name, [layout.slots[k].name for k in wrote - fp.writes])
                    for k, sl in enumerate(layout.slots):
                        if k == slot and gid < len(cm.instances):
                            continue  # its own pc
                        if k in pc_of:
                            if any(isinstance(x, tuple) and x[1] == pc_of[k] for x in fp.reads):
                                continue
                        elif k in fp.reads:
                            continue
                        v = _other_value(cm, k, s[k])
                        if v is None:
                            continue
                        s2 = s[:k] + (v,) + s[k + 1:]
                        after = _outcome(cs.fn, s2)
                        if isinstance(before, tuple) and isinstance(after, tuple):
                            assert before[:k] + before[k + 1:] == after[:k] + after[k + 1:], (variant, cs.name, sl.name)
                            if k not in fp.writes:
                                assert after[k] == v, (variant, cs.name, "writes", sl.name)
                        else:
                            assert before == after, (variant, cs.name, sl.name)


# ---- partial-order reduction: what a careless one would miss -------------------------

HIDDEN = {
    # p's branch condition writes flag (xchg): q must be able to read flag first
    "side effect in a condition": """
        model m; var flag: bool = false; var seen: bool = false;
        process p { if (xchg(flag, true)) skip; }
        process q { if (!flag) seen = true; }
        invariant not_seen: !seen;""",
    # a's skips change a@l1, which b reads
    "a label read by another process": """
        model m; var seen: bool = false;
        process a { l1: skip; l2: skip; }
        process b { if (a@l1) seen = true; }
        invariant not_seen: !seen;""",
    # a's steps touch only its local r, which the invariant reads
    "a property that reads a local": """
        model m; var x: 0..1 = 0;
        process a { var r: 0..1 = 0; r = 1; r = 0; }
        process b { x = 1; }
        invariant never_both: !(a.r == 1 && x == 1);""",
}


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_por_finds_a_violation_behind_local_looking_steps(name):
    cm = compiled(HIDDEN[name])
    full = explore(cm)
    red = explore(cm, reduction=reduce.plan(cm, True, "off"))
    assert sorted(full.counterexamples) == sorted(red.counterexamples)
    assert any(k != "deadlock" for k in full.counterexamples), "the hand analysis: this model is violated"


LOOPING = """
model looping;
var bad: bool = false;
process spinner { var t: bool = false; loop { t = true; t = false; } }
process setter { bad = true; }
invariant ok: !bad;
"""


def test_the_cycle_proviso_keeps_the_other_processes_from_starving():
    """The spinner's steps are local and invisible; always expanding only them would go
    round its loop for ever and never let the setter run. Its loop-closing step is no
    ample set, so there the setter runs."""
    cm = compiled(LOOPING)
    plan = reduce.plan(cm, True, "off")
    ex = explore(cm, reduction=plan)
    assert "ok" in ex.counterexamples and ex.stats.ample_states > 0
    # the same reduction without the proviso misses the violation: the test has teeth
    an = reduce.analyse(cm.program)
    an.closes_loop = dict.fromkeys(an.closes_loop, False)
    naive = reduce.Plan(reduce.PartialOrder(cm, an, singletons=False))
    assert "ok" not in explore(cm, reduction=naive).counterexamples


def test_a_fence_waits_for_its_own_flush():
    """Under tso, p0's smp_mb() touches no variable but waits for p0's store buffer to
    drain: it depends on p0's flush, so with x = 1 still buffered it is no ample set on
    its own (that would leave no successor: a false deadlock)."""
    cm = compiled("""
        model m; memory tso; var x: 0..1 = 0;
        process p0 { x = 1; smp_mb(); }
        process p1 { skip; }""")
    full = explore(cm)
    red = explore(cm, reduction=reduce.plan(cm, True, "off"))
    assert full.counterexamples == red.counterexamples == {}
    assert red.stats.states <= full.stats.states


def test_an_ample_set_without_an_enabled_step_is_not_a_deadlock():
    """a waits on its own flag at a valid end, so its await is independent and
    invisible, but disabled: taking it as the ample set would leave b's moves out and
    call the initial state a deadlock."""
    cm = compiled("""
        model m; var x: 0..2 = 0;
        process a { var f: bool = false; end_wait: await f; }
        process b { x = 1; x = 2; }""")
    ex = explore(cm, reduction=reduce.plan(cm, True, "off"))
    assert ex.counterexamples == {} and ex.stats.states == explore(cm).stats.states == 3


def test_a_fair_process_left_out_of_an_ample_set_still_counts_as_enabled():
    """Liveness with partial-order reduction: where only the spinner's first step is
    expanded, the setter could still move, and the graph must say so. Otherwise the
    spinner's loop would look fair (the setter "disabled" in it) and `finishes` fail."""
    text = """
        model m; var done: bool = false;
        process spinner { var t: bool = false; loop { t = true; t = false; } }
        {fair}process setter { done = true; }
        property finishes: always eventually done;"""
    for fair, expected in (("", Verdict.HOLDS), ("unfair ", Verdict.VIOLATED)):
        cm = compiled(text.replace("{fair}", fair))
        plan = reduce.plan(cm, True, "off")
        ex = explore(cm, graph=True, reduction=plan)
        assert ex.stats.ample_states > 0
        assert liveness.check(cm, ex)[0]["finishes"].verdict is expected, fair
        spec = parse(text.replace("{fair}", fair), "t.spec")
        for por in (False, True):
            result = check_spec(spec, Options(por=por, use_expectations=False))
            v = result.variants[0]
            assert {o.property: o.verdict for o in v.outcomes}["finishes"] is expected, (fair, por)


def test_liveness_models_get_single_process_ample_sets_and_say_so(tmp_path):
    rc, out = check_text(tmp_path, """
        model m; var done: bool = false;
        process spinner { var t: bool = false; loop { t = true; t = false; } }
        process setter { done = true; }
        property finishes: always eventually done;""")
    assert rc == 0
    assert "liveness: ample sets of one process whose steps no other process can see" in out


# ---- symmetry -------------------------------------------------------------------------

CHOOSERS = """
model choosers;
process p[3] {
  var v: 0..2 = 0;
  choose { v = 0; } or { v = 1; } or { v = 2; }
  done: skip;
}
"""


def test_symmetry_collapses_the_orderings_of_identical_processes():
    """Each chooser is at its choice (v = 0), or at `done` or finished with v in 0..2:
    7 local states, 7^3 = 343 states in all; up to permutation, the multisets of 3 of
    7 local states: C(9, 3) = 84. The 3! orderings of three finished choosers with
    distinct values are one state."""
    cm = compiled(CHOOSERS)
    assert explore(cm).stats.states == 343
    plan = reduce.plan(cm, False, "on")
    assert [d.describe() for d in plan.symmetry.domains] == ["p[3]"]
    assert explore(cm, reduction=plan).stats.states == 84
    layout = cm.layout
    finished = [s for s in explore(cm, graph=True).graph.states
                if all(s[layout.pc_base["p"] + i] == cm.instances[i].process.pc_names.index("end") for i in range(3))]
    values = {tuple(s[layout.var_base[(cm.program.model.processes[0].locals[0], i)]] for i in range(3))
              for s in finished}
    distinct = [v for v in values if len(set(v)) == 3]
    assert len(distinct) == 6 and len({plan.symmetry.canonical_state(s) for s in finished
                                       if tuple(s[layout.var_base[(cm.program.model.processes[0].locals[0], i)]]
                                                for i in range(3)) in distinct}) == 1


SYMMETRIC = {
    "counter": (ROOT / "tests/models/counter.spec").read_text(),
    "choosers": CHOOSERS,
    # one queue for all: wake_up wakes every waiter, whatever their order
    "wake_all": """
        model m; waitqueue wq; var go: bool = false;
        process waiter[2] { prepare_to_wait(wq); if (!go) schedule(); finish_wait(wq); }
        process starter { go = true; wake_up(wq); }""",
    # one queue and one waker per vCPU, paired by index, and a quantified invariant
    "per_vcpu_queues": """
        model m; waitqueue wq[vcpu]; var kicked[vcpu]: bool = false; var ran[vcpu]: 0..1 = 0;
        process vcpu[2] { prepare_to_wait(wq[self]); if (!kicked[self]) schedule(); finish_wait(wq[self]);
                          ran[self] = 1; }
        process kicker[2] { kicked[self] = true; wake_up(wq[self]); }
        invariant ran_after_kick: forall i in 0..1: (ran[i] == 1 -> kicked[i]);""",
    # under tso, identical CPUs storing to one shared variable
    "tso_writers": """
        model m; memory tso; var x: 0..2 = 0;
        process cpu[2] { var r: 0..2 = 0; x = 1; r = x; }
        final seen_own: cpu[0].r >= 1 && cpu[1].r >= 1;""",
}


@pytest.mark.parametrize("name", sorted(SYMMETRIC))
def test_symmetry_stores_one_state_per_orbit_of_the_full_state_space(name):
    """Brute force: the unreduced reachable states, each permuted every way, are all
    reachable (the model is symmetric, as the analysis claims); they fall into as many
    orbits as the symmetric search stores states; the verdicts are the same."""
    cm = compiled(SYMMETRIC[name])
    plan = reduce.plan(cm, False, "on")
    assert plan.symmetry is not None, plan.notes
    full = explore(cm, graph=True)
    reachable = set(full.graph.states)
    sym = plan.symmetry
    orbits = set()
    for s in reachable:
        c = sym.canonical_state(s)
        orbits.add(c)
        for k, d in enumerate(sym.domains):
            for order in itertools.permutations(range(d.size)):
                t = cm.unpack(sym.permute(cm.pack(s), k, list(order)))
                assert t in reachable, (name, s, order)
                assert sym.canonical_state(t) == c
    red = explore(cm, reduction=plan)
    assert red.stats.states == len(orbits) < len(reachable)
    assert sorted(red.counterexamples) == sorted(full.counterexamples)


def test_a_symmetric_counterexample_is_a_run_of_the_model():
    """counter's lost update, found among representatives, is turned back into a run:
    every step is one the named instance can take from the state before it."""
    cm = compiled(SYMMETRIC["counter"])
    ex = explore(cm, reduction=reduce.plan(cm, False, "on"))
    cx = ex.counterexamples["both_counted"]
    assert cx.trace.length == 4  # as short as without symmetry
    assert replay(cm, cx, "-", "base", True).reproduced


NOT_SYMMETRIC = {
    "peterson": ("""
        model m; var flag[cpu]: bool = false; var turn: 0..1 = 0;
        process cpu[2] { flag[self] = true; turn = 1 - self; await !flag[1 - self] || turn == self;
                         cs: flag[self] = false; }
        invariant mutex: !(cpu[0]@cs && cpu[1]@cs);""", "uses the index as a number"),
    "a fixed element in code": ("""
        model m; var flag[p]: bool = false;
        process p[2] { flag[0] = true; }""", "names one instance or element by a constant index"),
    "swake_up_one on a shared queue": ("""
        model m; waitqueue wq; var go: bool = false;
        process w[2] { prepare_to_wait(wq); if (!go) schedule(); finish_wait(wq); }
        process s { go = true; swake_up_one(wq); }""", "swake_up_one wakes the lowest-numbered waiter"),
    "an asymmetric property": ("""
        model m; var x: 0..2 = 0;
        process p[2] { x = x + 1; }
        invariant first: p[0]@end -> x >= 1;""", "does not read the same after swapping them"),
    "elements that start apart": ("""
        model m; var on[p]: bool = {true, false};
        process p[2] { on[self] = false; }""", "start with different values"),
}


@pytest.mark.parametrize("name", sorted(NOT_SYMMETRIC))
def test_symmetry_refuses_an_asymmetric_model_and_says_why(name, tmp_path):
    text, why = NOT_SYMMETRIC[name]
    cm = compiled(text)
    assert reduce.plan(cm, False, "auto").symmetry is None
    rc, out = check_text(tmp_path, text, "--symmetry", "--no-por", "--no-expect")
    assert "not symmetric: " in out and why in " ".join(out.split()), out
    rc2, out2 = check_text(tmp_path, text, "--no-symmetry", "--no-por", "--no-expect")
    assert rc == rc2
    assert "not symmetric" not in out2


def test_symmetry_is_not_applied_with_liveness_properties(tmp_path):
    text = """
        model m; var n: 0..2 = 0;
        process p[2] { atomic { n = n + 1; } }
        property counted: always eventually n == 2;"""
    assert reduce.plan(compiled(text), False, "on").symmetry is None
    rc, out = check_text(tmp_path, text, "--symmetry")
    assert rc == 0 and "symmetry not applied: the variant has liveness properties" in out


def test_the_footer_says_what_was_reduced(tmp_path):
    rc, out = check_text(tmp_path, (ROOT / "tests/models/counter.spec").read_text())
    out = " ".join(out.split())  # the footer wraps at the width, wherever the temp folder's name ends
    assert rc == 0
    assert "partial-order reduction (--no-por turns it off), states expanded with an ample set: base 2/12, " \
        "atomic_inc 1/5" in out
    assert "symmetry: states counted up to permutations of inc[2]" in out
    assert "shortest counterexamples found again without partial-order reduction in: 14 states to depth 4 " \
        "(base)" in out
    rc, out = check_text(tmp_path, (ROOT / "tests/models/counter.spec").read_text(), "--no-por", "--no-symmetry")
    assert rc == 0 and "reduction" not in out and "symmetry" not in out


# ---- merged local steps ------------------------------------------------------------------


def test_local_steps_merge_into_the_step_that_follows():
    """a's two local steps run with its store as one step, b's one local step with its
    store: each goes from its start to its end in one step. States: both at the start,
    one of them done (x = 2 or x = 1), both done (x = 1 or 2, whoever was last): 5.
    Without merging, a has 4 places and b 3, and both done comes with x = 1 or 2: 13."""
    text = """
        model m; var x: 0..3 = 0;
        process a { var r: 0..3 = 0; r = 1; r = r + 1; x = r; }
        process b { var q: 0..3 = 0; q = 1; x = q; }
        invariant not_two: x != 2;"""
    cm = compiled(text)
    program, merged = reduce.merge_local_steps(cm.program)
    assert merged == 3
    a = program.processes[0]
    assert a.steps_at[0][0].text == "r = 1;; r = r + 1;; x = r;"
    cm2 = compile_program(program)
    full, red = explore(cm), explore(cm2)
    assert (full.stats.states, red.stats.states) == (13, 5)
    assert sorted(full.counterexamples) == sorted(red.counterexamples) == ["not_two"]


@pytest.mark.parametrize("text, why", [
    # the await sits at a valid end, the local step before it does not: merged, a
    # process waiting there would be stuck outside a valid end (a false deadlock)
    ("""model m; var go: bool = false;
        process a { var r: 0..1 = 0; r = 1; end_wait: await go; }
        process b { skip; }""", "a valid end"),
    # the guard reads what the local step writes: it cannot be checked before it
    ("""model m; var x: 0..1 = 0;
        process a { var r: 0..1 = 0; r = 1; atomic { await r == 1; x = 1; } }
        invariant zero: x == 0;""", "a guard"),
])
def test_a_local_step_does_not_merge_where_that_would_change_a_verdict(text, why):
    cm = compiled(text)
    program, merged = reduce.merge_local_steps(cm.program)
    cm2 = compile_program(program)
    full, red = explore(cm), explore(cm2)
    assert sorted(full.counterexamples) == sorted(red.counterexamples), why
    assert merged == 0


# ---- with several workers and fingerprints --------------------------------------------

KVM_VCPUS = """
model kvm_vcpus;
const N = 2;
var mode[N]: 0..2 = 0;
var req[N]: bool = false;
var pending[N]: 0..1 = 0;
var armed[N]: bool = false;
var ipi[N]: bool = false;
var hk_busy: bool = false;
process vcpu[N] {
  loop {
    atomic { if (!armed[self] && pending[self] == 0) armed[self] = true; }
    mode[self] = 1;
    smp_mb();
    if (req[self]) { mode[self] = 0; }
    else { guest: await ipi[self]; ipi[self] = false; mode[self] = 0; }
    if (req[self]) { req[self] = false; atomic_set(pending[self], 0); }
  }
}
process hrtimer[N] {
  loop {
    idle: atomic { await armed[self] && !hk_busy; hk_busy = true; armed[self] = false; }
    if (atomic_read(pending[self]) == 0) {
      atomic_inc(pending[self]);
      req[self] = true;
      if (cmpxchg(mode[self], 1, 2) == 1) ipi[self] = true;
    }
    hk_busy = false;
  }
}
invariant no_lost_timer: forall v in 0..N-1: (vcpu[v]@guest && req[v] && hrtimer[v]@idle -> ipi[v]);
"""


def test_reductions_agree_across_workers_and_fingerprints(tmp_path, monkeypatch):
    """Both reductions are per state (ample sets do not depend on the search order, and
    representatives not on who finds them), so two workers and --hash-compact store
    exactly the states one worker stores, and find the same verdicts and traces. The
    model: the bench's N vCPUs with their hrtimers (bench/models/kvm_vcpus.spec) for
    N = 2, a domain of two process arrays and five arrays permuted together."""
    from checker.engines.explicit import parallel

    monkeypatch.setattr(parallel, "PARALLEL_FROM", 0)
    monkeypatch.setattr(parallel, "LEVEL_FROM", 1)
    path = tmp_path / "kvm.spec"
    path.write_text(KVM_VCPUS)
    spec = load(str(path))
    plain = check_spec(spec, Options(**NONE)).variants[0]
    one = check_spec(spec, Options(workers=1)).variants[0]
    assert one.stats.states < plain.stats.states // 2  # two orderings of the vCPUs, and ample sets
    assert "symmetry: states counted up to permutations of hrtimer[2] + vcpu[2] with armed, ipi, mode, " \
        "pending, req" in one.stats.reductions
    for opts in (Options(workers=2, workers_asked=True), Options(workers=1, hash_compact=True)):
        other = check_spec(spec, opts).variants[0]
        assert (other.stats.states, other.stats.ample_states) == (one.stats.states, one.stats.ample_states)
        assert [(o.property, o.verdict, o.counterexample) for o in other.outcomes] == \
            [(o.property, o.verdict, o.counterexample) for o in one.outcomes]


def test_an_exported_symmetric_trace_replays(tmp_path):
    """The file a user gets (ITF) under symmetry replays on the model with `--replay`."""
    spec = tmp_path / "counter.spec"
    spec.write_text((ROOT / "tests/models/counter.spec").read_text())
    assert main([str(spec), "--brief", "--symmetry", "--itf", str(tmp_path / "itf")]) == 0
    trace = tmp_path / "itf" / "counter.base.both_counted.itf.json"
    assert trace.exists()
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([str(spec), "--replay", str(trace)]) == 0  # reproduces, as base expects
    assert "the violation still reproduces" in out.getvalue()
