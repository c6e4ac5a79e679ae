"""Z3 Boolean terms that fold constants as they are built, shared by the encoding and
the engines that query it (bmc, induction, lemmas): a conjunction with a false part is
false, a true part is dropped, so formulas over many steps stay small."""

from __future__ import annotations

import z3


def conj(ctx, *xs):
    """And(*xs) in `ctx`, folded: true parts dropped, false if any part is false."""
    xs = [x for x in xs if not z3.is_true(x)]
    if any(z3.is_false(x) for x in xs):
        return z3.BoolVal(False, ctx)
    return xs[0] if len(xs) == 1 else (z3.And(*xs) if xs else z3.BoolVal(True, ctx))


def disj(ctx, *xs):
    """Or(*xs) in `ctx`, folded: false parts dropped, true if any part is true."""
    xs = [x for x in xs if not z3.is_false(x)]
    if any(z3.is_true(x) for x in xs):
        return z3.BoolVal(True, ctx)
    return xs[0] if len(xs) == 1 else (z3.Or(*xs) if xs else z3.BoolVal(False, ctx))


def negate(x):
    """Not(x), folded for the constants true and false."""
    if z3.is_true(x):
        return z3.BoolVal(False, x.ctx)
    if z3.is_false(x):
        return z3.BoolVal(True, x.ctx)
    return z3.Not(x)
