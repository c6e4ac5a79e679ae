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

With `strengthen` (--strengthen), candidate invariants mined from an explicit search
(engines/smt/houdini.py) join the properties in that Houdini loop: each candidate must
pass its own base case at every depth (a path falsifying it drops it for good) and the
step case assuming all that are kept; those that survive at k are proved invariants of
every reachable state, so they are assumed on every frame from then on, the new one
included, and the properties are tried again under them. The proof never rests on the
mining: a candidate the search got wrong fails its base or its step case. A step query
over many candidates that times out is split into halves, each in a new solver, rather
than dropping them all (`step_refuted`); a candidate no query decides is not assumed.
"""

from __future__ import annotations

import dataclasses
import time

import z3

from ...backends.python import CompiledModel
from ...results.trace import Stats, Verdict
from .bmc import Finding, SymbolicResult, Unrolling, counterexample, interruptible
from .encode import MODEL_ERROR, Encoding, SafetyProperty
from .houdini import Candidate, Family, Mined, mine
from .solver import checked, new_solver
from .terms import conj, negate

CTI_KIND = "counterexample to induction"
#: mined invariants the text output lists; the rest are counted
SHOWN_INVARIANTS = 40


class Candidates:
    """The mined candidate invariants during one induction run: those still open (they
    passed every base case so far), those proved, and why some were dropped wholesale.
    Each candidate's term at a frame is made once (base and step frames are the same
    constants, in different solvers)."""

    def __init__(self, enc: Encoding, mined: Mined | None):
        self.enc = enc
        self.mined = mined
        self.open: list[Candidate] = list(mined.candidates) if mined else []
        self.proved: list[tuple[Candidate, int]] = []  # with the k that proved it
        self.dropped: list[str] = []  # why all open candidates were dropped at once
        self._at: dict[tuple[int, int], object] = {}
        self._renames: dict[int, tuple] = {}

    def bad(self, c: Candidate, frames: list, i: int):
        key = (id(c), i)
        t = self._at.get(key)
        if t is None:
            t = self._at[key] = negate(self.rename(c.holds, frames, i))
        return t

    def rename(self, t, frames: list, i: int):
        """`enc.at(t, frames[i])` through one C call: z3.substitute checks its pairs in
        Python on every call, which over thousands of candidates costs more than Z3."""
        arrays = self._renames.get(i)
        if arrays is None:
            n = len(self.enc.cur)
            arrays = self._renames[i] = (n, (z3.Ast * n)(*[v.as_ast() for v in self.enc.cur]),
                                         (z3.Ast * n)(*[v.as_ast() for v in frames[i]]))
        ctx = self.enc.ctx
        return z3.BoolRef(z3.Z3_substitute(ctx.ref(), t.as_ast(), *arrays), ctx)

    def falsified(self, model, frame: list, open_c: list[Candidate], bads: list) -> set[int]:
        """The indices of the candidates a solver's state falsifies: read off the decoded
        state in Python (one evaluation per slot, not per candidate), or, should that
        find none (it agrees with Z3 on every mined state, tests/test_houdini.py), by Z3."""
        state = self.enc.decode(model, frame)
        out = {n for n, c in enumerate(open_c) if not c.test(state)}
        return out or {n for n, b in enumerate(bads) if z3.is_true(model.eval(b, model_completion=True))}

    def prune_base(self, base: Unrolling, k: int) -> None:
        """Drop every open candidate that some path of k steps from an initial state
        falsifies. The open candidates are asked as one disjunction; a `sat` drops what
        its path falsifies and the rest is asked again. An `unknown` (a timeout) splits
        the group in halves, each asked in a new solver (`ask`), as the step case does
        (`step_refuted`); a single candidate still unknown is dropped, with a note, and
        past `Split`'s budget every candidate not yet shown is. Sound: a base case
        assumes no candidate, so a group's `unsat` holds for each of its members
        whatever becomes of the others, and a candidate is kept only from such a group."""
        ok_overflow = negate(self.enc.at(self.enc.overflow, base.frames[k]))
        split = Split(base.timeout)
        todo = [list(self.open)] if self.open else []  # a stack of groups
        kept: set[int] = set()
        while todo:
            if split.over():
                left = sum(len(g) for g in todo)
                self.dropped.append(f"{left} dropped unproved: their base case at depth {k}, split after the "
                                    f"solver timed out, took longer than {SPLIT_BUDGET} timeouts ({split.budget:g} s)")
                break
            group = todo.pop()
            bads = [self.bad(c, base.frames, k) for c in group]
            r, model, reason = ask(base, split.deadline is not None, any_of(bads), ok_overflow)
            if r == z3.unsat:
                kept.update(id(c) for c in group)
            elif r == z3.sat:
                drop = self.falsified(model, base.frames[k], group, bads)
                rest = [c for n, c in enumerate(group) if n not in drop]
                if rest:
                    todo.append(rest)
            else:  # not assumed without its base case
                split.start()
                if len(group) == 1:
                    self.dropped.append(f"1 dropped unproved: {reason} in its base case at depth {k} "
                                        f"({group[0].text})")
                else:
                    half = len(group) // 2
                    todo += [group[half:], group[:half]]
        self.open = [c for c in self.open if id(c) in kept]

    def assume(self, solver: z3.Solver, frames: list, indices, which: list[Candidate] | None = None) -> None:
        """Assert the proved candidates (or `which` of them) on the frames at `indices`."""
        for c in [c for c, _ in self.proved] if which is None else which:
            for i in indices:
                solver.add(negate(self.bad(c, frames, i)))

    def notes(self) -> tuple[str, ...]:
        """The text output's lines: what was mined, then the invariants proved and assumed
        (the readable families one by one, the states reached as one line)."""
        if self.mined is None:
            return ()
        head = f"induction --strengthen: {self.mined.describe()}"
        if not self.mined.candidates:
            return (f"{head}; nothing to strengthen with",)
        ks = sorted({k for _, k in self.proved})
        lines = [f"{head}; {len(self.proved)} proved by k-induction"
                 + (f" (k = {', '.join(map(str, ks))})" if ks else "")
                 + (" and assumed in the step cases:" if self.proved else "")]
        lines += listed([c for c, _ in self.proved])
        lines += [f"  (candidates {why})" for why in self.dropped]
        return tuple(lines)


def listed(invariants: list[Candidate]) -> list[str]:
    """The text output's lines for mined invariants: the readable families one by one,
    the states reached (per-location valuations) as one line."""
    reached = [c for c in invariants if c.family is Family.REACHED]
    if len(reached) > 2:
        lines = [f"  the states reached: {len(reached) - 1} control locations, each with the valuations "
                 "seen there (the search's states, proved closed under every step)"]
    else:
        lines = [f"  {c.text}" for c in reached]
    readable = [c for c in invariants if c.family is not Family.REACHED]
    lines += [f"  {c.text}" for c in readable[:SHOWN_INVARIANTS]]
    if len(readable) > SHOWN_INVARIANTS:
        lines.append(f"  ... and {len(readable) - SHOWN_INVARIANTS} more")
    return lines


def inductive_subset(enc: Encoding, mined: Mined, timeout: float | None) -> tuple[list[Candidate], list[str]]:
    """The mined candidates that are jointly one-step inductive (Houdini at k = 0: each
    holds in every initial state, and no step from a state where all of them hold
    falsifies one), so they hold in every reachable state; and why some were dropped
    wholesale. pdr --strengthen gives these to Spacer."""
    cands = Candidates(enc, mined)
    cands.prune_base(Unrolling(enc, timeout), 0)
    step = Unrolling(enc, timeout, from_initial=False)
    step.extend(1)
    _, kept = joint_step(enc, step, 0, [], cands, {}, {})
    return kept, cands.dropped


def any_of(bads: list):
    """Or(bads) without the folding of terms.disj (a Python call per term)."""
    return z3.Or(*bads) if len(bads) > 1 else bads[0]


def joint_step(enc: Encoding, step: Unrolling, k: int, props: list[SafetyProperty], cands: Candidates,
               ctis: dict, notes: dict) -> tuple[list[SafetyProperty], list[Candidate]]:
    """Houdini at k: the properties and open candidates that are k-inductive together.
    Everything still in the set is assumed on frames 0..k (through one flag each, so a
    round drops members without re-adding the rest); a candidate is dropped when some
    step falsifies it at k+1 (`step_refuted`: each model drops every candidate it
    falsifies), a property when its own query is not unsat; repeated until nothing
    fails. Sound with the base cases: no member can be the first to fail."""
    ctx = enc.ctx
    frames = step.frames
    props = list(props)
    open_c = list(cands.open)
    flags: dict[int, object] = {}
    step.solver.push()
    items: list[SafetyProperty | Candidate] = [*props, *open_c]
    for n, item in enumerate(items):
        flag = z3.Bool(f"houdini {k} {n}", ctx)
        flags[id(item)] = flag
        if isinstance(item, SafetyProperty):
            held = [negate(enc.at(item.bad, frames[i])) for i in range(k + 1)]
        else:
            held = [negate(cands.bad(item, frames, i)) for i in range(k + 1)]
        step.solver.add(z3.Implies(flag, conj(ctx, *held)))
    try:
        groups: list[list[Candidate]] = [open_c]
        split = Split(step.timeout)
        while True:
            lits = [flags[id(x)] for x in [*props, *open_c]]
            if open_c:
                drop, groups = step_refuted(step, k, lits, open_c, groups, cands, split)
                if drop:
                    open_c = [c for c in open_c if id(c) not in drop]
                    groups = [kept for g in groups if (kept := [c for c in g if id(c) not in drop])]
                    continue
            failing = []
            for p in props:
                r, model, reason = step.check(*lits, enc.at(p.bad, frames[k + 1]))
                if r == z3.sat:
                    ctis[p.name] = (model, k + 1, p)
                    failing.append(p)
                elif r == z3.unknown:
                    notes[p.name] = f"{reason} in the step case, k = {k}"
                    failing.append(p)
            if not failing:
                return props, open_c
            props = [p for p in props if p not in failing]
    finally:
        step.solver.pop()


#: the wall time one Houdini step case may spend once a query timed out (splitting it),
#: in per-query timeouts; past it the candidates still open are dropped
SPLIT_BUDGET = 10


class Split:
    """The bound on one step case's split queries: it starts at the first timeout."""

    def __init__(self, timeout: float | None):
        self.budget = None if timeout is None else SPLIT_BUDGET * timeout
        self.deadline: float | None = None

    def start(self) -> None:
        if self.deadline is None and self.budget is not None:
            self.deadline = time.monotonic() + self.budget

    def over(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline


def ask(step: Unrolling, fresh: bool, *formulas):
    """`step.check(*formulas)`; `fresh`, the same query to a new solver holding what the
    step solver holds. After a timeout the step solver's own state slows what follows:
    on timer_reprogram a half of the timed-out query took over 20 s in it, 8 s in a new
    solver (and each eighth 2 to 4 s)."""
    if not fresh:
        return step.check(*formulas)
    solver = new_solver(step.timeout, step.enc.ctx)
    solver.add(*step.solver.assertions())
    solver.push()  # (incremental, as the step solver: faster here than one query without push)
    solver.add(*formulas)
    return checked(solver)


def step_refuted(step: Unrolling, k: int, lits: list, open_c: list[Candidate], groups: list[list[Candidate]],
                 cands: Candidates, split: Split) -> tuple[set[int], list[list[Candidate]]]:
    """One round of Houdini's step case for the open candidates, all assumed through
    `lits`: the ids of the candidates to drop (none: every one holds at k+1 after any
    step from frames where all of them held), and the groups to ask next round.

    Each group's `bads` is asked as one disjunction. A `sat` ends the round: the model
    drops every open candidate it falsifies (`cands.falsified` over the whole list, not
    only the group). An `unsat` shows the group holds under the current assumptions. An
    `unknown` (the query timed out) splits the group in two, each half asked in turn
    with the same per-query timeout, from then on each query in a new solver (`ask`);
    a single candidate that is unknown is dropped (with a note). From the first timeout
    on, `split` bounds the time: past it every open candidate is dropped, with a note
    (those shown this round were shown assuming the rest). The groups are kept from round to round (asking them is as sound as asking
    their union, and a group that timed out would likely time out again).

    Soundness: a round that drops nothing asked a partition of the open candidates, each
    part unsat under the assumption of all of them, so together they are closed under
    every step (with their base cases, invariants). A drop only weakens what is
    assumed, so the groups already answered unsat must be asked again: the caller
    restarts the round, and Houdini's fixpoint is over the final set."""
    frames = step.frames
    bads = [cands.bad(c, frames, k + 1) for c in open_c]
    index = {id(c): n for n, c in enumerate(open_c)}
    todo = list(reversed(groups))  # a stack: the first group on top
    done: list[list[Candidate]] = []
    while todo:
        if split.over():  # what was shown this round rests on the rest: all are dropped
            cands.dropped.append(f"{len(open_c)} not assumed at k = {k}: their step case, split after the solver "
                                 f"timed out, took longer than {SPLIT_BUDGET} timeouts ({split.budget:g} s)")
            return {id(c) for c in open_c}, []
        group = todo.pop()
        r, model, reason = ask(step, split.deadline is not None, *lits, any_of([bads[index[id(c)]] for c in group]))
        if r == z3.sat:
            drop = cands.falsified(model, frames[k + 1], open_c, bads)
            return {id(open_c[n]) for n in drop}, done + [group] + list(reversed(todo))
        if r == z3.unsat:
            done.append(group)
        else:
            split.start()
            if len(group) == 1:  # dropping candidates only weakens what is assumed
                cands.dropped.append(f"1 not assumed at k = {k}: {reason} in its step case ({group[0].text})")
                return {id(group[0])}, done + list(reversed(todo))
            half = len(group) // 2
            todo += [group[half:], group[:half]]
    return set(), done


@interruptible
def induction(cm: CompiledModel, depth: int, timeout: float | None, check_deadlock: bool,
              result: SymbolicResult, strengthen: int | None = None) -> SymbolicResult:
    """k-induction up to k = depth; with `strengthen`, assisted by the candidate
    invariants of an explicit search of at most that many states."""
    start = time.monotonic()
    enc = Encoding(cm, check_deadlock)
    cands = Candidates(enc, mine(cm, enc, strengthen, check_deadlock) if strengthen else None)
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
        cands.prune_base(base, k)
        # step case with k: frames 0..k+1, loop-free
        step.extend(k + 1)
        frames = step.frames
        new = frames[k + 1]
        for i in range(k + 1):
            step.solver.add(enc.distinct(frames[i], new))
        for p in proved:
            step.solver.add(negate(enc.at(p.bad, new)))
        cands.assume(step.solver, frames, [k + 1])
        # Houdini: assume every open property (and candidate) on frames 0..k; drop those
        # that can still fail at k+1 and retry; what remains is inductive together. When
        # that proves candidates, the properties left are tried again assuming them on
        # frame k+1 as well (they hold in every reachable state now).
        retry = cands
        while True:
            kept, invariants = joint_step(enc, step, k, [p for p in open_props if p.name not in undecided],
                                          retry, ctis, notes)
            for p in kept:
                open_props.remove(p)
                proved.append(p)
                for f in frames:
                    step.solver.add(negate(enc.at(p.bad, f)))
                if p.name != MODEL_ERROR:
                    note = f"proved by k-induction, k = {k}"
                    if cands.proved or invariants:
                        note += f", with {len(cands.proved) + len(invariants)} mined invariants"
                    result.findings[p.name] = Finding(Verdict.PROVED, note=note)
            cands.open = [c for c in cands.open if c not in invariants]
            cands.proved += [(c, k) for c in invariants]
            cands.assume(step.solver, frames, range(len(frames)), invariants)
            if not invariants or not open_props:
                break
            retry = Candidates(enc, None)  # the candidates left failed assuming these: only the properties again
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
            strengthened = f" and {len(cands.proved)} mined invariants" if cands.mined is not None else ""
            note = (f"not proved by k-induction up to k = {reached}{strengthened}, and no violation up to depth "
                    f"{reached}; the counterexample to induction below starts from a state that may be unreachable: "
                    "the property may need strengthening with an invariant that rules that state out")
            cx = dataclasses.replace(cx, message=f"{cx.message} at the end of a path on which it held before, "
                                                 f"from a state that may be unreachable ({note})")
        result.findings[p.name] = Finding(Verdict.INCOMPLETE, cx, note, bound=reached)
    # the proofs are about runs without model errors: complete only when those are ruled out too
    complete = stop is None and not open_props
    if stop is None and any(p.name == MODEL_ERROR for p in open_props):
        stop = f"model errors not ruled out beyond depth {reached}"
    result.stats = Stats(depth=max(reached, 0), seconds=time.monotonic() - start, complete=complete,
                         limit=None if complete else (stop or f"k = {reached}"), engine="induction",
                         notes=cands.notes())
    result.invariants = [c for c, _ in cands.proved]
    return result
