"""bmc --rounds [N] (engines/smt/bmc.py, encode.round_at): a frame is a round in which
every process instance in turn takes up to N steps in a row or idles. Checked against
the explicit engine on generated specs, pinned on a model whose bug needs fewer rounds
than steps, and shown able to fail by a mutated encoding that runs conflicting steps as
if independent."""

import pytest
from hypothesis import HealthCheck, event, given, settings

from checker.cli import main
from checker.engines.smt import encode
from checker.engines.smt.bmc import bmc
from checker.results.trace import Verdict

from agreement import assert_rounds_agree, compiled
from test_engines_agree import models

K = 3
EXAMPLES = 60

# two CPUs each take three steps of their own; the invariant breaks when both are done:
# 6 steps, but 3 rounds (each round moves both)
BOTH_DONE = """
model both_done;
var a: 0..3 = 0;
var b: 0..3 = 0;
process p { a = 1; a = 2; a = 3; }
process q { b = 1; b = 2; b = 3; }
invariant not_both: !(a == 3 && b == 3);
expect violated not_both;
"""

# each increment is one step, so x ends at 2: a round that ran the second turn from the
# state before the first (as if the two conflicting steps were independent) would lose
# an update and claim a violation
TWICE = """
model twice;
var x: 0..2 = 0;
process p { x = x + 1; end: skip; }
process q { x = x + 1; end: skip; }
invariant both_counted: (p@end && q@end) -> x == 2;
"""


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_rounds_agree_with_the_explicit_engine_on_generated_specs(text):
    got = assert_rounds_agree(compiled(text), K)
    for k, steps in got.values():  # what was compared (see --hypothesis-show-statistics)
        event("violation found in fewer rounds than steps" if k < steps else "violation found, a step a round")


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_rounds_of_several_steps_agree_with_the_explicit_engine_on_generated_specs(text):
    assert_rounds_agree(compiled(text), 2, steps=3)


def test_a_bug_of_six_steps_is_found_in_three_rounds():
    cm = compiled(BOTH_DONE)
    got = assert_rounds_agree(cm, 4)
    assert got["not_both"] == (3, 6)
    plain = bmc(cm, 4)  # one step per frame: not within 4
    assert plain.findings["not_both"].verdict is Verdict.INCOMPLETE
    r = bmc(cm, 4, rounds=True)
    cx = r.findings["not_both"].counterexample
    assert [a.process for a in cx.trace.actions] == ["p", "q", "p", "q", "p", "q"]


def test_a_round_of_three_steps_a_process_takes_both_runs_at_once(tmp_path, capsys):
    cm = compiled(BOTH_DONE)
    assert assert_rounds_agree(cm, 2, steps=3)["not_both"] == (1, 6)
    cx = bmc(cm, 2, rounds=3).findings["not_both"].counterexample
    assert [a.process for a in cx.trace.actions] == ["p"] * 3 + ["q"] * 3
    assert assert_rounds_agree(cm, 2, steps=2)["not_both"] == (2, 6)  # two steps a turn: two rounds
    f = tmp_path / "m.spec"
    f.write_text(BOTH_DONE)
    assert main([str(f), "--engine", "bmc", "--rounds", "3", "--depth", "1"]) == 3  # deadlock: not within 1 round
    out = " ".join(capsys.readouterr().out.split())
    assert "rounds (--rounds 3): depth counts rounds" in out and "takes up to 3 steps in a row or idles" in out
    assert "not_both violated violated ok 6 - 1 " in out


def test_the_output_says_what_the_depth_counts(tmp_path, capsys):
    f = tmp_path / "m.spec"
    f.write_text(BOTH_DONE.replace("expect violated not_both;", ""))
    assert main([str(f), "--engine", "bmc", "--rounds", "--depth", "2", "--brief", "--json", str(tmp_path / "r.json")]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "no violation up to 2 rounds" in out and "depth counts rounds, not steps" in out
    import json
    v = json.loads((tmp_path / "r.json").read_text())["variants"][0]
    assert v["stats"]["limit"] == "2 rounds" and v["stats"]["reductions"][0].startswith("rounds (--rounds): depth counts rounds")
    assert v["outcomes"][0]["note"] == "no violation up to 2 rounds"
    with pytest.raises(SystemExit):
        main([str(f), "--engine", "induction", "--rounds"])


def _parallel_round_at(self, k, frame, steps=1):
    """The mutation: every turn of a round reads the round's first state, as if the
    steps of a round never conflicted."""
    formulas, state, subs = [], list(frame), []
    for tt in self.turn_templates():
        sel = encode.z3.BitVec(f"turn{k}:{tt.gid}", tt.sel.size(), self.ctx)
        after = list(state)
        for j in tt.nxt:
            after[j] = encode.z3.Const(f"{k}:{tt.gid}:{j}", self.sort(j))
        pairs = list(zip(self.cur, frame)) + [(tt.nxt[j], after[j]) for j in tt.nxt] + [(tt.sel, sel)]
        formulas.append(encode.z3.substitute(self.turn_formula(tt, tt.reach[-1]), *pairs))
        subs.append(encode.Substep(sel, tt.transitions, after))
        state = after
    return formulas, state, subs


def test_the_agreement_check_catches_conflicting_steps_run_as_independent(monkeypatch):
    assert assert_rounds_agree(compiled(TWICE), 3) == {}
    monkeypatch.setattr(encode.Encoding, "round_at", _parallel_round_at)
    with pytest.raises(AssertionError):
        assert_rounds_agree(compiled(TWICE), 3)


def test_a_turn_keeps_only_the_steps_its_instance_can_have_reached():
    cm = compiled(BOTH_DONE)
    p = cm.instances[0]
    reach = encode.reach_by_steps(p, cm.program.init_choices)
    assert reach == [frozenset(range(n + 1)) for n in range(len(p.steps_at))]  # a straight line: one pc more a step
    enc = encode.Encoding(cm)
    tt = enc.turn_templates()[0]
    # round 0 holds p's first step only (selector 0, or 3: idle); the last round all three
    first, last = str(enc.turn_formula(tt, reach[0])), str(enc.turn_formula(tt, reach[-1]))
    assert "turn:0 == 0" in first and "turn:0 == 1" not in first and "turn:0 == 2" not in first
    assert all(f"turn:0 == {i}" in last for i in range(4))


@pytest.mark.slow
def test_rounds_reach_a_deep_pi_timer_bug():
    """v4_stale_posted's early timer interrupt: 33 steps, found at round 23 (the first
    round with a violation does not depend on the solver; the trace's length may). On
    the hand-encoded pi_timer: the shipped model, written with contexts, takes 41 steps
    and more rounds (its VM entry, exit, expiry and irq entry are steps of their own)."""
    import os

    from checker import ir
    from checker.backends.python import compile_program
    from checker.front.parse import parse
    from checker.resolve import resolve

    path = os.path.join(os.path.dirname(__file__), "twins", "pi_timer_hand.spec")
    cm = compile_program(ir.build(resolve(parse(open(path, encoding="utf-8").read(), path), "v4_stale_posted")))
    r = bmc(cm, 23, rounds=True)
    assert not r.checker_bugs
    f = r.findings["no_early_timer_irq"]
    assert f.verdict is Verdict.VIOLATED and f.note.startswith("found at depth 23 (23 rounds, ")
    assert 33 <= f.counterexample.trace.length <= 23 * len(cm.instances)


def test_the_api_takes_rounds_for_bmc_only():
    from checker.api import check_source
    from checker.base.errors import SpecError

    r = check_source(BOTH_DONE, engine="bmc", depth=3, rounds=True)
    o = next(o for o in r.variants[0].outcomes if o.property == "not_both")
    assert o.verdict is Verdict.VIOLATED and o.note == "found at depth 3 (3 rounds, 6 steps)"
    with pytest.raises(SpecError):
        check_source(BOTH_DONE, engine="induction", rounds=True)
    r = check_source(BOTH_DONE, engine="bmc", depth=1, rounds=3)
    o = next(o for o in r.variants[0].outcomes if o.property == "not_both")
    assert o.verdict is Verdict.VIOLATED and o.note == "found at depth 1 (1 rounds, 6 steps)"
    for bad in (-1, 2.5, "3"):
        with pytest.raises(SpecError, match="rounds must be"):
            check_source(BOTH_DONE, engine="bmc", rounds=bad)


def test_a_stride_looks_only_at_its_rounds_and_the_last():
    """--stride D: a look at round r covers the rounds before it (a round may idle), so
    the 3-round bug is found at the first look past it, and "no violation" is said only
    of a round that was looked at."""
    cm = compiled(BOTH_DONE)
    r = bmc(cm, 7, rounds=True, stride=4)  # looks at 0, 4 and 7
    f = r.findings["not_both"]
    assert f.verdict is Verdict.VIOLATED and f.note.startswith("found at depth 4 (4 rounds, ")
    assert [a.process for a in f.counterexample.trace.actions].count("p") == 3
    short = bmc(cm, 2, rounds=True, stride=4)  # only rounds 0 and 2: not yet
    assert short.findings["not_both"].verdict is Verdict.INCOMPLETE
    assert short.findings["not_both"].note == "no violation up to 2 rounds"
    assert "--stride 4: violations looked for at rounds 4, 8, ... and the last" in short.stats.reductions[0]


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_a_stride_finds_what_every_round_finds(text):
    """Every property violated within K rounds is violated at the stride's last look, and
    one fresh query's model serves each property it violates: the verdicts agree."""
    cm = compiled(text)
    every, strided = bmc(cm, K, rounds=True), bmc(cm, K, rounds=True, stride=2)
    assert not every.checker_bugs and not strided.checker_bugs
    assert {n: f.verdict for n, f in every.findings.items()} == {n: f.verdict for n, f in strided.findings.items()}


def test_a_stride_needs_rounds(tmp_path, capsys):
    from checker.api import check_source
    from checker.base.errors import SpecError

    f = tmp_path / "m.spec"
    f.write_text(BOTH_DONE)
    with pytest.raises(SystemExit):
        main([str(f), "--engine", "bmc", "--stride", "2"])
    assert "--stride is for --engine bmc --rounds" in capsys.readouterr().err
    with pytest.raises(SpecError, match="stride is for engine='bmc' with rounds"):
        check_source(BOTH_DONE, engine="bmc", stride=2)
    r = check_source(BOTH_DONE, engine="bmc", depth=5, rounds=True, stride=5)
    assert r.variants[0].outcomes[0].verdict is Verdict.VIOLATED
