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

x86-TSO. The store buffers are slots of the state (ir.StoreBuffer) and are read and
written as backends/python.py does: a plain store to a buffered global fills the first
empty entry (the step waits while none is empty), a plain load takes its CPU's newest
entry for the slot, a fence step needs an empty buffer, a locked primitive or atomic
fence accesses memory, and each buffer's flush is a transition of its own.

Guarded execution. A step's body runs on a symbolic copy of the state under a
guard `g`, the condition that control reaches the current operation; each write is
`slot := If(g, new, old)`, so both sides of an `if` need no merging, and `break`,
`continue`, `return` and `goto` just move their guard elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import z3

from ... import model as m
from ...backends.python import CompiledFlush, CompiledInstance, CompiledModel, CompiledStep
from ...base.errors import NOWHERE, Span, SpecError
from ...semantics.lower import Spelling
from ...ir import (Program, SlotKind, StateLayout, StoreBuffer, OAssert, OAssign, OBarrier, OBreak, OContinue, OEval, OGoto, OIf, OInline, OReturn, OWhile, Op,
                   StepKind, walk_ops)
from .solver import new_solver
from .terms import conj as _and, disj as _or, negate as _not
from ...base.record import record

FLUSH_PCS = frozenset({0})  # a flush has one place (rounds: Encoding.turn_formula)
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


def buffered_slots(layout: StateLayout, b: StoreBuffer) -> list[int]:
    """The memory slots a store buffer's entries may name: those of the globals its CPU
    stores plainly (every element of an array)."""
    names = {sym.name for sym in b.locations}
    return [j for j, sl in enumerate(layout.slots)
            if sl.kind is SlotKind.VAR and sl.process is None and sl.var in names]


def stored_interval(layout: StateLayout, slot: int) -> tuple[int, int]:
    """The values a slot holds, as integers (an unsigned slot's too)."""
    t = layout.slots[slot].type
    return (0, t.mask) if isinstance(t, m.BitVecT) else slot_interval(layout, slot)


def slot_interval(layout: StateLayout, slot: int) -> tuple[int, int]:
    """The values a non-unsigned slot holds in every reachable state."""
    sl = layout.slots[slot]
    t = sl.type
    if sl.kind is SlotKind.BUFFER and sl.element is not None and sl.element % 2:  # an entry's value
        b = next(b for b in layout.buffers if b.name == sl.var)
        los, his = zip(*(stored_interval(layout, j) for j in buffered_slots(layout, b)))
        return min(0, *los), max(0, *his)  # an empty entry holds 0
    if isinstance(t, m.IntT) and t.lo is not None and t.hi is not None:
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


Deferred = Callable[[Any], Any]  # lazy guard -> value (BoolRef | BitVecRef | IV)


class Evaluator:
    """Symbolic execution of expressions and operations, mirroring the compiled code.

    About 600 lines, on purpose: it mirrors python.Compiler section by section
    (expressions, loads, stores, operations), so that the Z3 twin of each piece of
    generated code stands in one place, beside the others. The core operations are
    not here: lower.Spelling decides them for every back end, `_Z3Spelling` spells them.

    `env` is the symbolic state (one term per slot) and changes as operations run;
    `g` is the guard of the current point. Errors (what raises ModelError in the
    compiled code) and assertion failures are collected with their conditions."""

    def __init__(self, enc: Encoding | None, width: int, env: list[Any] | None = None,
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
        self.env: list[Any] = env if env is not None else []  # none: an expression over no state (lemmas)
        self.instance = proc
        self.proc = proc.process if proc is not None else None  # what lower.Writer reads
        self.inst = proc.instance if proc is not None else None
        self.direct = False  # lower.Writer: inside a locked primitive or atomic fence (tso): memory
        self.buffer: StoreBuffer | None = None  # tso: the store buffer of the CPU whose step this is
        self.spelling = _Z3Spelling(self)
        self.bound = dict(bound or {})
        self.g = self.T
        self.errs: list = []
        self.fails: dict[str, list] = {}
        self.dones: list = []
        self.overflow: list = []
        self.loops: list[_Loop] = []
        self.needed = 0

    @property
    def layout(self) -> StateLayout:
        assert self.enc is not None  # the state is read only in a step or a property
        return self.enc.layout

    @property
    def program(self) -> Program:
        assert self.enc is not None
        return self.enc.program

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
    def as_int(self, v: Any, t: m.Type) -> IV:
        if isinstance(t, m.BoolT):
            return IV(z3.If(v, self.const_iv(1).t, self.const_iv(0).t), 0, 1)
        if not isinstance(t, m.BitVecT):
            assert isinstance(v, IV)
            return v
        if self.ints:
            if t.signed:
                raise IntModeUnsupported(t.describe())
            return IV(v, 0, t.mask)
        if t.signed:  # the pattern's two's-complement value
            w = t.width
            self.need(-t.half, t.half - 1)
            if self.W <= w:  # too narrow this round; the encoding is rebuilt wider
                return IV(z3.Extract(self.W - 1, 0, v), -t.half, t.half - 1)
            return IV(z3.SignExt(self.W - w, v), -t.half, t.half - 1)
        w = t.width
        self.need(0, t.mask)
        if self.W <= w:  # too narrow this round; the encoding is rebuilt wider
            return IV(z3.Extract(self.W - 1, 0, v), 0, t.mask)
        return IV(z3.ZeroExt(self.W - w, v), 0, t.mask)

    def as_bv(self, v: Any, t: m.Type, w: int) -> Any:
        """C conversion of a value of type `t` to an unsigned `w`-bit value."""
        if isinstance(t, m.BoolT):
            return z3.If(v, self.bv_const(1, w), self.bv_const(0, w))
        bv = t if isinstance(t, m.BitVecT) else None
        if self.ints:
            if bv is None:
                return self._wrap(v.t, w, v.lo, v.hi)
            if bv.signed:
                raise IntModeUnsupported(bv.describe())
            return v if bv.width <= w else self._wrap(v, w, 0, bv.mask)
        term = v.t if bv is None else v
        have = term.size()
        if have == w:
            return term
        if have > w:
            return z3.Extract(w - 1, 0, term)
        signed = bv is None or bv.signed  # a signed pattern is sign-extended
        return (z3.SignExt if signed else z3.ZeroExt)(w - have, term)


    # -- the state
    def buffered(self, target: m.TExpr) -> StoreBuffer | None:
        """python.Compiler.buffered: the store buffer a plain access to `target` goes
        through (tso), decided where the access is written."""
        b = self.buffer
        return b if b is not None and not self.direct and b.holds(target) else None

    def from_buffer(self, raw: Any, slot: int) -> Any:
        """An entry's value (a W-bit integer) in memory slot `slot`'s sort."""
        st = self.layout.slots[slot].type
        return z3.Extract(st.width - 1, 0, raw) if isinstance(st, m.BitVecT) else raw

    def load(self, slot: int, t: m.Type, buf: StoreBuffer | None = None) -> Any:
        """A slot's value as type `t`; through `buf`, the newest entry for the slot, else memory."""
        raw = self.env[slot]
        if buf is not None:
            for entry in range(buf.capacity):  # oldest first, so that the newest ends up outermost
                at, val = buf.entry(entry)
                raw = _ite(self.env[at] == slot + 1, self.from_buffer(self.env[val], slot), raw)
        k = kind(t)
        if k == "bool":
            return raw != 0
        if k == "bv":
            return raw
        lo, hi = slot_interval(self.layout, slot)
        return IV(raw, lo, hi)

    def raw(self, v, t: m.Type, slot: int):
        """A value in a slot's storage sort."""
        st = self.layout.slots[slot].type
        if isinstance(st, m.BitVecT):
            return self.as_bv(v, t, st.width)
        return self.as_int(v, t).t

    def write(self, cands, raw_of) -> None:
        """Store into the candidate slots [(slot, condition)]; raw_of(slot) -> new raw term."""
        for slot, c in cands:
            cond = _and(self.ctx, self.g, c)
            if not z3.is_false(cond):
                self.env[slot] = _ite(cond, raw_of(slot), self.env[slot])

    def select(self, cands, t: m.Type, buf: StoreBuffer | None = None):
        """Read through candidate slots (an array element at a dynamic index)."""
        vals = [(c, self.load(s, t, buf)) for s, c in cands]
        c0, acc = vals[-1]
        for c, v in reversed(vals[:-1]):
            if kind(t) == "int":
                acc = IV(_ite(c, v.t, acc.t), min(v.lo, acc.lo), max(v.hi, acc.hi))
            else:
                acc = _ite(c, v, acc)
        return acc

    def var_slot(self, sym: m.VarSym) -> int:
        return self.layout.slot_of(sym, self.inst)

    def candidates(self, x: m.TExpr, idx_iv: IV | None):
        """[(slot, condition)] for a variable, or an element at index `idx_iv`."""
        if isinstance(x, m.Var):
            return [(self.var_slot(x.sym), self.T)]
        assert isinstance(x, m.Elem)
        t = x.sym.type
        assert isinstance(t, m.ArrayT)
        base = self.var_slot(x.sym)
        if isinstance(x.index, m.Const):
            return [(base + x.index.value - t.lo, self.T)]
        if isinstance(x.index, m.SelfE) and self.inst is not None:
            return [(base + self.inst - t.lo, self.T)]
        out = []
        assert idx_iv is not None  # a computed index
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
            assert isinstance(t, m.ArrayT)
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
            elif isinstance(t, m.BitVecT):
                c = self.bv_const(x.value, t.width)
            else:
                c = self.const_iv(x.value)
            return lambda g: c
        if isinstance(x, (m.Var, m.Elem)):
            buf = self.buffered(x)
            if isinstance(x, m.Elem) and not isinstance(x.index, m.Const) and not (
                    isinstance(x.index, m.SelfE) and self.inst is not None):
                di = self.ev(x.index)
                at = x.sym.type

                def read_dyn(g, x=x, di=di, at=at):
                    idx = self.as_int(di(g), x.index.type)
                    self.error(_and(self.ctx, g, self.out_of(idx, at.lo, at.hi)))
                    return self.select(self.candidates(x, idx), t, buf)
                return read_dyn
            cands = self.candidates(x, None)
            return lambda g: self.load(cands[0][0], t, buf)
        if isinstance(x, m.LocalOf):
            return self._local_of(x)
        if isinstance(x, m.SelfE):
            assert self.inst is not None  # `self` is folded, or read in a step
            c = self.const_iv(self.inst)
            return lambda g: c
        if isinstance(x, m.Bound):
            return lambda g: self.bound[x.uid]
        if isinstance(x, m.Conv) and not isinstance(t, m.BitVecT):  # a signed pattern's value
            d = self.ev(x.operand)
            return lambda g: self.as_int(d(g), x.operand.type)
        if isinstance(x, m.Conv):
            assert isinstance(t, m.BitVecT)
            d = self.ev(x.operand)
            width = t.width
            return lambda g: self.as_bv(d(g), x.operand.type, width)
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
            value = self.builtin(x)
            if value is None:
                raise TypeError(f"builtin {x.name} has no value")
            return value
        raise TypeError(x)

    def now(self, x: m.TExpr):
        """Evaluate an expression as one compiled line does, under the current guard."""
        return self.ev(x)(self.g)

    def _unary(self, x: m.Un) -> Deferred:
        d = self.ev(x.operand)
        xt = x.type
        if x.op == "!":
            return lambda g: _not(d(g))
        if isinstance(xt, m.BitVecT):
            if self.ints:
                w, mask = xt.width, xt.mask
                if x.op == "-":
                    return lambda g: self._wrap(-d(g), w, -mask, 0)
                return lambda g: mask - d(g)
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
        xt = x.type
        if isinstance(xt, m.BitVecT) and self.ints:
            if xt.signed:
                raise IntModeUnsupported(xt.describe())
            w, mask = xt.width, xt.mask

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
        if isinstance(xt, m.BitVecT):
            signed = xt.signed

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
        proc = next(p for p in self.program.processes if p.name == x.process)
        pcs = sorted(proc.label_pcs.get(x.label, ()))
        base = self.layout.pc_base[x.process]
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
        layout = self.layout
        proc = next(p for p in self.program.processes if p.name == x.process)
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

    # -- kernel primitives: semantics/lower.py's Spelling decides, _Z3Spelling spells
    def builtin(self, c: m.Builtin) -> Deferred | None:
        """One core operation, as every back end writes it (lower.Spelling.core); its
        value in the sort of the call's type."""
        code = self.spelling.builtin(c)
        if code is None:
            return None
        return self.spelling.deferred(code, c.type)

    def store(self, target: m.TExpr, dval: Deferred, vtype: m.Type) -> None:
        """compile.store: address (checked now), the value, its range check, the write."""
        cands = self.address(target)
        val = dval(self.g)
        t = target.type
        if isinstance(t, m.IntT) and t.lo is not None and t.hi is not None:
            iv = self.as_int(val, vtype)
            self.error(_and(self.ctx, self.g, self.out_of(iv, t.lo, t.hi)))
        elif isinstance(t, m.BitsetT) and vtype != t:
            iv = self.as_int(val, vtype)
            self.error(_and(self.ctx, self.g, self.out_of(iv, 0, (1 << t.size) - 1)))
        buf = self.buffered(target)
        if buf is None:
            self.write(cands, lambda s: self.raw(val, vtype, s))
            return
        # tso: (address, value) into the first empty entry; memory keeps the old value
        # until a flush; with every entry in use the step waits (python.StoreBufferFull)
        st = self.layout.slots[cands[0][0]].type
        if isinstance(st, m.BitVecT):
            self.need(0, st.mask)
            value = z3.ZeroExt(self.W - st.width, self.as_bv(val, vtype, st.width))
        else:
            value = self.as_int(val, vtype).t
        address = self.bv_const(cands[-1][0] + 1, self.W)
        for slot, c in reversed(cands[:-1]):
            address = _ite(c, self.bv_const(slot + 1, self.W), address)
        taken = self.F
        for k in range(buf.capacity):
            at, v = buf.entry(k)
            free = _and(self.ctx, _not(taken), self.env[at] == 0)
            self.write([(at, free)], lambda s: address)
            self.write([(v, free)], lambda s: value)
            taken = _or(self.ctx, taken, free)
        self.g = _and(self.ctx, self.g, taken)

    # -- operations
    def run(self, ops) -> None:
        for op in ops:
            if z3.is_false(self.g):
                return
            self.op(op)

    def op(self, op: Op) -> None:
        if isinstance(op, OGoto):
            assert self.proc is not None and self.inst is not None  # a step's
            slot = self.layout.pc_base[self.proc.name] + self.inst
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


class _Code:
    """A value as the Z3 spelling passes it around: deferred, like the text back ends'
    code, which runs where it is used (`d`: guard -> term), and of type `t`."""

    __slots__ = ("d", "t")

    def __init__(self, d: Deferred, t: m.Type):
        self.d, self.t = d, t


class _Temp(_Code):
    """A temporary: `assign` evaluates its value then, as the generated code does."""

    __slots__ = ("v",)

    def __init__(self) -> None:
        super().__init__(lambda g: self.v, m.INT)
        self.v: object = None


@record
class _Place:
    cands: list[tuple[int, Any]]  # Evaluator.address: [(slot, condition)]
    t: m.Type


class _Z3Spelling(Spelling[_Code, _Place]):
    """The core operations as Z3 terms over the evaluator's symbolic state: what the
    text back ends write as a statement happens now, under the evaluator's guard; what
    they write as an expression is a deferred term."""

    owner: Evaluator

    def __init__(self, ev: Evaluator):
        super().__init__(ev)
        self.ev = ev

    # values in the evaluator's three domains (bool, bit-vector, IV)
    def deferred(self, code: _Code, t: m.Type) -> Deferred:
        """`code` in the sort of type `t`."""
        ev, have, want = self.ev, kind(code.t), kind(t)
        if want == have:
            return code.d
        if want == "bool":
            return lambda g: self.truth(code, g)
        if want == "int":
            return lambda g: ev.as_int(code.d(g), code.t)
        assert isinstance(t, m.BitVecT)
        return lambda g: ev.as_bv(code.d(g), code.t, t.width)

    def truth(self, code: _Code, g: Any) -> Any:
        v = code.d(g)
        if kind(code.t) == "bool":
            return v
        if kind(code.t) == "bv":
            return v != 0
        return self.ev.as_int(v, code.t).t != 0

    def num(self, code: _Code, g: Any) -> IV:
        return self.ev.as_int(code.d(g), code.t)

    def value(self, x: m.TExpr) -> _Code:
        return _Code(self.ev.ev(x), x.type)

    def fresh(self) -> _Code:
        return _Temp()

    def assign(self, tmp: _Code, code: _Code) -> None:
        assert isinstance(tmp, _Temp)
        tmp.v, tmp.t = code.d(self.ev.g), code.t

    def paren(self, code: _Code) -> _Code:
        return code

    def store(self, loc: m.TExpr, value: m.TExpr) -> None:
        self.ev.store(loc, self.ev.ev(value), value.type)

    def store_code(self, loc: m.TExpr, code: _Code) -> None:
        self.ev.store(loc, code.d, code.t)

    def place(self, loc: m.TExpr) -> _Place:
        return _Place(self.ev.address(loc), loc.type)

    def task(self, gid: int) -> _Place:
        slot = self.ev.layout.task_slot[gid]
        return _Place([(slot, self.ev.T)], self.ev.layout.slots[slot].type)

    def read(self, place: _Place) -> _Code:
        return _Code(lambda g: self.ev.select(place.cands, place.t), place.t)

    def write(self, place: _Place, code: _Code, const: int | None = None) -> None:
        ev = self.ev
        v = code.d(ev.g)
        ev.write(place.cands, lambda s: ev.raw(v, code.t, s))

    def note(self, text: str) -> None:
        pass

    def first(self, cases: list[tuple[_Code, str | None, Callable[[], None]]]) -> None:
        ev = self.ev
        before, taken, after = ev.g, ev.F, []
        kept = True  # no body failed or ended anything: control goes on exactly as before
        for cond, _, body in cases:
            c = self.truth(cond, before)
            ev.g = g = _and(ev.ctx, before, _not(taken), c)
            body()
            kept = kept and ev.g is g
            after.append(ev.g)
            taken = _or(ev.ctx, taken, c)
        ev.g = before if kept else _or(ev.ctx, *after, _and(ev.ctx, before, _not(taken)))

    def bit_in_set(self, nr: _Code, bits: m.TExpr) -> _Code:
        ev = self.ev
        t = bits.type
        assert isinstance(t, m.BitsetT)

        def checked(g: Any) -> IV:  # fails where it is read: not on the untaken side of `||`
            v = self.num(nr, g)
            ev.error(_and(ev.ctx, g, ev.out_of(v, 0, t.size - 1)))
            return v
        return _Code(checked, m.INT)

    def check_bit(self, nr: _Code, place: _Place, size: int) -> None:
        ev = self.ev
        ev.error(_and(ev.ctx, ev.g, ev.out_of(self.num(nr, ev.g), 0, size - 1)))

    def fits(self, t: m.BitVecT, span: Span) -> None:
        if self.ev.ints and t.signed:
            raise IntModeUnsupported(t.describe())

    def wrap(self, code: _Code, t: m.BitVecT) -> _Code:
        if not self.ev.ints:
            return code  # bit-vector arithmetic wraps by itself
        return _Code(lambda g: self.ev._wrap(code.d(g), t.width, -t.mask, 2 * t.mask), t)

    def min_max(self, a: _Code, b: _Code, is_min: bool, signed: m.BitVecT | None) -> _Code:
        ev = self.ev

        def minmax(g: Any) -> Any:
            x, y = a.d(g), b.d(g)
            if kind(a.t) == "bv":
                le = x <= y if signed is not None or ev.ints else z3.ULE(x, y)
                return _ite(le, x, y) if is_min else _ite(le, y, x)
            p, q = ev.as_int(x, a.t), ev.as_int(y, b.t)
            le = p.t <= q.t
            return IV(_ite(le, p.t, q.t) if is_min else _ite(le, q.t, p.t), min(p.lo, q.lo), max(p.hi, q.hi))
        return _Code(minmax, a.t if kind(a.t) == "bv" else m.INT)

    def abs(self, x: _Code, signed: m.BitVecT | None) -> _Code:
        ev = self.ev
        if signed is not None:  # of the minimum: itself, modulo 2**width
            return _Code(lambda g: (lambda v: _ite(v < 0, -v, v))(x.d(g)), signed)

        def abs_(g: Any) -> IV:
            v = ev.as_int(x.d(g), x.t)
            lo = v.lo if v.lo >= 0 else -v.hi if v.hi <= 0 else 0
            return ev.iv(_ite(v.t < 0, -v.t, v.t), lo, max(abs(v.lo), abs(v.hi)))
        return _Code(abs_, m.INT)

    # the operators
    def number(self, v: int) -> _Code:
        return _Code(lambda g: self.ev.const_iv(v), m.INT)

    def group(self, code: _Code) -> _Code:
        return code

    def equals(self, a: _Code, b: _Code, negate: bool = False) -> _Code:
        ev = self.ev

        def eq(g: Any) -> Any:
            x, y = a.d(g), b.d(g)
            ka, kb = kind(a.t), kind(b.t)
            if ka == "bool" and kb == "bool":
                r = x == y
            elif ka == "bv" or kb == "bv":  # the other side converted, as C compares
                t = a.t if ka == "bv" else b.t
                assert isinstance(t, m.BitVecT)
                r = ev.as_bv(x, a.t, t.width) == ev.as_bv(y, b.t, t.width)
            else:
                r = ev.as_int(x, a.t).t == ev.as_int(y, b.t).t
            return _not(r) if negate else r
        return _Code(eq, m.BOOL)

    def bit_of(self, x: _Code, nr: _Code) -> _Code:
        ev = self.ev
        if ev.ints:
            raise IntModeUnsupported("a bit of a set")
        return _Code(lambda g: IV((self.num(x, g).t >> self.num(nr, g).t) & 1, 0, 1), m.INT)

    def with_bit(self, x: _Code, nr: _Code, set: bool) -> _Code:
        ev = self.ev
        assert isinstance(x.t, m.BitsetT)  # resolve admits only a bit set here
        hi = (1 << x.t.size) - 1

        def changed(g: Any) -> IV:
            bit = z3.BitVecVal(1, ev.W, ev.ctx) << self.num(nr, g).t
            cur = self.num(x, g).t
            return IV(cur | bit if set else cur & ~bit, 0, hi)
        return _Code(changed, x.t)

    def with_mask(self, x: _Code, mask: int, set: bool) -> _Code:
        ev = self.ev

        def changed(g: Any) -> IV:
            ev.need(0, mask)
            cur = self.num(x, g)
            bits = z3.BitVecVal(mask, ev.W, ev.ctx)
            if set:
                return IV(cur.t | bits, 0, (1 << max(cur.hi.bit_length(), mask.bit_length())) - 1)
            return IV(cur.t & ~bits, 0, cur.hi)
        return _Code(changed, x.t)

    def has_mask(self, x: _Code, mask: int) -> _Code:
        ev = self.ev
        return _Code(lambda g: (self.num(x, g).t & z3.BitVecVal(mask, ev.W, ev.ctx)) != 0, m.BOOL)

    def or_(self, a: _Code, b: _Code) -> _Code:
        ev = self.ev
        t = a.t
        assert isinstance(t, m.BitVecT)  # resolve admits only fixed-width locations
        return _Code(lambda g: a.d(g) | ev.as_bv(b.d(g), b.t, t.width), t)

    def plus(self, a: _Code, step: int) -> _Code:
        return self.plus_delta(a, self.number(step), False)

    def plus_delta(self, a: _Code, delta: _Code, negate: bool) -> _Code:
        ev = self.ev
        t = a.t
        if isinstance(t, m.BitVecT):
            def bv_sum(g: Any) -> Any:
                x, d = a.d(g), ev.as_bv(delta.d(g), delta.t, t.width)
                return x - d if negate else x + d
            return _Code(bv_sum, t)
        return _Code(lambda g: ev._int_op("-" if negate else "+", self.num(a, g), self.num(delta, g), g), m.INT)


# ---- the transition system -------------------------------------------------------


@dataclass
class Transition:
    """One step of one process instance, over the encoding's `cur` state."""

    index: int  # the value of the step selector
    step: CompiledStep | CompiledFlush  # tso: a flush of one store buffer is a step of its own
    instance: CompiledInstance | None  # None: a flush (the memory system's step)
    pcs: frozenset[int]
    moved: object  # it returns a successor or fails an assert (explicit: "moved")
    err: object  # it raises ModelError (in its guard or body)
    done: object  # it returns a successor
    fails: dict[str, object]
    updates: dict[int, object]  # slot -> next value, where it may differ from cur
    overflow: Any
    index_in_turn: int = 0  # the value of its instance's turn selector (rounds)

    @property
    def gid(self) -> int:
        """Its actor: the instance, or a flush's own gid (after the instances)."""
        return self.step.gid


@record
class Turn:
    """An instance's turn in a round, as a template over `cur`, the next values of the
    slots its steps may write (`nxt`) and its selector: value i takes `transitions[i]`,
    len(transitions) idles."""

    gid: int
    transitions: tuple[Transition, ...]
    sel: Any
    nxt: dict[int, object]
    reach: list[frozenset[int]]  # the pcs it may be at after m steps of its own (reach_by_steps)
    formulas: dict[frozenset[int], object]  # pcs -> the formula with only the steps there


@record
class Substep:
    """One turn placed in the unrolling: its selector and the state after it."""

    sel: Any
    transitions: tuple[Transition, ...]
    after: list


@dataclass
class SafetyProperty:
    name: str
    kind: str  # m.PropertyKind value, or MODEL_ERROR
    bad: object  # over `cur`: this state violates it (or a step from it fails it)


@record
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
    sel: Any = None
    transitions: list[Transition] = field(default_factory=list)
    properties: list[SafetyProperty] = field(default_factory=list)
    trans: Any = None
    init: Any = None
    domain: Any = None
    overflow: Any = None
    _turns: list[Turn] | None = None

    liveness: list[LivenessTerms] = field(default_factory=list)  # engines/smt/lasso.py checks them

    def __post_init__(self):
        # A fresh context per encoding: Z3's answers depend on the order its terms were
        # made in, so a context shared across runs would make counterexamples depend on
        # what the process checked before.
        self.ctx = z3.Context()
        self.T, self.F = z3.BoolVal(True, self.ctx), z3.BoolVal(False, self.ctx)
        model = self.cm.program.model
        if model.memory == "lkmm":
            raise SpecError(NOWHERE, f"the Z3 engines encode sequential consistency and x86-TSO; "
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
        tso = self.program.model.memory == "tso"
        for i, (inst, cs, pcs) in enumerate(entries.values()):
            ev = Evaluator(self, width, list(self.cur), inst)
            pc_val = self.cur[inst.pc_slot]
            ev.g = _or(self.ctx, *[pc_val == p for p in sorted(pcs)])
            ev.buffer = self.layout.buffer_of(inst.gid) if tso else None
            if ev.buffer is not None and cs.step.fence:  # a fence waits until its CPU's buffer is empty
                ev.g = _and(self.ctx, ev.g, self.cur[ev.buffer.base] == 0)
            if cs.step.kind is StepKind.SCHEDULE:
                ev.g = _and(self.ctx, ev.g, self.cur[self.layout.task_slot[inst.gid]] == 0)
            if cs.step.guard is not None:
                ev.g = _and(self.ctx, ev.g, ev.now(cs.step.guard))
            # a locked `atomic` block is one LOCK-prefixed instruction: memory, not the buffer
            ev.direct = cs.step.kind is StepKind.ATOMIC and cs.step.fence
            ev.run(cs.step.body)
            ev.direct = False
            needed = max(needed, ev.needed)
            fails = {p: _or(self.ctx, *c) for p, c in ev.fails.items()}
            done = _or(self.ctx, *ev.dones)
            updates = {j: t for j, t in enumerate(ev.env) if not t.eq(self.cur[j])}
            self.transitions.append(Transition(i, cs, inst, frozenset(pcs), _or(self.ctx, done, *fails.values()),
                                               _or(self.ctx, *ev.errs), done, fails, updates, _or(self.ctx, *ev.overflow),
                                               sum(tr.gid == inst.gid for tr in self.transitions)))
        for cf in self.cm.flushes:
            self.transitions.append(self._flush(len(self.transitions), cf, width))
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
                             if not (isinstance(tr.step, CompiledStep) and tr.step.step.kind is StepKind.STUTTER)])
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
        self.domain = _and(self.ctx, *[self._in_domain(j) for j in range(len(self.layout.slots))],
                           self._buffers_well_formed())
        return needed

    def _flush(self, index: int, cf: CompiledFlush, width: int) -> Transition:
        """python.Compiler.flush_function: the oldest entry of a CPU's store buffer
        reaches memory, the others move up, the last becomes (0, 0)."""
        b = cf.buffer
        assert isinstance(b, StoreBuffer)  # the Z3 engines take tso, not lkmm's propagations
        cur = self.cur
        first, value = b.entry(0)
        g = cur[first] != 0
        updates: dict[int, Any] = {}
        for j in buffered_slots(self.layout, b):
            st = self.layout.slots[j].type
            raw = z3.Extract(st.width - 1, 0, cur[value]) if isinstance(st, m.BitVecT) else cur[value]
            updates[j] = _ite(cur[first] == j + 1, raw, cur[j])
        zero = z3.BitVecVal(0, width, self.ctx)
        for k in range(2 * b.capacity):
            j = b.base + k
            updates[j] = _ite(g, cur[j + 2] if k + 2 < 2 * b.capacity else zero, cur[j])
        return Transition(index, cf, None, FLUSH_PCS, g, self.F, g, {}, updates, self.F, 0)

    def _buffers_well_formed(self):
        """What every reachable state's store buffers satisfy (tso): an entry names a
        buffered location or is empty, empty entries are (0, 0) and come last. Part of
        the domain, so that induction need not refute buffers no run makes."""
        parts = []
        for b in self.layout.buffers:
            addresses = [j + 1 for j in buffered_slots(self.layout, b)]
            for k in range(b.capacity):
                at, val = b.entry(k)
                a = self.cur[at]
                parts.append(_or(self.ctx, a == 0, *[a == x for x in addresses]))
                parts.append(_or(self.ctx, a != 0, self.cur[val] == 0))
                if k + 1 < b.capacity:
                    parts.append(_or(self.ctx, a != 0, self.cur[b.entry(k + 1)[0]] == 0))
        return _and(self.ctx, *parts)

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
            actors: list[tuple[int, list[frozenset[int]]]] = [
                (inst.gid, reach_by_steps(inst, self.program.init_choices)) for inst in self.cm.instances]
            actors += [(cf.gid, [FLUSH_PCS]) for cf in self.cm.flushes]  # tso: each buffer's flush in turn
            for gid, reach in actors:
                trs = tuple(tr for tr in self.transitions if tr.gid == gid)
                written = tuple(sorted(set().union(*(tr.updates for tr in trs))))
                sel = z3.BitVec(f"turn:{gid}", max(1, len(trs).bit_length()), self.ctx)
                nxt = {j: z3.Const(f"'{gid}:{self.layout.slots[j].name}", self.sort(j)) for j in written}
                self._turns.append(Turn(gid, trs, sel, nxt, reach, {}))
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

    def round_at(self, k: int, frame: list, steps: int = 1) -> tuple[list, list, list[Substep]]:
        """Round k from the state `frame`: each process instance in gid order takes up
        to `steps` steps of its own in a row, or idles, from the state the previous one
        left. Returns the formulas, the state after the round (terms), and each step's
        selector and state after it, so that a model expands into the sequence of real
        steps it stands for."""
        state = list(frame)
        formulas = []
        subs: list[Substep] = []
        for tt in self.turn_templates():
            idle = len(tt.transitions)
            before = None
            for j in range(steps):
                sel = z3.BitVec(f"turn{k}:{tt.gid}" + (f".{j}" if j else ""), tt.sel.size(), self.ctx)
                after = list(state)
                for s in tt.nxt:
                    after[s] = z3.Const(f"{k}:{tt.gid}:{self.layout.slots[s].name}" + (f".{j}" if j else ""),
                                        self.sort(s))
                pairs = list(zip(self.cur, state)) + [(tt.nxt[s], after[s]) for s in tt.nxt] + [(tt.sel, sel)]
                # before this step the instance took at most k * steps + j steps
                pcs = tt.reach[min(k * steps + j, len(tt.reach) - 1)]
                formulas.append(z3.substitute(self.turn_formula(tt, pcs), *pairs))
                if before is not None:  # a turn's steps come first, its idles after them
                    formulas.append(z3.Implies(before == idle, sel == idle))
                subs.append(Substep(sel, tt.transitions, after))
                state, before = after, sel
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
