"""Issue 27: a queued hrtimer restarted on a new CPU (`hrtimer T[N] pinned`, the
`__kvm_migrate_timers` shape) and models/apic_timer_migrate.spec, checked against
the Promela twin and Z3's bounded model checking."""

from __future__ import annotations

from pathlib import Path

import pytest

from agreement import compiled
from checker.base.errors import SpecError
from checker.cli import main
from checker.engines.explicit import explore

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "apic_timer_migrate.spec"

# A thread starts the timer on CPU 0, may move to CPU 1 and start it again there, and a
# handler on CPU 1 may restart it from its own CPU while the callback runs on CPU 0.
MOVES = """model moves;
cpus 2;
preemptions 1;
MEMORY
var ran_on: 0..2 = 0;          // 1 + the CPU the last callback ran on
var runs: 0..3 = 0;
var restarted_in_cb: bool = false;
hrtimer apic_timer[2] pinned { ran_on = smp_processor_id() + 1; runs = runs + 1; mid: skip; }
interrupt restart on cpu 1 { if (!apic_timer[0]@end_irq) restarted_in_cb = true; hrtimer_start(apic_timer); }
preemptible process vcpu on cpu 0 {
  hrtimer_start(apic_timer);
  hrtimer_start(apic_timer);
}
reachable ran_here: ran_on == 1;
reachable ran_after_moving: ran_on == 2 && runs == 1;
reachable queued_elsewhere: cpu_apic_timer == 1 && armed_apic_timer;
invariant fires_where_queued: !(apic_timer[1]@mid && cpu_apic_timer == 0 && !restarted_in_cb);
reachable kept_its_base_while_running: restarted_in_cb && armed_apic_timer && cpu_apic_timer == 0;
"""


def _moves(memory: str = "", raiser: bool = False) -> str:
    text = MOVES.replace("MEMORY", f"memory {memory};" if memory else "")
    if raiser:
        text += "process hw { raise_irq(restart); }\n"
    return text


@pytest.mark.parametrize("memory", ["sc", "tso"])
def test_a_pinned_hrtimer_fires_on_the_cpu_that_last_started_it(memory):
    ex = explore(compiled(_moves(memory)))
    assert ex.stats.complete and ex.model_error is None
    # the thread's second start after a migration moves it: it then fires on CPU 1 only
    assert set(ex.counterexamples) == {"ran_here", "ran_after_moving", "queued_elsewhere"}


def test_a_restart_while_the_callback_runs_keeps_the_old_base():
    """switch_hrtimer_base: a timer whose callback is running stays on its base."""
    ex = explore(compiled(_moves(raiser=True)))
    assert ex.stats.complete
    assert {"kept_its_base_while_running", "ran_after_moving"} <= set(ex.counterexamples)
    assert "fires_where_queued" not in ex.counterexamples


def test_a_restart_drops_the_expiry_not_yet_handled():
    """remove_hrtimer takes a queued timer off its base: an expiry raised but not yet
    handled on the old CPU never runs its callback."""
    text = """model drop;
cpus 2;
var runs: 0..2 = 0;
var ran_on: 0..2 = 0;
var started: bool = false;
var moved: bool = false;
hrtimer t[2] pinned { runs = runs + 1; ran_on = smp_processor_id() + 1; }
process a on cpu 0 { local_irq_disable(); hrtimer_start(t); started = true; await moved; local_irq_enable(); }
process b on cpu 1 { await started; hrtimer_start(t); moved = true; }
final once_on_the_new_cpu: runs == 1 && ran_on == 2;
reachable expired_unhandled: pending_t[0] && !moved;
"""
    ex = explore(compiled(text))
    # CPU 0 has interrupts off until b has moved the timer: an expiry there is dropped
    assert ex.stats.complete and set(ex.counterexamples) == {"expired_unhandled"}


@pytest.mark.parametrize("text, words", [
    ("model e; cpus 1; hrtimer t[1] pinned { skip; } process p { hrtimer_start(t); }",
     "'hrtimer_start' runs on no CPU in process 'p'"),
    ("model e; cpus 1; hrtimer t[1] { skip; } process p on cpu 0 { hrtimer_start(t); }\ninvariant i: cpu_t == 0;",
     "unknown name 'cpu_t'"),
])
def test_pinned_hrtimer_errors(text, words):
    with pytest.raises(SpecError) as e:
        compiled(text)
    assert words in str(e.value)


def test_pinned_needs_one_callback_per_cpu(tmp_path, capsys):
    spec = tmp_path / "e.spec"
    spec.write_text("model e;\ncpus 1;\nhrtimer t on cpu 0 pinned { skip; }\nprocess p on cpu 0 { hrtimer_start(t); }\n")
    assert main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert "e.spec:3:20: error: a `pinned` hrtimer has one callback per CPU" in err and "Traceback" not in err
    assert "hint: write `hrtimer NAME[N] pinned { ... }`" in err


@pytest.mark.parametrize("text", ["MOVES", "MODEL"])
def test_spin_agrees_on_the_pinned_hrtimer(text, tmp_path):
    """The Promela twin (the same lowering, its own back end): pan's state count and
    verdicts are ours, under sc and tso."""
    from test_promela import agreement, needs_spin
    needs_spin()
    spec = tmp_path / "m.spec"
    if text == "MOVES":
        spec.write_text(_moves(raiser=True) + "variant tso { memory tso; }\n")
    else:  # the model's safety properties (pan's liveness differs in fairness: not compared)
        body = MODEL.read_text().replace("property timer_reaches_guest:", "// property timer_reaches_guest:")
        body = body[:body.index("\nvariant base_lkmm")] + "\n"  # the twin refuses lkmm by name
        spec.write_text(body.replace("expect violated timer_reaches_guest, timer_follows_vcpu;",
                                     "expect violated timer_follows_vcpu;"))
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [] and all(not d for d in differences.values()), differences


def test_bmc_agrees_on_the_pinned_hrtimer():
    """Z3's bounded model checking of the same lowering: the same violations at the same
    shortest depths (each `reachable P` as `invariant !(P)`)."""
    from agreement import bmc_depths
    lines = [f"invariant not_{ln[len('reachable '):].replace(': ', ': !(', 1)[:-1]});" if ln.startswith("reachable ")
             else ln for ln in _moves().splitlines()]
    cm = compiled("\n".join(lines) + "\n")
    depths = {k: c.trace.length for k, c in explore(cm).counterexamples.items()}
    assert {"not_ran_here", "not_ran_after_moving", "not_queued_elsewhere"} <= set(depths)
    got, _, _ = bmc_depths(cm, max(depths.values()) + 1)
    assert got == depths


def test_the_migration_model_verdicts(capsys):
    """models/apic_timer_migrate.spec: v5.2 holds under sc and tso; checking requests only
    before interrupts off loses the timer (the vCPU runs on pCPU 1, its timer fires on
    pCPU 0 and nothing exits the guest); re-arming whatever hrtimer_cancel said fires
    the deadline twice."""
    assert main(["--brief", "--no-coverage", str(MODEL)]) == 0
    out = capsys.readouterr().out
    assert "every outcome is as expected" in out
    assert main(["--variant", "early_check", "--no-coverage", str(MODEL)]) == 0
    out = capsys.readouterr().out
    # the shortest loss of the timer: it fires on the vCPU's own pCPU between the request
    # check and local_irq_disable(); the shortest stray timer migrates the thread there
    assert "early_check: liveness timer_reaches_guest: 13 steps" in out
    stray = out[out.index("early_check: invariant timer_follows_vcpu: 9 steps"):]
    assert "`preempt vcpu`" in stray and "cpu_apic_timer = 0" in stray and "vcpu.cpu = 1" in stray


def test_the_migration_model_under_lkmm(capsys, monkeypatch):
    """Under the LKMM, v5.2 (with kvm_make_request's smp_wmb) loses the timer without any
    hrtimer ordering at fault: kvm_clear_request's clear_bit reads the callback's set_bit
    and the atomic_read(pending) after it reads a stale 0 (x86's LOCK'd clear_bit orders
    them). With smp_mb__after_atomic() there it holds (the --brief run above), and only
    because hrtimer_cancel() orders the finished callback before its return: a machine
    whose cancel joins nothing loses the timer again."""
    from checker.memory import lkmm
    assert main(["--variant", "base_lkmm", "--no-coverage", "--full", str(MODEL)]) == 0
    out = capsys.readouterr().out
    trace = out[out.index("Counterexample: variant base_lkmm, liveness timer_reaches_guest"):]
    cleared = trace.index("clear_bit(KVM_REQ_PENDING_TIMER, requests);")
    assert "requests = {KVM_REQ_MIGRATE_TIMER, KVM_REQ_PENDING_TIMER}" in trace[:cleared]  # the callback's set_bit
    assert "read pending = 0, an older store than memory's 1" in trace[cleared:]
    monkeypatch.setattr(lkmm.Machine, "timer_base", lambda self, t, c, sig, s: None)
    assert main(["--variant", "clear_mb_lkmm", "--no-coverage", "--brief", str(MODEL)]) == 1
    assert "timer_reaches_guest" in capsys.readouterr().out


@pytest.mark.parametrize("decl", ["hrtimer t on cpu 0", "hrtimer t[1]", "hrtimer t[1] pinned"])
def test_a_restart_of_any_hrtimer_drops_its_expiry_not_yet_handled(decl):
    """hrtimer_start takes a queued timer off its queue first: an expiry raised while
    interrupts were off and not handled yet does not run besides the new one."""
    text = f"""model restart;
cpus 1;
var runs: 0..2 = 0;
{decl} {{ runs = runs + 1; }}
process vcpu on cpu 0 {{
  local_irq_disable();
  hrtimer_start(t);
  hrtimer_start(t);
  local_irq_enable();
}}
final at_most_once: runs <= 1;
reachable restarted_after_expiry: vcpu@end && runs == 0 && !armed_t;
"""
    if "[1]" not in decl:
        text = text.replace("!armed_t", "!armed_t && !pending_t")
    ex = explore(compiled(text))
    assert ex.stats.complete and "at_most_once" not in ex.counterexamples


NOTIFIER = """model notif;
cpus 2;
preemptions 1;
var was: -1..1 = 0;
hrtimer t[2] pinned { skip; }
preemptible process vcpu on cpu 0 {
  on sched_in { was = CANCEL(t); if (was == 1) hrtimer_start(t); }
  hrtimer_start(t);
  skip;
}
reachable moved_in_notifier: cpu_t == 1 && armed_t;
"""


def test_a_sched_in_notifier_moves_the_timer_without_waiting():
    """The timer moved at sched-in (as a vcpu_load hook would) with hrtimer_try_to_cancel;
    hrtimer_cancel, which waits for a running callback, is refused there by name."""
    ex = explore(compiled(NOTIFIER.replace("CANCEL", "hrtimer_try_to_cancel")))
    assert ex.stats.complete and set(ex.counterexamples) == {"moved_in_notifier"}
    with pytest.raises(SpecError) as e:
        compiled(NOTIFIER.replace("CANCEL", "hrtimer_cancel"))
    assert "`on sched_in` calls 'hrtimer_cancel', which waits while the callback runs" in str(e.value)
