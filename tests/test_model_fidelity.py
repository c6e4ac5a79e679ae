"""Issue 19: the shipped models say what the kernel does (shared/reviews/MODEL-FIDELITY.md).

Each test is named after a defect the review found and checks the behaviour that
fixes it, not the model's text: a verdict, the path a counterexample takes, or a state
that must be reachable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engines.explicit import decoder_for, explore
from checker.pipeline import Options, compile_variant, load
from checker.results.trace import Verdict
from shared_runs import checked

MODELS = Path(__file__).resolve().parent.parent / "models"


def outcomes(model: str, *variants: str) -> dict[str, dict[str, Verdict]]:
    result = checked(MODELS / f"{model}.spec", variants=variants)
    assert result.all_as_expected
    return {v.variant: {o.property: o.verdict for o in v.outcomes} for v in result.variants}


def trace(model: str, variant: str, prop: str):
    result = checked(MODELS / f"{model}.spec", variants=(variant,))
    o = next(o for o in result.variants[0].outcomes if o.property == prop)
    return o.counterexample.trace


@pytest.mark.xdist_group("hv_timer_advance")  # reads hv_timer_advance's shared search (shared_runs)
def test_unguarded_hv_timer_refuses_the_wrapped_delta_and_falls_back():
    # vmx_set_hv_timer's -ERANGE check refuses the wrapped delta and the sw hrtimer fires
    v = outcomes("hv_timer_advance", "unguarded", "unguarded_no_range_check")
    u = v["unguarded"]
    for prop in ("deadlock", "no_early_timer_irq", "expiry_within_deadline", "entry_after_deadline"):
        assert u[prop] is Verdict.HOLDS, prop
    assert u["no_sw_fallback"] is Verdict.VIOLATED  # the fallback is what ran
    assert u["expiry_not_after_deadline"] is Verdict.VIOLATED  # the wrap: a Z3 fact
    assert u["wrapped_delta_refused"] is Verdict.PROVED
    # the counterfactual without the range check keeps the old verdict
    assert v["unguarded_no_range_check"]["deadlock"] is Verdict.VIOLATED


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_stale_expired_deadline_trace_is_the_race_described():
    # v4 as posted, HLT in the guest: the early interrupt was posted by the hrtimer
    posted = trace("pi_timer", "v4_stale_posted", "no_early_timer_irq")
    texts = [(a.process, a.text) for a in posted.actions]
    assert any(p == "apic_timer" and "test_and_set_bit(LOCAL_TIMER_VECTOR, pir)" in x for p, x in texts)
    assert posted.states[-1].get("via_request") is False
    # v4 as posted, HLT exits: nothing is posted; R6 injected it from `pending`
    req = trace("pi_timer", "v4_stale_request", "no_early_timer_irq")
    texts = [(a.process, a.text) for a in req.actions]
    assert any(p == "apic_timer" and x.startswith("atomic_inc(pending)") for p, x in texts)
    assert not any(p == "apic_timer" and "pir)" in x for p, x in texts)
    assert req.states[-1].get("via_request") is True
    v = outcomes("pi_timer", "v4_stale_posted", "v4_stale_request")
    assert v["v4_stale_posted"]["no_early_requested_irq"] is Verdict.HOLDS
    assert v["v4_stale_request"]["no_early_posted_irq"] is Verdict.HOLDS
    assert v["v4_stale_request"]["posted_after_deadline"] is Verdict.HOLDS


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_atomic_entry_hid_the_entry_barrier_under_tso():
    pi = outcomes("pi_timer", "base_tso", "no_entry_mb_tso", "no_entry_mb")
    assert all(x is Verdict.HOLDS for x in pi["base_tso"].values())
    assert pi["no_entry_mb_tso"]["deadlock"] is Verdict.VIOLATED
    assert pi["no_entry_mb_tso"]["timer_wakes_vcpu"] is Verdict.VIOLATED
    assert all(x is Verdict.HOLDS for x in pi["no_entry_mb"].values())  # sc cannot see it


@pytest.mark.xdist_group("ipi_fastpath")  # reads ipi_fastpath's shared search (shared_runs)
def test_atomic_entry_hid_the_entry_barrier_of_the_ipi_fast_path_under_tso():
    ipi = outcomes("ipi_fastpath", "base_tso", "no_entry_mb_tso", "no_entry_mb")
    assert ipi["base_tso"]["ipi_taken"] is Verdict.HOLDS
    assert ipi["no_entry_mb_tso"]["ipi_taken"] is Verdict.VIOLATED
    assert ipi["no_entry_mb"]["ipi_taken"] is Verdict.HOLDS


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_pi_timer_exit_window_is_reachable():
    # after a VM exit the CPU is in root mode with mode still IN_GUEST_MODE (the thread
    # at E13, interrupts off): a notification sent then is pending for the host handler,
    # with ON left set
    text = (MODELS / "pi_timer.spec").read_text()
    e13 = f"line{next(i for i, line in enumerate(text.splitlines(), 1) if '// E13 (smp_wmb)' in line)}"
    cm = compile_variant(load(str(MODELS / "pi_timer.spec")), "base", Options())
    d = decoder_for(cm)
    states = [d.decode(s) for s in explore(cm, graph=True).graph.states]
    window = [s for s in states
              if dict(s.pcs)["vcpu"] == e13 and s.get("guest_mode")[0] is False and s.get("irqs_off")[0]
              and s.get("mode") == "IN_GUEST_MODE"
              and s.get("pending_posted_intr") and "POSTED_INTR_ON" in s.get("pi_desc")]
    assert window
    # and the vCPU still takes the timer: ON is synced at the next E7 or in kvm_vcpu_block
    assert all(x is Verdict.HOLDS for x in outcomes("pi_timer", "base", "hlt_exits")["hlt_exits"].values())


@pytest.mark.xdist_group("halt_poll")  # reads halt_poll's shared search (shared_runs)
def test_halt_poll_could_not_tell_the_seed_patch_from_v46():
    v = outcomes("halt_poll", "no_poll", "poll_for_timer")
    assert v["no_poll"]["no_timer_poll_at_zero_halt_poll_ns"] is Verdict.HOLDS
    assert v["poll_for_timer"]["no_timer_poll_at_zero_halt_poll_ns"] is Verdict.VIOLATED
    assert v["poll_for_timer"]["timer_wakes_vcpu"] is Verdict.HOLDS


@pytest.mark.xdist_group("halt_poll_grow")  # reads halt_poll_grow's shared search (shared_runs)
def test_halt_poll_grow_answers_why_the_adaptive_poll_misses_the_tick():
    """Paolo's question on seed 001: with v4.6's halt_poll_ns_shrink = 0 a long halt sets
    halt_poll_ns to 0 and the next halt only grows it to 10us, so the halt just before
    the tick that follows an idle halt sleeps, for ever in base's lasso; two short halts
    in a row are polled, and the seed patch polls the near one at halt_poll_ns = 0."""
    t = trace("halt_poll_grow", "base", "near_tick_polled")
    loop = t.states[t.loop_start:]
    near = [s for s in loop if s.get("remaining") == 1 and dict(s.pcs)["vcpu"] == "block"]
    assert near and all(s.get("halt_poll_ns") == 0 for s in near)  # at its poll: nothing to poll with
    assert {s.get("halt_poll_ns") for s in loop} == {0, 2}  # grown to 10us, shrunk to 0 by the long halt
    assert not any(s.get("near_caught") for s in loop)
    v = outcomes("halt_poll_grow", "two_halts", "any_halts", "poll_for_timer", "v612", "v612_any_halts")
    assert v["two_halts"]["near_tick_polled"] is Verdict.HOLDS
    assert v["any_halts"]["no_poll_after_long_halt"] is Verdict.HOLDS  # in every sequence of halts
    assert v["poll_for_timer"]["near_tick_polled"] is Verdict.HOLDS
    assert v["poll_for_timer"]["no_poll_after_long_halt"] is Verdict.VIOLATED
    assert v["v612"]["near_tick_polled"] is Verdict.VIOLATED  # halving 10us: 5us, below grow_start
    assert v["v612_any_halts"]["no_poll_after_long_halt"] is Verdict.VIOLATED  # 20us halves to 10us
