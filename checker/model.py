"""The resolved model: names bound, types checked, constants folded, inlines expanded.

This is the resolver's output and the IR builder's input. One `Model` per variant:
constants (and so ranges, array sizes and process counts) may differ between variants.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import field

from .base.errors import Span
from .base.record import record

# ---- types ---------------------------------------------------------------------


@record
class Type:
    def describe(self) -> str:
        return type(self).__name__


@record
class BoolT(Type):
    def describe(self) -> str:
        return "bool"


@record
class IntT(Type):
    """An integer: `lo..hi` when declared, unbounded (lo = hi = None) for arithmetic."""

    lo: int | None = None
    hi: int | None = None

    def describe(self) -> str:
        return "int" if self.lo is None else f"{self.lo}..{self.hi}"


@record
class BitVecT(Type):
    """A C integer of `width` bits, unsigned (u8 .. u64) or signed (s8 .. s64, two's
    complement). A value is held as its bit pattern, 0..2**width-1, in every back end:
    + - * << & | ^ ~ wrap around modulo 2**width and are the same for both (the kernel
    builds with -fno-strict-overflow, so signed overflow wraps); comparisons, / % >>
    and widening conversions read a signed pattern as its two's-complement value."""

    width: int
    signed: bool = False

    def describe(self) -> str:
        return f"{'s' if self.signed else 'u'}{self.width}"

    @property
    def half(self) -> int:
        """The sign bit; `pattern ^ half` orders signed patterns as unsigned ones."""
        return 1 << (self.width - 1)

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@record
class EnumT(Type):
    name: str
    members: tuple[str, ...]

    def describe(self) -> str:
        return self.name


#: a process's task state, as `P.state` reads it (the values are the layout's: 0 RUNNING)
TASK_STATE = EnumT("task_state", ("RUNNING", "INTERRUPTIBLE"))
TASK_STATE_NAMES = {"RUNNING": 0, "INTERRUPTIBLE": 1, "TASK_RUNNING": 0, "TASK_INTERRUPTIBLE": 1}


@record
class BitsetT(Type):
    """A set of bit numbers 0..size-1 (or of enum members), stored as a mask."""

    size: int
    elem: EnumT | None = None

    def describe(self) -> str:
        return f"bitset({self.elem.name if self.elem else self.size})"


@record
class WaitQueueT(Type):
    def describe(self) -> str:
        return "waitqueue"


@record
class VoidT(Type):
    def describe(self) -> str:
        return "nothing (a statement)"


@record
class ArrayT(Type):
    elem: Type
    lo: int
    hi: int
    by_process: str | None = None

    def describe(self) -> str:
        return f"{self.elem.describe()}[{self.by_process or f'{self.lo}..{self.hi}'}]"

    @property
    def length(self) -> int:
        return self.hi - self.lo + 1


BOOL = BoolT()
INT = IntT()
VOID = VoidT()


BITVEC_TYPES = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}
SIGNED_TYPES = {"s8": 8, "s16": 16, "s32": 32, "s64": 64}


def fixed_width_type(name: str) -> BitVecT | None:
    """The type a name such as `u8` or `s64` stands for."""
    if name in BITVEC_TYPES:
        return BitVecT(BITVEC_TYPES[name])
    if name in SIGNED_TYPES:
        return BitVecT(SIGNED_TYPES[name], signed=True)
    return None


def to_signed(v: int, width: int) -> int:
    """The two's-complement value of a `width`-bit pattern."""
    half = 1 << (width - 1)
    return (v ^ half) - half


def value_of(v: int, t: Type) -> int:
    """What a slot's pattern means: the signed value for s8 .. s64, else itself."""
    return to_signed(v, t.width) if isinstance(t, BitVecT) and t.signed else v


def bv_convert(v: int, src: Type, dst: BitVecT) -> int:
    """C's conversion of a value of type `src` (a pattern if it is fixed-width) to `dst`:
    a signed source is sign-extended, then the value is taken modulo 2**width."""
    return value_of(v, src) & dst.mask


def is_intlike(t: Type) -> bool:
    return isinstance(t, (IntT, BitVecT))


def arith_type(a: Type, b: Type) -> Type:
    """C's usual arithmetic conversions for our types: if either operand is unsigned,
    the operation is unsigned at the wider width; otherwise it is on integers."""
    fixed = [t for t in (a, b) if isinstance(t, BitVecT)]
    if not fixed:
        return INT
    width = max(t.width for t in fixed)
    # the wider type wins; at the same width unsigned wins (C's rank rules)
    signed = all(t.signed for t in fixed if t.width == width)
    return BitVecT(width, signed)


def bv_binop(op: str, a: int, b: int, width: int, signed: bool = False) -> int:
    """An unsigned operator on values already in 0..2**width-1 (C semantics).

    The one definition the resolver folds constants with and the compiled steps
    call at run time; the Z3 encoding uses the matching bit-vector operators.
    Division by zero is the caller's error. A shift count is taken modulo 2**width
    (as the count is converted to the operand's type) and a count >= width gives 0,
    as in Z3 (C leaves it undefined)."""
    mask = (1 << width) - 1
    if signed and op in ("/", "%", ">>"):
        return _signed_binop(op, a, b, width) & mask
    f = _BV_BINOPS.get(op)
    if f is not None:
        return f(a, b, width, mask)
    raise ValueError(op)


_BV_BINOPS = {
    "+": lambda a, b, w, mask: (a + b) & mask, "-": lambda a, b, w, mask: (a - b) & mask,
    "*": lambda a, b, w, mask: (a * b) & mask, "/": lambda a, b, w, mask: a // b,
    "%": lambda a, b, w, mask: a % b, "&": lambda a, b, w, mask: a & b, "|": lambda a, b, w, mask: a | b,
    "^": lambda a, b, w, mask: a ^ b,
    "<<": lambda a, b, w, mask: (a << b) & mask if b < w else 0,
    ">>": lambda a, b, w, mask: a >> b if b < w else 0,
}


def _signed_binop(op: str, a: int, b: int, width: int) -> int:
    """/ % >> of signed patterns: C's truncating division and remainder, and an
    arithmetic right shift (a count of width or more gives the sign, as Z3's bvashr;
    the count is read unsigned, as Z3 reads it)."""
    x = to_signed(a, width)
    if op == ">>":
        return x >> min(b, width - 1)
    y = to_signed(b, width)
    q = c_div(x, y)
    return q if op == "/" else x - q * y


def bv_compare(op: str, a: int, b: int, t: BitVecT) -> bool:
    """A comparison of two patterns of type `t`."""
    if t.signed:
        a, b = a ^ t.half, b ^ t.half
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]


def c_div(a: int, b: int) -> int:
    """C's signed division, truncating toward zero (b == 0 is the caller's error); C's
    `a % b` is `a - c_div(a, b) * b`. The one definition the constant folding and the
    compiled steps share."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def fold_binop(op: str, a: int, b: int) -> int | None:
    """A binary operator on plain integers, booleans or enum values, as the compiled
    steps compute it (C semantics; a comparison or logical operator gives 0 or 1); None
    where the value must be left to run time, which reports it (a zero divisor, a
    negative shift count, a left shift past 4096 bits) or for an operator not listed.
    The one definition the resolver, the back ends' folding and partial-order
    reduction's footprints fold constants with (bit-vectors: `bv_binop`)."""
    if op in ("/", "%") and b == 0 or op in ("<<", ">>") and b < 0 or op == "<<" and b > 4096:
        return None
    f = _INT_BINOPS.get(op)
    return f(a, b) if f is not None else None


_INT_BINOPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": c_div, "%": lambda a, b: a - c_div(a, b) * b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b), "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
    "&&": lambda a, b: int(bool(a and b)), "||": lambda a, b: int(bool(a or b)),
    "->": lambda a, b: int((not a) or bool(b)),
}


# ---- symbols -------------------------------------------------------------------


class MemoryModel(str, enum.Enum):
    """The memory models a variant is checked under (`memory X;`, --memory-model): the one
    definition. A str enum, so that the name a user writes is the member's value."""

    SC = "sc"  # sequential consistency: every access in one order
    TSO = "tso"  # x86-TSO: a store buffer per CPU (ir.StoreBuffer)
    LKMM = "lkmm"  # the Linux-kernel memory model, operationally (memory/lkmm.py)

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__  # equal to its name, so hashed as it: MemoryModel.TSO and "tso" are one key


#: the names, in the order the documentation gives them
MEMORY_MODELS = tuple(mm.value for mm in MemoryModel)


class Scope(enum.Enum):
    GLOBAL = "global"
    LOCAL = "local"


@record(eq=False)
class VarSym:
    """A declared variable (global or process-local; scalar or array)."""

    name: str
    type: Type
    scope: Scope
    span: Span
    init: tuple[tuple[int, ...] | range, ...]  # per element: the allowed initial values (`any` over u64: a range)
    process: str | None = None
    task: bool = False  # `P.state`: the process's task state (its slot is the layout's task slot)
    ghost: bool = False  # `ghost var`: never buffered (tso), never stale (lkmm)



# ---- typed expressions ---------------------------------------------------------


@record
class TExpr:
    span: Span
    type: Type


@record
class Const(TExpr):
    value: int  # bools are 0/1, enum members their index


@record
class Var(TExpr):
    sym: VarSym


@record
class Elem(TExpr):
    sym: VarSym
    index: TExpr


@record
class SelfE(TExpr):
    pass


@record
class Bound(TExpr):
    """A quantifier's variable."""

    name: str
    uid: int


@record
class Un(TExpr):
    op: str
    operand: TExpr


@record
class Bin(TExpr):
    op: str
    left: TExpr
    right: TExpr


@record
class Ite(TExpr):
    cond: TExpr
    then: TExpr
    orelse: TExpr


@record
class Conv(TExpr):
    """`operand` converted to the fixed-width type `type` (a BitVecT): its value modulo
    2**width; or, `type` INT, a signed pattern's two's-complement value where an integer
    is wanted (a store into a range, an index). The resolver inserts it wherever C would
    convert implicitly."""

    operand: TExpr


@record
class At(TExpr):
    """Process `process` (instance `index` of an array) is at `label`."""

    process: str
    index: TExpr | None
    label: str


@record
class LocalOf(TExpr):
    """A process-local variable of a named process (instance `index` of an array), read
    by a property: `p0.r0`, `cpu[1].r`."""

    sym: VarSym
    process: str
    index: TExpr | None


@record
class Quant(TExpr):
    kind: str
    bound: Bound
    lo: int
    hi: int
    body: TExpr


@record
class Builtin(TExpr):
    """A kernel primitive: atomics, bit ops, xchg/cmpxchg, barriers, wait queues."""

    name: str
    args: tuple[TExpr, ...]


LValueE = Var | Elem

# ---- resolved statements -------------------------------------------------------


@record
class RStmt:
    span: Span


@record
class SAssign(RStmt):
    target: TExpr  # Var or Elem
    value: TExpr


@record
class SEval(RStmt):
    """A statement that is a call: a side-effecting builtin, a barrier, a wait-queue op."""

    call: Builtin


@record
class SIf(RStmt):
    cond: TExpr
    then: tuple[RStmt, ...]
    orelse: tuple[RStmt, ...]


@record
class SWhile(RStmt):
    cond: TExpr
    body: tuple[RStmt, ...]


@record
class SLoop(RStmt):
    body: tuple[RStmt, ...]


@record
class SBreak(RStmt):
    pass


@record
class SContinue(RStmt):
    pass


@record
class SLabeled(RStmt):
    label: str
    stmt: RStmt


@record
class SGoto(RStmt):
    label: str


@record
class SAwait(RStmt):
    cond: TExpr


@record
class SAtomic(RStmt):
    body: tuple[RStmt, ...]


@record
class SChoose(RStmt):
    branches: tuple[tuple[RStmt, ...], ...]


@record
class SAssert(RStmt):
    property: str
    cond: TExpr


@record
class SSkip(RStmt):
    pass


@record
class SStutter(RStmt):
    """A step that changes nothing and leaves the process where it was."""


@record
class SFair(RStmt):
    """`fair`/`strongly fair`: the first step of `body` is an action with its own fairness."""

    strong: bool
    body: tuple[RStmt, ...]


PREEMPTIBLE_REGION = "<preemptible>"  # the SInlined name of a `preemptible { ... }` region

# The execution-context state (semantics/contexts.py makes it), named as traces print it;
# properties read it by these names (resolve/contexts.py)
CONTEXT_GLOBALS = ("irqs_off", "in_irq", "curr", "preemptions")
CONTEXT_LOCALS = ("preempt_count", "asleep", "in_region", "exit_reason")  # a thread's, besides its `cpu`
IRQ_IDLE = "end_irq"  # a handler's idle pc: a valid end
GUEST_MODE = "guest_mode"  # per CPU, in a model whose threads enter the guest: it runs a guest
MAX_PREEMPT_DEPTH = 3  # the deepest preempt_disable nesting a thread's count holds


def pending_name(irq: str) -> str:
    """The flag (array, for one handler per CPU) saying interrupt `irq` is pending."""
    return f"pending_{irq}"


def in_flight_name(irq: str) -> str:
    """The flag (array, for one handler per CPU) saying interrupt `irq` was raised from
    another CPU and is on its way: its delivery (a step of its own) makes it pending."""
    return f"in_flight_{irq}"


def delivery_name(irq: str) -> str:
    """The generated process whose steps deliver interrupt `irq` in flight."""
    return f"{irq}_delivery"


def armed_name(timer: str) -> str:
    return f"armed_{timer}"


def expires_name(timer: str) -> str:
    """The expiry time of a timed hrtimer (`hrtimer T ... clock C`), on its clock:
    `hrtimer_start(T, t)` sets it, and the timer may expire only once C >= t."""
    return f"expires_{timer}"


def timer_cpu_name(timer: str) -> str:
    """The CPU whose clock base queues hrtimer `timer` (`hrtimer NAME[N] pinned`)."""
    return f"cpu_{timer}"


def terms(x: object):
    """Every expression inside `x` (an expression, a property, an IR op, or a tuple of
    them), `x` itself first: what a check that looks for one kind of term walks."""
    if isinstance(x, tuple):
        for y in x:
            yield from terms(y)
    elif dataclasses.is_dataclass(x) and not isinstance(x, (type, VarSym, Span)):
        if isinstance(x, TExpr):
            yield x
        for f in dataclasses.fields(x):
            if f.name not in ("span", "type", "sym"):
                yield from terms(getattr(x, f.name))


def walk_statements(body: tuple[RStmt, ...]):
    """Every statement of `body`, nested ones included (branches, loop and atomic
    bodies, labelled statements), outermost first."""
    for s in body:
        yield s
        for attr in ("then", "orelse", "body"):
            sub = getattr(s, attr, None)
            if isinstance(sub, tuple):
                yield from walk_statements(sub)
        if isinstance(s, SLabeled):
            yield from walk_statements((s.stmt,))
        if isinstance(s, SChoose):
            for b in s.branches:
                yield from walk_statements(b)


@record
class SInlined(RStmt):
    """An inline procedure expanded at its call site; `return` leaves it. Named
    PREEMPTIBLE_REGION, a thread's preemptible region (contexts.py lowers it)."""

    name: str
    body: tuple[RStmt, ...]


@record
class SReturn(RStmt):
    pass


# ---- the model -----------------------------------------------------------------


class ContextKind(enum.Enum):
    THREAD = "thread"  # `process P on cpu C`: runs on a CPU, may be preempted and migrate
    INTERRUPT = "interrupt"  # `interrupt H on cpu C` / `interrupt H[N]`: a handler bound to a CPU
    SCHEDULER = "scheduler"  # generated by contexts.py: takes preemptible threads off their CPU
    GUEST = "guest"  # `guest G of T`: T's guest code, run on T's CPU only while T is in guest mode


@record
class ProcessContext:
    """Where a process runs (LANGUAGE.md, execution contexts); contexts.py lowers it."""

    kind: ContextKind
    cpus: tuple[int, ...]  # per instance: a thread's first CPU, a handler's CPU
    span: Span  # the `on cpu` clause, or the declaration
    preemptible: bool = False
    sched_out: tuple[RStmt, ...] = ()
    sched_in: tuple[RStmt, ...] = ()
    hrtimer: bool = False  # an interrupt raised by its timer's expiry (`hrtimer NAME on cpu C`)
    regions: bool = False  # preemptible only inside its `preemptible { ... }` regions
    posted: bool = False  # an interrupt processed in guest mode without a VM exit
    pinned: bool = False  # an hrtimer queued on the CPU that starts it (`hrtimer NAME[N] pinned`)
    vcpu: str | None = None  # a guest's thread (`guest G of T`)
    clock: str | None = None  # a timed hrtimer's clock, a global ghost variable (`hrtimer T ... clock C`)


@record
class Process:
    name: str
    span: Span
    count: int | None  # None: a single process; N: `process name[N]`
    unfair: bool
    locals: tuple[VarSym, ...]
    body: tuple[RStmt, ...]
    labels: frozenset[str]
    end_span: Span
    context: ProcessContext | None = None  # None: today's process, a CPU of its own

    @property
    def instances(self) -> int:
        return 1 if self.count is None else self.count

    def instance_name(self, i: int) -> str:
        return self.name if self.count is None else f"{self.name}[{i}]"


class PropertyKind(enum.Enum):
    INVARIANT = "invariant"
    FINAL = "final"  # an invariant of final states: no process can move, every process at a valid end
    ASSERT = "assert"
    DEADLOCK = "deadlock"
    LIVENESS = "liveness"
    LEMMA = "lemma"
    # `reachable NAME: P`: some reachable state satisfies P. The explicit engine checks it
    # as the invariant `!P` (compile.py), so a violation of that is P reached
    REACHABLE = "reachable"


@record
class Lemma:
    """`lemma NAME: forall (x: T, ...) PRED;`: PRED over the bound parameters and
    constants only, checked by Z3 for every value of the parameters."""

    name: str
    span: Span
    params: tuple[Bound, ...]
    body: TExpr


@record
class Property:
    name: str
    kind: PropertyKind
    span: Span
    cond: TExpr | None = None  # invariant, final
    trigger: TExpr | None = None  # liveness: always (trigger -> eventually goal)
    goal: TExpr | None = None


@record
class Model:
    name: str
    file: str
    source: str
    variant: str  # "base" or a variant's name
    constants: dict[str, int | bool | str]
    memory: MemoryModel  # what the variant is checked under
    declared_memory: MemoryModel  # what the spec declares for it (--memory-model may override it)
    globals: tuple[VarSym, ...]
    processes: tuple[Process, ...]
    properties: tuple[Property, ...]
    expected_violations: frozenset[str]
    header: str = ""
    lemmas: tuple[Lemma, ...] = field(default=())
    store_buffer: int | None = None  # tso: the most stores a CPU's store buffer holds
    warnings: tuple[tuple[int, str], ...] = ()  # (line, message): e.g. a local nothing reads
    task_states_read: frozenset[str] = frozenset()  # processes whose `P.state` something reads
    cpus: int | None = None  # `cpus N;`: a model with execution contexts (contexts.py)
    preemptions: int | None = None  # the preemption bound; None: unbounded (or nothing preemptible)
    step_texts: tuple = ()  # contexts.py: ((process, span), trace text) of each generated step
    exit_reasons: tuple[str, ...] = ()  # the exits guests make (`vmexit(HLT)`), numbered after the interrupts

    def property(self, name: str) -> Property:
        return next(p for p in self.properties if p.name == name)
