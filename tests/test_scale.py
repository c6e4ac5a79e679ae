"""The fast explorer: pinned state counts of every shipped model, several workers and
--hash-compact agreeing with one worker, progress on a terminal.

The counts below are those of the unreduced search before the packed-state engine
(issue 7): a change is a reviewable event, never a side effect of making it faster.
Every search here runs without reductions (tests/test_reduce.py covers those).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from checker.cli import main
from checker.backends.python import ModelError
from checker.engines.explicit import Limits, explore
from checker.engines.explicit import parallel
from checker.engines.explicit.search import Fingerprints, home_slot
from checker.base.progress import Progress
from checker.pipeline import Options, check_spec, compile_variant, load
from checker.results.trace import Verdict
from search_fixtures import SMALL_SPECS, SPECS, cross_variants, only, summary

ROOT = Path(__file__).resolve().parent.parent

# (file, variant) -> (distinct states, transitions, depth, the properties not holding)
PINNED = {
    ("models/apic_timer_migrate.spec", "base"): (421, 568, 29, ''),
    ("models/apic_timer_migrate.spec", "base_tso"): (776, 1335, 33, ''),
    ("models/apic_timer_migrate.spec", "early_check"): (371, 487, 29, 'timer_follows_vcpu=violated,timer_reaches_guest=violated'),
    ("models/apic_timer_migrate.spec", "early_check_tso"): (676, 1124, 33, 'timer_follows_vcpu=violated,timer_reaches_guest=violated'),
    ("models/apic_timer_migrate.spec", "restart_always"): (515, 683, 36, 'one_expiry=violated'),
    ("models/apic_timer_migrate.spec", "restart_always_tso"): (921, 1543, 41, 'one_expiry=violated'),
    ("models/apic_timer_migrate.spec", "base_lkmm"): (3304, 8548, 37, 'timer_reaches_guest=violated'),
    ("models/apic_timer_migrate.spec", "clear_mb_lkmm"): (3832, 9802, 39, ''),
    ("models/apic_timer_migrate.spec", "early_check_lkmm"): (3109, 7867, 39, 'timer_follows_vcpu=violated,timer_reaches_guest=violated'),
    ("models/csd_wait_ipi.spec", "base"): (16, 18, 12, ''),
    ("models/csd_wait_ipi.spec", "base_tso"): (24, 30, 16, ''),
    ("models/csd_wait_ipi.spec", "base_lkmm"): (30, 48, 13, ''),
    ("models/csd_wait_ipi.spec", "no_release"): (16, 18, 12, ''),
    ("models/csd_wait_ipi.spec", "no_release_tso"): (24, 30, 16, ''),
    ("models/csd_wait_ipi.spec", "no_release_lkmm"): (36, 57, 14, 'result_seen=violated'),
    ("models/csd_wait_ipi.spec", "mb_unlock_lkmm"): (32, 51, 14, ''),
    ("models/csd_wait_ipi.spec", "no_acquire_tso"): (22, 27, 15, ''),
    ("models/csd_wait_ipi.spec", "no_acquire_lkmm"): (32, 49, 13, 'result_seen=violated'),
    ("models/halt_poll.spec", "base"): (3585, 8190, 41, ''),
    ("models/halt_poll.spec", "check_before_prepare"): (3552, 8079, 41, 'timer_wakes_vcpu=violated'),
    ("models/halt_poll.spec", "final_check_ignores_timer"): (3570, 8118, 41, 'timer_wakes_vcpu=violated'),
    ("models/halt_poll.spec", "no_poll"): (1795, 4067, 38, ''),
    ("models/halt_poll.spec", "no_wake_on_expiry"): (2951, 6716, 39, 'timer_wakes_vcpu=violated'),
    ("models/halt_poll.spec", "poll_for_timer"): (2298, 5168, 38, 'no_timer_poll_at_zero_halt_poll_ns=violated'),
    ("models/halt_poll.spec", "posted"): (2602, 5945, 44, ''),
    ("models/halt_poll.spec", "posted_check_ignores_pi"): (625, 1280, 27, 'timer_wakes_vcpu=violated'),
    ("models/halt_poll.spec", "posted_poll_ignores_pi"): (1720, 3785, 56, ''),
    ("models/halt_poll.spec", "waker_sc"): (1388, 3132, 40, ''),
    ("models/halt_poll.spec", "waker_tso"): (1443, 3250, 43, ''),
    ("models/halt_poll.spec", "waker_no_mb_sc"): (1252, 2846, 38, ''),
    ("models/halt_poll.spec", "waker_no_mb_tso"): (1307, 2964, 41, ''),
    ('models/hv_sw_switch.spec', 'base'): (7527, 17775, 75, ''),
    ('models/hv_sw_switch.spec', 'no_pending_recheck'): (7709, 18051, 84, 'one_shot_fires_once=violated,recheck_cancels_hv=violated'),
    ('models/hv_sw_switch.spec', 'no_switch_before_block'): (485, 760, 58, 'recheck_cancels_hv=violated,timer_caught_in_poll=violated,timer_reaches_guest=violated'),
    ('models/hv_sw_switch.spec', 'switch_after_poll'): (7575, 17732, 76, 'timer_caught_in_poll=violated'),
    ('models/hv_sw_switch.spec', 'periodic'): (8120, 17917, 85, 'recheck_cancels_hv=violated'),
    ('models/hv_sw_switch.spec', 'periodic_hv_no_restart'): (7856, 17361, 103, 'recheck_cancels_hv=violated,timer_reaches_guest=violated'),
    ('models/hv_sw_switch.spec', 'base_tso'): (11448, 28740, 84, ''),
    ('models/hv_sw_switch.spec', 'base_lkmm'): (117162, 454444, 107, ''),
    ('models/hv_sw_switch.spec', 'no_entry_mb_tso'): (11754, 29881, 81, ''),
    ("models/hv_timer_advance.spec", "base"): (9330, 14166, 24, 'busy_wait_covers_advance=proved,expired_iff_exact=proved,expired_iff_within_advance=proved,expiry_not_after_deadline=proved,expiry_not_before_advance=proved,wrapped_delta_refused=proved'),
    ("models/hv_timer_advance.spec", "stale_expired_deadline"): (4992, 7642, 20, 'busy_wait_covers_advance=proved,entry_after_deadline=violated,expired_iff_exact=proved,expired_iff_within_advance=proved,expiry_not_after_deadline=proved,expiry_not_before_advance=proved,no_early_timer_irq=violated,wrapped_delta_refused=proved'),
    ("models/hv_timer_advance.spec", "unguarded"): (9094, 13726, 24, 'busy_wait_covers_advance=proved,expired_iff_exact=violated,expired_iff_within_advance=violated,expiry_not_after_deadline=violated,expiry_not_before_advance=proved,no_sw_fallback=violated,wrapped_delta_refused=proved'),
    ("models/hv_timer_advance.spec", "unguarded_no_range_check"): (5392, 8088, 23, 'busy_wait_covers_advance=proved,deadlock=violated,expired_iff_exact=violated,expired_iff_within_advance=violated,expiry_not_after_deadline=violated,expiry_not_before_advance=proved,expiry_within_deadline=violated,wrapped_delta_refused=proved'),
    ("models/hv_timer_advance.spec", "v1_delta_one"): (7450, 11409, 24, 'busy_wait_covers_advance=proved,expired_iff_exact=violated,expired_iff_within_advance=violated,expiry_not_after_deadline=violated,expiry_not_before_advance=proved,expiry_within_deadline=violated,wrapped_delta_refused=proved'),
    ('models/hv_timer_advance.spec', 'base_tso'): (9330, 14166, 24, 'busy_wait_covers_advance=proved,expired_iff_exact=proved,expired_iff_within_advance=proved,expiry_not_after_deadline=proved,expiry_not_before_advance=proved,wrapped_delta_refused=proved'),
    ('models/hv_timer_advance.spec', 'base_lkmm'): (15380, 29436, 25, 'busy_wait_covers_advance=proved,expired_iff_exact=proved,expired_iff_within_advance=proved,expiry_not_after_deadline=proved,expiry_not_before_advance=proved,wrapped_delta_refused=proved'),
    ("models/hv_timer_preempt.spec", "base"): (25, 28, 8, 'cancelled_once=violated,expired_once=violated'),
    ("models/hv_timer_preempt.spec", "fixed"): (17, 16, 7, ''),
    ("models/hv_timer_preempt.spec", "base_tso"): (52, 73, 13, 'cancelled_once=violated,expired_once=violated'),
    ("models/hv_timer_preempt.spec", "fixed_tso"): (36, 51, 9, ''),
    ("models/hv_timer_preempt.spec", "base_lkmm"): (25, 28, 8, 'cancelled_once=violated,expired_once=violated'),
    ("models/hv_timer_preempt.spec", "fixed_lkmm"): (17, 16, 7, ''),
    ("models/timer_migration.spec", "base"): (53, 60, 9, 'timer_on_vcpu_cpu=violated'),
    ("models/timer_migration.spec", "fixed"): (64, 75, 12, ''),
    ("models/timer_migration.spec", "base_tso"): (98, 141, 12, 'timer_on_vcpu_cpu=violated'),
    ("models/timer_migration.spec", "fixed_tso"): (120, 182, 15, ''),
    ("models/timer_migration.spec", "base_lkmm"): (53, 60, 9, 'timer_on_vcpu_cpu=violated'),
    ("models/timer_migration.spec", "fixed_lkmm"): (64, 75, 12, ''),
    ("models/vcpu_preempted_kick.spec", "base"): (919, 1663, 31, ''),
    ("models/vcpu_preempted_kick.spec", "early_check"): (459, 792, 24, 'lost_while_preempted=violated,request_seen_before_guest=violated'),
    ("models/vcpu_preempted_kick.spec", "base_tso"): (3005, 7249, 47, 'lost_while_preempted=violated,request_seen_before_guest=violated'),
    ("models/vcpu_preempted_kick.spec", "entry_mb_tso"): (2923, 6983, 48, ''),
    ("models/vcpu_preempted_kick.spec", "base_lkmm"): (16388, 58014, 48, 'lost_while_preempted=violated,request_seen_before_guest=violated'),
    ("models/vcpu_preempted_kick.spec", "entry_mb_lkmm"): (18192, 65418, 50, ''),
    ("models/ipi_fastpath.spec", "base"): (1154, 2762, 54, ''),
    ("models/ipi_fastpath.spec", "base_tso"): (1494, 3667, 60, ''),
    ("models/ipi_fastpath.spec", "legacy_apic"): (1556, 3654, 45, ''),
    ("models/ipi_fastpath.spec", "no_entry_mb"): (1135, 2717, 52, ''),
    ("models/ipi_fastpath.spec", "no_entry_mb_tso"): (1557, 3859, 58, 'ipi_taken=violated'),
    ("models/ipi_fastpath.spec", "no_sync_mb_tso"): (1528, 3749, 64, ''),
    ("models/ipi_fastpath.spec", "no_notification"): (175, 358, 26, 'ipi_taken=violated'),
    ("models/ipi_fastpath.spec", "no_wakeup"): (861, 2048, 52, 'ipi_taken=violated'),
    ("models/ipi_fastpath.spec", "sync_before_mode"): (1154, 2758, 52, 'ipi_taken=violated'),
    ("models/ipi_fastpath.spec", "v5_kick"): (6811, 18682, 86, ''),
    ('models/ipi_fastpath_reenter.spec', 'base'): (725, 1228, 38, ''),
    ('models/ipi_fastpath_reenter.spec', 'legacy_apic'): (884, 1493, 46, ''),
    ('models/ipi_fastpath_reenter.spec', 'v6_11'): (891, 1497, 45, ''),
    ('models/ipi_fastpath_reenter.spec', 'seed_v1'): (977, 1651, 45, ''),
    ('models/ipi_fastpath_reenter.spec', 'self_notify_reenter'): (912, 1558, 42, ''),
    ('models/ipi_fastpath_reenter.spec', 'reenter_without_sync'): (610, 1024, 46, 'remote_ipi_taken=violated,self_ipi_taken=violated'),
    ('models/ipi_fastpath_reenter.spec', 'reenter_without_exit_check'): (605, 1018, 38, ''),
    ('models/ipi_fastpath_reenter.spec', 'legacy_reenter_without_exit_check'): (470, 807, 37, 'remote_ipi_taken=violated,request_served=violated,self_ipi_taken=violated'),
    ('models/ipi_fastpath_reenter.spec', 'base_tso'): (826, 1388, 43, ''),
    ('models/ipi_fastpath_reenter.spec', 'base_lkmm'): (1480, 3347, 44, ''),
    ("models/pi_timer.spec", "base"): (8889, 21275, 84, ''),
    ("models/pi_timer.spec", "base_tso"): (12495, 31549, 97, ''),
    ("models/pi_timer.spec", "hlt_exits"): (14166, 34366, 90, ''),
    ("models/pi_timer.spec", "hlt_exits_tso"): (19590, 49802, 103, ''),
    ("models/pi_timer.spec", "kick_without_wake"): (11607, 27360, 84, ''),
    ("models/pi_timer.spec", "no_entry_mb"): (8321, 19866, 80, ''),
    ("models/pi_timer.spec", "no_entry_mb_tso"): (14884, 38832, 93, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ("models/pi_timer.spec", "no_kick_hlt_exits"): (7894, 18190, 84, 'timer_wakes_vcpu=violated'),
    ("models/pi_timer.spec", "no_kick_mb_tso"): (19568, 49756, 103, ''),
    ("models/pi_timer.spec", "no_kick_no_wake"): (6984, 15922, 84, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ("models/pi_timer.spec", "post_any_mode"): (3421, 7716, 68, 'expired_timer_not_posted=violated'),
    ("models/pi_timer.spec", "post_any_mode_timer_fn"): (3448, 7779, 68, ''),
    ("models/pi_timer.spec", "post_any_mode_timer_fn_hlt_exits"): (5359, 12227, 73, ''),
    ("models/pi_timer.spec", "post_any_mode_timer_fn_hlt_exits_hlt_cond"): (9766, 24208, 89, ''),
    ("models/pi_timer.spec", "post_any_mode_timer_fn_hlt_exits_no_p3_kick"): (3748, 8543, 66, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ("models/pi_timer.spec", "posted_without_wait"): (9913, 24261, 81, 'no_early_posted_irq=violated,no_early_timer_irq=violated,posted_after_deadline=violated'),
    ("models/pi_timer.spec", "stale_expired_deadline"): (12966, 32796, 83, 'no_early_posted_irq=violated,no_early_requested_irq=violated,no_early_timer_irq=violated,posted_after_deadline=violated'),
    ("models/pi_timer.spec", "unpinned_no_kick"): (4656, 10590, 84, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ("models/pi_timer.spec", "v4_stale_posted"): (4952, 12264, 67, 'no_early_posted_irq=violated,no_early_timer_irq=violated,posted_after_deadline=violated'),
    ("models/pi_timer.spec", "v4_stale_request"): (13348, 33935, 88, 'no_early_requested_irq=violated,no_early_timer_irq=violated'),
    ('models/pi_timer_v6.spec', 'base'): (6038, 14094, 64, ''),
    ('models/pi_timer_v6.spec', 'hlt_exits'): (6502, 15447, 77, ''),
    ('models/pi_timer_v6.spec', 'no_direct_inject'): (6029, 14079, 64, 'direct_injection=violated'),
    ('models/pi_timer_v6.spec', 'no_kick'): (3122, 7054, 60, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ('models/pi_timer_v6.spec', 'no_kick_hlt_exits'): (2686, 6007, 57, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ('models/pi_timer_v6.spec', 'no_wake_fallback'): (5978, 13963, 64, ''),
    ('models/pi_timer_v6.spec', 'unblock_not_cleared'): (4826, 11306, 64, 'timer_wakes_vcpu=violated'),
    ('models/pi_timer_v6.spec', 'posted_without_wait'): (6530, 15555, 64, 'no_early_posted_irq=violated,no_early_timer_irq=violated,posted_after_deadline=violated'),
    ('models/pi_timer_v6.spec', 'base_tso'): (8647, 21604, 74, ''),
    ('models/pi_timer_v6.spec', 'no_entry_mb_tso'): (9387, 24322, 71, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ('models/pi_timer_v6.spec', 'no_entry_mb'): (5654, 13168, 61, ''),
    ('models/pi_timer_v6.spec', 'base_lkmm'): (30277, 118785, 80, 'deadlock=violated,no_early_requested_irq=violated,no_early_timer_irq=violated,timer_wakes_vcpu=violated'),
    ('models/pi_two_posters.spec', 'base'): (8771, 17527, 80, ''),
    ('models/pi_two_posters.spec', 'sender_on_before_pir'): (11734, 23265, 73, 'ipi_taken=violated'),
    ('models/pi_two_posters.spec', 'sync_reads_pir_first'): (8522, 16896, 76, 'device_taken=violated,ipi_taken=violated'),
    ('models/pi_two_posters.spec', 'notify_even_if_outstanding'): (8259, 15956, 79, ''),
    ('models/pi_two_posters.spec', 'pi_put_ignores_on'): (5302, 10229, 60, 'device_taken=violated,ipi_taken=violated'),
    ('models/pi_two_posters.spec', 'no_wakeup_vector'): (4246, 8516, 44, 'device_taken=violated,ipi_taken=violated,woken_by_vector=violated'),
    ('models/pi_two_posters.spec', 'base_tso'): (10730, 21599, 91, ''),
    ('models/pi_two_posters.spec', 'base_lkmm'): (28632, 82710, 86, ''),
    ('models/timer_reprogram.spec', 'base'): (19171, 39427, 78, ''),
    ('models/timer_reprogram.spec', 'cancel_without_wait'): (62448, 138236, 92, 'irq_not_before_its_deadline=violated,new_deadline_fires=violated,no_delivery_after_rewrite=violated,no_stale_pending=violated'),
    ('models/timer_reprogram.spec', 'pending_not_reset'): (17745, 36437, 78, 'new_deadline_fires=violated,no_stale_pending=violated,old_expiry_dropped=violated'),
    ('models/timer_reprogram.spec', 'base_tso'): (25775, 56594, 89, ''),
    ('models/timer_reprogram.spec', 'base_lkmm'): (53401, 190738, 85, 'irq_not_before_its_deadline=violated'),
    ("models/halt_poll_grow.spec", "base"): (7, 7, 6, 'near_tick_polled=violated'),
    ("models/halt_poll_grow.spec", "two_halts"): (9, 9, 8, ''),
    ("models/halt_poll_grow.spec", "any_halts"): (30, 42, 10, 'near_tick_polled=violated'),
    ("models/halt_poll_grow.spec", "poll_for_timer"): (7, 7, 6, 'no_poll_after_long_halt=violated'),
    ("models/halt_poll_grow.spec", "v612"): (7, 7, 6, 'near_tick_polled=violated'),
    ("models/halt_poll_grow.spec", "v612_any_halts"): (38, 52, 12, 'near_tick_polled=violated,no_poll_after_long_halt=violated'),
    ("models/halt_poll_grow.spec", "base_tso"): (7, 7, 6, 'near_tick_polled=violated'),
    ("models/halt_poll_grow.spec", "base_lkmm"): (7, 7, 6, 'near_tick_polled=violated'),
    ("models/halt_poll_grow.spec", "poll_for_timer_tso"): (7, 7, 6, 'no_poll_after_long_halt=violated'),
    ("models/halt_poll_grow.spec", "poll_for_timer_lkmm"): (7, 7, 6, 'no_poll_after_long_halt=violated'),
    ("models/hlt_if_gating.spec", "base"): (3354, 7636, 45, ''),
    ("models/hlt_if_gating.spec", "posted"): (2069, 4792, 33, 'spurious_wakeup=violated'),
    ("models/hlt_if_gating.spec", "ungated_events"): (3249, 7435, 45, 'no_unhalt_while_masked=violated'),
    ("models/hlt_if_gating.spec", "posted_ungated_events"): (2399, 5521, 33, 'no_unhalt_while_masked=violated,spurious_wakeup=violated'),
    ("models/hlt_if_gating.spec", "pending_timer_unhalts"): (3203, 7287, 41, 'no_unhalt_while_masked=violated,spurious_wakeup=violated'),
    ("models/hlt_if_gating.spec", "posted_pending_timer_unhalts"): (2069, 4792, 33, 'spurious_wakeup=violated'),
    ("models/hlt_if_gating.spec", "base_tso"): (3738, 8659, 48, ''),
    ("models/hlt_if_gating.spec", "posted_tso"): (2377, 5620, 36, 'spurious_wakeup=violated'),
    ("models/hlt_if_gating.spec", "base_lkmm"): (33490, 109517, 62, 'timer_taken=violated'),
    ("models/hlt_if_gating.spec", "posted_lkmm"): (18192, 59447, 46, 'spurious_wakeup=violated'),
    ('models/pi_preempted_target.spec', 'base'): (6850, 14371, 48, ''),
    ('models/pi_preempted_target.spec', 'no_on_recompute'): (5191, 10973, 46, 'device_taken=violated'),
    ('models/pi_preempted_target.spec', 'ndst_not_updated'): (6826, 14421, 48, 'device_taken=violated,ipi_taken=violated'),
    ('models/pi_preempted_target.spec', 'pir_check_before_sn_clear'): (7154, 14921, 48, 'device_taken=violated'),
    ('models/pi_preempted_target.spec', 'base_tso'): (8344, 17762, 55, ''),
    ('models/pi_preempted_target.spec', 'base_lkmm'): (89838, 323678, 64, ''),
    ('models/timer_advance_tuning.spec', 'base'): (32990, 75204, 62, 'no_early_timer_irq=violated,tuned_only_by_the_hrtimer=violated'),
    ('models/timer_advance_tuning.spec', 'v5_9'): (22289, 47612, 60, 'early_by_an_eighth=violated,tuned_only_by_the_hrtimer=violated'),
    ('models/timer_advance_tuning.spec', 'cap_before_adjust'): (34269, 78396, 61, 'early_by_an_eighth=violated,tuned_only_by_the_hrtimer=violated'),
    ('models/timer_advance_tuning.spec', 'tune_only_fired'): (31215, 73127, 63, 'no_early_timer_irq=violated'),
    ('models/timer_advance_tuning.spec', 'base_tso'): (67282, 189220, 69, 'no_early_timer_irq=violated,tuned_only_by_the_hrtimer=violated'),
    ('models/timer_advance_tuning.spec', 'v5_9_tso'): (34823, 85510, 67, 'early_by_an_eighth=violated,tuned_only_by_the_hrtimer=violated'),
    ('models/timer_advance_tuning.spec', 'base_lkmm'): (298943, 1156347, 75, 'deadlock=violated,early_by_at_most_an_eighth=violated,no_early_timer_irq=violated,tuned_only_by_the_hrtimer=violated'),
    ("models/vcpu_requests.spec", "base"): (315, 522, 33, ''),
    ("models/vcpu_requests.spec", "no_kick_sc"): (38, 50, 12, 'request_not_stranded=violated'),
    ("models/vcpu_requests.spec", "no_vcpu_mb"): (353, 638, 31, 'request_not_stranded=violated'),
    ("models/vcpu_requests.spec", "no_vcpu_mb_sc"): (221, 342, 25, ''),
    ("models/vcpu_requests.spec", "plain_request_cmpxchg"): (306, 511, 33, ''),
    ("models/vcpu_requests.spec", "plain_request_plain_mode"): (210, 338, 27, 'request_not_stranded=violated'),
    ("models/vcpu_requests.spec", "plain_request_plain_mode_sc"): (145, 214, 23, ''),
    ("models/vcpu_requests.spec", "set_bit_plain_mode"): (185, 285, 26, ''),
    ("tests/litmus/iriw.spec", "base"): (164, 330, 8, ""),
    ("tests/litmus/iriw.spec", "sc"): (97, 156, 6, ""),
    ("tests/litmus/lb.spec", "base"): (22, 28, 6, ""),
    ("tests/litmus/lb.spec", "sc"): (13, 14, 4, ""),
    ("tests/litmus/mp.spec", "base"): (23, 33, 6, ""),
    ("tests/litmus/mp.spec", "sc"): (13, 14, 4, ""),
    ("tests/litmus/n6.spec", "base"): (54, 100, 8, "forbidden=violated"),
    ("tests/litmus/n6.spec", "sc"): (19, 21, 5, ""),
    ("tests/litmus/sb.spec", "base"): (34, 58, 6, "forbidden=violated"),
    ("tests/litmus/sb.spec", "sc"): (13, 14, 4, ""),
    ("tests/litmus/sb_cmpxchg_fail.spec", "base"): (31, 44, 8, ""),
    ("tests/litmus/sb_cmpxchg_fail.spec", "sc"): (22, 28, 6, ""),
    ("tests/litmus/sb_mb.spec", "base"): (31, 44, 8, ""),
    ("tests/litmus/sb_mb.spec", "sc"): (22, 28, 6, ""),
    ("tests/litmus/sb_set_bit.spec", "base"): (31, 44, 8, ""),
    ("tests/litmus/sb_set_bit.spec", "sc"): (22, 28, 6, ""),
    ("tests/litmus/sb_wmb.spec", "base"): (62, 126, 8, "forbidden=violated"),
    ("tests/litmus/sb_wmb.spec", "sc"): (22, 28, 6, ""),
    ("tests/litmus/sb_xchg.spec", "base"): (13, 14, 4, ""),
    ("tests/litmus/sb_xchg.spec", "sc"): (13, 14, 4, ""),
    ("tests/litmus/two_plus_two_w.spec", "base"): (42, 76, 8, ""),
    ("tests/litmus/two_plus_two_w.spec", "sc"): (13, 14, 4, ""),
    # memory lkmm (the lkmm variants; no reductions under lkmm anyway)
    ('models/halt_poll.spec', 'lkmm'): (7295, 23867, 43, ''),
    ('models/halt_poll.spec', 'waker_lkmm'): (6586, 21183, 46, ''),
    ('models/halt_poll.spec', 'waker_no_mb_lkmm'): (6740, 21834, 46, 'timer_wakes_vcpu=violated'),
    ('models/ipi_fastpath.spec', 'base_lkmm'): (4818, 16496, 65, ''),
    ('models/ipi_fastpath.spec', 'no_entry_mb_lkmm'): (5097, 17585, 64, 'ipi_taken=violated'),
    ('models/ipi_fastpath.spec', 'no_sync_mb_lkmm'): (5073, 17231, 63, 'ipi_taken=violated'),
    ('models/pi_timer.spec', 'base_lkmm'): (10521, 32369, 83, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ('models/pi_timer.spec', 'r4_mb_lkmm'): (31593, 120254, 97, 'no_early_requested_irq=violated,no_early_timer_irq=violated'),
    ('models/pi_timer.spec', 'no_entry_mb_lkmm'): (7009, 22411, 73, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ('models/pi_timer.spec', 'no_kick_mb_lkmm'): (19159, 72125, 92, 'deadlock=violated,timer_wakes_vcpu=violated'),
    ('models/vcpu_requests.spec', 'lkmm'): (567, 1244, 37, ''),
    ('models/vcpu_requests.spec', 'lkmm_sc'): (240, 375, 27, ''),
    ('models/vcpu_requests.spec', 'no_wake_up_lkmm'): (524, 1144, 36, ''),
    ('models/vcpu_requests.spec', 'no_before_atomic'): (261, 414, 31, ''),
    ('models/vcpu_requests.spec', 'no_before_atomic_lkmm'): (486, 1044, 35, 'request_not_stranded=violated'),
    ('models/vcpu_requests.spec', 'set_bit_plain_mode_lkmm'): (308, 605, 28, 'request_not_stranded=violated'),
    ('models/vcpu_requests.spec', 'set_bit_after_atomic_lkmm'): (345, 703, 28, ''),
    ('models/vcpu_requests.spec', 'payload'): (362, 612, 37, ''),
    ('models/vcpu_requests.spec', 'payload_lkmm'): (879, 2256, 40, ''),
    ('models/vcpu_requests.spec', 'payload_sc'): (266, 418, 30, ''),
    ('models/vcpu_requests.spec', 'payload_no_wmb'): (344, 569, 36, ''),
    ('models/vcpu_requests.spec', 'payload_no_wmb_lkmm'): (1148, 2877, 40, 'request_payload_seen=violated'),
    ('tests/litmus/iriw.spec', 'lkmm'): (482, 1316, 10, 'forbidden=violated'),
    ('tests/litmus/lb.spec', 'lkmm'): (22, 28, 6, ''),
    ('tests/litmus/mp.spec', 'lkmm'): (29, 44, 6, 'forbidden=violated'),
    ('tests/litmus/n6.spec', 'lkmm'): (43, 66, 7, 'forbidden=violated'),
    ('tests/litmus/sb.spec', 'lkmm'): (34, 58, 6, 'forbidden=violated'),
    ('tests/litmus/sb_cmpxchg_fail.spec', 'lkmm'): (96, 252, 8, 'forbidden=violated'),
    ('tests/litmus/sb_mb.spec', 'lkmm'): (53, 108, 7, ''),
    ('tests/litmus/sb_set_bit.spec', 'lkmm'): (62, 126, 8, 'forbidden=violated'),
    ('tests/litmus/sb_wmb.spec', 'lkmm'): (62, 126, 8, 'forbidden=violated'),
    ('tests/litmus/sb_xchg.spec', 'lkmm'): (25, 40, 5, ''),
    ('tests/litmus/two_plus_two_w.spec', 'lkmm'): (13, 14, 4, ''),
}


def test_every_model_and_litmus_test_is_pinned():
    assert {f for f, _ in PINNED} == {str(p.relative_to(ROOT)) for p in SPECS}


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_pinned_counts(path, one_worker):
    """Per model, so that under xdist each model's search is made in its own group."""
    name = str(path.relative_to(ROOT))
    got = {(name, v): s[:4] for v, s in one_worker[path].items()}
    assert got == {k: v for k, v in PINNED.items() if k[0] == name}


@pytest.mark.parametrize("path", SMALL_SPECS, ids=[p.stem for p in SMALL_SPECS])
def test_two_workers_find_what_one_finds(path, one_worker, eager_workers):
    variants = cross_variants(path)
    result = check_spec(load(str(path)), Options(por=False, symmetry="off", workers=2, variants=variants))
    assert summary(result) == only(one_worker[path], variants)
    used = [v.stats.workers for v in result.variants]
    if "liveness" not in {o.kind for v in result.variants for o in v.outcomes}:
        assert max(used) == 2  # the parallel search ran (a model error reruns in one process)


@pytest.mark.parametrize("path", SMALL_SPECS, ids=[p.stem for p in SMALL_SPECS])
def test_hash_compact_counts_what_one_finds(path, one_worker):
    result = check_spec(load(str(path)), Options(por=False, symmetry="off", workers=1, hash_compact=True))
    want = {v: s[:-1] + (s[-1] and s[-1][:3] + (False,),) for v, s in one_worker[path].items()}
    assert summary(result, fingerprint=False) == want


def test_a_big_model_uses_two_workers_and_agrees(philosophers, workers_from_20k):
    spec = load(str(philosophers))
    one = check_spec(spec, Options(por=False, symmetry="off", workers=1))
    two = check_spec(spec, Options(por=False, symmetry="off", workers=2, workers_asked=True))
    assert summary(one) == summary(two)
    assert one.variants[0].stats.states == 52_224  # the bench family's N = 7 (SPIN agrees)
    for v in two.variants:
        assert v.stats.workers == 2 and "2 workers from depth" in v.stats.workers_note
    assert {o.property: o.verdict for o in two.variants[1].outcomes}["not_two_apart"] is Verdict.VIOLATED


def test_wide_states_hash_and_still_agree(philosophers, monkeypatch, capsys):
    """States wider than a fingerprint are hashed; at these sizes nothing collides."""
    monkeypatch.setattr(Fingerprints, "EXACT_BITS", 0)
    spec = load(str(philosophers))
    one = summary(check_spec(spec, Options(por=False, symmetry="off", workers=1, variants=("base",))), False)
    for workers in (1, 2):
        compact = check_spec(spec, Options(por=False, symmetry="off", workers=workers, hash_compact=True,
                                           variants=("base",)))
        assert summary(compact, False) == one
        p = compact.variants[0].stats.collision_probability
        n = one["base"][0]
        assert p == pytest.approx(n * (n - 1) / 2 * 2.0 ** -63, rel=0.01 if workers == 1 else 1.0)
    assert main([str(philosophers), "--variant", "base", "--hash-compact", "--brief", "--workers", "1", "--no-por",
                 "--no-symmetry"]) == 0
    out = capsys.readouterr().out
    assert "base: --hash-compact: holds with collision probability <= 1.5e-10" in " ".join(out.split())


def test_exact_fingerprints_cannot_collide(capsys):
    path = ROOT / "models" / "vcpu_requests.spec"
    assert main([str(path), "--hash-compact", "--brief", "--variant", "base"]) == 0
    out = capsys.readouterr().out
    assert "holds with collision probability <= 0 (every state fits in its 64-bit fingerprint" in " ".join(out.split())


def test_fingerprint_table_is_a_set():
    for bits in (20, 200):
        table, plain = Fingerprints(bits, capacity=8), set()
        states = [(k * 0x9E3779B97F4A7C15) % (1 << bits) for k in range(5000)] * 2
        for s in states:
            assert table.add(s) == (s not in plain)
            plain.add(s)
            assert table.contains(s)
        assert table.count == len(plain)
        assert not table.contains(max(plain) + 1) or bits == 20


def test_narrow_states_start_their_probes_all_over_a_big_table():
    """A state of at most 63 bits is its own fingerprint, placed by Fibonacci hashing.
    The home slot once took a fixed 24 bits of the product, so a bigger table had all
    its homes in its first 2**24 slots: as the states neared 2**24 (16.7 million), each
    insert ran through one long cluster and the search stalled
    (bench/fingerprints.py). A 2**30-slot table must be reached all over."""
    spread = 64 - 30
    homes = [home_slot(s + 1, spread) for s in range(1 << 16)]
    assert max(homes) < 1 << 30
    assert len({h >> 24 for h in homes}) == 64  # every stretch of 2**24 slots holds homes


def test_memory_per_state_is_reported(philosophers, capsys, workers_from_20k):
    """The search measures the resident memory it grew by; the note gives it per stored
    state where it grew (a process that already holds the memory, as a test worker after
    other searches may, grows by nothing, and a note of 0 bytes would say nothing)."""
    import dataclasses

    from checker.export.text.table import search_notes

    for workers, loop in ((1, []), (2, ["--loop", "python"])):  # (auto: the C loop, once built, runs alone)
        result = check_spec(load(str(philosophers)), Options(variants=("base",), workers=workers, por=False,
                                                             symmetry="off", workers_asked=workers > 1))
        st = result.variants[0].stats
        assert st.bytes_per_state is not None and st.states > 10_000
        notes = " ".join(search_notes(result))
        assert ("base: memory " in notes) is (st.bytes_per_state > 0)
        assert main([str(philosophers), "--variant", "base", "--brief", "--workers", str(workers), "--no-por",
                     "--no-symmetry", *loop]) == 0
        assert (workers == 1) is ("base: 2 workers from depth" not in capsys.readouterr().out)
    grew, none = (dataclasses.replace(result, variants=(dataclasses.replace(
        result.variants[0], stats=dataclasses.replace(st, bytes_per_state=b)),)) for b in (120.0, 0.0))
    assert "base: memory 120 bytes per stored state" in " ".join(search_notes(grew))
    assert "bytes per stored state" not in " ".join(search_notes(none))


def test_small_models_fall_back_to_one_worker_and_say_so(capsys):
    path = ROOT / "models" / "vcpu_requests.spec"
    assert main([str(path), "--brief", "--variant", "base", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    below = parallel.PARALLEL_FROM // parallel.REDUCED_COST  # partial-order reduction is on
    assert f"base: one worker: the search ended below {below:,} states, where one process is faster" in " ".join(out.split())
    assert main([str(path), "--brief", "--variant", "base"]) == 0  # the default: no remark
    assert "one worker" not in capsys.readouterr().out


def test_liveness_runs_in_one_process_and_says_so():
    result = check_spec(load(str(ROOT / "models" / "pi_timer.spec")),
                        Options(por=False, symmetry="off", workers=2, workers_asked=True, variants=("base",)))
    assert result.variants[0].stats.workers == 1
    assert result.variants[0].stats.workers_note == "liveness needs the whole graph in one process"


def test_tuple_steps_refuse_states_out_of_range():
    cm = compile_variant(load(str(ROOT / "models" / "vcpu_requests.spec")), "base", Options())
    s = list(cm.program.initial_states[0])
    # an instance with a step enabled at the start (the interrupt handlers wait for a raise)
    inst = next(i for i in cm.instances if i.steps_at[s[i.pc_slot]][0].fn(tuple(s)) is not None)
    pc = inst.pc_slot
    s[pc] = cm.packing.hi[pc] + 1
    with pytest.raises(ModelError, match="outside the range of pc"):
        inst.steps_at[0][0].fn(tuple(s))
    assert cm.unpack(cm.pack(cm.program.initial_states[0])) == cm.program.initial_states[0]


# ---- progress ------------------------------------------------------------------


def test_progress_is_silent_off_a_terminal():
    stream = io.StringIO()
    p = Progress(None, stream, interval=0)
    p.tick(10, 5, 2)
    p.done()
    assert not p.enabled and stream.getvalue() == ""


def test_progress_shows_on_a_pseudo_terminal():
    import threading

    master, slave = os.openpty()
    chunks: list[bytes] = []

    def drain():  # read while the search writes, so a full pty buffer never blocks it
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        with os.fdopen(slave, "w", closefd=False) as tty:
            p = Progress(None, tty, interval=0)
            assert p.enabled == (not os.environ.get("CI"))
            p.enabled = True  # as on a developer's terminal, also under CI
            cm = compile_variant(load(str(ROOT / "models" / "pi_timer.spec")), "base", Options())
            explore(cm, Limits(), p)
            tty.flush()
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    text = b"".join(chunks).decode()
    assert re.search(r"\rstates [0-9,]+  queue [0-9,]+  depth [0-9]+  [0-9,]+ states/s  [0-9,]+ MiB", text)
    assert text.endswith("\r")  # erased when the search ends


def test_progress_from_workers(philosophers, eager_workers):
    stream = io.StringIO()
    p = Progress(True, stream, interval=0)
    cm = compile_variant(load(str(philosophers)), "base", Options())
    result = explore(cm, Limits(), p, workers=2)
    assert result.stats.workers == 2
    lines = [ln.strip() for ln in stream.getvalue().split("\r") if ln.strip()]
    assert lines and all(ln.startswith("states ") for ln in lines)
    assert any(int(ln.split()[1].replace(",", "")) > 1024 for ln in lines)
    # the last line, at the last level's end, counts the states stored before the workers
    # started too, and the memory of every process (each worker maps what this one had)
    last = lines[-1].split()
    assert int(last[1].replace(",", "")) == result.stats.states
    with open("/proc/self/statm") as f:
        mine = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)
    assert float(last[-2].replace(",", "")) > 1.5 * mine, lines[-1]


def test_progress_flag_forces_it(philosophers, capsys):
    assert main([str(philosophers), "--variant", "base", "--brief", "--progress", "--workers", "1"]) == 0
    # refreshed about once a second: a search this short may end before the first refresh,
    # but whatever was shown is erased again, leaving the table alone on stdout
    assert "states" in capsys.readouterr().out
