"""IR -> Z3: the one place that gives the model's semantics to the solver.

The bmc, induction and lemma engines build every formula here. The meaning of each
IR step is the meaning of its generated Python function (checker/backends/python.py), down
to Python's evaluation order: effects of kernel primitives inside an expression
(`x = y + xchg(y, 5)`) happen where the compiler hoists them, before the rest of the
expression is read; `&&`, `||`, `?:` and quantifiers evaluate lazily, so a division
by zero or a bad index on the untaken side is no error; a failed `assert` or a model
error ends the step with no successor. Counterexamples are replayed through the
compiled functions anyway (engines/replay.py), so a divergence shows up as a
reported checker bug rather than a wrong verdict.

Sorts. Every slot of the state is a bit-vector. An unsigned slot (u8..u64) is a
bit-vector of its width. Every other slot (ranges, bools, enums, bit sets, wait
queues, pcs, task states) is a signed bit-vector of one model-wide width W, and so
are all integer intermediate values. W is chosen from the interval of every
(sub)expression on error-free paths, so nothing overflows and W-bit two's
complement is exactly Python's unbounded int: bvsdiv/bvsrem truncate toward zero
like the compiled `_div`/`_mod`, bvashr floors like `>>`. The intervals are
computed while encoding; if they need a wider W, the encoding is rebuilt once.

Guarded execution. A step's body runs on a symbolic copy of the state under a
guard `g`, the condition that control reaches the current operation; each write is
`slot := If(g, new, old)`, so both sides of an `if` need no merging, and `break`,
`continue`, `return` and `goto` just move their guard elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

import z3

from ... import model as m
from ...backends.python import CompiledInstance, CompiledModel, CompiledStep
from ...semantics.primitives import Returns
from ...base.errors import NOWHERE, SpecError
from ...semantics.lower import (Abs, Add, BitOp, Cas, Load, MinMax, Or, Store, TestBit, WaitAdd, WaitRemove, Wake, Xchg,
                                Zero, lower)
from ...ir import (OAssert, OAssign, OBarrier, OBreak, OContinue, OEval, OGoto, OIf, OInline, OReturn, OWhile, Op,
                   StepKind, walk_ops)
from .solver import new_solver
from .terms import conj as _and, disj as _or, negate as _not

LOOP_UNROLL = 64  # iterations of a `while` inside `atomic` the encoding follows
MAX_WIDTH = 512
MODEL_ERROR = "model error"  # the pseudo-property: some step or invariant raises ModelError


def _ite(c, a, b):
    if z3.is_true(c):
        return a
    if z3.is_false(c):
        return b
    if a.eq(b):
        return a
    return z3.If(c, a, b)


def signed_bits(lo: int, hi: int) -> int:
    """The width of a two's-complement bit-vector holding every value in lo..hi."""
    need = max(hi.bit_length() if hi >= 0 else (-hi - 1).bit_length(),
               lo.bit_length() if lo >= 0 else (-lo - 1).bit_length())
    return need + 1


class IV:
    """An integer value: a W-bit signed term and its interval on error-free paths."""

    __slots__ = ("t", "lo", "hi")

    def __init__(self, t, lo: int, hi: int):
        self.t, self.lo, self.hi = t, lo, hi


def kind(t: m.Type) -> str:
    if isinstance(t, m.BoolT):
        return "bool"
    if isinstance(t, m.BitVecT):
        return "bv"
    return "int"


def slot_interval(layout, slot: int) -> tuple[int, int]:
    """The values a non-unsigned slot holds in every reachable state."""
    sl = layout.slots[slot]
    t = sl.type
    if isinstance(t, m.IntT) and t.lo is not None:
        return t.lo, t.hi
    if isinstance(t, m.BoolT):
        return 0, 1
    if isinstance(t, m.EnumT):
        return 0, len(t.members) - 1
    if isinstance(t, m.BitsetT):
        return 0, (1 << t.size) - 1
    if isinstance(t, m.WaitQueueT):
        return 0, (1 << len(layout.instance_names)) - 1
    if isinstance(t, m.BitVecT):
        return 0, t.mask
    raise TypeError(t)


class IntModeUnsupported(Exception):
    """An operator the integer encoding of unsigned values does not cover (bitwise
    operators, shifts by a variable): the caller falls back to bit-vectors."""


class _Loop:
    __slots__ = ("exits", "conts")

    def __init__(self):
        self.exits: list = []
        self.conts: list = []


Deferred = Callable[[object], object]  # lazy guard -> value (BoolRef | BitVecRef | IV)


class Evaluator:
    """Symbolic execution of expressions and operations, mirroring the compiled code.

    About 700 lines, on purpose: it mirrors python.Compiler section by section
    (expressions, loads, stores, core operations, operations), so that the Z3 twin of
    each piece of generated code stands in one place, beside the others.

    `env` is the symbolic state (one term per slot) and changes as operations run;
    `g` is the guard of the current point. Errors (what raises ModelError in the
    compiled code) and assertion failures are collected with their conditions."""

    def __init__(self, enc: Encoding | None, width: int, env: list | None = None,
                 proc: CompiledInstance | None = None, bound: dict | None = None, ctx=None,
                 ints: bool = False):
        self.enc = enc
        self.ctx = enc.ctx if enc is not None else ctx
        # ints: values as Z3 integers, an unsigned w-bit value in 0..2**w-1 with explicit
        # wrap-around. Exactly the same semantics; for linear arithmetic over u64 (the
        # lemmas) the arithmetic solver decides in milliseconds what bit-blasting cannot.
        self.ints = ints
        self.T, self.F = z3.BoolVal(True, self.ctx), z3.BoolVal(False, self.ctx)
        self.W = width
        self.env = env
        self.proc = proc
        self.inst = proc.instance if proc is not None else None
        self.bound = dict(bound or {})
        self.g = self.T
        self.errs: list = []
        self.fails: dict[str, list] = {}
        self.dones: list = []
        self.overflow: list = []
        self.loops: list[_Loop] = []
        self.needed = 0

    # -- bookkeeping
    def unreachable(self, cond) -> bool:
        """Whether no well-typed state gets here (ends the unrolling of a `while`)."""
        if z3.is_false(z3.simplify(cond)):
            return True
        if self.enc is None:
            return False
        # through new_solver, as every query: a bare solver would swallow Ctrl-C (Z3 catches
        # SIGINT while it solves), and the run would go on as if nothing had happened
        s = new_solver(timeout=2.0, ctx=self.ctx)
        s.add(self.enc.domain_of(self.enc.cur), cond)
        return s.check() == z3.unsat

    def need(self, lo: int, hi: int) -> None:
        self.needed = max(self.needed, signed_bits(lo, hi) + 1)

    def iv(self, t, lo: int, hi: int) -> IV:
        self.need(lo, hi)
        return IV(t, lo, hi)

    def const_iv(self, v: int) -> IV:
        self.need(v, v)
        if self.ints:
            return IV(z3.IntVal(v, self.ctx), v, v)
        return IV(z3.BitVecVal(v, self.W, self.ctx), v, v)

    def bv_const(self, v: int, w: int):
        v &= (1 << w) - 1
        return z3.IntVal(v, self.ctx) if self.ints else z3.BitVecVal(v, w, self.ctx)

    def _wrap(self, x, w: int, lo: int, hi: int):
        """An integer known to lie in lo..hi, reduced modulo 2**w (ints mode)."""
        m_ = 1 << w
        if 0 <= lo and hi < m_:
            return x
        if -m_ <= lo and hi < 2 * m_:
            return z3.If(x >= m_, x - m_, z3.If(x < 0, x + m_, x))
        return x % m_

    def error(self, cond) -> None:
        """The compiled code raises ModelError when `cond` holds (it implies the guard)."""
        if z3.is_false(cond):
            return
        self.errs.append(cond)
        self.g = _and(self.ctx, self.g, _not(cond))

    # -- conversions between the three domains
    def as_int(self, v, t: m.Type) -> IV:
        k = kind(t)
        if k == "bool":
            return IV(z3.If(v, self.const_iv(1).t, self.const_iv(0).t), 0, 1)
        if k == "bv" and self.ints:
            if t.signed:
                raise IntModeUnsupported(t.describe())
            return IV(v, 0, t.mask)
        if k == "bv" and t.signed:  # the pattern's two's-complement value
            w = t.width
            self.need(-t.half, t.half - 1)
            if self.W <= w:  # too narrow this round; the encoding is rebuilt wider
                return IV(z3.Extract(self.W - 1, 0, v), -t.half, t.half - 1)
            return IV(z3.SignExt(self.W - w, v), -t.half, t.half - 1)
        if k == "bv":
            w = t.width
            self.need(0, t.mask)
            if self.W <= w:  # too narrow this round; the encoding is rebuilt wider
                return IV(z3.Extract(self.W - 1, 0, v), 0, t.mask)
            return IV(z3.ZeroExt(self.W - w, v), 0, t.mask)
        return v

    def as_bv(self, v, t: m.Type, w: int):
        """C conversion of a value of type `t` to an unsigned `w`-bit value."""
        k = kind(t)
        if k == "bool":
            return z3.If(v, self.bv_const(1, w), self.bv_const(0, w))
        if self.ints:
            if k == "bv" and t.signed:
                raise IntModeUnsupported(t.describe())
            if k == "int":
                return self._wrap(v.t, w, v.lo, v.hi)
            return v if t.width <= w else self._wrap(v, w, 0, t.mask)
        term = v.t if k == "int" else v
        have = term.size()
        if have == w:
            return term
        if have > w:
            return z3.Extract(w - 1, 0, term)
        signed = k == "int" or t.signed  # a signed pattern is sign-extended
        return (z3.SignExt if signed else z3.ZeroExt)(w - have, term)


    # -- the state
    def load(self, slot: int, t: m.Type):
        raw = self.env[slot]
        k = kind(t)
        if k == "bool":
            return raw != 0
        if k == "bv":
            return raw
        lo, hi = slot_interval(self.enc.layout, slot)
        return IV(raw, lo, hi)

    def raw(self, v, t: m.Type, slot: int):
        """A value in a slot's storage sort."""
        st = self.enc.layout.slots[slot].type
        if isinstance(st, m.BitVecT):
            return self.as_bv(v, t, st.width)
        return self.as_int(v, t).t

    def write(self, cands, raw_of) -> None:
        """Store into the candidate slots [(slot, condition)]; raw_of(slot) -> new raw term."""
        for slot, c in cands:
            cond = _and(self.ctx, self.g, c)
            if not z3.is_false(cond):
                self.env[slot] = _ite(cond, raw_of(slot), self.env[slot])

    def select(self, cands, t: m.Type):
        """Read through candidate slots (an array element at a dynamic index)."""
        vals = [(c, self.load(s, t)) for s, c in cands]
        c0, acc = vals[-1]
        for c, v in reversed(vals[:-1]):
            if kind(t) == "int":
                acc = IV(_ite(c, v.t, acc.t), min(v.lo, acc.lo), max(v.hi, acc.hi))
            else:
                acc = _ite(c, v, acc)
        return acc

    def var_slot(self, sym: m.VarSym) -> int:
        return self.enc.layout.slot_of(sym, self.inst)

    def candidates(self, x: m.TExpr, idx_iv: IV | None):
        """[(slot, condition)] for a variable, or an element at index `idx_iv`."""
        if isinstance(x, m.Var):
            return [(self.var_slot(x.sym), self.T)]
        t = x.sym.type
        base = self.var_slot(x.sym)
        if isinstance(x.index, m.Const):
            return [(base + x.index.value - t.lo, self.T)]
        if isinstance(x.index, m.SelfE) and self.inst is not None:
            return [(base + self.inst - t.lo, self.T)]
        out = []
        for k in range(t.lo, t.hi + 1):
            if idx_iv.lo <= k <= idx_iv.hi:
                out.append((base + k - t.lo, idx_iv.t == k))
        return out or [(base, self.F)]

    def out_of(self, v: IV, lo: int, hi: int):
        conds = []
        if v.lo < lo:
            conds.append(v.t < lo)
        if v.hi > hi:
            conds.append(v.t > hi)
        return _or(self.ctx, *conds)

    def address(self, x: m.TExpr):
        """A store target's slots; a dynamic index is checked now (hoisted, as compiled)."""
        if isinstance(x, m.Elem) and not isinstance(x.index, m.Const) and not (
                isinstance(x.index, m.SelfE) and self.inst is not None):
            idx = self.as_int(self.ev(x.index)(self.g), x.index.type)
            t = x.sym.type
            self.error(_and(self.ctx, self.g, self.out_of(idx, t.lo, t.hi)))
            return self.candidates(x, idx)
        return self.candidates(x, None)

    # -- expressions: ev() performs hoisted effects now and returns the deferred rest
    def ev(self, x: m.TExpr) -> Deferred:
        t = x.type
        k = kind(t)
        if isinstance(x, m.Const):
            if k == "bool":
                c = z3.BoolVal(bool(x.value), self.ctx)
            elif k == "bv":
                c = self.bv_const(x.value, t.width)
            else:
                c = self.const_iv(x.value)
            return lambda g: c
        if isinstance(x, (m.Var, m.Elem)):
            if isinstance(x, m.Elem) and not isinstance(x.index, m.Const) and not (
                    isinstance(x.index, m.SelfE) and self.inst is not None):
                di = self.ev(x.index)
                at = x.sym.type

                def read_dyn(g, x=x, di=di, at=at):
                    idx = self.as_int(di(g), x.index.type)
                    self.error(_and(self.ctx, g, self.out_of(idx, at.lo, at.hi)))
                    return self.select(self.candidates(x, idx), t)
                return read_dyn
            cands = self.candidates(x, None)
            return lambda g: self.load(cands[0][0], t)
        if isinstance(x, m.LocalOf):
            return self._local_of(x)
        if isinstance(x, m.SelfE):
            c = self.const_iv(self.inst)
            return lambda g: c
        if isinstance(x, m.Bound):
            return lambda g: self.bound[x.uid]
        if isinstance(x, m.Conv) and not isinstance(t, m.BitVecT):  # a signed pattern's value
            d = self.ev(x.operand)
            return lambda g: self.as_int(d(g), x.operand.type)
        if isinstance(x, m.Conv):
            d = self.ev(x.operand)
            return lambda g: self.as_bv(d(g), x.operand.type, t.width)
        if isinstance(x, m.Un):
            return self._unary(x)
        if isinstance(x, m.Bin):
            return self._binary(x)
        if isinstance(x, m.Ite):
            dc, dt, de = self.ev(x.cond), self.ev(x.then), self.ev(x.orelse)

            def ite(g):
                c = dc(g)
                a = dt(_and(self.ctx, g, c))
                b = de(_and(self.ctx, g, _not(c)))
                if k == "int":
                    return IV(_ite(c, a.t, b.t), min(a.lo, b.lo), max(a.hi, b.hi))
                return _ite(c, a, b)
            return ite
        if isinstance(x, m.At):
            return self._at(x)
        if isinstance(x, m.Quant):
            return self._quant(x)
        if isinstance(x, m.Builtin):
            d = self.builtin(x)
            if d is None:
                raise TypeError(f"builtin {x.name} has no value")
            return d
        raise TypeError(x)

    def now(self, x: m.TExpr):
        """Evaluate an expression as one compiled line does, under the current guard."""
        return self.ev(x)(self.g)

    def _unary(self, x: m.Un) -> Deferred:
        d = self.ev(x.operand)
        k = kind(x.type)
        if x.op == "!":
            return lambda g: _not(d(g))
        if k == "bv":
            if self.ints:
                w = x.type.width
                if x.op == "-":
                    return lambda g: self._wrap(-d(g), w, -x.type.mask, 0)
                return lambda g: x.type.mask - d(g)
            return (lambda g: -d(g)) if x.op == "-" else (lambda g: ~d(g))

        def un(g):
            a = self.as_int(d(g), x.operand.type)
            if x.op == "-":
                return self.iv(-a.t, -a.hi, -a.lo)
            return self.iv(-a.t - 1 if self.ints else ~a.t, -a.hi - 1, -a.lo - 1)
        return un

    def _binary(self, x: m.Bin) -> Deferred:
        op = x.op
        da, db = self.ev(x.left), self.ev(x.right)
        ta, tb = x.left.type, x.right.type
        if op == "&&":
            return lambda g: (lambda a: _and(self.ctx, a, db(_and(self.ctx, g, a))))(da(g))
        if op == "||":
            return lambda g: (lambda a: _or(self.ctx, a, db(_and(self.ctx, g, _not(a)))))(da(g))
        if op == "->":
            return lambda g: (lambda a: _or(self.ctx, _not(a), db(_and(self.ctx, g, a))))(da(g))
        if op in ("==", "!=", "<", "<=", ">", ">="):
            def cmp(g):
                a, b = da(g), db(g)
                if kind(ta) == "bool" and kind(tb) == "bool":
                    r = a == b
                elif kind(ta) == "bv" and kind(tb) == "bv" and ta.signed:
                    if self.ints:
                        raise IntModeUnsupported(ta.describe())
                    r = {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,  # z3: signed
                         "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[op]()
                    return r
                elif kind(ta) == "bv" and kind(tb) == "bv" and self.ints:
                    r = {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
                         "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[op]()
                    return r
                elif kind(ta) == "bv" and kind(tb) == "bv":
                    r = {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: z3.ULT(a, b),
                         "<=": lambda: z3.ULE(a, b), ">": lambda: z3.UGT(a, b),
                         ">=": lambda: z3.UGE(a, b)}[op]()
                    return r
                else:
                    a, b = self.as_int(a, ta).t, self.as_int(b, tb).t
                    r = {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
                         "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[op]()
                    return r
                return r if op == "==" else _not(r)
            return cmp
        if kind(x.type) == "bv" and self.ints:
            if x.type.signed:
                raise IntModeUnsupported(x.type.describe())
            w, mask = x.type.width, x.type.mask

            def intbv(g):
                a, b = da(g), db(g)
                if op in ("/", "%"):
                    self.error(_and(self.ctx, g, b == 0))
                    return a / b if op == "/" else a % b  # non-negative: floor = truncation
                if op == "+":
                    return self._wrap(a + b, w, 0, 2 * mask)
                if op == "-":
                    return self._wrap(a - b, w, -mask, mask)
                if op == "*":
                    return self._wrap(a * b, w, 0, mask * mask)
                if op in ("<<", ">>") and z3.is_int_value(z3.simplify(b)):
                    k = z3.simplify(b).as_long()
                    if k >= w:
                        return self.bv_const(0, w)
                    return self._wrap(a * (1 << k), w, 0, mask << k) if op == "<<" else a / (1 << k)
                raise IntModeUnsupported(op)
            return intbv
        if kind(x.type) == "bv":
            signed = x.type.signed

            def bvop(g):
                a, b = da(g), db(g)
                if op in ("/", "%"):
                    self.error(_and(self.ctx, g, b == 0))
                    if signed:  # C: truncation toward zero, the remainder has the dividend's sign
                        return a / b if op == "/" else z3.SRem(a, b)
                    return z3.UDiv(a, b) if op == "/" else z3.URem(a, b)
                if op == ">>":
                    return a >> b if signed else z3.LShR(a, b)
                return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "&": lambda: a & b,
                        "|": lambda: a | b, "^": lambda: a ^ b, "<<": lambda: a << b}[op]()
            return bvop

        def intop(g):
            a = self.as_int(da(g), ta)
            b = self.as_int(db(g), tb)
            return self._int_op(op, a, b, g)
        return intop

    def _int_op(self, op: str, a: IV, b: IV, g) -> IV:
        corners = lambda f: [f(p, q) for p in (a.lo, a.hi) for q in (b.lo, b.hi)]  # noqa: E731
        if self.ints and op in ("/", "%"):
            self.error(_and(self.ctx, g, b.t == 0))
            q = z3.If((a.t >= 0) == (b.t >= 0), z3.Abs(a.t) / z3.Abs(b.t), -(z3.Abs(a.t) / z3.Abs(b.t)))
            ma = max(abs(a.lo), abs(a.hi))
            if op == "/":
                return self.iv(q, -ma, ma)  # truncation toward zero, as _div
            mr = min(ma, max(abs(b.lo), abs(b.hi)))
            return self.iv(a.t - q * b.t, -mr, mr)
        if self.ints and op in ("&", "|", "^", "<<", ">>"):
            raise IntModeUnsupported(op)
        if op == "+":
            return self.iv(a.t + b.t, a.lo + b.lo, a.hi + b.hi)
        if op == "-":
            return self.iv(a.t - b.t, a.lo - b.hi, a.hi - b.lo)
        if op == "*":
            c = corners(lambda p, q: p * q)
            return self.iv(a.t * b.t, min(c), max(c))
        if op in ("/", "%"):
            self.error(_and(self.ctx, g, b.t == 0))
            ma = max(abs(a.lo), abs(a.hi))
            if op == "/":
                return self.iv(a.t / b.t, -ma, ma)  # bvsdiv: truncates toward zero, as _div
            mr = min(ma, max(abs(b.lo), abs(b.hi)))
            return self.iv(z3.SRem(a.t, b.t), -mr, mr)  # sign of the dividend, as _mod
        if op in ("&", "|", "^"):
            t = {"&": lambda: a.t & b.t, "|": lambda: a.t | b.t, "^": lambda: a.t ^ b.t}[op]()
            if a.lo >= 0 and b.lo >= 0:
                hi = min(a.hi, b.hi) if op == "&" else (1 << max(a.hi, b.hi).bit_length()) - 1
                return self.iv(t, 0, hi)
            n = max(signed_bits(a.lo, a.hi), signed_bits(b.lo, b.hi))
            return self.iv(t, -(1 << (n - 1)), (1 << (n - 1)) - 1)
        if op == "<<":
            self.error(_and(self.ctx, g, _or(self.ctx, b.t < 0, b.t > 4096) if b.lo < 0 or b.hi > 4096 else self.F))
            lo_s, hi_s = max(b.lo, 0), min(b.hi, 4096)
            if lo_s > hi_s:
                return self.iv(a.t << b.t, 0, 0)
            c = [p << q for p in (a.lo, a.hi) for q in (lo_s, hi_s)]
            return self.iv(a.t << b.t, min(c), max(c))
        if op == ">>":
            self.error(_and(self.ctx, g, b.t < 0) if b.lo < 0 else self.F)
            lo_s, hi_s = max(b.lo, 0), max(min(b.hi, 4096), 0)
            c = [p >> q for p in (a.lo, a.hi) for q in (lo_s, hi_s)]
            return self.iv(a.t >> b.t, min(c), max(c))  # bvashr floors, as Python's >>
        raise TypeError(op)

    def _at(self, x: m.At) -> Deferred:
        enc = self.enc
        proc = next(p for p in enc.program.processes if p.name == x.process)
        pcs = sorted(proc.label_pcs.get(x.label, ()))
        base = enc.layout.pc_base[x.process]
        di = self.ev(x.index) if x.index is not None and not isinstance(x.index, m.Const) else None

        def at(g):
            if x.index is None:
                cands = [(base, self.T)]
            elif isinstance(x.index, m.Const):
                cands = [(base + x.index.value, self.T)]
            else:
                idx = self.as_int(di(g), x.index.type)
                self.error(_and(self.ctx, g, self.out_of(idx, 0, proc.instances - 1)))
                cands = [(base + i, idx.t == i) for i in range(proc.instances)
                         if idx.lo <= i <= idx.hi] or [(base, self.F)]
            if not pcs:
                return self.F
            conds = [(c, _or(self.ctx, *[self.env[s] == p for p in pcs])) for s, c in cands]
            acc = conds[-1][1]
            for c, v in reversed(conds[:-1]):
                acc = _ite(c, v, acc)
            return acc
        return at

    def _local_of(self, x: m.LocalOf) -> Deferred:
        """`p.r` / `p[i].r` in a property (compile.local_of): a checked instance index."""
        layout = self.enc.layout
        proc = next(p for p in self.enc.program.processes if p.name == x.process)
        di = self.ev(x.index) if x.index is not None and not isinstance(x.index, m.Const) else None

        def local_of(g):
            if x.index is None:
                cands = [(layout.slot_of(x.sym, 0), self.T)]
            elif isinstance(x.index, m.Const):
                cands = [(layout.slot_of(x.sym, x.index.value), self.T)]
            else:
                idx = self.as_int(di(g), x.index.type)
                self.error(_and(self.ctx, g, self.out_of(idx, 0, proc.instances - 1)))
                cands = [(layout.slot_of(x.sym, i), idx.t == i) for i in range(proc.instances)
                         if idx.lo <= i <= idx.hi] or [(layout.slot_of(x.sym, 0), self.F)]
            return self.select(cands, x.type)
        return local_of

    def _quant(self, x: m.Quant) -> Deferred:
        def quant(g):
            results = []
            guard = g
            for i in range(x.lo, x.hi + 1):
                self.bound[x.bound.uid] = self.const_iv(i)
                v = self.ev(x.body)(guard)
                results.append(v)
                # any()/all() stop at the first decisive element
                guard = _and(self.ctx, guard, _not(v) if x.kind == "exists" else v)
            return _or(self.ctx, *results) if x.kind == "exists" else _and(self.ctx, *results)
        return quant

    # -- kernel primitives (as compile.builtin emits them)
    def builtin(self, c: m.Builtin) -> Deferred | None:
        """One core operation (lower.py), as compile emits it."""
        k = lower(c)
        W = self.W
        if isinstance(k, Load):
            return self.ev(k.loc)
        if isinstance(k, TestBit):
            dbits, dnr = self.ev(k.bits), self.ev(k.nr)

            def test_bit(g):
                bits = self.as_int(dbits(g), k.bits.type)
                nr = self.as_int(dnr(g), k.nr.type)
                if not isinstance(k.nr, m.Const):  # a computed bit number must name a bit of the set
                    self.error(_and(self.ctx, g, self.out_of(nr, 0, k.bits.type.size - 1)))
                return ((bits.t >> nr.t) & 1) != 0
            return test_bit
        if isinstance(k, Zero):
            d = self.ev(k.x)
            if k.nonzero:
                return lambda g: self.as_int(d(g), k.x.type).t != 0
            return lambda g: self.as_int(d(g), k.x.type).t == 0
        if isinstance(k, MinMax):
            da, db = self.ev(k.a), self.ev(k.b)
            is_min = k.is_min

            def minmax(g):
                x, y = da(g), db(g)
                if kind(c.type) == "bv" and self.ints:
                    if c.type.signed:
                        raise IntModeUnsupported(c.type.describe())
                    le = x <= y
                    return _ite(le, x, y) if is_min else _ite(le, y, x)
                if kind(c.type) == "bv":
                    le = (x <= y) if c.type.signed else z3.ULE(x, y)
                    return _ite(le, x, y) if is_min else _ite(le, y, x)
                x, y = self.as_int(x, k.a.type), self.as_int(y, k.b.type)
                le = x.t <= y.t
                return IV(_ite(le, x.t, y.t) if is_min else _ite(le, y.t, x.t),
                          min(x.lo, y.lo), max(x.hi, y.hi))
            return minmax
        if isinstance(k, Abs):
            d = self.ev(k.x)
            t = k.x.type

            def abs_(g):
                x = d(g)
                if kind(t) == "bv":
                    if not t.signed:
                        return x
                    if self.ints:
                        raise IntModeUnsupported(t.describe())
                    return _ite(x < 0, -x, x)  # of the minimum: itself, modulo 2**width
                x = self.as_int(x, t)
                lo = x.lo if x.lo >= 0 else -x.hi if x.hi <= 0 else 0
                return self.iv(_ite(x.t < 0, -x.t, x.t), lo, max(abs(x.lo), abs(x.hi)))
            return abs_
        if isinstance(k, Store):
            self.store(k.loc, self.ev(k.value), k.value.type)
            return None
        if isinstance(k, Add):
            target = k.loc
            tt = target.type
            ddelta = self.ev(k.delta) if k.step is None else None
            dcur = self.ev(target)
            cur = dcur(self.g)
            if k.step is not None:
                delta, dt = self.const_iv(k.step), m.INT
            else:
                delta, dt = ddelta(self.g), k.delta.type
                if k.negate:
                    if kind(dt) == "bv":
                        delta = -delta
                    else:
                        delta = self.as_int(delta, dt)
                        delta, dt = self.iv(-delta.t, -delta.hi, -delta.lo), m.INT
            if kind(tt) == "bv":
                new = cur + self.as_bv(delta, dt, tt.width)
            else:
                new = self._int_op("+", self.as_int(cur, tt), self.as_int(delta, dt), self.g)
            self.store(target, lambda g: new, tt if kind(tt) == "bv" else m.INT)
            if k.returns is Returns.NEW_IS_ZERO:
                z = (new == 0) if kind(tt) == "bv" else (new.t == 0)
                return lambda g: z
            if k.returns is Returns.NEW:
                return lambda g: new
            if k.returns is Returns.OLD:
                return lambda g: cur
            return None
        if isinstance(k, Or):  # resolve admits only fixed-width locations
            target = k.loc
            tt = target.type
            dval = self.ev(k.value)
            cur = self.ev(target)(self.g)
            new = cur | self.as_bv(dval(self.g), k.value.type, tt.width)
            self.store(target, lambda g: new, tt)
            return lambda g: cur
        if isinstance(k, BitOp):
            dnr = self.ev(k.nr)
            cands = self.address(k.bits)
            size = k.bits.type.size
            nr = self.as_int(dnr(self.g), k.nr.type)
            if not isinstance(k.nr, m.Const):
                self.error(_and(self.ctx, self.g, self.out_of(nr, 0, size - 1)))
            cur = self.select(cands, k.bits.type)
            old = ((cur.t >> nr.t) & 1) != 0
            bit = z3.BitVecVal(1, W, self.ctx) << nr.t
            if k.set:
                self.write(cands, lambda s: self.env[s] | bit)
            else:
                self.write(cands, lambda s: self.env[s] & ~bit)
            return (lambda g: old) if k.returns_old else None
        if isinstance(k, Xchg):
            old = self.now(k.loc)
            self.store(k.loc, self.ev(k.value), k.value.type)
            return lambda g: old
        if isinstance(k, Cas):
            old = self.now(k.loc)
            expect = self.now(k.expect)
            if kind(k.loc.type) == "int":
                eq = self.as_int(old, k.loc.type).t == self.as_int(expect, k.expect.type).t
            else:
                eq = old == expect
            before = self.g
            self.g = _and(self.ctx, before, eq)
            self.store(k.loc, self.ev(k.new), k.new.type)
            self.g = _or(self.ctx, self.g, _and(self.ctx, before, _not(eq)))
            if k.success:
                return lambda g: eq
            return lambda g: old
        if isinstance(k, (WaitAdd, WaitRemove)):
            cands = self.address(k.queue)
            gid = self.enc.layout.gid_base[self.proc.process.name] + self.inst
            task = self.enc.layout.task_slot[gid]
            bit = z3.BitVecVal(1 << gid, W, self.ctx)
            self.need(0, 1 << gid)
            if isinstance(k, WaitAdd):
                self.write(cands, lambda s: self.env[s] | bit)
                self.write([(task, self.T)], lambda s: z3.BitVecVal(1, W, self.ctx))
            else:
                self.write([(task, self.T)], lambda s: z3.BitVecVal(0, W, self.ctx))
                self.write(cands, lambda s: self.env[s] & ~bit)
            return None
        if isinstance(k, Wake):
            cands = self.address(k.queue)
            w = self.select(cands, k.queue.type).t
            sleepers = sorted(self.enc.layout.task_slot.items())
            if k.all:
                for gid, task in sleepers:
                    c = (w & (1 << gid)) != 0
                    self.write([(task, c)], lambda s: z3.BitVecVal(0, W, self.ctx))
                self.write(cands, lambda s: z3.BitVecVal(0, W, self.ctx))
            else:
                taken = self.F
                for gid, task in sleepers:
                    c = _and(self.ctx, _not(taken), (w & (1 << gid)) != 0)
                    self.write([(task, c)], lambda s: z3.BitVecVal(0, W, self.ctx))
                    self.write([(s, _and(self.ctx, c, sc)) for s, sc in cands],
                               lambda s, gid=gid: w & ~z3.BitVecVal(1 << gid, W, self.ctx))
                    taken = _or(self.ctx, taken, c)
            return None
        raise TypeError(f"core operation {type(k).__name__}")

    def store(self, target: m.TExpr, dval: Deferred, vtype: m.Type) -> None:
        """compile.store: address (checked now), the value, its range check, the write."""
        cands = self.address(target)
        val = dval(self.g)
        t = target.type
        if isinstance(t, m.IntT) and t.lo is not None:
            iv = self.as_int(val, vtype)
            self.error(_and(self.ctx, self.g, self.out_of(iv, t.lo, t.hi)))
        elif isinstance(t, m.BitsetT) and vtype != t:
            iv = self.as_int(val, vtype)
            self.error(_and(self.ctx, self.g, self.out_of(iv, 0, (1 << t.size) - 1)))
        self.write(cands, lambda s: self.raw(val, vtype, s))

    # -- operations
    def run(self, ops) -> None:
        for op in ops:
            if z3.is_false(self.g):
                return
            self.op(op)

    def op(self, op: Op) -> None:
        if isinstance(op, OGoto):
            slot = self.enc.layout.pc_base[self.proc.process.name] + self.inst
            self.write([(slot, self.T)], lambda s: z3.BitVecVal(op.pc, self.W, self.ctx))
            self.dones.append(self.g)
            self.g = self.F
        elif isinstance(op, OAssign):
            self.store(op.target, self.ev(op.value), op.value.type)
        elif isinstance(op, OEval):
            d = self.builtin(op.call)
            if d is not None:  # the compiled code evaluates the value as a statement
                d(self.g)
        elif isinstance(op, OIf):
            c = self.now(op.cond)
            before = self.g
            self.g = _and(self.ctx, before, c)
            self.run(op.then)
            after_then = self.g
            self.g = _and(self.ctx, before, _not(c))
            self.run(op.orelse)
            self.g = _or(self.ctx, after_then, self.g)
        elif isinstance(op, OWhile):
            self._while(op)
        elif isinstance(op, (OBreak, OReturn)):  # `return` is compiled as a break of the inline's loop
            self.loops[-1].exits.append(self.g)
            self.g = self.F
        elif isinstance(op, OContinue):
            self.loops[-1].conts.append(self.g)
            self.g = self.F
        elif isinstance(op, OInline):  # `for _once in range(1)`: break, continue and return leave it
            loop = _Loop()
            self.loops.append(loop)
            self.run(op.body)
            self.loops.pop()
            self.g = _or(self.ctx, self.g, *loop.exits, *loop.conts)
        elif isinstance(op, OAssert):
            c = self.now(op.cond)
            self.fails.setdefault(op.property, []).append(_and(self.ctx, self.g, _not(c)))
            self.g = _and(self.ctx, self.g, c)
        elif isinstance(op, OBarrier):
            pass
        else:
            raise TypeError(op)

    def _while(self, op: OWhile) -> None:
        loop = _Loop()
        self.loops.append(loop)
        exits = []
        for _ in range(LOOP_UNROLL):
            c = self.now(op.cond)
            exits.append(_and(self.ctx, self.g, _not(c)))
            self.g = _and(self.ctx, self.g, c)
            loop.exits, loop.conts = [], []
            self.run(op.body)
            exits += loop.exits
            self.g = _or(self.ctx, self.g, *loop.conts)
            if self.unreachable(self.g):
                break
        else:
            self.overflow.append(self.g)
        self.loops.pop()
        self.g = _or(self.ctx, *exits)


# ---- the transition system -------------------------------------------------------


@dataclass
class Transition:
    """One step of one process instance, over the encoding's `cur` state."""

    index: int  # the value of the step selector
    step: CompiledStep
    instance: CompiledInstance
    pcs: frozenset[int]
    moved: object  # it returns a successor or fails an assert (explicit: "moved")
    err: object  # it raises ModelError (in its guard or body)
    done: object  # it returns a successor
    fails: dict[str, object]
    updates: dict[int, object]  # slot -> next value, where it may differ from cur
    overflow: object
    index_in_turn: int = 0  # the value of its instance's turn selector (rounds)


@dataclass(frozen=True, slots=True)
class Turn:
    """An instance's turn in a round, as a template over `cur`, the next values of the
    slots its steps may write (`nxt`) and its selector: value i takes `transitions[i]`,
    len(transitions) idles."""

    gid: int
    transitions: tuple[Transition, ...]
    sel: object
    nxt: dict[int, object]
    reach: list[frozenset[int]]  # the pcs it may be at after m steps of its own (reach_by_steps)
    formulas: dict[frozenset[int], object]  # pcs -> the formula with only the steps there


@dataclass(frozen=True, slots=True)
class Substep:
    """One turn placed in the unrolling: its selector and the state after it."""

    sel: object
    transitions: tuple[Transition, ...]
    after: list


@dataclass
class SafetyProperty:
    name: str
    kind: str  # m.PropertyKind value, or MODEL_ERROR
    bad: object  # over `cur`: this state violates it (or a step from it fails it)


@dataclass(frozen=True, slots=True)
class LivenessTerms:
    """`always (trigger -> eventually goal)` over `cur` (trigger true for `always
    eventually goal`); `err`: evaluating either raises ModelError."""

    name: str
    trigger: object
    goal: object
    err: object


@dataclass
class Encoding:
    """The transition system of a compiled model: T(cur, nxt, sel), the initial
    states, the type domains, and one `bad` predicate per safety property."""

    cm: CompiledModel
    check_deadlock: bool = True
    width: int = 0
    cur: list = field(default_factory=list)
    nxt: list = field(default_factory=list)
    sel: object = None
    transitions: list[Transition] = field(default_factory=list)
    properties: list[SafetyProperty] = field(default_factory=list)
    trans: object = None
    init: object = None
    domain: object = None
    overflow: object = None
    _turns: list[Turn] | None = None

    liveness: list[LivenessTerms] = field(default_factory=list)  # engines/smt/lasso.py checks them

    def __post_init__(self):
        # A fresh context per encoding: Z3's answers depend on the order its terms were
        # made in, so a context shared across runs would make counterexamples depend on
        # what the process checked before.
        self.ctx = z3.Context()
        self.T, self.F = z3.BoolVal(True, self.ctx), z3.BoolVal(False, self.ctx)
        model = self.cm.program.model
        if model.memory != "sc":
            raise SpecError(NOWHERE, f"the Z3 engines support only sequential consistency; "
                            f"{model.file} is checked under memory model {model.memory}",
                            "check it with the explicit engine (the default)", "TR510")
        self.program = self.cm.program
        self.layout = self.program.layout
        width = 2
        for i, sl in enumerate(self.layout.slots):
            if not isinstance(sl.type, m.BitVecT):
                width = max(width, signed_bits(*slot_interval(self.layout, i)) + 1)
        for sl, v in zip(self.layout.slots, self.program.init_choices):
            if not isinstance(sl.type, m.BitVecT) and not isinstance(v, range) and v:
                width = max(width, *(signed_bits(x, x) + 1 for x in v))
        while True:
            needed = self._build(width)
            if needed <= width:
                break
            width = needed
            if width > MAX_WIDTH:
                raise SpecError(NOWHERE, f"the Z3 engines cannot encode {model.file}: an integer "
                                f"expression needs {width} bits (at most {MAX_WIDTH})",
                                "a shift by a large count? check this model with the explicit engine", "TR510")

    def sort(self, slot: int):
        t = self.layout.slots[slot].type
        return z3.BitVecSort(t.width if isinstance(t, m.BitVecT) else self.width, self.ctx)

    def state(self, prefix: str) -> list:
        return [z3.Const(f"{prefix}{sl.name}", self.sort(i)) for i, sl in enumerate(self.layout.slots)]

    def _build(self, width: int) -> int:
        self.width = width
        self._turns = None
        self.cur = self.state("")
        self.nxt = self.state("'")
        needed = 0
        # one selector value per (instance, step); a step may sit at several pcs (choose)
        entries: dict[tuple[int, int], tuple[CompiledInstance, CompiledStep, set[int]]] = {}
        for inst in self.cm.instances:
            for pc, steps in enumerate(inst.steps_at):
                for cs in steps:
                    entries.setdefault((inst.gid, cs.step.uid), (inst, cs, set()))[2].add(pc)
        self.transitions = []
        for i, (inst, cs, pcs) in enumerate(entries.values()):
            ev = Evaluator(self, width, list(self.cur), inst)
            pc_val = self.cur[inst.pc_slot]
            ev.g = _or(self.ctx, *[pc_val == p for p in sorted(pcs)])
            if cs.step.kind is StepKind.SCHEDULE:
                ev.g = _and(self.ctx, ev.g, self.cur[self.layout.task_slot[inst.gid]] == 0)
            if cs.step.guard is not None:
                ev.g = _and(self.ctx, ev.g, ev.now(cs.step.guard))
            ev.run(cs.step.body)
            needed = max(needed, ev.needed)
            fails = {p: _or(self.ctx, *c) for p, c in ev.fails.items()}
            done = _or(self.ctx, *ev.dones)
            updates = {j: t for j, t in enumerate(ev.env) if not t.eq(self.cur[j])}
            self.transitions.append(Transition(i, cs, inst, frozenset(pcs), _or(self.ctx, done, *fails.values()),
                                               _or(self.ctx, *ev.errs), done, fails, updates, _or(self.ctx, *ev.overflow),
                                               sum(tr.instance.gid == inst.gid for tr in self.transitions)))
        n = max(1, len(self.transitions))
        self.sel = z3.BitVec("step", max(1, (n - 1).bit_length()), self.ctx)
        # T(cur, nxt, sel): the selected step completes and gives nxt
        parts = [z3.ULT(self.sel, n) if n < 2 ** self.sel.size() else self.T]
        chosen = self.F
        for tr in reversed(self.transitions):
            chosen = _ite(self.sel == tr.index, tr.done, chosen)
        parts.append(chosen)
        for j in range(len(self.layout.slots)):
            val = self.cur[j]
            for tr in reversed(self.transitions):
                if j in tr.updates:
                    val = _ite(self.sel == tr.index, tr.updates[j], val)
            parts.append(self.nxt[j] == val)
        self.trans = _and(self.ctx, *parts)
        self.overflow = _or(self.ctx, *[tr.overflow for tr in self.transitions])
        # properties, in the model's order; `model error` last
        self.properties = []
        self.liveness = []
        inv_errs = []
        # final states: every process at a valid end and no step enabled (a stutter aside)
        final_state = _and(self.ctx, *[_or(self.ctx, *[self.cur[inst.pc_slot] == p for p in sorted(inst.end_pcs)])
                                      for inst in self.cm.instances],
                           *[_and(self.ctx, _not(tr.moved), _not(tr.err)) for tr in self.transitions
                             if tr.step.step.kind is not StepKind.STUTTER])
        for prop in self.program.properties:
            if prop.kind is m.PropertyKind.INVARIANT:
                ev = Evaluator(self, width, list(self.cur))
                ok = ev.now(prop.cond)
                needed = max(needed, ev.needed)
                err = _or(self.ctx, *ev.errs)
                inv_errs.append(err)
                self.properties.append(SafetyProperty(prop.name, prop.kind.value, _and(self.ctx, _not(err), _not(ok))))
            elif prop.kind is m.PropertyKind.FINAL:  # checked in final states: every process at a valid end
                ev = Evaluator(self, width, list(self.cur))
                ok = ev.now(prop.cond)
                needed = max(needed, ev.needed)
                err = _and(self.ctx, final_state, _or(self.ctx, *ev.errs))
                inv_errs.append(err)
                self.properties.append(SafetyProperty(prop.name, prop.kind.value,
                                                      _and(self.ctx, final_state, _not(err), _not(ok))))
            elif prop.kind is m.PropertyKind.REACHABLE:  # as the explicit engine does: "violating" !P is reaching P
                ev = Evaluator(self, width, list(self.cur))
                ok = ev.now(prop.cond)
                needed = max(needed, ev.needed)
                err = _or(self.ctx, *ev.errs)
                inv_errs.append(err)
                self.properties.append(SafetyProperty(prop.name, prop.kind.value, _and(self.ctx, _not(err), ok)))
            elif prop.kind is m.PropertyKind.LIVENESS:
                # as engines/liveness.py evaluates them: the trigger only where the goal is false
                ev = Evaluator(self, width, list(self.cur))
                goal = ev.now(prop.goal)
                goal_err = _or(self.ctx, *ev.errs)
                trigger, err = self.T, goal_err
                if prop.trigger is not None:
                    evt = Evaluator(self, width, list(self.cur))
                    trigger = evt.now(prop.trigger)
                    needed = max(needed, evt.needed)
                    err = _or(self.ctx, goal_err, _and(self.ctx, _not(goal), _or(self.ctx, *evt.errs)))
                needed = max(needed, ev.needed)
                self.liveness.append(LivenessTerms(prop.name, trigger, goal, err))
            elif prop.kind is m.PropertyKind.ASSERT:
                bad = _or(self.ctx, *[tr.fails[prop.name] for tr in self.transitions if prop.name in tr.fails])
                self.properties.append(SafetyProperty(prop.name, prop.kind.value, bad))
            elif prop.kind is m.PropertyKind.DEADLOCK and self.check_deadlock:
                all_end = _and(self.ctx, *[_or(self.ctx, *[self.cur[inst.pc_slot] == p for p in sorted(inst.end_pcs)])
                                 for inst in self.cm.instances])
                stuck = _and(self.ctx, *[_and(self.ctx, _not(tr.moved), _not(tr.err)) for tr in self.transitions])
                self.properties.append(SafetyProperty(prop.name, prop.kind.value, _and(self.ctx, stuck, _not(all_end))))
        self.properties.append(SafetyProperty(MODEL_ERROR, MODEL_ERROR,
                                              _or(self.ctx, *inv_errs, *[tr.err for tr in self.transitions])))
        self.init = _and(self.ctx, *[self._member(j, c) for j, c in enumerate(self.program.init_choices)])
        self.domain = _and(self.ctx, *[self._in_domain(j) for j in range(len(self.layout.slots))])
        return needed

    def _member(self, j: int, choices):
        """Slot j starts with one of `choices` (a tuple, or a range for `any`)."""
        x = self.cur[j]
        unsigned = isinstance(self.layout.slots[j].type, m.BitVecT)
        if isinstance(choices, range):
            lo, hi = choices.start, choices.stop - 1
        else:
            vals = sorted(set(choices))
            if len(vals) <= 2 or vals != list(range(vals[0], vals[-1] + 1)):
                return _or(self.ctx, *[x == v for v in vals])
            lo, hi = vals[0], vals[-1]
        if unsigned:
            if lo == 0 and hi == (1 << x.size()) - 1:
                return self.T
            return _and(self.ctx, z3.UGE(x, lo), z3.ULE(x, hi))
        return _and(self.ctx, x >= lo, x <= hi)

    def domain_of(self, state: list):
        return _and(self.ctx, *[self._in_domain(j, state[j]) for j in range(len(self.layout.slots))])

    def _in_domain(self, j: int, x=None):
        sl = self.layout.slots[j]
        x = self.cur[j] if x is None else x
        if isinstance(sl.type, m.BitVecT):
            return self.T
        lo, hi = slot_interval(self.layout, j)
        return _and(self.ctx, x >= lo, x <= hi)

    # -- unrolling: the template over (cur, nxt, sel) placed at frame k
    def frame(self, k: int) -> list:
        return self.state(f"{k}:")

    def at(self, formula, frame: list):
        return z3.substitute(formula, *zip(self.cur, frame))

    def step_at(self, k: int, frame: list, following: list):
        sel_k = z3.BitVec(f"step{k}", self.sel.size(), self.ctx)
        pairs = list(zip(self.cur, frame)) + list(zip(self.nxt, following)) + [(self.sel, sel_k)]
        return z3.substitute(self.trans, *pairs), sel_k

    def value(self, model: z3.ModelRef, term, slot: int) -> int:
        raw = model.eval(term, model_completion=True).as_long()
        if isinstance(self.layout.slots[slot].type, m.BitVecT):
            return raw
        return raw - (1 << self.width) if raw >= 1 << (self.width - 1) else raw

    def decode(self, model: z3.ModelRef, frame: list) -> tuple[int, ...]:
        return tuple(self.value(model, t, j) for j, t in enumerate(frame))

    def distinct(self, a: list, b: list):
        return _or(self.ctx, *[x != y for x, y in zip(a, b)])

    # -- rounds: the compressed unrolling (bmc --rounds)
    def turn_templates(self) -> list[Turn]:
        """One template per process instance, in gid order: over (cur, its own next
        values, its selector) the instance takes one of its steps, or idles (the
        selector's last value). Built once per encoding."""
        if self._turns is None:
            self._turns = []
            for inst in self.cm.instances:
                trs = tuple(tr for tr in self.transitions if tr.instance.gid == inst.gid)
                written = tuple(sorted(set().union(*(tr.updates for tr in trs))))
                sel = z3.BitVec(f"turn:{inst.gid}", max(1, len(trs).bit_length()), self.ctx)
                nxt = {j: z3.Const(f"'{inst.gid}:{self.layout.slots[j].name}", self.sort(j)) for j in written}
                self._turns.append(Turn(inst.gid, trs, sel, nxt, reach_by_steps(inst, self.program.init_choices), {}))
        return self._turns

    def turn_formula(self, tt: Turn, pcs: frozenset[int]):
        """The turn's formula with only the steps at `pcs` (where the instance may be):
        a step it cannot be at takes no room in the unrolling."""
        if pcs not in tt.formulas:
            trs = [tr for tr in tt.transitions if tr.pcs & pcs]
            idle = len(tt.transitions)
            parts = [_or(self.ctx, tt.sel == idle, *[tt.sel == tr.index_in_turn for tr in trs])]
            done = self.T
            for tr in reversed(trs):
                done = _ite(tt.sel == tr.index_in_turn, tr.done, done)
            parts.append(done)
            for j in tt.nxt:
                val = self.cur[j]
                for tr in reversed(trs):
                    if j in tr.updates:
                        val = _ite(tt.sel == tr.index_in_turn, tr.updates[j], val)
                parts.append(tt.nxt[j] == val)
            tt.formulas[pcs] = _and(self.ctx, *parts)
        return tt.formulas[pcs]

    def round_at(self, k: int, frame: list) -> tuple[list, list, list[Substep]]:
        """Round k from the state `frame`: each process instance in gid order takes one
        step or idles, from the state the previous one left. Returns the formulas, the
        state after the round (terms), and each turn's selector and state after it, so
        that a model expands into the sequence of real steps it stands for."""
        state = list(frame)
        formulas = []
        subs: list[Substep] = []
        for tt in self.turn_templates():
            sel = z3.BitVec(f"turn{k}:{tt.gid}", tt.sel.size(), self.ctx)
            after = list(state)
            for j in tt.nxt:
                after[j] = z3.Const(f"{k}:{tt.gid}:{self.layout.slots[j].name}", self.sort(j))
            pairs = list(zip(self.cur, state)) + [(tt.nxt[j], after[j]) for j in tt.nxt] + [(tt.sel, sel)]
            # before round k the instance took at most k steps
            pcs = tt.reach[min(k, len(tt.reach) - 1)]
            formulas.append(z3.substitute(self.turn_formula(tt, pcs), *pairs))
            subs.append(Substep(sel, tt.transitions, after))
            state = after
        return formulas, state, subs


def reach_by_steps(inst: CompiledInstance, init_choices) -> list[frozenset[int]]:
    """reach[m]: the pcs the instance can be at after at most m steps of its own (its
    control flow, guards ignored), up to the first m where nothing new is reached."""
    targets = [{op.pc for cs in steps for op in walk_ops(cs.step.body) if isinstance(op, OGoto)}
               for steps in inst.steps_at]
    here = frozenset(init_choices[inst.pc_slot])
    reach = [here]
    while True:
        grown = here | {t for pc in here for t in targets[pc]}
        if grown == here:
            return reach
        here = frozenset(grown)
        reach.append(here)
