#!/usr/bin/env python3
"""Unreduced states per CPU second: our Python level loop, our native (C) level loop,
and SPIN's pan, on the bench models (issue 30's measure).

For each model and size it runs, --repeats times each, with reductions off:

  python  `check FILE -D N=n --variant base --no-por --no-symmetry --no-coverage
          --workers 1 --brief --json OUT --with-timing --loop python`
  native  the same with `--loop native` (an untimed run first builds the C into the
          cache, so the timed runs load it: the compile is paid once per model)
  auto    the same with `--loop auto`, the default: Python first, the native loop from
          the first level boundary past 20,000 states (the build is in the cache by then)
  pan     a pan built once from the Promela twin with reductions off (`spin -o3 -a`,
          `gcc -O2 -DNOREDUCE`), then run alone (`./pan`)

and reports, per tool, the median CPU time of the search (user + system of the child,
os.wait4; ours less the median CPU of the same command with `--max-states 1`, which is
Python's start-up, parsing, compiling and loading the C), the states stored per CPU
second of search, and our JSON's search time (wall clock, inflated on a busy machine). The state counts must agree (exit 1 otherwise). CPU time is less
sensitive than wall time to a shared machine, but a busy machine still slows every
tool (caches, frequency): compare the tools within one run.

With --por, partial-order reduction stays on (the default run's form, but symmetry off,
so that the counts are partial-order reduction's alone) and pan is left out (its reduction is another one, with
other counts): the loops must then agree on the reduced counts.

Usage: python bench/native.py [--model NAME=N,N ...] [--repeats K] [--json OUT] [--no-spin]
                              [--loops python,native,auto] [--por]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import FAMILIES, SpinBench, check_command, promela_instance, run_measured, table  # noqa: E402

DEFAULT = {"kvm_vcpus": (3,), "philosophers": (9,)}


def ours(check: list[str], spec: Path, n: int, loop: str, out: Path,
         extra: tuple[str, ...] = (), por: bool = False) -> tuple[int | None, float, float | None]:
    """(states, CPU seconds of the child, the search's seconds) of one run."""
    argv = check + [str(spec), "-D", f"N={n}", "--variant", "base", *(() if por else ("--no-por",)), "--no-symmetry",
                    "--no-coverage", "--workers", "1", "--brief", "--json", str(out), "--with-timing", "--loop", loop,
                    *extra]
    p = run_measured(argv)
    if extra:
        return None, p.cpu_seconds, None
    if p.returncode != 0 or not out.exists():
        return None, p.cpu_seconds, None
    v = json.loads(out.read_text())["variants"][0]
    if loop != "auto" and v["stats"].get("loop") != loop:  # (auto: either, by the size of the search)
        return None, p.cpu_seconds, None
    return v["stats"]["states"], p.cpu_seconds, v["stats"].get("seconds")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", default=[], metavar="NAME=N,N")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--check", help="the check executable (default: the one beside this Python)")
    ap.add_argument("--no-spin", action="store_true", help="leave pan out")
    ap.add_argument("--loops", default="python,native,auto", help="our level loops to run (default: all three)")
    ap.add_argument("--por", action="store_true", help="partial-order reduction on (pan left out)")
    args = ap.parse_args(argv)
    loops = [x for x in args.loops.split(",") if x]
    sizes = {m.partition("=")[0]: tuple(int(x) for x in m.partition("=")[2].split(",")) for m in args.model} \
        if args.model else DEFAULT
    check = check_command(args.check)
    spin_ok = not args.no_spin and not args.por and shutil.which("spin") is not None and shutil.which("gcc") is not None
    rows, record, bad = [], [], False
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for fam in FAMILIES:
            for n in sizes.get(fam.name, ()):
                got: dict[str, tuple[int | None, float | None, float | None]] = {}
                for loop in loops:
                    out = work / f"{fam.name}-{n}-{loop}.json"
                    if loop == "native":
                        ours(check, fam.spec, n, loop, out, por=args.por)  # builds the C into the cache
                    runs = [ours(check, fam.spec, n, loop, out, por=args.por) for _ in range(args.repeats)]
                    # start-up, parse, compile (and load the C) alone: a search of one state
                    start = statistics.median(ours(check, fam.spec, n, loop, out, ("--max-states", "1"),
                                                   por=args.por)[1] for _ in range(args.repeats))
                    states = {r[0] for r in runs}
                    got[loop] = (runs[0][0] if len(states) == 1 else None,
                                 max(0.001, statistics.median(r[1] for r in runs) - start),
                                 statistics.median(r[2] for r in runs if r[2] is not None)
                                 if all(r[2] is not None for r in runs) else None)
                if spin_ok:
                    pml = work / f"{fam.name}{n}.pml"
                    pml.write_text(promela_instance(fam.promela, fam.param, n))
                    sb = SpinBench(pml, work, reduce=False)
                    for _ in range(args.repeats):
                        if sb.failure is None:
                            p = sb.pan()
                            sb.samples.append((p.seconds, p.cpu_seconds, p))
                    r = sb.result()
                    cpus = [p.cpu_seconds for _, _, p in sb.samples]
                    got["pan"] = (r.states, statistics.median(cpus) if cpus else None, r.search_seconds)
                counts = {v[0] for v in got.values()}
                if len(counts) != 1 or None in counts:
                    bad = True
                base = got["pan"][1] if "pan" in got and got["pan"][1] else None
                for tool, (states, cpu, search) in got.items():
                    rate = f"{states / cpu:,.0f}" if states and cpu else "n/a"
                    vs = f"{(states / cpu) / (got['pan'][0] / base):.2f}" if base and states and cpu else "n/a"
                    rows.append([f"{fam.name} N={n}", tool, f"{states:,}" if states else "n/a",
                                 f"{cpu:.2f}" if cpu else "n/a", f"{search:.2f}" if search else "n/a", rate, vs])
                    record.append({"model": fam.name, "n": n, "tool": tool, "states": states, "cpu_seconds": cpu,
                                   "search_seconds": search})
    print(table(["model", "loop", "states", "search CPU s", "search s (wall)", "states per CPU s",
                 "rate / pan's"], rows, left=frozenset({0, 1})))
    how = "partial-order reduction on, symmetry off" if args.por else "reductions off everywhere"
    print(f"medians of {args.repeats} runs; {how}; pan: run alone (built once); ours: the "
          "process's CPU less a --max-states 1 run's")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    if bad:
        print("state counts disagree (or a run failed)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
