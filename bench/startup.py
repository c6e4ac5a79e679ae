"""Start-up (issue 30's goal: `check` on a three-state model in at most 0.2 s of CPU):
what a user's `check FILE` costs when the model itself costs nothing.

    python bench/startup.py [--repeats N] [--check PATH] [--no-instructions] [--json OUT]

It runs `check` (the one next to this Python, else PATH, as bench/run.py finds it; or
--check) on a model of three states, --repeats times, and prints the least CPU time
(user + system of the child: on a shared machine the least of many runs is the one least
disturbed), next to `python -c pass` as the floor. Under valgrind, when it is installed,
it also counts the instructions of one run (callgrind: the same count on a busy machine
as on an idle one). Python writes no .pyc files when PYTHONDONTWRITEBYTECODE is set, and
every import then compiles its module again: measure an installed `check` (a wheel
install compiles them) or run `python -m compileall checker` first; the output says
whether the package's .pyc files are there."""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import check_command  # noqa: E402

THREE_STATES = """model three;
var x: 0..2 = 0;
process p { x = 1; x = 2; }
invariant small: x <= 2;
"""


def least_cpu(command: list[str], repeats: int) -> float:
    """The least user + system CPU seconds of `repeats` runs of command."""
    best = float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"startup: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def instructions(command: list[str]) -> int | None:
    """Instructions of one run, counted by callgrind; None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found[1]) if found else None


def python_of(check: list[str]) -> str:
    """The interpreter a `check` script runs under (its #! line), for the floor."""
    if Path(check[0]).name.startswith("python"):
        return check[0]
    with open(check[0], "rb") as f:
        first = f.readline().decode(errors="replace")
    return first[2:].strip().split()[0] if first.startswith("#!") else sys.executable


def pyc_present(python: str) -> bool:
    """Whether the checker package that python imports has its .pyc files."""
    code = ("import importlib.util, os, checker.cli as c\n"
            "print(os.path.exists(importlib.util.cache_from_source(c.__file__)))")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return done.stdout.strip() == "True"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20, help="runs of each command (least CPU quoted)")
    ap.add_argument("--check", help="the check executable (default: beside this Python, else PATH)")
    ap.add_argument("--no-instructions", action="store_true", help="skip the callgrind count")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = ap.parse_args(argv)
    check = check_command(args.check)
    python = python_of(check)
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "three.spec")
        Path(spec).write_text(THREE_STATES)
        run = [*check, spec, "--brief"]
        figures: dict[str, object] = {
            "check": " ".join(check), "pyc": pyc_present(python), "repeats": args.repeats,
            "cpu_s": least_cpu(run, args.repeats), "python_cpu_s": least_cpu([python, "-c", "pass"], args.repeats),
        }
        if not args.no_instructions:
            figures["instructions"] = instructions(run)
            figures["python_instructions"] = instructions([python, "-c", "pass"])
    print(f"start-up of {figures['check']} on a 3-state model (.pyc {'present' if figures['pyc'] else 'ABSENT'}):")
    print(f"  CPU, least of {args.repeats}: {figures['cpu_s']:.3f} s   (python -c pass: {figures['python_cpu_s']:.3f} s)")
    if "instructions" in figures:
        ins, floor = figures["instructions"], figures["python_instructions"]
        if isinstance(ins, int) and isinstance(floor, int):
            print(f"  instructions (callgrind): {ins / 1e9:.3f} G   (python -c pass: {floor / 1e9:.3f} G)")
        else:
            print("  instructions: not counted (no valgrind)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
