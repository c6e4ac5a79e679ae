"""The shipped models check themselves, and the pi_timer model keeps telling its story.

Every `models/*.spec` must pass `check` (every outcome as its `expect` clauses say).
For pi_timer the state count of each variant is pinned (a changed count is a
reviewable event), each expected counterexample is checked against the race it
stands for (SEED-BUGS entry 1), and breaking one of the orderings of
KVM-SEMANTICS.md section 9 in the base model must produce a lost interrupt, so the
model cannot quietly become too coarse to see those races.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.cli import exit_code
from checker.export.text import format_run
from checker.front.parse import parse
from checker.pipeline import Options, check_spec, load
from checker.results.trace import Verdict
from shared_runs import checked

MODELS = sorted((Path(__file__).resolve().parent.parent / "models").glob("*.spec"))
PI_TIMER = Path(__file__).resolve().parent.parent / "models" / "pi_timer.spec"


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_model_checks_itself(path):
    """`check FILE` would exit 0: its search of every variant (shared with the other tests
    of the model) meets every expectation. The command itself on a shipped model is
    test_packaging's installed `check pi_timer`."""
    result = checked(path)
    assert exit_code(result) == 0, format_run(result, show_traces=False)


def test_there_is_a_model():
    assert PI_TIMER in MODELS


# variant -> distinct states (explicit engine, defaults of the model, no reductions)
PI_TIMER_STATES = {
    "base": 8889,
    "hlt_exits": 14166,
    "kick_without_wake": 11607,
    "no_kick_hlt_exits": 7894,
    "unpinned_no_kick": 4656,
    "stale_expired_deadline": 12966,
    "v4_stale_posted": 4952,
    "v4_stale_request": 13348,
    "posted_without_wait": 9913,
    "no_kick_no_wake": 6984,
    "post_any_mode": 3421,
    "post_any_mode_timer_fn": 3448,
    "post_any_mode_timer_fn_hlt_exits": 5359,
    "post_any_mode_timer_fn_hlt_exits_hlt_cond": 9766,
    "post_any_mode_timer_fn_hlt_exits_no_p3_kick": 3748,
    "base_tso": 12495,
    "hlt_exits_tso": 19590,
    "no_entry_mb_tso": 14884,
    "no_entry_mb": 8321,
    "no_kick_mb_tso": 19568,
    "base_lkmm": 10521,
    "r4_mb_lkmm": 31593,
    "no_entry_mb_lkmm": 7009,
    "no_kick_mb_lkmm": 19159,
}


@pytest.fixture(scope="module")
def pi_timer():
    return checked(PI_TIMER, por=False, symmetry="off")


def by_variant(result):
    return {v.variant: v for v in result.variants}


def test_pi_timer_state_counts(pi_timer):
    got = {v.variant: v.stats.states for v in pi_timer.variants}
    assert got == PI_TIMER_STATES
    assert all(v.stats.complete for v in pi_timer.variants)
    assert pi_timer.all_as_expected


def test_pi_timer_base_holds_everything(pi_timer):
    base = by_variant(pi_timer)["base"]
    assert {o.property: o.verdict for o in base.outcomes} == {
        "no_early_timer_irq": Verdict.HOLDS, "posted_after_deadline": Verdict.HOLDS,
        "expired_timer_not_posted": Verdict.HOLDS, "timer_irq_once": Verdict.HOLDS,
        "no_early_posted_irq": Verdict.HOLDS, "no_early_requested_irq": Verdict.HOLDS,
        "timer_wakes_vcpu": Verdict.HOLDS, "deadlock": Verdict.HOLDS,
        "scheduling_while_atomic": Verdict.HOLDS}  # the built-in check of a thread that sleeps


def violations(variant) -> set[str]:
    return {o.property for o in variant.outcomes if o.verdict is Verdict.VIOLATED}


def test_pi_timer_each_variant_violates_exactly_its_bug(pi_timer):
    v = by_variant(pi_timer)
    assert {name: violations(x) for name, x in v.items() if violations(x)} == {
        "no_kick_hlt_exits": {"timer_wakes_vcpu"},
        "unpinned_no_kick": {"deadlock", "timer_wakes_vcpu"},
        "stale_expired_deadline": {"no_early_timer_irq", "posted_after_deadline", "no_early_posted_irq",
                                   "no_early_requested_irq"},
        "v4_stale_posted": {"no_early_timer_irq", "posted_after_deadline", "no_early_posted_irq"},
        "v4_stale_request": {"no_early_timer_irq", "no_early_requested_irq"},
        "posted_without_wait": {"no_early_timer_irq", "posted_after_deadline", "no_early_posted_irq"},
        "no_kick_no_wake": {"deadlock", "timer_wakes_vcpu"},
        "post_any_mode": {"expired_timer_not_posted"},
        "post_any_mode_timer_fn_hlt_exits_no_p3_kick": {"deadlock", "timer_wakes_vcpu"},
        "no_entry_mb_tso": {"deadlock", "timer_wakes_vcpu"},
        "base_lkmm": {"deadlock", "timer_wakes_vcpu"},
        "r4_mb_lkmm": {"no_early_timer_irq", "no_early_requested_irq"},
        "no_entry_mb_lkmm": {"deadlock", "timer_wakes_vcpu"},
        "no_kick_mb_lkmm": {"deadlock", "timer_wakes_vcpu"},
    }


def counterexample(result, variant, prop):
    o = next(o for o in by_variant(result)[variant].outcomes if o.property == prop)
    return o.counterexample.trace


def test_story_a_vcpu_halted_in_the_guest_misses_the_request(pi_timer):
    t = counterexample(pi_timer, "unpinned_no_kick", "deadlock")
    last = t.states[-1]
    # the thread is in guest mode (its pc while guest_enter() runs), the guest halted there
    assert dict(last.pcs)["vcpu"] == "end_guest" and dict(last.pcs)["os"] == "halted"
    assert last.get("guest_mode") == (True, False) and last.get("mode") == "IN_GUEST_MODE"
    assert last.get("pending") == 1 and "KVM_REQ_PENDING_TIMER" in last.get("requests")
    # the hrtimer saw the vCPU outside guest mode, then the vCPU passed its E8 check
    # before the request was made
    texts = [(a.process, a.text) for a in t.actions]
    e8 = [i for i, (p, x) in enumerate(texts) if p == "vcpu" and x.startswith("if (mode == EXITING_GUEST_MODE")]
    request = next(i for i, (p, x) in enumerate(texts)
                   if p == "apic_timer" and x.startswith("set_bit(KVM_REQ_PENDING_TIMER"))
    assert e8 and e8[-1] < request
    assert not any("cmpxchg" in x for _, x in texts)  # no kick


def test_story_b_the_posted_path_reads_a_stale_expired_tscdeadline(pi_timer):
    t = counterexample(pi_timer, "stale_expired_deadline", "posted_after_deadline")
    last = t.states[-1]
    assert dict(last.pcs)["apic_timer"] == "post"
    assert last.get("guest_tsc") < last.get("programmed_deadline")
    assert not any("expired_tscdeadline = tscdeadline" in a.text for a in t.actions)
    early = counterexample(pi_timer, "stale_expired_deadline", "no_early_timer_irq").states[-1]
    assert dict(early.pcs)["os"] == "timer_irq"
    assert early.get("guest_tsc") < early.get("programmed_deadline")


def test_story_c_a_blocked_vcpu_sleeps_for_ever(pi_timer):
    t = counterexample(pi_timer, "no_kick_no_wake", "deadlock")
    last = t.states[-1]
    assert dict(last.pcs)["vcpu"] == "blocked"
    assert last.get("vcpu.state") == "INTERRUPTIBLE" and last.get("wq") == ("vcpu",)
    assert last.get("pending") == 1


# Each mutation breaks one rule of KVM-SEMANTICS.md section 9 in the base model.
SECTION_9_BREAKAGES = {
    # D2 / item 3: mode = IN_GUEST_MODE after the PIR sync
    "mode_after_pir_sync": (
        "      mode = IN_GUEST_MODE;                                   // E5 a plain store\n"
        "      if (ENTRY_MB) smp_mb__after_srcu_read_unlock();         // E6 srcu_read_unlock\n"
        "      vmx_sync_pir_to_irr();                                  // E7\n",
        "      vmx_sync_pir_to_irr();\n"
        "      mode = IN_GUEST_MODE;\n"),
    # item 4: interrupts disabled only after the last check (and before the VM entry)
    "irq_off_after_checks": (
        "      local_irq_disable();                                    // E4\n",
        ""),
    # D1: the entry does not look at vcpu->requests
    "no_request_check": (
        "if (mode == EXITING_GUEST_MODE || !bitmap_empty(requests)) {",
        "if (mode == EXITING_GUEST_MODE) {"),
}


@pytest.mark.parametrize("name", sorted(SECTION_9_BREAKAGES))
def test_breaking_a_section_9_rule_loses_the_interrupt(name):
    old, new = SECTION_9_BREAKAGES[name]
    text = PI_TIMER.read_text()
    assert old in text, "the model changed: update this mutation"
    text = text.replace(old, new, 1)
    if name == "irq_off_after_checks":  # interrupts go off after E8, just before the entry
        anchor = "        // vmx_vcpu_run: V2 kvm_wait_lapic_expire"
        assert anchor in text
        text = text.replace(anchor, "        local_irq_disable();\n" + anchor, 1)
    result = check_spec(parse(text, "mutant.spec"), Options(variants=("base",)))
    assert violations(result.variants[0]) == {"deadlock", "timer_wakes_vcpu"}


def test_setting_mode_before_irq_off_is_harmless():
    # KVM-SEMANTICS.md 9, item 4: harmless as long as every check follows IRQ-off.
    old = ("      local_irq_disable();                                    // E4\n"
           "      mode = IN_GUEST_MODE;                                   // E5 a plain store\n")
    text = PI_TIMER.read_text()
    assert old in text
    text = text.replace(old, "      mode = IN_GUEST_MODE;\n      local_irq_disable();\n", 1)
    result = check_spec(parse(text, "mutant.spec"), Options(variants=("base", "hlt_exits")))
    assert all(not violations(v) for v in result.variants)


# ---- liveness: timer_wakes_vcpu (SEED-BUGS 1a and 1d) ----


def test_story_a_as_liveness_the_vcpu_keeps_running_in_the_guest(pi_timer):
    # unpinned timer, no kick: the request is made after the vCPU's last E8 check, and
    # the guest then runs for ever without an exit. Not a deadlock: an infinite run.
    t = counterexample(pi_timer, "unpinned_no_kick", "timer_wakes_vcpu")
    assert t.loop_start is not None and t.loop_start < t.length
    loop = t.states[t.loop_start:]
    assert all(dict(s.pcs)["vcpu"] == "end_guest" and s.get("mode") == "IN_GUEST_MODE" for s in loop)
    assert all(dict(s.pcs)["os"] != "halted" and "KVM_REQ_PENDING_TIMER" in s.get("requests") for s in loop)
    assert {a.process for a in t.actions[t.loop_start:]} == {"os"}  # the guest runs, nothing exits
    assert not any("cmpxchg" in a.text for a in t.actions)  # no kick


def test_v52_wake_up_without_kick_wakes_a_blocked_vcpu_but_not_a_running_guest(pi_timer):
    # no_kick_hlt_exits: no deadlock (the swait wake-up wakes a vCPU in kvm_vcpu_block),
    # yet the timer is lost for a guest that keeps running: only liveness sees it
    v = by_variant(pi_timer)["no_kick_hlt_exits"]
    assert violations(v) == {"timer_wakes_vcpu"}
    t = counterexample(pi_timer, "no_kick_hlt_exits", "timer_wakes_vcpu")
    assert all(s.get("mode") == "IN_GUEST_MODE" for s in t.states[t.loop_start:])


def _states(variant):
    from checker.engines.explicit import decoder_for, explore
    from checker.pipeline import compile_variant
    spec = load(str(PI_TIMER))
    cm = compile_variant(spec, variant, Options())
    d = decoder_for(cm)
    return [d.decode(s) for s in explore(cm, graph=True).graph.states]


def test_1d_a_blocked_vcpu_always_wakes_when_the_timer_is_posted(pi_timer):
    # Without the kvm_hlt_in_guest condition, HLT exits on: the timer is posted to a
    # vCPU asleep in kvm_vcpu_block (reachable, so the question is not vacuous), and
    # timer_wakes_vcpu holds: P3 kicks it awake and kvm_vcpu_check_block syncs PIR.
    for variant in ("post_any_mode_timer_fn_hlt_exits", "hlt_exits"):
        asleep_posted = [s for s in _states(variant)
                         if dict(s.pcs)["vcpu"] == "blocked" and s.get("vcpu.state") == "INTERRUPTIBLE"
                         and "LOCAL_TIMER_VECTOR" in s.get("pir")]
        assert asleep_posted, variant
        v = by_variant(pi_timer)[variant]
        assert {o.property: o.verdict for o in v.outcomes}["timer_wakes_vcpu"] is Verdict.HOLDS
    # with the condition (v4 as posted) and HLT exits on, the timer is never posted
    assert not any(dict(s.pcs)["apic_timer"] == "post" for s in _states("post_any_mode_timer_fn_hlt_exits_hlt_cond"))
    # and the answer rests on P3's kick: without it the posted vCPU sleeps for ever
    t = counterexample(pi_timer, "post_any_mode_timer_fn_hlt_exits_no_p3_kick", "timer_wakes_vcpu")
    last = t.states[-1]
    assert t.loop_start == t.length  # the run stays in its last state
    assert dict(last.pcs)["vcpu"] == "blocked" and last.get("vcpu.state") == "INTERRUPTIBLE"
    assert "LOCAL_TIMER_VECTOR" in last.get("pir")
