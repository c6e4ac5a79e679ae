"""The outside oracles' answers, recorded under tests/ so they travel with the project:
herd7's reports on litmus programs, and pan's verdicts on the Promela twins.

**herd7.** Every comparison with herd7 reads herd7's recorded report of that exact program: a file's
recording sits beside it (`X.litmus` -> `X.herd7`), a generated program's, or one of the
kernel's (which are not vendored), lives in tests/herd7_recordings/ under a hash of its text. herd7 itself (../shared/tools/herd7)
runs only when asked, by TIMERACE_HERD7:

- unset or `recorded`: the recordings only; a program without one skips (and says so);
- `live`: herd7 runs, and its report must equal the recording where there is one;
- `record`: herd7 runs and (re)writes the recordings.

The session's summary line counts the comparisons made each way (conftest.py).

**Recordings nothing reads.** With TIMERACE_ORACLE_UNUSED=report the summary also lists
the files of tests/herd7_recordings/ and tests/pan_recordings/ that no test of the
session asked for (a twin whose text changed leaves its old recording behind). Only a
run of the whole suite makes that list mean "dead": `-k` or a few files read only some.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
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
UNUSED_MODE = os.environ.get("TIMERACE_ORACLE_UNUSED", "")
if UNUSED_MODE not in ("", "report"):
    raise SystemExit(f"TIMERACE_ORACLE_UNUSED={UNUSED_MODE!r}: expected report (or unset)")
#: the recordings (folder/name) the session's tests asked for, read or (re)written
ASKED: set[str] = set()


def _asked(rec: Path) -> Path:
    ASKED.add(f"{rec.parent.name}/{rec.name}")
    return rec


def unread() -> list[str]:
    """The recordings in the two folders no test of this session asked for, as paths
    from the repository's root."""
    return sorted(f"tests/{d.name}/{p.name}" for d in (RECORDINGS, PAN_RECORDINGS) if d.is_dir()
                  for p in d.iterdir() if p.suffix in (".herd7", ".json") and f"{d.name}/{p.name}" not in ASKED)

# herd7 7.56 refuses `spinlock_t l;` in the initial state (its README: leave it out; the
# lock still works), so herd7 reads each program with those lines removed
_SPINLOCK_DECL = re.compile(r"^\s*spinlock_t\s+\w+\s*;\s*$\n?", re.M)


def recording_of(path: Path | None, source: str) -> Path:
    """Beside a file of the repository; under a hash of its text for anything else (a
    generated program, one of the kernel's files, which are not vendored)."""
    if path is not None and path.resolve().is_relative_to(ROOT):
        return path.with_suffix(".herd7")
    return _asked(RECORDINGS / f"{hashlib.sha256(source.encode()).hexdigest()[:20]}.herd7")


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


# ---- pan on the Promela twins ----------------------------------------------------------

#: pan's verdicts on a twin (bench/run.py's TwinCheck), keyed by a hash of the twin's text
PAN_RECORDINGS = Path(__file__).parent / "pan_recordings"
PAN_MODE = os.environ.get("TIMERACE_SPIN", "auto")
if PAN_MODE not in ("auto", "live", "record"):
    raise SystemExit(f"TIMERACE_SPIN={PAN_MODE!r}: expected auto, live or record")
#: twins checked by a live pan and read from a recording
PAN_COUNTS = {"live": 0, "recorded": 0}


_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def pan_recording_of(text: str) -> Path:
    """Keyed by the twin without its comments: they quote the spec's path and lines,
    which differ between clones and temporary folders, and pan never reads them."""
    program = _COMMENT.sub("", text)
    return _asked(PAN_RECORDINGS / f"{hashlib.sha256(program.encode()).hexdigest()[:20]}.json")


def twin_check(pml: Path, work: Path, optimise: str = "-O0"):
    """pan's verdicts on the twin `pml` with reductions off (bench/run.py's twin_check).

    A twin is a deterministic program and pan's exhaustive search of it has one answer,
    so the answer for exactly this program is recorded (tests/pan_recordings/, keyed by
    the twin's text without its comments; the twin's name inside for a reader).
    TIMERACE_SPIN:

    - unset or `auto`: the recording when there is one, else pan runs (SPIN and gcc are
      installed by tests/install-tools.sh): a twin the back end now writes differently
      is checked live, on every run until it is recorded;
    - `live`: pan runs, and its answer must equal the recording where there is one;
    - `record`: pan runs and (re)writes the recordings.

    The session's summary line counts the twins checked each way (conftest.py)."""
    from test_bench import run as bench  # bench/run.py runs pan (imported late: it loads bench/)

    text = pml.read_text()
    rec = pan_recording_of(text)
    if PAN_MODE == "auto" and rec.exists():
        PAN_COUNTS["recorded"] += 1
        fields = json.loads(rec.read_text())
        fields.pop("twin")
        return bench.TwinCheck(**{**fields, "violated": set(fields["violated"])})
    if shutil.which("spin") is None or shutil.which("gcc") is None:
        from tools import require
        require(False, f"SPIN or gcc is not installed, and {pml.name} has no recording {rec.name}")
    live = bench.twin_check(pml, work, optimise)
    PAN_COUNTS["live"] += 1
    fields = {"twin": pml.name, **dataclasses.asdict(live), "violated": sorted(live.violated)}
    if PAN_MODE == "record":
        PAN_RECORDINGS.mkdir(exist_ok=True)
        tmp = rec.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(fields, indent=1, sort_keys=True) + "\n")
        tmp.replace(rec)  # never a half-written recording; two workers write the same text
    elif rec.exists():
        recorded = json.loads(rec.read_text())
        assert {k: v for k, v in recorded.items() if k != "twin"} == {k: v for k, v in fields.items() if k != "twin"}, \
            f"pan no longer says what {rec.name} recorded for {pml.name} (TIMERACE_SPIN=record)"
    return live
