"""Issue 20, "too much by default": `check` on a shipped model fits a few screens while
still showing each violation's race; an unexpected violation is shown in full, `--full`
shows everything, `--brief` no races. And the exports' remaining items (SARIF paths from
a subfolder, a lemma's JUnit message)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checker.cli import main
from checker.export.files import counterexamples, describe
from checker.export.text import format_run, race_diagram, race_runs
from shared_runs import checked

ROOT = Path(__file__).resolve().parent.parent
PI = ROOT / "models/pi_timer.spec"
SHIPPED = sorted((ROOT / "models").glob("*.spec"))
# lines of `check models/X.spec`: a few screens (pi_timer, 24 variants and 22 races, is the
# longest; within 100 columns its table puts each variant's name on a line of its own, and
# its runs, written with contexts, show what they left of the CPUs' state: 340 lines when
# it hand-encoded them)
BUDGET = 500


@functools.cache
def run(path: Path, *variants: str, expect: bool = True):
    return checked(path, progress=False, variants=variants, use_expectations=expect)


def table_rows(table: str) -> dict[str, list[str]]:
    """The summary table's rows per variant, whether each variant's name starts its first
    row or (a table that would be too wide) stands on a line of its own above its rows."""
    rows: dict[str, list[str]] = {}
    current = None
    for line in table.split("\n\n")[1].splitlines()[2:]:
        if line.startswith("    ") or not line.strip():  # a row's note, wrapped below it
            continue
        if not line.startswith(" ") and "  " not in line:  # `name` or `name (memory)`
            current = line.split()[0]
            rows[current] = []
        elif not line.startswith(" "):
            current = line.split()[0]
            rows[current] = [line[len(current):].strip()]
        else:
            rows[current].append(line.strip())
    return rows


def titles(out: str) -> list[str]:
    """The title of each expected violation in the default output (a title wraps with a
    four-space indent; its runs are indented and numbered)."""
    block = out[out.index("Counterexamples of expected violations (variant: property)"):].split("\n\n")[0]
    heads = []
    for line in block.splitlines()[1:]:
        if not line.startswith(" "):
            heads.append(line)
        elif heads and re.match(r"^    [a-z(]", line) and not re.match(r"^    loop \d", line):
            heads[-1] += " " + line.strip()
    return heads[1:] if heads and not re.match(r"^\S+: ", heads[0]) else heads


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_default_output_too_much(path):
    out = format_run(run(path))
    assert len(out.splitlines()) <= BUDGET, f"{path.name}: {len(out.splitlines())} lines"
    assert "Trace:" not in out  # every outcome is as expected: no numbered trace


def named(title: str) -> set[tuple[str, str]]:
    """(variant, property) of every violation a title names: `variant: kind P` and, in
    `(and ...)`, `Q` (same variant and kind), `kind Q` (same variant), `in W` (the same
    property in variant W) or `W/kind Q`."""
    head = re.match(r"^(\S+): (?:\w+ )?(\w+)(?: \(and ([^)]*)\))?:", title)
    variant, prop = head.group(1), head.group(2)
    out = {(variant, prop)}
    for other in (head.group(3) or "").split(", ") if head.group(3) else ():
        if other.startswith("in "):
            out.add((other[3:], prop))
        elif "/" in other:
            w, d = other.split("/")
            out.add((w, d.split()[-1]))
        else:
            out.add((variant, other.split()[-1]))
    return out


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_every_expected_violation_named_with_its_race():
    result = run(PI)
    out = format_run(result)
    heads = titles(out)
    assert len(heads) == 22  # 30 expected violations, eight of them the race of another
    names = [n for t in heads for n in named(t)]
    assert sorted(names) == sorted((v.variant, cx.property) for v, cx in counterexamples(result))
    for v, cx in counterexamples(result):
        if any(t.startswith(f"{v.variant}: {describe(cx)}") for t in heads):  # its race, one line per run
            assert race_runs(cx.trace) in out
    assert "-+-" not in out and "Trace:" not in out  # those are for unexpected violations and --full


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_same_race_under_one_title():
    heads = titles(format_run(run(PI)))
    assert "stale_expired_deadline: invariant no_early_timer_irq (and no_early_requested_irq): 39 steps" in heads
    assert "r4_mb_lkmm: invariant no_early_timer_irq (and no_early_requested_irq): 43 steps" in heads
    assert "no_kick_hlt_exits: liveness timer_wakes_vcpu (and in unpinned_no_kick): 39 steps, the last one a " \
           "loop back to step 39, repeated for ever" in heads


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_the_table_and_the_titles_count_steps_alike():
    """The table's step count is the title's (issue 32: 32 steps in the table, "31 steps,
    then a 1-step loop" in the title)."""
    out = format_run(run(PI))
    table = out.split("\n\n")[1] + "\n"
    heads = titles(out)
    assert len(heads) > 10
    for title in heads:
        variant, prop, n = re.match(r"^(\S+): (?:\w+ )?(\w+)(?: \([^)]*\))?: (\d+) steps", title).groups()
        block = re.search(rf"^{variant}(?: \(\w+\))?\n.*\n((?:    .*\n)*)", table, re.M)
        assert f" {prop} ({n})" in " ".join(block.group(1).split()), title


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_unexpected_violation_in_both_forms():
    result = run(PI, "base", "stale_expired_deadline", expect=False)
    out = format_run(result)
    cxs = counterexamples(result)
    assert len(cxs) == 4 and out.count("Trace:") == 4
    for _, cx in cxs:
        assert race_diagram(cx.trace) in out
    assert "UNEXPECTED" in out


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_long_table_folds_what_is_as_expected():
    result = run(PI, "base", "hlt_exits", "stale_expired_deadline", "no_kick_hlt_exits", expect=False)
    table = format_run(result, show_traces=False)
    rows = table_rows(table)
    assert re.search(r"^9 properties\s+all hold\s+as expected\s+ok", rows["base"][0])
    # a variant with an unexpected outcome keeps one row per property
    assert len(rows["stale_expired_deadline"]) == 9
    assert any(re.search(r"^no_early_timer_irq\s+violated\s+holds\s+UNEXPECTED", r)
               for r in rows["stale_expired_deadline"])
    def rows_of(text):
        return [line for line in text.splitlines() if re.search(r"\btimer_wakes_vcpu\s+(holds|violated)", line)]

    assert len(rows_of(table)) == 2  # stale_expired_deadline's and no_kick_hlt_exits' (violated, unexpected)
    assert len(rows_of(format_run(result, show_traces=False, full=True))) == 4


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_folded_row_names_expected_violations():
    table = format_run(run(PI), show_traces=False)
    assert "\nunpinned_no_kick (sc)\n" in table  # too wide for 100 columns: the name above its row
    (row,) = table_rows(table)["unpinned_no_kick"]
    assert row.split()[:5] == ["9", "properties", "7", "hold,", "2"]
    below = table.split("\nunpinned_no_kick (sc)\n")[1].splitlines()[1]
    assert below == "    violated: timer_wakes_vcpu (39), deadlock (39)"


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_full_shows_every_row_and_trace():
    result = run(PI)
    full = format_run(result, full=True)
    assert full.count("Trace:") == len(counterexamples(result)) > 20
    assert len([line for line in full.splitlines() if re.match(r"^\S*\s+(sc|tso)?\s*timer_wakes_vcpu\s", line)
                or re.match(r"^\s+timer_wakes_vcpu\s", line)]) == len(result.variants)


def test_brief_prints_no_race(capsys):
    assert main([str(ROOT / "models/vcpu_requests.spec"), "--brief"]) == 0
    out = capsys.readouterr().out
    assert "Counterexample" not in out and "request_not_stranded" in out


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_footer_counts_what_every_variant_says():
    out = format_run(run(PI))
    said = " ".join(out.split())
    assert "states expanded with an ample set: " in said and "in 20 variants (--full: per variant)" in said
    live = [line for line in re.split(r"\n(?! )", out) if line.startswith("liveness verdicts assume")]
    assert len(live) == 3 and all(re.search(r": \d+ hold, \d+ violated \(--full", " ".join(line.split()))
                                  for line in live)
    assert "base/timer_wakes_vcpu: holds" in format_run(run(PI), full=True)


def test_run_lines_show_what_a_run_left_changed(tmp_path, capsys):
    p = tmp_path / "m.spec"
    p.write_text("model m;\nvar x: 0..1 = 0;\nvar y: 0..1 = 0;\nvar z: 0..1 = 0;\n"
                 "process p { x = 1; x = 0; y = 1; }\nprocess q { await y == 1; z = 1; }\n"
                 "invariant no_z: z == 0;\nexpect violated no_z;\n")
    assert main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "  1-3 p line 5 -> y=1\n" in out  # x was put back: not a change the run left
    assert "  4-5 q line 6 -> z=1\n" in out
    assert "violating state: z = 1" in out


def test_readme_default_race_block(tmp_path, monkeypatch, capsys):
    readme = (ROOT / "README.md").read_text()
    spec = readme[readme.index("model lost_update;"):]
    spec = spec[:spec.index("```")]
    block = readme[readme.index("By default, as the expected violation"):]
    block = block[block.index("```\n") + 4:]
    block = block[:block.index("```")]
    (tmp_path / "lost_update.spec").write_text(spec)
    monkeypatch.chdir(tmp_path)
    assert main(["lost_update.spec"]) == 0
    assert block in capsys.readouterr().out


def test_sarif_uri_relative_to_a_subfolder(tmp_path, monkeypatch):
    """From a folder below the repository, a relative spec path was written as is: code
    scanning resolves it against the root (SRCROOT) and finds no file."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "models").mkdir()
    (tmp_path / "models/m.spec").write_text("model m;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n"
                                            "invariant zero: x == 0;\n")
    monkeypatch.chdir(tmp_path / "models")
    assert main(["m.spec", "--brief", "--sarif", str(tmp_path / "out.sarif")]) == 1
    doc = json.loads((tmp_path / "out.sarif").read_text())
    where = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert where == {"uri": "models/m.spec", "uriBaseId": "SRCROOT"}


@pytest.mark.xdist_group("hv_timer_advance")  # reads hv_timer_advance's shared search (shared_runs)
def test_junit_lemma_message_counts_no_steps(tmp_path):
    """A lemma has no trace: its one-line message said `0 steps`."""
    from checker.export.junit import write_junit

    result = run(ROOT / "models/hv_timer_advance.spec", "unguarded", expect=False)
    out = tmp_path / "j.xml"
    write_junit(result, str(out))
    fails = {case.get("name"): case.find("failure") for case in ET.parse(out).iter("testcase")}
    lemma = fails["expiry_not_after_deadline"].get("message")
    assert "is false for" in lemma and "steps" not in lemma and "\n" not in lemma
    assert fails["no_sw_fallback"].get("message").endswith("(expected: holds; 3 steps)")


def test_brief_does_not_point_at_a_trace_it_left_out(tmp_path, capsys):
    """With --brief no trace is printed, so the footer of a model error cannot say "see
    the trace above": it says how to get the trace."""
    spec = tmp_path / "me.spec"
    spec.write_text("model m;\nvar x: 0..3 = 0;\nprocess p { x = x + 1; x = x + 1; x = x + 1; x = x + 1; }\n")
    main([str(spec), "--brief"])
    brief = capsys.readouterr().out
    assert "model error in base: run without --brief for its trace" in brief and "Trace:" not in brief
    main([str(spec)])
    full = capsys.readouterr().out
    assert "model error in base: see the trace above" in full and "Trace:" in full
