"""Liveness under Z3: fair lassos by bmc, proofs by pdr, on one liveness-to-safety product.

`always (P -> eventually Q)` fails on a fair run that reaches a P-state after which Q
never holds: a lasso (a stem, then a loop that repeats for ever), or a run that stays in
its last state because no fair actor can move there. engines/liveness.py states the
fairness (weak per instance of a fair process and, under tso, per store buffer's flush;
weak or strong per `fair` action); this module follows it to the letter. Biere, Artho
and Schuppan's liveness-to-safety construction turns "such a run exists" into "a bad state is reachable" in the product
of the model with a monitor:

* `$after`: P held at some state so far and Q at none since (so `$after` implies !Q).
  It may be set at any P-state: the monitor guesses where the violation starts.
* `$saved` and `$saved.x` for each slot x: once `$after` holds, the monitor may save the
  state it leaves, guessing that the loop starts there. From then on it records, per
  fair actor, whether the actor moved or was disabled in the loop so far (`$fair(A)`),
  and per strongly fair action whether it was taken (`$taken(A)`) and whether it was
  enabled (`$enabled(A)`) there.
* bad: the loop closes (the state equals the saved one) and every record says the loop
  is fair (weak: moved or disabled in it; strong: taken in it, or enabled nowhere in it),
  or `$after` holds where no fair actor can move (the run may stay there for ever).

This is exactly the explicit engine's criterion: a fair cycle through a !Q-component
after a P-state exists iff a lasso of the model satisfies the records above.

bmc unrolls the product depth by depth: depth = stem + loop, so the first depth with a
bad state gives the shortest lasso in total length. pdr asks Spacer whether a bad state
is reachable; an invariant it finds is certified by pdr's one-step induction check on
the product before the property is *proved*. A path to a bad state is a lasso: it is
replayed through the compiled steps, then the explicit liveness engine judges the path's
states (liveness.judge) and reports the fair lasso it finds there, printed as every
liveness counterexample is; if it finds none, the row says *checker bug*. bmc finding no
lasso up to depth K says so (incomplete), never *holds*.

pdr --strengthen gives Spacer the mined lemmas L that pdr's safety run kept (jointly
inductive on the model) as a background invariant of the product: L on the model's
slots, and L on the saved copy once one is saved (the saved state was a reachable
state). Both are closed under the product's steps; the certificate re-checks them with
Spacer's invariant.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import cast

import z3

from ...backends.python import CompiledModel, CompiledStep
from ...results.trace import Stats, Verdict
from .. import liveness
from ..crosscheck import ReplayMismatch, replay_steps
from .bmc import Finding, SymbolicResult, Unrolling, interruptible
from .encode import Encoding, LivenessTerms
from .houdini import Candidate
from .pdr import Invariant, Query, certify, clause_count, clauses, invariant_lines, pinned, readable
from .terms import conj, disj, negate
from ...base.record import record

#: the monitor's slots, named so that no model slot can share a name (`$` is no identifier)
AFTER, SAVED = "$after", "$saved"


@record
class FairActor:
    """One fairness assumption over the encoding's `cur`: where it is enabled, and the
    step selector's values that move it."""

    name: str
    strong: bool
    enabled: object
    moves: tuple[int, ...]


def fair_actors(enc: Encoding) -> list[FairActor]:
    """The liveness engine's fair actors (liveness.fair_mask, liveness.fair_actions): each
    instance of a process without `unfair`, under tso each store buffer's flush (weakly
    fair, enabled where the buffer holds a store), and each `fair` action per instance.
    Enabled as there: one of its steps returns a successor, fails an assertion or raises
    a model error (liveness.runs); a store into a full buffer waits (is disabled)."""
    ctx = enc.ctx

    def actor(name: str, strong: bool, trs: list) -> FairActor:
        return FairActor(name, strong, disj(ctx, *[disj(ctx, tr.moved, tr.err) for tr in trs]),
                         tuple(tr.index for tr in trs))

    out = [actor(inst.name, False, [tr for tr in enc.transitions if tr.gid == inst.gid])
           for inst in enc.cm.instances if not inst.process.unfair]
    names = liveness.actor_names(enc.cm)
    out += [actor(names[f.gid], False, [tr for tr in enc.transitions if tr.gid == f.gid])
            for f in enc.cm.flushes]  # tso: each buffer drains eventually (liveness.fair_mask)
    seen: dict[str, int] = {}
    for inst, fa in liveness.fair_actions(enc.cm):
        name = f"{fa.describe()} ({inst.name})"
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:  # two actions on one line: the monitor's slots must not share a name (one Z3 constant)
            name += f" #{seen[name]}"
        out.append(actor(name, fa.strong,
                         [tr for tr in enc.transitions
                          if tr.gid == inst.gid and isinstance(tr.step, CompiledStep) and tr.step.step.uid in fa.uids]))
    return out


class Product:
    """The model times the lasso monitor for one liveness property, with the interface
    of an Encoding that bmc's Unrolling and pdr's Query and certify use (ctx, cur, nxt,
    sel, init, trans, frame, at, step_at, decode, transitions)."""

    def __init__(self, enc: Encoding, live: LivenessTerms):
        ctx = self.ctx = enc.ctx
        self.enc, self.live, self.width = enc, live, enc.width
        self.transitions = enc.transitions
        self.actors = fair_actors(enc)
        n = len(enc.cur)
        boolean = z3.BoolSort(ctx)
        names = [AFTER, SAVED] + [f"{SAVED}.{sl.name}" for sl in enc.layout.slots]
        sorts = [boolean, boolean] + [enc.sort(j) for j in range(n)]
        for a in self.actors:
            names += [f"$taken({a.name})", f"$enabled({a.name})"] if a.strong else [f"$fair({a.name})"]
            sorts += [boolean] * (2 if a.strong else 1)
        self.names, self.sorts = names, sorts
        self.cur = list(enc.cur) + self._aux("")
        self.nxt = list(enc.nxt) + self._aux("'")
        self.sel = enc.sel
        after, saved, sv, flags = self._parts(self.cur)
        after2, saved2, sv2, flags2 = self._parts(self.nxt)
        cur, nxt = enc.cur, enc.nxt
        p, q, err = live.trigger, live.goal, live.err

        def primed(t):
            return z3.substitute(t, *zip(cur, nxt))

        self.init = conj(ctx, enc.init, z3.Implies(after, conj(ctx, p, negate(q), negate(err))), negate(saved),
                         *[a == b for a, b in zip(sv, cur)], *[negate(f) for f in flags])
        records = []
        k = 0
        for a in self.actors:
            moved = disj(ctx, *[self.sel == i for i in a.moves])
            if a.strong:
                records += [flags2[k] == conj(ctx, saved2, disj(ctx, flags[k], moved)),
                            flags2[k + 1] == conj(ctx, saved2, disj(ctx, flags[k + 1], a.enabled))]
                k += 2
            else:
                records.append(flags2[k] == conj(ctx, saved2, disj(ctx, flags[k], moved, negate(a.enabled))))
                k += 1
        self.trans = conj(ctx, enc.trans,
                          z3.Implies(after, after2),
                          z3.Implies(after2, conj(ctx, negate(primed(q)), negate(primed(err)), disj(ctx, after, primed(p)))),
                          z3.Implies(saved, saved2),
                          z3.Implies(conj(ctx, saved2, negate(saved)), after),
                          *[b2 == z3.If(saved, b, c) for b2, b, c in zip(sv2, sv, cur)],
                          *records)
        fair = []
        k = 0
        for a in self.actors:
            fair.append(disj(ctx, flags[k], negate(flags[k + 1])) if a.strong else flags[k])
            k += 2 if a.strong else 1
        closes = conj(ctx, saved, *[a == b for a, b in zip(cur, sv)], *fair)
        stays = conj(ctx, *[negate(a.enabled) for a in self.actors])
        self.bad = conj(ctx, after, disj(ctx, closes, stays))

    @property
    def domain(self):
        """The well-typed states of the product (k-induction's step case starts from any):
        the model's domain on the current and on the saved copy (a copy of a state)."""
        _, _, sv, _ = self._parts(self.cur)
        return conj(self.ctx, self.enc.domain, z3.substitute(self.enc.domain, *zip(self.enc.cur, sv)))

    def distinct(self, a: list, b: list):
        return disj(self.ctx, *[x != y for x, y in zip(a, b)])

    def monitor(self):
        """What the monitor's own rules make true in every state of the product: it saves
        only after the trigger, records only once it saved, and neither the state after the
        trigger nor the saved one satisfies the goal or fails the property. Certified by
        one-step induction before k-induction assumes it (lasso_induction)."""
        after, saved, sv, flags = self._parts(self.cur)
        live, ctx = self.live, self.ctx

        def on_saved(t):
            return z3.substitute(t, *zip(self.enc.cur, sv))

        return conj(ctx, z3.Implies(saved, after), *[z3.Implies(f, saved) for f in flags],
                    z3.Implies(after, conj(ctx, negate(live.goal), negate(live.err))),
                    z3.Implies(saved, conj(ctx, negate(on_saved(live.goal)), negate(on_saved(live.err)))))

    def background(self, lemmas):
        """The model's invariant `lemmas` (over enc.cur) as one of the product: on the
        current state, and on the saved one once it is saved."""
        _, saved, sv, _ = self._parts(self.cur)
        return conj(self.ctx, lemmas, z3.Implies(saved, z3.substitute(lemmas, *zip(self.enc.cur, sv))))

    def _aux(self, prefix: str) -> list:
        return [z3.Const(f"{prefix}{name}", sort) for name, sort in zip(self.names, self.sorts)]

    def _parts(self, state: list):
        n = len(self.enc.cur)
        return state[n], state[n + 1], state[n + 2:2 * n + 2], state[2 * n + 2:]

    def frame(self, k: int) -> list:
        return self.enc.frame(k) + self._aux(f"{k}:")

    def at(self, formula, frame: list):
        return z3.substitute(formula, *zip(self.cur, frame))

    def step_at(self, k: int, frame: list, following: list):
        sel_k = z3.BitVec(f"step{k}", cast(z3.BitVecRef, self.sel).size(), self.ctx)
        pairs = list(zip(self.cur, frame)) + list(zip(self.nxt, following)) + [(self.sel, sel_k)]
        return z3.substitute(self.trans, *pairs), sel_k

    def decode(self, model: z3.ModelRef, frame: list) -> tuple[int, ...]:
        return self.enc.decode(model, frame[:len(self.enc.cur)])


def _refused(cm: CompiledModel) -> str:
    """Why the lasso engines cannot check this variant's liveness ("" when they can)."""
    if cm.views is not None:  # (the pipeline lists lkmm variants as not checked before this)
        return "not checked under Z3: liveness under lkmm is explicit-only"
    return ""


def _chosen(enc: Encoding, only: tuple[str, ...] | None) -> list[LivenessTerms]:
    return [live for live in enc.liveness if only is None or live.name in only]


def _judged(cm: CompiledModel, result: SymbolicResult, unroll: Unrolling, model, k: int, name: str,
            engine: str, note: str) -> Finding:
    """The solver's path to frame k, replayed through the compiled steps and judged by
    the explicit liveness engine on its states: its fair lasso (or the model error of
    evaluating the property), or a checker bug."""
    states, steps = unroll.path(model, k)
    try:
        path = replay_steps(cm, states, steps)
    except ReplayMismatch as e:
        msg = f"{engine}: the lasso for {name} does not replay through the compiled steps: {e}"
        result.checker_bugs.append(msg)
        return Finding(Verdict.CHECKER_BUG, note=msg)
    lo = liveness.judge(cm, path, name, f"{engine}'s lasso")
    if lo.verdict not in (Verdict.VIOLATED, Verdict.ERROR) or lo.counterexample is None:
        msg = (f"{engine}: the explicit liveness engine finds no fair lasso among the {len(set(path))} states "
               f"of the lasso {engine} found for {name}")
        result.checker_bugs.append(msg)
        return Finding(Verdict.CHECKER_BUG, note=msg)
    cx = replace(lo.counterexample, engine=engine)
    if lo.verdict is Verdict.ERROR:
        return Finding(Verdict.ERROR, cx, note=lo.note)
    stem = cx.trace.loop_start
    assert stem is not None  # (a liveness counterexample is a lasso)
    return Finding(Verdict.VIOLATED, cx, note=f"fair lasso: stem {stem} step(s), loop {cx.trace.length - stem} "
                                              f"step(s); {note}, replayed and judged by the explicit liveness engine")


@interruptible
def lasso_bmc(cm: CompiledModel, depth: int, timeout: float | None, check_deadlock: bool,
              result: SymbolicResult, only: tuple[str, ...] | None = None) -> SymbolicResult:
    """Each liveness property (of `only`, if given): a fair lasso of at most `depth`
    steps (stem and loop), or "no fair lasso up to depth K" (incomplete)."""
    start = time.monotonic()
    enc = Encoding(cm, check_deadlock)
    why = _refused(cm)
    reached = depth
    for live in _chosen(enc, only):
        if why:
            result.findings[live.name] = Finding(Verdict.INCOMPLETE, note=why)
            continue
        finding = _bounded(cm, enc, live, depth, timeout, result)
        if finding.verdict is Verdict.INCOMPLETE and finding.bound is not None:
            reached = min(reached, finding.bound)
        result.findings[live.name] = finding
    complete = all(f.verdict in (Verdict.VIOLATED, Verdict.ERROR) for f in result.findings.values())
    result.stats = Stats(depth=max(reached, 0), seconds=time.monotonic() - start, complete=complete,
                         limit=None if complete else f"depth {depth}", engine="bmc")
    return result


def _bounded(cm: CompiledModel, enc: Encoding, live: LivenessTerms, depth: int, timeout: float | None,
             result: SymbolicResult) -> Finding:
    product = Product(enc, live)
    unroll = Unrolling(product, timeout)  # type: ignore[arg-type]  # (the Encoding interface it uses)
    for k in range(depth + 1):
        unroll.extend(k)
        frame = unroll.frames[k]
        for what, bad in (("error", live.err), ("lasso", product.bad)):
            if z3.is_false(bad):
                continue
            r, model, reason = unroll.check(product.at(bad, frame))
            if r == z3.unknown:
                return Finding(Verdict.INCOMPLETE, note=f"no fair lasso up to depth {k - 1}; {reason} at depth {k}",
                               bound=k - 1)
            if r == z3.sat:
                return _judged(cm, result, unroll, model, k, live.name, "bmc",
                               f"found by bmc at depth {k}" if what == "lasso" else "")
    return Finding(Verdict.INCOMPLETE, note=f"no fair lasso up to depth {depth} (stem and loop together)",
                   bound=depth)


@interruptible
def lasso_pdr(cm: CompiledModel, depth: int, timeout: float | None, check_deadlock: bool,
              result: SymbolicResult, only: tuple[str, ...] | None = None,
              lemmas: tuple[Candidate, ...] = ()) -> SymbolicResult:
    """Each liveness property (of `only`, if given) proved by Spacer on the
    liveness-to-safety product (its invariant certified), violated with a replayed
    lasso, or unknown. `depth` is unused. `lemmas`: pdr --strengthen's mined
    invariants of the model (from another encoding: their terms are translated)."""
    start = time.monotonic()
    enc = Encoding(cm, check_deadlock)
    why = _refused(cm)
    invariants: list[Invariant] = []
    known = conj(enc.ctx, enc.domain, *[c.holds.translate(enc.ctx) for c in lemmas]) if lemmas else None
    if not why and not z3.is_false(enc.overflow) and (
            known is None or certify(enc, enc.T, [enc.overflow], timeout, known)):  # (not excluded by the lemmas)
        r, _, reason = Query(enc, timeout, known).ask(enc.overflow)
        if r != z3.unsat:  # the encoding may cut runs short: no proof would be sound
            why = ("an atomic `while` loop may run longer than the encoding unrolls" if r == z3.sat
                   else f"pdr gave up on whether an atomic `while` loop overflows: {reason}")
    for live in _chosen(enc, only):
        if why:
            result.findings[live.name] = Finding(Verdict.INCOMPLETE, note=why)
            continue
        result.findings[live.name] = _unbounded(cm, enc, live, timeout, result, invariants, known, len(lemmas))
    complete = all(f.verdict in (Verdict.PROVED, Verdict.VIOLATED, Verdict.ERROR) for f in result.findings.values())
    result.stats = Stats(seconds=time.monotonic() - start, complete=complete,
                         limit=None if complete else (why or "some liveness properties undecided"), engine="pdr",
                         notes=tuple(line for inv in invariants for line in invariant_lines(inv)))
    return result


def _unbounded(cm: CompiledModel, enc: Encoding, live: LivenessTerms, timeout: float | None,
               result: SymbolicResult, invariants: list[Invariant], known=None, mined: int = 0) -> Finding:
    t0 = time.monotonic()
    product = Product(enc, live)
    background = None if known is None else product.background(known)
    for what, bad in (("error", live.err), ("lasso", product.bad)):
        if z3.is_false(bad):
            continue
        on = product if what == "lasso" else enc
        r, answer, reason = Query(on, timeout, background if what == "lasso" else known).ask(bad)  # type: ignore[arg-type]
        if r == z3.unknown:
            return Finding(Verdict.UNKNOWN, note=f"pdr gave up: {reason}")
        if r == z3.sat:
            ground = [list(s) for s in answer]  # (a path of the model alone pins the model's slots only)
            unroll, r, model, reason = pinned(product, ground, product.bad if what == "lasso" else live.err, timeout)
            if r != z3.sat:
                msg = f"pdr found a path of {len(ground) - 1} steps for {live.name}, but its steps were not recovered" \
                      + (f": {reason}" if reason else "")
                if r == z3.unsat:
                    result.checker_bugs.append(msg)
                return Finding(Verdict.UNKNOWN if r == z3.unknown else Verdict.CHECKER_BUG, note=msg)
            return _judged(cm, result, unroll, model, len(ground) - 1, live.name, "pdr",
                           "found by pdr (need not be the shortest)")
        if what == "lasso":
            fails = certify(product, answer, [product.bad], timeout, background)  # type: ignore[arg-type]
            if fails:
                msg = f"pdr: the invariant Spacer found for {live.name} on the liveness-to-safety product " \
                      f"does not certify ({fails})"
                if fails.startswith("not re-checked"):
                    return Finding(Verdict.UNKNOWN, note=msg)
                result.checker_bugs.append(msg)
                return Finding(Verdict.CHECKER_BUG, note=msg)
            inv = Invariant(f"{live.name} (no fair lasso)", tuple(readable(enc, c) for c in clauses(answer)),
                            time.monotonic() - t0, mined=mined if background is not None else 0)
            invariants.append(inv)
            return Finding(Verdict.PROVED, note=f"proved by pdr: no fair lasso, by an inductive invariant of "
                                                f"{clause_count(inv)} on the liveness-to-safety product, certified "
                                                "by one-step induction")
    return Finding(Verdict.PROVED, note="proved by pdr: no state can start a fair lasso")



@interruptible
def lasso_induction(cm: CompiledModel, depth: int, timeout: float | None, check_deadlock: bool,
                    result: SymbolicResult, only: tuple[str, ...] | None = None,
                    lemmas: tuple[Candidate, ...] = ()) -> SymbolicResult:
    """Each liveness property (of `only`, if given) by k-induction on the
    liveness-to-safety product, k = 0 .. depth: a fair lasso (the base case, which is
    lasso bmc), proved (no loop-free path of k+1 product states ends in a bad one after k
    that are not), or "not k-inductive up to k". `lemmas`: induction --strengthen's mined
    invariants that its safety run proved (another encoding: their terms are translated),
    assumed on the current and the saved state of every frame of the step case."""
    start = time.monotonic()
    enc = Encoding(cm, check_deadlock)
    why = _refused(cm)
    known = conj(enc.ctx, *[c.holds.translate(enc.ctx) for c in lemmas]) if lemmas else None
    reached = depth
    for live in _chosen(enc, only):
        if why:
            result.findings[live.name] = Finding(Verdict.INCOMPLETE, note=why)
            continue
        finding = _inductive(cm, enc, live, depth, timeout, result, known, len(lemmas))
        if finding.verdict is Verdict.INCOMPLETE and finding.bound is not None:
            reached = min(reached, finding.bound)
        result.findings[live.name] = finding
    complete = all(f.verdict in (Verdict.PROVED, Verdict.VIOLATED, Verdict.ERROR) for f in result.findings.values())
    result.stats = Stats(depth=max(reached, 0), seconds=time.monotonic() - start, complete=complete,
                         limit=None if complete else f"k = {depth}", engine="induction")
    return result


def _inductive(cm: CompiledModel, enc: Encoding, live: LivenessTerms, depth: int, timeout: float | None,
               result: SymbolicResult, known, mined: int) -> Finding:
    """k-induction on one property's product. The step case proves that no product state
    is bad, where bad also covers a failing property and an atomic loop longer than the
    encoding unrolls (the base case reports each of those as itself)."""
    product = Product(enc, live)
    ctx = enc.ctx
    bad = disj(ctx, live.err, product.bad, enc.overflow)
    facts = [product.monitor()]
    if certify(product, facts[0], [], timeout):  # type: ignore[arg-type]  # (never expected: not assumed then)
        facts = []
    if known is not None:
        facts.append(product.background(known))
    base = Unrolling(product, timeout)  # type: ignore[arg-type]  # (the Encoding interface it uses)
    step = Unrolling(product, timeout, from_initial=False)  # type: ignore[arg-type]
    for k in range(depth + 1):
        base.extend(k)
        frame = base.frames[k]
        for what, target in (("error", live.err), ("lasso", product.bad), ("overflow", enc.overflow)):
            if z3.is_false(target):
                continue
            r, model, reason = base.check(product.at(target, frame))
            if r == z3.unknown:
                return Finding(Verdict.UNKNOWN, note=f"{reason} in the base case at depth {k}")
            if r == z3.sat:
                if what == "overflow":
                    return Finding(Verdict.INCOMPLETE, note="an atomic `while` loop runs longer than the encoding "
                                                            f"unrolls, at depth {k}", bound=k - 1)
                return _judged(cm, result, base, model, k, live.name, "induction",
                               f"found by the base case at depth {k}" if what == "lasso" else "")
        # step case: frames 0..k+1 of well-typed product states, loop-free, not bad on 0..k
        step.extend(k + 1)
        frames = step.frames
        if k == 0:
            for fact in facts:
                step.solver.add(product.at(fact, frames[0]))
        for fact in facts:
            step.solver.add(product.at(fact, frames[k + 1]))
        step.solver.add(negate(product.at(bad, frames[k])))
        for i in range(k + 1):
            step.solver.add(product.distinct(frames[i], frames[k + 1]))
        r, _, reason = step.check(product.at(bad, frames[k + 1]))
        if r == z3.unsat:
            with_mined = f", with {mined} mined invariants" if known is not None else ""
            return Finding(Verdict.PROVED, note=f"proved by k-induction on the liveness-to-safety product, k = {k}"
                                                f"{with_mined}: no fair lasso")
        if r == z3.unknown:
            return Finding(Verdict.UNKNOWN, note=f"{reason} in the step case, k = {k}; no fair lasso up to depth {k}")
    strengthened = f" with {mined} mined invariants" if known is not None else ""
    return Finding(Verdict.INCOMPLETE, note=f"no fair lasso up to depth {depth}, and the liveness-to-safety product "
                                            f"is not k-inductive{strengthened} up to k = {depth}", bound=depth)
