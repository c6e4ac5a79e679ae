"""The Markdown review report: model and header, the variant x property matrix, each
violation as a race diagram and a Mermaid diagram, the assumptions, the statistics and
the command that reproduces the run."""

from __future__ import annotations

import re

from checker.export.text import race_lines
from helpers import ALL_FLAGS, run_check


def test_the_report_holds_what_a_reviewer_needs(exported):
    folder, _, result = exported["wakeup"]
    md = (folder / "out/wakeup.md").read_text()
    assert md.startswith("# timerace review: model `wakeup`\n")
    assert "A sleeper and a waker on one wait queue." in md  # the header comment
    assert "| variant | `assertions` | `deadlock` |" in md
    assert "| `nocheck` | holds (as expected) | violated (as expected) |" in md
    assert "- **Memory model**: sequential consistency." in md
    assert "- **Variant `nocheck`** changes: `CHECK = false`." in md
    assert "| `nocheck` | explicit | 13 | 14 | 8 | yes |" in md
    cx = result.variants[1].model_error or next(o.counterexample for o in result.variants[1].outcomes
                                                if o.counterexample)
    # an expected violation folds to its race, one line per step (issue 20); its whole trace is a side file
    assert "```text\n" + race_lines(cx.trace) + "\n```" in md
    assert (folder / "out/wakeup.traces").is_dir()
    command = "check models/wakeup.spec " + " ".join(f.format(m="wakeup") for f in ALL_FLAGS)
    assert f"- **Reproduce**: `{command}`" in md
    assert md.rstrip().endswith("```sh\n" + command + "\n```")
    assert "seconds" not in md


def test_unexpected_outcomes_stand_out(exported):
    md = (exported["four"][0] / "out/four.md").read_text()
    assert "**2 outcome(s) differ from expectations**: `base`/`seen`, `base`/`deadlock`" in md
    assert "| `base` | holds (as expected) | **violated: UNEXPECTED** (expected holds) |" in md
    assert len(re.findall(r"^<details open><summary>", md, re.M)) == 2  # unexpected ones unfolded (issue 20)


def test_a_model_error_and_incomplete_verdicts_are_named(exported):
    md = (exported["overflow"][0] / "out/overflow.md").read_text()
    assert "**model error** in `base`" in md and "1 verdict(s) incomplete (not verified)" in md
    assert "the search was cut short (model error); properties without a counterexample are **not verified**" in md


def test_fairness_is_stated_for_liveness(exported):
    md = (exported["spin-lasso"][0] / "out/spin.md").read_text()
    assert "- **Fairness** (liveness verdicts rest on it): weak fairness for spinner, setter." in md
    assert "then a loop back to state 0 that repeats forever" in md


def test_timing_only_when_asked(tmp_path):
    run_check(tmp_path, "counter", "--report", "r.md", "--with-timing")
    assert "| variant | engine | states | transitions | depth | complete | seconds |" in (tmp_path / "r.md").read_text()
