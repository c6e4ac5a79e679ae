"""bmc --rounds against the explicit engine on the shipped models' expected safety
violations, one row per violated property of each sc variant: the round bmc found it
at, the steps of its expanded (replayed) trace, the explicit engine's shortest, and
the CPU seconds each took.

    python bench/bmc_rounds_table.py [--budget SECONDS] [--depth ROUNDS] [--rounds N] [--steps] [MODEL[:VARIANT]]...

--rounds N gives each process instance up to N steps in a row per round (bmc --rounds N;
default 1). --steps runs plain bmc (a step per frame) instead, for comparison: its
"round" column is then the depth in steps.

Without arguments: every sc variant with an expected safety violation of every model in
models/. Each variant runs in a process of its own, interrupted (as by Ctrl-C, so the
rows found so far are kept) after --budget seconds of CPU time: CPU seconds, not the
wall clock, which on a shared machine measures whatever else it is doing. bmc's
column is the CPU time from the start of its run to the finding (Z3 runs in-process);
the explicit column is the search's. A row "not found" means not within the budget (or
--depth rounds)."""

from __future__ import annotations

import argparse
import glob
import os
import resource
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker import ir, model as m  # noqa: E402
from checker.backends.python import compile_program  # noqa: E402
from checker.front.parse import parse  # noqa: E402
from checker.resolve import resolve, variant_names  # noqa: E402

SAFETY = (m.PropertyKind.INVARIANT, m.PropertyKind.ASSERT, m.PropertyKind.DEADLOCK, m.PropertyKind.FINAL)


def expected_safety(model: m.Model) -> list[str]:
    return [p.name for p in model.properties if p.kind in SAFETY and p.name in model.expected_violations]


def one(path: str, variant: str, depth: int, timeout: float, rounds: int) -> None:
    """The rows of one variant, tab-separated, on stdout (bmc's rows as it is cut off)."""
    from checker.engines.explicit import explore
    from checker.engines.smt import encode
    from checker.engines.smt.bmc import bmc

    cm = compile_program(ir.build(resolve(parse(open(path, encoding="utf-8").read(), path), variant)))
    wanted = expected_safety(cm.program.model)
    t = time.process_time()
    ex = explore(cm)
    t_exp = time.process_time() - t
    # bmc searches for the expected violations only, so that it stops once it has them
    # rather than go on to --depth for the properties that hold and the model error none
    # of these variants has (each counterexample is still replayed step by step)
    build = encode.Encoding._build

    def only_wanted(enc, width):
        needed = build(enc, width)
        enc.properties = [p for p in enc.properties if p.name in wanted]
        return needed

    encode.Encoding._build = only_wanted
    # the budget: a CPU-time alarm, whose signal the Z3 engines' watchdog takes as Ctrl-C
    signal.signal(signal.SIGPROF, lambda signum, frame: None)
    signal.setitimer(signal.ITIMER_PROF, timeout)
    cpu = time.process_time()
    # no per-query timeout (a wall-clock one would measure the machine's load): the budget bounds it
    r = bmc(cm, depth, None, True, rounds=rounds)
    for name in wanted:
        cx = ex.counterexamples.get(name)
        explicit = str(cx.trace.length) if cx else "-"
        f = r.findings.get(name)
        if f is not None and f.counterexample is not None:
            # "found at depth K (K rounds, S steps)"; plain bmc: the depth is the steps
            k = f.note.split()[3] if rounds else str(f.counterexample.trace.length)
            got = [k, str(f.counterexample.trace.length), f"{f.cpu_seconds - cpu:.1f}"]
        else:
            got = ["not found", "", "", ]
        print("\t".join([os.path.basename(path), variant, name, *got, explicit, f"{t_exp:.2f}",
                         "" if f is not None and f.counterexample else ((f.note if f else "") or r.stats.limit or "")]),
              flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds per variant (default 60)")
    ap.add_argument("--depth", type=int, default=45, help="rounds at most (default 45)")
    ap.add_argument("--rounds", type=int, default=1, metavar="N", help="steps per instance per round (default 1)")
    ap.add_argument("--steps", action="store_true", help="plain bmc, one step per frame (for comparison)")
    ap.add_argument("--one", nargs=2, metavar=("PATH", "VARIANT"), help=argparse.SUPPRESS)
    ap.add_argument("models", nargs="*", help="MODEL or MODEL:VARIANT (default: every shipped model)")
    args = ap.parse_args()
    if args.one:
        one(args.one[0], args.one[1], args.depth, args.budget, 0 if args.steps else args.rounds)
        return 0
    todo = []
    for name in args.models or [os.path.basename(p)[:-5] for p in sorted(glob.glob(f"{ROOT}/models/*.spec"))]:
        model, _, variant = name.partition(":")
        path = f"{ROOT}/models/{model}.spec"
        spec = parse(open(path, encoding="utf-8").read(), path)
        for v in [variant] if variant else variant_names(spec):
            r = resolve(spec, v)
            if r.memory == "sc" and expected_safety(r):
                todo.append((path, v))
    print("model\tvariant\tproperty\tround\tsteps\tbmc cpu s\texplicit steps\texplicit cpu s\twhy not found")
    before = 0.0
    for path, variant in todo:
        p = subprocess.Popen([sys.executable, __file__, "--budget", str(args.budget), "--depth", str(args.depth),
                              "--rounds", str(args.rounds), *(["--steps"] if args.steps else []), "--one", path, variant])
        try:
            p.wait(timeout=20 * args.budget)  # the CPU alarm failing to stop it
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            p.wait()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu, before = usage.ru_utime + usage.ru_stime - before, usage.ru_utime + usage.ru_stime
        print(f"#\t{os.path.basename(path)}\t{variant}\tcpu s of the whole run\t{cpu:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
