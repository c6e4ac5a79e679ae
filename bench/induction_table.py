"""k-induction (--engine induction) with and without --strengthen on the shipped models,
one row per safety property of each sc variant: the explicit engine's verdict, plain
k-induction's, strengthened k-induction's (with the k that proved it), the mined
invariants proved and assumed, and the times.

    python bench/induction_table.py [--depth K] [--timeout SECONDS] [--states N] [MODEL[:VARIANT]]...

Without arguments: every sc variant of every model in models/. Each variant runs in a
process of its own, cut off (SIGINT, so the decided rows are kept) after --cutoff
seconds. Times are wall-clock on whatever else the machine is doing."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker import ir  # noqa: E402
from checker.backends.python import compile_program  # noqa: E402
from checker.front.parse import parse  # noqa: E402
from checker.resolve import resolve  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench"))
from pdr_table import run_each, variants_of  # noqa: E402


def verdict(f) -> str:
    if f is None:
        return "-"
    m = re.search(r"k = (\d+)", f.note)
    if f.verdict.value == "proved" and m:
        return f"proved k={m.group(1)}"
    if f.counterexample is not None and f.verdict.value == "violated":
        return f"violated at {f.counterexample.trace.length}"
    return f.verdict.value


def one(path: str, variant: str, depth: int, timeout: float, states: int) -> None:
    """The rows of one variant, tab-separated, on stdout."""
    from checker.engines.explicit import explore
    from checker.engines.smt.induction import induction

    cm = compile_program(ir.build(resolve(parse(open(path, encoding="utf-8").read(), path), variant)))
    t = time.monotonic()
    ex = explore(cm)
    t_exp = time.monotonic() - t
    t = time.monotonic()
    plain = induction(cm, depth, timeout)
    t_plain = time.monotonic() - t
    t = time.monotonic()
    strong = induction(cm, depth, timeout, strengthen=states)
    t_strong = time.monotonic() - t
    head = strong.stats.notes[0] if strong.stats.notes else ""
    m = re.search(r"; (\d+) proved", head)
    kept = m.group(1) if m else "0"
    mined = head.split(": ", 1)[1].split(" candidate")[0] if ": " in head else "0"
    for name in strong.findings:
        cx = ex.counterexamples.get(name)
        explicit = f"violated at {cx.trace.length}" if cx else ("holds" if ex.stats.complete else "?")
        print("\t".join([os.path.basename(path), variant, name, explicit, verdict(plain.findings.get(name)),
                         verdict(strong.findings.get(name)), f"{kept}/{mined}", f"{t_exp:.1f}", f"{t_plain:.1f}",
                         f"{t_strong:.1f}"]), flush=True)
    for r, what in ((plain, "induction"), (strong, "strengthened")):
        if r.stats.limit:
            print(f"#\t{os.path.basename(path)}\t{variant}\t{what}: {r.stats.limit}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=4, help="the largest k (default 4)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per Z3 query (default 60)")
    ap.add_argument("--states", type=int, default=100_000, help="--strengthen's state limit (default 100000)")
    ap.add_argument("--cutoff", type=float, default=900.0, help="seconds per variant (default 900)")
    ap.add_argument("--one", nargs=2, metavar=("PATH", "VARIANT"), help=argparse.SUPPRESS)
    ap.add_argument("models", nargs="*", help="MODEL or MODEL:VARIANT (default: every shipped model)")
    args = ap.parse_args()
    if args.one:
        one(args.one[0], args.one[1], args.depth, args.timeout, args.states)
        return 0
    print("model\tvariant\tproperty\texplicit\tinduction\tstrengthened\tinvariants kept/mined\t"
          "explicit s\tinduction s\tstrengthened s")
    run_each(variants_of(args.models), lambda path, variant: [
        __file__, "--depth", str(args.depth), "--timeout", str(args.timeout), "--states", str(args.states),
        "--one", path, variant], args.cutoff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
