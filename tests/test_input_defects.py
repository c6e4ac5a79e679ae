"""Regression tests for the input defects of issue 32 item 6 (reproducers in the
robustness review, round 2): endless or oversized files, a folder named like a litmus
test, and the Python API taking what the command line refuses. Each must be bad input
(exit 2 or a SpecError) with a clear message, never a traceback or a hang."""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from checker import check_file, check_source
from checker.base.errors import SpecError
from checker.cli import main
from checker.pipeline import MAX_SPEC_CHARS, load_litmus, max_workers, read_for_display
from helpers import MODELS

COUNTER = str(MODELS / "counter.spec")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as e:  # a usage error: argparse exits
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_litmus_link_to_dev_zero_is_capped(tmp_path):
    """repro_litmus_dev_zero.sh: a .litmus was read whole (a MemoryError traceback)."""
    link = tmp_path / "z.litmus"
    link.symlink_to("/dev/zero")
    rc, _, err = run(str(link))
    assert rc == 2 and "Traceback" not in err
    assert f"holds more than {MAX_SPEC_CHARS >> 20} MiB, too much for a litmus test [TR600]" in err
    with pytest.raises(SpecError, match="too much for a litmus test"):
        load_litmus(str(link))


@pytest.mark.skipif(not os.path.exists("/dev/urandom"), reason="needs /dev/urandom")
def test_check_dev_urandom_ends_at_once():
    """repro_urandom_unbounded_read.sh: load() stopped at the first bad byte, but the error
    printer read the endless device again, uncapped (9 GB in 120 s)."""
    rc, _, err = run("/dev/urandom")
    assert rc == 2 and "Traceback" not in err
    # no line:col: a second read of a device gives other bytes, so no position is one of this input
    assert err.startswith("/dev/urandom: error: /dev/urandom is not UTF-8 text")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_the_error_printer_reads_no_more_than_the_loader():
    assert read_for_display("/dev/zero") is None  # more than a spec may hold: nothing to show
    assert read_for_display(COUNTER) == open(COUNTER, encoding="utf-8").read()
    assert read_for_display("/nonexistent/x.spec") is None


def test_a_folder_named_like_a_litmus_test_is_said_so(tmp_path):
    folder = tmp_path / "SB.litmus"
    folder.mkdir()
    rc, _, err = run(str(folder))
    assert rc == 2 and f"{folder} is a directory, not a litmus test file [TR600]" in err
    assert "Errno" not in err and "Traceback" not in err
    rc, _, err = run(str(tmp_path / "missing.litmus"))
    assert rc == 2 and "no such file" in err and "Errno" not in err


def test_the_api_bounds_workers_as_the_cli_does():
    """repro_api_workers_unbounded.py: workers=24 started 24 processes on 2 cores."""
    too_many = max_workers() + 1
    with pytest.raises(SpecError) as api:
        check_file(COUNTER, workers=too_many)
    rc, _, err = run(COUNTER, "--workers", str(too_many))
    assert rc == 2
    said = api.value.message.split(": ", 1)[1]
    assert f"at most {max_workers()} here" in said and said in err  # the same bound, in the same words
    assert api.value.hint
    assert check_file(COUNTER, workers=max_workers(), variants="base").variants[0].stats.complete


@pytest.mark.parametrize("defines", [[("ATOMIC", True)], "ATOMIC=true", ("ATOMIC",), []])
def test_a_non_mapping_defines_is_a_clear_error(defines):
    with pytest.raises(SpecError) as e:
        check_file(COUNTER, defines=defines)
    assert "defines must be a mapping of constant names to values" in e.value.message
    assert e.value.hint and "POLL_ROUNDS" in e.value.hint


def test_defines_keys_must_be_names():
    with pytest.raises(SpecError, match="a constant's name is a str"):
        check_source(open(COUNTER).read(), defines={1: True})
    assert check_file(COUNTER, defines={"ATOMIC": True}).variants[0].outcomes
