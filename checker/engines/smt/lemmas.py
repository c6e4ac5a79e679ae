"""Lemmas: `lemma NAME: forall (x: u64, ...) PRED;` proved by Z3 for every value.

A lemma is proved when no values of its parameters make PRED false or make its
evaluation fail (a division by zero that the lazy `&&`, `||`, `->` and `?:` do not
rule out, as in the compiled code). Otherwise Z3's model is the counterexample: the
parameters' values, and the value of each side of each comparison in PRED, so that
a reader sees which part is false (a delta of 18446744073709551615 says "wrapped").
`unknown` (the timeout ran out) is reported as such, never as proved.
"""

from __future__ import annotations

import dataclasses

import z3

from ... import model as m
from ...base.errors import source_text
from ...results.trace import Counterexample, Trace, TraceState, Verdict, show_number
from .bmc import Finding
from .encode import IV, MAX_WIDTH, Evaluator, IntModeUnsupported, kind
from .solver import DEFAULT_TIMEOUT, checked, interrupts_deferred, new_solver
from .terms import conj, negate


class _Cache(dict):
    """Lemma results keyed by the exact formula: variants that do not change a lemma
    do not re-check it."""




def _params(ev: Evaluator, lemma: m.Lemma):
    out, domain = {}, []
    for b in lemma.params:
        t = b.type
        if isinstance(t, m.BoolT):
            out[b.uid] = z3.Bool(b.name, ev.ctx)
        elif isinstance(t, m.BitVecT) and ev.ints:
            x = out[b.uid] = z3.Int(b.name, ev.ctx)
            domain.append(conj(ev.ctx, x >= 0, x <= t.mask))
        elif isinstance(t, m.BitVecT):
            out[b.uid] = z3.BitVec(b.name, t.width, ev.ctx)
        else:
            if isinstance(t, m.IntT):
                assert t.lo is not None and t.hi is not None  # a parameter ranges over lo..hi
                lo, hi = t.lo, t.hi
            else:
                assert isinstance(t, m.EnumT)
                lo, hi = 0, len(t.members) - 1
            x = z3.Int(b.name, ev.ctx) if ev.ints else z3.BitVec(b.name, ev.W, ev.ctx)
            out[b.uid] = ev.iv(x, lo, hi)
            domain.append(conj(ev.ctx, x >= lo, x <= hi))
    return out, domain


def _encode(lemma: m.Lemma, ints: bool):
    width = 8
    ctx = z3.Context()  # per lemma: the answer must not depend on what was checked before
    while True:
        ev = Evaluator(None, width, ctx=ctx, ints=ints)
        params, domain = _params(ev, lemma)
        ev.bound = params
        holds = ev.now(lemma.body)
        if ev.needed <= width or ints:
            return ev, params, domain, holds
        width = ev.needed
        if width > MAX_WIDTH:
            raise ValueError(f"lemma {lemma.name} needs {width}-bit integers")


INT_FIRST = 10.0  # seconds for the integer encoding before the bit-vector one gets its turn


def check_lemma(model: m.Model, lemma: m.Lemma, timeout: float | None = DEFAULT_TIMEOUT,
                cache: dict | None = None) -> Finding:
    """Two encodings with the same semantics: unsigned values as integers with explicit
    wrap-around (fast for linear arithmetic), then as bit-vectors (complete for the
    bitwise operators). The first sat/unsat answer is the result. Ctrl-C ends it with a
    KeyboardInterrupt between queries (solver.interrupts_deferred)."""
    with interrupts_deferred():
        return _check_lemma(model, lemma, timeout, cache)


def _check_lemma(model: m.Model, lemma: m.Lemma, timeout: float | None, cache: dict | None) -> Finding:
    attempts = []
    try:
        attempts.append((_encode(lemma, ints=True), None if timeout is None else min(timeout, INT_FIRST)))
    except IntModeUnsupported:
        pass
    attempts.append((_encode(lemma, ints=False), timeout))
    key = "|".join(_claim(enc).sexpr() for enc, _ in attempts)
    if cache is not None and key in cache:
        return cache[key]
    for enc, budget in attempts:
        ev, params, domain, holds = enc
        s = new_solver(budget, ev.ctx, logic=None if ev.ints else "QF_BV")
        s.add(_claim(enc))
        r, zm, reason = checked(s)
        if r != z3.unknown:
            break
    finding = _finding(model, lemma, s, r, zm, reason, enc)
    if cache is not None:
        cache[key] = finding
    return finding


def _claim(enc):
    ev, params, domain, holds = enc
    return conj(ev.ctx, *domain, negate(conj(ev.ctx, holds, *[negate(e) for e in ev.errs])))


def _finding(model, lemma, s, r, first, reason, enc) -> Finding:
    ev, params, domain, holds = enc
    if r == z3.unsat:
        finding = Finding(Verdict.PROVED, note="proved by Z3 for every value of its parameters")
    elif r == z3.unknown:
        finding = Finding(Verdict.UNKNOWN, note=reason)
    else:
        finding = Finding(Verdict.VIOLATED, _witness(model, lemma, ev, params, _small_model(s, lemma, params, first)))
    return finding


def _small_model(s: z3.Solver, lemma: m.Lemma, params, first):
    """A counterexample with small parameters if there is one (they read better, and a
    wrapped result then stands out as 0xffff...); the first that the solver finds
    otherwise. Deterministic: the same bounds are tried in the same order."""
    unsigned = [(params[b.uid], b.type.width) for b in lemma.params if isinstance(b.type, m.BitVecT)]
    for bits in (8, 16, 32):
        if not unsigned:
            break
        s.push()
        s.add(*[z3.ULT(x, 1 << bits) if z3.is_bv(x) else x < (1 << bits) for x, w in unsigned if w > bits])
        r, model, _ = checked(s)
        s.pop()
        if model is not None:
            return model
    return first


def _value(zm, v, t: m.Type):
    if kind(t) == "bool":
        return z3.is_true(zm.eval(v, model_completion=True))
    term = v.t if isinstance(v, IV) else v
    raw = zm.eval(term, model_completion=True).as_long()
    if kind(t) == "int" and z3.is_bv(term) and raw >= 1 << (term.size() - 1):
        raw -= 1 << term.size()
    return m.value_of(raw, t)  # s8 .. s64: the pattern's two's-complement value


def _comparisons(x: m.TExpr):
    """The comparisons reached from the root through &&, ||, -> and !: what a reader
    wants to see evaluated in a counterexample."""
    if isinstance(x, m.Bin) and x.op in ("&&", "||", "->"):
        yield from _comparisons(x.left)
        yield from _comparisons(x.right)
    elif isinstance(x, m.Un) and x.op == "!":
        yield from _comparisons(x.operand)
    elif isinstance(x, m.Bin) and x.op in ("==", "!=", "<", "<=", ">", ">="):
        yield x


def _wrapping_terms(x: m.TExpr):
    """Every unsigned +, -, * and << in `x`, however deep (inside an expanded `fn`, under a
    shift or a comparison): the terms whose value may have wrapped around."""
    todo = [x]
    while todo:
        t = todo.pop()
        if isinstance(t, m.Bin) and t.op in ("+", "-", "*", "<<") and isinstance(t.type, m.BitVecT) \
                and not t.type.signed:
            yield t
        for f in dataclasses.fields(t):
            v = getattr(t, f.name)
            todo.extend(c for c in (v if isinstance(v, tuple) else (v,)) if isinstance(c, m.TExpr))


def _witness(model: m.Model, lemma: m.Lemma, ev: Evaluator, params, zm) -> Counterexample:
    values = []
    for b in lemma.params:
        v = _value(zm, params[b.uid], b.type)
        values.append((b.name, v))
    seen = {name for name, _ in values}
    for c in _comparisons(lemma.body):
        for side in (c.left, c.right):
            if isinstance(side, (m.Const, m.Bound)):
                continue
            text = source_text(model.source, side.span, 80)
            if not text or text in seen:
                continue
            side_ev = Evaluator(None, ev.W, bound=params, ctx=ev.ctx, ints=ev.ints)
            v = side_ev.now(side)
            if side_ev.needed > ev.W or any(z3.is_true(zm.eval(e, model_completion=True)) for e in side_ev.errs):
                continue  # e.g. a division by zero on this side: its value is not defined
            seen.add(text)
            values.append((text, _value(zm, v, side.type)))
    for x in _wrapping_terms(lemma.body):  # a wrap inside an `fn` or under a shift shows too
        text = source_text(model.source, x.span, 80)
        if not text or text in seen or f"{text} (wrapped)" in seen:  # an operand shown already
            continue
        parts = []
        for part in (x.left, x.right, x):
            part_ev = Evaluator(None, ev.W, bound=params, ctx=ev.ctx, ints=ev.ints)
            v = part_ev.now(part)
            if part_ev.needed > ev.W or any(z3.is_true(zm.eval(e, model_completion=True)) for e in part_ev.errs):
                break
            parts.append(_value(zm, v, part.type))
        else:
            left, right, got = parts
            exact = {"+": left + right, "-": left - right, "*": left * right, "<<": left << right}[x.op]
            if exact != got:
                seen.add(f"{text} (wrapped)")
                values.append((f"{text} (wrapped)", got))
    shown = ", ".join(f"{n} = {show_number(v)}" for n, v in values[:len(lemma.params)])
    message = f"lemma {lemma.name} is false for {shown}"
    if ev.errs and any(z3.is_true(zm.eval(e, model_completion=True)) for e in ev.errs):
        message = f"lemma {lemma.name}: evaluating it fails (division by zero) for {shown}"
    state = TraceState(tuple(values), ())
    return Counterexample(lemma.name, "lemma", message, Trace((state,), ()), "z3")
