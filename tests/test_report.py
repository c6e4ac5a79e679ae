"""The Markdown review report: model and header, the variant x property matrix, each
violation as a race diagram and a Mermaid diagram, the assumptions, the statistics and
the command that reproduces the run."""

from __future__ import annotations

import re

import pytest

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
    assert "2 steps, the last 2 a loop back to step 1, repeated for ever" in md


def test_timing_only_when_asked(tmp_path):
    run_check(tmp_path, "counter", "--report", "r.md", "--with-timing")
    assert "| variant | engine | states | transitions | depth | complete | seconds |" in (tmp_path / "r.md").read_text()


# ---- issue 32: a report that stands alone in a pull request -------------------------


def _pi(**options):
    from pathlib import Path

    from shared_runs import checked

    return checked(Path(__file__).resolve().parent.parent / "models" / "pi_timer.spec", progress=False, **options)


def test_the_whole_trace_is_in_the_report_while_it_fits(exported):
    """A PR comment cannot reach `OUT.traces/`: a small run's whole traces are in
    collapsed blocks, each exactly the side file's text."""
    folder, _, _ = exported["counter"]
    md = (folder / "out/counter.md").read_text()
    for side in sorted((folder / "out/counter.traces").iterdir()):
        whole = side.read_text().rstrip("\n")
        assert f"<details><summary>Whole trace (numbered steps and race diagram)</summary>\n\n```text\n{whole}\n```" in md
    assert "](counter.traces/" not in md


def test_trace_url_links_instead_of_embedding(tmp_path):
    rc, _, err = run_check(tmp_path, "counter", "--report", "r.md", "--trace-url", "https://ci.example/run/7/traces/")
    assert rc == 0, err
    md = (tmp_path / "r.md").read_text()
    assert "](https://ci.example/run/7/traces/counter.base.both_counted.txt)" in md
    assert "Whole trace (numbered steps and race diagram)</summary>" not in md
    with pytest.raises(SystemExit) as e:  # the parser's error: --trace-url needs --report
        run_check(tmp_path, "counter", "--trace-url", "https://ci.example/")
    assert e.value.code == 2


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_identical_traces_are_shown_once():
    from checker.export.markdown import review_report

    md = review_report(_pi(variants=("no_kick_hlt_exits", "unpinned_no_kick")), traces="r.traces")
    block = md.split("<code>unpinned_no_kick</code>: liveness `timer_wakes_vcpu`")[1].split("</details>")[0]
    assert "The same steps as `no_kick_hlt_exits`: liveness timer_wakes_vcpu above." in block
    assert "```text" not in block.split("Whole trace")[0]  # no race of its own


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_unexpected_violations_get_race_diagrams_and_the_report_says_when_not():
    from checker.export.markdown import COMMENT_LIMIT, review_report

    few = review_report(_pi(variants=("no_kick_hlt_exits", "post_any_mode"), use_expectations=False))
    assert few.count("Race diagram (one column per ") == 2
    # no_kick_hlt_exits' race moves more than four processes: a column per CPU
    assert few.count("Race diagram (one column per CPU, time going down):") == 1
    assert few.count("```mermaid") == 2
    many = review_report(_pi(use_expectations=False), traces="r.traces")
    assert len(many) < COMMENT_LIMIT
    n = len(re.findall(r"\*\*UNEXPECTED\*\*", many))
    diagrams = many.count("Race diagram (one column per ")
    same = many.count("The same steps as ")
    if diagrams + same < n:
        assert "unexpected violation(s) show their race one line per run instead of as a race diagram" in many


def test_dot_edges_say_what_a_step_decided(exported):
    folder, _, _ = exported["four"]
    dot = (folder / "out/dot/four.base.seen.dot").read_text()
    assert "=> taken: cmpxchg(mode) returned IN_GUEST_MODE, as expected:\\l   stored EXITING_GUEST_MODE" in dot


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_a_long_mermaid_title_is_not_clipped():
    from checker.export.files import counterexamples
    from checker.export.mermaid import diagram_for

    result = _pi(variants=("post_any_mode_timer_fn_hlt_exits_no_p3_kick",))
    v, cx = counterexamples(result)[0]
    text = diagram_for(result, v.variant, cx)
    title = text.splitlines()[1]
    assert title == "    title liveness timer_wakes_vcpu"
    note = next(line for line in text.splitlines() if "Note over" in line)  # the first note wraps it whole
    assert "pi_timer: variant<br/>post_any_mode_timer_fn_hlt_exits_no_p3_kick,<br/>liveness timer_wakes_vcpu" in note
