"""Issue 21's evidence on the shipped models: every coverage and vacuity finding (a
statement never executed, a branch never taken, a property that holds vacuously) is
one the model explains by design, with a `// coverage: why` comment at its line, and
no other: a new dead branch, or a vacuous property, in a shipped model fails here.

FINDINGS lists them per model file, one entry per (line, finding), with the reason
(the model's comment says the same where the finding is). Lines are left out so that
code added above does not break the list; a finding's text names its process and
statement. A model file that is not listed must have no finding at all (but those in
NOT_YET_REVIEWED, merged after this review).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from checker.results.findings import explained_warnings, run_warnings
from checker.pipeline import Options, check_spec, load
from shared_runs import checked

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "models").glob("*.spec"))

FINDINGS: dict[str, list[tuple[str, str]]] = {
    'halt_poll.spec': [
        ('posted_check_ignores_pi: process os never takes a step, so invariants no_timer_poll_at_zero_halt_poll_ns hold without it',
         'the vCPU never gets past its blind checks, so it never enters the guest (os never takes a step)'),
        ('apic_timer: `if (!xchg(on, true))` never takes its else branch',
         'one expiry posted at a time: ON is never already set when fresh'),
        ('vcpu: `if (polling)` never takes its else branch',
         'POLL_ROUNDS != 0 always polls; no_poll (halt_poll_ns shrunk to 0) never does'),
        ('vcpu: `if (polling)` never takes its then branch',
         'POLL_ROUNDS != 0 always polls; no_poll (halt_poll_ns shrunk to 0) never does'),
        ('vcpu: `atomic { polling = false; now = EXPIRY; }` is never executed',
         'no poll in no_poll; a poll blind to PIR/ON never sees the posted timer (posted_*_ignores_pi)'),
        ('vcpu: `if (check_block(POLL_SEES_TIMER, POLL_SEES_PI))` is never executed',
         'no poll in no_poll; a poll blind to PIR/ON never sees the posted timer (posted_*_ignores_pi)'),
        ('vcpu: `if (check_block(POLL_SEES_TIMER, POLL_SEES_PI))` never takes its then branch',
         'no poll in no_poll; a poll blind to PIR/ON never sees the posted timer (posted_*_ignores_pi)'),
        ('vcpu: `if (poll_time >= limit)` is never executed',
         'no_poll never polls'),
        ('vcpu: `atomic { poll_time = poll_time + 1; now = now + 1; }` is never executed',
         'no_poll never polls'),
        ('vcpu: `atomic { polling = false; now = EXPIRY; }` is never executed',
         'no_poll never polls'),
        ('vcpu: `if (check_block(FINAL_SEES_TIMER, FINAL_SEES_PI))` never takes its then branch',
         'a final check blind to the timer (their bug) never sees it'),
        ('vcpu: `schedule();` is never executed',
         'no_wake_on_expiry: nothing wakes the sleeping vCPU, so schedule() never returns (its bug)'),
        ('vcpu: `finish_rcuwait(wait);` is never executed',
         'the loop is left only by a break, which a blind final check never takes (posted_check_ignores_pi, final_check_ignores_timer)'),
        ('vcpu: `atomic { req_unblock = false; if (pending > 0) { virr = true; pending = 0; } local_irq_disable(); if (on) { on = false; pir = false; virr = true; } }` is never executed',
         'posted_check_ignores_pi: the vCPU never gets past the poll and the blind final check'),
        ('os: `atomic { if (virr) { virr = false; owed = false; } vmexit(HLT); }` is never executed',
         'posted_check_ignores_pi: the vCPU never enters the guest (see runnable)'),
    ],
    'halt_poll_grow.spec': [
        ("base_tso: the same reachable states as base (7): does the variant's setting change anything?",
         'one thread, which reads its own buffered stores: the same states as base'),
        ("poll_for_timer_tso: the same reachable states as poll_for_timer (7): does the variant's setting change anything?",
         'one thread: the same states as poll_for_timer'),
        ("v612: the same reachable states as base (7): does the variant's setting change anything?",
         'halving 10us gives 5us, below grow_start, so 0: the same states as base (the finding)'),
    ],
    'hlt_if_gating.spec': [
        ('vcpu: `if (pending != 0)` never takes its then branch',
         'the posted branch never raises pending; only pending_timer_unhalts unhalts on it'),
        ('vcpu: `req_unhalt = true;` is never executed',
         'the posted branch never raises pending; only pending_timer_unhalts unhalts on it'),
        ('vcpu: `if (!req_unhalt)` never takes its then branch',
         'only the request path wakes kvm_vcpu_block with nothing runnable (the posted branch and pending_timer_unhalts never do)'),
        ('vcpu: `woke = true;` is never executed',
         "see B2: only the request path's ungated pending wakes with nothing runnable"),
        ('vcpu: `if (!woke)` never takes its else branch',
         'see B2'),
        ('vcpu: `if (pending != 0)` never takes its then branch',
         'the posted branch never raises pending'),
        ('vcpu: `atomic { irr = true; pending = 0; }` is never executed',
         'the posted branch never raises pending'),
    ],
    'hv_sw_switch.spec': [
        ('no_switch_before_block: process apic_timer never takes a step, so invariants one_shot_fires_once hold without it',
         "the sw hrtimer is never started (its bug), so its callback never runs; one_shot_fires_once is checked on the hv timer's path"),
        ('vcpu: `if (pending == 0)` never takes its else branch',
         "pending is raised only by the sw callback, which B4's hrtimer_cancel waits out and R6 clears before entry: only no_pending_recheck's expired path expires with pending set"),
        ('vcpu: `if (hv_timer_in_use)` is never executed',
         'no_switch_before_block never starts the sw timer (its bug); periodic starts it only at B2, where was_hv says the hv timer is in use'),
        ('vcpu: `if (hv_timer_in_use)` never takes its else branch',
         'no_switch_before_block never starts the sw timer (its bug); periodic starts it only at B2, where was_hv says the hv timer is in use'),
        ('vcpu: `if (pending == 0)` is never executed',
         'no_switch_before_block never starts the sw timer; one-shot starts it with pending 0 (at B2 nothing is queued since R6, after the poll the poll saw 0, restart_apic_timer tested it)'),
        ('vcpu: `if (pending == 0)` never takes its else branch',
         'no_switch_before_block never starts the sw timer; one-shot starts it with pending 0 (at B2 nothing is queued since R6, after the poll the poll saw 0, restart_apic_timer tested it)'),
        ('vcpu: `if (deadline_set)` is never executed',
         'no_switch_before_block never starts the sw timer; periodic never clears its deadline'),
        ('vcpu: `if (deadline_set)` never takes its else branch',
         'no_switch_before_block never starts the sw timer; periodic never clears its deadline'),
        ('vcpu: `hrtimer_start(apic_timer, 1);` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('vcpu: `if (pending == 0)` never takes its else branch',
         'no_switch_before_block: no sw callback, so pending is never set at B4'),
        ('vcpu: `if (deadline_set)` never takes its else branch',
         "the deadline is cleared with the hv timer still in use only by B2's sw expiry: periodic keeps its deadline, no_switch_before_block has no B2"),
        ('vcpu: `if (pending != 0)` never takes its then branch',
         'no_switch_before_block: no sw callback, so pending is never set at B4'),
        ('vcpu: `if (mode == EXITING_GUEST_MODE || req_unblock)` never takes its then branch',
         "only one-shot's B4, which skips hrtimer_cancel when pending is set, lets a still-running callback kick the entering vCPU; periodic always waits for it, no_switch_before_block has none"),
        ('vcpu: `mode = OUTSIDE_GUEST_MODE;` is never executed',
         'the E8 abort: see E8'),
        ('vcpu: `local_irq_enable();` is never executed',
         'the E8 abort: see E8'),
        ('vcpu: `if (hv_timer_in_use)` never takes its else branch',
         'kept as the kernel has it: the hv timer exits only while armed, and cancel_hv_timer disarms it with hv_timer_in_use'),
        ('vcpu: `if (vm_exit_by(HLT))` never takes its else branch',
         "no kick reaches the guest (see E8), so every exit is the preemption timer's or HLT"),
        ('vcpu: `if (was_hv)` never takes its else branch',
         'periodic: the hv timer is always in use at HLT (its expiry re-arms it, B4 reprograms it); periodic_hv_no_restart is the variant without'),
        ('vcpu: `atomic { req_unblock = false; }` is never executed',
         'no_switch_before_block: no sw callback, so no KVM_REQ_UNBLOCK'),
        ('vcpu: `if (req_unblock)` never takes its then branch',
         'no_switch_before_block: no sw callback, so no KVM_REQ_UNBLOCK'),
        ('vcpu: `if (was_hv)` never takes its else branch',
         'periodic: the hv timer is always in use at HLT: see B2'),
        ('vcpu: `if (pending != 0)` never takes its then branch',
         'no_switch_before_block: no sw callback, so nothing is pending'),
        ('vcpu: `pending = 0;` is never executed',
         'no_switch_before_block: no sw callback, so nothing is pending'),
        ('apic_timer: `if (pending == 0)` is never executed',
         'no_switch_before_block never starts the sw timer; one-shot: one callback per hrtimer_start, and the sw timer is started only with pending 0'),
        ('apic_timer: `if (pending == 0)` never takes its else branch',
         'no_switch_before_block never starts the sw timer; one-shot: one callback per hrtimer_start, and the sw timer is started only with pending 0'),
        ('apic_timer: `atomic { pending = 1; if (PERIODIC) period_passed = 0; }` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('apic_timer: `req_unblock = true;` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('apic_timer: `smp_mb();` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('apic_timer: `if (rcuwait_active(wait))` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('apic_timer: `rcuwait_wake_up(wait);` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('apic_timer: `if (cmpxchg(mode, IN_GUEST_MODE, EXITING_GUEST_MODE) == IN_GUEST_MODE)` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('apic_timer: `if (cmpxchg(mode, IN_GUEST_MODE, EXITING_GUEST_MODE) == IN_GUEST_MODE)` never takes its then branch',
         'no_switch_before_block never starts the sw timer (its bug)'),
        ('apic_timer: `raise_irq(reschedule);` is never executed',
         'no_switch_before_block never starts the sw timer (its bug)'),
    ],
    'hv_timer_advance.spec': [
        ("base_tso: the same reachable states as base (9,330): does the variant's setting change anything?",
         'one CPU stores what it loads, each store a one-store atomic step: a store buffer changes no state'),
        ('vcpu: `if (out_of_range(hv_countdown))` never takes its then branch',
         'only a wrapped (unguarded) delta is out of range; a guarded one never is'),
        ('vcpu: `atomic { await guest_tsc + advance_in >= tscdeadline; timer_fired = true; }` is never executed',
         'the -ERANGE fallback: reached by the unguarded variants only'),
        ('vcpu: `if (hv_countdown != 0)` never takes its else branch',
         'v1_delta_one programs 1 for a deadline due now, never 0 (its bug)'),
        ('vcpu: `atomic { timer_fired = true; }` is never executed',
         'v1_delta_one never fires at once: the path its bug removes'),
        ('vcpu: `if (expired_tscdeadline != 0 && advance_in != 0)` never takes its then branch',
         'stale_expired_deadline records no deadline, so it never waits (its bug)'),
        ('vcpu: `atomic { wait_deadline = expired_tscdeadline; expired_tscdeadline = 0; wait_tsc = guest_tsc; }` is never executed',
         'stale_expired_deadline never waits: see wait'),
        ('vcpu: `if (wait_tsc < wait_deadline)` is never executed',
         'stale_expired_deadline never waits: see wait'),
        ('vcpu: `await guest_tsc - wait_tsc >= min(wait_deadline - wait_tsc, advance_in);` is never executed',
         'stale_expired_deadline never waits: see wait'),
        ('expired_at_once: the left side `vcpu@fire_now` of its `->` never holds in a reachable state: it holds vacuously',
         'vacuous in v1_delta_one, which never reaches fire_now'),
        ('spin_covers_advance: the left side `vcpu@spin_check || vcpu@spin` of its `->` never holds in a reachable state: it holds vacuously',
         'vacuous in stale_expired_deadline, which never waits'),
    ],
    'ipi_fastpath.spec': [
        ('sender: `if (!xchg(on, true))` never takes its else branch',
         'one IPI at a time (the sender waits for the ack): ON is never already set'),
        ('target: `atomic { on = false; virr = virr || pir; pir = false; }` is never executed',
         'legacy_apic posts nothing: see E7 above'),
        ('target: `if (pir)` never takes its else branch',
         "P1 sets PIR before P2 sets ON: only no_sync_mb_lkmm's unordered load reads it clear"),
        ('target: `if (on)` never takes its then branch',
         'legacy_apic posts nothing: ON is never set'),
        ('target: `if (mode == EXITING_GUEST_MODE || req_event)` never takes its then branch',
         "only the legacy request or v5_kick's cmpxchg aborts the entry"),
        ('target: `mode = OUTSIDE_GUEST_MODE;` is never executed',
         'the E8 abort: see E8 above'),
        ('target: `local_irq_enable();` is never executed',
         'the E8 abort: see E8 above'),
        ('target: `if (vm_exit_by(HLT))` never takes its else branch',
         'where nothing kicks (all but legacy_apic and v5_kick) only HLT leaves guest mode'),
        ('target: `schedule();` is never executed',
         'no_wakeup: nothing wakes the sleeping target, so schedule() never returns (its bug)'),
        ('posted_intr: `if (in_guest_mode())` is never executed',
         'no notification: legacy_apic posts nothing, no_notification sends none'),
        ('posted_intr: `atomic { if (on) { on = false; virr = virr || pir; pir = false; } }` is never executed',
         'no notification: legacy_apic posts nothing, no_notification sends none'),
        ('reschedule: `skip;` is never executed',
         'only kvm_vcpu_kick sends a reschedule IPI (legacy_apic, v5_kick)'),
    ],
    'ipi_fastpath_reenter.spec': [
        ('vcpu: `if (test_and_clear_bit(KVM_REQ_EVENT, requests))` never takes its then branch',
         'with APICv nothing makes KVM_REQ_EVENT: only the legacy self-IPI does (legacy_apic, legacy_reenter_without_exit_check)'),
        ('vcpu: `atomic { if (irr) { irr = false; set_bit(SELF_VECTOR, virr); } }` is never executed',
         'with APICv nothing makes KVM_REQ_EVENT: see E2'),
        ('vcpu: `if (mode == EXITING_GUEST_MODE || !bitmap_empty(requests))` never takes its else branch',
         "legacy_apic: the self-IPI's KVM_REQ_EVENT (and EXITING) is always pending here, so the loop always leaves"),
        ('remote: `if (!was_on)` never takes its else branch',
         'without APICv the sender never sets ON, so the remote post always finds it clear'),
    ],
    'pi_timer.spec': [
        ('no_entry_mb_lkmm: process posted_intr never takes a step, so invariants no_early_timer_irq, posted_after_deadline, expired_timer_not_posted, timer_irq_once, no_early_posted_irq, no_early_requested_irq hold without it',
         'no posted path (PI_INJECT off): the notification vector is never sent'),
        ('no_kick_mb_lkmm: process posted_intr never takes a step, so invariants no_early_timer_irq, posted_after_deadline, expired_timer_not_posted, timer_irq_once, no_early_posted_irq, no_early_requested_irq hold without it',
         'no posted path (PI_INJECT off): the notification vector is never sent'),
        ('post_any_mode_timer_fn_hlt_exits_hlt_cond: process posted_intr never takes a step, so invariants no_early_timer_irq, posted_after_deadline, expired_timer_not_posted, timer_irq_once, no_early_posted_irq, no_early_requested_irq hold without it',
         'nothing is posted (kvm_hlt_in_guest is false): the notification vector is never sent'),
        ('v4_stale_request: process posted_intr never takes a step, so invariants posted_after_deadline, expired_timer_not_posted, timer_irq_once, no_early_posted_irq hold without it',
         'nothing is posted (kvm_hlt_in_guest is false): the notification vector is never sent'),
        ('posted_intr: `atomic { if (in_guest_mode()) { clear_bit(POSTED_INTR_ON, pi_desc); if (test_and_clear_bit(LOCAL_TIMER_VECTOR, pir)) set_bit(LOCAL_TIMER_VECTOR, virr); } }` is never executed',
         'no notification where nothing is posted: see posted_intr above'),
        ('apic_timer: `if (swait_active(wq))` never takes its then branch',
         'a sleeper only while the vCPU blocks in kvm_vcpu_block (HLT_IN_GUEST = false)'),
        ('apic_timer: `swake_up_one(wq);` is never executed',
         'a sleeper only while the vCPU blocks in kvm_vcpu_block (HLT_IN_GUEST = false)'),
        ('apic_timer: `if (test_and_set_bit(LOCAL_TIMER_VECTOR, pir))` never takes its then branch',
         'one expiry per run, never posted twice; the vCPU thread posts only if POST_IN_GUEST_ONLY is off'),
        ('vcpu: `if (test_and_set_bit(LOCAL_TIMER_VECTOR, pir))` is never executed',
         'one expiry per run, never posted twice; the vCPU thread posts only if POST_IN_GUEST_ONLY is off'),
        ('vcpu: `if (test_and_set_bit(LOCAL_TIMER_VECTOR, pir))` never takes its then branch',
         'one expiry per run, never posted twice; the vCPU thread posts only if POST_IN_GUEST_ONLY is off'),
        ('apic_timer: `if (test_and_set_bit(POSTED_INTR_ON, pi_desc))` never takes its then branch',
         'as P1: one expiry per run, no notification outstanding; the vCPU posts as for P1'),
        ('vcpu: `if (test_and_set_bit(POSTED_INTR_ON, pi_desc))` is never executed',
         'as P1: one expiry per run, no notification outstanding; the vCPU posts as for P1'),
        ('vcpu: `if (test_and_set_bit(POSTED_INTR_ON, pi_desc))` never takes its then branch',
         'as P1: one expiry per run, no notification outstanding; the vCPU posts as for P1'),
        ('vcpu: `if (mode == IN_GUEST_MODE)` is never executed',
         'the vCPU thread posts from root mode only: it never sends itself the notification'),
        ('vcpu: `if (mode == IN_GUEST_MODE)` never takes its then branch',
         'the vCPU thread posts from root mode only: it never sends itself the notification'),
        ('vcpu: `raise_irq(posted_intr);` is never executed',
         'the vCPU thread posts from root mode only: it never sends itself the notification'),
        ('vcpu: `tscdeadline = 0;` is never executed',
         "outside R6's atomic, the vCPU thread runs it only where it posts (POST_IN_GUEST_ONLY off)"),
        ('apic_timer: `if (atomic_read(pending) != 0)` never takes its then branch',
         'kept as the kernel has it: one deadline per run, so pending is never already set'),
        ('vcpu: `if (atomic_read(pending) != 0)` never takes its then branch',
         'kept as the kernel has it: one deadline per run, so pending is never already set'),
        ('vcpu: `if (mode == IN_GUEST_MODE)` never takes its then branch',
         'the vCPU thread runs T4 in root mode: it posts only with POST_IN_GUEST_ONLY and CAN_PI_INJECT off'),
        ('apic_timer: `if (swait_active(wq))` never takes its then branch',
         'a sleeper only while the vCPU blocks (HLT_IN_GUEST = false) and no kick woke it first'),
        ('apic_timer: `swake_up_one(wq);` is never executed',
         'a sleeper only while the vCPU blocks (HLT_IN_GUEST = false) and no kick woke it first'),
        ('vcpu: `if (swait_active(wq))` never takes its then branch',
         'a sleeper only while the vCPU blocks (HLT_IN_GUEST = false) and no kick woke it first'),
        ('vcpu: `swake_up_one(wq);` is never executed',
         'a sleeper only while the vCPU blocks (HLT_IN_GUEST = false) and no kick woke it first'),
        ('vcpu: `if (mp_state == MP_STATE_RUNNABLE)` never takes its else branch',
         'with HLT_IN_GUEST the guest halts in non-root mode: the vCPU never blocks'),
        ('vcpu: `if (mode == EXITING_GUEST_MODE || !bitmap_empty(requests))` never takes its then branch',
         'no_p3_kick: nothing kicks or requests while the vCPU enters'),
        ('vcpu: `mode = OUTSIDE_GUEST_MODE;` is never executed',
         'no_p3_kick: see E8 above'),
        ('vcpu: `local_irq_enable();` is never executed',
         'no_p3_kick: see E8 above'),
        ('vcpu: `prepare_to_swait_exclusive(wq);` is never executed',
         'kvm_vcpu_block runs only in the HLT_IN_GUEST = false variants'),
        ('vcpu: `if (test_bit(LOCAL_TIMER_VECTOR, virr))` is never executed',
         'kvm_vcpu_block runs only in the HLT_IN_GUEST = false variants'),
        ('vcpu: `set_bit(KVM_REQ_UNHALT, requests);` is never executed',
         'kvm_vcpu_block runs only in the HLT_IN_GUEST = false variants'),
        ('vcpu: `if (atomic_read(pending) != 0)` is never executed',
         'kvm_vcpu_block only without HLT_IN_GUEST; posting variants wake it through virr'),
        ('vcpu: `if (atomic_read(pending) != 0)` never takes its then branch',
         'kvm_vcpu_block only without HLT_IN_GUEST; posting variants wake it through virr'),
        ('vcpu: `schedule();` is never executed',
         'kvm_vcpu_block runs only in the HLT_IN_GUEST = false variants'),
        ('vcpu: `finish_swait(wq);` is never executed',
         'kvm_vcpu_block runs only in the HLT_IN_GUEST = false variants'),
        ('vcpu: `if (test_and_clear_bit(KVM_REQ_UNHALT, requests))` is never executed',
         'kvm_vcpu_block only without HLT_IN_GUEST; the timer always makes the vCPU runnable'),
        ('vcpu: `if (test_and_clear_bit(KVM_REQ_UNHALT, requests))` never takes its else branch',
         'kvm_vcpu_block only without HLT_IN_GUEST; the timer always makes the vCPU runnable'),
        ('vcpu: `mp_state = MP_STATE_RUNNABLE;` is never executed',
         'kvm_vcpu_block runs only in the HLT_IN_GUEST = false variants'),
        ('vcpu: `if (atomic_read(pending) != 0)` never takes its then branch',
         'post_any_mode posts from the hrtimer in any mode: no request, nothing pending'),
        ('vcpu: `atomic { kvm_apic_inject_pending_timer_irqs(false); atomic_set(pending, 0); via_request = true; }` is never executed',
         'post_any_mode: see R6 above'),
        ('os: `atomic { await !HLT_IN_GUEST && armed && !test_bit(LOCAL_TIMER_VECTOR, virr); vmexit(HLT); }` is never executed',
         'HLT exits only with HLT_IN_GUEST off (the hlt_exits variants)'),
        ('os: `atomic { await HLT_IN_GUEST && armed && !test_bit(LOCAL_TIMER_VECTOR, virr); }` is never executed',
         'halted in guest mode only with HLT_IN_GUEST (not the hlt_exits variants)'),
        ('os: `atomic { await test_bit(LOCAL_TIMER_VECTOR, virr); clear_bit(LOCAL_TIMER_VECTOR, virr); }` is never executed',
         'as the HLT above: only with HLT_IN_GUEST'),
        ('posted_after_deadline: the left side `apic_timer@post` of its `->` never holds in a reachable state: it holds vacuously',
         'vacuous where nothing is posted: POST_NEEDS_HLT_IN_GUEST and HLT exits (v4_stale_request, hlt_cond), no PI_INJECT (no_entry_mb_lkmm, no_kick_mb_lkmm)'),
        ('no_early_posted_irq: the left side `os@timer_irq && !via_request` of its `->` never holds in a reachable state: it holds vacuously',
         'vacuous where nothing is posted (v4_stale_request, hlt_cond, no PI_INJECT): see posted_after_deadline'),
        ('no_early_requested_irq: the left side `os@timer_irq && via_request` of its `->` never holds in a reachable state: it holds vacuously',
         'vacuous where the timer is always posted (post_any_mode)'),
    ],
    'pi_timer_v6.spec': [
        ('hlt_exits: process posted_intr never takes a step, so invariants no_early_timer_irq, posted_after_deadline, expired_timer_not_posted, timer_irq_once, no_early_posted_irq, no_early_requested_irq hold without it',
         'nothing is posted with HLT exits (kvm_can_post_timer_interrupt): the notification vector is never sent'),
        ('no_kick_hlt_exits: process posted_intr never takes a step, so invariants no_early_timer_irq, posted_after_deadline, expired_timer_not_posted, timer_irq_once, no_early_posted_irq, no_early_requested_irq hold without it',
         'nothing is posted with HLT exits: the notification vector is never sent'),
        ('posted_intr: `atomic { if (in_guest_mode()) { clear_bit(POSTED_INTR_ON, pi_desc); if (test_and_clear_bit(LOCAL_TIMER_VECTOR, pir)) set_bit(LOCAL_TIMER_VECTOR, virr); } }` is never executed',
         'no notification with HLT exits: see posted_intr above'),
        ('apic_timer: `if (rcuwait_active(wait))` never takes its then branch',
         'a sleeper only with HLT exits (hlt_exits; no_kick_hlt_exits does not kick); with HLT in the guest the vCPU never blocks'),
        ('apic_timer: `rcuwait_wake_up(wait);` is never executed',
         'a sleeper only with HLT exits (hlt_exits; no_kick_hlt_exits does not kick); with HLT in the guest the vCPU never blocks'),
        ('apic_timer: `if (test_and_set_bit(LOCAL_TIMER_VECTOR, pir))` never takes its then branch',
         'one expiry per run, never posted twice; the vCPU thread posts only through T3 (not in no_direct_inject)'),
        ('vcpu: `if (test_and_set_bit(LOCAL_TIMER_VECTOR, pir))` is never executed',
         'one expiry per run, never posted twice; the vCPU thread posts only through T3 (not in no_direct_inject)'),
        ('vcpu: `if (test_and_set_bit(LOCAL_TIMER_VECTOR, pir))` never takes its then branch',
         'one expiry per run, never posted twice; the vCPU thread posts only through T3 (not in no_direct_inject)'),
        ('apic_timer: `if (test_and_set_bit(POSTED_INTR_ON, pi_desc))` never takes its then branch',
         'as P1: one expiry per run, no notification outstanding; the vCPU thread posts only through T3'),
        ('vcpu: `if (test_and_set_bit(POSTED_INTR_ON, pi_desc))` is never executed',
         'as P1: one expiry per run, no notification outstanding; the vCPU thread posts only through T3'),
        ('vcpu: `if (test_and_set_bit(POSTED_INTR_ON, pi_desc))` never takes its then branch',
         'as P1: one expiry per run, no notification outstanding; the vCPU thread posts only through T3'),
        ('vcpu: `if (mode == IN_GUEST_MODE)` is never executed',
         'the vCPU thread posts from root mode only (T3): it never sends itself the notification; not in no_direct_inject'),
        ('vcpu: `if (mode == IN_GUEST_MODE)` never takes its then branch',
         'the vCPU thread posts from root mode only (T3): it never sends itself the notification; not in no_direct_inject'),
        ('vcpu: `raise_irq(posted_intr);` is never executed',
         'the vCPU thread posts from root mode only (T3): it never sends itself the notification; not in no_direct_inject'),
        ('apic_timer: `if (rcuwait_active(wait))` never takes its then branch',
         'the vCPU thread never waits while it posts; the hrtimer posts only to a vCPU read IN_GUEST_MODE with HLT in the guest, which never blocks (see no_wake_fallback)'),
        ('apic_timer: `rcuwait_wake_up(wait);` is never executed',
         'the vCPU thread never waits while it posts; the hrtimer posts only to a vCPU read IN_GUEST_MODE with HLT in the guest, which never blocks (see no_wake_fallback)'),
        ('vcpu: `if (rcuwait_active(wait))` is never executed',
         'the vCPU thread never waits while it posts; the hrtimer posts only to a vCPU read IN_GUEST_MODE with HLT in the guest, which never blocks (see no_wake_fallback)'),
        ('vcpu: `if (rcuwait_active(wait))` never takes its then branch',
         'the vCPU thread never waits while it posts; the hrtimer posts only to a vCPU read IN_GUEST_MODE with HLT in the guest, which never blocks (see no_wake_fallback)'),
        ('vcpu: `rcuwait_wake_up(wait);` is never executed',
         'the vCPU thread never waits while it posts; the hrtimer posts only to a vCPU read IN_GUEST_MODE with HLT in the guest, which never blocks (see no_wake_fallback)'),
        ('vcpu: `tscdeadline = 0;` is never executed',
         'no_direct_inject: without T3 the vCPU thread never posts (mode is OUTSIDE at T4)'),
        ('apic_timer: `if (atomic_read(pending) != 0)` never takes its then branch',
         'kept as the kernel has it: one deadline per run, so pending is never already set'),
        ('vcpu: `if (atomic_read(pending) != 0)` never takes its then branch',
         'kept as the kernel has it: one deadline per run, so pending is never already set'),
        ('vcpu: `if (mode == IN_GUEST_MODE)` never takes its then branch',
         'the vCPU thread runs T4 (no_direct_inject only) in root mode: it never posts'),
        ('apic_timer: `if (expired_tscdeadline != 0)` never takes its else branch',
         'the vCPU thread never posts (no_direct_inject: see T4); T2 just copied the armed, non-zero deadline (ADVANCE is 1), so the wait always runs where POSTED_WAIT is on'),
        ('vcpu: `if (expired_tscdeadline != 0)` is never executed',
         'the vCPU thread never posts (no_direct_inject: see T4); T2 just copied the armed, non-zero deadline (ADVANCE is 1), so the wait always runs where POSTED_WAIT is on'),
        ('vcpu: `if (mp_state == MP_STATE_RUNNABLE)` never takes its else branch',
         'with HLT in the guest the vCPU never blocks: kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits)'),
        ('vcpu: `if (bitmap_empty(virr))` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks'),
        ('vcpu: `prepare_to_rcuwait(wait);` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks'),
        ('vcpu: `if (!bitmap_empty(virr))` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks; there nothing is posted, so a blocked vCPU is woken through pending, never vIRR'),
        ('vcpu: `if (!bitmap_empty(virr))` never takes its then branch',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks; there nothing is posted, so a blocked vCPU is woken through pending, never vIRR'),
        ('vcpu: `if (atomic_read(pending) != 0)` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks'),
        ('vcpu: `if (test_and_clear_bit(KVM_REQ_UNBLOCK, requests))` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks'),
        ('vcpu: `schedule();` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks; no_kick_hlt_exits: nothing wakes the blocked vCPU (its bug)'),
        ('vcpu: `finish_rcuwait(wait);` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks'),
        ('vcpu: `if (!bitmap_empty(virr))` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks'),
        ('vcpu: `mp_state = MP_STATE_RUNNABLE;` is never executed',
         'kvm_vcpu_block runs only with HLT exits (hlt_exits, no_kick_hlt_exits): with HLT in the guest the vCPU never blocks'),
        ('os: `atomic { await !HLT_IN_GUEST && armed && !test_bit(LOCAL_TIMER_VECTOR, virr); vmexit(HLT); }` is never executed',
         'HLT exits only with HLT_IN_GUEST off (hlt_exits, no_kick_hlt_exits)'),
        ('os: `atomic { await HLT_IN_GUEST && armed && !test_bit(LOCAL_TIMER_VECTOR, virr); }` is never executed',
         'halted in guest mode only with HLT_IN_GUEST (not hlt_exits, no_kick_hlt_exits)'),
        ('os: `atomic { await test_bit(LOCAL_TIMER_VECTOR, virr); clear_bit(LOCAL_TIMER_VECTOR, virr); }` is never executed',
         'as the HLT above: only with HLT_IN_GUEST'),
        ('posted_after_deadline: the left side `apic_timer@post` of its `->` never holds in a reachable state: it holds vacuously',
         'vacuous with HLT exits (hlt_exits, no_kick_hlt_exits): nothing is posted'),
    ],
    'pi_two_posters.spec': [
        ('wakeup: `atomic { if (on_list && on) { if (rcuwait_active(wait)) vector_woke = true; rcuwait_wake_up(wait); } }` is never executed',
         'no_wakeup_vector: see wakeup above'),
        ('target: `if (vm_exit_by(HLT))` never takes its else branch',
         'nothing else exits (a notification is handled in guest mode, the wake-up vector is sent only while the target blocks): only HLT leaves the guest'),
    ],
    'timer_advance_tuning.spec': [
        ('apic_timer: `if (atomic_read(pending) != 0)` never takes its then branch',
         'kept as the kernel has it: one deadline per run, so pending is never already set'),
        ('vcpu: `if (atomic_read(pending) != 0)` never takes its then branch',
         'kept as the kernel has it: one deadline per run, so pending is never already set'),
        ('vcpu: `if (delta / STEP > timer_advance_ns)` never takes its then branch',
         'delta <= MAX_DEADLINE and timer_advance_ns starts at NS_INIT, so delta / 8 never exceeds it'),
        ('vcpu: `timer_advance_ns = NS_INIT;` is never executed',
         'delta <= MAX_DEADLINE and timer_advance_ns starts at NS_INIT, so delta / 8 never exceeds it'),
        ('vcpu: `if (timer_advance_ns + delta / STEP > NS_MAX)` never takes its then branch',
         'lateness is at most MAX_TSC - 1 ticks, so the advance never passes NS_MAX'),
        ('vcpu: `timer_advance_ns = NS_INIT;` is never executed',
         'lateness is at most MAX_TSC - 1 ticks, so the advance never passes NS_MAX'),
    ],
    'timer_reprogram.spec': [
        ('vcpu: `if (pir)` never takes its else branch',
         'one vector: ON is set only with PIR (P1 and P2 are one step, R6 sets both), so a sync that found ON finds PIR'),
        ('vcpu: `if (pending == 0)` never takes its else branch',
         'the reset just above leaves pending 0 and a waited-for callback cannot raise it again: set only where the reset is off (pending_not_reset) or overlapped (cancel_without_wait)'),
        ('hrtimer: `if (pending == 0)` never takes its else branch',
         "the callback runs once per arming and the vCPU arms only with pending 0 (restart_apic_timer): only cancel_without_wait's overlapping callback finds it set"),
        ('hrtimer: `if (expired_tscdeadline != 0)` never takes its else branch',
         "a queued timer has a non-zero tscdeadline (ADVANCE is 1): only cancel_without_wait's rewrite to 0 lands between the dequeue and T2"),
    ],
    'csd_wait_ipi.spec': [
        ("no_release: the same reachable states as base (16): does the variant's setting change anything?",
         'under sc a release is a plain store: the same states as base'),
        ("no_release_tso: the same reachable states as base_tso (23): does the variant's setting change anything?",
         'x86 keeps stores in order: a release is a plain store, as in base_tso'),
    ],
    'vcpu_preempted_kick.spec': [
        ('kicker: `if (target != me)` never takes its else branch',
         "the vCPU thread can move to cpu 1 only after the kicker's thread has left it (a CPU runs one thread until it ends or blocks)"),
        ('reschedule: `if (in_guest && vcpu_cpu == smp_processor_id())` never takes its else branch',
         "early_check: the kick's IPI always finds the guest running where it was sent"),
    ],
    'vcpu_requests.spec': [
        ('vcpu: `if (test_bit(REQ, requests))` never takes its else branch',
         'the model has one request: requests != 0 means REQ is set'),
        ('vcpu: `if (mode == EXITING_GUEST_MODE)` never takes its then branch',
         "only kvm_vcpu_kick's cmpxchg sets EXITING_GUEST_MODE; these variants do not kick"),
        ('reschedule: `skip;` is never executed',
         'no_kick_sc sends no IPI (its bug)'),
        ('no_kick_sc: process reschedule never takes a step, so invariants request_payload_seen hold without it',
         'no_kick_sc sends no IPI (its bug), so the handler never runs; request_payload_seen reads only the vCPU'),
        ('request_payload_seen: the left side `vcpu.serviced` of its `->` never holds in a reachable state: it holds vacuously',
         'vacuous where the request carries no payload (PAYLOAD off: all but the payload variants)'),
    ],
}


#: models merged after this review (issue 19's scenarios), whose findings their authors
#: have yet to explain or fix: the output lists them as warnings. Take a model off this
#: list once its findings are explained, and list them in FINDINGS.
NOT_YET_REVIEWED: frozenset[str] = frozenset()


def findings(path: Path):
    result = checked(path, progress=False)
    return result, run_warnings(result), explained_warnings(result)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_model_findings_are_the_explained_ones(path):
    if path.name in NOT_YET_REVIEWED:
        pytest.skip(f"{path.name}: its coverage findings are not yet explained (NOT_YET_REVIEWED)")
    result, shown, explained = findings(path)
    assert all(v.coverage is not None for v in result.variants), "coverage was not computed"
    assert [w.message for w in shown] == []  # nothing the model does not explain
    found = Counter(msg for _, msg in {(w.line, w.message) for w, _ in explained})
    listed = Counter(msg for msg, _ in FINDINGS.get(path.name, []))
    assert found == listed, (f"new: {sorted((found - listed).elements())}; "
                             f"gone: {sorted((listed - found).elements())}")


def test_explanation_silences_only_its_line(tmp_path):
    """An explained line is quiet; the same finding on a line without the comment is not."""
    p = tmp_path / "m.spec"
    p.write_text("model m;\nvar x: 0..2 = 0;\nprocess p {\n  x = 1;\n"
                 "  if (x == 2) { x = 0; }   // coverage: x is never 2 here\n"
                 "  if (x == 2) { x = 1; }\n}\ninvariant small: x <= 1;\n")
    result = check_spec(load(str(p)), Options(progress=False))
    shown = {(w.line, w.message) for w in run_warnings(result)}
    quiet = {(w.line, w.message, why) for w, why in explained_warnings(result)}
    assert shown == {(6, "p: `if (x == 2)` never takes its then branch"), (6, "p: `x = 1;` is never executed")}
    assert quiet == {(5, "p: `if (x == 2)` never takes its then branch", "x is never 2 here"),
                     (5, "p: `x = 0;` is never executed", "x is never 2 here")}


def test_lineless_finding_could_not_be_explained(tmp_path):
    """A process that never moves in one variant has no statement line to carry a
    `// coverage:` comment: the variant's declaration line explains it, for that variant
    only (the other variant's own such finding still warns)."""
    p = tmp_path / "m.spec"
    p.write_text("model m;\nconst GO = true;\nconst GO2 = true;\nvar x: 0..1 = 0;\n"
                 "process p { x = 1; }\nprocess q { await GO && GO2; }\ninvariant small: x <= 1;\n"
                 "variant stop { GO = false; }   // coverage: q is what the variant stops\n"
                 "variant stop2 { GO2 = false; }\n")
    result = check_spec(load(str(p)), Options(progress=False))
    shown = [w.message for w in run_warnings(result)]
    quiet = [(w.message, why) for w, why in explained_warnings(result)]
    assert quiet == [("stop: process q never takes a step, so invariants small hold without it",
                      "q is what the variant stops")]
    assert "stop2: process q never takes a step, so invariants small hold without it" in shown


@pytest.mark.parametrize("name", sorted(NOT_YET_REVIEWED))
def test_not_yet_reviewed_model_exists_and_still_warns(name):
    """The list goes stale the other way too: a model on it that is gone, or that no
    longer has an unexplained finding, must come off it."""
    assert (ROOT / "models" / name).is_file()
    _, shown, _ = findings(ROOT / "models" / name)
    assert shown, f"{name} has no unexplained finding left: move it to FINDINGS"
