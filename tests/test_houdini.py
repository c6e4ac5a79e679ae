"""k-induction strengthened with invariants mined from the explicit engine (--strengthen,
engines/smt/houdini.py and the Houdini loop of engines/smt/induction.py).

A model plain k-induction cannot prove and the strengthened one proves at k = 0 (pinned);
a bounded mining's false guesses are dropped by the induction itself; the strengthened
engine agrees with a complete explicit search on generated specs, every invariant it kept
holding in every reachable state; a Houdini that keeps a candidate its step case
refutes makes that agreement fail; and a step query that times out is split, keeping
what is inductive and dropping what is not (or what no query could decide)."""

import pytest
import z3
from hypothesis import HealthCheck, event, given, settings

from agreement import compiled
from checker.cli import main
from checker.engines.explicit import explore
from checker.engines.smt import induction as induction_module
from checker.engines.smt.encode import Encoding
from checker.engines.smt.houdini import Family, Miner, mine
from checker.engines.smt.induction import Candidates, induction, inductive_subset
from checker.results.trace import Verdict
from test_engines_agree import models

# y_small holds (y == x <= 5) but is not k-inductive for k <= 4: from y = 5 - k, x = 0
# the step case reaches y = 6 (tests/test_bmc.py)
STAIRS = """model stairs;
var x: 0..10 = 0;
var y: 0..10 = 0;
process p { loop { atomic { if (x < 5) { x = x + 1; y = y + 1; } } } }
invariant y_small: y <= 5;
"""

# two processes taking turns to count to `top` (tests/test_pdr.py)
COUNTER = """model counter;
var x: 0..63 = 0;
var turn: bool = false;
process a {{ loop {{ await !turn; if (x < {top}) {{ x = x + 1; }} turn = true; }} }}
process b {{ loop {{ await turn; if (x < {top}) {{ x = x + 1; }} turn = false; }} }}
invariant below: {inv};
"""


def assert_strengthened_agrees(cm, depth: int = 2, states: int = 100_000) -> dict[str, str]:
    """Strengthened induction against a complete explicit search: a property it proves
    holds, one it finds violated is violated at the explicit depth, and every mined
    invariant it proved and assumed holds in every reachable state (when the search
    stops at a model error, in every state it reached)."""
    ex = explore(cm, graph=True)
    assert ex.stats.complete or ex.model_error is not None
    reached = list(ex.graph.states)
    r = induction(cm, depth, 60, strengthen=states)
    assert not r.checker_bugs, r.checker_bugs
    for name, f in r.findings.items():
        if f.verdict is Verdict.PROVED:  # (about the runs without a model error, as plain induction's)
            assert name not in ex.counterexamples, (name, "explicit: violated")
        if f.verdict is Verdict.VIOLATED:
            assert f.counterexample.trace.length == ex.counterexamples[name].trace.length, name
    if ex.model_error is not None and ex.model_error.trace.length <= depth:
        assert r.model_error is not None, "the model error was missed"
    for c in r.invariants:
        assert all(c.test(s) for s in reached), ("kept, but false in a reachable state", c.text)
    return {n: f.verdict.value for n, f in r.findings.items()}


def test_plain_induction_fails_and_the_strengthened_one_proves_at_k_0():
    cm = compiled(STAIRS)
    plain = induction(cm, 2)
    assert plain.findings["y_small"].verdict is Verdict.INCOMPLETE
    r = induction(cm, 2, strengthen=1000)
    f = r.findings["y_small"]
    assert f.verdict is Verdict.PROVED and f.note == "proved by k-induction, k = 0, with 3 mined invariants"
    assert r.stats.complete
    # a complete search: the states it reached, proved closed, and the bounds
    assert [c.text for c in r.invariants] == ["(x, y) in one of 6 valuations seen", "x <= 5", "y <= 5"]
    assert r.stats.notes[0] == ("induction --strengthen: 3 candidate invariants mined from all 6 reachable states; "
                                "3 proved by k-induction (k = 0) and assumed in the step cases:")
    assert_strengthened_agrees(cm)
    # 4 states: the valuations seen are not closed (x reaches 4); `x == y` is what proves it
    r = induction(cm, 2, strengthen=4)
    assert r.findings["y_small"].verdict is Verdict.PROVED
    assert [c.text for c in r.invariants] == ["x == y"]
    assert_strengthened_agrees(cm, states=4)


def test_a_bounded_minings_false_guesses_are_dropped():
    """Mined from 6 states only, `x <= 1` and the like are false (x reaches 4): their
    base or step case drops them, and `below` is proved by what is left, or not at all."""
    cm = compiled(COUNTER.format(top=4, inv="x <= 4"))
    mined = mine(cm, Encoding(cm), 6)
    assert not mined.complete and mined.limit
    assert "x <= 1" in {c.text for c in mined.candidates}
    verdicts = assert_strengthened_agrees(cm, depth=1, states=6)
    r = induction(cm, 1, strengthen=6)
    assert "x <= 1" not in {c.text for c in r.invariants}
    assert verdicts["below"] in ("proved", "incomplete")


def test_the_states_reached_make_a_two_process_protocol_provable():
    """The turn protocol's `x != 3` needs to know where each process is: the
    control-location family (pcs seen together, valuations seen at each) carries it."""
    cm = compiled(COUNTER.format(top=2, inv="x <= 2"))
    r = induction(cm, 0, strengthen=1000)
    assert r.findings["below"].verdict is Verdict.PROVED
    families = {c.family for c in r.invariants}
    assert Family.REACHED in families
    assert any(line.startswith("  the states reached:") for line in r.stats.notes)


def test_a_houdini_that_keeps_a_refuted_candidate_fails_the_agreement(monkeypatch):
    """The mutation: a candidate's base and step queries never fail (Houdini keeps every
    guess). A bounded mining's `x <= 1` then proves `x != 20`, which the explicit search
    refutes at depth 39; the agreement check sees it."""
    cm = compiled(COUNTER.format(top=40, inv="x != 20"))
    assert_strengthened_agrees(cm, depth=0, states=6)
    monkeypatch.setattr(induction_module, "any_of", lambda bads: z3.BoolVal(False, bads[0].ctx))
    with pytest.raises(AssertionError, match="explicit: violated"):
        assert_strengthened_agrees(cm, depth=0, states=6)


TIMED_OUT = "the solver timed out (raise --timeout)"


def time_out_queries(monkeypatch, alone: tuple[str, ...] = (), base: bool = False) -> list[int]:
    """Make the step case's solver (`base`: the base case's, from the initial states)
    answer unknown (as at a timeout) to every query over more than one candidate, and to
    those of `alone` (texts) asked alone; the list returned counts the unknowns."""
    joint: list = []
    named: list = []
    unknowns = [0]
    any_of, bad, ask = induction_module.any_of, Candidates.bad, induction_module.ask

    def recording_any_of(bads):
        t = any_of(bads)
        if len(bads) > 1:
            joint.append(t)
        return t

    def recording_bad(self, c, frames, i):
        t = bad(self, c, frames, i)
        if c.text in alone:
            named.append(t)
        return t

    def timing_out(unrolling, fresh, *formulas):
        # the step case asks its disjunction last (after the assumptions), the base case first
        asked = formulas[0] if base else formulas[-1]
        if unrolling.from_initial == base and any(asked.eq(t) for t in joint + named):
            unknowns[0] += 1
            return z3.unknown, None, TIMED_OUT
        return ask(unrolling, fresh, *formulas)

    monkeypatch.setattr(induction_module, "any_of", recording_any_of)
    monkeypatch.setattr(Candidates, "bad", recording_bad)
    monkeypatch.setattr(induction_module, "ask", timing_out)
    return unknowns


def test_a_timed_out_step_query_is_split_and_the_candidates_kept(monkeypatch):
    """Every joint step query times out: its halves, down to single candidates, are asked
    instead, and the three invariants still prove `y_small` at k = 0."""
    cm = compiled(STAIRS)
    unknowns = time_out_queries(monkeypatch)
    r = induction(cm, 2, strengthen=1000)
    assert unknowns[0] >= 2  # the 3 candidates, then the half of 2
    assert r.findings["y_small"].verdict is Verdict.PROVED
    assert [c.text for c in r.invariants] == ["(x, y) in one of 6 valuations seen", "x <= 5", "y <= 5"]
    assert not any("not assumed" in line for line in r.stats.notes)


def test_a_split_step_case_keeps_what_the_joint_one_keeps_and_drops_the_rest(monkeypatch):
    """Mined from 6 states, `x <= 1` is not inductive: with every joint query timing out
    the split still finds the step that falsifies it, and Houdini ends at the same set."""
    cm = compiled(COUNTER.format(top=4, inv="x <= 4"))
    enc = Encoding(cm)
    mined = mine(cm, enc, 6)
    joint, _ = inductive_subset(enc, mined, 60)
    unknowns = time_out_queries(monkeypatch)
    enc = Encoding(cm)
    split, dropped = inductive_subset(enc, mine(cm, enc, 6), 60)
    assert unknowns[0] > 0 and not dropped
    assert [c.text for c in split] == [c.text for c in joint]
    assert "x <= 1" in {c.text for c in mined.candidates} and "x <= 1" not in {c.text for c in split}


def test_a_timed_out_base_query_is_split_and_the_candidates_kept(monkeypatch):
    """Every base-case query over more than one candidate times out: the halves, down to
    single candidates, are asked instead, and Houdini keeps what it keeps without
    timeouts (until the split, one unknown base case dropped them all)."""
    cm = compiled(STAIRS)
    enc = Encoding(cm)
    plain, _ = inductive_subset(enc, mine(cm, enc, 1000), 60)
    unknowns = time_out_queries(monkeypatch, base=True)
    enc = Encoding(cm)
    kept, dropped = inductive_subset(enc, mine(cm, enc, 1000), 60)
    assert unknowns[0] >= 2 and not dropped
    assert [c.text for c in kept] == [c.text for c in plain] == ["(x, y) in one of 6 valuations seen", "x <= 5",
                                                                "y <= 5"]


@pytest.mark.parametrize("base, note", [
    (False, f"1 not assumed at k = 0: {TIMED_OUT} in its step case (y <= 5)"),
    (True, f"1 dropped unproved: {TIMED_OUT} in its base case at depth 0 (y <= 5)")], ids=["step", "base"])
def test_a_single_candidate_the_solver_cannot_decide_is_dropped_alone(monkeypatch, base, note):
    """`y <= 5` times out even alone (in the step case, or in the base case): it is
    dropped with a note, and the other two are kept (they are inductive without it)."""
    cm = compiled(STAIRS)
    time_out_queries(monkeypatch, alone=("y <= 5",), base=base)
    enc = Encoding(cm)
    kept, dropped = inductive_subset(enc, mine(cm, enc, 1000), 60)
    assert [c.text for c in kept] == ["(x, y) in one of 6 valuations seen", "x <= 5"]
    assert dropped == [note]


@pytest.mark.parametrize("base, note", [
    (False, "3 not assumed at k = 0: their step case, split after the solver timed out, took longer than 0 "
            "timeouts (0 s)"),
    (True, "3 dropped unproved: their base case at depth 0, split after the solver timed out, took longer than 0 "
           "timeouts (0 s)")], ids=["step", "base"])
def test_the_split_is_bounded(monkeypatch, base, note):
    """Past the split's budget (none here) every candidate not yet shown is dropped, with why."""
    cm = compiled(STAIRS)
    time_out_queries(monkeypatch, base=base)
    monkeypatch.setattr(induction_module, "SPLIT_BUDGET", 0)
    enc = Encoding(cm)
    kept, dropped = inductive_subset(enc, mine(cm, enc, 1000), 60)
    assert kept == []
    assert dropped == [note]


def test_python_tests_agree_with_the_z3_terms():
    """Each candidate's Python test (used to read a solver's state) and its Z3 term agree
    on the states it was mined from and on states it was not (every valuation in range)."""
    cm = compiled(COUNTER.format(top=3, inv="x <= 3"))
    enc = Encoding(cm)
    ex = explore(cm, graph=True)
    states = list(ex.graph.states)
    cands = Miner(cm, enc, states).candidates()
    assert {c.family for c in cands} >= {Family.VALUES, Family.PAIR, Family.REACHED}
    others = [tuple(v if i != 0 else x for i, v in enumerate(states[-1])) for x in range(6)]
    for s in states + others:
        sub = [(v, z3.BitVecVal(x, v.size(), enc.ctx)) for v, x in zip(enc.cur, s)]
        for c in cands:
            assert z3.is_true(z3.simplify(z3.substitute(c.holds, *sub))) == c.test(s), (c.text, s)


def test_command_line(tmp_path, capsys):
    spec = tmp_path / "stairs.spec"
    spec.write_text(STAIRS)
    assert main([str(spec), "--engine", "induction", "--depth", "2"]) == 3
    capsys.readouterr()
    assert main([str(spec), "--engine", "induction", "--depth", "2", "--strengthen", "4"]) == 0
    out = capsys.readouterr().out
    assert "y_small   proved" in out and "base:   x == y" in out
    with pytest.raises(SystemExit) as e:
        main([str(spec), "--engine", "bmc", "--strengthen", "50"])
    assert e.value.code == 2
    assert "--strengthen is for --engine induction" in capsys.readouterr().err


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_strengthened_induction_agrees_with_the_explicit_engine(text):
    for name, verdict in sorted(assert_strengthened_agrees(compiled(text)).items()):
        event(f"{name if name in ('inv', 'deadlock') else 'assert'} {verdict}")
