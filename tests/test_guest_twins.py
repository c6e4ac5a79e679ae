"""Issues 27 and 31: shipped models and their twins, one written with guest mode as a
context, the other hand-encoding it; under sc, x86-TSO and lkmm every variant must
have the same verdicts in both.

- models/vcpu_requests.spec uses `guest_enter()` and an interrupt for the reschedule
  IPI; tests/twins/vcpu_requests_hand.spec is the file it was before (a latched flag
  and an `await` for the VM exit, no contexts).
- models/ipi_fastpath.spec writes the target's CPU with `guest_enter()`, a `posted`
  interrupt, a reschedule interrupt and the guest's own code (`guest target_guest of
  target`, its HLT a `vmexit(HLT)`); tests/twins/ipi_fastpath_hand.spec is the file it
  was before (a `cpu` variable, latched IPIs, a process for what the CPU does in guest
  mode).
- models/pi_timer.spec (the exitless timer, v5.3) writes guest mode with
  `guest_enter()`, its guest's exits (`vmexit(MSR_WRITE)`, `vmexit(HLT)`, a `halted`
  label with HLT in the guest), the `posted` notification vector, the reschedule IPI as
  an interrupt and the lapic hrtimer as a timed `hrtimer ... on cpu 1 clock guest_tsc`;
  tests/twins/pi_timer_hand.spec is the file it was before (the `guest` choice and the
  exits in the vcpu process, latched IPIs, a plain hrtimer process).
- models/pi_timer_v6.spec (the exitless timer, v6.18) is written as pi_timer is;
  tests/twins/pi_timer_v6_hand.spec is the file it was before.
- models/pi_two_posters.spec writes the target's pCPU as CPU 0 with its two vectors
  (`posted_intr`, `posted`, and `wakeup`), the target thread's guest_enter() and its
  guest, and vmx_vcpu_pi_put/pi_load as `on sched_out`/`on sched_in`;
  tests/twins/pi_two_posters_hand.spec is the file it was before (a `cpu` variable,
  latched IPIs, a process for the pCPU).
- models/ipi_fastpath_reenter.spec writes the sender's CPU with guest_enter(), the fast
  path after its guest's `vmexit(MSR_WRITE)` and the re-entry as guest_enter() again;
  tests/twins/ipi_fastpath_reenter_hand.spec is the file it was before.
- models/timer_advance_tuning.spec writes the vCPU thread on CPU 0 with guest_enter(),
  a guest waiting at `halted` for its timer, the kick's reschedule IPI as an interrupt
  and the lapic hrtimer timed on the guest TSC on CPU 1;
  tests/twins/timer_advance_tuning_hand.spec is the file it was before.
- models/hv_sw_switch.spec writes the vCPU thread on CPU 0 with guest_enter(), the
  preemption-timer and HLT exits as its guest's `vmexit`s, the kick's reschedule IPI as
  an interrupt and apic_timer_fn as an hrtimer on CPU 1; tests/twins/hv_sw_switch_hand.spec
  is the file it was before.
- models/halt_poll.spec writes the vCPU thread on CPU 0, the lapic timer as a re-arming
  `hrtimer ... on cpu 1` and the HLT exit as the guest's `vmexit(HLT)`;
  tests/twins/halt_poll_hand.spec is the file it was before (an `await` for the timer,
  the guest's run as a vCPU step).

The hand-encoded side of each pair is checked without the constructs, so it is an
oracle for them. The shipped models' runs are the ones other tests make
(shared_runs.checked, in the model's xdist group)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.pipeline import Options, check_spec, load
from shared_runs import checked

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [  # (shipped, twin, which one hand-encodes, at most this many more steps with contexts)
    ("models/vcpu_requests.spec", "tests/twins/vcpu_requests_hand.spec", "twin", 2),
    ("models/ipi_fastpath.spec", "tests/twins/ipi_fastpath_hand.spec", "twin", None),
    # pi_timer: the shipped model hand-encodes; the twin adds the VM entry, the exit's own
    # step after the guest's vmexit, E15, the exit dispatch, the IPI's delivery and its
    # host handler's entry and exit, the hrtimer's expiry apart from its callback's entry
    ("models/pi_timer.spec", "tests/twins/pi_timer_hand.spec", "twin", 10),
    # halt_poll: waker_no_mb_lkmm 11 -> 20: the arming, schedule() off its CPU, each expiry
    # and its irq entry, the lasso's re-arm and irq exit
    ("models/halt_poll.spec", "tests/twins/halt_poll_hand.spec", "twin", 9),
    # pi_timer_v6: as pi_timer
    ("models/pi_timer_v6.spec", "tests/twins/pi_timer_v6_hand.spec", "twin", 10),
    # pi_two_posters: no bound on the steps, as ipi_fastpath: the hand twin's guest loop
    # tests `cpu == NON_ROOT` in a step of its own, so some lassos are shorter here
    ("models/pi_two_posters.spec", "tests/twins/pi_two_posters_hand.spec", "twin", None),
    # ipi_fastpath_reenter: the same (its hand twin's `while (cpu == NON_ROOT)` too)
    ("models/ipi_fastpath_reenter.spec", "tests/twins/ipi_fastpath_reenter_hand.spec", "twin", None),
    # timer_advance_tuning: E15, the expiry apart from its callback, the IPI's delivery
    ("models/timer_advance_tuning.spec", "tests/twins/timer_advance_tuning_hand.spec", "twin", 5),
    # hv_sw_switch: no_pending_recheck 57 -> 66: E15, the exits' own steps, the expiry apart
    # from its callback's entry and exit, T7's smp_mb, R6's atomic_set(pending, 0) apart
    ("models/hv_sw_switch.spec", "tests/twins/hv_sw_switch_hand.spec", "twin", 9),
]


def _verdicts(result):
    return {v.variant: {o.property: (o.verdict, o.counterexample and o.counterexample.trace.length)
                        for o in v.outcomes} for v in result.variants}


@pytest.mark.parametrize("shipped, twin, hand, extra", PAIRS, ids=[Path(p[0]).stem for p in PAIRS])
def test_the_guest_mode_twins_have_the_same_verdicts(shipped, twin, hand, extra):
    ours = checked(ROOT / shipped)
    theirs = check_spec(load(str(ROOT / twin)), Options(progress=False))
    assert ours.all_as_expected and theirs.all_as_expected
    got, want = _verdicts(ours), _verdicts(theirs)
    assert list(got) == list(want) and len(got) >= 7  # every variant, in the same order
    assert [v.memory for v in ours.variants] == [v.memory for v in theirs.variants]
    assert {v.memory for v in ours.variants} == {"sc", "tso", "lkmm"}
    ctx, plain = (got, want) if hand == "twin" else (want, got)
    for variant in got:
        # the contexts add the built-in `scheduling_while_atomic` where a thread sleeps: it holds
        added = set(ctx[variant]) - set(plain[variant])
        assert added <= {"scheduling_while_atomic"} and all(ctx[variant][p][0].value == "holds" for p in added)
        assert {p: v for p, (v, _) in ctx[variant].items() if p not in added} \
            == {p: v for p, (v, _) in plain[variant].items()}, variant
    if extra is None:
        return
    # the same shortest interleavings, with at most the steps the hand encoding leaves
    # implicit (vcpu_requests: E4's local_irq_disable() and the VM entry; pi_timer: see PAIRS)
    for variant in plain:
        for prop, (_, steps) in plain[variant].items():
            ctx_steps = ctx[variant][prop][1]
            assert (ctx_steps is None) == (steps is None) and (steps is None or steps <= ctx_steps <= steps + extra), \
                (variant, prop)
