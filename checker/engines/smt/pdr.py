"""PDR/IC3: unbounded proofs and counterexamples at any depth, through Z3's Spacer.

The transition system of engines/smt/encode.py becomes three constrained Horn
clauses over one relation Reach(state):

    init(s)                    -> Reach(s)
    Reach(s) && T(s, s', step) -> Reach(s')
    Reach(s) && bad(s)         -> false        (the query)

Spacer either finds an interpretation of Reach that satisfies all three, an inductive
invariant that rules every bad state out (a proof for runs of every length), or a
derivation of the query: a path from an initial state to a bad one, of any length.

Neither answer rests on Spacer's word. A path is read off the derivation's ground
states, its steps found by pinning a bmc unrolling to those states, and it is replayed
through the compiled steps like every Z3 counterexample (engines/crosscheck.py). An
invariant I is re-checked by three one-step queries in a separate solver, a
certificate: no initial state falsifies I, no step leads from I out of I, and no state
of I is bad. Only then is a property "proved".

All open properties are asked at once (with model errors and the encoding's loop
overflow): one invariant proves them together; a path names the properties it
violates, which leave the set, and the rest are asked again. A query the solver cannot
decide (timeout) is asked again for each property alone, so that only the undecided
ones stay incomplete.

With `strengthen` (--strengthen), the candidate invariants mined from an explicit
search (engines/smt/houdini.py) that are jointly one-step inductive (Houdini,
induction.inductive_subset) are given to Spacer as a background invariant L: the
clauses become `init(s) -> Reach(s)`, `Reach(s) && L(s) && T(s, s', step) -> Reach(s')`
and `Reach(s) && L(s) && bad(s) -> false`, so Spacer never has to rule out a state L
excludes. Every reachable state satisfies L (it holds initially and is closed under
every step), so this is the same question; and the certificate re-checks `I && L`, the
invariant Spacer found together with every mined lemma, so a proof rests neither on
the search the lemmas were read off nor on their pruning. The lemmas' own initial and
step cases are certified once per run; a certificate's step query that times out is
split over the invariant's conjuncts (`leaves`), as Houdini splits its own.
"""

from __future__ import annotations

import time

import z3

from ...backends.python import CompiledModel
from ...base import safe_text
from ...results.trace import Stats, Verdict
from .bmc import Finding, SymbolicResult, Unrolling, counterexample, interruptible
from .encode import MODEL_ERROR, Encoding, SafetyProperty
from .houdini import Candidate, Family, mine
from .induction import SPLIT_BUDGET, Split, inductive_subset, listed
from .solver import checked, new_fixedpoint, new_solver, why_unknown
from .terms import conj, disj, negate
from ...base.record import record

OVERFLOW = "loop overflow"  # the pseudo-property: an atomic `while` runs past the encoding's unrolling
#: clauses of an invariant the text output shows; the rest are counted (the certificate checks all)
SHOWN_CLAUSES = 40


@record
class Invariant:
    """An inductive invariant Spacer found and the certificate re-checked."""

    property: str  # what it proves
    clauses: tuple[str, ...]  # its conjuncts, readable
    seconds: float
    mined: int = 0  # the mined lemmas (pdr --strengthen) conjoined with it, listed once in the notes


class Query:
    """Spacer over one encoding: each property asked in a fresh engine and relation;
    with a `background` invariant L over enc.cur, from states satisfying L only."""

    def __init__(self, enc: Encoding, timeout: float | None, background=None):
        self.enc = enc
        self.timeout = timeout
        self.background = background

    def ask(self, bad):
        """(answer, invariant over enc.cur or ground states initial first, why unknown)."""
        enc = self.enc
        reach = z3.Function("Reach", *[v.sort() for v in enc.cur], z3.BoolSort(enc.ctx))
        fp = new_fixedpoint(self.timeout, enc.ctx)
        fp.register_relation(reach)
        fp.declare_var(*enc.cur, *enc.nxt, enc.sel)
        fp.rule(reach(*enc.cur), enc.init)
        known = [] if self.background is None else [self.background]
        fp.rule(reach(*enc.nxt), [reach(*enc.cur), *known, enc.trans])
        r = fp.query(conj(enc.ctx, reach(*enc.cur), *known, bad))
        if r == z3.unsat:
            return r, quantifier_free(interpretation(fp.get_answer(), enc.cur)), ""
        if r == z3.sat:
            return r, ground_states(fp.get_answer(), reach), ""
        return r, None, f"{why_unknown(fp)}, with Spacer's frames at level {fp.get_num_levels(reach)}"


def interpretation(answer, state: list):
    """Spacer's model of Reach, `ForAll(s, Reach(s) == I(s))`, as I over `state`."""
    if z3.is_quantifier(answer):
        body = answer.body()
        if z3.is_eq(body):
            body = body.arg(1)
        # de Bruijn: Var(0) is the last bound variable
        return z3.substitute_vars(body, *reversed(state))
    return answer


def quantified(t) -> bool:
    seen, todo = set(), [t]
    while todo:
        x = todo.pop()
        if z3.is_quantifier(x):
            return True
        if x.get_id() in seen or not z3.is_app(x):
            continue
        seen.add(x.get_id())
        todo.extend(x.children())
    return False


def quantifier_free(inv):
    """Spacer's invariant with the existentials its projection left eliminated where
    Z3's quantifier elimination can (the certificate then needs no quantifier reasoning)."""
    if not quantified(inv):
        return inv
    g = z3.Goal(ctx=inv.ctx)
    g.add(inv)
    out = z3.Then("qe", "simplify", ctx=inv.ctx)(g).as_expr()
    return out


def ground_states(proof, reach) -> list[list]:
    """The Reach facts of a hyper-resolution derivation, the initial state first: each
    resolution step concludes one state (its last argument) from the one before."""
    out: list[list] = []
    todo = [(proof, False)]
    while todo:
        t, done = todo.pop()
        if not z3.is_app(t):
            continue
        k = t.decl().kind()
        if k not in (z3.Z3_OP_PR_HYPER_RESOLVE, z3.Z3_OP_PR_MODUS_PONENS):
            continue
        kids = t.children()
        if done:
            concl = kids[-1]
            if k == z3.Z3_OP_PR_HYPER_RESOLVE and z3.is_app(concl) and concl.decl().eq(reach):
                out.append(concl.children())
            continue
        todo.append((t, True))
        todo.extend((c, False) for c in reversed(kids[:-1]))
    return out


def certify(enc: Encoding, inv, bads: list, timeout: float | None, background=None, closed: bool = False) -> str:
    """Why `inv` (and the `background` invariant Spacer was given, if any) is not an
    inductive invariant excluding every one of `bads` (empty: it is), decided by a
    solver that never saw Spacer's clauses. `closed`: the first two queries (initial,
    step) were already answered for this `inv` and `background`, only the bad states are
    asked. A step query the solver cannot decide is split (`leaves`)."""
    ctx = enc.ctx
    if background is not None:
        inv = conj(ctx, inv, background)
    logic = None if quantified(inv) else "QF_BV"
    s = new_solver(timeout, ctx, logic=logic)
    queries = [("an initial state falsifies it", conj(ctx, enc.init, negate(inv))), ("a step leaves it", None),
               ("a state it allows is bad", conj(ctx, inv, disj(ctx, *bads)))]
    for what, query in queries[2:] if closed else queries:
        if query is None:
            why = leaves(enc, inv, timeout, logic)
            if why:
                return why
            continue
        s.push()
        s.add(query)
        r, _, reason = checked(s)
        s.pop()
        if r == z3.sat:
            return what
        if r == z3.unknown:
            return f"not re-checked: {reason}"
    return ""


def conjuncts(t) -> list:
    """The conjuncts of `t`, nested Ands flattened."""
    if z3.is_and(t):
        return [x for c in t.children() for x in conjuncts(c)]
    return [t]


def leaves(enc: Encoding, inv, timeout: float | None, logic: str | None) -> str:
    """Why a step can leave `inv` ("a step leaves it"; empty: none can): one query for
    all of its conjuncts at the next state. When that times out, the conjuncts are split
    in halves, each half asked in a new solver (after a timeout the old one is slower),
    and split again at a timeout, for at most SPLIT_BUDGET query timeouts: no step
    falsifies any conjunct iff none falsifies one of each part. A conjunct still
    undecided alone, or the budget spent, leaves `inv` not re-checked. (pdr --strengthen's
    196 lemmas of timer_reprogram: the whole query exceeds 20 s, the halves take 8 and 6 s.)"""
    ctx = enc.ctx
    todo = [conjuncts(inv)]
    split = Split(timeout)  # the bound Houdini's split has
    solver = None
    while todo:
        if split.over():
            return (f"not re-checked: its step case, split after the solver timed out, took longer than "
                    f"{SPLIT_BUDGET} timeouts")
        group = todo.pop()
        if solver is None or split.deadline is not None:
            solver = new_solver(timeout, ctx, logic=logic)
            solver.add(inv, enc.trans)
        solver.push()
        solver.add(disj(ctx, *[negate(z3.substitute(c, *zip(enc.cur, enc.nxt))) for c in group]))
        r, _, reason = checked(solver)
        solver.pop()
        if r == z3.sat:
            return "a step leaves it"
        if r == z3.unknown:
            if len(group) == 1 or timeout is None:
                return f"not re-checked: {reason}"
            split.start()
            half = len(group) // 2
            todo += [group[half:], group[:half]]
    return ""


@record
class Lemmas:
    """pdr --strengthen's background: the mined candidates kept (jointly inductive),
    their conjunction over the encoding's state, and the notes that say where they came from."""

    kept: tuple[Candidate, ...]
    term: object  # z3.BoolRef over Encoding.cur, or None when nothing was kept
    notes: tuple[str, ...]
    exact: bool = False  # the lemmas include the states a complete search reached, all kept


def mined_lemmas(cm: CompiledModel, enc: Encoding, states: int, check_deadlock: bool,
                 timeout: float | None) -> Lemmas:
    """The candidates mined from an explicit search of at most `states` states, pruned
    to those that are jointly one-step inductive."""
    found = mine(cm, enc, states, check_deadlock)
    kept, dropped = inductive_subset(enc, found, timeout) if found.candidates else ([], [])
    head = f"pdr --strengthen: {found.describe()}"
    why = [f"  (candidates {why})" for why in dropped]  # (a timeout is no refutation: say so)
    if not kept:
        return Lemmas((), None, (f"{head}; none is kept as inductive, so Spacer is given none", *why))
    lines = [f"{head}; {len(kept)} jointly inductive, given to Spacer and part of every invariant "
             "it certifies:", *listed(kept), *why]
    # with the slots' types (Encoding.domain): a candidate that a slot's type already
    # implies is not made, but Spacer's states are bit-vectors that could break it
    reached = [c for c in found.candidates if c.family is Family.REACHED]
    exact = found.complete and bool(reached) and all(c in kept for c in reached)
    return Lemmas(tuple(kept), conj(enc.ctx, enc.domain, *[c.holds for c in kept]), tuple(lines), exact)


@interruptible
def pdr(cm: CompiledModel, depth: int, timeout: float | None, check_deadlock: bool,
        result: SymbolicResult, strengthen: int | None = None) -> SymbolicResult:
    """Every safety property proved (with a certified invariant), violated (with a
    replayed path of any length) or left incomplete with the solver's reason. `depth`
    is unused: PDR has no bound. With `strengthen`, Spacer is given the mined lemmas of
    an explicit search of at most that many states (result.invariants lists them)."""
    start = time.monotonic()
    enc = Encoding(cm, check_deadlock)
    lemmas = mined_lemmas(cm, enc, strengthen, check_deadlock, timeout) if strengthen else None
    background = lemmas.term if lemmas else None
    if lemmas:
        result.invariants = list(lemmas.kept)
    query = Query(enc, timeout, background)
    # when the lemmas are the states a complete search reached and one of them is bad, a
    # path is what is left to find, and Spacer finds one faster without the background
    search = Query(enc, timeout) if lemmas and lemmas.exact else query
    overflow = SafetyProperty(OVERFLOW, OVERFLOW, enc.overflow)
    open_props = [p for p in [overflow] + list(enc.properties) if not z3.is_false(p.bad)]
    trivial = [p for p in enc.properties if z3.is_false(p.bad) and p.name != MODEL_ERROR]
    for p in trivial:  # no state of the encoding is bad: nothing to ask
        result.findings[p.name] = Finding(Verdict.PROVED, note="proved by pdr: no state can violate it")
    invariants: list[Invariant] = []
    stop: str | None = None
    errors_open = ""
    lemmas_closed: str | None = None  # why the lemmas alone are not certified inductive ("": they are)
    # the overflow and model errors first: a path to either stops the run (as the explicit
    # search stops at a model error); then each property in its own query
    pending = sorted(open_props, key=lambda p: (p.name != OVERFLOW, p.name != MODEL_ERROR))
    while pending and stop is None:
        p = pending.pop(0)
        t0 = time.monotonic()
        given = background  # what the invariant found is certified with
        if background is not None and lemmas_closed is None:  # once: the lemmas' own initial and step cases
            lemmas_closed = certify(enc, z3.BoolVal(True, enc.ctx), [], timeout, background)
        if background is not None and not lemmas_closed and not certify(
                enc, z3.BoolVal(True, enc.ctx), [p.bad], timeout, background, closed=True):
            r, answer, reason = z3.unsat, z3.BoolVal(True, enc.ctx), ""  # the lemmas alone prove it
        else:
            r, answer, reason = search.ask(p.bad)
            if search is not query:
                given = None
        if r == z3.unknown:
            if p.name == OVERFLOW:  # the encoding may cut runs short: no proof would be sound
                stop = f"pdr gave up on whether {WHAT[p.name]} is reachable: {reason}"
            elif p.name == MODEL_ERROR:  # proofs still cover every state reached without one
                errors_open = f"model errors not ruled out (pdr gave up: {reason})"
            else:
                result.findings[p.name] = Finding(Verdict.UNKNOWN, note=f"pdr gave up: {reason}")
        elif r == z3.unsat:
            stop = proved(enc, result, p, answer, timeout, t0, invariants, given)
        else:
            stop = violated(cm, enc, result, p, answer, timeout)
    for p in pending:
        if p.name not in (MODEL_ERROR, OVERFLOW):
            result.findings[p.name] = Finding(Verdict.INCOMPLETE, note=stop or "not checked")
    if errors_open:
        for name, f in result.findings.items():
            if f.verdict is Verdict.PROVED:
                result.findings[name] = Finding(Verdict.PROVED, note=f"{f.note}; it holds in every state "
                                                                     f"reached without a model error, but {errors_open}")
    complete = stop is None and not errors_open and all(
        f.verdict in (Verdict.PROVED, Verdict.VIOLATED) for f in result.findings.values())
    stop = stop or errors_open
    notes = (lemmas.notes if lemmas else ()) + tuple(line for inv in invariants for line in invariant_lines(inv))
    result.stats = Stats(seconds=time.monotonic() - start, complete=complete,
                         limit=None if complete else (stop or "some properties undecided"), engine="pdr", notes=notes)
    return result


WHAT = {MODEL_ERROR: "a model error", OVERFLOW: "an atomic loop overflow"}


def proved(enc: Encoding, result: SymbolicResult, p: SafetyProperty, inv, timeout: float | None, t0: float,
           invariants: list[Invariant], background=None) -> str | None:
    """Record Spacer's proof of `p` once the certificate agrees (on the invariant and the
    background lemmas together); why the run stops, if it does."""
    why = certify(enc, inv, [p.bad], timeout, background)
    if not why:
        found = Invariant(p.name, tuple(readable(enc, c) for c in clauses(inv)), time.monotonic() - t0,
                          mined=len(result.invariants) if background is not None else 0)
        invariants.append(found)
        if p.name not in WHAT:
            how = (f"the {found.mined} mined lemmas alone are an inductive invariant excluding it (Spacer not "
                   "needed)" if found.mined and not found.clauses else f"an inductive invariant of {clause_count(found)}")
            result.findings[p.name] = Finding(Verdict.PROVED, note=f"proved by pdr: {how}, certified by one-step "
                                                                   "induction")
        return None
    msg = f"pdr: the invariant Spacer found for {p.name} does not certify ({why})"
    if why.startswith("not re-checked"):
        verdict = Verdict.UNKNOWN
    else:
        verdict = Verdict.CHECKER_BUG
        result.checker_bugs.append(msg)
    if p.name in WHAT:
        return msg
    result.findings[p.name] = Finding(verdict, note=msg)
    return None


def violated(cm: CompiledModel, enc: Encoding, result: SymbolicResult, p: SafetyProperty, states: list,
             timeout: float | None) -> str | None:
    """Record Spacer's path to a state violating `p`, replayed; why the run stops, if it does.
    The path's steps are found by pinning a bmc unrolling to its states."""
    k = len(states) - 1
    unroll, r, model, reason = pinned(enc, states, p.bad, timeout)
    if r == z3.unknown:
        note = f"pdr found a path of {k} steps, but its steps were not recovered: {reason}"
        if p.name in WHAT:
            return note
        result.findings[p.name] = Finding(Verdict.UNKNOWN, note=note)
        return None
    if r == z3.unsat:
        msg = f"pdr: Spacer's path of {k} steps does not end in a state violating {p.name}"
        result.checker_bugs.append(msg)
        if p.name in WHAT:
            return msg
        result.findings[p.name] = Finding(Verdict.CHECKER_BUG, note=msg)
        return None
    if p.name == OVERFLOW:
        return f"an atomic `while` loop runs longer than the encoding unrolls, at depth {k}"
    cx = counterexample(cm, result, unroll, model, k, p, "pdr")
    if p.name == MODEL_ERROR:
        result.model_error = cx
        return "search stopped at a model error" if cx is not None else result.checker_bugs[-1]
    if cx is None:
        result.findings[p.name] = Finding(Verdict.CHECKER_BUG, note=result.checker_bugs[-1])
    else:
        result.findings[p.name] = Finding(Verdict.VIOLATED, cx, note=f"found by pdr at depth {k}")
    return None


def pinned(enc, states: list, bad, timeout: float | None):
    """A bmc unrolling pinned to Spacer's ground states, asked for `bad` at the last:
    (the unrolling, the answer, its model, why unknown); the model gives the steps."""
    unroll = Unrolling(enc, timeout)
    unroll.extend(len(states) - 1)
    for frame, state in zip(unroll.frames, states):
        unroll.solver.add(*[a == b for a, b in zip(frame, state)])
    r, model, reason = unroll.check(enc.at(bad, unroll.frames[len(states) - 1]))
    return unroll, r, model, reason


def clause_count(inv: Invariant) -> str:
    n = len(inv.clauses)
    mined = f" and the {inv.mined} mined lemmas" if inv.mined else ""
    return f"{n} clause{'s' if n != 1 else ''}{mined}"


def invariant_lines(inv: Invariant) -> list[str]:
    """The text output's lines for one invariant: what it proves, then its clauses."""
    what = f"no {inv.property}" if inv.property in WHAT else inv.property
    lines = [f"pdr: inductive invariant proving {what} ({clause_count(inv)}, "
             f"certified: init => I, I && step => I', I => not bad):"]
    lines += [f"  {c}" for c in inv.clauses[:SHOWN_CLAUSES]]
    if len(inv.clauses) > SHOWN_CLAUSES:
        lines.append(f"  ... and {len(inv.clauses) - SHOWN_CLAUSES} more clauses")
    return lines


def clauses(inv) -> list:
    """The conjuncts of an invariant (Spacer's lemmas)."""
    if z3.is_and(inv):
        return list(inv.children())
    return [] if z3.is_true(inv) else [inv]


_CMP = {z3.Z3_OP_EQ: "==", z3.Z3_OP_SLEQ: "<=", z3.Z3_OP_SLT: "<", z3.Z3_OP_SGEQ: ">=", z3.Z3_OP_SGT: ">",
        z3.Z3_OP_ULEQ: "<=u", z3.Z3_OP_ULT: "<u", z3.Z3_OP_UGEQ: ">=u", z3.Z3_OP_UGT: ">u",
        z3.Z3_OP_BADD: "+", z3.Z3_OP_BSUB: "-", z3.Z3_OP_BMUL: "*", z3.Z3_OP_BAND: "&", z3.Z3_OP_BOR: "|"}


def readable(enc: Encoding, t) -> str:
    """A Z3 term over the state in the spec's notation: slot names, values as the
    model's integers (signed for ranges, unsigned for uN), `bit i of x` for Spacer's
    bit tests, and `<u` for an unsigned comparison of a signed slot."""
    return safe_text.printable(_show(enc, t, top=True))


def _show(enc: Encoding, t, top: bool = False) -> str:
    if z3.is_bv_value(t):
        v = t.as_long()
        if t.size() == enc.width and v >= 1 << (enc.width - 1):
            v -= 1 << enc.width
        return str(v)
    if z3.is_true(t) or z3.is_false(t):
        return "true" if z3.is_true(t) else "false"
    if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
        return t.decl().name()
    if not z3.is_app(t):
        return t.sexpr()
    k, kids = t.decl().kind(), t.children()
    paren = (lambda s: s) if top else (lambda s: f"({s})")
    if k == z3.Z3_OP_AND:
        return paren(" && ".join(_show(enc, c) for c in kids))
    if k == z3.Z3_OP_OR:
        return paren(" || ".join(_show(enc, c) for c in kids))
    if k == z3.Z3_OP_NOT:
        c = kids[0]
        if z3.is_eq(c):
            bit = _bit_test(enc, c)
            if bit is not None:
                return bit[1:] if bit.startswith("!") else f"!{bit}"
            return paren(f"{_show(enc, c.arg(0))} != {_show(enc, c.arg(1))}")
        return f"!{_show(enc, c)}"
    if k == z3.Z3_OP_EQ:
        bit = _bit_test(enc, t)
        if bit is not None:
            return bit
    if k == z3.Z3_OP_BIT2BOOL:
        return f"bit {t.params()[0]} of {_show(enc, kids[0])}"
    if k == z3.Z3_OP_EXTRACT:
        hi, lo = t.params()
        return f"{_show(enc, kids[0])}[{hi}:{lo}]"
    if k == z3.Z3_OP_BNEG:
        return f"-{_show(enc, kids[0])}"
    if k == z3.Z3_OP_ITE:
        return f"({_show(enc, kids[0])} ? {_show(enc, kids[1])} : {_show(enc, kids[2])})"
    if k in _CMP:
        return paren(f" {_CMP[k]} ".join(_show(enc, c) for c in kids))
    return t.sexpr()


def _bit_test(enc: Encoding, eq) -> str | None:
    """`bit i of x` (or its negation) for extract(i, i, x) == 1 (== 0)."""
    a, b = eq.arg(0), eq.arg(1)
    if z3.is_bv_value(a):
        a, b = b, a
    if z3.is_app(a) and a.decl().kind() == z3.Z3_OP_EXTRACT and z3.is_bv_value(b):
        hi, lo = a.params()
        if hi == lo:
            body = f"bit {lo} of {_show(enc, a.arg(0))}"
            return body if b.as_long() == 1 else f"!{body}"
    return None
