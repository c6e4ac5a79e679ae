"""k-induction: proves safety properties for runs of every length, or says why not.

For k = 0, 1, ..., K and each property P not yet decided:
  base case: no path of k steps from an initial state ends in a state violating P
             (this is bounded model checking; a path found is a real counterexample);
  step case: no loop-free path s0 .. s(k+1) of well-typed states, with P holding in
             s0 .. sk (and every property already proved holding everywhere), ends in
             a state violating P. Properties are tried together (Houdini): all open
             ones are assumed, those that can still fail are dropped, and the rest
             are proved at once, so invariants that support each other can be proved.
When both hold, P holds in every reachable state: along any run, the last k+1
states before a first violation would form such a path. Because the paths are
loop-free, some k works for every finite model; below it, the step case's path is a
"counterexample to induction": its first state need not be reachable, so it shows
either a real bug deeper than k or an invariant too weak to be inductive (it then
needs strengthening with an invariant that rules that first state out).
"""

from __future__ import annotations

import dataclasses
import time

import z3

from ...backends.python import CompiledModel
from ...results.trace import Stats, Verdict
from .bmc import Finding, SymbolicResult, Unrolling, counterexample, interruptible
from .encode import MODEL_ERROR, Encoding
from .terms import negate

CTI_KIND = "counterexample to induction"


@interruptible
def induction(cm: CompiledModel, depth: int, timeout: float | None, check_deadlock: bool,
              result: SymbolicResult) -> SymbolicResult:
    start = time.monotonic()
    enc = Encoding(cm, check_deadlock)
    base = Unrolling(enc, timeout)
    step = Unrolling(enc, timeout, from_initial=False)
    open_props = list(enc.properties)
    proved: list = []
    ctis: dict[str, tuple] = {}
    notes: dict[str, str] = {}
    stop: str | None = None
    # properties whose base case the solver could not decide at some depth: never
    # proved (a base case not established is no proof), and never assumed in the step
    # case for others (Houdini's joint proof needs every base case of the set)
    undecided: dict[str, int] = {}  # name -> the first depth whose base case is unknown
    reached = -1
    for k in range(depth + 1):
        # base case at depth k
        base.extend(k)
        for p in list(open_props):
            r, model, reason = base.check(enc.at(p.bad, base.frames[k]), negate(enc.at(enc.overflow, base.frames[k])))
            if r == z3.unsat:
                continue
            if r == z3.unknown:
                if p.name not in undecided:
                    notes[p.name] = f"{reason} in the base case at depth {k}"
                    undecided[p.name] = k
                continue
            open_props.remove(p)
            cx = counterexample(cm, result, base, model, k, p, "induction")
            if p.name == MODEL_ERROR:
                result.model_error = cx
                stop = "search stopped at a model error" if cx is not None else None
            elif cx is None:
                result.findings[p.name] = Finding(Verdict.CHECKER_BUG, note=result.checker_bugs[-1])
            else:
                result.findings[p.name] = Finding(Verdict.VIOLATED, cx)
        r, _, reason = base.check(enc.at(enc.overflow, base.frames[k]))
        if r == z3.unknown:
            stop = f"{reason} in the base case at depth {k}"
        elif r != z3.unsat:
            stop = f"an atomic `while` loop runs longer than the encoding unrolls, at depth {k}"
        reached = k
        if stop or not open_props:
            break
        # step case with k: frames 0..k+1, loop-free
        step.extend(k + 1)
        frames = step.frames
        new = frames[k + 1]
        for i in range(k + 1):
            step.solver.add(enc.distinct(frames[i], new))
        for p in proved:
            step.solver.add(negate(enc.at(p.bad, new)))
        # Houdini: assume every open property on frames 0..k; drop those that can still
        # fail at k+1 and retry; what remains is inductive together (sound: with the
        # base case, none of them can be the first to fail on any run)
        candidates = [p for p in open_props if p.name not in undecided]
        while candidates:
            step.solver.push()
            for q in candidates:
                for i in range(k + 1):
                    step.solver.add(negate(enc.at(q.bad, frames[i])))
            failing = []
            for p in candidates:
                r, model, reason = step.check(enc.at(p.bad, frames[k + 1]))
                if r == z3.sat:
                    ctis[p.name] = (model, k + 1, p)
                    failing.append(p)
                elif r == z3.unknown:
                    notes[p.name] = f"{reason} in the step case, k = {k}"
                    failing.append(p)
            step.solver.pop()
            if not failing:
                break
            candidates = [p for p in candidates if p not in failing]
        for p in candidates:
            open_props.remove(p)
            proved.append(p)
            for f in frames:
                step.solver.add(negate(enc.at(p.bad, f)))
            if p.name != MODEL_ERROR:
                result.findings[p.name] = Finding(Verdict.PROVED, note=f"proved by k-induction, k = {k}")
        if not open_props:
            break
    for p in open_props:
        if p.name == MODEL_ERROR:
            continue
        cx = None
        note = notes.get(p.name) or stop or f"not proved by k-induction up to k = {reached}"
        if p.name in undecided:
            result.findings[p.name] = Finding(Verdict.UNKNOWN, None, note, bound=undecided[p.name] - 1)
            continue
        if stop is None and p.name in ctis:
            model, n, prop = ctis[p.name]
            cx = counterexample(cm, result, step, model, n, prop, "induction", from_initial=False, kind=CTI_KIND)
            if cx is None:
                result.findings[p.name] = Finding(Verdict.CHECKER_BUG, note=result.checker_bugs[-1])
                continue
            note = (f"not proved by k-induction up to k = {reached}, and no violation up to depth {reached}; "
                    "the counterexample to induction below starts from a state that may be unreachable: "
                    "the property may need strengthening with an invariant that rules that state out")
            cx = dataclasses.replace(cx, message=f"{cx.message} at the end of a path on which it held before, "
                                                 f"from a state that may be unreachable ({note})")
        result.findings[p.name] = Finding(Verdict.INCOMPLETE, cx, note, bound=reached)
    # the proofs are about runs without model errors: complete only when those are ruled out too
    complete = stop is None and not open_props
    if stop is None and any(p.name == MODEL_ERROR for p in open_props):
        stop = f"model errors not ruled out beyond depth {reached}"
    result.stats = Stats(depth=max(reached, 0), seconds=time.monotonic() - start, complete=complete,
                         limit=None if complete else (stop or f"k = {reached}"), engine="induction")
    return result
