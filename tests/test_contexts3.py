"""Issue 27: the defects the fuzzer found in execution contexts (a notifier that blocks,
a loop inside one step that never ends) and the context state properties read."""

from __future__ import annotations

import pytest

from agreement import compiled
from checker.base.errors import SpecError
from checker.cli import main
from checker.engines.explicit import explore

NOTIFIER = """model m;
cpus 2;
var x: 0..1 = 0;
waitqueue wq;
preemptible process worker on cpu 0 {
  on sched_in { CALL }
  x = 1;
}
"""


@pytest.mark.parametrize("call, col, words", [
    ("schedule();", 17, "calls 'schedule', which blocks"),
    ("prepare_to_wait(wq);", 17, "calls 'prepare_to_wait', which changes the task's wait state"),
    ("finish_wait(wq);", 17, "calls 'finish_wait', which changes the task's wait state"),
    ("if (x == 0) { schedule(); }", 31, "calls 'schedule', which blocks"),
])
@pytest.mark.parametrize("hook", ["sched_in", "sched_out"])
def test_a_notifier_cannot_block_or_wait(tmp_path, capsys, call, col, words, hook):
    """Was a `no lowering` TypeError (schedule) or a KeyError (the task slot) traceback."""
    spec = tmp_path / "m.spec"
    spec.write_text(NOTIFIER.replace("CALL", call).replace("sched_in", hook))
    assert main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"m.spec:6:{col + len(hook) - len('sched_in')}: error:" in err
    assert words in err and "Traceback" not in err


def test_a_notifier_may_still_wake_a_task():
    text = NOTIFIER.replace("CALL", "wake_up(wq);")
    assert explore(compiled(text)).stats.complete


HANG = """model m;
var x: 0..1 = 0;
process p { atomic { while (x == 0) { skip; } } }
"""

NOTIFIER_HANG = NOTIFIER.replace("CALL", "while (x == 0) { skip; }")


@pytest.mark.parametrize("text, where", [(HANG, "line 3, col 29"), (NOTIFIER_HANG, "line 6, col 24")])
def test_a_loop_that_never_ends_inside_one_step_is_a_model_error_at_the_loop(text, where):
    """Was a search that never ended: the step function looped for ever."""
    ex = explore(compiled(text), workers=1)
    assert ex.model_error is not None
    assert f"the loop whose `while` condition is at {where} comes back to a state it was in: it never ends" in ex.model_error.message
    assert not ex.stats.complete


def test_a_loop_inside_one_step_that_ends_is_no_error():
    text = """model m;
var x: 0..7 = 0;
var done: bool = false;
process p { atomic { while (x < 7) { x = x + 1; } done = true; } }
final counted: x == 7 && done;
"""
    ex = explore(compiled(text), workers=1)
    assert ex.model_error is None and ex.stats.complete and not ex.counterexamples


def test_a_loop_that_never_ends_is_reported_by_the_command_line(tmp_path, capsys):
    spec = tmp_path / "m.spec"
    spec.write_text(HANG)
    assert main([str(spec), "--workers", "1"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # the message wraps
    assert "(model error)" in out and "it never ends" in out
