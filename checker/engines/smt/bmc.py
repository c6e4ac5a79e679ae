"""Bounded model checking: the transition relation unrolled K steps in Z3.

Depth by depth (0, 1, ..., K), the solver looks for a path from an initial state to
a state that violates an invariant, from which a step fails an assertion or raises a
model error, or that is a deadlock. Depths are counted like the explicit engine's:
the number of steps before the bad state, so the first depth at which a property is
found is its shortest counterexample, the same length breadth-first search finds.

No violation up to depth K proves nothing about deeper runs, and is reported as
"no violation up to depth K" (incomplete), unless the search is complete: when no
loop-free path of K+1 steps exists, every reachable state is within K steps of an
initial state, and then what was not found at depths 0..K does not exist.

With `rounds` = N (--rounds [N]), frame k+1 follows frame k by a round
(Encoding.round_at): each process instance in turn takes up to N steps in a row, or
idles. Every round is a sequence of real steps, which the counterexample lists (and
replay checks), and a round may be a single step, so K rounds miss nothing K steps
reach (nor any run whose K rounds each give every instance at most N steps in a row);
depth then counts rounds, the first round a property fails at need not give its
shortest counterexample, and the notes, the limit and the reductions say so. The
completeness argument holds for rounds as it does for steps: a shortest path of rounds
repeats no state. N > 1 is for a process that runs long stretches alone (a vCPU's
entry path): its stretch takes a few rounds, not one a step.

With `stride` = D > 1 (--stride D, rounds only), bmc looks for violations only at every
D-th round and at the last: since a round may be all idle, a run of fewer rounds is one
of r rounds too, so a look at round r covers every round before it, and "no violation up
to r rounds" is said only of a round that was looked at. Each look is a query of its own
to a fresh solver (so Z3 may use its non-incremental bit-vector tactics; the looks a
stride skips are the unsatisfiable ones on the way, each dearer than the one before),
and one answer serves every property it violates.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import z3

from ...backends.python import CompiledModel
from ...results.trace import Counterexample, Stats, Verdict
from .encode import MODEL_ERROR, Encoding, SafetyProperty
from ..crosscheck import ReplayMismatch, replay
from .solver import DEFAULT_TIMEOUT, checked, interrupts_deferred, new_solver
from .terms import disj
from ...base.record import record


@record
class Finding:
    """A Z3 engine's answer for one property."""

    verdict: Verdict
    counterexample: Counterexample | None = None
    note: str = ""
    bound: int | None = None
    cpu_seconds: float | None = None  # bmc: this process's CPU time when it was found (bench/; never printed)


@dataclass
class SymbolicResult:
    stats: Stats
    findings: dict[str, Finding] = field(default_factory=dict)
    model_error: Counterexample | None = None
    checker_bugs: list[str] = field(default_factory=list)
    invariants: list = field(default_factory=list)  # induction --strengthen: the mined ones proved and assumed


class Unrolling:
    """A solver holding init(s0) and T(s0, s1) ... T(s_{k-1}, s_k), grown on demand.
    With `rounds` = N > 0, each T is a round (Encoding.round_at): every process instance
    in turn takes up to N steps or idles, so frame k is reached by k rounds, not k steps."""

    def __init__(self, enc: Encoding, timeout: float | None, from_initial: bool = True, rounds: int = 0):
        self.enc = enc
        self.solver = new_solver(timeout, enc.ctx)
        self.frames = [enc.frame(0)]
        self.sels: list = []
        self.from_initial = from_initial
        self.rounds = rounds
        self.timeout = timeout
        self.fresh = False  # bmc --stride: each check a query to a new solver
        self.added: list = []  # what the solver holds, for a fresh one
        if from_initial:
            self._add(enc.at(enc.init, self.frames[0]))
        else:
            self._add(enc.at(enc.domain, self.frames[0]))

    def _add(self, *formulas) -> None:
        self.solver.add(*formulas)
        self.added.extend(formulas)

    def extend(self, k: int) -> None:
        if self.rounds:
            return self._extend_rounds(k)
        while len(self.frames) <= k:
            f = self.enc.frame(len(self.frames))
            t, sel = self.enc.step_at(len(self.frames) - 1, self.frames[-1], f)
            self._add(t)
            if not self.from_initial:
                self._add(self.enc.at(self.enc.domain, f))
            self.frames.append(f)
            self.sels.append(sel)

    def check(self, *formulas):
        if self.fresh:
            solver = new_solver(self.timeout, self.enc.ctx)
            solver.add(*self.added, *formulas)
            return checked(solver)
        self.solver.push()
        for f in formulas:
            self.solver.add(f)
        r, model, reason = checked(self.solver)
        self.solver.pop()
        return r, model, reason

    def _extend_rounds(self, k: int) -> None:
        assert self.from_initial, "rounds are for bmc, from the initial states"
        while len(self.frames) <= k:
            formulas, after, subs = self.enc.round_at(len(self.frames) - 1, self.frames[-1], self.rounds)
            self._add(*formulas)
            self.frames.append(after)
            self.sels.append(subs)

    def path(self, model, k: int):
        """The states and steps of the solver's path to frame k: with rounds, the real
        steps the first k rounds stand for, idle turns left out."""
        enc = self.enc
        if self.rounds:
            states = [enc.decode(model, self.frames[0])]
            steps = []
            for subs in self.sels[:k]:
                for sub in subs:
                    v = model.eval(sub.sel, model_completion=True).as_long()
                    if v < len(sub.transitions):
                        steps.append(sub.transitions[v].step)
                        states.append(enc.decode(model, sub.after))
            return states, steps
        states = [enc.decode(model, f) for f in self.frames[:k + 1]]
        steps = [enc.transitions[model.eval(s, model_completion=True).as_long()].step
                 for s in self.sels[:k]]
        return states, steps


def counterexample(cm: CompiledModel, result: SymbolicResult, unroll: Unrolling, model, k: int,
                   prop: SafetyProperty, engine: str, from_initial: bool = True,
                   kind: str | None = None) -> Counterexample | None:
    """The solver's path, replayed through the compiled steps; None (and a recorded
    checker bug) if the replay disagrees."""
    states, steps = unroll.path(model, k)
    try:
        trace, message = replay(cm, states, steps, prop.name, prop.kind, from_initial)
    except ReplayMismatch as e:
        result.checker_bugs.append(f"{engine}: the counterexample for {prop.name} does not replay "
                                   f"through the compiled steps: {e}")
        return None
    return Counterexample(prop.name, kind or prop.kind, message, trace, engine)


def interruptible(engine):
    """A Z3 engine that Ctrl-C (a KeyboardInterrupt from a query, engines/solver.py) stops
    with what it decided so far; the properties it did not decide have no finding, and
    the stats say "interrupted". The engine takes the result to fill after the common
    arguments; keyword options (bmc's `rounds`, induction's `strengthen`) go to the engine."""

    @functools.wraps(engine)
    def run(cm: CompiledModel, depth: int, timeout: float | None = DEFAULT_TIMEOUT,
            check_deadlock: bool = True, **options) -> SymbolicResult:
        start = time.monotonic()
        result = SymbolicResult(Stats(engine=engine.__name__))
        try:
            with interrupts_deferred():
                return engine(cm, depth, timeout, check_deadlock, result, **options)
        except KeyboardInterrupt:
            result.stats = Stats(seconds=time.monotonic() - start, complete=False, limit="interrupted",
                                 engine=engine.__name__)
            return result

    return run


@interruptible
def bmc(cm: CompiledModel, depth: int, timeout: float | None, check_deadlock: bool,
        result: SymbolicResult, rounds: int = 0, stride: int = 1) -> SymbolicResult:
    """`rounds`: 0, a step a frame; N, a round a frame (up to N steps per instance).
    `stride` D > 1 (rounds only): look at every D-th round and the last, each look a
    fresh query (module docstring)."""
    assert stride == 1 or rounds, "a look at depth k covers the depths before it only with rounds (idle turns)"
    start = time.monotonic()
    enc = Encoding(cm, check_deadlock)
    unroll = Unrolling(enc, timeout, rounds=rounds)
    unroll.fresh = stride > 1
    open_props = list(enc.properties)
    stop: str | None = None
    undecided = False  # a property's own query was unknown: the run is not complete
    reached = -1
    for k in range(depth + 1):
        if k % stride and k != depth:
            continue  # not a look: the look at a later round covers this one
        unroll.extend(k)
        frame = unroll.frames[k]
        bads = {p.name: enc.at(p.bad, frame) for p in open_props}
        overflow = enc.at(enc.overflow, frame)
        r, first, reason = unroll.check(disj(enc.ctx, *bads.values(), overflow))
        # sat, or unknown: each property asked alone, so that a query that runs out of
        # time leaves only its property undecided (the rest go deeper)
        if r != z3.unsat:
            r, _, reason = unroll.check(overflow)
            if r != z3.unsat:
                stop = (f"an atomic `while` loop runs longer than the encoding unrolls, at depth {k}"
                        if r == z3.sat else f"{reason} at depth {k}")
                break
            served = _served(unroll, bads, open_props, overflow, first if r == z3.sat else None) \
                if unroll.fresh else {}
            for p in list(open_props):
                r, model, reason = served.get(p.name) or unroll.check(bads[p.name])
                if r == z3.unsat:
                    continue
                if r == z3.unknown and p.name == MODEL_ERROR:
                    # model errors not ruled out at depth k: no property may hold beyond it
                    stop = f"{reason} at depth {k}"
                    break
                open_props.remove(p)
                if r == z3.unknown:
                    undecided = True
                    result.findings[p.name] = Finding(Verdict.INCOMPLETE, note=f"{reason} at depth {k}", bound=k - 1)
                    continue
                cx = counterexample(cm, result, unroll, model, k, p, "bmc")
                if p.name == MODEL_ERROR:
                    result.model_error = cx
                    if cx is not None:
                        stop = "search stopped at a model error"
                elif cx is None:
                    result.findings[p.name] = Finding(Verdict.CHECKER_BUG, note=result.checker_bugs[-1])
                else:
                    result.findings[p.name] = Finding(Verdict.VIOLATED, cx, note=found_note(k, cx) if rounds else "",
                                                      cpu_seconds=time.process_time())
            if stop and result.model_error is None:
                break  # depth k not decided
        reached = k
        if stop or not open_props:
            break
    complete = False
    if stop is None and reached == depth and open_props:
        complete = no_longer_loop_free_path(unroll, depth)
    if not open_props and stop is None:
        complete = True
    unit = ROUNDS if rounds else "steps"
    for p in open_props:
        if p.name == MODEL_ERROR:
            continue
        if complete:
            result.findings[p.name] = Finding(
                Verdict.HOLDS, note=f"complete: no loop-free path is longer than {depth} {unit}")
        elif stop:
            result.findings[p.name] = Finding(Verdict.INCOMPLETE, note=stop, bound=reached)
        else:
            result.findings[p.name] = Finding(Verdict.INCOMPLETE, bound=reached, note=f"no violation up to {reached} {unit}"
                                              if rounds else f"no violation up to depth {reached}")
    complete = complete and not undecided
    result.stats = Stats(depth=max(reached, 0), seconds=time.monotonic() - start, complete=complete,
                         limit=None if complete else (stop or (f"{depth} {unit}" if rounds else f"depth {depth}")),
                         engine="bmc", reductions=(rounds_note(rounds, stride),) if rounds else ())
    return result


def _served(unroll: Unrolling, bads: dict, open_props: list, overflow, model=None) -> dict:
    """With fresh queries (--stride), each deep: the answers for every property the
    disjunction's models violate, asked again of the rest until it is unsatisfiable, so
    that a property costs one query rather than one each. Those left out (unknown) are
    then asked alone by the caller, as without a stride. `model`: the look's own answer,
    if it was one (overflow is ruled out at that depth by then)."""
    served: dict = {}
    rest = [p for p in open_props if p.name != MODEL_ERROR]
    while rest:
        if model is None:
            r, model, _ = unroll.check(disj(unroll.enc.ctx, *(bads[p.name] for p in rest)), z3.Not(overflow))
        else:
            r = z3.sat
        if r == z3.unsat:
            served.update((p.name, (z3.unsat, None, "")) for p in rest)
            return served
        if r != z3.sat:
            return served
        hit = [p for p in rest if z3.is_true(model.eval(bads[p.name], model_completion=True))]
        if not hit:  # the look's answer was a model error: the caller asks each property alone
            return served
        served.update((p.name, (z3.sat, model, "")) for p in hit)
        rest = [p for p in rest if p not in hit]
        model = None
    return served


ROUNDS = "rounds"


def found_note(k: int, cx: Counterexample) -> str:
    """Where a violation was found, under --rounds: the round, and the steps it took."""
    return f"found at depth {k} ({k} {ROUNDS}, {cx.trace.length} steps)"


def rounds_note(steps: int, stride: int = 1) -> str:
    """What depth counts under --rounds N (and where --stride D looked), for the reductions."""
    turn = "one step" if steps == 1 else f"up to {steps} steps in a row"
    looks = "" if stride == 1 else (f"; --stride {stride}: violations looked for at rounds {stride}, {2 * stride}, ... and the "
                                    "last, each look covering the rounds before it")
    return (f"rounds (--rounds{'' if steps == 1 else f' {steps}'}): depth counts rounds, not steps; in a round "
            f"every process instance in turn takes {turn} or idles; a counterexample lists its steps, and may be "
            f"longer than the shortest (--engine explicit finds that){looks}")


def no_longer_loop_free_path(unroll: Unrolling, depth: int) -> bool:
    """Whether every path of depth+1 steps from an initial state visits a state twice
    (then every reachable state is reachable within `depth` steps)."""
    enc = unroll.enc
    unroll.extend(depth + 1)
    frames = unroll.frames[:depth + 2]
    distinct = [enc.distinct(frames[i], frames[j]) for i in range(len(frames)) for j in range(i + 1, len(frames))]
    r, _, _ = unroll.check(*distinct)
    return r == z3.unsat
