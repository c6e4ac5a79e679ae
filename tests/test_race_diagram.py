"""The text race diagram: one column per process that moves, readable at 100 columns
with up to four processes, long statements wrapped rather than cut."""

from __future__ import annotations

import dataclasses
import re

from checker.export.text import race_diagram, wrap_cell
from checker.results.trace import Action, Trace, TraceState


def _trace(procs: list[str], texts: list[tuple[str, str]]) -> Trace:
    s0 = TraceState((("x", 0),), tuple((p, "line1") for p in procs))
    acts = tuple(Action(p, None, t, "line1", "line2", (("x", 1),)) for p, t in texts)
    return Trace((s0,) * (len(acts) + 1), acts)


LONG = ("if (kvm_apic_hw_enabled(apic) && lapic_timer_int_injected(vcpu) && "
        "apic->lapic_timer.expired_tscdeadline != 0 && READ_ONCE(vcpu->mode) == IN_GUEST_MODE)")


def test_four_processes_fit_in_100_columns_and_long_statements_wrap():
    procs = ["vcpu[0]", "vcpu[1]", "hrtimer", "kick_worker"]
    t = _trace(procs, [(p, LONG) for p in procs])
    text = race_diagram(t, 100)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert all(p in lines[0] for p in procs)
    first_column = [line[2:].split(" | ")[0].strip() for line in lines[2:]]
    statement = [c for c in first_column if c and not c.startswith("->")]
    assert "".join(statement).replace(" ", "") == LONG.replace(" ", "")  # wrapped, nothing cut off
    assert "..." not in text
    assert "lapic_timer_int_" in statement or "lapic_timer_int_injected(vcpu)" in " ".join(statement)


def test_words_are_not_broken_when_a_space_will_do():
    assert wrap_cell("prepare_to_wait(wq); schedule();", 22) == ["prepare_to_wait(wq);", "schedule();"]
    assert wrap_cell("sleeper.state=INTERRUPTIBLE", 16) == ["sleeper.state=", "INTERRUPTIBLE"]
    assert wrap_cell("abcdefghijklmnopqrstuvwxyz", 10) == ["abcdefghij", "klmnopqrst", "uvwxyz"]
    assert wrap_cell("x=1, y=2", 20, first="  -> ", rest="     ") == ["  -> x=1, y=2"]
    assert all(len(line) <= 12 for line in wrap_cell(LONG, 12, rest="  "))


def test_only_processes_that_move_get_a_column():
    t = _trace(["a", "b", "c"], [("a", "x = 1;"), ("c", "x = 2;")])
    text = race_diagram(t, 100)
    assert text.splitlines()[0].split() == ["a", "|", "c"]
    assert text.splitlines()[-1].strip() == "(no step taken by: b)"


def test_a_failing_step_and_a_loop_are_marked():
    t = _trace(["a"], [("a", "x = 1;"), ("a", "x = 2;")])
    fail = Action("a", None, "assert ok: x == 1;", "line2", "line2", (), "failed")
    text = race_diagram(dataclasses.replace(t, failure=fail))
    assert text.splitlines()[-1].strip() == "** FAILS **"
    text = race_diagram(dataclasses.replace(t, loop_start=1))
    assert "~~~ loop: the steps below repeat forever ~~~" in text and "~~~ back to step 2 ~~~" in text


def test_more_than_four_processes_on_cpus_get_a_column_per_cpu():
    """A model with execution contexts moves a thread, its guest, handlers, expiries and
    IPIs in flight: one column per CPU then, as kernel commit messages draw races, each
    step named by its process, the actors on no CPU in `other`."""
    procs = ["vcpu", "os", "apic_timer", "posted_intr", "clock", "apic_timer_expiry"]
    cpus = {"vcpu": 0, "os": 0, "posted_intr": 0, "apic_timer": 1, "clock": None, "apic_timer_expiry": None}
    s0 = TraceState((("x", 0),), tuple((p, "line1") for p in procs))
    acts = tuple(Action(p, None, "f();", "line1", "line2", (("x", 1),), cpu=cpus[p]) for p in procs)
    text = race_diagram(Trace((s0,) * (len(acts) + 1), acts), 80)
    lines = text.splitlines()
    assert lines[0].split() == ["CPU", "0", "|", "CPU", "1", "|", "other"]
    assert max(len(line) for line in lines) <= 80
    cells = {}  # step -> (column, text)
    for line in lines[2:]:
        head, _, rest = line.partition(" ")
        if head.isdigit():
            cols = [c.strip() for c in re.split(r" \|(?: |$)", rest)]
            cells[int(head)] = next((k, c) for k, c in enumerate(cols) if c)
    assert cells == {1: (0, "vcpu: f();"), 2: (0, "os: f();"), 3: (1, "apic_timer: f();"),
                     4: (0, "posted_intr: f();"), 5: (2, "clock: f();"), 6: (2, "apic_timer_expiry: f();")}
    # four processes keep a column each, and without CPUs so do more
    assert "CPU 0" not in race_diagram(Trace((s0,) * 5, acts[:4]), 100)
    no_cpus = tuple(dataclasses.replace(a, cpu=None) for a in acts)
    assert race_diagram(Trace((s0,) * 7, no_cpus), 200).splitlines()[0].split(" | ")[0].strip() == "vcpu"
