"""Two workers against one, measured as this machine allows.

The machine's speed drifts by up to 40% within minutes, so medians of runs taken far
apart compare two machines. This runs `check` in triples (1 worker, W workers, 1 worker)
and takes each triple's speed-up as the mean of its two one-worker searches over its
W-worker search, so that only neighbouring runs are compared; it prints every triple
and the medians (search seconds from the JSON, CPU of the whole `check`).

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
from run import check_command  # noqa: E402 - bench/run.py, beside this file


def search_seconds(check: list[str], args: list[str], workers: int) -> tuple[float, float]:
    """(search seconds, CPU seconds of the whole run) of one `check` run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([*check, *args, "--workers", str(workers), "--brief", "--json", str(out),
                               "--with-timing"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1) or not out.exists():
            sys.exit(f"speedup: check failed (exit {done.returncode}):\n{done.stderr}")
        seconds = json.loads(out.read_text())["variants"][0]["stats"]["seconds"]
    return seconds, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--triples", type=int, default=3, help="how many 1, W, 1 worker triples (default 3)")
    p.add_argument("--workers", type=int, default=2, metavar="W", help="the workers compared with one (default 2)")
    p.add_argument("--check", help="the `check` executable (default: the one beside this Python)")
    opts, args = p.parse_known_args(argv)
    if not args:
        p.error("give the spec and its options, e.g. bench/models/kvm_vcpus.spec -D N=3 --variant base")
    check = check_command(opts.check)
    ones, manys, speedups, cpu1, cpuw = [], [], [], [], []
    for _ in range(opts.triples):
        (a, ca), (b, cb), (c, cc) = (search_seconds(check, args, w) for w in (1, opts.workers, 1))
        ones += [a, c]
        manys.append(b)
        speedups.append((a + c) / 2 / b)
        cpu1 += [ca, cc]
        cpuw.append(cb)
        print(f"1 worker {a:.2f} s, {opts.workers} workers {b:.2f} s, 1 worker {c:.2f} s: {speedups[-1]:.2f}x",
              flush=True)
    print(f"medians: 1 worker {statistics.median(ones):.2f} s (CPU {statistics.median(cpu1):.2f} s), "
          f"{opts.workers} workers {statistics.median(manys):.2f} s (CPU {statistics.median(cpuw):.2f} s), "
          f"speed-up {statistics.median(speedups):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
