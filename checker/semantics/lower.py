"""A kernel primitive's call -> the core operation the back ends implement.

The back ends (backends/python.py, backends/promela.py, engines/smt/encode.py) and the
footprints of engines/reduce/ know these few operations, never a primitive's name: a new
primitive is a row of primitives.py, and a new lowering rule only when its shape is new.
Each core operation carries the row it came from (`prim`), so its ordering travels with it.

What a back end writes for a core operation is decided once, in `Spelling`: what is
read, checked, computed and written, in which order. A back end subclasses it to spell
those pieces in its language: Python, Promela, or Z3 terms (engines/smt/encode.py).

Lowering happens when a back end emits a step, never while a state is explored: the
generated code is as specialised as before.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from .. import model as m
from ..base.errors import Span
from .primitives import BUILTINS, X86, Arg, Cls, Primitive, Pure, Returns, RmwOp
from ..base.record import record


@record
class Load:
    """The value of `loc`."""
    prim: Primitive
    loc: m.TExpr


@record
class Store:
    """`loc = value`."""
    prim: Primitive
    loc: m.TExpr
    value: m.TExpr


@record
class Add:
    """`loc = loc + step` (a constant) or `loc = loc + delta` / `- delta` (`negate`)."""
    prim: Primitive
    loc: m.TExpr
    step: int | None
    delta: m.TExpr | None
    negate: bool
    returns: Returns  # NOTHING, OLD, NEW or NEW_IS_ZERO


@record
class Or:
    """`loc = loc | value`; the old value."""
    prim: Primitive
    loc: m.TExpr
    value: m.TExpr
    returns: Returns


@record
class BitOp:
    """Set or clear bit `nr` of `bits`; the old bit when `returns_old`."""
    prim: Primitive
    nr: m.TExpr
    bits: m.TExpr
    set: bool
    returns_old: bool


@record
class Xchg:
    """`loc = value`; the old value."""
    prim: Primitive
    loc: m.TExpr
    value: m.TExpr


@record
class Cas:
    """If `loc == expect` then `loc = new`; the old value, or whether it succeeded."""
    prim: Primitive
    loc: m.TExpr
    expect: m.TExpr
    new: m.TExpr
    success: bool


@record
class TestBit:
    prim: Primitive
    nr: m.TExpr
    bits: m.TExpr


@record
class Zero:
    """Whether `x` is 0 (`bitmap_empty`), or not 0 (`nonzero`: anyone on a wait queue)."""
    prim: Primitive
    x: m.TExpr
    nonzero: bool


@record
class MinMax:
    prim: Primitive
    a: m.TExpr
    b: m.TExpr
    is_min: bool


@record
class Abs:
    """|x|; of a signed fixed-width x, modulo 2**width (the minimum stays itself)."""
    prim: Primitive
    x: m.TExpr


@record
class WaitAdd:
    """The running process joins `queue`; its task state becomes INTERRUPTIBLE."""
    prim: Primitive
    queue: m.TExpr


@record
class WaitRemove:
    """The running process's task state becomes RUNNING; it leaves `queue`."""
    prim: Primitive
    queue: m.TExpr


@record
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


C = TypeVar("C")  # a back end's code of a value: text, or (the Z3 encoding) a deferred term
P = TypeVar("P")  # a back end's name of a location


class Spelling(ABC, Generic[C, P]):
    """How one back end writes code; `builtin` decides what is written, so the back
    ends (backends/python.py, backends/promela.py, engines/smt/encode.py) only spell it.

    Everything a back end writes its own way (a temporary, a read or write of memory, a
    check, a branch, a conditional value, an operator) is a method here; the text back
    ends share the operators, written alike in Python, Promela and C (`TextSpelling`).
    A place is how the back end names a location (a packed bit field, a Promela
    variable, the Z3 encoding's candidate slots)."""

    def __init__(self, owner: Writer):
        self.owner = owner

    def running(self) -> int:
        """The gid of the instance whose step is being written."""
        proc, inst = self.owner.proc, self.owner.inst
        assert proc is not None and inst is not None  # a primitive is called in a step
        return self.owner.layout.gid_base[proc.name] + inst

    @abstractmethod
    def value(self, x: m.TExpr) -> C:
        """The code of `x`'s value (a plain read goes through the store buffer)."""

    @abstractmethod
    def fresh(self) -> C:
        """A new temporary."""

    @abstractmethod
    def assign(self, tmp: C, code: C) -> None:
        """`tmp = code`, now."""

    @abstractmethod
    def paren(self, code: C) -> C:
        """`code` as an operand."""

    @abstractmethod
    def store(self, loc: m.TExpr, value: m.TExpr) -> None:
        """`loc = value`, as an assignment of the model would store it."""

    @abstractmethod
    def store_code(self, loc: m.TExpr, code: C) -> None:
        """`loc = code`, a value computed here (within range checks and the buffer)."""

    @abstractmethod
    def place(self, loc: m.TExpr) -> P:
        """The location itself, for an access that bypasses the store buffer."""

    @abstractmethod
    def task(self, gid: int) -> P:
        """The place of instance `gid`'s task state (1: INTERRUPTIBLE, 0: RUNNING)."""

    @abstractmethod
    def read(self, place: P) -> C: ...

    @abstractmethod
    def write(self, place: P, code: C, const: int | None = None) -> None:
        """`place = code` (`const`: its value, when it is a constant)."""

    @abstractmethod
    def note(self, text: str) -> None:
        """A comment in the generated code."""

    def when(self, cond: C, then: Callable[[], None], note: str | None = None) -> None:
        """`if cond: then()`: the one case of `first`, unless a back end writes it apart."""
        self.first([(cond, note, then)])

    @abstractmethod
    def first(self, cases: list[tuple[C, str | None, Callable[[], None]]]) -> None:
        """The first case whose condition holds runs (`if ... elif ...`); each case is
        (condition, note, body)."""

    @abstractmethod
    def bit_in_set(self, nr: C, bits: m.TExpr) -> C:
        """`nr` as a bit number of `bits`, failing when the step runs if it is not one."""

    @abstractmethod
    def check_bit(self, nr: C, place: P, size: int) -> None:
        """Fail now unless `nr` is a bit number of the set at `place`."""

    @abstractmethod
    def fits(self, t: m.BitVecT, span: Span) -> None:
        """Refuse a fixed-width type this back end cannot compute in."""

    @abstractmethod
    def wrap(self, code: C, t: m.BitVecT) -> C:
        """`code` modulo 2**width."""

    @abstractmethod
    def min_max(self, a: C, b: C, is_min: bool, signed: m.BitVecT | None) -> C:
        """min/max; of a signed fixed-width type, in two's complement order."""

    @abstractmethod
    def abs(self, x: C, signed: m.BitVecT | None) -> C:
        """|x| of an integer, or of a signed fixed-width type (modulo 2**width)."""

    # the operators
    @abstractmethod
    def number(self, v: int) -> C: ...

    @abstractmethod
    def group(self, code: C) -> C:
        """`code` as a value of its own (the text back ends parenthesise it)."""

    @abstractmethod
    def equals(self, a: C, b: C, negate: bool = False) -> C:
        """`a == b` (`a != b`)."""

    @abstractmethod
    def bit_of(self, x: C, nr: C) -> C:
        """Bit `nr` of `x`, as 0 or 1."""

    @abstractmethod
    def with_bit(self, x: C, nr: C, set: bool) -> C:
        """`x` with bit `nr` set (or cleared)."""

    @abstractmethod
    def with_mask(self, x: C, mask: int, set: bool) -> C:
        """`x` with the bits of the constant `mask` set (or cleared)."""

    @abstractmethod
    def has_mask(self, x: C, mask: int) -> C:
        """Whether `x` has a bit of the constant `mask`."""

    @abstractmethod
    def or_(self, a: C, b: C) -> C: ...

    @abstractmethod
    def plus(self, a: C, step: int) -> C:
        """`a + step`, a constant (before any wrap)."""

    @abstractmethod
    def plus_delta(self, a: C, delta: C, negate: bool) -> C:
        """`a + delta` or `a - delta` (before any wrap)."""

    def builtin(self, c: m.Builtin) -> C | None:
        """Write a kernel primitive's call; the code of its value (None when it has none).
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

    def core(self, k: Core, span: Span) -> C | None:
        """One core operation: what is read, checked, computed and written, in order."""
        if isinstance(k, Load):
            return self.value(k.loc)
        if isinstance(k, TestBit):
            nr = self.value(k.nr)
            if bit_may_miss(k.nr, _set_size(k.bits)):
                nr = self.bit_in_set(nr, k.bits)
            return self.group(self.bit_of(self.value(k.bits), nr))
        if isinstance(k, Zero):
            return self.group(self.equals(self.value(k.x), self.number(0), negate=k.nonzero))
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
            return None
        if isinstance(k, (Add, Or)):
            return self.add_or(k, span)
        if isinstance(k, BitOp):
            nr = self.value(k.nr)
            place = self.place(k.bits)
            size = _set_size(k.bits)
            if bit_may_miss(k.nr, size):
                self.check_bit(nr, place, size)
            cur = self.read(place)
            old = None
            if k.returns_old:
                old = self.fresh()
                self.assign(old, self.bit_of(cur, nr))
            self.write(place, self.with_bit(cur, nr, k.set))
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
            self.when(self.equals(old, expect), lambda: self.store(cas.loc, cas.new))
            return self.group(self.equals(old, expect)) if k.success else old
        if isinstance(k, (WaitAdd, WaitRemove)):
            queue = self.place(k.queue)
            gid = self.running()
            task = self.task(gid)
            cur = self.read(queue)
            name = self.owner.layout.instance_names[gid]
            if isinstance(k, WaitAdd):  # on the queue before it may sleep
                self.note(f"{name} waits; its task is INTERRUPTIBLE")
                self.write(queue, self.with_mask(cur, 1 << gid, True))
                self.write(task, self.number(1), const=1)
            else:
                self.note(f"{name} stops waiting; its task is RUNNING")
                self.write(task, self.number(0), const=0)
                self.write(queue, self.with_mask(cur, 1 << gid, False))
            return None
        if isinstance(k, Wake):
            self.wake(k)
            return None
        raise TypeError(f"core operation {type(k).__name__}")

    def add_or(self, k: Add | Or, span: Span) -> C | None:
        """A counter's read-modify-write: a delta is read before the location, the new
        value wraps in a fixed width, the old value is kept before the store."""
        target = k.loc
        if isinstance(k, Or):
            cur = self.value(target)
            value = self.or_(cur, self.paren(self.value(k.value)))
        elif k.step is not None:
            cur = self.value(target)
            value = self.plus(cur, k.step)
        else:
            assert k.delta is not None
            d = self.value(k.delta)
            cur = self.value(target)
            value = self.plus_delta(cur, d, k.negate)
        new = self.fresh()
        t = target.type
        if isinstance(t, m.BitVecT):  # an unsigned counter wraps
            self.fits(t, span)
            value = self.wrap(value, t)
        self.assign(new, value)
        old = None
        if k.returns is Returns.OLD:
            old = self.fresh()
            self.assign(old, cur)
        self.store_code(target, new)
        if k.returns is Returns.NEW_IS_ZERO:
            return self.group(self.equals(new, self.number(0)))
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
                self.write(self.task(gid), self.number(0), const=0)
                if leave:
                    self.write(queue, self.with_mask(w, 1 << gid, False))
            return body

        if k.all:
            for gid in sleepers:
                self.when(self.has_mask(w, 1 << gid), wake_one(gid, False), note=f"wake {names[gid]}")
            self.write(queue, self.number(0), const=0)
        else:
            self.first([(self.has_mask(w, 1 << gid), f"wake {names[gid]}", wake_one(gid, True)) for gid in sleepers])


class TextSpelling(Spelling[str, P]):
    """The operators of the text back ends: `| & ~ << >> + == !=` are written alike in
    Python, Promela and C."""

    def number(self, v: int) -> str:
        return str(v)

    def group(self, code: str) -> str:
        return f"({code})"

    def equals(self, a: str, b: str, negate: bool = False) -> str:
        return f"{a} {'!=' if negate else '=='} {b}"

    def word(self, v: int) -> str:
        """A constant among a location's bits (C: a 64-bit literal)."""
        return str(v)

    def bit_of(self, x: str, nr: str) -> str:
        return f"({x} >> {nr}) & 1"

    def with_bit(self, x: str, nr: str, set: bool) -> str:
        one = self.word(1)
        return f"{x} | ({one} << {nr})" if set else f"{x} & ~({one} << {nr})"

    def with_mask(self, x: str, mask: int, set: bool) -> str:
        return f"{x} | {self.word(mask)}" if set else f"{x} & ~{self.word(mask)}"

    def has_mask(self, x: str, mask: int) -> str:
        return f"{x} & {self.word(mask)}"

    def or_(self, a: str, b: str) -> str:
        return f"{a} | {b}"

    def plus(self, a: str, step: int) -> str:
        return f"{a} + {step}"

    def plus_delta(self, a: str, delta: str, negate: bool) -> str:
        return f"{a} + {f'-({delta})' if negate else delta}"


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


class Lines(Protocol):
    """What `EmittedSpelling` reads of the emitter a step is written into."""

    def fresh(self) -> str: ...


E = TypeVar("E", bound=Lines)  # a back end's emitter
E_in = TypeVar("E_in", bound=Lines, contravariant=True)


class StepWriter(Writer, Protocol[E_in]):
    """A back end that writes a step as statements into an emitter, reading the state
    as `src` (Python's and C's)."""

    def expr(self, x: m.TExpr, e: E_in, src: str) -> str: ...

    def store(self, target: m.TExpr, value: m.TExpr, e: E_in) -> None: ...

    def store_code(self, target: m.TExpr, code: str, value: m.TExpr | None, e: E_in) -> None: ...


class EmittedSpelling(TextSpelling[P], Generic[P, E]):
    """The pieces the Python and C spellings write alike: their owner's values and
    stores, the emitter's temporaries."""

    owner: StepWriter[E]

    def __init__(self, owner: StepWriter[E], e: E, src: str):
        super().__init__(owner)
        self.e, self.src = e, src

    def value(self, x: m.TExpr) -> str:
        return self.owner.expr(x, self.e, self.src)

    def fresh(self) -> str:
        return self.e.fresh()

    def store(self, loc: m.TExpr, value: m.TExpr) -> None:
        self.owner.store(loc, value, self.e)

    def store_code(self, loc: m.TExpr, code: str) -> None:
        self.owner.store_code(loc, code, None, self.e)
