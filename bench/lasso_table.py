"""Liveness under Z3 against the explicit engine on the shipped models: one row per
liveness property of each sc variant (with --tso, tso variants too) that the explicit
engine finds violated with a lasso of at most --max-length steps (or of the
MODEL:VARIANT arguments, any verdict).

    python bench/lasso_table.py [--budget SECONDS] [--max-length N] [--tso] [--pdr] [--induction]
                                [MODEL[:VARIANT]]...

Each row: the explicit engine's verdict and lasso (stem + loop), its CPU seconds
(search and fair-cycle check); bmc's lasso search to the explicit lasso's length (or
--depth for a property that holds): the depth it found a lasso at, the lasso the explicit
engine judged among its states, and the CPU seconds. With --pdr, pdr's verdict and CPU
seconds too; with --induction, k-induction's on the product to the same depth (its
--strengthen when given: the mined invariants a safety induction run proved, that
run's CPU seconds counted). Each engine run is interrupted (as by Ctrl-C) after --budget CPU seconds:
CPU time, not the wall clock, which on a shared machine measures everything else."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker.engines import liveness  # noqa: E402
from checker.engines.explicit import explore  # noqa: E402
from checker.engines.smt.induction import induction  # noqa: E402
from checker.engines.smt.lasso import lasso_bmc, lasso_induction, lasso_pdr  # noqa: E402
from liveness_cost import sc_liveness_variants  # noqa: E402  (bench/, beside this script)


def budgeted(seconds: float, run):
    """run() interrupted after `seconds` of CPU time (SIGPROF -> SIGINT, which the Z3
    engines turn into a partial result)."""
    old = signal.signal(signal.SIGPROF, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    signal.setitimer(signal.ITIMER_PROF, seconds)
    start = time.process_time()
    try:
        return run(), time.process_time() - start
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def lasso_words(f) -> str:
    tr = f.counterexample.trace if f.counterexample is not None else None
    return f"{tr.loop_start}+{tr.length - tr.loop_start}" if tr is not None else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--max-length", type=int, default=16)
    ap.add_argument("--depth", type=int, default=10, help="bmc's depth for a property that holds")
    ap.add_argument("--pdr", action="store_true")
    ap.add_argument("--induction", action="store_true")
    ap.add_argument("--strengthen", type=int, default=None, metavar="STATES")
    ap.add_argument("--tso", action="store_true", help="tso variants too")
    args = ap.parse_args()
    wanted = bool(args.targets)
    print(f"{'model:variant':48} {'property':20} {'explicit: verdict, lasso, cpu':>28} {'bmc: depth, lasso, cpu':>26}"
          + (f" {'pdr: verdict, cpu':>18}" if args.pdr else "")
          + (f" {'induction: verdict, cpu':>24}" if args.induction else ""))
    for path, variant, cm in sc_liveness_variants(args.targets, ("sc", "tso") if args.tso else ("sc",)):
        t0 = time.process_time()
        out, _ = liveness.check(cm, explore(cm, graph=True))
        t_exp = time.process_time() - t0
        for name, lo in out.items():
            length = lo.counterexample.trace.length if lo.counterexample is not None else None
            if not wanted and (length is None or length > args.max_length):
                continue
            b, t_b = budgeted(args.budget, lambda cm=cm, d=length or args.depth, only=(name,):
                              lasso_bmc(cm, d, timeout=args.budget, only=only))
            fb = b.findings.get(name)
            found = fb.note.split("found by bmc at depth ")[1].split(",")[0] if fb and "at depth" in fb.note \
                else (fb.verdict.value if fb else "interrupted")
            row = (f"{os.path.basename(path) + ':' + variant:48} {name:20} {lo.verdict.value:>8} "
                   f"{lasso_words(lo):>5} {t_exp:5.2f}s {('d=' + found):>12} {lasso_words(fb) if fb else '-':>5} "
                   f"{t_b:5.1f}s")
            if args.pdr:
                p, t_p = budgeted(args.budget, lambda cm=cm, only=(name,): lasso_pdr(cm, 0, timeout=args.budget,
                                                                                    only=only))
                fp = p.findings.get(name)
                row += f" {(fp.verdict.value if fp else 'interrupted'):>11} {t_p:5.1f}s"
            if args.induction:
                def k_induction(cm=cm, d=length or args.depth, only=(name,)):
                    lemmas = induction(cm, d, timeout=args.budget, strengthen=args.strengthen).invariants \
                        if args.strengthen else []
                    return lasso_induction(cm, d, timeout=args.budget, only=only, lemmas=tuple(lemmas))
                i, t_i = budgeted(args.budget, k_induction)
                fi = i.findings.get(name)
                k = fi.note.split(", k = ")[1].split(":")[0].split(",")[0] if fi and ", k = " in fi.note else ""
                row += f" {(fi.verdict.value if fi else 'interrupted') + (' k=' + k if k else ''):>17} {t_i:5.1f}s"
            print(row, flush=True)


if __name__ == "__main__":
    main()
