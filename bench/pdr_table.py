"""PDR (--engine pdr) against the explicit engine on the shipped models, one row per
safety property of each sc variant: PDR's verdict, its invariant's size or its path's
length, the explicit engine's verdict and shortest counterexample, and both times.

    python bench/pdr_table.py [--timeout SECONDS] [--strengthen STATES] [MODEL[:VARIANT]]...

Without arguments: every sc variant of every model in models/. Each variant runs in a
process of its own, cut off (SIGINT, so the decided rows are kept) after 3 * timeout
plus a minute. Times are wall-clock on whatever else the machine is doing. With
--strengthen, pdr is given the mined lemmas of an explicit search of at most STATES
states (`check --engine pdr --strengthen`), and the invariant's size counts them."""

from __future__ import annotations

import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker import ir  # noqa: E402
from checker.backends.python import compile_program  # noqa: E402
from checker.front.parse import parse  # noqa: E402
from checker.resolve import resolve, variant_names  # noqa: E402


def one(path: str, variant: str, timeout: float, strengthen: int | None = None) -> None:
    """The rows of one variant, tab-separated, on stdout."""
    from checker.engines.explicit import explore
    from checker.engines.smt.pdr import pdr

    cm = compile_program(ir.build(resolve(parse(open(path, encoding="utf-8").read(), path), variant)))
    t = time.monotonic()
    ex = explore(cm)
    t_exp = time.monotonic() - t
    t = time.monotonic()
    r = pdr(cm, 0, timeout, strengthen=strengthen)
    t_pdr = time.monotonic() - t
    sizes = {}
    for note in r.stats.notes:
        m = re.match(r"pdr: inductive invariant proving (.*) \((\d+) clauses?(?: and the (\d+) mined)?", note)
        if m:
            sizes[m.group(1)] = m.group(2) + (f" + {m.group(3)} mined" if m.group(3) else "")
    for name, f in r.findings.items():
        cx = ex.counterexamples.get(name)
        explicit = f"violated at {cx.trace.length}" if cx else ("holds" if ex.stats.complete else "?")
        got = f.verdict.value
        if f.counterexample is not None:
            got += f" at {f.counterexample.trace.length}"
        elif name in sizes:
            got += f", invariant of {sizes[name]} clauses"
        print("\t".join([os.path.basename(path), variant, name, got, explicit, f"{t_pdr:.1f}", f"{t_exp:.2f}",
                         f.note if f.verdict.value in ("unknown", "incomplete", "checker bug") else ""]), flush=True)
    if r.stats.limit:
        print(f"#\t{os.path.basename(path)}\t{variant}\tpdr: {r.stats.limit}", flush=True)


def sc_variants(path: str) -> list[str]:
    spec = parse(open(path, encoding="utf-8").read(), path)
    return [v for v in variant_names(spec) if resolve(spec, v).memory == "sc"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per Z3 query (default 60)")
    ap.add_argument("--strengthen", type=int, metavar="STATES", help="give pdr the mined lemmas of this many states")
    ap.add_argument("--one", nargs=2, metavar=("PATH", "VARIANT"), help=argparse.SUPPRESS)
    ap.add_argument("models", nargs="*", help="MODEL or MODEL:VARIANT (default: every shipped model)")
    args = ap.parse_args()
    if args.one:
        one(args.one[0], args.one[1], args.timeout, args.strengthen)
        return 0
    print("model\tvariant\tproperty\tpdr\texplicit\tpdr s\texplicit s\twhy")
    extra = ["--strengthen", str(args.strengthen)] if args.strengthen else []
    run_each(variants_of(args.models), lambda path, variant: [__file__, "--timeout", str(args.timeout), *extra,
                                                              "--one", path, variant], 3 * args.timeout + 60)
    return 0


def variants_of(names: list[str]) -> list[tuple[str, str]]:
    """(path, variant) for each MODEL or MODEL:VARIANT; a MODEL means its sc variants,
    no names every shipped model."""
    todo = []
    for name in names or [os.path.basename(p)[:-5] for p in sorted(glob.glob(f"{ROOT}/models/*.spec"))]:
        model, _, variant = name.partition(":")
        path = f"{ROOT}/models/{model}.spec"
        todo += [(path, v) for v in ([variant] if variant else sc_variants(path))]
    return todo


def run_each(todo: list[tuple[str, str]], argv, cutoff: float) -> None:
    """Each variant in a Python process of its own (argv(path, variant) after the
    interpreter), cut off with SIGINT, which keeps the rows it printed, after `cutoff` s."""
    for path, variant in todo:
        p = subprocess.Popen([sys.executable, *argv(path, variant)])
        try:
            p.wait(timeout=cutoff)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
