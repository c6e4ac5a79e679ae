"""Execution contexts (issue 17): CPUs, threads, interrupt handlers, irq masking,
per-CPU variables, preemption and migration with notifiers and a bound, lowered once by
checker/semantics/contexts.py. The traps users fell into when they built contexts by hand are
written here the natural way, with the constructs, and must give the right verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agreement import bmc_depths, compiled, explicit_depths, violated
from checker.cli import main
from checker.engines.explicit import explore
from checker.engines.reduce import plan
from checker.base.errors import SpecError

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["models/timer_migration.spec", "models/hv_timer_preempt.spec"]


# ---- the traps, written with the constructs

PINNED_CALLBACK = """
model pinned;
cpus 1;
var armed: bool = true;
var pending: bool = false;
var mode: 0..2 = 0;          // 0 outside, 1 in guest
interrupt apic_timer on cpu 0 { cb: if (armed) { armed = false; pending = true; } }
process hrtimer_hw { raise_irq(apic_timer); }
process vcpu on cpu 0 {
  local_irq_disable();
  if (!pending) { entry: mode = 1; }  // VM entry: the timer is seen in guest mode
  local_irq_enable();
}
// the callback never runs inside the thread's irqs-off section
invariant not_inside_irqs_off: !(apic_timer@cb && vcpu@entry);
"""


def test_pinned_callback_never_interleaves_an_irqs_off_section():
    """Trap 1: written as its own process the callback interleaved with the thread's
    interrupts-off section (a false violation); as a handler on the thread's CPU it
    cannot run while that CPU has interrupts off."""
    assert violated(PINNED_CALLBACK) == set()


def test_pinned_callback_runs_as_soon_as_interrupts_are_on_again():
    """...and the check is not vacuous: with the section gone the callback runs between
    the thread's steps."""
    text = PINNED_CALLBACK.replace("local_irq_disable();", "skip;").replace("local_irq_enable();", "skip;")
    assert violated(text) == {"not_inside_irqs_off"}


def test_pending_unmasked_interrupt_is_taken_before_the_next_thread_step():
    """A raised, unmasked interrupt runs before the CPU's next process-context step."""
    text = """
model due;
cpus 1;
var seen: bool = false;
var late: bool = false;
interrupt ipi on cpu 0 { seen = true; }
process vcpu on cpu 0 { raise_irq(ipi); if (!seen) late = true; }
invariant taken_at_once: !late;
"""
    assert violated(text) == set()
    assert violated(text.replace("raise_irq(ipi);", "local_irq_disable(); raise_irq(ipi);")) == {"taken_at_once"}


@pytest.mark.parametrize("where", ["", " on cpu 0"])
def test_handler_runs_while_its_thread_sleeps_no_false_lasso(where, tmp_path, capsys):
    """Trap 2: folded into the vCPU process, the callback could not run while the thread
    slept in schedule(), a false lasso; as an interrupt it runs and wakes the sleeper,
    whether the sleeper is a thread on the handler's CPU or has a CPU of its own."""
    text = """
model sleeper;
cpus 1;
var expired: bool = false;
waitqueue wq;
interrupt apic_timer on cpu 0 { expired = true; wake_up(wq); }
process timer_hw { raise_irq(apic_timer); }
process vcpu {
  prepare_to_wait(wq);
  if (!expired) schedule();
  finish_wait(wq);
}
property wakes: always eventually vcpu@end;
""".replace("process vcpu {", f"process vcpu{where} {{")
    spec = tmp_path / "m.spec"
    spec.write_text(text)
    assert main([str(spec), "--no-expect"]) == 0
    spec.write_text(text.replace("expired = true; wake_up(wq);", "expired = true;"))
    assert main([str(spec), "--no-expect"]) == 1  # no wake-up: the lasso is real
    assert "wakes" in capsys.readouterr().out


MIGRATION = """
model migrate;
cpus 2;
percpu var cnt: 0..2 = 0;
var off: bool = false;
preemptible process worker on cpu 0 {
  var c: 0..1 = 0;
  on sched_out { off = true; }
  on sched_in { off = false; }
  c = smp_processor_id();
  this_cpu_write(cnt, this_cpu_read(cnt) + 1);
}
invariant counted_where_read: worker@end -> cnt[worker.c] == 1;
reachable off_every_cpu: off && !worker@end;
"""


def test_migration_window_off_every_cpu_is_reachable():
    """Trap 3: a hand-written scheduler migrated in one atomic step and lost the window
    where the thread is on no CPU; preemption and sched-in are separate steps."""
    ex = explore(compiled(MIGRATION))
    assert "off_every_cpu" in ex.counterexamples  # the reachable state was found
    assert "counted_where_read" in ex.counterexamples  # the id went stale across the migration


def test_get_cpu_keeps_the_thread_on_its_cpu():
    text = MIGRATION.replace("c = smp_processor_id();", "c = get_cpu();") \
        .replace("this_cpu_read(cnt) + 1);", "this_cpu_read(cnt) + 1); put_cpu();")
    assert "counted_where_read" not in violated(text)


def test_no_preemption_without_preemptible():
    assert violated(MIGRATION.replace("preemptible process", "process")) == set()


# ---- the bound

def test_preemption_bound_is_stated_with_a_bounded_holds(capsys):
    assert main(["models/hv_timer_preempt.spec", "--variant", "fixed"]) == 0
    assert "holds for runs with at most 2 preemptions" in capsys.readouterr().out
    assert main(["models/hv_timer_preempt.spec", "--variant", "fixed", "--preemptions", "1"]) == 0
    assert "at most 1 preemption " in capsys.readouterr().out


def test_preemption_bound_zero_hides_the_race(capsys):
    assert main(["models/hv_timer_preempt.spec", "--variant", "base", "--preemptions", "0", "--no-expect"]) == 0


# ---- the models: engines and reductions agree

@pytest.mark.parametrize("path", MODELS)
@pytest.mark.parametrize("variant", ["base", "fixed"])
def test_context_models_por_and_symmetry_agree(path, variant):
    text = (ROOT / path).read_text()
    cm = compiled(text, variant, path)
    reduced = explore(cm, reduction=plan(cm))
    full = explore(cm)
    assert set(reduced.counterexamples) == set(full.counterexamples)
    assert {k: c.trace.length for k, c in reduced.counterexamples.items()} == \
        {k: c.trace.length for k, c in full.counterexamples.items()}


@pytest.mark.parametrize("path", MODELS)
def test_context_models_explicit_and_bmc_agree(path):
    cm = compiled((ROOT / path).read_text(), "base", path)
    depths, _, _ = explicit_depths(cm)
    got, _, _ = bmc_depths(cm, max(depths.values()))
    assert got == depths


# ---- bad input

@pytest.mark.parametrize("text, words", [
    ("model x; var v: bool = false; process p { local_irq_disable(); }", "needs the model's CPUs"),
    ("model x; cpus 1; process p { local_irq_disable(); }", "runs on no CPU"),
    ("model x; cpus 1; process p on cpu 3 { skip; }", "CPU 3 is not one of"),
    ("model x; cpus 2; interrupt h[1] { skip; } process p { send_IPI(0, h); }", "one handler per CPU"),
    ("model x; cpus 1; process p on cpu 0 { raise_irq(q); }", "needs an interrupt's name"),
    ("model x; cpus 1; var y: bool = false; process p on cpu 0 { y = this_cpu_read(y); }", "per-CPU variable"),
    ("model x; cpus 2; process p on cpu 0 { cpu = 1; }", "assigns its own CPU"),
    ("model x; cpus 1; preemptible process p { skip; }", "runs on no CPU"),
    # guest mode (issue 27)
    ("model g; cpus 1; process p on cpu 0 { skip; } invariant a: guest_mode[0];", "no thread of this model enters the guest"),
    ("model g; cpus 1; interrupt h on cpu 0 { skip; } process p on cpu 0 { if (vm_exit_by(h)) skip; }",
     "which never enters the guest"),
    ("model g; cpus 1; interrupt h on cpu 0 { guest_enter(); } process p on cpu 0 { skip; }", "outside a thread's body"),
    ("model g; cpus 1; process p on cpu 0 { atomic { guest_enter(); } }", "blocks and cannot be inside `atomic`"),
    ("model g; cpus 1; process p on cpu 0 { skip; } invariant a: p.exit_reason == 0;", "never enters the guest"),
])
def test_context_errors_name_the_construct(text, words):
    with pytest.raises(SpecError) as e:
        compiled(text)
    assert words in str(e.value)


# ---- liveness: interrupt entry is fair, preemption is not forced

IRQ_FAIR = """
model irq_fair;
cpus 1;
var handled: bool = false;
interrupt h on cpu 0 { handled = true; }
process dev { raise_irq(h); }
process spinner on cpu 0 { end_spin: loop { local_irq_disable(); local_irq_enable(); } }
property eventually_handled: always eventually handled;
"""


def test_pending_unmasked_interrupt_is_eventually_taken(tmp_path, capsys):
    (tmp_path / "m.spec").write_text(IRQ_FAIR)
    assert main([str(tmp_path / "m.spec"), "--no-expect"]) == 0
    masked = IRQ_FAIR.replace("end_spin: loop { local_irq_disable(); local_irq_enable(); }",
                              "local_irq_disable(); end_spin: loop { skip; }")
    (tmp_path / "m.spec").write_text(masked)
    assert main([str(tmp_path / "m.spec"), "--no-expect"]) == 1  # masked for ever: never taken
    capsys.readouterr()


def test_preemption_is_never_forced_by_fairness(tmp_path, capsys):
    """A thread that may be preempted but never has to be: a run without preemption is fair."""
    text = """
model not_forced;
cpus 1;
var preempted: bool = false;
preemptible process t on cpu 0 {
  on sched_out { preempted = true; }
  end_idle: loop { skip; }
}
property preempted_eventually: always eventually preempted;
"""
    (tmp_path / "m.spec").write_text(text)
    assert main([str(tmp_path / "m.spec"), "--no-expect"]) == 1
    assert "preempted_eventually" in capsys.readouterr().out


# ---- traces say where each step ran

def test_trace_steps_carry_their_cpu(tmp_path):
    out = tmp_path / "r.json"
    assert main(["models/timer_migration.spec", "--variant", "base", "--json", str(out)]) == 0
    import json
    variant = json.loads(out.read_text())["variants"][0]
    actions = variant["outcomes"][0]["counterexample"]["trace"]["actions"]
    assert [a["cpu"] for a in actions] == [0, 0, 1, 1, 1, 1]  # preempted on cpu0, back on cpu1
    assert variant["preemptions"] == 2


def test_context_words_stay_usable_as_names():
    """`on`, `cpus`, `interrupt`, `percpu`, `preemptible`, `preemptions` were names before
    they were keywords: a model using them as names still parses (`on[self]` did not)."""
    text = """
model m;
var on[p]: bool = {true, false};
var cpus: bool = false; var interrupt: bool = false; var percpu: bool = false;
var preemptible: bool = false; var preemptions: bool = false;
process p[2] { on[self] = false; cpus = interrupt || percpu || preemptible || preemptions; }
"""
    assert violated(text) == set()


def test_guest_entry_enables_interrupts_atomically():
    """VM entry with interrupts enabled in one step: an interrupt raised while they were
    off is taken after the entry, in guest mode, never between the two."""
    text = """
model entry;
cpus 1;
var in_guest: bool = false;
var seen_outside: bool = false;
interrupt posted on cpu 0 { if (!in_guest) seen_outside = true; }
process vcpu on cpu 0 {
  local_irq_disable();
  raise_irq(posted);
  atomic { in_guest = true; local_irq_enable(); }
}
invariant taken_in_guest: !seen_outside;
"""
    assert violated(text) == set()
    split = text.replace("atomic { in_guest = true; local_irq_enable(); }", "local_irq_enable(); in_guest = true;")
    assert violated(split) == {"taken_in_guest"}


SLEEPER = """
model sleep_off_cpu;
cpus 1;
var done: bool = false;
var switches: 0..3 = 0;
waitqueue wq;
process waiter on cpu 0 {
  on sched_out { switches = switches + 1; }
  prepare_to_wait(wq);
  if (!done) schedule();
  finish_wait(wq);
}
process waker on cpu 0 { done = true; wake_up(wq); }
property woken: always eventually waiter@end;
invariant one_switch: switches <= 1;
reachable switched: switches == 1;
"""


def test_blocking_in_schedule_takes_the_thread_off_its_cpu(tmp_path, capsys):
    """The waker shares the sleeper's CPU: it runs only because schedule() gave the CPU
    up (running the sched_out notifier), and the woken thread comes back."""
    spec = tmp_path / "m.spec"
    spec.write_text(SLEEPER)
    assert main([str(spec), "--no-expect"]) == 0
    assert "switched" in capsys.readouterr().out
    spec.write_text(SLEEPER.replace(" wake_up(wq);", ""))
    assert main([str(spec), "--no-expect"]) == 1  # never woken: a real lasso and deadlock


# ---- hrtimers: armed by hrtimer_start, expire on their own, hrtimer_cancel waits

HRTIMER = """
model hrt;
cpus 2;
var stage: 0..2 = 0;
var cancelled: bool = false;
hrtimer apic_timer on cpu 0 { stage = 1; mid: stage = 2; }
process vcpu on cpu 1 {
  hrtimer_start(apic_timer);
  hrtimer_cancel(apic_timer);
  cancelled = true;
}
invariant not_running_after_cancel: !(cancelled && apic_timer@mid);
property fires_or_is_cancelled: always eventually (stage == 2 || cancelled);
"""


def test_hrtimer_cancel_waits_for_a_running_callback(tmp_path, capsys):
    spec = tmp_path / "m.spec"
    spec.write_text(HRTIMER)
    assert main([str(spec), "--no-expect"]) == 0
    spec.write_text(HRTIMER.replace("hrtimer_cancel(apic_timer);", "skip;"))
    assert main([str(spec), "--no-expect"]) == 1  # without the wait the callback runs on after
    assert "not_running_after_cancel" in capsys.readouterr().out


def test_an_armed_hrtimer_eventually_fires(tmp_path, capsys):
    text = HRTIMER.replace("hrtimer_cancel(apic_timer);", "skip;").replace(
        "invariant not_running_after_cancel: !(cancelled && apic_timer@mid);", "")
    text = text.replace("(stage == 2 || cancelled)", "stage == 2")
    spec = tmp_path / "m.spec"
    spec.write_text(text)
    assert main([str(spec), "--no-expect"]) == 0
    spec.write_text(text.replace("hrtimer_start(apic_timer);", "skip;"))
    assert main([str(spec), "--no-expect"]) == 1  # never armed: never fires
    capsys.readouterr()


def test_hrtimer_start_needs_an_hrtimer():
    with pytest.raises(SpecError) as e:
        compiled("model x; cpus 1; interrupt h on cpu 0 { skip; } process p { hrtimer_start(h); }")
    assert "needs an hrtimer" in str(e.value)
