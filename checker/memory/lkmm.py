"""`memory lkmm`: an operational machine for the Linux-kernel memory model, explored
state by state by the explicit engine (loops, blocking, liveness with fairness).

The machine is view-based, after Kang et al., "A Promising Semantics for Relaxed-Memory
Concurrency" (POPL 2017), without promises:

* every shared location keeps a history of its last stores (messages), newest first;
  the newest is what the location's slot holds, "memory" as properties read it. A store
  is appended at the end of the location's coherence order;
* every CPU (process instance; with `cpus`, each of the model's CPUs, shared by the
  thread on it, its handlers and notifiers: `_places`) has a *view*: per location, which message it reads now,
  counted as a lag behind the newest (0: the newest). A load reads the message its view
  names; `propagate` steps, one weakly fair actor per (CPU, location), move a view one
  message newer, so a stale store is eventually not readable (liveness: a spinning
  `await` sees the store in the end);
* each message carries the view its writer published with it: its own position, and for
  a release store (or after `smp_wmb()` / `smp_mb()`) what the writer had seen or
  written. An acquire load joins the read message's view into its CPU's view; relaxed
  loads gather theirs into the CPU's acquire view, which `smp_rmb()` joins; `smp_wmb()`
  publishes the CPU's own stores (not what it read: smp_wmb is not A-cumulative) with
  later stores; `smp_mb()` and every fully ordered primitive are SC fences with a
  global view (Lahav et al.'s PS 2.0), which restores multi-copy atomicity
  (IRIW+mbs is forbidden, IRIW+rmbs allowed);
* a read-modify-write reads the newest message (atomicity) and carries on the view of
  the message it read (the LKMM's rmw-sequence).

Views are lags relative to the newest message, so a store shifts every lag on its
location by one; lags past the oldest message some CPU may still read mean "no
constraint" (`NONE`), and messages no CPU may read are dropped: equal states are equal
integers. A history holds at most `bound` messages; a store that would push a reader's
view past it waits (as a tso store waits for a full buffer), and the engine counts those
states: when there are none, the bound changed nothing.

Loads never read a store that has not happened yet, so load buffering (LB) and every
outcome that needs a load to be satisfied by a po-later store, or a store to be visible
before an earlier load of its CPU, are not explored; stores join their location's
coherence order at the end, so outcomes that need a store to be ordered before an
earlier one in coherence order (2+2W, S) are not explored either. The fences that
order only with an RMW are exact (linux-kernel.cat:37-39): smp_mb__before_atomic() is
an SC fence just before its CPU's next RMW (a failed cmpxchg included), and
smp_mb__after_atomic() / __after_spinlock() one where it stands if an RMW / a lock
acquisition stands before it since the CPU's last full fence (CpuViews' flags), but for
a shared access between the fence and its RMW, which the fence then orders too; a lock
acquisition after an unlock orders as lock.cat's po-unlock-lock-po. tests/lkmm_missing.py
checks that every LKMM outcome the machine misses is of one of these shapes.
Everything the machine does explore is an LKMM execution (tests/test_lkmm_operational.py
checks that against checker/litmus/axiomatic.py and herd7). spec/LANGUAGE.md, "memory lkmm", is the
user's account.

This module plans the extra state (`extend`) and wraps the compiled steps (`machine`);
compile.py calls both. It knows the primitives only through builtins.py's columns.
"""

from __future__ import annotations

from dataclasses import field, replace
from enum import Enum
from operator import lshift, sub

from .. import model as m
from ..semantics.primitives import BUILTINS, Arg, Cls, FenceKind, Order
from ..base.errors import NOWHERE, SpecError
from ..ir import (OAssert, OAssign, OBarrier, OEval, OGoto, OIf, OWhile, Program, Slot, SlotKind, StateLayout, Step, StepKind,
                  builtins_in, walk_ops)
from ..base.record import record

#: the default number of messages a location keeps
DEFAULT_HISTORY = 2
_MEMO = 1 << 14  # machine parts kept decoded, dead views by pcs (a bound on the memo's memory)
_EFFECTS = 1 << 17  # steps' effects on the machine kept (Machine.step; a bound on their memory)
_PARTS = 1 << 16  # distinct machine parts those effects name
_FAILED, _FULL = "failed", "full"
_NONZERO = bytes([0] + [1] * 255)  # bytes.translate: which bytes are not 0
_READER, _LAG, _HISTORY = "reader", "lag", "history"  # a machine slot's roles for normalise (Machine.roles)  # a memoised effect: the other form ran, or a store waits
MAX_ACTORS = 62  # process instances and propagation actors: the engine's enabled masks are 63 bits


# ---------------------------------------------------------------- the plan


@record
class Location:
    """One shared location the machine tracks: its memory slot (the newest message's
    value), the slots of older messages' values (`old[i - 1]`: lag i) and of every
    message's view (`views[i][j]`: message at lag i, its lag on location j)."""

    name: str
    slot: int
    old: tuple[int, ...]
    views: tuple[tuple[int, ...], ...]
    strong: tuple[tuple[int, ...], ...]  # per message, what strong fences published before it (see CpuViews)
    readers: tuple[int, ...]  # gids of the CPUs that load it through their view


@record
class CpuViews:
    """One CPU's views, by location index: `cur` what it reads now, `acq` what its relaxed
    loads saw (joined by smp_rmb), `rel` what its next relaxed store publishes (set by
    smp_wmb / smp_mb), `own` its own latest stores (None: it never stores there),
    `strong` what strong fences published before anything it read or did: the LKMM's
    `pb` axiom (prop ; strong-fence ; hb*) makes whatever happens after a CPU's smp_mb
    see what that CPU had seen before it, through any chain of reads-from and
    dependencies; every store of this CPU carries it."""

    name: str
    gid: int
    cur: tuple[int, ...]
    acq: tuple[int, ...]
    rel: tuple[int, ...]
    own: tuple[int | None, ...]
    strong: tuple[int, ...] = ()
    # the exact fences' state (None: the CPU has no such fence): `before_atomic` 1 while
    # an smp_mb__before_atomic() waits for its RMW; `after_rmw` / `after_lock` 1 when an
    # RMW / a lock acquisition stands since the CPU's last full fence, which a later
    # smp_mb__after_atomic() / smp_mb__after_spinlock() orders with what follows it
    before_atomic: int | None = None
    after_rmw: int | None = None
    after_lock: int | None = None
    # lock.cat's po-unlock-lock-po (a CPU's unlock, then any lock it takes): its view
    # and its acquire view at its last spin_unlock (empty: it never both unlocks and locks)
    unlocked: tuple[int, ...] = ()
    unlocked_acq: tuple[int, ...] = ()

    @property
    def slots(self) -> tuple[int, ...]:
        """Every slot of this CPU's views, its fence flags included."""
        return fields_of(self) + tuple(f for f in (self.before_atomic, self.after_rmw, self.after_lock)
                                       if f is not None)


@record
class Access:
    """What one step does under the machine, read from its statement (static)."""

    view_reads: frozenset[int] = frozenset()  # location indices loaded through the view
    rmw: frozenset[int] = frozenset()  # read-modify-written: read at the newest message
    acquire: frozenset[int] = frozenset()  # acquire loads
    rmw_acquire: bool = False  # the RMW's read is an acquire (or fully ordered)
    pre_mb: bool = False  # an SC fence before the step's accesses
    post_mb: bool = False  # ... and after them
    rmb: bool = False  # smp_rmb, or an address dependency (an array index computed at run time)
    wmb: bool = False
    release: bool = False  # its stores publish the CPU's whole view
    conditional: frozenset[int] = frozenset()  # a cmpxchg / trylock whose failure is a relaxed load
    why: str = ""  # the ordering in words, for traces
    writes: frozenset[int] = frozenset()  # location indices it stores to
    flags: frozenset[str] = frozenset()  # the context state (ghost variables) it assigns
    signals: bool = False  # it raises or takes an interrupt: publishes or joins a whole view
    timer_lock: frozenset[str] = frozenset()  # the hrtimers whose clock base's lock it takes (start, cancel)
    # the exact fences (linux-kernel.cat's mb, lines 36-39): a step that is an RMW in
    # herd7's sense (a failed cmpxchg included) takes a pending smp_mb__before_atomic()
    # as an SC fence before its accesses (`rmw_fence`); smp_mb__after_atomic() and
    # smp_mb__after_spinlock() are one after an RMW / a lock acquisition (`after_rmw_fence`,
    # `after_lock_fence`), and order nothing without one
    before_atomic: bool = False  # leaves an smp_mb__before_atomic() pending for a later RMW
    rmw_fence: bool = False  # an RMW: a pending smp_mb__before_atomic() is an SC fence before it
    after_rmw_fence: bool = False  # smp_mb__after_atomic() with no RMW before it in the step
    after_lock_fence: bool = False  # smp_mb__after_spinlock() with no lock taken before it in the step
    rmw_mark: bool = False  # an RMW: a later smp_mb__after_atomic() orders what precedes it
    lock_mark: bool = False  # a lock acquisition (LKW): the same for smp_mb__after_spinlock()
    conditional_slots: frozenset[int] = frozenset()  # `conditional`'s global slots, tracked or not
    unlock: bool = False  # a spin_unlock (UL): its CPU's later lock acquisitions order what precedes it
    fence_gap: bool = False  # a shared access in this step stands between an exact fence and its RMW
    address: bool = False  # an array index computed at run time (ordered as smp_rmb: more than the LKMM)
    sure_writes: frozenset[int] = frozenset()  # location indices every run of the step stores to

    @property
    def touches(self) -> bool:
        """The machine does something around this step (Views.footprint): it loads or
        stores a tracked location, fences, or raises or takes an interrupt."""
        return bool(self.view_reads or self.rmw or self.writes or self.acquire or self.conditional
                    or self.timer_lock) or any(
            (self.rmw_acquire, self.pre_mb, self.post_mb, self.rmb, self.wmb, self.release, self.signals,
             self.before_atomic, self.rmw_fence, self.after_rmw_fence, self.after_lock_fence, self.rmw_mark,
             self.lock_mark, self.unlock))

    @property
    def maybe_mb(self) -> bool:
        """An SC fence may run before this step's accesses (always, or by a fence's state)."""
        return self.pre_mb or self.rmw_fence or self.after_rmw_fence or self.after_lock_fence

    def consults(self, n: int) -> frozenset[int]:
        """The locations whose view of its CPU this step reads, joins or resets: where a
        propagation to that CPU can make a difference (all n when it fences, acquires or
        releases, which join or publish the whole view)."""
        if self.maybe_mb or self.post_mb or self.rmb or self.release or self.rmw_acquire or self.acquire \
                or self.signals:
            return frozenset(range(n))
        return self.view_reads | self.rmw | self.writes


@record
class Signal:
    """What raising one interrupt handler instance published (a model with `cpus`): the
    raiser's view when it raised it (an IPI is sent after a full barrier) or armed it
    (hrtimer_start under the clock base's lock), which the handler's entry joins into
    its CPU's view. `raised`: the slots whose store to 1 raises it (its pending flag, an
    hrtimer's armed flag); `pending`: the flag its entry clears; `taker`: its gid.

    An hrtimer's callback also publishes, when it returns (its `pc` back at an `idle` pc),
    what its CPU had stored (`done`), which a cancel or start that finds the callback not
    running joins: hrtimer_try_to_cancel() finds an inactive timer through hrtimer_active()'s
    seqcount reads (smp_rmb) after __run_hrtimer's raw_write_seqcount_barrier() (smp_wmb)
    and `base->running = NULL`; a queued one under the clock base's lock, after the
    callback's CPU re-took and released it (kernel/time/hrtimer.c). So as smp_wmb
    publishes: the CPU's own stores (the weaker of the two paths)."""

    name: str
    taker: int
    pending: int
    raised: tuple[int, ...]
    cur: tuple[int, ...]
    strong: tuple[int, ...]
    flags: frozenset[str] = frozenset()  # the names of the raising flags' variables
    cpu: int = -1  # the view id of its handler's CPU
    timer: str = ""  # an hrtimer's callback: the hrtimer's name
    pc: int = -1  # ... its handler instance's pc slot, and the pcs where it is not running
    idle: frozenset[int] = frozenset()
    done: tuple[int, ...] = ()  # ... what its CPU had stored when the callback last returned
    flight: tuple[int, ...] = ()  # its in-flight flag's slot, when it is raised from another CPU


@record
class Views:
    """The machine's part of the state layout (StateLayout.lkmm)."""

    bound: int
    locations: tuple[Location, ...]
    cpus: tuple[CpuViews, ...]
    gsc: tuple[int, ...]  # the global SC-fence view, by location index
    accesses: dict = field(default_factory=dict)  # (gid, step uid) -> (Access, failure Access or None)
    lazy: bool = True  # propagations only where they can matter (Machine.propagate)
    # (gid, step uid) -> (slot of the thread's `cpu` or None, the view ids it may use):
    # with `cpus`, views attach to the CPU a step runs on (LANGUAGE.md, "Under lkmm")
    places: dict = field(default_factory=dict)
    signals: tuple[Signal, ...] = ()
    guest: dict = field(default_factory=dict)  # CPU view id -> its `guest_mode` slot (a VM exit takes the interrupt)
    # gid -> (its pc slot, per pc the view slots of each CPU (by view id) that its steps
    # from that pc on may still read: `_liveness`); lazily, the others are canonical
    live: dict = field(default_factory=dict)

    def cpu(self, gid: int) -> CpuViews | None:
        """The views with id `gid`: a process instance's own, or with `cpus` a CPU's."""
        return next((c for c in self.cpus if c.gid == gid), None)

    def view_of(self, gid: int, uid: int, state) -> CpuViews | None:
        """The views step `uid` of process instance `gid` uses in `state` (slot values)."""
        slot, ids = self.places.get((gid, uid), (None, (gid,)))
        return self.cpu(ids[0] if slot is None else ids[state[slot]])

    def lag_fields(self, j: int) -> tuple[int, ...]:
        """Every lag slot on location j (CPUs' views, the SC view, every message's and
        every raised interrupt's view): what a store to j shifts."""
        n = self.bound
        return (tuple(f for cpu in self.cpus for f in (cpu.cur[j], cpu.acq[j], cpu.rel[j], cpu.own[j], cpu.strong[j])
                      if f is not None)
                + tuple(f for cpu in self.cpus if cpu.unlocked for f in (cpu.unlocked[j], cpu.unlocked_acq[j]))
                + (self.gsc[j],) + tuple(other.views[i][j] for other in self.locations for i in range(n))
                + tuple(other.strong[i][j] for other in self.locations for i in range(n))
                + tuple(f for sig in self.signals for f in (sig.cur[j], sig.strong[j]))
                + tuple(sig.done[j] for sig in self.signals if sig.done))

    def footprint(self, gid: int, uid: int) -> tuple[frozenset[int], frozenset[int]]:
        """The machine's slots one step of instance gid reads and writes (both forms),
        beside what its statement reads and writes (engines/reduce/footprint.py): for a
        step the machine leaves alone (no tracked location, no fence) nothing; otherwise
        every slot of each CPU it may run on, the history of each location it loads, the
        SC view when it may fence, and for a store the location's history and every lag on
        it (a store shifts them all and waits on its readers' views). What the machine's
        canonical forms rewrite (Machine.normalise, dead views) is not counted: they
        change no behaviour."""
        reads: set[int] = set()
        writes: set[int] = set()
        _, ids = self.places.get((gid, uid), (None, (gid,)))
        for acc in self.accesses.get((gid, uid), ()):
            if acc is None or not acc.touches:
                continue
            for v in ids:
                c = self.cpu(v)
                if c is not None:
                    reads.update(c.slots)
                    writes.update(c.slots)
            for j in acc.view_reads | acc.rmw | acc.acquire:
                reads.update(self.history(j))
            if acc.maybe_mb or acc.post_mb:
                reads.update(self.gsc)
                writes.update(self.gsc)
            for j in acc.writes:
                writes.update(self.history(j) + self.lag_fields(j))
                reads.update(self.lag_fields(j))
            if acc.signals or self.signals:
                every = {f for sig in self.signals for f in sig.cur + sig.strong + sig.done}
                reads.update(every)
                writes.update(every)
        return frozenset(reads), frozenset(writes)

    def history(self, j: int) -> tuple[int, ...]:
        """Location j's older values and every message's views."""
        loc = self.locations[j]
        return loc.old + tuple(f for row in loc.views + loc.strong for f in row)

    @property
    def none(self) -> int:
        """The lag that means "no constraint" (older than every message kept)."""
        return self.bound


# ---------------------------------------------------------------- static analysis


def composite(st: Step) -> bool:
    """Whether a step is an `atomic { }` block the machine runs as one fully ordered RMW:
    an atomic step that is not one kernel primitive (spin_lock's await-and-set keeps the
    primitive's own ordering, an acquire)."""
    if st.kind is not StepKind.ATOMIC:
        return False
    ops = [op for op in st.body if not isinstance(op, OGoto)]
    return not (len(ops) == 1 and isinstance(ops[0], OEval) and st.guard is not None
                and BUILTINS[ops[0].call.name].cls is Cls.LOCK)


class Event(Enum):
    """What a step does, in order, as the exact fences see it."""

    ACCESS = "a shared access"
    RMW = "an RMW"  # herd7's RMW set
    LOCK = "a lock acquisition"  # LKW
    BEFORE_ATOMIC = "smp_mb__before_atomic()"
    AFTER_ATOMIC = "smp_mb__after_atomic()"
    AFTER_SPINLOCK = "smp_mb__after_spinlock()"


_ATTACHED = {FenceKind.BEFORE_ATOMIC: Event.BEFORE_ATOMIC, FenceKind.AFTER_ATOMIC: Event.AFTER_ATOMIC,
             FenceKind.AFTER_SPINLOCK: Event.AFTER_SPINLOCK}



class _Analysis:
    """The locations (global slots) one step of one instance touches, and how."""

    def __init__(self, layout: StateLayout, inst: int | None, failed: bool, contexts: bool = False):
        self.layout = layout
        self.contexts = contexts  # `cpus`: schedule()'s barriers are its off-CPU and sched-in steps
        self.inst = inst
        self.failed = failed  # the failure of a conditional RMW: a relaxed load
        self.view_reads: set[int] = set()
        self.rmw: set[int] = set()
        self.writes: set[int] = set()
        self.acquire: set[int] = set()
        self.conditional: set[int] = set()
        self.flags: dict[str, bool] = {}
        self.why: list[str] = []
        # what the step does in order, for the exact fences: (Event, global slots)
        self.seq: list[tuple[Event, tuple[int, ...]]] = []
        self.ghosts: set[str] = set()  # ghost globals assigned (a raised interrupt's flag)
        self.idle_reads: set[str] = set()  # handlers whose idle label it reads (hrtimer_start/cancel)
        self.sure_writes: set[int] = set()  # stored by every run of the step (not under a branch)

    def slots(self, target: m.TExpr) -> tuple[int, ...]:
        if isinstance(target, (m.Var, m.Elem)) and target.sym.ghost:
            return ()  # outside the memory model: read and written as memory
        if isinstance(target, m.Var):
            if target.sym.scope is not m.Scope.GLOBAL:
                return ()
            return (self.layout.slot_of(target.sym, None),)
        if isinstance(target, m.Elem):
            if target.sym.scope is not m.Scope.GLOBAL:
                return ()
            base = self.layout.slot_of(target.sym, None)
            t = target.sym.type
            assert isinstance(t, m.ArrayT), target.sym  # an element is of an array
            idx = target.index
            if isinstance(idx, m.SelfE) and self.inst is not None:
                idx = m.Const(idx.span, idx.type, self.inst)
            if isinstance(idx, m.Const) and t.lo <= idx.value <= t.hi:
                return (base + idx.value - t.lo,)
            self.flags["rmb"] = True  # an address dependency: ordered as smp_rmb orders it
            self.flags["address"] = True
            return tuple(range(base, base + t.hi - t.lo + 1))
        return ()

    def index_reads(self, target: m.TExpr):
        if isinstance(target, m.Elem):
            self.expr(target.index)

    def order(self, order: Order, what: str):
        if order is Order.FULL:
            self.flags.update(pre_mb=True, post_mb=True, release=True, rmw_acquire=True)
            self.why.append(f"{what} is fully ordered")
        elif order is Order.ACQUIRE:
            self.flags["rmw_acquire"] = True
        elif order is Order.RELEASE:
            self.flags["release"] = True

    def expr(self, x: m.TExpr | None):
        if x is None:
            return
        if isinstance(x, (m.Var, m.Elem)):
            self.index_reads(x)
            got = self.slots(x)
            self.view_reads.update(got)
            self.seq.append((Event.ACCESS, got))
        elif isinstance(x, m.Builtin):
            self.builtin(x)
        elif isinstance(x, m.Bin):
            self.expr(x.left)
            self.expr(x.right)
        elif isinstance(x, (m.Un, m.Conv)):
            self.expr(x.operand)
        elif isinstance(x, m.Ite):
            for sub in (x.cond, x.then, x.orelse):
                self.expr(sub)
        elif isinstance(x, m.Quant):
            self.expr(x.body)
        elif isinstance(x, m.At) and x.label == m.IRQ_IDLE:
            self.idle_reads.add(x.process)

    def builtin(self, b: m.Builtin):
        p = BUILTINS[b.name]
        locs: list[m.TExpr] = []
        for a, arg in zip(p.args, b.args):
            if a in (Arg.LV, Arg.BITS, Arg.WQ, Arg.LOCK):
                locs.append(arg)
                self.index_reads(arg)
            else:
                self.expr(arg)
        slots = [k for loc in locs for k in self.slots(loc)]
        # herd7's RMW set: the atomic RMWs, a failed cmpxchg included (its lone read is
        # tagged RMW); a lock's acquisition is LKR/LKW instead, never RMW (lock.cat)
        lock = Arg.LOCK in p.args
        if p.cls is Cls.RMW and not lock:
            self.seq.append((Event.RMW, tuple(slots)))
        elif p.cls in (Cls.RMW, Cls.LOCK) and lock and not self.failed:
            self.seq.append((Event.LOCK, tuple(slots)))
        elif slots:
            self.seq.append((Event.ACCESS, tuple(slots)))
        if p.cls in (Cls.LOAD, Cls.WQ_TEST):
            self.view_reads.update(slots)
            if p.order is Order.ACQUIRE:
                self.acquire.update(slots)
        elif p.cls is Cls.STORE:
            self.writes.update(slots)
            if lock:
                self.flags["unlock"] = True
            if p.order is Order.RELEASE:
                self.flags["release"] = True
            elif p.order is Order.FULL:  # smp_store_mb: the store, then smp_mb()
                self.flags["post_mb"] = True
                self.why.append(f"{p.name} ends with smp_mb()")
        elif p.cls in (Cls.RMW, Cls.LOCK, Cls.WQ_ADD, Cls.WQ_REMOVE, Cls.WQ_WAKE):
            # its failure is a lone load however it is ordered (no write, so no atomicity:
            # it may read a stale message), cmpxchg_relaxed's too
            conditional = p.failure_order is not None
            if conditional:
                self.conditional.update(slots)
            if self.failed and conditional:
                self.view_reads.update(slots)  # a failed cmpxchg is a lone load
                if p.failure_order is Order.ACQUIRE:
                    self.acquire.update(slots)
                return
            self.rmw.update(slots)
            self.writes.update(slots)
            self.order(p.order, p.name)
        elif p.cls is Cls.SCHEDULE:
            self.order(Order.FULL, p.name)

    def step(self, st: Step) -> Access:
        self.expr(st.guard)
        if st.kind is StepKind.SCHEDULE and not self.contexts:
            self.order(Order.FULL, "schedule()")
        for op in walk_ops(st.body):
            if isinstance(op, OAssign):
                if isinstance(op.target, (m.Var, m.Elem)) and op.target.sym.ghost:
                    self.ghosts.add(op.target.sym.name)
                self.index_reads(op.target)
                self.expr(op.value)
                got = self.slots(op.target)
                self.writes.update(got)
                self.seq.append((Event.ACCESS, got))
            elif isinstance(op, OEval):
                self.expr(op.call)
            elif isinstance(op, (OIf, OWhile, OAssert)):
                self.expr(op.cond)
            elif isinstance(op, OBarrier):
                kind = BUILTINS[op.name].fence
                if kind is FenceKind.FULL:
                    self.flags["pre_mb"] = True
                    self.why.append(f"{op.name}() is a full barrier")
                elif kind in _ATTACHED:
                    self.seq.append((_ATTACHED[kind], ()))
                elif kind is FenceKind.READ:
                    self.flags["rmb"] = True
                elif kind is FenceKind.WRITE:
                    self.flags["wmb"] = True
        for op in st.body:  # the step's ops before its first branch, goto or assert: run every time
            if isinstance(op, OAssign):
                got = self.slots(op.target)
            elif isinstance(op, OEval):
                p = BUILTINS[op.call.name]
                locs = [arg for a, arg in zip(p.args, op.call.args) if a is Arg.LV]
                got = self.slots(locs[0]) if p.cls is Cls.STORE and len(locs) == 1 else ()
            elif isinstance(op, OBarrier):
                continue
            else:
                break
            if len(got) == 1:
                self.sure_writes.update(got)
        self.attached_fences()
        if composite(st) and self.writes:
            # an atomic block that stores is one fully ordered read-modify-write of all it touches
            self.rmw |= self.view_reads | self.writes
            self.view_reads = set()
            self.order(Order.FULL, "an atomic block that stores")
        self.view_reads -= self.rmw
        return Access()  # filled in by `extend` once the tracked locations are known

    def attached_fences(self):
        """The flags of the fences that order only with an RMW or a lock acquisition
        (linux-kernel.cat:37-39), from the step's events in order. Within the step an
        SC fence stands before all its accesses (pre_mb) or after them (post_mb)."""
        events = [e for e, _ in self.seq]
        f = self.flags
        for i, e in enumerate(events):
            if e is Event.BEFORE_ATOMIC:
                if Event.RMW in events[i + 1:]:
                    f["pre_mb"] = True
                    self.why.append("smp_mb__before_atomic() orders what precedes it with the RMW")
                    between = events[i + 1:events.index(Event.RMW, i + 1)]
                else:
                    f["before_atomic"] = True
                    between = events[i + 1:]
                if Event.ACCESS in between:
                    f["fence_gap"] = True  # an access between the fence and its RMW: ordered too
            elif e in (Event.AFTER_ATOMIC, Event.AFTER_SPINLOCK):
                mark = Event.RMW if e is Event.AFTER_ATOMIC else Event.LOCK
                name = "smp_mb__after_atomic()" if e is Event.AFTER_ATOMIC else "smp_mb__after_spinlock()"
                if mark in events[:i]:
                    f["post_mb"] = True
                    last = i - 1 - events[:i][::-1].index(mark)
                    if Event.ACCESS in events[i + 1:] or Event.RMW in events[i + 1:]:
                        f["pre_mb"] = True  # accesses after it in its step: ordered as a full fence
                        f["fence_gap"] = True
                    if Event.ACCESS in events[last + 1:i]:
                        f["fence_gap"] = True
                    self.why.append(f"{name} orders what precedes it with what follows")
                else:
                    f["after_rmw_fence" if e is Event.AFTER_ATOMIC else "after_lock_fence"] = True
                    if Event.ACCESS in events[:i]:
                        f["fence_gap"] = True
        if Event.RMW in events:
            first = events.index(Event.RMW)
            if Event.BEFORE_ATOMIC not in events[:first]:
                f["rmw_fence"] = True
            f["rmw_mark"] = True
        if Event.LOCK in events:
            f["lock_mark"] = True


def _analyse(layout: StateLayout, st: Step, inst: int | None, failed: bool, contexts: bool = False) -> _Analysis:
    a = _Analysis(layout, inst, failed, contexts)
    a.step(st)
    return a


def composite_findings(program: Program) -> tuple[tuple[int, str], ...]:
    """(line, message) for each `atomic { }` block that stores and touches more than one
    shared location (a global two process instances access): under tso it is one
    locked instruction, under lkmm one fully ordered read-modify-write of all of them,
    and the kernel has neither, so a verdict may rest on ordering it does not have."""
    memory = program.model.memory
    if memory not in ("tso", "lkmm"):
        return ()
    layout = program.layout
    touched: dict[int, set[int]] = {}
    blocks = []
    for p in program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            for st in p.steps:
                a = _analyse(layout, st, i, False)
                here = a.view_reads | a.rmw | a.writes
                for k in here:
                    touched.setdefault(k, set()).add(gid)
                if i == 0 and composite(st) and a.writes and not st.generated:
                    blocks.append((st, here, a.writes))
    out = []
    for st, here, writes in blocks:
        shared = {k for k in here if len(touched[k]) >= 2}
        names = sorted({layout.slots[k].var or layout.slots[k].name for k in shared})
        if len(names) < 2 or not shared & writes:
            continue
        what = ("one locked instruction" if memory == "tso" else "one fully ordered read-modify-write")
        out.append((st.span.line, f"`{st.text}` is an atomic block over {len(names)} shared locations "
                                  f"({', '.join(names)}): under {memory} it is {what} of all of them, and the "
                                  f"kernel has no such instruction; write the kernel's statements one by one "
                                  f"where the ordering between them is in question"))
    return tuple(dict.fromkeys(out))


# ---------------------------------------------------------------- the layout


def extend(program: Program, lazy: bool = True) -> Program:
    """The program with the machine's slots added to its layout (StateLayout.lkmm).
    `lazy`: a CPU's view moves only where the move can matter (Machine.propagate);
    otherwise anywhere, as the plain semantics says (--no-por)."""
    model = program.model
    layout = program.layout
    bound = model.store_buffer or DEFAULT_HISTORY
    if bound < 2:
        raise SpecError(model.processes[0].span if model.processes else NOWHERE,
                        "under lkmm a location's history holds at least 2 stores (`memory lkmm(2)`)")
    per_step: dict = {}
    touched: dict[int, set[int]] = {}  # global slot -> gids that access it
    written: set[int] = set()
    loaded: dict[int, set[int]] = {}  # global slot -> gids that load it through their view
    for p in program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            inst = i if p.count is not None else None
            for st in p.steps:
                ctx = model.cpus is not None
                a = _analyse(layout, st, inst if inst is not None else 0, False, ctx)
                fail = _analyse(layout, st, inst if inst is not None else 0, True, ctx) if a.conditional else None
                per_step[(gid, st.uid)] = (a, fail)
                for an in (a, fail):
                    if an is None:
                        continue
                    for k in an.view_reads | an.rmw | an.writes:
                        touched.setdefault(k, set()).add(gid)
                    for k in an.view_reads:
                        loaded.setdefault(k, set()).add(gid)
                    written.update(an.writes)
    tracked = sorted(k for k in written if len(touched.get(k, ())) >= 2)
    index = {k: j for j, k in enumerate(tracked)}
    places = _places(program)
    users = {g for k in tracked for g in touched[k]}  # the instances whose steps need views
    view_ids = sorted({v for (g, _), (_, ids) in places.items() if g in users for v in ids})
    slots = list(layout.slots)
    choices = list(program.init_choices)
    lag = m.IntT(0, bound)
    none = bound

    def add(name: str, typ: m.Type, value: int, process: str | None = None) -> int:
        slots.append(Slot(name, SlotKind.VIEW, typ, None, None, process))
        choices.append((value,))
        return len(slots) - 1

    locations = []
    for j, k in enumerate(tracked):
        sl = layout.slots[k]
        lo = sl.type.lo if isinstance(sl.type, m.IntT) and sl.type.lo is not None else 0
        old = tuple(add(f"{sl.name}@{i}", sl.type, lo) for i in range(1, bound))
        loc_views = tuple(tuple(add(f"view of {sl.name}@{i} on {layout.slots[kk].name}", lag,
                                    0 if (i == 0 and jj == j) else none)
                                for jj, kk in enumerate(tracked)) for i in range(bound))
        loc_strong = tuple(tuple(add(f"strong view of {sl.name}@{i} on {layout.slots[kk].name}", lag, none)
                                 for kk in tracked) for i in range(bound))
        readers = tuple(sorted({v for (g, uid), (a, f) in per_step.items() if g in touched[k]
                                for an in (a, f) if an is not None and k in an.view_reads
                                for v in places[(g, uid)][1]}))
        locations.append(Location(sl.name, k, old, loc_views, loc_strong, readers))
    gsc = tuple(add(f"sc view on {layout.slots[k].name}", lag, none) for k in tracked)
    cpus = []
    n_inst = len(layout.instance_names)
    for g in view_ids:
        name = layout.instance_names[g] if g < n_inst else f"cpu{g - n_inst}"
        cur = tuple(add(f"{name} reads {layout.slots[k].name}", lag, 0, name) for k in tracked)
        acq = tuple(add(f"{name} acquire view on {layout.slots[k].name}", lag, none, name) for k in tracked)
        rel = tuple(add(f"{name} release view on {layout.slots[k].name}", lag, none, name) for k in tracked)
        writes = {k for key, (a, f) in per_step.items() if g in places[key][1] for an in (a, f) if an
                  for k in an.writes}
        own = tuple(add(f"{name} own store to {layout.slots[k].name}", lag, none, name) if k in writes else None
                    for k in tracked)
        strong = tuple(add(f"{name} strong view on {layout.slots[k].name}", lag, none, name) for k in tracked)
        mine = [an for key, (a, f) in per_step.items() if g in places[key][1] for an in (a, f) if an]
        flag = m.IntT(0, 1)
        ba = add(f"{name} smp_mb__before_atomic pending", flag, 0, name) \
            if any(an.flags.get("before_atomic") for an in mine) else None
        aa = add(f"{name} RMW since its last full fence", flag, 0, name) \
            if any(an.flags.get("after_rmw_fence") for an in mine) else None
        al = add(f"{name} lock taken since its last full fence", flag, 0, name) \
            if any(an.flags.get("after_lock_fence") for an in mine) else None
        unlocked: tuple[int, ...] = ()
        unlocked_acq: tuple[int, ...] = ()
        if any(an.flags.get("unlock") for an in mine) and any(an.flags.get("lock_mark") for an in mine):
            unlocked = tuple(add(f"{name} view at its last unlock on {layout.slots[k].name}", lag, none, name)
                             for k in tracked)
            unlocked_acq = tuple(add(f"{name} acquire view at its last unlock on {layout.slots[k].name}", lag,
                                     none, name) for k in tracked)
        cpus.append(CpuViews(name, g, cur, acq, rel, own, strong, ba, aa, al, unlocked, unlocked_acq))
    signals = []
    timer_of = {layout.gid_base[p.name] + i: p.name for p in model.processes
                if p.context is not None and p.context.hrtimer for i in range(p.instances)}
    for name, taker, pending, raised, flags, flight in _raisers(program) if view_ids else ():
        sig_cur = tuple(add(f"raise of {name}: view on {layout.slots[k].name}", lag, none) for k in tracked)
        sig_strong = tuple(add(f"raise of {name}: strong view on {layout.slots[k].name}", lag, none)
                           for k in tracked)
        cpu = next(ids[0] for (g, _), (_, ids) in places.items() if g == taker)
        timer = {}
        if timer_of.get(taker):
            proc = next(p for p in program.processes if p.name == timer_of[taker])
            timer = dict(timer=proc.name, pc=layout.pc_base[proc.name] + taker - layout.gid_base[proc.name],
                         idle=proc.label_pcs[m.IRQ_IDLE],
                         done=tuple(add(f"{name} returned: view on {layout.slots[k].name}", lag, none) for k in tracked))
        signals.append(Signal(name, taker, pending, raised, sig_cur, sig_strong, flags, cpu, flight=flight, **timer))
    guest = {}
    gm = next((g for g in model.globals if g.name == m.GUEST_MODE), None)
    if gm is not None and signals:
        guest = {n_inst + c: layout.slot_of(gm, None) + c for c in range(model.cpus or 0) if n_inst + c in view_ids}
    actors = len(layout.instance_names) + sum(len(loc.readers) for loc in locations)
    if actors > MAX_ACTORS:
        raise SpecError(model.processes[0].span,
                        f"under lkmm this model needs {actors} actors (process instances and one propagation "
                        f"per CPU and shared variable it reads); the limit is {MAX_ACTORS}",
                        "check fewer instances under lkmm, or share fewer variables")
    accesses = {}
    flags = frozenset(f for sig in signals for f in sig.flags) | ({m.GUEST_MODE} if guest else frozenset())
    for key, (a, fail) in per_step.items():
        here = [c for c in cpus if c.gid in places[key][1]]
        got = tuple(None if an is None else _access(an, index, here) for an in (a, fail))
        accesses[key] = tuple(x if x is None or not x.flags & flags else replace(x, signals=True) for x in got)
    kept = {key: place for key, place in places.items() if key in per_step}
    live = _liveness(program, tuple(cpus), accesses, kept, tuple(signals)) if lazy else {}
    views = Views(bound, tuple(locations), tuple(cpus), gsc, accesses, lazy, kept, tuple(signals), guest, live)
    new_layout = replace(layout, slots=tuple(slots), lkmm=views)
    return replace(program, layout=new_layout, init_choices=tuple(choices))


def fields_of(c: CpuViews) -> tuple[int, ...]:
    """A CPU's view slots that `_liveness` tracks (its fence flags are always kept)."""
    return c.cur + c.acq + c.rel + tuple(f for f in c.own if f is not None) + c.strong + c.unlocked + c.unlocked_acq


def _uses(c: CpuViews, acc: Access, definite: bool, signalled: bool) -> tuple[frozenset[int], frozenset[int]]:
    """(used, killed): the slots of c's views one form of a step on c may read (Machine.step,
    all of them counted as read before any is written) and those it surely overwrites
    whatever they held (only when the step surely runs on c: `definite`). A join into a
    view (acquire, observe, propagate) reads the old value only for the joined result,
    so it passes liveness through."""
    used: set[int] = set()
    if acc.maybe_mb or acc.post_mb:  # mb: acq and cur joined, cur published to the SC view and rel
        used.update(c.cur + c.acq)
    if acc.rmb:
        used.update(c.acq)
    if acc.wmb:
        used.update(f for f in c.own if f is not None)
    if acc.lock_mark:
        used.update(c.unlocked + c.unlocked_acq)
    used.update(c.cur[j] for j in acc.view_reads | acc.acquire)
    if acc.writes:  # a store publishes cur (release) or rel, and strong
        used.update(c.cur if acc.release else c.rel)
        used.update(c.strong)
    if acc.unlock:
        used.update(c.cur + c.acq)
    if signalled:  # raising an interrupt publishes cur and strong, a returning callback its stores
        used.update(c.cur + c.strong + tuple(f for f in c.own if f is not None))
    killed: set[int] = set()
    if definite:
        if acc.pre_mb or acc.post_mb:
            killed.update(c.rel)
        killed.update(c.cur[j] for j in acc.rmw)
        # its own store resets its view of the location to the newest (Machine.store),
        # so what the view held before matters only if the step reads it first (used)
        killed.update(c.cur[j] for j in acc.sure_writes)
        if acc.unlock:
            killed.update(c.unlocked + c.unlocked_acq)
    return frozenset(used), frozenset(killed - used)


def _liveness(program: Program, cpus: tuple[CpuViews, ...], accesses: dict, places: dict,
              signals: tuple[Signal, ...]) -> dict:
    """Views.live: for each instance whose steps use some CPU's views, per pc, the view
    slots of each such CPU that a step from that pc on may read before one of its own
    steps overwrites them (a backward dataflow over the instance's control flow, loops
    to a fixpoint). A slot no instance may read so is dead: no step, propagation or
    store can tell its value, so the machine keeps it canonical (Machine.save), and a
    CPU that never reads a location again stops receiving its propagations."""
    layout = program.layout
    by_gid = {c.gid: c for c in cpus}
    out: dict = {}
    for p in program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            per_cpu: dict[int, dict[int, tuple[frozenset[int], frozenset[int]]]] = {}  # cpu -> uid -> (use, kill)
            for st in p.steps:
                key = (gid, st.uid)
                if key not in accesses:
                    continue
                slot, ids = places.get(key, (None, (gid,)))
                acc, fail = accesses[key]
                for v in ids:
                    c = by_gid.get(v)
                    if c is None:
                        continue
                    signalled = any(sig.taker == gid or sig.flags & acc.flags
                                    or m.GUEST_MODE in acc.flags and sig.cpu in ids for sig in signals)
                    forms = [_uses(c, a, slot is None and len(ids) == 1, signalled) for a in (acc, fail)
                             if a is not None]
                    use = frozenset().union(*(u for u, _ in forms))
                    kill = frozenset.intersection(*(k for _, k in forms)) - use
                    per_cpu.setdefault(v, {})[st.uid] = (use, kill)
            if not per_cpu:
                continue
            succ = {st.uid: {op.pc for op in walk_ops(st.body) if isinstance(op, OGoto)} for st in p.steps}
            n = len(p.steps_at)
            table: list[dict[int, frozenset[int]]] = [{} for _ in range(n)]
            for v, steps in per_cpu.items():
                live = [frozenset[int]()] * n
                changed = True
                while changed:
                    changed = False
                    for pc in reversed(range(n)):
                        got: set[int] = set()
                        for st in p.steps_at[pc]:
                            use, kill = steps.get(st.uid, (frozenset(), frozenset()))
                            after = set().union(*(live[t] for t in succ[st.uid] or {pc}))
                            got |= use | (after - kill)
                        if got != live[pc]:
                            live[pc] = frozenset(got)
                            changed = True
                for pc in range(n):
                    table[pc][v] = live[pc]
            out[gid] = (layout.pc_base[p.name] + i, tuple(table))
    return out


def _places(program: Program) -> dict:
    """(gid, step uid) -> (slot or None, view ids): where each step's accesses read and
    publish. Without `cpus` every instance is a CPU of its own (its gid). With `cpus`,
    the views attach to the model's CPUs (ids after the gids): a handler's are its CPU's,
    a thread's are the CPU it runs on (its `cpu`, read at the step when it may migrate),
    and a preemption's (its `on sched_out` notifier) are the CPU of the thread it takes
    off; other processes (a device, a timer's expiry) keep their own."""
    model, layout = program.model, program.layout
    by_name = {p.name: p for p in model.processes}
    n_inst = len(layout.instance_names)
    out: dict = {}
    for p in program.processes:
        ctx = by_name[p.name].context if p.name in by_name else None
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            for st in p.steps:
                place: tuple = (None, (gid,))
                if model.cpus is not None and ctx is not None and ctx.kind is m.ContextKind.GUEST:
                    # a guest runs on its thread's CPU, in program order with it: its view
                    vcpu = by_name[ctx.vcpu or ""]
                    t = vcpu.context
                    assert t is not None, "a guest's thread runs on a CPU"
                    place = (None, (n_inst + t.cpus[0],)) if not t.preemptible else \
                        (_cpu_slot(layout, vcpu, 0), tuple(n_inst + c for c in range(model.cpus)))
                elif model.cpus is not None and ctx is not None:
                    if ctx.kind is m.ContextKind.INTERRUPT or (ctx.kind is m.ContextKind.THREAD
                                                               and not ctx.preemptible):
                        place = (None, (n_inst + ctx.cpus[i],))
                    elif ctx.kind is m.ContextKind.THREAD:
                        place = (_cpu_slot(layout, by_name[p.name], i), tuple(n_inst + c for c in range(model.cpus)))
                        dest = _moves_to(st)
                        if dest is not None:  # a sched-in step runs on the CPU it puts the thread on
                            place = (None, (n_inst + dest,))
                    else:  # the scheduler: each of its steps preempts one thread, on that thread's CPU
                        who = _preempted(st)
                        if who is not None:
                            q = by_name[who[0]]
                            place = (_cpu_slot(layout, q, who[1]), tuple(n_inst + c for c in range(model.cpus)))
                out[(gid, st.uid)] = place
    return out


def _moves_to(st: Step) -> int | None:
    """The CPU a step puts its thread on (`cpu = c`: a sched-in step's migration)."""
    for op in walk_ops(st.body):
        if isinstance(op, OAssign) and isinstance(op.target, m.Var) and op.target.sym.name == "cpu" \
                and op.target.sym.scope is m.Scope.LOCAL and isinstance(op.value, m.Const):
            return op.value.value
    return None


def _cpu_slot(layout: StateLayout, p: m.Process, instance: int) -> int:
    sym = next(v for v in p.locals if v.name == "cpu")
    return layout.slot_of(sym, instance)


def _preempted(st: Step) -> tuple[str, int] | None:
    """The thread (process, instance) whose `cpu` a scheduler step reads: the one it preempts."""
    found = [(x.process, x.index.value if isinstance(x.index, m.Const) else 0) for x in _subterms(st.guard)
             if isinstance(x, m.LocalOf) and x.sym.name == "cpu"]
    return found[0] if found else None


def _subterms(x):
    """Every typed expression inside x (one, or a tuple of them), each before its parts."""
    if isinstance(x, tuple):
        for y in x:
            yield from _subterms(y)
    elif isinstance(x, m.TExpr):
        yield x
        for f in x.__dataclass_fields__:
            yield from _subterms(getattr(x, f))


def _raisers(program: Program) -> list:
    """(name, handler gid, pending slot, raising slots, their variables' names, in-flight slots) per
    interrupt handler instance."""
    model, layout = program.model, program.layout
    glob = {g.name: g for g in model.globals}
    out = []
    for p in model.processes:
        if p.context is None or p.context.kind is not m.ContextKind.INTERRUPT:
            continue
        sym = glob[m.pending_name(p.name)]
        armed = glob.get(m.armed_name(p.name)) if p.context.hrtimer else None
        wire = glob.get(m.in_flight_name(p.name))  # raised from another CPU, not yet delivered
        for i in range(p.instances):
            pending = layout.slot_of(sym, None) + (i if p.count is not None else 0)
            flight = () if wire is None else (layout.slot_of(wire, None) + (i if p.count is not None else 0),)
            raised = (pending,) + ((layout.slot_of(armed, None),) if armed is not None else ()) + flight
            flags = frozenset({sym.name} | ({armed.name} if armed is not None else set())
                              | ({wire.name} if wire is not None else set()))
            out.append((p.instance_name(i), layout.gid_base[p.name] + i, pending, raised, flags, flight))
    return out


def _access(a: _Analysis, index: dict[int, int], cpus: list[CpuViews]) -> Access:
    def js(ks):
        return frozenset(index[k] for k in ks if k in index)

    f = a.flags
    why = a.why[:]
    if f.get("rmb") and not why:
        why.append("smp_rmb() (or an address dependency) orders the loads")
    return Access(js(a.view_reads), js(a.rmw), js(a.acquire), f.get("rmw_acquire", False), f.get("pre_mb", False),
                  f.get("post_mb", False), f.get("rmb", False), f.get("wmb", False), f.get("release", False),
                  js(a.conditional), "; ".join(why), js(a.writes), frozenset(a.ghosts),
                  timer_lock=frozenset(h for h in a.idle_reads if m.armed_name(h) in a.ghosts),
                  **{k: f.get(k, False) and any(map(_FENCE_FLAGS[k], cpus)) for k in _FENCE_FLAGS},
                  conditional_slots=frozenset(a.conditional), sure_writes=js(a.sure_writes))


#: the Access fields of the exact fences (as _Analysis.attached_fences sets them), each
#: kept only where one of its CPUs has the state it reads or writes: an RMW is a fence's place
#: only on a CPU with an smp_mb__before_atomic(), so elsewhere it consults no more views
_FENCE_FLAGS = {
    "before_atomic": lambda c: c.before_atomic is not None,
    "rmw_fence": lambda c: c.before_atomic is not None,
    "after_rmw_fence": lambda c: c.after_rmw is not None,
    "after_lock_fence": lambda c: c.after_lock is not None,
    "rmw_mark": lambda c: c.after_rmw is not None,
    "lock_mark": lambda c: True,  # also po-unlock-lock-po's place
    "unlock": lambda c: bool(c.unlocked),
    "fence_gap": lambda c: True,
    "address": lambda c: True,
}


# ---------------------------------------------------------------- completeness


def _reads(x, scope: m.Scope) -> set:
    """The variables (VarSyms) of one scope an expression reads, indexes included."""
    return {e.sym for e in _subterms(x) if isinstance(e, (m.Var, m.Elem)) and e.sym.scope is scope
            and not e.sym.ghost}


_EXIT = -1  # _Dependencies' successor of a step that ends its process
_PLACES = (Arg.LV, Arg.BITS, Arg.LOCK, Arg.WQ)  # a primitive's arguments that name what it writes


class _Dependencies:
    """Which po-later steps of one process a load step orders before itself by a
    dependency, as linux-kernel.cat's `rwdep` ((addr | data | ctrl) ; [W]) has it: a step
    whose store's value or index reads a register that, on every path from the load, holds
    a value computed from that instance of it (data, addr; through registers, and through
    the address of a dependent load: addr ; [R] is ppo too), or that stands inside an arm
    of a branch whose condition read one (ctrl: herd7's C has it inside the arms only,
    not after the join, and never before a load). A must-analysis over the control flow:
    a loop back to the load starts a new instance, which the earlier one's registers
    do not carry. Conservative: a guard (`await`), a step with control flow of its own
    and a conditional RMW's operands are not credited."""

    def __init__(self, p):
        self.p = p
        self.by_uid = {st.uid: st for st in p.steps}
        self.pc_of = {st.uid: pc for pc, sts in enumerate(p.steps_at) for st in sts}
        # successors by uid; _EXIT for a goto to a pc with no steps (the process ends there)
        self.succ = {st.uid: {t.uid for op in walk_ops(st.body) if isinstance(op, OGoto) for t in p.steps_at[op.pc]}
                     | {_EXIT for op in walk_ops(st.body) if isinstance(op, OGoto) and not p.steps_at[op.pc]}
                     for st in p.steps}
        self.cache: dict[int, frozenset[int]] = {}
        self.cd_cache: dict[int, frozenset[int]] = {}

    @staticmethod
    def simple(st: Step) -> bool:
        return st.guard is None and all(isinstance(op, (OAssign, OEval, OGoto)) for op in st.body)

    @staticmethod
    def branch(st: Step) -> OIf | None:
        ops = [op for op in st.body if not isinstance(op, OGoto)]
        return ops[0] if st.kind is StepKind.BRANCH and len(ops) == 1 and isinstance(ops[0], OIf) else None

    def transfer(self, st: Step, k: int, d: frozenset, g: frozenset) -> tuple[frozenset, frozenset]:
        dd, gg = set(d), set(g)
        plain = self.simple(st) and st.uid != k
        for op in walk_ops(st.body):
            if isinstance(op, OAssign) and isinstance(op.target, m.Var) and op.target.sym.scope is m.Scope.LOCAL:
                if plain and _reads(op.value, m.Scope.LOCAL) & d:
                    dd.add(op.target.sym)
                else:
                    dd.discard(op.target.sym)
        b = self.branch(st)
        if b is not None:
            if st.uid != k and _reads(b.cond, m.Scope.LOCAL) & d:
                gg.add(st.uid)
            else:
                gg.discard(st.uid)
        return frozenset(dd), frozenset(gg)

    def must_reach(self, q: int) -> set[int]:
        """The steps every maximal path from which runs q (q post-dominates them)."""
        got = {q}
        changed = True
        while changed:
            changed = False
            for u, nxt in self.succ.items():
                if u not in got and nxt and nxt <= got:
                    got.add(u)
                    changed = True
        return got

    def governing(self, q: int) -> frozenset[int]:
        """The branch steps q is control dependent on, transitively."""
        if q in self.cd_cache:
            return self.cd_cache[q]
        out: set[int] = set()
        todo = [q]
        while todo:
            u = todo.pop()
            post = self.must_reach(u)
            for b, st in self.by_uid.items():
                if b not in out and b != u and b not in post and self.branch(st) is not None \
                        and self.succ[b] & post:
                    out.add(b)
                    todo.append(b)
        self.cd_cache[q] = frozenset(out)
        return self.cd_cache[q]

    def ordered_after(self, k: int) -> frozenset[int]:
        """The uids of the steps whose stores a dependency orders after step k's loads."""
        if k in self.cache:
            return self.cache[k]
        st = self.by_uid[k]
        single = sum(not isinstance(op, OGoto) for op in st.body) == 1
        d0 = frozenset(op.target.sym for op in walk_ops(st.body) if isinstance(op, OAssign)
                       and isinstance(op.target, m.Var) and op.target.sym.scope is m.Scope.LOCAL
                       and _reads(op.value, m.Scope.GLOBAL)) if self.simple(st) and single else frozenset()
        b = self.branch(st)
        g0 = frozenset({k}) if b is not None and _reads(b.cond, m.Scope.GLOBAL) else frozenset()
        state: dict[int, tuple[frozenset, frozenset]] = {}  # uid -> the state before it (meet over paths)
        todo = []
        for u in self.succ[k] - {_EXIT}:
            state[u] = (d0, g0)
            todo.append(u)
        while todo:
            u = todo.pop()
            out = self.transfer(self.by_uid[u], k, *state[u])
            for t in self.succ[u] - {_EXIT}:
                old = state.get(t)
                new = out if old is None else (old[0] & out[0], old[1] & out[1])
                if new != old:
                    state[t] = new
                    todo.append(t)
        got = {u for u, (d, g) in state.items() if self.depends(self.by_uid[u], d)
               or g & self.governing(u)}
        self.cache[k] = frozenset(got)
        return self.cache[k]

    @staticmethod
    def within(st: Step) -> bool:
        """Whether each store of one statement takes its value or address from every
        shared location the statement reads besides the ones it stores (data, addr inside
        the statement, as `WRITE_ONCE(y, x)` or `r = xchg(y, x)`). Not so for a load
        beside an RMW (`READ_ONCE(x) + xchg_relaxed(y, 1)`) or a guard's load."""
        ops = [op for op in walk_ops(st.body) if not isinstance(op, OGoto)]
        exprs = (st.guard, tuple(op.value if isinstance(op, OAssign) else op.call if isinstance(op, OEval)
                                 else op.cond if isinstance(op, (OIf, OWhile, OAssert)) else None for op in ops),
                 tuple(op.target for op in ops if isinstance(op, OAssign)))
        loaded = _reads(exprs, m.Scope.GLOBAL)
        feeds: list[tuple[set, set]] = []  # (what a store stores, what its value and address read)
        for op in ops:
            if isinstance(op, OAssign) and isinstance(op.target, (m.Var, m.Elem)) \
                    and op.target.sym.scope is m.Scope.GLOBAL and not op.target.sym.ghost:
                index = op.target.index if isinstance(op.target, m.Elem) else None
                feeds.append(({op.target.sym}, _reads((index, op.value), m.Scope.GLOBAL)))
            for c in builtins_in(op.call if isinstance(op, OEval) else op.value if isinstance(op, OAssign)
                                 else op.cond if isinstance(op, (OIf, OWhile)) else None):
                p = BUILTINS[c.name]
                if not p.effect:
                    continue
                places = [a for a, kind in zip(c.args, p.args) if kind in _PLACES]
                stored = {a.sym for a in places if isinstance(a, (m.Var, m.Elem))}
                feed = _reads(tuple(a for a, kind in zip(c.args, p.args) if kind not in _PLACES)
                              + tuple(a.index for a in places if isinstance(a, m.Elem)), m.Scope.GLOBAL)
                feeds.append((stored, feed))
        return all(loaded - stored <= feed for stored, feed in feeds)

    @staticmethod
    def depends(st: Step, d: frozenset) -> bool:
        """A store of st takes its value or address from a register in d (data, addr)."""
        if not d or not _Dependencies.simple(st):
            return False
        for op in st.body:
            if isinstance(op, OAssign) and isinstance(op.target, (m.Var, m.Elem)) \
                    and op.target.sym.scope is m.Scope.GLOBAL and _reads((op.target, op.value), m.Scope.LOCAL) & d:
                return True
            calls = builtins_in(op.call) if isinstance(op, OEval) else \
                builtins_in(op.value) if isinstance(op, OAssign) else ()
            for c in calls:
                p = BUILTINS[c.name]
                if p.cls in (Cls.STORE, Cls.RMW) and p.failure_order is None and _reads(c.args, m.Scope.LOCAL) & d:
                    return True
        return False


def left_out(program: Program) -> tuple[str, ...]:
    """The shapes of LKMM outcomes the machine does not explore that may occur in this
    model (an extended program: `extend`), each with the statements that let it; empty
    when none can, so every LKMM outcome of the model is explored (but for the history
    bound, which the engine counts). A static, conservative argument: a shape named
    here may still be impossible, one not named cannot occur.

    * load buffering (and a store visible before an earlier load of its CPU): needs a
      load and a po-later store of one CPU that nothing orders (an acquire load, a
      release store, a fully ordered step between them or at either end; a dependency
      inside one statement, or an addr, data or ctrl dependency through registers:
      `_Dependencies`), whose store reaches, through other CPUs' accesses, a store
      of the loaded location by another CPU;
    * a store placed earlier in coherence order: needs a location two CPUs store, one
      of them with a plain store (RMWs read the newest store and join the end);
    * a release through another CPU's relaxed RMW: needs a location one CPU stores and
      another CPU read-modify-writes with a relaxed or acquire RMW;
    * a fence beside its RMW: a shared access between an exact fence and its RMW;
    * orderings the machine adds: an `atomic { }` block that stores (one fully ordered
      RMW), an array index computed at run time (ordered as smp_rmb()).
    """
    v = program.layout.lkmm
    assert isinstance(v, Views), "left_out reads an extended program (extend)"
    layout = program.layout
    names = [loc.name for loc in v.locations]
    out: list[str] = []
    succ: dict[tuple[int, int], set[int]] = {}  # (gid, uid) -> successor uids
    steps: dict[tuple[int, int], Step] = {}
    for p in program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            for st in p.steps:
                steps[(gid, st.uid)] = st
                succ[(gid, st.uid)] = {t.uid for op in walk_ops(st.body) if isinstance(op, OGoto)
                                       for t in p.steps_at[op.pc]}
    forms = {k: tuple(a for a in v.accesses.get(k, ()) if a is not None) for k in steps}

    def loads(k):
        return {j for a in forms[k] for j in a.view_reads | a.rmw}

    def stores(k):
        return {j for a in forms[k] for j in a.writes}

    def line(k):
        return steps[k].span.line

    def fenced(k):  # a full fence before the step's accesses
        return any(a.pre_mb for a in forms[k])

    def after(k, cut):
        """The steps po-after k (k's CPU), not beyond a step `cut` says stops the walk."""
        gid = k[0]
        seen: set[int] = set()
        todo = list(succ[k])
        while todo:
            u = todo.pop()
            if u in seen:
                continue
            seen.add(u)
            if not cut((gid, u)):
                todo.extend(succ[(gid, u)])
        return seen

    # who accesses each location, for the paths between CPUs
    storers: dict[int, set[tuple[int, int]]] = {}
    loaders: dict[int, set[tuple[int, int]]] = {}
    for k in steps:
        for j in stores(k):
            storers.setdefault(j, set()).add(k)
        for j in loads(k):
            loaders.setdefault(j, set()).add(k)
    reach_cache: dict[tuple[int, int], set[tuple[int, int]]] = {}

    def reaches(start):
        """Every (gid, uid) whose accesses can follow start's store through po and the
        communication of other CPUs (rf, co, fr)."""
        if start in reach_cache:
            return reach_cache[start]
        seen = {start}
        todo = [start]
        while todo:
            k = todo.pop()
            nxt = {(k[0], u) for u in after(k, lambda _k: False)}
            for j in stores(k):
                nxt |= {q for q in storers.get(j, set()) | loaders.get(j, set()) if q[0] != k[0]}
            for j in loads(k):
                nxt |= {q for q in storers.get(j, ()) if q[0] != k[0]}
            for q in nxt - seen:
                seen.add(q)
                todo.append(q)
        reach_cache[start] = seen
        return seen

    deps: dict[str, _Dependencies] = {}
    proc_of = {layout.gid_base[p.name] + i: p for p in program.processes for i in range(p.instances)}

    def deps_of(k) -> _Dependencies:
        p = proc_of[k[0]]
        if p.name not in deps:
            deps[p.name] = _Dependencies(p)
        return deps[p.name]

    def dependent(k, q):  # q's store ordered after k's loads by a dependency (rwdep)
        return q[1] in deps_of(k).ordered_after(k[1])

    def buffered(k, q, xs):
        """(k, q, x, y): q's store to y can reach another CPU's store to x, which k loads
        (one of xs); None when none can."""
        hit = [x for x in sorted(xs) if any(s[0] != k[0] for s in storers.get(x, ()))
               and any(x in stores(r) and r[0] != k[0] for r in reaches(q))]
        return (k, q, hit[0], min(stores(q))) if hit and stores(q) else None

    lb = None
    for k in sorted(steps):
        if lb is not None:
            break
        acquired = {j for a in forms[k] for j in a.acquire} | (
            {j for a in forms[k] for j in a.rmw} if all(a.rmw_acquire for a in forms[k]) else set())
        unordered = loads(k) - acquired
        if unordered - stores(k) and not composite(steps[k]) and not deps_of(k).within(steps[k]) \
                and not all(a.release for a in forms[k] if a.writes):
            lb = buffered(k, k, unordered - stores(k))  # a load and a store of one statement, unordered
            if lb is not None:
                break
        if not unordered or any(a.post_mb for a in forms[k]):
            continue
        for u in sorted(after(k, lambda q: fenced(q) or any(a.post_mb for a in forms[q]))):
            q = (k[0], u)
            if fenced(q) or all(a.release for a in forms[q] if a.writes) or dependent(k, q):
                continue
            lb = buffered(k, q, unordered)
            if lb is not None:
                break
    if lb is not None:
        k, q, x, y = lb
        out.append(f"load buffering ({layout.instance_names[k[0]]}'s load of {names[x]} at line {line(k)} and "
                   f"store to {names[y]} at line {line(q)}, unordered)")
    for j, loc in enumerate(v.locations):
        by = {k[0] for k in storers.get(j, ())}
        plain = {k[0] for k in storers.get(j, ()) for a in forms[k] if j in a.writes and j not in a.rmw}
        if len(by) >= 2 and plain:
            out.append(f"a store placed earlier in coherence order ({loc.name}, stored by {len(by)} CPUs)")
            break
    for j, loc in enumerate(v.locations):
        relaxed = {k for k in storers.get(j, ()) for a in forms[k]  # (a lock taken reads an unlock: lock.cat)
                   if j in a.rmw and not a.pre_mb and not a.release and not a.lock_mark}
        if any(any(s[0] != r[0] for s in storers[j]) for r in relaxed):
            r = min(relaxed)
            out.append(f"a release not carried through another CPU's relaxed RMW ({layout.instance_names[r[0]]}'s "
                       f"RMW of {loc.name} at line {line(r)})")
            break
    gaps = [line(k) for k in steps for a in forms[k] if a.fence_gap and not composite(steps[k])]
    for k in sorted(steps):
        for a in forms[k]:
            if a.before_atomic:
                for u in after(k, lambda q: fenced(q) or any(b.rmw_fence for b in forms[q])):
                    q = (k[0], u)
                    if (loads(q) or stores(q)) and not fenced(q) and not any(b.rmw_fence for b in forms[q]):
                        gaps.append(line(k))
    if gaps:
        out.append("an access between a fence and its RMW left unordered (line" + ("s " if len(set(gaps)) > 1 else " ")
                   + ", ".join(str(n) for n in sorted(set(gaps))) + ")")
    blocks = sorted({line(k) for k in steps if composite(steps[k]) and stores(k)})
    if blocks:
        out.append("an atomic block that stores less than fully ordered (line" + ("s " if len(blocks) > 1 else " ")
                   + ", ".join(str(n) for n in blocks) + ")")
    rmb = sorted({line(k) for k in steps for a in forms[k] if a.address})
    if rmb:
        out.append("an array load with a run-time index not ordered as smp_rmb() (line"
                   + ("s " if len(rmb) > 1 else " ") + ", ".join(str(n) for n in rmb) + ")")
    return tuple(out)


# ---------------------------------------------------------------- the steps


class Machine:
    """The wrapped step functions of one compiled model: each takes and returns a packed
    state as the compiled ones do. `unpack`/`pack` are the compiled model's; the inner
    step functions mark every global slot they store to in the bits from `marks` up."""

    #: normalise only the locations a step changed (settle); False: every location, always
    incremental = True

    def __init__(self, views: Views, layout: StateLayout, packing, marks: int, full: type[Exception]):
        self.v = views
        self.marks = marks
        self.mask = (1 << marks) - 1
        self.lo = packing.lo
        self.shift = packing.shift
        self.width_mask = tuple(packing.mask(k) for k in range(len(packing.shift)))
        self.full = full
        self.n = len(views.locations)
        self.none = views.bound
        self.size = len(layout.slots)
        # the machine's own slots sit after every other (ir layout, then `extend`): one
        # contiguous run of bits from `base`; the tracked memory slots are read and
        # written field by field. Nothing else of a state is unpacked.
        mine = [k for k, sl in enumerate(layout.slots) if sl.kind is SlotKind.VIEW]
        assert mine == list(range(mine[0], self.size)) if mine else True, "the machine's slots come last"
        self.first = mine[0] if mine else self.size
        self.base = packing.shift[mine[0]] if mine else packing.bits
        self.low = (1 << self.base) - 1
        self.machine_fields = tuple((k, packing.shift[k] - self.base, packing.mask(k), packing.lo[k]) for k in mine)
        self.memory_fields = tuple((loc.slot, packing.shift[loc.slot], packing.mask(loc.slot), packing.lo[loc.slot])
                                   for loc in views.locations)
        # where the part is not bytes (a slot wider than a byte, an offset), decoding it
        # field by field is memoised: far fewer distinct parts occur than states
        self.prefix = [0] * self.first
        self.decoded: dict[int, tuple[int, ...]] = {}
        self.shifts = tuple(sh for _, sh, _, _ in self.machine_fields)
        self.offsets = tuple(lo for *_, lo in self.machine_fields) if any(lo for *_, lo in self.machine_fields) \
            else None
        # a byte a slot from a byte boundary (backends/python.packing_of): the part is the
        # packed state's bytes, converted in C; else field by field
        self.bytewise = {packing.width[k] for k in mine} == {8} and self.base % 8 == 0 and self.offsets is None
        self.n_bytes = len(mine)
        # A step's effect on the machine depends on the machine's part of the state, what
        # the step stored and the stored locations' values before and after, the pcs
        # after it (dead views) and, with interrupts, the slots `raising` reads: `step`
        # and `propagate` memoise it by those few integers, the parts by a number each
        # (`parts`), so a step that recurs decodes and encodes nothing. All of it is
        # dropped together when it grows past its bound (`_fresh`).
        self.memory_mask = 0
        for _, sh, mk, _ in self.memory_fields:
            self.memory_mask |= mk << sh
        self.effects: dict[tuple, object] = {}
        self.substitutions: dict[tuple[int, int], tuple[int, int]] = {}
        self.part_ids: dict[int, int] = {}
        self.parts: list[int] = []
        self.canonical: set[int] = set()  # the parts `settle` made (not the initial state's)
        self.tracked_marks = sum(1 << loc.slot for loc in views.locations)
        self.written: dict[int, int] = {}  # a step's store marks on tracked locations -> their memory bits
        self.wrapped = 0  # a number per wrapped step function: its memo entries' key
        self.lags = tuple(views.lag_fields(j) for j in range(self.n))
        # per location, the readers' current views, and every other lag field on it
        self.reading = tuple(tuple(cpu.cur[j] for cpu in views.cpus if cpu.gid in loc.readers)
                             for j, loc in enumerate(views.locations))
        self.constraints = tuple(tuple(f for f in self.lags[j] if f not in self.reading[j]) for j in range(self.n))
        # per byte of the part (a machine slot), what normalising makes of it: per location,
        # READER (a reader's current view of it: the oldest message read may move), LAG (a
        # constraint on it, checked against that), HISTORY (one of its older messages)
        roles: list[list[tuple[int, str]]] = [[] for _ in mine]
        for j, loc in enumerate(views.locations):
            for role, slots in ((_READER, self.reading[j]), (_LAG, self.constraints[j]),
                                (_HISTORY, loc.old + tuple(x for row in loc.views + loc.strong for x in row))):
                for f in slots:
                    roles[f - self.first].append((j, role))
        self.roles = tuple(tuple(r) for r in roles)
        # dead view slots (Views.live), by the instances' pcs, which are neighbouring bit fields
        self.users = tuple((packing.shift[slot], packing.mask(slot), packing.lo[slot], table)
                           for slot, table in views.live.values())
        self.tracked = tuple((c.gid, fields_of(c), frozenset(c.cur)) for c in views.cpus) if views.lazy else ()
        pcs = sorted(slot for slot, _ in views.live.values())
        self.pc_shift = packing.shift[pcs[0]] if pcs else 0
        self.pc_mask = (1 << (packing.shift[pcs[-1]] + packing.width[pcs[-1]] - self.pc_shift)) - 1 if pcs else 0
        self.dead: dict[int, tuple[tuple[int, int], ...]] = {}

    def _decode(self, hi: int) -> tuple[int, ...] | bytes:
        """The machine's slots, from the machine's part of a packed state (s >> base)."""
        if self.bytewise:  # (in C: no memo)
            return hi.to_bytes(self.n_bytes, "little")
        mine = self.decoded.get(hi)
        if mine is None:
            if len(self.decoded) >= _MEMO:
                self.decoded.clear()
            mine = self.decoded[hi] = tuple((hi >> sh & mk) + lo for _, sh, mk, lo in self.machine_fields)
        return mine

    def load(self, s: int) -> list:
        """The machine's slots and the tracked memory of packed state s, by slot number
        (the other slots read 0: only the compiled step reads them, from s)."""
        t = self.prefix + list(self._decode(s >> self.base))
        for k, sh, mk, lo in self.memory_fields:
            t[k] = (s >> sh & mk) + lo
        return t

    def raw(self, t: list) -> int:
        """The machine's slots of t packed as they are (not yet canonical): the machine's
        part of a state, before `settle`. (The fields do not overlap, so their sum is
        their union; map and sum run in C.)"""
        mine = t[self.first:]
        if self.bytewise:
            return int.from_bytes(bytes(mine), "little")
        fields = mine if self.offsets is None else map(sub, mine, self.offsets)
        return sum(map(lshift, fields, self.shifts))

    def part(self, hi: int) -> int:
        """The number of machine part `hi` (a number each, for the memos' keys)."""
        i = self.part_ids.get(hi)
        if i is None:
            i = self.part_ids[hi] = len(self.parts)
            self.parts.append(hi)
        return i

    def _canonical(self, hi: int) -> int:
        """`part`, for a part `settle` made canonical."""
        i = self.part(hi)
        self.canonical.add(i)
        return i

    def _fresh(self) -> None:
        """Drop every memo that names parts by number, once one outgrows its bound (only
        between two steps: no number is held then)."""
        if len(self.effects) >= _EFFECTS or len(self.parts) >= _PARTS or len(self.substitutions) >= _EFFECTS:
            self.effects.clear()
            self.substitutions.clear()
            self.part_ids.clear()
            self.parts.clear()
            self.canonical.clear()

    def settle(self, r: int, t: list, was: int | None = None) -> int:
        """The number of t's machine part made canonical in successor r: the view slots
        no instance may read again from its pc in r dead (dead_at), then normalise.
        `was`: the canonical part t was made from, so that only the locations whose
        slots differ from it are normalised again (bytewise parts only)."""
        key = r >> self.pc_shift & self.pc_mask
        dead = self.dead.get(key)
        if dead is None:
            if len(self.dead) >= _MEMO:
                self.dead.clear()
            dead = self.dead[key] = self.dead_at(r)
        for f, x in dead:
            t[f] = x
        if was is None or not self.bytewise or not self.incremental:
            self.normalise(t)  # (reads and writes the machine's slots only)
            return self._canonical(self.raw(t))
        now = self.raw(t)
        changed = ((now ^ was).to_bytes(self.n_bytes, "little")).translate(_NONZERO)
        # a location none of whose slots changed was canonical in `was` and stays so (what
        # normalising another writes into its slots is NONE, which it keeps); of one whose
        # readers' views did not change, only the changed lags are checked again
        redo: dict[int, list[int] | None] = {}  # location -> the lags to check (None: all)
        history: set[int] = set()
        first, roles = self.first, self.roles
        i = changed.find(1)
        while i >= 0:
            for j, role in roles[i]:
                if role is _LAG:
                    lags = redo.setdefault(j, [])
                    if lags is not None:
                        lags.append(i + first)
                elif role is _READER:
                    redo[j] = None
                else:
                    history.add(j)
                    redo.setdefault(j, [])
            i = changed.find(1, i + 1)
        if not redo:
            return self._canonical(now)
        self.normalise_at(t, redo, history)
        return self._canonical(self.raw(t))

    def dead_at(self, s: int) -> tuple[tuple[int, int], ...]:
        """(slot, canonical value) of every view slot no instance may read again from its
        pc in s (Views.live): a current view reads the newest store (0), which no store
        waits for and no propagation moves; any other says "no constraint"."""
        live: dict[int, set[int]] = {}
        for sh, mk, lo, table in self.users:
            for v, slots in table[(s >> sh & mk) + lo].items():
                live.setdefault(v, set()).update(slots)
        none = self.none
        return tuple((f, 0 if f in cur else none) for v, fields, cur in self.tracked
                     for f in fields if f not in live.get(v, ()))

    # -- views
    def join_into(self, t: list, dst: tuple[int, ...], src: tuple[int, ...]):
        for d, s_ in zip(dst, src):
            if t[s_] < t[d]:
                t[d] = t[s_]

    def join_message(self, t: list, dst: tuple[int, ...], j: int, lag: int):
        """Both views of location j's message at `lag` into `dst`."""
        self.join_into(t, dst, self.v.locations[j].views[lag])
        self.join_into(t, dst, self.v.locations[j].strong[lag])

    def observe(self, t: list, c: CpuViews, j: int, lag: int):
        """A load of that message: what it published reaches c's acquire view, and what
        strong fences published before it reaches c's strong view."""
        self.join_message(t, c.acq, j, lag)
        self.join_into(t, c.strong, self.v.locations[j].strong[lag])

    def mb(self, t: list, c: CpuViews):
        self.join_into(t, c.cur, c.acq)
        self.join_into(t, c.cur, self.v.gsc)
        for d, s_ in zip(self.v.gsc, c.cur):
            t[d] = t[s_]
        for d, s_ in zip(c.rel, c.cur):
            t[d] = t[s_]
        self.join_into(t, c.strong, c.cur)

    def wmb(self, t: list, c: CpuViews):
        for d, s_ in zip(c.rel, c.own):
            if s_ is not None and t[s_] < t[d]:
                t[d] = t[s_]

    def normalise(self, t: list):
        """Drop the messages no reader may read, and say "no constraint" (NONE) for every
        constraint a reader's view already meets.

        Every lag other than a reader's current view (acquire, release, own, strong and
        SC views, the views messages carry, a non-reader's view) acts only through a
        join (a minimum) into some CPU's view. A reader's view only moves newer, and a
        store shifts every lag on its location alike, so a constraint at or past the
        oldest message any reader reads now is met by every reader for ever: it is
        NONE. Equal behaviours are then equal states."""
        self.normalise_at(t, dict.fromkeys(range(self.n)))

    def normalise_at(self, t: list, redo: dict[int, list[int] | None], history: set[int] | None = None) -> None:
        """`normalise` on the locations of `redo` (in increasing order): of each, the lags
        `redo` lists (None: every lag); its history is dropped past the oldest message
        read where every lag is checked or the location is in `history`."""
        none = self.none
        every = self.v.locations
        for j in sorted(redo):
            loc = every[j]
            lags = redo[j]
            oldest = max((t[f] for f in self.reading[j]), default=0)
            for f in self.constraints[j] if lags is None else lags:
                if t[f] >= oldest:
                    t[f] = none
            if lags is None or (history is not None and j in history):
                for k in range(oldest + 1, none):
                    t[loc.old[k - 1]] = self.lo[loc.old[k - 1]]
                    for f in loc.views[k]:
                        t[f] = none
                    for f in loc.strong[k]:
                        t[f] = none

    def store(self, t: list, c: CpuViews, j: int, value: int, acc: Access):
        """Append a message to location j's history: the new newest."""
        v = self.v
        loc = v.locations[j]
        none = self.none
        for r in loc.readers:
            if r == c.gid:
                continue
            reader = v.cpu(r)
            assert reader is not None, "a location's readers are CPUs' views"
            if t[reader.cur[j]] >= none - 1:
                raise self.full()  # that reader still needs the oldest message kept
        base = c.cur if acc.release else c.rel
        view = [t[f] for f in base]
        if j in acc.rmw:  # the rmw-sequence: the view of the message read travels on
            for jj, f in enumerate(loc.views[0]):
                if t[f] < view[jj]:
                    view[jj] = t[f]
        view[j] = 0
        # shift the history: lag i - 1 becomes lag i (the oldest drops: no reader needs it)
        for i in range(none - 1, 0, -1):
            t[loc.old[i - 1]] = t[loc.old[i - 2]] if i >= 2 else t[loc.slot]
            for a, b in zip(loc.views[i], loc.views[i - 1]):
                t[a] = t[b]
            for a, b in zip(loc.strong[i], loc.strong[i - 1]):
                t[a] = t[b]
        # every lag on location j grows by one
        for f in self.lags[j]:
            if t[f] < none:
                t[f] += 1
        for f, x in zip(loc.views[0], view):
            t[f] = x
        for f, s_ in zip(loc.strong[0], c.strong):  # (after the shift: c's lags on j grew too)
            t[f] = t[s_]
        t[loc.slot] = value
        t[c.cur[j]] = 0
        own = c.own[j]
        if own is not None:
            t[own] = 0

    def timer_base(self, t: list, c: CpuViews, sig: Signal, s: int):
        """A step that takes hrtimer sig.timer's clock base lock (hrtimer_start, a cancel;
        `s` the state before it): with the callback not running it is ordered after the
        callback's return (Signal.done), and with the timer queued after the start that
        queued it (its view, sig.cur)."""
        sh, mk, lo = self.shift, self.width_mask, self.lo
        if (s >> sh[sig.pc] & mk[sig.pc]) in sig.idle:
            self.join_into(t, c.cur, sig.done)
        if any((s >> sh[k] & mk[k]) + lo[k] for k in sig.raised):
            self.join_into(t, c.cur, sig.cur)

    def raising(self, t: list, c: CpuViews, gid: int, s: int, r: int, stored: int, signals: tuple[Signal, ...],
                acc: Access):
        """Interrupts a step raised or took (`s` before it, `r` after): a handler's entry
        (its pending flag cleared by its own step) joins what the raise published into its
        CPU's view; a store of 1 to a raising flag publishes the raiser's view (after the
        full barrier an IPI is sent behind); a flag cleared by anyone else (a cancel) no
        longer constrains the next entry. A VM exit (the CPU's `guest_mode` cleared) takes
        the interrupts pending on its CPU too: it joins what they published, and their
        handlers still join it when they run."""
        sh, mk, lo = self.shift, self.width_mask, self.lo
        g = self.v.guest.get(c.gid)
        if g is not None and (s >> sh[g] & mk[g]) + lo[g] and not (r >> sh[g] & mk[g]) + lo[g]:
            for sig in signals:
                if sig.cpu == c.gid and (r >> sh[sig.pending] & mk[sig.pending]) + lo[sig.pending]:
                    self.join_into(t, c.cur, sig.cur)
                    self.join_into(t, c.strong, sig.cur)
                    self.join_into(t, c.strong, sig.strong)
        for sig in signals:
            if sig.timer and sig.timer in acc.timer_lock and gid != sig.taker:
                self.timer_base(t, c, sig, s)
            elif sig.done and gid == sig.taker and (s >> sh[sig.pc] & mk[sig.pc]) not in sig.idle \
                    and (r >> sh[sig.pc] & mk[sig.pc]) in sig.idle:  # the callback returns
                for d, s_ in zip(sig.done, c.own):
                    if s_ is not None and t[s_] < t[d]:
                        t[d] = t[s_]
            if gid == sig.taker and (s >> sh[sig.pending] & mk[sig.pending]) + lo[sig.pending] \
                    and not (r >> sh[sig.pending] & mk[sig.pending]) + lo[sig.pending]:
                self.join_into(t, c.cur, sig.cur)
                self.join_into(t, c.strong, sig.cur)
                self.join_into(t, c.strong, sig.strong)
                if not any((r >> sh[k] & mk[k]) + lo[k] for k in sig.flight):  # another raise on its way keeps it
                    for f in sig.cur + sig.strong:
                        t[f] = self.none
            if any(stored >> k & 1 and (r >> sh[k] & mk[k]) + lo[k] for k in sig.raised):
                self.join_into(t, sig.cur, c.cur)
                self.join_into(t, sig.strong, c.strong)
            elif not any((r >> sh[k] & mk[k]) + lo[k] for k in sig.raised):
                for f in sig.cur + sig.strong:
                    t[f] = self.none

    def step(self, inner, c: CpuViews, acc: Access, failure: bool, gid: int = -1,
             signals: tuple[Signal, ...] = ()):
        """The machine's step around one compiled step of CPU `c` (for instance `gid`,
        which may raise or take the interrupts `signals`)."""
        marks, mask = self.marks, self.mask
        locs = self.v.locations
        fields = self.memory_fields
        conditional = acc.conditional_slots

        ba, aa, al = c.before_atomic, c.after_rmw, c.after_lock
        fenced = acc.pre_mb
        pending = [f for f, on in ((ba, acc.rmw_fence), (aa, acc.after_rmw_fence), (al, acc.after_lock_fence))
                   if on and f is not None]
        flags = [f for f in (ba, aa, al) if f is not None]

        def before(t: list) -> None:
            """The fences and joins ahead of the access (they read the machine's slots only)."""
            if fenced or any(t[f] for f in pending):
                self.mb(t, c)
                for f in flags:  # a full fence subsumes every pending one
                    t[f] = 0
            elif acc.rmb:
                self.join_into(t, c.cur, c.acq)
            if acc.wmb:
                self.wmb(t, c)
            for j in acc.acquire:
                self.join_message(t, c.cur, j, t[c.cur[j]])
            if acc.rmw_acquire:
                for j in acc.rmw:
                    self.join_message(t, c.cur, j, 0)
            if acc.lock_mark:  # po-unlock-lock-po (lock.cat): ordered as ppo, and in cumul-fence
                self.join_into(t, c.cur, c.unlocked_acq)  # (empty when the CPU never unlocks)
                self.join_into(t, c.rel, c.unlocked)
                for j in acc.rmw:  # ... through rf: what the unlock it reads published
                    self.join_into(t, c.rel, locs[j].views[0])
            for j in acc.rmw:
                t[c.cur[j]] = 0

        def substitution(t: list) -> tuple[int, int]:
            """(bits to clear, bits to set): the stale values the step's loads read, put in
            place of the newest ones for the compiled step."""
            clear = put = 0
            for j in acc.view_reads:
                lag = t[c.cur[j]]
                if lag:
                    _, sh, mk, lo = fields[j]
                    clear |= mk << sh
                    put |= (t[locs[j].old[lag - 1]] - lo) << sh
            return clear, put

        def after(t: list, s: int, r: int, stored: int) -> None:
            """What the access publishes and what its loads observed (t after `before`)."""
            written = [j for j, loc in enumerate(locs) if stored >> loc.slot & 1]
            for j in acc.view_reads:
                self.observe(t, c, j, t[c.cur[j]])
            for j in acc.rmw:
                self.observe(t, c, j, 0)
            for j in written:
                _, sh, mk, lo = fields[j]
                self.store(t, c, j, (r >> sh & mk) + lo, acc)
            if acc.unlock:
                for d, s_ in zip(c.unlocked, c.cur):
                    t[d] = t[s_]
                for d, s_ in zip(c.unlocked_acq, c.acq):
                    t[d] = t[s_]
            if acc.rmw_mark and aa is not None:
                t[aa] = 1
            if acc.lock_mark and al is not None:
                t[al] = 1
            if acc.post_mb:
                self.mb(t, c)
                for f in flags:
                    t[f] = 0
            if acc.before_atomic and ba is not None:
                t[ba] = 1
            if signals:
                self.raising(t, c, gid, s, r, stored, signals, acc)

        # the memo's key: this function's number, the machine's part's, what was stored and
        # the stored locations' values before and after, the slots `raising` reads
        # (interrupts) and the pcs after the step (dead views)
        form = self.wrapped = self.wrapped + 1
        base, low, memory = self.base, self.low, self.memory_mask
        seen = self._signal_mask(signals, c)
        pcs_at, pcs_mask = self.pc_shift, self.pc_mask
        effects: dict[tuple, object] = self.effects
        substitutions, parts, canonical = self.substitutions, self.parts, self.canonical
        written, tracked = self.written, self.tracked_marks

        def run(s):
            self._fresh()
            part = self.part(s >> base)
            sub = substitutions.get((form, part))
            if sub is None:
                t = self.load(s)
                before(t)
                sub = substitutions[(form, part)] = substitution(t)
            r = inner(s & ~sub[0] | sub[1])
            if r is None:
                return None
            stored = r >> marks
            r &= mask
            wrote = written.get(stored & tracked)
            if wrote is None:
                wrote = written[stored & tracked] = self._written(stored)
            key = (form, part, s & wrote, r & wrote, stored, s & seen, r & seen, r >> pcs_at & pcs_mask)
            effect = effects.get(key)
            if effect is None:
                if failure and any(stored >> k & 1 for k in conditional):
                    # that was a success, which reads the newest message: the other form (a
                    # location only this CPU touches is not tracked, but its store is marked too)
                    effect = _FAILED
                else:
                    t = self.load(s)
                    before(t)
                    try:
                        after(t, s, r, stored)
                        effect = self.settle(r, t, s >> base if part in canonical else None)
                    except self.full:
                        effect = _FULL
                effects[key] = effect
            if effect is _FAILED:
                return None
            if effect is _FULL:
                raise self.full()
            assert isinstance(effect, int)
            # the tracked memory: the stores' new values (r's), the rest as it was (s's: r
            # has the stale values the loads read there)
            return (r & low & ~memory) | (s & memory & ~wrote) | (r & wrote) | parts[effect] << base

        return run

    def _written(self, stored: int) -> int:
        """The bits of the tracked locations whose store marks are set in `stored`."""
        out = 0
        for loc, (_, sh, mk, _) in zip(self.v.locations, self.memory_fields):
            if stored >> loc.slot & 1:
                out |= mk << sh
        return out

    def _signal_mask(self, signals: tuple[Signal, ...], c: CpuViews) -> int:
        """The bits of every slot `raising` (and `timer_base`) reads, in a state before or
        after a step that may raise or take `signals` on CPU c; 0 without signals."""
        if not signals:
            return 0
        slots = {sig.pending for sig in signals} | {k for sig in signals for k in sig.raised + sig.flight}
        slots |= {sig.pc for sig in signals if sig.pc >= 0}
        g = self.v.guest.get(c.gid)
        if g is not None:
            slots.add(g)
        out = 0
        for k in slots:
            out |= self.width_mask[k] << self.shift[k]
        return out

    def steps(self, inner, gid: int, uid: int, name: str) -> list:
        """(name, packed function) of each form of one compiled step under the machine."""
        slot, ids = self.v.places.get((gid, uid), (None, (gid,)))
        cpus = [self.v.cpu(i) for i in ids]
        mask = self.mask

        def plain(s):
            r = inner(s)
            return None if r is None else r & mask

        if all(c is None for c in cpus):  # touches no shared location: only the marks to drop
            return [(name, plain)]
        acc, fail = self.v.accesses[(gid, uid)]
        signals = tuple(sig for sig in self.v.signals if sig.taker == gid or sig.flags & acc.flags
                        or m.GUEST_MODE in acc.flags and sig.cpu in ids)
        out = []
        for form, a, failure in ((name, acc, False), (name + "_fails", fail, True)):
            if a is None:
                continue
            # (on a CPU whose views no step needs: nothing to read or publish there)
            runs = [plain if c is None else self.step(inner, c, a, failure, gid, signals) for c in cpus]
            if slot is None:
                out.append((form, runs[0]))
            else:  # a thread that may migrate: the views of the CPU it is on now
                out.append((form, self.on_its_cpu(slot, runs)))
        return out

    def on_its_cpu(self, slot: int, runs: list):
        """A step of a thread that may migrate: the form for the CPU its `cpu` (`slot`) names."""
        sh, mk, lo = self.shift[slot], self.width_mask[slot], self.lo[slot]

        def run(s):
            return runs[(s >> sh & mk) + lo](s)

        return run

    def propagate(self, c: CpuViews, j: int, pcs: dict):
        """CPU c's view of location j moves one message newer.

        Lazily (Views.lazy), only where that can matter: when c's next step reads, joins
        or resets that view (Access.consults), or when c reads the oldest message kept
        while another CPU is about to store there (the store waits for the move).
        Elsewhere a move commutes with every step, so moving it later, to where it
        matters, reaches the same states but for c's view, which nothing else reads:
        the same invariants, deadlocks and final states. For liveness the lazy move is
        strongly fair (liveness.py): a view that matters infinitely often moves
        infinitely often, which is what weak fairness of an eager move gives, and a run
        that never needs the view is fair either way (spec/LANGUAGE.md, "memory lkmm").
        `pcs`: gid -> (shift, mask, steps by pc) of each CPU's program counter."""
        cur = c.cur[j]
        none = self.none
        cur_sh, cur_mk, cur_lo = self.shift[cur], self.width_mask[cur], self.lo[cur]
        places = self.v.places
        users = []  # (pc shift, pc mask, pcs where it matters) of each instance whose steps may use c's views
        writers = []  # (pc shift, pc mask, pcs that store to j) of every instance that may run on another CPU
        for d, (sh, mk, at_d) in pcs.items():
            here = lambda uid, d=d: c.gid in places.get((d, uid), (None, (d,)))[1]  # noqa: E731
            only_here = lambda uid, d=d: places.get((d, uid), (None, (d,))) == (None, (c.gid,))  # noqa: E731
            matters = frozenset(pc for pc, at in enumerate(at_d)
                                if any(here(st.uid) and j in acc.consults(self.n)
                                       for st in at for acc in self.forms(d, st.uid)))
            storing = frozenset(pc for pc, at in enumerate(at_d)
                                if any(not only_here(st.uid) and j in acc.writes
                                       for st in at for acc in self.forms(d, st.uid)))
            if matters:
                users.append((sh, mk, matters))
            if storing:
                writers.append((sh, mk, storing))
        lazy = self.v.lazy
        base, keep = self.base, self.low
        form = self.wrapped = self.wrapped + 1
        pcs_at, pcs_mask = self.pc_shift, self.pc_mask
        effects: dict[tuple, object] = self.effects
        parts = self.parts

        def run(s):
            lag = (s >> cur_sh & cur_mk) + cur_lo
            if lag == 0 or lag >= none:
                return None
            if lazy and not any((s >> sh & mk) in at for sh, mk, at in users) and (
                    lag < none - 1 or not any((s >> sh & mk) in at for sh, mk, at in writers)):
                return None
            self._fresh()
            part = self.part(s >> base)
            key = (form, part, s >> pcs_at & pcs_mask)
            moved = effects.get(key)
            if moved is None:
                t = self.load(s)
                t[cur] -= 1
                moved = effects[key] = self.settle(s, t, s >> base if part in self.canonical else None)
            assert isinstance(moved, int)
            return (s & keep) | parts[moved] << base

        return run

    def forms(self, gid: int, uid: int) -> tuple[Access, ...]:
        """The Access of a step of CPU gid, and of its failure when it has one."""
        got = self.v.accesses.get((gid, uid))
        return () if got is None else tuple(a for a in got if a is not None)


@record
class Propagation:
    """The actor that moves one CPU's view of one location (compile.CompiledFlush.buffer
    under lkmm): `propagate x to cpu` in traces."""

    cpu: str
    location: str
    index: int  # the location's index in Views.locations

    @property
    def name(self) -> str:
        return f"propagate {self.location} to {self.cpu}"


def propagation_text(views: Views, what: Propagation, before, after, value) -> str:
    """A propagation step as a trace says it: which store the CPU reads from now on.
    `value(slot, raw)` shows a slot's value."""
    cpu = views.cpu(next(c.gid for c in views.cpus if c.name == what.cpu))
    assert cpu is not None  # found by its name among the CPUs' views
    loc = views.locations[what.index]
    lag = after[cpu.cur[what.index]]
    shown = value(loc.slot, after[loc.slot] if lag == 0 else after[loc.old[lag - 1]])
    text = f"propagate {loc.name} = {shown} to {what.cpu}"
    return text + ("" if lag == 0 else f" (still {lag} store{'s' if lag > 1 else ''} behind memory)")


def stale_reads(views: Views, gid: int, uid: int, failed: bool, before, after, value) -> str:
    """What a step of CPU `gid` read from an older store than memory's, as a trace says
    it: which store it read, and why it could (the newer one had not reached it)."""
    cpu = views.view_of(gid, uid, before)
    if cpu is None or (gid, uid) not in views.accesses:
        return ""
    acc, fail = views.accesses[(gid, uid)]
    acc = fail if failed and fail is not None else acc
    notes = []
    for j in sorted(acc.view_reads):
        loc = views.locations[j]
        lag = before[cpu.cur[j]]
        if 0 < lag < views.bound:
            old, new = value(loc.slot, before[loc.old[lag - 1]]), value(loc.slot, before[loc.slot])
            notes.append(f"read {loc.name} = {old}, an older store than memory's {new}: the newer store had "
                         f"not propagated to {cpu.name}, and nothing {cpu.name} had read or fenced required it"
                         + (" (a failed cmpxchg orders nothing)" if failed else ""))
    return "; ".join(notes)


def step_notes(views: Views, gid: int, uid: int, failed: bool, cas_failed: bool, branch: bool | None, before,
               value) -> str:
    """A step's trace note under the machine, as the sc trace has it: whether a branch
    was taken (`branch`, None for a step that is not one) with the values it read
    through the view, that a cmpxchg failed (`failed`: the failure form that reads the
    view; `cas_failed`: any failure), and which older store it read."""
    notes = []
    cpu = views.view_of(gid, uid, before)
    acc = None
    if cpu is not None and (gid, uid) in views.accesses:
        acc, fail = views.accesses[(gid, uid)]
        acc = fail if failed and fail is not None else acc
    if branch is not None:
        reads = []
        if acc is not None and cpu is not None:  # (an access is found only for a step with views)
            for j in sorted(acc.view_reads):
                loc = views.locations[j]
                lag = before[cpu.cur[j]]
                if not 0 < lag < views.bound:  # the newest store: stale_reads says nothing of it
                    reads.append(f"{loc.name} = {value(loc.slot, before[loc.slot])}")
        notes.append(("taken" if branch else "not taken") + (": " + ", ".join(reads) if reads else ""))
    if cas_failed:
        notes.append("cmpxchg failed: it read another value than it expected, and stored nothing")
    stale = stale_reads(views, gid, uid, failed, before, None, value)
    if stale and notes and notes[-1] in ("taken", "not taken"):  # the branch tested what it read
        notes[-1] += ": " + stale
    elif stale:
        notes.append(stale)
    return "; ".join(notes)


def meaning(p) -> str:
    """What a primitive (a builtins.Primitive) does under the machine, in one phrase:
    every primitive has one (tests/test_lkmm_operational.py)."""
    order = {Order.FULL: "smp_mb(); {} of the newest store; smp_mb()",
             Order.ACQUIRE: "{} of the newest store, whose views its CPU joins (acquire)",
             Order.RELEASE: "{} of the newest store, publishing its CPU's whole view (release)",
             Order.RELAXED: "{} of the newest store, unordered", Order.NONE: "{}"}
    if p.cls is Cls.PURE:
        return "no memory access"
    if p.cls in (Cls.LOAD, Cls.WQ_TEST):
        return "a load through its CPU's view" + (", joining the read store's views (acquire)"
                                                   if p.order is Order.ACQUIRE else ", unordered")
    if p.cls is Cls.STORE:
        return {Order.RELEASE: "a release store: it publishes its CPU's whole view",
                Order.FULL: "a store, then smp_mb()"}.get(p.order, "a store: it publishes what smp_wmb/smp_mb released")
    if p.cls is Cls.FENCE:
        return {FenceKind.FULL: "an SC fence",
                FenceKind.BEFORE_ATOMIC: "an SC fence before its CPU's next RMW (a failed cmpxchg included); "
                                         "nothing without one",
                FenceKind.AFTER_ATOMIC: "an SC fence when an RMW stands before it since its CPU's last full "
                                        "fence; nothing otherwise",
                FenceKind.AFTER_SPINLOCK: "an SC fence when a lock acquisition stands before it since its CPU's "
                                          "last full fence; nothing otherwise",
                FenceKind.READ: "joins what earlier loads saw into the CPU's view",
                FenceKind.WRITE: "later stores publish the CPU's earlier stores",
                FenceKind.COMPILER: "nothing"}[p.fence]
    if p.cls is Cls.SCHEDULE:
        return "an SC fence (the runqueue lock)"
    text = order[p.order].format("a read-modify-write" if p.cls is not Cls.LOCK else "waits for and takes the lock: "
                                 "a read-modify-write")
    if p.failure_order is not None:
        text += "; if it fails, a load through its CPU's view, unordered"
    return text
