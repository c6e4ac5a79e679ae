"""Execution contexts, second part (issue 17): sleeping in atomic context is a bug the
checker reports, per-region preemption, and the vCPU preemption model of issue 19."""

from __future__ import annotations

import pytest

from agreement import compiled, violated
from checker.engines.explicit import explore


# ---- schedule() in atomic context: the kernel's "BUG: scheduling while atomic"

SLEEPER = """
model sleep_atomic;
cpus 1;
var done: bool = false;
var l: bool = false;
waitqueue wq;
process waiter on cpu 0 {
  OFF
  prepare_to_wait(wq);
  if (!done) schedule();
  finish_wait(wq);
  ON
}
process waker on cpu 0 { done = true; wake_up(wq); }
"""


@pytest.mark.parametrize("off,on", [("local_irq_disable();", "local_irq_enable();"),
                                    ("preempt_disable();", "preempt_enable();"),
                                    ("spin_lock(l);", "spin_unlock(l);")])
def test_scheduling_while_atomic_is_reported(off, on):
    """On main the thread went to sleep with its CPU's interrupts off (or preemption
    disabled, or a spin lock held): the waker on that CPU never ran, a plain deadlock,
    or with preemption off nothing at all was said."""
    text = SLEEPER.replace("OFF", off).replace("ON", on)
    assert "scheduling_while_atomic" in violated(text)


def test_scheduling_while_atomic_not_reported_in_process_context():
    """...and not vacuous: outside the atomic section the same sleep is fine."""
    text = SLEEPER.replace("OFF", "skip;").replace("ON", "skip;")
    assert violated(text) == set()


def test_scheduling_while_atomic_even_when_schedule_returns_at_once():
    """The kernel checks before it looks at the task state: a waker that already ran
    does not make schedule() with interrupts off legal."""
    text = SLEEPER.replace("OFF", "local_irq_disable();").replace("ON", "local_irq_enable();") \
        .replace("if (!done) schedule();", "schedule();")
    ex = explore(compiled(text, "base"))
    cx = ex.counterexamples["scheduling_while_atomic"]
    assert cx.kind == "assert"


def test_scheduling_while_atomic_in_an_interrupt_handler():
    text = """
model handler_sleeps;
cpus 1;
var x: bool = false;
interrupt dev on cpu 0 { schedule(); }
process t on cpu 0 { raise_irq(dev); x = true; }
"""
    assert violated(text) == {"scheduling_while_atomic"}


# ---- per-region preemption: `preemptible { ... }` inside a thread

REGION = """
model region;
cpus 2;
var a: 0..2 = 0;
var moved: bool = false;
process vcpu on cpu 0 {
  var c: 0..1 = 0;
  c = smp_processor_id();
  preemptible { a = 1; a = 2; }
  if (smp_processor_id() != c) moved = true;
}
process other on cpu 1 { a = 0; }
invariant stays: !moved;
"""


def test_preemptible_region_lets_the_thread_migrate():
    """Preempted inside its region, the thread may come back on the other CPU."""
    assert violated(REGION) == {"stays"}


def test_no_preemption_outside_a_preemptible_region():
    """With the region after the check, nothing preempts the thread where it compares
    its CPUs: it never sees itself moved."""
    text = REGION.replace("preemptible { a = 1; a = 2; }", "a = 1; a = 2;") \
        .replace("if (smp_processor_id() != c) moved = true;",
                 "if (smp_processor_id() != c) moved = true;\n  preemptible { a = 0; }")
    assert violated(text) == set()


def test_preemptible_region_bound_is_stated(tmp_path, capsys):
    from checker.cli import main
    spec = tmp_path / "m.spec"
    spec.write_text(REGION.replace("invariant stays: !moved;", "reachable migrated: moved;"))
    assert main([str(spec), "--no-expect", "--preemptions", "1"]) == 0
    assert "at most 1 preemption" in capsys.readouterr().out


@pytest.mark.parametrize("decl,words", [
    ("process p { preemptible { skip; } }", "no thread"),
    ("interrupt p on cpu 0 { preemptible { skip; } }", "no thread"),
    ("preemptible process p on cpu 0 { preemptible { skip; } }", "already preemptible everywhere"),
    ("process p on cpu 0 { atomic { preemptible { skip; } } }", "not allowed inside `atomic`"),
])
def test_preemptible_region_errors_name_the_construct(decl, words):
    from checker.base.errors import SpecError
    with pytest.raises(SpecError) as e:
        compiled(f"model bad;\ncpus 1;\nvar x: bool = false;\n{decl}\n", "base")
    assert words in str(e.value)


# ---- issue 19: a request and kick while the vCPU is preempted (models/vcpu_preempted_kick.spec)

KICK = "models/vcpu_preempted_kick.spec"


def _kick_model() -> str:
    from pathlib import Path
    return (Path(__file__).resolve().parent.parent / KICK).read_text()


def test_vcpu_preempted_kick_kernel_design_holds_and_reaches_the_window():
    """The kernel's entry re-check: no property fails, and the kick does find the vCPU
    preempted (the reachable witness is a counterexample entry when reached)."""
    ex = explore(compiled(_kick_model(), "base"))
    assert ex.stats.complete
    got = set(ex.counterexamples)
    assert got == {"kick_while_preempted"}
    off = explore(compiled(_kick_model().replace("preemptions 1;", "preemptions 0;"), "base"))
    assert set(off.counterexamples) == set()  # without preemption the window is never reached


def test_vcpu_preempted_kick_early_check_loses_the_request():
    """Without the re-check the kick that skipped a vCPU outside guest mode is lost; the
    loss with the vCPU preempted during the kick needs its one preemption."""
    got = violated(_kick_model(), "early_check")
    assert {"request_seen_before_guest", "lost_while_preempted"} <= got
    off = explore(compiled(_kick_model().replace("preemptions 1;", "preemptions 0;"), "early_check"))
    assert "lost_while_preempted" not in off.counterexamples
    assert "request_seen_before_guest" in off.counterexamples


def test_vcpu_preempted_kick_shortest_traces(capsys):
    from checker.cli import main
    assert main([KICK, "--full"]) == 0
    out = capsys.readouterr().out
    assert "request_seen_before_guest  violated  violated  ok     12" in out
    assert "lost_while_preempted       violated  violated  ok     15" in out
    assert "preempt vcpu (sched_out)" in out
