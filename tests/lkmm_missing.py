"""Why `memory lkmm` (checker/memory/lkmm.py) misses an outcome the LKMM allows.

The machine runs each CPU's events in program order, one at a time; a load reads a
store that has already happened, and a store joins its location's coherence order at the
end. So every execution it produces has a *timeline*, a total order of its events that
contains po, rf and co: (po | rf | co) is acyclic. An allowed execution without one is
out of the machine's reach by construction, and of one of the two shapes the verdict
names (LANGUAGE.md, "memory lkmm"):

* LB: (po | rf) already has a cycle: a load reads a store that depends, through po and
  rf, on the load itself (load buffering);
* CO: (po | rf) is acyclic but (po | rf | co) is not: a store is ordered in coherence
  order before a store that happened earlier on every timeline (2+2W, S);
* RW: (po | rf | co) is acyclic, but the LKMM forbids the execution once every load is
  ordered before every po-later store of its CPU (a control dependency added from each
  R to each po-later W): the machine's loads never wait, so a store never becomes
  visible before an earlier load of its CPU, which the LKMM allows without a
  dependency (the load-buffering family, with no cycle in (po | rf));
* FENCE: forbidden only once, on top of RW, the fences that order only with an RMW or
  a lock acquisition are run as the machine runs them (as_machine_fences): an
  smp_mb__before_atomic() with an access between it and its RMW is an smp_mb() just
  before the RMW, and an smp_mb__after_atomic() / smp_mb__after_spinlock() with an RMW /
  a lock acquisition before it is an smp_mb() where it stands, which orders the
  accesses between them too; without those accesses the machine's fences are exact.

A missing outcome is explained when every allowed execution with it is LB, CO, RW or FENCE. One
with an allowed execution whose (po | rf | co) is acyclic is *unexplained*: the
machine's views forbid an execution its timeline could produce (a machine bug, or a
shape the verdict must name). The criterion reads only lkmm.py's candidate executions
(rf, co, po), never the machine.

`python tests/lkmm_missing.py N` classifies N generated programs (outside the suite).
"""

from __future__ import annotations

import enum
import sys
from dataclasses import replace
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from checker.litmus.reader import parse_litmus
from checker.litmus.axiomatic import Execution, TooManyCandidates, acyclic, evaluate, judge
from litmus_to_spec import outcomes


class Shape(enum.Enum):
    LB = "load buffering: (po | rf) has a cycle"
    CO = "coherence against the timeline: (po | rf) acyclic, (po | rf | co) cyclic"
    RW = "a timeline, but forbidden once every load is ordered before its CPU's later stores"
    FENCE = "... and once the __before/after_atomic, __after_spinlock fences order the accesses beside them"
    UNEXPLAINED = "(po | rf | co) acyclic: a timeline exists, the machine should reach it"


def shape_of(x) -> Shape:
    """The shape of one allowed execution (UNEXPLAINED: it has a timeline)."""
    if not acyclic(x.po | x.rf):
        return Shape.LB
    if not acyclic(x.po | x.rf | x.co):
        return Shape.CO
    ordered = loads_before_stores(x)
    if not judge(ordered, "lkmm")[0]:
        return Shape.RW
    if not judge(as_machine_fences(ordered), "lkmm")[0]:
        return Shape.FENCE
    return Shape.UNEXPLAINED


def loads_before_stores(x):
    """x with a control dependency from each load to each po-later store of its CPU."""
    ev = x.events
    ctrl = x.ctrl | {(a, b) for a, b in x.po if ev[a].kind == "R" and ev[b].kind == "W"}
    return Execution(ev, x.po, x.addr, x.data, ctrl, x.rmw, x.rf, x.co, x.regs, x.final)


def as_machine_fences(x):
    """x with the fences that order only with an RMW (herd7's RMW set, a failed cmpxchg
    included) or a lock acquisition (LKW) as checker/memory/lkmm.py runs them: an
    smp_mb__before_atomic() as an smp_mb() just before the first RMW after it (nothing
    when a full fence or no RMW comes first), an smp_mb__after_atomic() /
    smp_mb__after_spinlock() as an smp_mb() where it stands when an RMW / LKW stands
    before it since the last full fence (else nothing)."""
    ev = dict(x.events)
    po = set(x.po)

    def later(g):
        return sorted(b for a, b in x.po if a == g)

    def earlier(g):
        return sorted((a for a, b in x.po if b == g), reverse=True)

    def full(g):
        return ev[g].kind == "F" and ev[g].fence == "mb"

    for g, e in x.events.items():
        if e.kind != "F" or e.fence not in ("before-atomic", "after-atomic", "after-spinlock"):
            continue
        if e.fence == "before-atomic":
            rmw = next((b for b in later(g) if full(b) or "RMW" in ev[b].tags), None)
            if rmw is None or full(rmw):
                ev[g] = replace(e, fence="none")
                continue
            ev[g] = replace(e, fence="mb")  # moved to just before the RMW
            po = {(a, b) for a, b in po if g not in (a, b)}
            po |= {(a, g) for a, b in x.po if b == rmw and a != g} | {(g, rmw)}
            po |= {(g, b) for a, b in x.po if a == rmw}
        else:
            mark = "RMW" if e.fence == "after-atomic" else "LKW"
            first = next((a for a in earlier(g) if full(a) or mark in ev[a].tags), None)
            ev[g] = replace(e, fence="mb" if first is not None and not full(first) else "none")
    return Execution(ev, po, x.addr, x.data, x.ctrl, x.rmw, x.rf, x.co, x.regs, x.final)


def missing(text: str, bound: int = 4):
    """{outcome: Shape} for each outcome the LKMM allows and the machine does not reach,
    and the number of states where a store waited for a full history; None when lkmm.py
    gives up (too many candidates)."""
    test = parse_litmus(text, "gen.litmus")
    shapes: dict = {}

    def visit(key, x):
        shapes.setdefault(key.values, set()).add(shape_of(x))

    try:
        ref = evaluate(test, visit=visit)
    except TooManyCandidates:
        return None
    labels = [k for k, _ in ref.outcomes[0][0].values] if ref.outcomes else []
    got, _, full, _ = outcomes(test, labels=labels, bound=bound)
    assert got <= set(shapes), f"the machine reaches outcomes the LKMM forbids:\n{text}"
    # the criterion's other half: whatever the machine reaches has a timeline
    assert all(Shape.UNEXPLAINED in shapes[o] for o in got), f"a reached outcome without a timeline:\n{text}"
    out = {}
    for o in set(shapes) - got:
        s = shapes[o]
        # explained when no execution of the outcome is in the machine's reach; LB when
        # every one needs load buffering, CO when every one needs LB or the coherence
        # order, RW when each needs one of those or a store before an earlier load, else
        # FENCE
        out[o] = (Shape.UNEXPLAINED if Shape.UNEXPLAINED in s else Shape.LB if s == {Shape.LB}
                  else Shape.CO if s <= {Shape.LB, Shape.CO} else Shape.RW if Shape.FENCE not in s
                  else Shape.FENCE)
    return out, full


def generated(n: int, seed: int):
    """n programs of test_lkmm_herd7's generator, deterministic for a seed."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from test_lkmm_herd7 import programs

    texts = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def collect(text):
        texts.append(text)

    collect()
    return list(dict.fromkeys(texts))


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 500
    seed = int(argv[2]) if len(argv) > 2 else 0
    counts, programs_with, skipped, unexplained = Counter(), Counter(), 0, []
    texts = generated(n, seed)
    import signal

    def slow(*_):
        raise TimeoutError

    signal.signal(signal.SIGALRM, slow)
    for i, text in enumerate(texts):
        signal.alarm(20)  # a program whose state space takes longer is counted as skipped
        try:
            r = missing(text)
        except TimeoutError:
            r = None
        finally:
            signal.alarm(0)
        if r is None:
            skipped += 1
            continue
        out, full = r
        if out:
            programs_with["missing"] += 1
        if full:
            programs_with["full history"] += 1
        for o, s in out.items():
            counts[s] += 1
            if s is Shape.UNEXPLAINED:
                unexplained.append((text, o, full))
                print("UNEXPLAINED", o, "full", full, "\n" + text, flush=True)
        if i % 100 == 0:
            print(i, {s.name: c for s, c in counts.items()}, flush=True)
    print(f"programs {len(texts)} (skipped {skipped}); with a missing outcome {programs_with['missing']};"
          f" with a full history {programs_with['full history']}")
    print("missing outcomes:", sum(counts.values()), {s.name: c for s, c in counts.items()})
    print("unexplained:", len(unexplained))


if __name__ == "__main__":
    main(sys.argv)
