"""herd7's reports, recorded under tests/ so the oracle travels with the project.

Every comparison with herd7 reads herd7's recorded report of that exact program: a file's
recording sits beside it (`X.litmus` -> `X.herd7`), a generated program's, or one of the
kernel's (which are not vendored), lives in tests/herd7_recordings/ under a hash of its text. herd7 itself (../shared/tools/herd7)
runs only when asked, by TIMERACE_HERD7:

- unset or `recorded`: the recordings only; a program without one skips (and says so);
- `live`: herd7 runs, and its report must equal the recording where there is one;
- `record`: herd7 runs and (re)writes the recordings.

The session's summary line counts the comparisons made each way (conftest.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone; a git worktree further down (../../shared) finds it too
HERD = next((d / "shared" / "tools" / "herd7" / "herd7-lkmm" for d in ROOT.parents
             if (d / "shared" / "tools" / "herd7" / "herd7-lkmm").exists()),
            ROOT.parent / "shared" / "tools" / "herd7" / "herd7-lkmm")
RECORDINGS = Path(__file__).parent / "herd7_recordings"
MODE = os.environ.get("TIMERACE_HERD7", "recorded")
if MODE not in ("recorded", "live", "record"):
    raise SystemExit(f"TIMERACE_HERD7={MODE!r}: expected recorded, live or record")

#: comparisons made from a live herd7 run, from a recording, and skipped for want of one
COUNTS = {"live": 0, "recorded": 0, "unrecorded": 0}

# herd7 7.56 refuses `spinlock_t l;` in the initial state (its README: leave it out; the
# lock still works), so herd7 reads each program with those lines removed
_SPINLOCK_DECL = re.compile(r"^\s*spinlock_t\s+\w+\s*;\s*$\n?", re.M)


def recording_of(path: Path | None, source: str) -> Path:
    if path is not None:
        return path.with_suffix(".herd7")
    return RECORDINGS / f"{hashlib.sha256(source.encode()).hexdigest()[:20]}.herd7"


def _run_herd7(source: str, name: str) -> str:
    """herd7's stdout without its Time line, then its warnings (the file named by `name`)."""
    if not HERD.exists():
        pytest.skip(f"TIMERACE_HERD7={MODE}, but herd7 ({HERD}) is not here")
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "herd.litmus"
        p.write_text(_SPINLOCK_DECL.sub("", source))
        done = subprocess.run([str(HERD), str(p)], capture_output=True, text=True, timeout=120)
    out = [line for line in done.stdout.splitlines() if not line.startswith("Time ")]
    out += [line.replace(str(p), name) for line in done.stderr.splitlines() if line.strip()]
    return "\n".join(out) + "\n"


def herd7_output(source: str, path: Path | None = None) -> str:
    """herd7's full report on `source` (the file `path`, or a generated program)."""
    rec = recording_of(path, source)
    name = path.name if path is not None else "gen.litmus"
    if MODE == "recorded":
        if not rec.exists():
            COUNTS["unrecorded"] += 1
            pytest.skip(f"no herd7 recording {rec.name} (TIMERACE_HERD7=record where herd7 is installed)")
        COUNTS["recorded"] += 1
        return rec.read_text()
    live = _run_herd7(source, name)
    COUNTS["live"] += 1
    if MODE == "record":
        rec.parent.mkdir(exist_ok=True)
        tmp = rec.with_suffix(".herd7.tmp")
        tmp.write_text(live)
        tmp.replace(rec)  # never a half-written recording
    elif rec.exists():
        assert rec.read_text() == live, f"herd7 no longer says what {rec.name} recorded (TIMERACE_HERD7=record)"
    return live


def report(source: str, path: Path | None = None) -> str:
    """The report as our format_result prints it: herd7's lines without Hash and warnings."""
    return "\n".join(line for line in herd7_output(source, path).splitlines()
                     if line and not line.startswith(("Hash=", "Warning:")))


def summary(source: str, path: Path | None = None) -> tuple[set, str, int, int]:
    """herd7's states (as sets of 'name=value'), verdict and positive/negative counts."""
    out = herd7_output(source, path)
    m = re.search(r"^States (\d+)\n(.*?)^(?:Loop )?(Ok|No)$", out, re.M | re.S)
    obs = re.search(r"^Observation \S+ (\w+) (\d+) (\d+)", out, re.M)
    assert m and obs, out
    states = {frozenset(x.strip() for x in line.split(";") if x.strip()) for line in m.group(2).splitlines()}
    return states, obs.group(1), int(obs.group(2)), int(obs.group(3))
