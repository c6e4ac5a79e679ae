"""The lkmm variants of models/ipi_fastpath.spec and models/pi_timer.spec (issues 18
and 19): each variant's verdicts under the Linux-kernel memory model, the barriers
that only the LKMM needs holding under sc and x86-TSO, each barrier variant holding
again with its barrier put back, and the counterexamples showing the stale read."""

from pathlib import Path

import pytest

from checker.results.trace import Verdict
from shared_runs import checked

MODELS = Path(__file__).resolve().parent.parent / "models"
IPI = MODELS / "ipi_fastpath.spec"
PI = MODELS / "pi_timer.spec"

V, H = Verdict.VIOLATED, Verdict.HOLDS
# (model, variant) -> the properties violated under its own memory model (lkmm)
LKMM_VARIANTS = {
    (IPI, "base_lkmm"): set(),
    (IPI, "no_entry_mb_lkmm"): {"ipi_taken"},
    (IPI, "no_sync_mb_lkmm"): {"ipi_taken"},
    (PI, "base_lkmm"): {"deadlock", "timer_wakes_vcpu"},
    # __kvm_wait_lapic_expire's read and clear of expired_tscdeadline, two plain accesses as
    # in the kernel: the read can miss apic_timer_expired's store (unordered before atomic_inc)
    (PI, "r4_mb_lkmm"): {"no_early_timer_irq", "no_early_requested_irq"},
    (PI, "no_entry_mb_lkmm"): {"deadlock", "timer_wakes_vcpu"},
    (PI, "no_kick_mb_lkmm"): {"deadlock", "timer_wakes_vcpu"},
}


def variant(path, name, **opts):
    return checked(path, progress=False, variants=(name,), **opts).variants[0]


def violated(v) -> set[str]:
    assert all(o.verdict in (H, V) for o in v.outcomes), [(o.property, o.verdict) for o in v.outcomes]
    return {o.property for o in v.outcomes if o.verdict is V}


@pytest.mark.parametrize("path, name", sorted(LKMM_VARIANTS, key=str), ids=lambda x: getattr(x, "stem", x))
def test_lkmm_variant_verdicts(path, name):
    v = variant(path, name)
    assert v.memory == "lkmm"
    assert violated(v) == LKMM_VARIANTS[path, name]


@pytest.mark.parametrize("path, name, tso", [
    (IPI, "no_sync_mb_lkmm", set()),             # clear_bit is locked on x86: E7's barrier is free
    (IPI, "no_entry_mb_lkmm", {"ipi_taken"}),    # E6 is needed on x86 too
    (PI, "base_lkmm", set()),                    # R4's clear_bit is locked on x86
    (PI, "no_kick_mb_lkmm", set()),              # so are atomic_inc and set_bit
    (PI, "r4_mb_lkmm", set()),                   # atomic_inc(pending) is locked on x86
    (PI, "no_entry_mb_lkmm", {"deadlock", "timer_wakes_vcpu"}),
], ids=lambda x: getattr(x, "stem", x) if not isinstance(x, set) else "")
def test_lkmm_only_barriers_hold_under_sc_and_tso(path, name, tso):
    assert violated(variant(path, name, memory="sc", use_expectations=False)) == set()
    assert violated(variant(path, name, memory="tso", use_expectations=False)) == tso


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
@pytest.mark.parametrize("name, barrier", [("no_entry_mb_lkmm", "ENTRY_MB"), ("no_kick_mb_lkmm", "KICK_MB"),
                                           ("base_lkmm", "R4_MB")])
def test_pi_timer_barrier_variants_hold_with_the_barrier(name, barrier):
    """The restricted configurations (no posted path, the smallest clock) do not hide
    the race: with the barrier put back, the same configuration holds under lkmm."""
    v = variant(PI, name, defines={barrier: "true"}, use_expectations=False)
    assert v.memory == "lkmm" and violated(v) == set()


def stale_reads(trace):
    return [(i, a) for i, a in enumerate(trace.actions) if "an older store than memory's" in a.detail]


@pytest.mark.xdist_group("ipi_fastpath")  # reads ipi_fastpath's shared search (shared_runs)
def test_no_sync_mb_lkmm_trace_reads_a_stale_pir():
    """E7 read ON = 1, cleared it with an unordered clear_bit, and then read PIR through
    a view P1's store had not reached: nothing is harvested and ON is clear."""
    v = variant(IPI, "no_sync_mb_lkmm")
    t = next(o for o in v.outcomes if o.property == "ipi_taken").counterexample.trace
    (i, a), = [(i, a) for i, a in stale_reads(t) if a.process == "target"]
    assert a.text == "if (pir)"
    assert a.detail.startswith("not taken: read pir = false, an older store than memory's true: the newer store had not "
                               "propagated to cpu1")  # the target's CPU: views attach to CPUs
    assert t.states[i].get("pir") is True and t.states[i].get("on") is False
    clear = max(j for j, b in enumerate(t.actions[:i]) if b.process == "target" and b.text.startswith("xchg_relaxed(on"))
    assert not any(b.process == "target" and "smp_mb" in b.text for b in t.actions[clear:i])
    assert all(s.get("owed") and s.get("pir") for s in t.states[t.loop_start:])


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_pi_timer_base_lkmm_trace_consumes_the_request_and_misses_pending():
    """v5.3's R4 (kvm_clear_request) clears the hrtimer's request, and R6 then reads an
    older store of `pending` than memory's: the timer is never injected."""
    v = variant(PI, "base_lkmm")
    t = next(o for o in v.outcomes if o.property == "deadlock").counterexample.trace
    (i, a), = [(i, a) for i, a in stale_reads(t) if a.process == "vcpu" and "pending" in a.text]
    assert a.text == "if (atomic_read(pending) != 0)"
    assert a.detail.startswith("not taken: read pending = 0, an older store than memory's 1")
    r4 = t.actions[i - 1]
    assert (r4.process, r4.text) == ("vcpu", "clear_bit(KVM_REQ_PENDING_TIMER, requests);")
    assert "KVM_REQ_PENDING_TIMER" in str(t.states[i - 1].get("requests"))   # R4 cleared the hrtimer's request
    assert not t.states[i].get("requests") and t.states[-1].get("pending") == 1
