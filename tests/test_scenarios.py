"""The scenario models of issues 19 and 31 tell the races they were written for.

tests/test_models.py already runs every model against its own `expect` clauses; here
each scenario's counterexamples are checked against the race its header describes
(who does what, in which order), so that a model that keeps its verdicts but loses its
story (a violation reached some other way) fails, and the v5.3/v6.18 pair keeps the
same properties so that the two can be compared.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.front.parse import parse
from checker.results.trace import Verdict
from shared_runs import checked

MODELS = Path(__file__).resolve().parent.parent / "models"
SCENARIOS = ("timer_reprogram", "pi_two_posters", "pi_timer_v6", "hv_sw_switch", "ipi_fastpath_reenter",
             "timer_advance_tuning", "hlt_if_gating", "pi_preempted_target")


def run(name: str, *variants: str):
    result = checked(MODELS / f"{name}.spec", variants=tuple(variants), progress=False)
    return {v.variant: v for v in result.variants}


def outcome(variant, prop):
    return next(o for o in variant.outcomes if o.property == prop)


def verdicts(variant):
    return {o.property: o.verdict for o in variant.outcomes}


def steps(cx):
    """(process, statement text) per step of a counterexample."""
    return [(a.process, a.text) for a in cx.trace.actions]


def first(trace_steps, process, fragment, start=0):
    for i in range(start, len(trace_steps)):
        if trace_steps[i][0] == process and fragment in trace_steps[i][1]:
            return i
    raise AssertionError(f"no step of {process} with {fragment!r}")


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_header_maps_processes_to_a_kernel_version(name):
    """Every scenario header names the kernel version it follows and maps each process."""
    text = (MODELS / f"{name}.spec").read_text()
    header = text.split("\nmodel ", 1)[0]
    assert re.search(r"Version: .*v(5|6)\.", header), name
    assert "Processes, and each step with the" in header, name
    contexts = r"^(?:unfair )?(?:process|guest|interrupt|hrtimer) (\w+)"  # every context, not only threads
    for proc in re.findall(contexts, text, re.M):
        assert re.search(rf"^//\s+{proc}\s", header, re.M), (name, proc)


@pytest.mark.xdist_group("timer_reprogram")  # reads timer_reprogram's shared search (shared_runs)
def test_cancel_without_wait_delivers_after_the_rewrite():
    """hrtimer_try_to_cancel in place of hrtimer_cancel: the callback, already running,
    raises `pending` after the guest's next write was committed (and reset it)."""
    r = run("timer_reprogram", "base", "cancel_without_wait")
    assert all(v == Verdict.HOLDS for p, v in verdicts(r["base"]).items())
    cx = outcome(r["cancel_without_wait"], "no_delivery_after_rewrite").counterexample
    s = steps(cx)
    fired = first(s, "hrtimer", "cb_running = true")
    commit = first(s, "vcpu", "tscdeadline = data", start=fired)
    assert fired < commit
    # the violating state: the callback, started before the commit, is about to deliver
    assert dict(cx.trace.states[-1].pcs)["hrtimer"] in ("inc", "post")
    early = outcome(r["cancel_without_wait"], "irq_not_before_its_deadline").counterexample
    assert dict(early.trace.states[-1].pcs)["vcpu"] == "timer_irq"
    s = steps(early)
    # the callback delivers after the commit: through `pending` (T5) or by posting (T4)
    delivered = min(i for i, (proc, text) in enumerate(s)
                    if proc == "hrtimer" and ("atomic_inc(pending)" in text or "if (!pir)" in text))
    assert first(s, "vcpu", "tscdeadline = data", start=first(s, "hrtimer", "cb_running = true")) < delivered


@pytest.mark.xdist_group("timer_reprogram")  # reads timer_reprogram's shared search (shared_runs)
def test_pending_not_reset_keeps_the_new_deadline_unarmed():
    r = run("timer_reprogram", "pending_not_reset")
    v = r["pending_not_reset"]
    assert outcome(v, "no_stale_pending").verdict == Verdict.VIOLATED
    live = outcome(v, "new_deadline_fires").counterexample
    assert live.trace.loop_start is not None
    # in the lasso the new deadline is never queued after the second write
    s = steps(live)
    second = [i for i, (p, t) in enumerate(s) if p == "vcpu" and "tscdeadline = data" in t][-1]
    assert not any("hrtimer_queued = true" in t for p, t in s[second:] if p == "vcpu")


@pytest.mark.xdist_group("timer_reprogram")  # reads timer_reprogram's shared search (shared_runs)
def test_old_deadline_interrupt_may_arrive_after_the_rewrite():
    """KVM's semantics, shown reachable: a posted interrupt of D1 after D2 is written, and
    a request-path expiry dropped by the reset."""
    base = run("timer_reprogram", "base")["base"]
    assert outcome(base, "old_irq_after_rewrite").verdict == Verdict.HOLDS
    assert outcome(base, "old_expiry_dropped").verdict == Verdict.HOLDS
    assert outcome(base, "cancel_while_callback_spins").verdict == Verdict.HOLDS


@pytest.mark.xdist_group("pi_two_posters")  # reads pi_two_posters's shared search (shared_runs)
def test_sender_on_before_pir_strands_the_ipi():
    """P2 before P1: the target's sync clears ON and finds PIR empty in between."""
    r = run("pi_two_posters", "base", "sender_on_before_pir")
    assert verdicts(r["base"])["ipi_taken"] == Verdict.HOLDS
    cx = outcome(r["sender_on_before_pir"], "ipi_taken").counterexample
    acts = cx.trace.actions
    on = next(i for i, a in enumerate(acts) if a.process == "sender" and "xchg(on, true)" in a.text)
    pir = next(i for i, a in enumerate(acts) if a.process == "sender" and "set_bit(VEC_A, pir)" in a.text)
    # between them, the target (E7) or its CPU (posted-interrupt processing) clears ON
    cleared = [i for i, a in enumerate(acts) if ("on", False) in a.changes and a.process != "sender"]
    assert any(on < i < pir for i in cleared)


@pytest.mark.xdist_group("pi_two_posters")  # reads pi_two_posters's shared search (shared_runs)
def test_sync_reading_pir_first_loses_a_coalesced_post():
    r = run("pi_two_posters", "sync_reads_pir_first")
    v = r["sync_reads_pir_first"]
    assert outcome(v, "ipi_taken").verdict == Verdict.VIOLATED
    assert outcome(v, "device_taken").verdict == Verdict.VIOLATED


@pytest.mark.xdist_group("pi_two_posters")  # reads pi_two_posters's shared search (shared_runs)
def test_wakeup_vector_wakes_a_blocked_target():
    r = run("pi_two_posters", "base", "no_wakeup_vector", "pi_put_ignores_on", "notify_even_if_outstanding")
    assert outcome(r["base"], "woken_by_vector").verdict == Verdict.HOLDS
    assert outcome(r["base"], "coalesced").verdict == Verdict.HOLDS
    assert outcome(r["no_wakeup_vector"], "device_taken").verdict == Verdict.VIOLATED
    assert outcome(r["pi_put_ignores_on"], "device_taken").verdict == Verdict.VIOLATED
    assert all(v == Verdict.HOLDS for v in verdicts(r["notify_even_if_outstanding"]).values())


def _property_names(name):
    tree = parse((MODELS / f"{name}.spec").read_text(), name)
    text = (MODELS / f"{name}.spec").read_text()
    return set(re.findall(r"^(?:invariant|property) (\w+):", text, re.M)), tree


def test_pi_timer_v6_has_pi_timer_properties():
    """The v6.18 model checks the same properties as the v5.3 one, so they compare."""
    v53, _ = _property_names("pi_timer")
    v6, _ = _property_names("pi_timer_v6")
    assert v53 == v6


@pytest.mark.xdist_group("pi_timer_v6")  # reads pi_timer_v6's shared search (shared_runs)
def test_v6_direct_injection_and_unblock():
    r = run("pi_timer_v6", "base", "no_direct_inject", "unblock_not_cleared", "no_kick")
    assert all(v == Verdict.HOLDS for v in verdicts(r["base"]).values())
    assert outcome(r["no_direct_inject"], "direct_injection").verdict == Verdict.VIOLATED
    assert outcome(r["no_direct_inject"], "timer_wakes_vcpu").verdict == Verdict.HOLDS
    lasso = outcome(r["unblock_not_cleared"], "timer_wakes_vcpu").counterexample.trace
    loop = [a for a in lasso.actions[lasso.loop_start:]]
    # every entry in the loop aborts at E8: the loop never reaches VM entry, the guest never runs
    e8 = [a for a in loop if a.text.startswith("if (mode == EXITING_GUEST_MODE")]
    assert e8 and all(a.detail.startswith("taken") for a in e8)
    assert not any(a.process == "os" or a.text.startswith("VM entry") for a in loop)
    assert outcome(r["no_kick"], "deadlock").verdict == Verdict.VIOLATED


@pytest.mark.xdist_group("hv_sw_switch")  # reads hv_sw_switch's shared search (shared_runs)
def test_hv_timer_fires_twice_without_the_pending_recheck():
    r = run("hv_sw_switch", "base", "no_pending_recheck")
    assert outcome(r["base"], "recheck_cancels_hv").verdict == Verdict.HOLDS
    cx = outcome(r["no_pending_recheck"], "one_shot_fires_once").counterexample
    s = steps(cx)
    raised = first(s, "apic_timer", "pending = 1")
    took = first(s, "os", "taken = min(taken + 1, 2)", start=raised)
    hv = first(s, "os", "vmexit(PREEMPTION_TIMER)", start=took)
    again = first(s, "os", "taken = min(taken + 1, 2)", start=hv)
    assert raised < took < hv < again


@pytest.mark.xdist_group("hv_sw_switch")  # reads hv_sw_switch's shared search (shared_runs)
def test_switch_placement_decides_what_the_poll_sees():
    r = run("hv_sw_switch", "base", "switch_after_poll", "no_switch_before_block")
    assert outcome(r["base"], "timer_caught_in_poll").verdict == Verdict.HOLDS
    assert outcome(r["switch_after_poll"], "timer_caught_in_poll").verdict == Verdict.VIOLATED
    assert outcome(r["switch_after_poll"], "timer_reaches_guest").verdict == Verdict.HOLDS
    assert outcome(r["no_switch_before_block"], "timer_reaches_guest").verdict == Verdict.VIOLATED


@pytest.mark.xdist_group("hv_sw_switch")  # reads hv_sw_switch's shared search (shared_runs)
def test_periodic_hv_expiry_must_rearm():
    r = run("hv_sw_switch", "periodic", "periodic_hv_no_restart")
    assert outcome(r["periodic"], "timer_reaches_guest").verdict == Verdict.HOLDS
    assert outcome(r["periodic_hv_no_restart"], "timer_reaches_guest").verdict == Verdict.VIOLATED


@pytest.mark.xdist_group("ipi_fastpath_reenter")  # reads ipi_fastpath_reenter's shared search (shared_runs)
def test_reenter_without_sync_strands_the_self_ipi():
    """The REENTER loop without sync_pir_to_irr: the self-IPI was posted in the fast path
    (no notification to the running vCPU) and the guest re-entered without it."""
    r = run("ipi_fastpath_reenter", "base", "reenter_without_sync", "seed_v1")
    assert all(v == Verdict.HOLDS for v in verdicts(r["base"]).values())
    assert all(v == Verdict.HOLDS for v in verdicts(r["seed_v1"]).values())
    lasso = outcome(r["reenter_without_sync"], "self_ipi_taken").counterexample.trace
    s = [(a.process, a.text) for a in lasso.actions]
    posted = first(s, "vcpu", "set_bit(SELF_VECTOR, pir)")
    reenter = first(s, "vcpu", "VM entry", start=posted)   # the fast path's guest_enter()
    assert posted < reenter
    assert not any(p == "vcpu" and "raise_irq(posted_intr)" in t for p, t in s)


@pytest.mark.xdist_group("ipi_fastpath_reenter")  # reads ipi_fastpath_reenter's shared search (shared_runs)
def test_legacy_reenter_without_exit_check_loses_the_senders_events():
    r = run("ipi_fastpath_reenter", "legacy_apic", "legacy_reenter_without_exit_check")
    assert all(v == Verdict.HOLDS for v in verdicts(r["legacy_apic"]).values())
    v = r["legacy_reenter_without_exit_check"]
    for prop in ("self_ipi_taken", "remote_ipi_taken", "request_served"):
        assert outcome(v, prop).verdict == Verdict.VIOLATED, prop


REACH = """model reach;
const STEP = true;
var x: 0..2 = 0;
process p { x = 1; if (STEP) x = 2; }
reachable seen: x == 2;
reachable stuck_at_one: p@end && x == 1;
expect violated stuck_at_one;
variant off { STEP = false; }
expect violated seen;
"""


def test_promela_twin_checks_reachable_properties(tmp_path):
    """The scenario models are the first shipped ones with `reachable`: the Promela twin
    left them out (its header called them lemmas) and the pan comparison read every one
    as holding. Now each is an assertion pan fails exactly when the state is reached."""
    from test_promela import agreement, needs_spin

    needs_spin()
    spec = tmp_path / "reach.spec"
    spec.write_text(REACH)
    _ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == []
    assert differences == {"base": [], "off": []}
    twin = (tmp_path / "twins" / "reach.base.pml").read_text()
    assert "assert(reachable_seen)" in twin and "lemmas" not in twin


XCHG_IN_CONDITIONS = """model xchg_conditions;
var a: bool = false;
var b: bool = true;
var c: 0..1 = 0;
var r: 0..3 = 0;
process p {
  if (xchg(a, true)) { r = 1; } else { r = 2; }   // false: the else branch
  if (!xchg(b, false)) { r = 3; }                  // b was true: no branch taken
  while (xchg(c, 1) == 1) { r = 0; }               // c was 0: the loop never runs
}
invariant stored: p@end -> (a && !b && c == 1);
"""


def test_xchg_in_a_branch_condition_keeps_its_store():
    """Found writing pi_two_posters: an `if` (or `while`) whose condition is an xchg lost
    the xchg's constant store on the branch that does not start with a store of its own,
    in the explicit engine only (BMC kept it). pi_two_posters' P2 goes through a local
    because of it."""
    from checker import check_source

    result = check_source(XCHG_IN_CONDITIONS, "xchg_conditions.spec")
    base = result.variants[0]
    assert outcome(base, "stored").verdict == Verdict.HOLDS
    assert result.all_as_expected


# ---- issue 31 -----------------------------------------------------------------------


@pytest.mark.xdist_group("timer_advance_tuning")  # reads timer_advance_tuning's shared search (shared_runs)
def test_advance_tuning_takes_a_near_deadline_an_eighth_early():
    """v6.18: a deadline programmed exactly the advance ahead expires at once (W3, no
    hrtimer), X4 lowers the advance by an eighth and X6's capped spin stops that much
    short: deadline 8 taken at TSC 7. v5.9's order spins the whole way."""
    r = run("timer_advance_tuning", "base", "v5_9", "tune_only_fired")
    cx = outcome(r["base"], "no_early_timer_irq").counterexample
    last = cx.trace.states[-1]
    assert (last.get("programmed_deadline"), last.get("irq_tsc")) == (8, 7)
    assert last.get("timer_advance_ns") == 7 and last.get("eighth_at_wait") == 1
    assert not any(a.process.startswith("apic_timer") for a in cx.trace.actions)   # nor its expiry
    assert outcome(r["base"], "early_by_at_most_an_eighth").verdict == Verdict.HOLDS
    assert outcome(r["base"], "early_by_an_eighth").verdict == Verdict.HOLDS      # reached
    assert outcome(r["v5_9"], "no_early_timer_irq").verdict == Verdict.HOLDS
    # tuned only after the hrtimer fired: the early interrupt comes through apic_timer_fn
    late = outcome(r["tune_only_fired"], "no_early_timer_irq").counterexample
    assert any(a.process == "apic_timer" for a in late.trace.actions)
    assert late.trace.states[-1].get("irq_tsc") + 1 == late.trace.states[-1].get("programmed_deadline")


@pytest.mark.xdist_group("hlt_if_gating")  # reads hlt_if_gating's shared search (shared_runs)
def test_gating_unhalts_no_masked_guest_and_posting_needs_no_hlt_in_guest():
    """The posted branch without kvm_hlt_in_guest and v5.3's request path both keep a
    masked guest halted and deliver to an unmasked one; only the request path wakes
    kvm_vcpu_block for nothing. Without the gating a masked `cli; hlt` guest runs on."""
    r = run("hlt_if_gating", "base", "posted", "ungated_events", "pending_timer_unhalts")
    for name in ("base", "posted"):
        assert outcome(r[name], "timer_taken").verdict == Verdict.HOLDS
        assert outcome(r[name], "no_unhalt_while_masked").verdict == Verdict.HOLDS
    assert outcome(r["base"], "spurious_wakeup").verdict == Verdict.HOLDS         # reached
    assert outcome(r["posted"], "spurious_wakeup").verdict == Verdict.VIOLATED    # never
    for name in ("ungated_events", "pending_timer_unhalts"):
        cx = outcome(r[name], "no_unhalt_while_masked").counterexample
        first_state = cx.trace.states[0]
        assert not first_state.get("guest_if") or first_state.get("tpr_masks"), name
        assert dict(cx.trace.states[-1].pcs)["vcpu"] == "after_hlt"
        assert not any("taken = true" in a.text for a in cx.trace.actions), name


@pytest.mark.xdist_group("pi_preempted_target")  # reads pi_preempted_target's shared search (shared_runs)
def test_sn_suppressed_post_is_stranded_without_the_on_recompute():
    """vmx_vcpu_pi_put sets SN, the device posts PIR only, and without c112b5f50232's
    recompute the sched-in leaves ON clear: E7 never harvests the device's vector. The
    base reaches both the suppressed post and the sender's stale vcpu->cpu, and holds."""
    r = run("pi_preempted_target", "base", "no_on_recompute")
    assert all(v == Verdict.HOLDS for v in verdicts(r["base"]).values())
    cx = outcome(r["no_on_recompute"], "device_taken").counterexample
    s = steps(cx)
    put = first(s, "vcpu", "sn = true")
    post = first(s, "device", "set_bit(VEC_B, pir)")
    clear = first(s, "vcpu", "sn = false", start=post)
    assert put < post < clear
    assert cx.trace.states[post + 1].get("suppressed")
    assert cx.trace.loop_start is not None
