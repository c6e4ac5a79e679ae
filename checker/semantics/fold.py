"""What the back ends decide about an IR expression before anything runs: its folded
form for one process instance (`simplify`), and what storing a value takes beyond the
assignment (`store_needs`).

Both back ends that write code from the IR use these, compile.py (Python, the search)
and promela.py (the Promela twins SPIN checks): a twin counts the same states as the
search only if both fold the same subexpressions and check the same stores, so there is
one definition of each. Partial-order reduction (engines/reduce/) folds array indices
with `simplify` too, so that a step's footprint names the slots its compiled code uses.
"""

from __future__ import annotations


from .. import model as m
from ..base.record import record


def simplify(x: m.TExpr, inst: int | None) -> m.TExpr:
    """`x` with `self` (instance `inst`; None outside a process array), unrolled
    quantifier variables and constant subexpressions folded, so that fixed array
    elements become fixed fields. Folds only what cannot fail at run time: an index or a
    division that would go wrong stays in the code and raises there, when (and only
    when) the step runs."""
    return _Folder(inst).simplify(x)


class _Folder:
    def __init__(self, inst: int | None):
        self.inst = inst
        self.consts: dict[int, int] = {}  # quantifier variables fixed while unrolling

    def simplify(self, x: m.TExpr) -> m.TExpr:
        if isinstance(x, m.SelfE):
            return m.Const(x.span, x.type, self.inst) if self.inst is not None else x
        if isinstance(x, m.Bound):
            return m.Const(x.span, x.type, self.consts[x.uid]) if x.uid in self.consts else x
        if isinstance(x, m.Conv):
            a = self.simplify(x.operand)
            if isinstance(a, m.Const):  # a conversion cannot fail
                if not isinstance(x.type, m.BitVecT):
                    return m.Const(x.span, x.type, m.value_of(a.value, a.type))
                return m.Const(x.span, x.type, m.bv_convert(a.value, a.type, x.type))
            return m.Conv(x.span, x.type, a)
        if isinstance(x, m.Un):
            a = self.simplify(x.operand)
            if isinstance(a, m.Const) and _foldable(x.type, a.type):
                return m.Const(x.span, x.type, {"!": int(not a.value), "-": -a.value, "~": ~a.value}[x.op])
            return m.Un(x.span, x.type, x.op, a)
        if isinstance(x, m.Bin):
            return self.simplify_bin(x)
        if isinstance(x, m.Ite):
            c = self.simplify(x.cond)
            if isinstance(c, m.Const):
                return self.simplify(x.then if c.value else x.orelse)
            return m.Ite(x.span, x.type, c, self.simplify(x.then), self.simplify(x.orelse))
        if isinstance(x, m.Elem):
            return m.Elem(x.span, x.type, x.sym, self.simplify(x.index))
        if isinstance(x, m.At) and x.index is not None:
            return m.At(x.span, x.type, x.process, self.simplify(x.index), x.label)
        if isinstance(x, m.LocalOf) and x.index is not None:
            return m.LocalOf(x.span, x.type, x.sym, x.process, self.simplify(x.index))
        if isinstance(x, m.Quant):
            op = "&&" if x.kind == "forall" else "||"
            out: m.TExpr = m.Const(x.span, m.BOOL, 1 if op == "&&" else 0)
            terms = []
            for k in range(x.lo, x.hi + 1):
                self.consts[x.bound.uid] = k
                try:
                    terms.append(self.simplify(x.body))
                finally:
                    del self.consts[x.bound.uid]
            for t in reversed(terms):
                out = self.simplify_bin(m.Bin(x.span, m.BOOL, op, t, out))
            return out
        if isinstance(x, m.Builtin):
            return m.Builtin(x.span, x.type, x.name, tuple(self.simplify(a) for a in x.args))
        return x

    def simplify_bin(self, x: m.Bin) -> m.TExpr:
        a, b = self.simplify(x.left), self.simplify(x.right)
        op = x.op
        if isinstance(a, m.Const) and op in ("&&", "||", "->"):  # as the code would short-circuit
            if op == "&&":
                return b if a.value else m.Const(x.span, m.BOOL, 0)
            if op == "||":
                return m.Const(x.span, m.BOOL, 1) if a.value else b
            return b if a.value else m.Const(x.span, m.BOOL, 1)
        if op in ("&&", "||") and isinstance(b, m.Const) and b.value == (1 if op == "&&" else 0):
            return a  # `x && true`, `x || false`: the value of x (evaluated as before)
        if isinstance(a, m.Const) and isinstance(b, m.Const) and _foldable(x.type, a.type, b.type):
            v = m.fold_binop(op, a.value, b.value)
            if v is not None:
                return m.Const(x.span, x.type, v)
        return m.Bin(x.span, x.type, op, a, b)


def _foldable(*types: m.Type) -> bool:
    """Only plain integers, booleans and enums fold with Python's operators."""
    return all(isinstance(t, (m.IntT, m.BoolT, m.EnumT)) for t in types)


# -- stores
@record
class StoreNeeds:
    """What storing a value into a target takes besides the assignment, in this order."""

    to_bool: bool  # any nonzero value becomes 1
    wrap: bool  # a bit-vector target: the value is reduced modulo 2**width (C's conversion)
    check: tuple[int, int] | None  # the value must lie in lo..hi, or the model goes wrong


def store_needs(t: m.Type, value: m.TExpr | None) -> StoreNeeds:
    """What storing `value` (None: not known before run time) into a target of type `t`
    takes: what the types and a folded constant do not already guarantee."""
    const = value.value if isinstance(value, m.Const) else None
    check = None
    if isinstance(t, m.IntT) and t.lo is not None and t.hi is not None and not fits(value, t):
        check = (t.lo, t.hi)
    elif isinstance(t, m.BitsetT) and not (value is not None and value.type == t) \
            and not (const is not None and 0 <= const < (1 << t.size)):
        check = (0, (1 << t.size) - 1)
    return StoreNeeds(to_bool=isinstance(t, m.BoolT) and not _is_01(value),
                      wrap=isinstance(t, m.BitVecT) and not fits_bv(value, t), check=check)


def _is_01(value: m.TExpr | None) -> bool:
    return value is not None and isinstance(value, (m.Const, m.Var, m.Elem)) and isinstance(value.type, m.BoolT)


def fits_bv(value: m.TExpr | None, t: m.BitVecT) -> bool:
    """Whether a value needs no reduction modulo 2**width to be stored in `t`."""
    if value is None:
        return False
    vt = value.type
    if isinstance(value, m.Const):
        if isinstance(vt, m.BitVecT) and vt.signed and vt.width < t.width:
            return value.value < vt.half  # a negative pattern must be sign-extended
        return 0 <= value.value <= t.mask
    if isinstance(vt, m.BitVecT):  # a narrower signed pattern must be sign-extended
        return vt.width == t.width or vt.width < t.width and not vt.signed
    if isinstance(vt, m.IntT) and vt.lo is not None and vt.hi is not None:
        return 0 <= vt.lo and vt.hi <= t.mask
    return isinstance(vt, m.BoolT)


def fits(value: m.TExpr | None, t: m.IntT) -> bool:
    """Whether a value is statically known to lie in the target's range (a declared one)."""
    assert t.lo is not None and t.hi is not None
    if value is None:
        return False
    if isinstance(value, m.Const):
        return t.lo <= value.value <= t.hi
    vt = value.type
    return isinstance(vt, m.IntT) and vt.lo is not None and vt.hi is not None and t.lo <= vt.lo and vt.hi <= t.hi
