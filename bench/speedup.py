"""Two workers against one, measured as this machine allows.

The machine's speed drifts by up to 40% within minutes, so medians of runs taken far
apart compare two machines. This runs `check` in triples (1 worker, W workers, 1 worker)
and takes each triple's speed-up as the mean of its two one-worker searches over its
W-worker search, so that only neighbouring runs are compared; it prints every triple
and the medians (search seconds from the JSON, CPU of the whole `check`).

With `--ceiling`, each triple is followed by W one-worker searches started at once: W
independent searches finished in the time of the slowest show what the machine itself
gives W processes at that moment (its two cores are virtual, and at times share a host
core with other work). `ceiling` is W times the triple's one-worker time over that
slowest search's, and `efficiency` the speed-up over the ceiling.

    .venv/bin/python bench/speedup.py bench/models/kvm_vcpus.spec -D N=3 --variant base \\
        --no-por --no-symmetry --triples 3
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import check_command


def search_seconds(check: list[str], args: list[str], workers: int, at_once: int = 1) -> tuple[list[float], float]:
    """(search seconds of each, CPU seconds of all) of `at_once` `check` runs started together."""
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"run{k}.json" for k in range(at_once)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        runs = [subprocess.Popen([*check, *args, "--workers", str(workers), "--brief", "--json", str(out),
                                  "--with-timing"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for out in outs]
        failures = [(run.returncode, err) for run in runs for _, err in [run.communicate()]
                    if run.returncode not in (0, 1)]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if failures or not all(out.exists() for out in outs):
            code, err = failures[0] if failures else (0, "no JSON written")
            sys.exit(f"speedup: check failed (exit {code}):\n{err}")
        seconds = [json.loads(out.read_text())["variants"][0]["stats"]["seconds"] for out in outs]
    return seconds, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--triples", type=int, default=3, help="how many 1, W, 1 worker triples (default 3)")
    p.add_argument("--workers", type=int, default=2, metavar="W", help="the workers compared with one (default 2)")
    p.add_argument("--check", help="the `check` executable (default: the one beside this Python)")
    p.add_argument("--ceiling", action="store_true",
                   help="after each triple, run W one-worker searches at once: what the machine gives W processes")
    opts, args = p.parse_known_args(argv)
    if not args:
        p.error("give the spec and its options, e.g. bench/models/kvm_vcpus.spec -D N=3 --variant base")
    check = check_command(opts.check)
    ones, manys, speedups, cpu1, cpuw, ceilings, efficiencies = [], [], [], [], [], [], []
    for _ in range(opts.triples):
        ([a], ca), ([b], cb), ([c], cc) = (search_seconds(check, args, w) for w in (1, opts.workers, 1))
        ones += [a, c]
        manys.append(b)
        speedups.append((a + c) / 2 / b)
        cpu1 += [ca, cc]
        cpuw.append(cb)
        line = f"1 worker {a:.2f} s, {opts.workers} workers {b:.2f} s, 1 worker {c:.2f} s: {speedups[-1]:.2f}x"
        if opts.ceiling:
            together, _ = search_seconds(check, args, 1, at_once=opts.workers)
            ceilings.append(opts.workers * (a + c) / 2 / max(together))
            efficiencies.append(speedups[-1] / ceilings[-1])
            line += (f"; {opts.workers} one-worker searches at once "
                     f"{', '.join(f'{x:.2f}' for x in together)} s: ceiling {ceilings[-1]:.2f}x, "
                     f"efficiency {efficiencies[-1]:.0%}")
        print(line, flush=True)
    summary = (f"medians: 1 worker {statistics.median(ones):.2f} s (CPU {statistics.median(cpu1):.2f} s), "
               f"{opts.workers} workers {statistics.median(manys):.2f} s (CPU {statistics.median(cpuw):.2f} s), "
               f"speed-up {statistics.median(speedups):.2f}x")
    if opts.ceiling:
        summary += (f", ceiling {statistics.median(ceilings):.2f}x, "
                    f"efficiency {statistics.median(efficiencies):.0%}")
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
