"""A kernel primitive's call -> the core operation the back ends implement.

The back ends (backends/python.py, backends/promela.py, engines/smt/encode.py) and the
footprints of engines/reduce/ know these few operations, never a primitive's name: a new
primitive is a row of primitives.py, and a new lowering rule only when its shape is new.
Each core operation carries the row it came from (`prim`), so its ordering travels with it.

What a text back end writes for a core operation is decided once, in `Spelling`: what
is read, checked, computed and written, in which order. A back end subclasses it to
spell those pieces in its language.

Lowering happens when a back end emits a step, never while a state is explored: the
generated code is as specialised as before.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .. import model as m
from ..base.errors import Span
from .primitives import BUILTINS, X86, Arg, Cls, Primitive, Pure, Returns, RmwOp


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


# ---- what the text back ends write for a core operation -----------------------------

def bit_may_miss(nr: m.TExpr, size: int) -> bool:
    """Whether a bit number must be checked against its set when the step runs: it is
    computed, or a constant outside the set (that fails when the step runs)."""
    return not isinstance(nr, m.Const) or not 0 <= nr.value < size


def _set_size(bits: m.TExpr) -> int:
    t = bits.type
    assert isinstance(t, m.BitsetT)  # resolve admits only a bit set here
    return t.size


class Spelling(ABC):
    """How one back end writes code; `builtin` decides what is written, so the back
    ends (backends/python.py, backends/promela.py) only spell it.

    The integer operators `| & ~ << >> + == !=` are written alike in Python, Promela
    and C, so the plan writes them itself; whatever a back end writes its own way (a
    temporary, a read or write of memory, a check, a branch, a conditional value) is a
    method here. A place is how the back end names a location (a packed bit field, a
    Promela variable)."""

    def __init__(self, owner: Writer):
        self.owner = owner

    def running(self) -> int:
        """The gid of the instance whose step is being written."""
        proc, inst = self.owner.proc, self.owner.inst
        assert proc is not None and inst is not None  # a primitive is called in a step
        return self.owner.layout.gid_base[proc.name] + inst

    @abstractmethod
    def value(self, x: m.TExpr) -> str:
        """The code of `x`'s value (a plain read goes through the store buffer)."""

    @abstractmethod
    def fresh(self) -> str:
        """A new temporary."""

    @abstractmethod
    def assign(self, tmp: str, code: str) -> None:
        """`tmp = code`, now."""

    @abstractmethod
    def paren(self, code: str) -> str:
        """`code` as an operand."""

    @abstractmethod
    def store(self, loc: m.TExpr, value: m.TExpr) -> None:
        """`loc = value`, as an assignment of the model would store it."""

    @abstractmethod
    def store_code(self, loc: m.TExpr, code: str) -> None:
        """`loc = code`, a value computed here (within range checks and the buffer)."""

    @abstractmethod
    def place(self, loc: m.TExpr) -> Any:
        """The location itself, for an access that bypasses the store buffer."""

    @abstractmethod
    def task(self, gid: int) -> Any:
        """The place of instance `gid`'s task state (1: INTERRUPTIBLE, 0: RUNNING)."""

    @abstractmethod
    def read(self, place: Any) -> str: ...

    @abstractmethod
    def write(self, place: Any, code: str, const: int | None = None) -> None:
        """`place = code` (`const`: its value, when it is a constant)."""

    @abstractmethod
    def note(self, text: str) -> None:
        """A comment in the generated code."""

    @abstractmethod
    def when(self, cond: str, then: Callable[[], None], note: str | None = None) -> None:
        """`if cond: then()`."""

    @abstractmethod
    def first(self, cases: list[tuple[str, str | None, Callable[[], None]]]) -> None:
        """The first case whose condition holds runs (`if ... elif ...`); each case is
        (condition, note, body)."""

    @abstractmethod
    def bit_in_set(self, nr: str, bits: m.TExpr) -> str:
        """`nr` as a bit number of `bits`, failing when the step runs if it is not one."""

    @abstractmethod
    def check_bit(self, nr: str, place: Any, size: int) -> None:
        """Fail now unless `nr` is a bit number of the set at `place`."""

    @abstractmethod
    def fits(self, t: m.BitVecT, span: Span) -> None:
        """Refuse a fixed-width type this back end cannot compute in."""

    @abstractmethod
    def wrap(self, code: str, t: m.BitVecT) -> str:
        """`code` modulo 2**width."""

    @abstractmethod
    def min_max(self, a: str, b: str, is_min: bool, signed: m.BitVecT | None) -> str:
        """min/max; of a signed fixed-width type, in two's complement order."""

    @abstractmethod
    def abs(self, x: str, signed: m.BitVecT | None) -> str:
        """|x| of an integer, or of a signed fixed-width type (modulo 2**width)."""

    def builtin(self, c: m.Builtin) -> str:
        """Write a kernel primitive's call; the code of its value ("" when it has none).
        Under tso a locked primitive reads and writes memory directly: its step only
        runs with an empty store buffer (`Step.fence`)."""
        k = lower(c)
        owner = self.owner
        outer = owner.direct
        owner.direct = outer or k.prim.x86 is X86.LOCKED
        try:
            return self.core(k, c.span)
        finally:
            owner.direct = outer

    def core(self, k: Core, span: Span) -> str:
        """One core operation: what is read, checked, computed and written, in order."""
        if isinstance(k, Load):
            return self.value(k.loc)
        if isinstance(k, TestBit):
            nr = self.value(k.nr)
            if bit_may_miss(k.nr, _set_size(k.bits)):
                nr = self.bit_in_set(nr, k.bits)
            return f"(({self.value(k.bits)} >> {nr}) & 1)"
        if isinstance(k, Zero):
            return f"({self.value(k.x)} {'!=' if k.nonzero else '=='} 0)"
        if isinstance(k, MinMax):
            a, b = self.value(k.a), self.value(k.b)
            t = k.a.type
            if isinstance(t, m.BitVecT) and t.signed:
                self.fits(t, span)
                return self.min_max(a, b, k.is_min, t)
            return self.min_max(a, b, k.is_min, None)
        if isinstance(k, Abs):
            x = self.value(k.x)
            t = k.x.type
            if isinstance(t, m.BitVecT):
                self.fits(t, span)
                return self.abs(x, t) if t.signed else x
            return self.abs(x, None)
        if isinstance(k, Store):
            self.store(k.loc, k.value)
            return ""
        if isinstance(k, (Add, Or)):
            return self.add_or(k, span)
        if isinstance(k, BitOp):
            nr = self.value(k.nr)
            place = self.place(k.bits)
            size = _set_size(k.bits)
            if bit_may_miss(k.nr, size):
                self.check_bit(nr, place, size)
            cur = self.read(place)
            old = ""
            if k.returns_old:
                old = self.fresh()
                self.assign(old, f"({cur} >> {nr}) & 1")
            self.write(place, f"{cur} | (1 << {nr})" if k.set else f"{cur} & ~(1 << {nr})")
            return old
        if isinstance(k, Xchg):
            old = self.fresh()
            self.assign(old, self.value(k.loc))
            self.store(k.loc, k.value)
            return old
        if isinstance(k, Cas):
            old = self.fresh()
            self.assign(old, self.value(k.loc))
            expect = self.value(k.expect)
            cas = k
            self.when(f"{old} == {expect}", lambda: self.store(cas.loc, cas.new))
            return f"({old} == {expect})" if k.success else old
        if isinstance(k, (WaitAdd, WaitRemove)):
            queue = self.place(k.queue)
            gid = self.running()
            task = self.task(gid)
            cur = self.read(queue)
            name = self.owner.layout.instance_names[gid]
            if isinstance(k, WaitAdd):  # on the queue before it may sleep
                self.note(f"{name} waits; its task is INTERRUPTIBLE")
                self.write(queue, f"{cur} | {1 << gid}")
                self.write(task, "1", const=1)
            else:
                self.note(f"{name} stops waiting; its task is RUNNING")
                self.write(task, "0", const=0)
                self.write(queue, f"{cur} & ~{1 << gid}")
            return ""
        if isinstance(k, Wake):
            self.wake(k)
            return ""
        raise TypeError(f"core operation {type(k).__name__}")

    def add_or(self, k: Add | Or, span: Span) -> str:
        """A counter's read-modify-write: a delta is read before the location, the new
        value wraps in a fixed width, the old value is kept before the store."""
        target = k.loc
        cur = self.value(target) if isinstance(k, Or) or k.step is not None else ""
        if isinstance(k, Or):
            value = f"{cur} | {self.paren(self.value(k.value))}"
        elif k.step is not None:
            value = f"{cur} + {k.step}"
        else:
            assert k.delta is not None
            d = self.value(k.delta)
            cur = self.value(target)
            value = f"{cur} + {f'-({d})' if k.negate else d}"
        new = self.fresh()
        t = target.type
        if isinstance(t, m.BitVecT):  # an unsigned counter wraps
            self.fits(t, span)
            value = self.wrap(value, t)
        self.assign(new, value)
        old = ""
        if k.returns is Returns.OLD:
            old = self.fresh()
            self.assign(old, cur)
        self.store_code(target, new)
        if k.returns is Returns.NEW_IS_ZERO:
            return f"({new} == 0)"
        return new if k.returns is Returns.NEW else old

    def wake(self, k: Wake) -> None:
        """The sleepers of the queue (every task in gid order) become RUNNING: all, and
        the queue empties; or the first, and only it leaves the queue."""
        queue = self.place(k.queue)
        w = self.fresh()
        self.assign(w, self.read(queue))
        names = self.owner.layout.instance_names
        sleepers = sorted(self.owner.layout.task_slot)

        def wake_one(gid: int, leave: bool) -> Callable[[], None]:
            def body() -> None:
                self.write(self.task(gid), "0", const=0)
                if leave:
                    self.write(queue, f"{w} & ~{1 << gid}")
            return body

        if k.all:
            for gid in sleepers:
                self.when(f"{w} & {1 << gid}", wake_one(gid, False), note=f"wake {names[gid]}")
            self.write(queue, "0", const=0)
        else:
            self.first([(f"{w} & {1 << gid}", f"wake {names[gid]}", wake_one(gid, True)) for gid in sleepers])


class _Layout(Protocol):
    """What `Spelling` reads of the state layout (ir.StateLayout)."""

    @property
    def task_slot(self) -> Mapping[int, int]: ...

    @property
    def gid_base(self) -> Mapping[str, int]: ...

    @property
    def instance_names(self) -> Sequence[str]: ...


class _Process(Protocol):
    @property
    def name(self) -> str: ...


class Writer(Protocol):
    """What `Spelling` reads and sets of the back end it writes for."""

    direct: bool  # inside a locked primitive, plain accesses go to memory, not a store buffer (tso)

    @property
    def layout(self) -> _Layout: ...

    @property
    def proc(self) -> _Process | None: ...

    @property
    def inst(self) -> int | None: ...
