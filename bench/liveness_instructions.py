"""liveness_cost.py's ratio in instructions: what the liveness engine costs over the
unreduced safety search of the same variant, counted by valgrind's callgrind, so that a
machine busy with other work does not change the figure (CPU seconds of runs of a few
milliseconds do, by 50% from one run to the next on a loaded 2-core machine).

    python bench/liveness_instructions.py [--loop native|python] MODEL.spec:VARIANT...

Per variant, four runs under callgrind, each a fresh process that compiles the variant,
makes the searches and the check once untimed (the native build comes from the cache),
then once more the measured part: nothing more (the baseline), the safety search, the
search that keeps the graph, or the liveness check. Each figure is its run's
instructions minus the baseline's. Instructions leave out cache misses and page faults,
which the graph's larger arrays add: a lower bound on the cost in time, to read beside
liveness_cost.py's CPU seconds. Needs valgrind on PATH."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ("baseline", "safety", "graph", "check")


def child(loop: str, target: str, part: str) -> None:
    """One measured process: the untimed warm-up, then `part` once."""
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from liveness_cost import sc_liveness_variants

    from checker.engines import liveness
    from checker.engines.explicit import explore

    for _path, _variant, cm in sc_liveness_variants([target]):
        explore(cm, loop=loop)
        graph = explore(cm, loop=loop, graph=True)
        liveness.check(cm, graph)
        if part == "safety":
            explore(cm, loop=loop)
        elif part == "graph":
            explore(cm, loop=loop, graph=True)
        elif part == "check":
            liveness.check(cm, graph)


def instructions(loop: str, target: str, part: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out", sys.executable,
                              os.path.abspath(__file__), "--child", part, "--loop", loop, target],
                             capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise SystemExit(f"callgrind said no count:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop", choices=("python", "native"), default="native")
    ap.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    ap.add_argument("targets", nargs="+", help="MODEL.spec:VARIANT")
    args = ap.parse_args()
    if args.child:
        child(args.loop, args.targets[0], args.child)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH")
    print(f"{'model:variant':44} {'safety':>9} {'graph':>9} {'check':>9} {'live/safe':>9}  (millions of instructions)")
    for target in args.targets:
        base, safety, graph, check = (instructions(args.loop, target, part) for part in PARTS)
        s, g, c = safety - base, graph - base, check - base
        name = os.path.basename(target).replace(".spec", "")
        print(f"{name:44} {s / 1e6:>9.1f} {g / 1e6:>9.1f} {c / 1e6:>9.1f} {(g + c) / s:>8.2f}x", flush=True)


if __name__ == "__main__":
    main()
