"""The kernel primitives: one row per primitive, the only place their meaning is written.

A row says what a primitive takes and returns, its semantic class (what it does to
memory), the ordering the kernel documents for it (Documentation/atomic_t.txt,
atomic_bitops.txt, memory-barriers.txt) and what x86 runs it as, and the one line that
spec/LANGUAGE.md shows. `lower.py` turns a call into the few core operations the back
ends implement; nothing downstream dispatches on a primitive's name.

Which columns a memory model reads: sequential consistency ignores orderings; x86-TSO
reads only `x86` (which primitives are plain stores, locked instructions or fences);
lkmm (memory/lkmm.py) reads `order` and, for the conditional ones, `failure_order`:
what the kernel promises, not what x86 happens to give. The litmus evaluator
(litmus/axiomatic.py) reads the same `order`, `failure_order` and `fence`, and
ORDER_SUFFIX for the forms a litmus test may use that have no row here.
"""

from __future__ import annotations

from enum import Enum
from ..base.record import record


class Arg(Enum):
    """What an argument must be."""

    LV = "lv"  # an assignable int / bool / enum location (a variable or array element)
    BITS = "bits"  # an assignable bit set
    NR = "nr"  # a bit number of that set
    VAL = "val"  # any value (converted to the location's type)
    WQ = "wq"  # a wait queue
    LOCK = "lock"  # a spinlock: an assignable bool, true while held
    IRQ = "irq"  # an interrupt handler's name
    PERCPU = "percpu"  # a per-CPU variable's name
    EXIT = "exit"  # an exit reason: an interrupt's name, or an exit a guest makes (`vmexit(HLT)`)


class Result(Enum):
    VOID = "void"
    BOOL = "bool"
    INT = "int"  # an integer (the location's type when that is a fixed-width one)
    LV = "lv"  # the type of the first argument


class Cls(Enum):
    """The semantic class: what the primitive does to memory."""

    LOAD = "load"
    STORE = "store"
    RMW = "read-modify-write"
    FENCE = "fence"
    LOCK = "lock"  # waits until the lock is free, then takes it (an await-and-set)
    WQ_ADD = "wait-queue add"
    WQ_REMOVE = "wait-queue remove"
    WQ_WAKE = "wait-queue wake"
    WQ_TEST = "wait-queue test"
    SCHEDULE = "schedule"
    PURE = "pure"
    CONTEXT = "execution context"  # reads or changes the hidden context state (contexts.py)


class CtxOp(Enum):
    """What a context primitive does; contexts.py lowers each to plain state changes."""

    IRQ_OFF = "interrupts off"
    IRQ_ON = "interrupts on"
    IRQ_SAVE = "save and disable"
    IRQ_RESTORE = "restore"
    LOCK_IRQSAVE = "lock, save and disable"
    UNLOCK_IRQRESTORE = "unlock and restore"
    IRQS_DISABLED = "interrupts are off"
    PREEMPT_OFF = "preemption off"
    PREEMPT_ON = "preemption on"
    GET_CPU = "preemption off; the CPU"
    PUT_CPU = "preemption on (put_cpu)"
    CPU_ID = "the CPU"
    RAISE = "raise"
    RAISE_ON = "raise on a CPU"
    THIS_CPU_READ = "this CPU's copy"
    THIS_CPU_WRITE = "write this CPU's copy"
    PER_CPU = "a CPU's copy"
    TIMER_START = "arm an hrtimer"
    TIMER_CANCEL = "cancel an hrtimer"
    TIMER_TRY_CANCEL = "try to cancel an hrtimer"
    GUEST_ENTER = "enter guest mode until a VM exit"
    EXIT_BY = "the last VM exit's reason"
    GUEST_EXIT = "a VM exit the guest makes"
    IN_GUEST = "a posted handler runs as guest-mode processing"


class RmwOp(Enum):
    """The operation of a read-modify-write."""

    ADD = "add"  # v + operand (a constant step or an argument)
    SUB = "sub"  # v - argument
    OR = "or"  # v | argument
    SET_BIT = "set bit"
    CLEAR_BIT = "clear bit"
    XCHG = "exchange"
    CMPXCHG = "compare and exchange"


class Returns(Enum):
    """What a read-modify-write returns."""

    NOTHING = "nothing"
    OLD = "the old value"
    NEW = "the new value"
    NEW_IS_ZERO = "whether the new value is 0"
    OLD_BIT = "the old bit"
    SUCCESS = "whether it succeeded"


class Pure(Enum):
    MIN = "min"
    MAX = "max"
    ABS = "abs"


class Order(Enum):
    """The ordering the kernel documents (memory-barriers.txt, atomic_t.txt)."""

    NONE = "none"  # no memory access (a pure function, a compiler barrier)
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    FULL = "fully ordered"


class FenceKind(Enum):
    FULL = "full"  # smp_mb
    WRITE = "write"  # smp_wmb: stores before against stores after
    READ = "read"  # smp_rmb: loads before against loads after
    BEFORE_ATOMIC = "before atomic"  # full, together with the following RMW
    AFTER_ATOMIC = "after atomic"  # full, together with the preceding RMW
    AFTER_SPINLOCK = "after spinlock"  # full, together with the preceding spin_lock
    COMPILER = "compiler"  # barrier(): orders nothing at run time


class X86(Enum):
    """What x86 executes, which is what `memory tso` runs."""

    PLAIN = "plain"  # a plain load, or no memory access at all
    STORE = "store"  # a plain store (mov): it goes into the store buffer
    LOCKED = "locked"  # a LOCK-prefixed RMW or a lock taken: drains the buffer, acts on memory
    FENCE = "fence"  # mfence (or a locked no-op): waits for an empty buffer


@record
class Primitive:
    name: str
    args: tuple[Arg, ...]
    result: Result
    cls: Cls
    order: Order
    x86: X86
    doc: str  # the line LANGUAGE.md shows
    op: RmwOp | None = None  # for RMW
    step: int | None = None  # ADD by a constant (inc +1, dec -1); None: by the argument
    returns: Returns = Returns.NOTHING
    failure_order: Order | None = None  # a conditional RMW that fails (cmpxchg, trylock)
    fence: FenceKind | None = None
    wake_all: bool = False  # WQ_WAKE: every waiter, or the first
    pure: Pure | None = None  # PURE: which function
    ctx: CtxOp | None = None  # CONTEXT: what it does
    optional: int = 0  # how many of the last `args` a call may leave out (hrtimer_start's expiry)

    @property
    def effect(self) -> bool:
        """Whether it writes state (and so may only appear where side effects may)."""
        if self.cls is Cls.CONTEXT:
            return self.ctx not in (CtxOp.IRQS_DISABLED, CtxOp.CPU_ID, CtxOp.THIS_CPU_READ, CtxOp.PER_CPU,
                                    CtxOp.EXIT_BY, CtxOp.IN_GUEST)
        return self.cls not in (Cls.LOAD, Cls.PURE, Cls.FENCE, Cls.WQ_TEST)

    @property
    def statement_only(self) -> bool:
        """Barriers, schedule() and spin_lock() have no value and take a step of their own."""
        return self.cls in (Cls.FENCE, Cls.SCHEDULE, Cls.LOCK) or self.ctx in (CtxOp.LOCK_IRQSAVE, CtxOp.GUEST_ENTER)

    @property
    def blocks(self) -> bool:
        """It may wait, so it cannot be part of an `atomic` block."""
        return self.cls in (Cls.SCHEDULE, Cls.LOCK) or self.ctx in (CtxOp.LOCK_IRQSAVE, CtxOp.TIMER_CANCEL,
                                                                     CtxOp.GUEST_ENTER)

    @property
    def needs_process(self) -> bool:
        return self.cls in (Cls.WQ_ADD, Cls.WQ_REMOVE, Cls.WQ_WAKE, Cls.WQ_TEST, Cls.SCHEDULE)


_L, _V, _B, _N, _Q, _K = Arg.LV, Arg.VAL, Arg.BITS, Arg.NR, Arg.WQ, Arg.LOCK
_I, _P = Arg.IRQ, Arg.PERCPU
# the ordered forms of an RMW (atomic_t.txt): the suffix says its ordering
ORDER_SUFFIX = {"": Order.FULL, "_relaxed": Order.RELAXED, "_acquire": Order.ACQUIRE,
                 "_release": Order.RELEASE}


def _rmw(name, args, result, op, returns, order, doc, step=None, failure_order=None):
    return Primitive(name, args, result, Cls.RMW, order, X86.LOCKED, doc, op=op, step=step,
                     returns=returns, failure_order=failure_order)


def _ordered_forms(name, args, result, op, returns, doc, failure_order=None):
    """The fully ordered primitive and its _relaxed, _acquire and _release forms
    (atomic_t.txt): on x86 every one of them is the same locked instruction."""
    out = []
    for suffix, order in ORDER_SUFFIX.items():
        out.append(_rmw(name + suffix, args, result, op, returns, order,
                        doc if not suffix else f"as `{name}`, {order.value}",
                        failure_order=failure_order))
    return out


def _fence(name, kind, x86, doc):
    return Primitive(name, (), Result.VOID, Cls.FENCE, Order.FULL if kind is not FenceKind.COMPILER else Order.NONE,
                     x86, doc, fence=kind)


_ROWS: list[Primitive] = [
    Primitive("atomic_read", (_L,), Result.LV, Cls.LOAD, Order.RELAXED, X86.PLAIN, "the value of `v`"),
    Primitive("READ_ONCE", (_L,), Result.LV, Cls.LOAD, Order.RELAXED, X86.PLAIN, "the value of `v`"),
    Primitive("smp_load_acquire", (_L,), Result.LV, Cls.LOAD, Order.ACQUIRE, X86.PLAIN,
              "the value of `v`; later accesses stay after it"),
    Primitive("atomic_set", (_L, _V), Result.VOID, Cls.STORE, Order.RELAXED, X86.STORE, "`v = x`"),
    Primitive("WRITE_ONCE", (_L, _V), Result.VOID, Cls.STORE, Order.RELAXED, X86.STORE, "`v = x`"),
    Primitive("smp_store_release", (_L, _V), Result.VOID, Cls.STORE, Order.RELEASE, X86.STORE,
              "`v = x`; earlier accesses stay before it"),
    # smp_store_mb is a store and smp_mb(); x86 does it with one xchg
    Primitive("smp_store_mb", (_L, _V), Result.VOID, Cls.STORE, Order.FULL, X86.LOCKED, "`v = x`; then `smp_mb()`"),
    _rmw("atomic_inc", (_L,), Result.VOID, RmwOp.ADD, Returns.NOTHING, Order.RELAXED, "`v = v + 1`", step=1),
    _rmw("atomic_dec", (_L,), Result.VOID, RmwOp.ADD, Returns.NOTHING, Order.RELAXED, "`v = v - 1`", step=-1),
    _rmw("atomic_add", (_V, _L), Result.VOID, RmwOp.ADD, Returns.NOTHING, Order.RELAXED,
         "`v = v + i` (kernel argument order)"),
    _rmw("atomic_sub", (_V, _L), Result.VOID, RmwOp.SUB, Returns.NOTHING, Order.RELAXED,
         "`v = v - i` (kernel argument order)"),
    _rmw("atomic_inc_return", (_L,), Result.INT, RmwOp.ADD, Returns.NEW, Order.FULL,
         "`v = v + 1`; the new value", step=1),
    _rmw("atomic_dec_return", (_L,), Result.INT, RmwOp.ADD, Returns.NEW, Order.FULL,
         "`v = v - 1`; the new value", step=-1),
    _rmw("atomic_dec_and_test", (_L,), Result.BOOL, RmwOp.ADD, Returns.NEW_IS_ZERO, Order.FULL,
         "`v = v - 1`; whether it is now 0", step=-1),
    _rmw("atomic_inc_and_test", (_L,), Result.BOOL, RmwOp.ADD, Returns.NEW_IS_ZERO, Order.FULL,
         "`v = v + 1`; whether it is now 0", step=1),
    *_ordered_forms("atomic_add_return", (_V, _L), Result.INT, RmwOp.ADD, Returns.NEW,
                    "`v = v + i`; the new value"),
    *_ordered_forms("atomic_fetch_add", (_V, _L), Result.INT, RmwOp.ADD, Returns.OLD,
                    "`v = v + i`; the old value"),
    *_ordered_forms("atomic_fetch_or", (_V, _L), Result.INT, RmwOp.OR, Returns.OLD,
                    "`v = v \\| i`; the old value"),
    _rmw("set_bit", (_N, _B), Result.VOID, RmwOp.SET_BIT, Returns.NOTHING, Order.RELAXED, "set bit `nr` of `s`"),
    _rmw("clear_bit", (_N, _B), Result.VOID, RmwOp.CLEAR_BIT, Returns.NOTHING, Order.RELAXED,
         "clear bit `nr` of `s`"),
    _rmw("test_and_set_bit", (_N, _B), Result.BOOL, RmwOp.SET_BIT, Returns.OLD_BIT, Order.FULL,
         "set bit `nr` of `s`; the old bit"),
    _rmw("test_and_clear_bit", (_N, _B), Result.BOOL, RmwOp.CLEAR_BIT, Returns.OLD_BIT, Order.FULL,
         "clear bit `nr` of `s`; the old bit"),
    Primitive("test_bit", (_N, _B), Result.BOOL, Cls.LOAD, Order.RELAXED, X86.PLAIN, "bit `nr` of `s`"),
    Primitive("bitmap_empty", (_B,), Result.BOOL, Cls.LOAD, Order.RELAXED, X86.PLAIN, "whether no bit of `s` is set"),
    *_ordered_forms("xchg", (_L, _V), Result.LV, RmwOp.XCHG, Returns.OLD, "`v = x`; the old value"),
    # a failed cmpxchg writes nothing and orders nothing (atomic_t.txt); x86 locks it anyway
    *_ordered_forms("cmpxchg", (_L, _V, _V), Result.LV, RmwOp.CMPXCHG, Returns.OLD,
                    "if `v == old` then `v = new`; the old value in both cases", failure_order=Order.RELAXED),
    Primitive("min", (_V, _V), Result.INT, Cls.PURE, Order.NONE, X86.PLAIN, "the smaller of `a` and `b`",
              pure=Pure.MIN),
    Primitive("max", (_V, _V), Result.INT, Cls.PURE, Order.NONE, X86.PLAIN, "the larger of `a` and `b`",
              pure=Pure.MAX),
    Primitive("abs", (_V,), Result.INT, Cls.PURE, Order.NONE, X86.PLAIN,
              "the absolute value of `a` (of an `s8` .. `s64` minimum: itself, as the kernel's wraps)",
              pure=Pure.ABS),
    _fence("smp_mb", FenceKind.FULL, X86.FENCE, "full barrier"),
    _fence("smp_wmb", FenceKind.WRITE, X86.PLAIN, "orders earlier stores before later stores"),
    _fence("smp_rmb", FenceKind.READ, X86.PLAIN, "orders earlier loads before later loads"),
    _fence("smp_mb__before_atomic", FenceKind.BEFORE_ATOMIC, X86.PLAIN,
           "makes the next non-value-returning atomic fully ordered"),
    _fence("smp_mb__after_atomic", FenceKind.AFTER_ATOMIC, X86.PLAIN,
           "makes the previous non-value-returning atomic fully ordered"),
    _fence("smp_mb__after_spinlock", FenceKind.AFTER_SPINLOCK, X86.PLAIN,
           "makes the previous `spin_lock` a full barrier"),
    # stands for the smp_mb() inside the srcu_read_unlock() it follows
    _fence("smp_mb__after_srcu_read_unlock", FenceKind.FULL, X86.FENCE,
           "the full barrier inside the `srcu_read_unlock()` it follows"),
    _fence("barrier", FenceKind.COMPILER, X86.PLAIN, "compiler barrier: orders nothing at run time"),
    # a lock is an await-and-set; x86 takes it with a locked instruction and releases it
    # with a plain store
    Primitive("spin_lock", (_K,), Result.VOID, Cls.LOCK, Order.ACQUIRE, X86.LOCKED,
              "waits until `l` is free, then takes it (`l = true`)"),
    Primitive("spin_trylock", (_K,), Result.BOOL, Cls.RMW, Order.ACQUIRE, X86.LOCKED,
              "takes `l` if it is free; whether it did", op=RmwOp.CMPXCHG, returns=Returns.SUCCESS,
              failure_order=Order.RELAXED),
    Primitive("spin_unlock", (_K,), Result.VOID, Cls.STORE, Order.RELEASE, X86.STORE, "`l = false`"),
    # the wait-queue operations take the queue lock (swait) or contain a full barrier
    # (set_current_state, rcuwait_wake_up); schedule() takes the runqueue lock
    Primitive("prepare_to_wait", (_Q,), Result.VOID, Cls.WQ_ADD, Order.FULL, X86.LOCKED,
              "join `wq`; task state `INTERRUPTIBLE` (`set_current_state`, with its barrier)"),
    Primitive("finish_wait", (_Q,), Result.VOID, Cls.WQ_REMOVE, Order.RELAXED, X86.LOCKED,
              "task state `RUNNING`; leave `wq`"),
    Primitive("schedule", (), Result.VOID, Cls.SCHEDULE, Order.FULL, X86.LOCKED,
              "sleeps while the task state is `INTERRUPTIBLE`; returns at once if a waker already set it "
              "to `RUNNING`"),
    Primitive("waitqueue_active", (_Q,), Result.BOOL, Cls.WQ_TEST, Order.RELAXED, X86.PLAIN,
              "whether anyone waits on `wq` (no barrier)"),
    Primitive("swait_active", (_Q,), Result.BOOL, Cls.WQ_TEST, Order.RELAXED, X86.PLAIN,
              "whether anyone waits on `wq` (no barrier)"),
    Primitive("wake_up", (_Q,), Result.VOID, Cls.WQ_WAKE, Order.FULL, X86.LOCKED,
              "every waiter becomes `RUNNING` and leaves `wq`", wake_all=True),
    Primitive("swake_up_one", (_Q,), Result.VOID, Cls.WQ_WAKE, Order.FULL, X86.LOCKED,
              "the first waiter (in process order) becomes `RUNNING` and leaves `wq`"),
    # execution contexts: what they do to the hidden per-CPU and per-thread state is
    # contexts.py's lowering; on x86 cli/sti/pushf and the preempt count touch no shared memory
    *[Primitive(name, args, result, Cls.CONTEXT, Order.NONE, x86, doc, ctx=op, optional=int(op is CtxOp.TIMER_START))
      for name, args, result, op, x86, doc in (
        ("local_irq_disable", (), Result.VOID, CtxOp.IRQ_OFF, X86.PLAIN, "this CPU takes no interrupt until enabled"),
        ("local_irq_enable", (), Result.VOID, CtxOp.IRQ_ON, X86.PLAIN, "this CPU takes interrupts again"),
        ("local_irq_save", (_L,), Result.VOID, CtxOp.IRQ_SAVE, X86.PLAIN,
         "`v` = whether interrupts were off; then off"),
        ("local_irq_restore", (_L,), Result.VOID, CtxOp.IRQ_RESTORE, X86.PLAIN,
         "interrupts off again if `v` says they were, else on"),
        ("spin_lock_irqsave", (_K, _L), Result.VOID, CtxOp.LOCK_IRQSAVE, X86.LOCKED,
         "`local_irq_save(v)` and `spin_lock(l)` in one step (waits for `l` first)"),
        ("spin_unlock_irqrestore", (_K, _L), Result.VOID, CtxOp.UNLOCK_IRQRESTORE, X86.STORE,
         "`spin_unlock(l)` and `local_irq_restore(v)` in one step"),
        ("irqs_disabled", (), Result.BOOL, CtxOp.IRQS_DISABLED, X86.PLAIN, "whether this CPU has interrupts off"),
        ("preempt_disable", (), Result.VOID, CtxOp.PREEMPT_OFF, X86.PLAIN,
         "this thread is not preempted until the matching `preempt_enable`"),
        ("preempt_enable", (), Result.VOID, CtxOp.PREEMPT_ON, X86.PLAIN, "undoes one `preempt_disable`"),
        ("get_cpu", (), Result.INT, CtxOp.GET_CPU, X86.PLAIN, "`preempt_disable()`; this CPU's number"),
        ("put_cpu", (), Result.VOID, CtxOp.PUT_CPU, X86.PLAIN, "`preempt_enable()`"),
        ("smp_processor_id", (), Result.INT, CtxOp.CPU_ID, X86.PLAIN,
         "the CPU this code runs on (a thread's follows migration)"),
        ("raise_irq", (_I,), Result.VOID, CtxOp.RAISE, X86.PLAIN,
         "interrupt `h` becomes pending on its CPU"),
        ("send_IPI", (_V, _I), Result.VOID, CtxOp.RAISE_ON, X86.PLAIN,
         "interrupt `h[cpu]` (one handler per CPU) becomes pending on CPU `cpu`"),
        ("this_cpu_read", (_P,), Result.LV, CtxOp.THIS_CPU_READ, X86.PLAIN, "this CPU's copy of `x`"),
        ("this_cpu_write", (_P, _V), Result.VOID, CtxOp.THIS_CPU_WRITE, X86.STORE, "this CPU's copy of `x` = `v`"),
        ("per_cpu", (_P, _V), Result.LV, CtxOp.PER_CPU, X86.PLAIN, "CPU `cpu`'s copy of `x`"),
        ("hrtimer_start", (_I, _V), Result.VOID, CtxOp.TIMER_START, X86.PLAIN,
         "arms hrtimer `h`: it expires some time later (eventually, under weak fairness); a `pinned` one is "
         "queued on this CPU; a timed one (`clock C`) takes its expiry `t` and expires once `C >= t`"),
        ("hrtimer_cancel", (_I,), Result.INT, CtxOp.TIMER_CANCEL, X86.PLAIN,
         "waits until `h`'s callback is not running, then disarms it (an expiry not yet handled is dropped); "
         "1 if it was queued, else 0"),
        ("hrtimer_try_to_cancel", (_I,), Result.INT, CtxOp.TIMER_TRY_CANCEL, X86.PLAIN,
         "-1 if `h`'s callback is running (nothing changes); else as `hrtimer_cancel`, without waiting"),
        ("guest_enter", (), Result.VOID, CtxOp.GUEST_ENTER, X86.PLAIN,
         "VM entry with interrupts enabled atomically; returns at the VM exit (a host interrupt, or its guest's `vmexit`)"),
        ("vm_exit_by", (Arg.EXIT,), Result.BOOL, CtxOp.EXIT_BY, X86.PLAIN,
         "whether `r` (an interrupt, or an exit a guest makes) caused this thread's last VM exit"),
        ("in_guest_mode", (), Result.BOOL, CtxOp.IN_GUEST, X86.PLAIN,
         "in a `posted` interrupt's handler: it runs as the CPU's processing in guest mode (PIR into the "
         "virtual IRR), not as the host's handler"),
        ("vmexit", (Arg.EXIT,), Result.VOID, CtxOp.GUEST_EXIT, X86.PLAIN,
         "in a guest: the VM exit an instruction makes (`vmexit(HLT)`); its thread resumes after `guest_enter()`"),
    )],
]

BUILTINS: dict[str, Primitive] = {p.name: p for p in _ROWS}
assert len(BUILTINS) == len(_ROWS), "a primitive defined twice"

# Kernel spellings of the same operations.
ALIASES = {
    "prepare_to_swait": "prepare_to_wait",
    "prepare_to_swait_exclusive": "prepare_to_wait",
    "prepare_to_rcuwait": "prepare_to_wait",
    "finish_swait": "finish_wait",
    "finish_rcuwait": "finish_wait",
    "swake_up_all": "wake_up",
    "wake_up_all": "wake_up",
    "rcuwait_wake_up": "swake_up_one",
    "rcuwait_active": "swait_active",
}

_ARG_NAMES = {Arg.LV: "v", Arg.BITS: "s", Arg.NR: "nr", Arg.WQ: "wq", Arg.LOCK: "l", Arg.IRQ: "h",
              Arg.PERCPU: "x", Arg.EXIT: "r"}


def signature(p: Primitive) -> str:
    """`name(args)` as LANGUAGE.md writes it."""
    names = []
    vals = iter(("old", "new") if p.op is RmwOp.CMPXCHG and p.cls is Cls.RMW and Arg.VAL in p.args
                else ("a", "b") if p.cls is Cls.PURE else ("cpu",) if p.ctx in (CtxOp.RAISE_ON, CtxOp.PER_CPU)
                else ("v",) if p.ctx is CtxOp.THIS_CPU_WRITE else ("t",) if p.ctx is CtxOp.TIMER_START
                else ("i",) if p.args[:1] == (Arg.VAL,) else ("x",))
    for a in p.args:
        names.append(_ARG_NAMES[a] if a is not Arg.VAL else next(vals))
    required = len(names) - p.optional
    return f"{p.name}({', '.join(names[:required])}" + "".join(f"[, {x}]" for x in names[required:]) + ")"


def ordering(p: Primitive) -> str:
    """The documented ordering, as the reference table shows it."""
    if p.cls is Cls.FENCE:
        assert p.fence is not None  # every fence row says its kind
        return p.fence.value
    text = p.order.value
    if p.failure_order is not None and p.failure_order is not p.order:
        text += f"; {p.failure_order.value} if it fails"
    return text


def reference_table(wait_queues: bool = False, contexts: bool = False) -> str:
    """A table spec/LANGUAGE.md shows, the kernel built-ins, the wait-queue ones or the
    execution-context ones (a test keeps the reference and the table the same)."""
    if contexts:
        lines = ["| built-in | effect and value |", "|---|---|"]
        lines += [f"| `{signature(p)}` | {p.doc} |" for p in _ROWS if p.cls is Cls.CONTEXT]
        return "\n".join(lines)
    lines = ["| built-in | effect and value | kernel ordering | x86 |", "|---|---|---|---|"]
    for p in _ROWS:
        if p.needs_process == wait_queues and p.cls is not Cls.CONTEXT:
            lines.append(f"| `{signature(p)}` | {p.doc} | {ordering(p)} | {p.x86.value} |")
    return "\n".join(lines)
