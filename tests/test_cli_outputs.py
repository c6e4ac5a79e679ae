"""The output flags on `check`: what they write, and usage errors as exit 2."""

from __future__ import annotations

import pytest

from helpers import TESTS, run_check


@pytest.mark.parametrize("flags, message", [
    (["--svg"], "--dot-graph and --svg need --dot DIR"),
    (["--dot-graph"], "--dot-graph and --svg need --dot DIR"),
    (["--replay", "t.json", "--json", "x.json"], "--replay re-runs one saved trace; it writes no output files"),
    (["--replay-pick", "base/x"], "--replay-pick needs --replay TRACE"),
    (["--graph-max-states", "0", "--dot", "d", "--dot-graph"], "expected a number >= 1"),
])
def test_usage_errors_exit_2(tmp_path, flags, message):
    with pytest.raises(SystemExit) as e:
        run_check(tmp_path, "counter", *flags)
    assert e.value.code == 2


def test_an_unwritable_output_is_bad_input_not_a_traceback(tmp_path):
    (tmp_path / "blocker").write_text("a file, not a folder")
    rc, out, err = run_check(tmp_path, "counter", "--report", "blocker/r.md")
    assert rc == 2 and "cannot write" in err and "Traceback" not in err


def test_every_flag_writes_its_files_and_says_so(tmp_path):
    rc, out, err = run_check(tmp_path, "four", "--itf", "o", "--mermaid", "o", "--dot", "o", "--report", "o/r.md",
                             "--sarif", "o/r.sarif", "--junit", "o/r.xml", "--json", "o/r.json")
    assert rc == 1  # four.spec has unexpected outcomes
    names = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert names == ["four.base.deadlock.dot", "four.base.deadlock.itf.json", "four.base.deadlock.mmd",
                     "four.base.seen.dot", "four.base.seen.itf.json", "four.base.seen.mmd",
                     "r.json", "r.md", "r.sarif", "r.traces", "r.xml"]  # r.traces: the report's whole traces
    # too long for 100 columns to name each: a folder of many files is counted (issue 32)
    assert err == ("check: wrote 12 files: o/ (10 files), o/r.traces/four.base.seen.txt,\n"
                   "  o/r.traces/four.base.deadlock.txt\n")


def test_json_to_stdout(tmp_path):
    rc, out, _ = run_check(tmp_path, "counter", "--json", "-", "--brief")
    assert '"schema": "timerace-result"' in out


def test_ci_runs_exactly_the_readme_test_command():
    readme = (TESTS.parent / "README.md").read_text().splitlines()
    ci = [line for line in (TESTS.parent / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#") and not line.startswith("set ") and not line.startswith("cd ")]
    commands = [line for line in readme if line.startswith("python3 -m venv")]
    assert len(commands) >= 2 and commands[1] in ci, (commands, ci)
