"""What the liveness engine costs over the unreduced safety search of the same variant
(issue 30's goal: at most 1.3x), per sc variant with liveness properties of the shipped
models (or of the MODEL[:VARIANT] arguments).

    python bench/liveness_cost.py [--loop python|native] [--repeats N] [--min-states N] [MODEL[:VARIANT]]...

Each row, in CPU seconds of this process (the least of --repeats runs: CPU time, not the
wall clock, which on a shared machine measures everything else): the unreduced safety
search (`explore` in --loop's level loop, no graph; the native loop's build is made
before the first timed run, from the cache); the liveness run, split into the search
that keeps the graph (`explore(graph=True)`) and the fair-cycle check
(`liveness.check`); and liveness over safety. Variants under --min-states states are
left out: their times are too small to divide."""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker import ir  # noqa: E402
from checker.backends.python import compile_program  # noqa: E402
from checker.engines import liveness  # noqa: E402
from checker.engines.explicit import explore  # noqa: E402
from checker.front.parse import parse  # noqa: E402
from checker.resolve import resolve, variant_names  # noqa: E402


def least(repeats: int, run) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        out = run()
        best = min(best, time.process_time() - start)
    return best, out


def sc_liveness_variants(targets: list[str], memories: tuple[str, ...] = ("sc",)):
    """(path, variant, compiled variant) of every variant under one of `memories` (sc
    alone by default) with liveness properties of the shipped models, or of the
    MODEL.spec[:VARIANT] `targets`."""
    wanted = [t.split(":") for t in targets]
    paths = sorted({p for p, *_ in wanted}) if wanted else sorted(glob.glob(os.path.join(ROOT, "models", "*.spec")))
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for variant in variant_names(parse(text, path)):
            if wanted and not any(p == path and (not v or v[0] == variant) for p, *v in wanted):
                continue
            cm = compile_program(ir.build(resolve(parse(text, path), variant)))
            if cm.program.model.memory in memories and cm.liveness:
                yield path, variant, cm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop", choices=("python", "native"), default="python")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-states", type=int, default=2000)
    ap.add_argument("targets", nargs="*", help="MODEL.spec[:VARIANT]")
    args = ap.parse_args()
    print(f"{'model:variant':44} {'states':>8} {'safety':>8} {'graph':>8} {'check':>8} {'live/safe':>9}")
    ratios = []
    for path, variant, cm in sc_liveness_variants(args.targets):
        if args.loop == "native":  # (builds the library into the cache, untimed)
            explore(cm, loop=args.loop), explore(cm, loop=args.loop, graph=True)
        t_safe, safe = least(args.repeats, lambda cm=cm: explore(cm, loop=args.loop))
        if safe.stats.states < args.min_states:
            continue
        t_graph, graph = least(args.repeats, lambda cm=cm: explore(cm, loop=args.loop, graph=True))
        if graph.stats.loop != safe.stats.loop:
            print(f"  (the graph search ran in the {graph.stats.loop} loop, safety in the {safe.stats.loop} one)")
        t_check, _ = least(args.repeats, lambda cm=cm, g=graph: liveness.check(cm, g))
        ratio = (t_graph + t_check) / t_safe
        ratios.append(ratio)
        name = f"{os.path.basename(path).removesuffix('.spec')}:{variant}"
        print(f"{name:44} {safe.stats.states:>8} {t_safe:>8.3f} {t_graph:>8.3f} {t_check:>8.3f} {ratio:>8.2f}x",
              flush=True)
    if ratios:
        print(f"liveness over safety: median {sorted(ratios)[len(ratios) // 2]:.2f}x, worst {max(ratios):.2f}x "
              f"({len(ratios)} variants)")


if __name__ == "__main__":
    main()
