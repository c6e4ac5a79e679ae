"""Why partial-order reduction takes no ample set: for one variant, the reduced search
as `check` makes it, and over its reached states, per instance, what kept a cluster
from growing out of it (PartialOrder.blockers), most frequent first.

    python scripts/por_why.py models/vcpu_requests.spec
    python scripts/por_why.py models/csd_wait_ipi.spec --variant base_tso --top 5
    python scripts/por_why.py models/x.spec --memory-model tso

A reason names the step that cannot be in an ample set (it changes what a property
reads, or closes a loop of its process: the cycle proviso) and, when it is another
instance's, that the cluster needed that instance; under liveness, a conflict at all.
"""

from __future__ import annotations

import argparse
import collections
import sys

from checker.backends.python import compile_program
from checker.base.errors import SpecError
from checker.engines import reduce
from checker.engines.explicit import Limits, explore
from checker.pipeline import Options, compile_variant, load


def tally(path: str, variant: str, memory: str | None) -> tuple[str, collections.Counter]:
    """(a line of counts, reason -> the states it blocked an instance in)."""
    spec = load(path)
    cm = compile_variant(spec, variant, Options(variants=(variant,), memory=memory, progress=False))
    if not cm.liveness and cm.program.model.memory != "lkmm":  # as `check` searches it (pipeline.py)
        program, merged = reduce.merge_local_steps(cm.program)
        cm = compile_program(program) if merged else cm
    red = reduce.plan(cm, True, "off")
    if red.por is None:
        return "no partial-order reduction applies: " + "; ".join(red.notes), collections.Counter()
    ex = explore(cm, Limits(), graph=True, reduction=red)
    reasons: collections.Counter = collections.Counter()
    for t in ex.graph.states:
        for name, why in red.por.blockers(cm.pack(t)).items():
            reasons[f"{name}: {why}"] += 1
    return f"{ex.stats.states:,} states, {ex.stats.ample_states or 0:,} expanded with an ample set", reasons


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--variant", default="base")
    ap.add_argument("--memory-model", choices=("sc", "tso", "lkmm"))
    ap.add_argument("--top", type=int, default=12, help="how many reasons to print (default 12)")
    args = ap.parse_args(argv)
    try:
        head, reasons = tally(args.spec, args.variant, args.memory_model)
    except SpecError as e:
        try:
            source = open(args.spec).read()
        except OSError:
            source = None
        print(e.render(source), file=sys.stderr)
        return 2
    print(f"{args.spec} {args.variant}: {head}")
    for reason, n in reasons.most_common(args.top):
        print(f"{n:7,}  {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
