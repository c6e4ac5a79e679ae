"""Shared by the engine-agreement tests: run the explicit engine and BMC on one
compiled model and compare the depth at which each property is first violated."""

from __future__ import annotations

import re
from pathlib import Path

from checker import ir
from checker.backends.python import compile_program
from checker.engines.smt.bmc import bmc
from checker.engines.explicit import Limits, explore
from checker.model import PropertyKind
from checker.front.parse import parse
from checker.resolve import resolve
from checker.results.trace import Verdict


def language_example(model: str) -> str:
    """The example of spec/LANGUAGE.md that declares `model MODEL;`, as the doc runs it."""
    doc = (Path(__file__).resolve().parent.parent / "spec" / "LANGUAGE.md").read_text()
    start = doc.index(f"model {model};")
    return doc[start:doc.index("```", start)]


def compiled(text: str, variant: str = "base", file: str = "m.spec"):
    return compile_program(ir.build(resolve(parse(text, file), variant)))


def violated(text: str, variant: str = "base", **kw) -> set[str]:
    """The properties an exhaustive explicit search of `text` finds violated."""
    ex = explore(compiled(text, variant), **kw)
    assert ex.stats.complete
    return set(ex.counterexamples)


def final_outcomes(text: str, variant: str, names: tuple[str, ...]) -> set[tuple[int, ...]]:
    """The values of `names` in every final state of an exhaustive search (no deadlock
    check): what a construct and its twin written by hand are compared on."""
    cm = compiled(text, variant)
    ex = explore(cm, Limits(check_deadlock=False), graph=True)
    assert ex.stats.complete and ex.model_error is None and ex.graph is not None
    slot = {sl.name: k for k, sl in enumerate(cm.program.layout.slots)}
    return {tuple(s[slot[n]] for n in names) for s in ex.graph.states if cm.final_state(s)}


def verdicts_by_variant(result) -> dict[str, dict[str, Verdict]]:
    """A check's verdicts, per variant and property (a twin pair must have the same)."""
    return {v.variant: {o.property: o.verdict for o in v.outcomes} for v in result.variants}


def spin_agrees_on_twins(paths, tmp_path: Path, drop: str, variants: set[str]) -> None:
    """pan agrees with our unreduced search on each twin, without the text `drop` (the
    lkmm variant the Promela twin refuses by name), on exactly `variants`."""
    from test_promela import agreement, needs_spin
    needs_spin()
    for path in paths:
        spec = tmp_path / path.name
        spec.write_text(path.read_text().replace(drop, ""))
        work = tmp_path / path.stem
        work.mkdir()
        ours, untranslated, differences = agreement(spec, work)
        assert untranslated == [] and all(not d for d in differences.values()), differences
        assert set(differences) == variants


def explicit_depths(cm) -> tuple[dict[str, int], int | None, bool]:
    """Shortest violation depth per property, the model error's depth, completeness."""
    ex = explore(cm)
    # a `reachable` property is searched for as a violation of its negation, by both
    # engines: its depth is the shortest path to a state satisfying it
    depths = {name: cx.trace.length for name, cx in ex.counterexamples.items()}
    err = ex.model_error.trace.length if ex.model_error is not None else None
    return depths, err, ex.stats.complete or err is not None


def run_depths(v) -> tuple[dict[str, int], int | None, bool]:
    """explicit_depths read off a variant's result of an unreduced `check` search (a
    VariantResult, shared with other tests): a counterexample's length, and for
    `reachable P` the steps its note says the witness took (the pipeline keeps no trace
    of a property that holds); lemmas are Z3's alone."""
    depths = {o.property: o.counterexample.trace.length for o in v.outcomes
              if o.counterexample is not None and o.kind not in ("liveness", "lemma")}
    for o in v.outcomes:
        reached = re.match(r"reached in (\d+) steps", o.note) if o.kind == "reachable" else None
        if reached:
            depths[o.property] = int(reached.group(1))
    err = v.model_error.trace.length if v.model_error is not None else None
    return depths, err, v.stats.complete or err is not None


def bmc_depths(cm, depth: int) -> tuple[dict[str, int], int | None, object]:
    r = bmc(cm, depth, timeout=60)
    assert not r.checker_bugs, r.checker_bugs
    depths = {}
    for name, f in r.findings.items():
        assert f.verdict is not Verdict.CHECKER_BUG, f.note
        if f.verdict is Verdict.VIOLATED:
            depths[name] = f.counterexample.trace.length
    err = r.model_error.trace.length if r.model_error is not None else None
    return depths, err, r


def assert_engines_agree(cm, depth: int, explicit: tuple | None = None) -> tuple[dict, dict]:
    """Explicit BFS finds a violation at d <= depth iff BMC to `depth` does, at the same d
    (`explicit`: explicit_depths(cm), where the caller has it already).

    The explicit search stops at the first model error (depth e), so its answers are
    complete only below e; BMC stops after depth e too."""
    exp, exp_err, complete = explicit_depths(cm) if explicit is None else explicit
    assert complete
    got, got_err, _ = bmc_depths(cm, depth)
    if exp_err is not None and exp_err <= depth:
        assert got_err == exp_err, ("model error", exp_err, got_err)
    else:
        assert got_err is None, ("model error", exp_err, got_err)
    limit = depth if exp_err is None else min(depth, exp_err - 1)
    for name in set(exp) | set(got):
        d_exp, d_got = exp.get(name), got.get(name)
        if d_exp is not None and d_exp <= limit:
            assert d_got == d_exp, (name, d_exp, d_got)
        if d_got is not None and d_got <= limit:
            assert d_exp == d_got, (name, d_exp, d_got)
    return exp, got


def assert_pdr_agrees(cm, timeout: float = 60) -> dict[str, str]:
    """PDR against a complete explicit search: a safety property is violated (with a
    replayed path) exactly when the explicit engine finds it violated, and proved
    exactly when it holds; a model error is found when the explicit search stops at one
    (the other properties are then left undecided, as the explicit search leaves them).
    Returns property -> PDR's verdict."""
    from checker.engines.smt.pdr import pdr

    ex = explore(cm)
    assert ex.stats.complete or ex.model_error is not None
    r = pdr(cm, 0, timeout)
    assert not r.checker_bugs, r.checker_bugs
    skip = {p.name for p in cm.program.model.properties
            if p.kind in (PropertyKind.LIVENESS, PropertyKind.LEMMA)}
    if ex.model_error is not None:
        assert r.model_error is not None, "pdr missed the model error"
        assert all(f.verdict in (Verdict.INCOMPLETE, Verdict.PROVED) for f in r.findings.values()), r.findings
        return {n: f.verdict.value for n, f in r.findings.items()}
    assert r.model_error is None, "pdr found a model error the explicit engine does not reach"
    for p in cm.program.model.properties:
        if p.name in skip:
            continue
        f = r.findings[p.name]
        if p.name in ex.counterexamples:
            assert f.verdict is Verdict.VIOLATED, (p.name, "explicit: violated", f.verdict, f.note)
            assert f.counterexample.trace.length >= ex.counterexamples[p.name].trace.length
        else:
            assert f.verdict is Verdict.PROVED, (p.name, "explicit: holds", f.verdict, f.note)
    assert r.stats.complete
    return {n: f.verdict.value for n, f in r.findings.items()}


def assert_rounds_agree(cm, rounds: int, steps: int = 1) -> dict[str, tuple[int, int]]:
    """bmc --rounds `steps` against a complete explicit search, both ways: a violation
    the explicit engine finds within `rounds` steps is found within `rounds` rounds (a
    round may take one step), and one found at round r has a replayed trace of at least
    the explicit engine's length and at most r * `steps` steps per instance. Returns
    property -> (round, steps of the expanded trace)."""
    exp, exp_err, complete = explicit_depths(cm)
    assert complete
    r = bmc(cm, rounds, timeout=60, rounds=steps)
    assert not r.checker_bugs, r.checker_bugs
    n = len(cm.instances)
    got = {}
    for name, f in r.findings.items():
        assert f.verdict is not Verdict.CHECKER_BUG, f.note
        if f.verdict is Verdict.VIOLATED:
            k = int(f.note.split()[3])  # "found at depth K (K rounds, S steps)"
            length = f.counterexample.trace.length
            assert length <= k * n * steps, (name, k, length)
            if name in exp:
                assert exp[name] <= length, (name, exp[name], length)
            else:  # the explicit search stops at its first model error, before this depth
                assert exp_err is not None and exp_err <= length, (name, "not violated in the explicit search", length)
            got[name] = (k, length)
    err = r.model_error.trace.length if r.model_error is not None else None
    if exp_err is not None and exp_err <= rounds:
        assert err is not None and err >= exp_err, ("model error", exp_err, err)
    elif err is not None:
        assert exp_err is not None and err >= exp_err, ("model error", exp_err, err)
    # below the first model error, every explicit violation within `rounds` steps is found
    limit = rounds if exp_err is None else min(rounds, exp_err - 1)
    if err is None:
        for name, d in exp.items():
            if d <= limit:
                assert name in got and got[name][0] <= d, (name, d, got.get(name))
    return got
