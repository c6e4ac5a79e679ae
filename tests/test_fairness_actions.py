"""Issue 17, fairness and end states: fairness of one action (`fair`, `strongly fair`),
`stutter`, the warning for an `end` label that fairness forces off, the per-process
fairness hint, quiescent `final` states, `end` labels on loops, and `P.state`.

Each model is the natural one a user writes; the reviewers' reproducers are in
/work/shared/reviews/language/ (r1_fair_end, per_branch_fairness, r3_final, r2_while_end,
task_state_not_readable), inlined here so the tests stand alone."""

from __future__ import annotations

import pytest

from agreement import assert_engines_agree, compiled
from checker.base.errors import SpecError
from checker.front.parse import parse
from checker.pipeline import Options, check_spec
from checker.results.trace import Verdict

R1_FAIR_END = """model r1_fair_end;
var fired: bool = false;
var delivered: bool = false;
process hrtimer { fired = true; }      // fires elsewhere, no kick
process vcpu {
end_guest:
  choose {
    atomic { await false; }            // an exit that never comes (no kick)
  } or {
    atomic { await fired; }            // HLT exit once there is something to see
    delivered = true;
  }
}
property timer_delivered: always (fired -> eventually delivered);
"""

PER_BRANCH = """model per_branch_fairness;
var virr: bool = false;
var delivered: bool = false;
process device { virr = true; }
process vcpu {
guest:
  choose {
    atomic { await virr; virr = false; delivered = true; }   // virtual-interrupt delivery
  } or {
    skip;                                                      // guest code runs
  }
  goto guest;
}
property irq_delivered: always (virr -> eventually delivered);
"""

R3_FINAL = """model r3_final;
var pending: 0..1 = 0;
var injected: 0..1 = 0;
process timer { pending = 1; }
process vcpu {
end_idle:
  loop { atomic { await pending > 0; pending = 0; injected = injected + 1; } }
}
final all_injected: injected == 1;
"""

R2_WHILE_END = """model r2_while_end;
var go: bool = false;
var n: 0..1 = 0;
process waiter {
end_idle:
  while (n < 1) {
    atomic { await go; n = 1; }
  }
}
"""

TASK_STATE = """model r9;
waitqueue wq;
var go: bool = false;
process v { prepare_to_wait(wq); if (!go) schedule(); finish_wait(wq); }
process sched {
  if (v.state == RUNNING) go = true;
}
"""


def run(source: str, **opts):
    """Check `source` (every variant); per variant, {property: outcome}, and the result."""
    result = check_spec(parse(source, "m.spec"), Options(**opts))
    return {v.variant: {o.property: o for o in v.outcomes} for v in result.variants}, result


def verdict(source: str, prop: str, variant: str = "base", **opts) -> Verdict:
    return run(source, **opts)[0][variant][prop].verdict


# ---- 1. fairness of one action, and stutter -------------------------------------


def test_per_branch_fairness_fair_branch_holds():
    """The per-branch trap: with the delivery branch marked `fair` the property holds,
    and the verdict says which action it rests on."""
    fixed = PER_BRANCH.replace("  choose {\n    atomic", "  choose {\n    fair atomic")
    outcomes, result = run(fixed)
    o = outcomes["base"]["irq_delivered"]
    assert o.verdict is Verdict.HOLDS
    assert "the action at line 8 (vcpu)" in o.note
    assert "and for the action at line 8 (vcpu)" in result.variants[0].fairness
    # `or fair { ... }` marks a branch the same way
    other = PER_BRANCH.replace("  } or {\n    skip;", "  } or fair {\n    skip;")
    assert verdict(other, "irq_delivered") is Verdict.VIOLATED  # the guest branch fair: still may starve delivery
    both = PER_BRANCH.replace("  choose {\n    atomic", "  choose {\n    fair atomic").replace(
        "  } or {\n    skip;", "  } or fair {\n    skip;")
    assert verdict(both, "irq_delivered") is Verdict.HOLDS


def test_per_branch_fairness_hint():
    """A lasso that keeps one process taking one branch while another branch of the same
    choose stays enabled names the trap and the fix."""
    outcomes, _ = run(PER_BRANCH)
    o = outcomes["base"]["irq_delivered"]
    assert o.verdict is Verdict.VIOLATED
    msg = " ".join(o.counterexample.message.split())
    assert "Hint: fairness is per process: vcpu keeps moving while its step" in msg
    assert "(line 8) stays enabled and is never taken" in msg
    assert "mark it `fair`" in msg


def test_no_hint_when_the_other_step_is_disabled_in_the_loop():
    """The hint needs the neglected step enabled all round the loop: a process that
    waits (its other branch disabled somewhere in the loop) gets no hint."""
    src = """model nohint;
var a: bool = false;
var done: bool = false;
process p {
l:
  choose { atomic { await a; done = true; } } or { a = !a; }
  goto l;
}
property done_eventually: always eventually done;
"""
    o = run(src)[0]["base"]["done_eventually"]
    assert o.verdict is Verdict.VIOLATED
    assert "Hint" not in o.counterexample.message


def test_a_stutter_branch_at_a_fair_end_lets_the_guest_run_for_ever():
    """`choose { stutter; } or { HLT }`: the guest may run in guest mode for ever, so the
    buggy protocol (no kick) violates timer_delivered, with a loop of stutter steps."""
    src = R1_FAIR_END.replace("atomic { await false; }", "stutter;")
    o = run(src)[0]["base"]["timer_delivered"]
    assert o.verdict is Verdict.VIOLATED
    loop = o.counterexample.trace.actions[o.counterexample.trace.loop_start:]
    assert [s.text for s in loop] == ["stutter;"]
    assert "Hint" not in o.counterexample.message  # stuttering is what the author said it may do


def test_stutter_then_fair_branch_is_forced():
    """`choose { stutter; } or fair { ... }`: the fair branch is forced, the stutter only
    says the process may wait while it is not enabled."""
    src = R1_FAIR_END.replace("atomic { await false; }", "stutter;").replace(
        "  } or {\n    atomic { await fired; }", "  } or fair {\n    atomic { await fired; }")
    assert verdict(src, "timer_delivered") is Verdict.HOLDS


def test_stutter_is_a_self_loop_that_keeps_the_other_branches():
    """After a stutter step the process is where it was: the other branch is still there."""
    src = """model st;
var x: 0..1 = 0;
process p {
  choose { stutter; } or { x = 1; }
}
reachable set_after_stutter: x == 1;
invariant never: p@end -> x == 1;
"""
    outcomes, result = run(src)
    assert outcomes["base"]["set_after_stutter"].verdict is Verdict.HOLDS
    assert outcomes["base"]["never"].verdict is Verdict.HOLDS
    assert outcomes["base"]["deadlock"].verdict is Verdict.HOLDS
    assert result.variants[0].stats.states == 2


def test_stutter_at_the_end_of_a_body_is_a_valid_end():
    src = """model st_end;
var x: 0..1 = 0;
process p { x = 1; stutter; }
final done: x == 1;
"""
    outcomes, result = run(src)
    assert outcomes["base"]["done"].verdict is Verdict.HOLDS
    assert result.variants[0].stats.final_states == 1  # a stutter does not count as a move


def test_strong_fairness_of_a_toggling_guard():
    """Enabled infinitely often but never continuously: weak fairness of the action does
    not force it, strong fairness does (the Streett split of the component)."""
    src = """model strong;
var ready: bool = false;
var taken: bool = false;
process producer {
end_toggle:
  loop { ready = !ready; }
}
process consumer {
  FAIRNESS atomic { await ready; taken = true; }
}
property eventually_taken: always eventually taken;
"""
    assert verdict(src.replace("FAIRNESS ", ""), "eventually_taken") is Verdict.VIOLATED
    assert verdict(src.replace("FAIRNESS", "fair"), "eventually_taken") is Verdict.VIOLATED
    outcomes, result = run(src.replace("FAIRNESS", "strongly fair"))
    o = outcomes["base"]["eventually_taken"]
    assert o.verdict is Verdict.HOLDS
    assert "strong fairness of the action at line 9 (consumer)" in o.note
    assert "strong fairness for the action at line 9 (consumer)" in result.variants[0].fairness


def test_fair_action_of_an_unfair_process():
    """An action's fairness is its own: an `unfair process` whose one step is `fair` is
    forced to take it, and without `fair` it may stall."""
    src = """model unfair_fair;
var done: bool = false;
unfair process p { MARK done = true; }
property finishes: always eventually done;
"""
    assert verdict(src.replace("MARK ", ""), "finishes") is Verdict.VIOLATED
    assert verdict(src.replace("MARK", "fair"), "finishes") is Verdict.HOLDS


def test_fair_actions_per_instance_of_a_process_array():
    src = """model arr;
var hits[p]: bool = false;
process p[2] {
l:
  choose { fair atomic { await !hits[self]; hits[self] = true; } } or { skip; }
  goto l;
}
property both: always eventually (hits[0] && hits[1]);
"""
    outcomes, _ = run(src)
    o = outcomes["base"]["both"]
    assert o.verdict is Verdict.HOLDS
    assert "the action at line 5 (p[0]), the action at line 5 (p[1])" in o.note


def test_fair_actions_turn_partial_order_reduction_off_for_liveness():
    fixed = PER_BRANCH.replace("  choose {\n    atomic", "  choose {\n    fair atomic")
    _, result = run(fixed)
    assert any("no partial-order reduction" in n and "(line 8)" in n for n in result.variants[0].stats.reductions)


def test_fair_inside_atomic_is_refused():
    src = """model bad;
var x: 0..1 = 0;
process p { atomic { fair x = 1; } }
"""
    with pytest.raises(SpecError) as e:
        check_spec(parse(src, "m.spec"), Options())
    assert "`fair` is not allowed inside `atomic`" in str(e.value)
    assert e.value.span.line == 3 and e.value.span.col == 22


def test_promela_twin_refuses_fair_with_liveness(tmp_path):
    from checker import ir
    from checker.backends.promela import translate
    from checker.resolve import resolve

    fixed = PER_BRANCH.replace("  choose {\n    atomic", "  choose {\n    fair atomic")
    with pytest.raises(SpecError) as e:
        translate(ir.build(resolve(parse(fixed, "m.spec"), "base")))
    assert "SPIN's weak fairness (-f) is per process" in str(e.value)
    assert e.value.span.line == 8
    # without a liveness property `fair` changes nothing the twin checks: translated
    safety = fixed.replace("property irq_delivered: always (virr -> eventually delivered);",
                           "invariant ok: true;")
    assert "active proctype vcpu()" in translate(ir.build(resolve(parse(safety, "m.spec"), "base")))


# ---- 2. the end-label trap -----------------------------------------------------


def test_an_end_label_whose_stay_branch_never_starts_is_warned_with_both_fixes():
    """The reviewer's model: an `end` label whose 'stay' branch can never start. The
    warning names the label, its line and both fixes."""
    _, result = run(R1_FAIR_END)
    lint = result.variants[0].lint
    hits = [(line, msg) for line, msg in lint if "end label 'end_guest'" in msg]
    assert len(hits) == 1
    line, msg = hits[0]
    assert line == 6
    assert "(line 8) can never start" in msg
    assert "`{ stutter; }`" in msg and "`unfair process vcpu`" in msg


@pytest.mark.parametrize("change", [
    ("atomic { await false; }", "stutter;"),                         # the fix: a stutter branch
    ("process vcpu {", "unfair process vcpu {"),                     # the other fix
    ("property timer_delivered: always (fired -> eventually delivered);", ""),  # no liveness: no fairness
])
def test_no_fair_end_warning_when_the_process_may_stay(change):
    _, result = run(R1_FAIR_END.replace(*change))
    assert not [m for _, m in result.variants[0].lint if "end label" in m]


# ---- 3. quiescence -------------------------------------------------------------


def test_final_is_checked_only_in_quiescent_states():
    """r3_final: the vCPU rests at end_idle with the injection enabled; that state is not
    final. The condition holds, in the one state where nothing can move."""
    outcomes, result = run(R3_FINAL)
    assert outcomes["base"]["all_injected"].verdict is Verdict.HOLDS
    assert result.variants[0].stats.final_states == 1


def test_final_still_violated_where_it_really_fails():
    """The same idle loop, where the timer can fire twice but the counter saturates: the
    second pending interrupt is dropped, and the quiescent state shows it."""
    src = R3_FINAL.replace("process timer { pending = 1; }",
                           "process timer { pending = 1; await pending == 0; pending = 1; }").replace(
        "var injected: 0..1 = 0;", "var injected: 0..2 = 0;").replace(
        "final all_injected: injected == 1;", "final all_injected: injected == 1;\nfinal both: injected == 2;")
    outcomes, _ = run(src)
    assert outcomes["base"]["both"].verdict is Verdict.HOLDS
    o = outcomes["base"]["all_injected"]
    assert o.verdict is Verdict.VIOLATED
    assert o.counterexample.trace.length == 5  # fire, inject, the await, fire again, inject again


@pytest.mark.parametrize("depth", [6])
def test_final_quiescence_bmc_agrees(depth):
    src = R3_FINAL.replace("final all_injected: injected == 1;", "final all_injected: injected == 1;\n"
                           "final wrong: injected == 0;")
    exp, got = assert_engines_agree(compiled(src), depth)
    assert exp["wrong"] == got["wrong"] == 2
    assert "all_injected" not in exp


def test_final_quiescence_under_tso():
    """A litmus-like test under tso: final states still need every buffer drained, and a
    process resting at an end label with a step enabled is not final."""
    src = """model sb_idle;
memory tso;
var x: 0..1 = 0;
var y: 0..1 = 0;
var r: 0..1 = 0;
process p0 { x = 1; r = y; }
process p1 {
end_idle:
  loop { atomic { await x == 1 && y == 0; y = 1; } }
}
final seen: y == 1;
"""
    outcomes, _ = run(src)
    assert outcomes["base"]["seen"].verdict is Verdict.HOLDS


# ---- 4. end labels on loops ------------------------------------------------------


def test_an_end_label_on_a_loop_covers_its_first_await():
    outcomes, _ = run(R2_WHILE_END)
    assert outcomes["base"]["deadlock"].verdict is Verdict.HOLDS
    # `P@end` reads the same places
    src = R2_WHILE_END + "reachable idle_at_end: waiter@end && n == 0;\n"
    assert verdict(src, "idle_at_end") is Verdict.HOLDS


def test_end_label_on_a_loop_does_not_cover_a_wait_mid_iteration():
    """A wait after the first step of an iteration is a deadlock still."""
    src = """model mid;
var go: bool = false;
var n: 0..2 = 0;
process waiter {
end_idle:
  while (n < 1) {
    n = 0;
    await go;
    n = 1;
  }
}
"""
    o = run(src)[0]["base"]["deadlock"]
    assert o.verdict is Verdict.VIOLATED
    assert "waiter at line8" in o.counterexample.message


def test_end_label_on_while_bmc_agrees():
    exp, got = assert_engines_agree(compiled(R2_WHILE_END), 4)
    assert "deadlock" not in exp and "deadlock" not in got


# ---- 5. task state -------------------------------------------------------------


def test_task_state_not_readable():
    """The reviewer's model: process code reads `v.state == RUNNING` (kvm_sched_out).
    It resolves now; v can sleep for ever (nobody wakes it), a real deadlock."""
    outcomes, _ = run(TASK_STATE)
    o = outcomes["base"]["deadlock"]
    assert o.verdict is Verdict.VIOLATED
    assert [s.text for s in o.counterexample.trace.actions] == [
        "prepare_to_wait(wq);", "if (!go)", "if (v.state == RUNNING)"]


def test_task_state_in_properties_and_every_engine():
    src = """model ts;
waitqueue wq;
var go: bool = false;
var seen: bool = false;
process v { prepare_to_wait(wq); if (!go) schedule(); finish_wait(wq); }
process waker { if (v.state == INTERRUPTIBLE) seen = true; go = true; wake_up(wq); }
invariant running_at_end: v@end -> v.state == RUNNING;
invariant waiting_seen: seen -> v.state == INTERRUPTIBLE || go;
invariant wrong: v.state == TASK_RUNNING;
"""
    outcomes, _ = run(src)
    assert outcomes["base"]["running_at_end"].verdict is Verdict.HOLDS
    assert outcomes["base"]["waiting_seen"].verdict is Verdict.HOLDS
    assert outcomes["base"]["wrong"].verdict is Verdict.VIOLATED
    assert outcomes["base"]["wrong"].counterexample.trace.length == 1
    assert verdict(src, "wrong", por=False) is Verdict.VIOLATED
    exp, got = assert_engines_agree(compiled(src), 8)
    assert exp["wrong"] == got["wrong"] == 1


def test_task_state_of_a_process_that_never_waits_is_running():
    src = """model never_waits;
var x: 0..1 = 0;
process p { x = 1; }
invariant always_running: p.state == RUNNING;
"""
    assert verdict(src, "always_running") is Verdict.HOLDS


def test_a_local_named_state_keeps_its_meaning():
    src = """model own_state;
process p { var state: 0..3 = 2; state = 3; }
invariant local: p.state >= 2;
"""
    assert verdict(src, "local") is Verdict.HOLDS


# ---- the Promela twin agrees -------------------------------------------------------

TWIN = """model twin_i17;
waitqueue wq;
var pending: 0..1 = 0;
var injected: 0..1 = 0;
var go: bool = false;
var n: 0..1 = 0;
var x: 0..1 = 0;
process timer { pending = 1; }
process vcpu {
end_idle:
  loop { atomic { await pending > 0; pending = 0; injected = injected + 1; } }
}
process waiter {
end_w:
  while (n < 1) { atomic { await go; n = 1; } }
}
process v { prepare_to_wait(wq); if (!go) schedule(); finish_wait(wq); }
process sched { if (v.state == RUNNING) go = true; }
process g { choose { stutter; } or { x = 1; } }
final all_injected: injected == 1;
final wrong: x == 0;
expect violated deadlock, wrong;
"""


def test_pan_agrees_on_quiescence_loop_end_labels_task_state_and_stutter(tmp_path):
    """Every verdict and the state count, reductions off: `final` where nothing can move
    (stutter aside), the while loop's end label, `v.state` read by process code."""
    from test_promela import agreement, needs_spin

    needs_spin()
    spec = tmp_path / "twin_i17.spec"
    spec.write_text(TWIN)
    outcomes, _ = run(TWIN)
    assert outcomes["base"]["all_injected"].verdict is Verdict.HOLDS
    assert outcomes["base"]["wrong"].verdict is Verdict.VIOLATED
    assert outcomes["base"]["deadlock"].verdict is Verdict.VIOLATED
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == []
    assert differences == {"base": []}
