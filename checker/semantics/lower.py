"""A kernel primitive's call -> the core operation the back ends implement.

The back ends (compile.py, promela.py, engines/encode.py) and the footprints of
engines/reduce/ know these few operations, never a primitive's name: a new primitive
is a row of builtins.py, and a new lowering rule only when its shape is new. Each core
operation carries the row it came from (`prim`), so its ordering travels with it.

Lowering happens when a back end emits a step, never while a state is explored: the
generated code is as specialised as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import model as m
from .primitives import BUILTINS, Arg, Cls, Primitive, Pure, Returns, RmwOp


@dataclass(frozen=True, slots=True)
class Load:
    """The value of `loc`."""
    prim: Primitive
    loc: m.TExpr


@dataclass(frozen=True, slots=True)
class Store:
    """`loc = value`."""
    prim: Primitive
    loc: m.TExpr
    value: m.TExpr


@dataclass(frozen=True, slots=True)
class Add:
    """`loc = loc + step` (a constant) or `loc = loc + delta` / `- delta` (`negate`)."""
    prim: Primitive
    loc: m.TExpr
    step: int | None
    delta: m.TExpr | None
    negate: bool
    returns: Returns  # NOTHING, OLD, NEW or NEW_IS_ZERO


@dataclass(frozen=True, slots=True)
class Or:
    """`loc = loc | value`; the old value."""
    prim: Primitive
    loc: m.TExpr
    value: m.TExpr
    returns: Returns


@dataclass(frozen=True, slots=True)
class BitOp:
    """Set or clear bit `nr` of `bits`; the old bit when `returns_old`."""
    prim: Primitive
    nr: m.TExpr
    bits: m.TExpr
    set: bool
    returns_old: bool


@dataclass(frozen=True, slots=True)
class Xchg:
    """`loc = value`; the old value."""
    prim: Primitive
    loc: m.TExpr
    value: m.TExpr


@dataclass(frozen=True, slots=True)
class Cas:
    """If `loc == expect` then `loc = new`; the old value, or whether it succeeded."""
    prim: Primitive
    loc: m.TExpr
    expect: m.TExpr
    new: m.TExpr
    success: bool


@dataclass(frozen=True, slots=True)
class TestBit:
    prim: Primitive
    nr: m.TExpr
    bits: m.TExpr


@dataclass(frozen=True, slots=True)
class Zero:
    """Whether `x` is 0 (`bitmap_empty`), or not 0 (`nonzero`: anyone on a wait queue)."""
    prim: Primitive
    x: m.TExpr
    nonzero: bool


@dataclass(frozen=True, slots=True)
class MinMax:
    prim: Primitive
    a: m.TExpr
    b: m.TExpr
    is_min: bool


@dataclass(frozen=True, slots=True)
class Abs:
    """|x|; of a signed fixed-width x, modulo 2**width (the minimum stays itself)."""
    prim: Primitive
    x: m.TExpr


@dataclass(frozen=True, slots=True)
class WaitAdd:
    """The running process joins `queue`; its task state becomes INTERRUPTIBLE."""
    prim: Primitive
    queue: m.TExpr


@dataclass(frozen=True, slots=True)
class WaitRemove:
    """The running process's task state becomes RUNNING; it leaves `queue`."""
    prim: Primitive
    queue: m.TExpr


@dataclass(frozen=True, slots=True)
class Wake:
    """Waiters of `queue` become RUNNING and leave it: all, or the first in gid order."""
    prim: Primitive
    queue: m.TExpr
    all: bool


Core = Load | Store | Add | Or | BitOp | Xchg | Cas | TestBit | Zero | MinMax | Abs | WaitAdd | WaitRemove | Wake

# The operations that only read, and whose evaluation raises nothing given arguments
# that raise nothing (a bit number may be out of its set: TestBit is not one of them).
SAFE_READS = (Load, Zero)


def _true(x: m.TExpr) -> m.Const:
    return m.Const(x.span, x.type, 1)


def _false(x: m.TExpr) -> m.Const:
    return m.Const(x.span, x.type, 0)


def lower(b: m.Builtin) -> Core:
    """The core operation of a primitive's call (not of a fence or schedule(), which
    are steps of their own: see `ir`)."""
    p = BUILTINS[b.name]
    a = b.args
    c = p.cls
    if c is Cls.LOAD:
        if p.args[0] is Arg.NR:
            return TestBit(p, a[0], a[1])
        if p.args[0] is Arg.BITS:
            return Zero(p, a[0], nonzero=False)
        return Load(p, a[0])
    if c is Cls.WQ_TEST:
        return Zero(p, a[0], nonzero=True)
    if c is Cls.PURE:
        if p.pure is Pure.ABS:
            return Abs(p, a[0])
        return MinMax(p, a[0], a[1], is_min=p.pure is Pure.MIN)
    if c is Cls.STORE:
        if p.args == (Arg.LOCK,):  # spin_unlock
            return Store(p, a[0], _false(a[0]))
        return Store(p, a[0], a[1])
    if c is Cls.LOCK:  # the step's guard waits for the lock (`lock_guard`); this takes it
        return Store(p, a[0], _true(a[0]))
    if c is Cls.WQ_ADD:
        return WaitAdd(p, a[0])
    if c is Cls.WQ_REMOVE:
        return WaitRemove(p, a[0])
    if c is Cls.WQ_WAKE:
        return Wake(p, a[0], all=p.wake_all)
    if c is Cls.RMW:
        op = p.op
        if op in (RmwOp.ADD, RmwOp.SUB):
            if p.step is not None:
                return Add(p, a[0], p.step, None, False, p.returns)
            return Add(p, a[1], None, a[0], op is RmwOp.SUB, p.returns)
        if op is RmwOp.OR:
            return Or(p, a[1], a[0], p.returns)
        if op in (RmwOp.SET_BIT, RmwOp.CLEAR_BIT):
            return BitOp(p, a[0], a[1], op is RmwOp.SET_BIT, p.returns is Returns.OLD_BIT)
        if op is RmwOp.XCHG:
            return Xchg(p, a[0], a[1])
        if op is RmwOp.CMPXCHG:
            if p.returns is Returns.SUCCESS:  # spin_trylock
                return Cas(p, a[0], _false(a[0]), _true(a[0]), success=True)
            return Cas(p, a[0], a[1], a[2], success=False)
    raise TypeError(f"no lowering for the primitive {b.name} ({c.value})")


def lock_guard(b: m.Builtin) -> m.TExpr:
    """What a lock-taking step waits for: the lock is free."""
    lock = b.args[0]
    return m.Un(lock.span, m.BOOL, "!", lock)
