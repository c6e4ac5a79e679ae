"""Replay: a saved trace re-run against the same, an edited or a fixed model says
whether it still reaches the violation, or at which step and why it no longer applies."""

from __future__ import annotations

import json
import re

import pytest

from checker.engines.replay import replay
from checker.pipeline import Options, compile_variant, load, load_trace
from checker.results.trace import ReplayStatus
from helpers import lasso_counterexample, MODELS, run_check


@pytest.fixture
def saved(tmp_path):
    """counter.spec's lost-update trace as ITF and as a JSON result file."""
    rc, _, _ = run_check(tmp_path, "counter", "--itf", "itf", "--json", "run.json")
    assert rc == 0
    return tmp_path


def test_the_trace_reproduces_on_the_model_it_came_from(saved):
    rc, out, _ = run_check(saved, "counter", "--replay", "itf/counter.base.both_counted.itf.json")
    assert rc == 0, out  # the base variant expects this violation
    assert "invariant both_counted is still violated in the last state" in out
    assert "Result: the violation still reproduces (as expected" in out
    assert out.count("[ok]") == 4
    rc, out, _ = run_check(saved, "counter", "--replay", "run.json", "--no-expect")
    assert rc == 1 and "unexpected: the race is still there" in out


def test_the_fixed_variant_diverges_and_says_where_and_why(saved):
    rc, out, _ = run_check(saved, "counter", "--replay", "itf/counter.base.both_counted.itf.json",
                           "--variant", "atomic_inc")
    assert rc == 0
    # `r = x;` is no step of this variant (ATOMIC folds it away): its line is the recorded one, said so
    assert ("step 1: inc[0] (line 10 when recorded) `r = x;`: no enabled step of inc[0] leads to the recorded "
            "state; here inc[0] can only run `atomic { x = x + 1; }` (line 8), which changes x = 1") \
        in " ".join(out.split())
    assert "1. inc[0] was line 10 r = x; [DIVERGES]" in " ".join(out.split())
    assert "[DIVERGES]" in out and "this trace no longer applies (from step 1 on)" in " ".join(out.split())


def test_an_edited_model_with_an_extra_barrier_still_reproduces(saved):
    spec = (saved / "models/counter.spec").read_text()
    edited = spec.replace("    r = x;\n", "    r = x;\n    smp_mb();\n").replace("model counter;", "// edited\nmodel counter;")
    assert edited != spec
    (saved / "models/counter.spec").write_text(edited)
    rc, out, _ = run_check(saved, "counter", "--replay", "run.json", "--no-expect")
    assert rc == 1, out
    assert "1 extra step of inc[0] first: `smp_mb();`" in out
    assert "[ok, changed]" in out


def test_an_edited_file_shows_its_own_lines_not_the_recorded_ones(saved):
    """Three comment lines above the model move every statement down by 3: the replay
    matches the steps by what they are and prints where they are written now."""
    spec = (saved / "models/counter.spec").read_text()
    (saved / "models/counter.spec").write_text("// a\n// b\n// c\n" + spec)
    rc, out, _ = run_check(saved, "counter", "--replay", "run.json")
    assert rc == 0, out
    rows = [" ".join(line.split()) for line in out.splitlines() if "[ok]" in line]
    assert rows == ["1. inc[0] line 13 r = x; [ok]", "2. inc[1] line 13 r = x; [ok]",
                    "3. inc[0] line 14 x = r + 1; [ok]", "4. inc[1] line 14 x = r + 1; [ok]"]
    # and a divergence names the edited file's line too
    edit(saved, "    x = r + 1;\n", "    await x == r;\n    x = r + 1;\n")
    rc, out, _ = run_check(saved, "counter", "--replay", "run.json")
    text = " ".join(out.split())
    assert "step 4: inc[1] at line 15 `x = r + 1;`" in text, out


def test_a_variable_the_model_no_longer_has_fails_the_replay(saved):
    """A rename of `x` is no fix: the replay refuses, instead of comparing less."""
    spec = (saved / "models/counter.spec").read_text()
    (saved / "models/counter.spec").write_text(re.sub(r"\bx\b", "count", spec))
    rc, out, err = run_check(saved, "counter", "--replay", "run.json")
    assert rc == 2 and "reproduces" not in out, out
    assert "the trace sets `x`, which this model does not declare (step 3, inc[0] `x = r + 1;`)" in err
    assert "hint: a renamed variable?" in err and "Traceback" not in err


def edit(saved, old: str, new: str) -> None:
    """The saved folder's counter.spec with `old` replaced by `new` (which must be there)."""
    path = saved / "models/counter.spec"
    spec = path.read_text()
    assert old in spec
    path.write_text(spec.replace(old, new))


def test_a_variable_only_the_model_has_is_noted(saved):
    edit(saved, "var x: 0..2 = 0;", "var x: 0..2 = 0;\nvar ipi: bool;")
    rc, out, _ = run_check(saved, "counter", "--replay", "run.json")
    assert rc == 0 and "note: new in this model, free to take any value: ipi" in out


def test_a_json_with_several_traces_needs_no_pick_when_the_variant_leaves_one(tmp_path):
    (tmp_path / "models").mkdir()
    spec = (MODELS / "counter.spec").read_text() + "variant again { ATOMIC = false; }\n  expect violated both_counted;\n"
    (tmp_path / "models/counter.spec").write_text(spec)
    run_check(tmp_path, "counter", "--json", "run.json")
    rc, _, err = run_check(tmp_path, "counter", "--replay", "run.json")
    assert rc == 2 and "has 2 counterexamples" in err and "base/both_counted, again/both_counted" in err
    rc, out, err = run_check(tmp_path, "counter", "--replay", "run.json", "--variant", "again")
    assert rc == 0, err
    assert "recorded on variant again" in out and "variant again" in out and "still reproduces" in out


def test_a_patch_that_rereads_the_counter_closes_the_race(saved):
    edit(saved, "    x = r + 1;\n", "    atomic { r = x; x = r + 1; }\n")
    rc, out, _ = run_check(saved, "counter", "--replay", "run.json", "--no-expect")
    assert rc == 0, out
    text = " ".join(out.split())
    assert ("step 4: inc[1] (line 11 when recorded) `x = r + 1;`: no enabled step of inc[1] leads to the "
            "recorded state; "
            "here inc[1] can only run `atomic { r = x; x = r + 1; }` (line 11), which changes x = 2") in text
    assert "3. inc[0] line 11 x = r + 1; [ok, changed] now `atomic { r = x; x = r + 1; }` (line 11)" in text


def test_a_changed_initial_state_diverges_at_step_0(saved):
    edit(saved, "var x: 0..2 = 0;", "var x: 0..2 = 1;")
    rc, out, _ = run_check(saved, "counter", "--replay", "run.json")
    assert rc == 0 and "the initial state differs: x is 0 in the trace, 1 here" in out


def test_an_assert_a_deadlock_and_a_model_error_are_rechecked(tmp_path):
    for model, pick, variant, still in (("four", "base/seen", "base", "assert seen still fails"),
                                        ("four", "base/deadlock", "base", "is still a deadlock"),
                                        ("overflow", None, "base", "the model error recurs"),
                                        ("wakeup", None, "nocheck", "is still a deadlock")):
        run_check(tmp_path, model, "--json", f"{model}.json")
        args = ["--replay", f"{model}.json", "--variant", variant] + (["--replay-pick", pick] if pick else [])
        rc, out, err = run_check(tmp_path, model, *args)
        assert still in " ".join(out.split()), (model, out, err)
    rc, out, _ = run_check(tmp_path, "wakeup", "--replay", "wakeup.json")  # the fixed base design
    assert rc == 0 and "the last state is no deadlock any more: sleeper can run `if (!cond)`" in out


def test_a_lasso_must_close_and_be_fair():
    spec = load(str(MODELS / "spin.spec"))
    cx = lasso_counterexample()
    base = replay(compile_variant(spec, "base", Options()), cx, "t", "base", False)
    assert base.reproduced, base.reason
    assert "the loop closes and finishes's goal never holds in it" in base.reason
    go = replay(compile_variant(spec, "go", Options()), cx, "t", "base", False)
    assert not go.reproduced
    assert "not fair: setter can always move and never does" in go.reason
    assert all(s.status is ReplayStatus.OK for s in go.steps)


def test_a_file_with_several_counterexamples_needs_a_pick(tmp_path):
    run_check(tmp_path, "four", "--json", "four.json")
    rc, out, err = run_check(tmp_path, "four", "--replay", "four.json")
    assert rc == 2 and "has 2 counterexamples" in err and "--replay-pick VARIANT/PROPERTY: base/seen, base/deadlock" in err
    rc, _, err = run_check(tmp_path, "four", "--replay", "four.json", "--replay-pick", "nope")
    assert rc == 2 and "matching 'nope'" in err


@pytest.mark.parametrize("content, message", [("{", "is not JSON"), ("[1, 2]", "neither a `check --json` result"),
                                              ('{"vars": ["x"], "states": [{"x": 1}, {"x": 2}]}', "no `step`")])
def test_bad_trace_files_are_bad_input(tmp_path, content, message):
    (tmp_path / "t.json").write_text(content)
    rc, out, err = run_check(tmp_path, "counter", "--replay", "t.json")
    assert rc == 2 and message in err and "Traceback" not in err
    rc, _, err = run_check(tmp_path, "counter", "--replay", "missing.json")
    assert rc == 2 and "no such trace file" in err


def test_load_trace_reads_both_formats(saved):
    a = load_trace(str(saved / "itf/counter.base.both_counted.itf.json"))
    b = load_trace(str(saved / "run.json"))
    assert a[0] == b[0] == "base"
    assert a[1].trace.states == b[1].trace.states
    assert json.loads((saved / "run.json").read_text())["schema"] == "timerace-result"
