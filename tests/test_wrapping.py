"""Issue 32, wrapping and footers: the first command's output fits its width in a pipe
(100 columns) and at COLUMNS=80, default and --full; what a fold leaves out is never a
violating state's operand; notes are said once; `check: wrote N files` fits too."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from checker.cli import main, wrote_line
from checker.export.files import counterexamples
from checker.export.text import format_run
from shared_runs import checked

ROOT = Path(__file__).resolve().parent.parent
PI = ROOT / "models" / "pi_timer.spec"
pytestmark = pytest.mark.xdist_group("pi_timer")  # most tests here read pi_timer's shared search (shared_runs)


def pi():
    return checked(PI, progress=False)


def widest(text: str) -> tuple[int, str]:
    return max((len(line), line) for line in text.splitlines())


@pytest.mark.parametrize("width", [100, 80])
@pytest.mark.parametrize("full", [False, True], ids=["default", "full"])
def test_no_line_is_wider_than_the_width(width, full):
    out = format_run(pi(), width=width, full=full)
    n, line = widest(out)
    assert n <= width, f"{n} columns: {line}"


def test_a_pipe_is_100_columns_and_columns_80_is_80(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the file names printed are as given, and not as long as a temp folder's
    spec = tmp_path / "m.spec"
    spec.write_text((ROOT / "models" / "vcpu_requests.spec").read_text())
    for columns, width in ((None, 100), ("80", 80)):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(["m.spec", "--full", "--itf", "itf", "--mermaid", "mm"])  # relative: a path is never broken
        assert widest(out.getvalue())[0] <= width
        assert widest(err.getvalue())[0] <= width and "check: wrote" in err.getvalue()
    assert widest(out.getvalue())[0] > 70, "the 80-column run used its width"


def test_wrote_names_few_files_and_counts_a_folder_of_many():
    written = ["out/r.json", "out/r.md"] + [f"out/itf/pi_timer.v{i}.p.itf.json" for i in range(60)]
    line = wrote_line(written, 100)
    assert line == "check: wrote 62 files: out/r.json, out/r.md, out/itf/ (60 files)"
    assert wrote_line(written[:3], 100) == "check: wrote 3 files: " + ", ".join(written[:3])
    assert all(len(x) <= 60 for x in wrote_line(written[:3], 60).splitlines())


def test_folds_keep_every_operand_of_the_violating_state():
    """Each expected violation's fold ends with the violating state, every operand and
    its value whole (issue 32: `ipi = false` was cut to `..`)."""
    for width in (100, 80):
        out = format_run(pi(), width=width)
        flat = " ".join(out.split())
        for _, cx in counterexamples(pi()):
            for k, v in cx.violation:
                if not k.endswith("@"):
                    assert f"{k} = {v}" in flat, (cx.property, k, width)
        assert not re.search(r"violating state:.*\.\.$", out, re.M)


def test_notes_are_said_once():
    full = format_run(pi(), full=True)
    flat = " ".join(full.split())
    statements = {v.lkmm_left_out for v in pi().variants if v.memory == "lkmm"}
    # the LKMM statement once per distinct statement of the variants, not per liveness line
    assert flat.count("not explored, and possible in this model: load buffering") == len(statements) > 1
    assert flat.count("eb5cc113dd2f") == 1  # the LKMM's name, once
    assert flat.count("a store waited for a full history") == 1  # one note names every lkmm variant
    assert re.search(r"in base_lkmm \([\d,]+ states\), r4_mb_lkmm \([\d,]+ states\)", flat)
    line = flat[flat.index("r4_mb_lkmm/timer_wakes_vcpu: holds;"):].split(" no_entry_mb_lkmm/")[0]
    assert line.endswith("holds for the LKMM outcomes this semantics explores (the LKMM note says what it "
                         "leaves out)")  # a liveness line names the caveat the footer says once


def test_a_tso_fold_reads_in_order():
    """A run that buffers two stores to `mode` names both, oldest first, so that the
    flush of the older one that follows reads in order. (The hand-encoded pi_timer's
    race has such a run; in the shipped model's the first store is flushed before the VM
    entry, and the second buffered after the exit.)"""
    out = format_run(checked(ROOT / "tests" / "twins" / "pi_timer_hand.spec", progress=False,
                             variants=("no_entry_mb_tso",)))
    block = out[out.index("no_entry_mb_tso: liveness timer_wakes_vcpu"):]
    flat = " ".join(block.split())
    assert "-> mode=IN_GUEST_MODE, mode=OUTSIDE_GUEST_MODE (buffered)" in flat
    assert flat.index("mode=OUTSIDE_GUEST_MODE (buffered)") < flat.index("flush vcpu: mode = IN_GUEST_MODE")


def test_an_lkmm_fold_puts_stale_reads_after_the_new_values():
    out = format_run(pi())
    block = " ".join(out[out.index("base_lkmm: liveness timer_wakes_vcpu"):].split())
    assert "-> mode=IN_GUEST_MODE, guest_mode=[true, false]; cpu1 still reads mode=OUTSIDE_GUEST_MODE" in block
