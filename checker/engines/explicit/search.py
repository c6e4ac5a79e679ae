"""The explicit engine: breadth-first search over the product of all processes.

States are tuples of small ints, stored once in insertion order; because the search is
breadth-first, that order is the queue, and the parent links give a shortest trace to
every state. All invariants, assertions and the deadlock check are evaluated in one
pass; each property keeps the first (hence shortest) counterexample found for it.

On request (`graph=True`) the search also keeps every transition with the process
instance that took it, and which instances could move in each state: the liveness
engine (engines/liveness.py) works on that graph instead of searching a second time.

Under tso, store-buffer flushes are steps like any other: their table is indexed by the
buffer's oldest address slot instead of a pc. `final` conditions are checked in final
states (no process can move, every process at a valid end, every buffer empty), which
are also counted.
"""

from __future__ import annotations

import operator
import os
import time
from array import array
from dataclasses import dataclass, field
from collections.abc import Sequence
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ... import ir
from ...semantics.lower import Cas, lower
from ... import model as m
from ...backends.python import (AssertionViolation, CompiledFlush, CompiledModel, CompiledStep, ModelError,
                                StoreBufferFull)
from ...base.progress import Progress
from ...results.trace import (MEMORY, Action, Counterexample, StateDecoder, StateSpace, Stats, Trace, TraceState,
                               changes, show_value)
from .fastloop import DONE, FULL, INTERRUPTED, OWNER_MOD, LevelLoopWriter, LoopShape, actor_tables
from ...base.record import record

if TYPE_CHECKING:
    from ...backends.c import AmpleTables


@record
class Limits:
    max_states: int | None = None
    max_depth: int | None = None
    check_deadlock: bool = True
    # stop after the level at which every one of these properties has its (shortest)
    # counterexample: the pipeline's search for the traces of a reduced search's violations
    until_found: frozenset[str] = frozenset()


class UnpackedStates(Sequence):
    """The graph's states as tuples, unpacked when asked for: a tuple per state costs a
    pointer per slot, which under lkmm is many times the packed state."""

    __slots__ = ("packed", "unpack")

    def __init__(self, packed: list[int], unpack: Callable):
        self.packed = packed
        self.unpack = unpack

    def __len__(self) -> int:
        return len(self.packed)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.unpack(s) for s in self.packed[i]]
        return self.unpack(self.packed[i])


@record
class StateGraph:
    """The explored state graph, in compact arrays (states are numbered in BFS order).

    Only states[:expanded] had every step tried: their `enabled` masks are exact and
    their edges complete, except that a state at the depth limit has no edges to the
    new states it would have reached. Edges of state i are dst/step[first[i]:first[i+1]].
    `states` unpacks `states.packed` on demand.
    """

    states: UnpackedStates
    initial: int  # states[:initial] are the initial states
    expanded: int
    first: array  # len expanded + 1
    dst: array  # target state of each edge
    step: array  # index into `steps` of each edge
    steps: tuple[CompiledStep | CompiledFlush, ...]  # (tso: flushes are actors with steps of their own)
    enabled: array  # per expanded state: bit `gid` set iff that instance has an enabled step

    def edges(self, i: int):
        """(target, CompiledStep) for each transition out of expanded state i."""
        dst, step, steps = self.dst, self.step, self.steps
        return [(dst[k], steps[step[k]]) for k in range(self.first[i], self.first[i + 1])]


class FairCycles(Protocol):
    """The liveness engine's fair-cycle check in C, as the native loop's library offers
    it (native.Library; backends/c.py's _LIVENESS): defined here, below both."""

    @property
    def liveness(self) -> int:
        """How many liveness properties the library's check knows."""

    def live_marks(self, p: int, states: array, n: int) -> tuple[array, array] | None: ...

    def fair_components(self, n: int, first: array, dst: array, step: array, enabled: array, stepbits: array,
                        fair: int, bad: array, seeds: array) -> tuple[array, int, int]: ...

    def stem(self, n: int, initial: int, first: array, dst: array, seeds: array,
             comp: array) -> tuple[int, array, array]: ...


@dataclass
class Exploration:
    """What a search found: statistics, and per property the shortest counterexample."""

    stats: Stats
    counterexamples: dict[str, Counterexample] = field(default_factory=dict)
    model_error: Counterexample | None = None
    graph: StateGraph | None = None
    # coverage as the search recorded it (`Search.marks`, `Search.held`), and a digest of
    # the stored states (`states_digest`); None when not asked for
    marks: tuple | None = None  # (step, mark) pairs
    held: tuple[bool, ...] = ()
    digest: int | None = None
    # the native loop's library when it ran: the liveness engine's fair-cycle check
    # runs in it too
    native: FairCycles | None = None


def _branch_taken(step, pc_after: int) -> bool | None:
    """Whether a branch step went to its `then` side, read off the pc it reached (under
    lkmm the condition read the CPU's view, which a trace state does not hold)."""
    if step.kind is not ir.StepKind.BRANCH or not step.body or not isinstance(step.body[0], ir.OIf):
        return None
    then = [op.pc for op in step.body[0].then if isinstance(op, ir.OGoto)]
    orelse = [op.pc for op in step.body[0].orelse if isinstance(op, ir.OGoto)]
    if then and orelse and then[0] != orelse[0]:
        return pc_after == then[0]
    return None


def decoder_for(cm: CompiledModel) -> StateDecoder:
    return StateDecoder(cm.layout, {inst.name: inst.process.pc_names for inst in cm.instances})


class TraceBuilder:
    """Rebuilds decoded traces from state tuples and the compiled steps between them."""

    def __init__(self, cm: CompiledModel):
        self.cm = cm
        self.decoder = decoder_for(cm)
        self.by_gid = {inst.gid: inst for inst in cm.instances}
        self._slots: dict[str, int] | None = None  # lkmm traces: variable name -> its slot, for a cmpxchg's operands
        self._decoded: dict[tuple, TraceState] | None = None  # within one `trace`: each state decoded once, not thrice

    def action(self, step: CompiledStep | CompiledFlush, before, after, kind: str = "step") -> Action:
        if isinstance(step, CompiledFlush):
            return self.flush_action(step, before, after)
        inst = self.by_gid[step.gid]
        pcs = inst.process.pc_names
        b = self.decode(before)
        pc_to = pcs[after[inst.pc_slot]] if after is not None else pcs[before[inst.pc_slot]]
        ch = changes(b, self.decode(after)) if after is not None else ()
        detail = ""
        views = self.cm.views
        if views is not None:  # lkmm: the branch, a failed cmpxchg, which older store a load read
            from ...memory.lkmm import step_notes as lkmm_step_notes

            stale_form = step.name.endswith("_fails")  # the form of a failed cmpxchg that reads its view
            detail = lkmm_step_notes(views, step.gid, step.step.uid, stale_form,
                                     stale_form or self.cas_failed(inst, step.step, before),
                                     _branch_taken(step.step, after[inst.pc_slot]) if after is not None else None,
                                     before, lambda k, raw: show_value(self.decoder.value(k, raw)))
        return Action(inst.name, step.step.span, step.step.text, pcs[before[inst.pc_slot]], pc_to,
                      ch, kind, step.step.inline, detail)

    def cas_failed(self, inst, step, before) -> bool:
        """Whether the step's cmpxchg, in the form that reads the newest store (the value
        of its variable in `before`), found another value than the one it expected; told
        only for a scalar variable and an expected value that is a constant or a scalar
        variable (anything else: no note)."""
        calls = [op.value if isinstance(op, ir.OAssign) else op.call for op in step.body
                 if isinstance(op, (ir.OAssign, ir.OEval))]
        cas = [c for x in calls for c in ir.builtins_in(x) if isinstance(lower(c), Cas)]
        if len(cas) != 1 or len(cas[0].args) < 2:
            return False
        read, expected = (self.raw_operand(x, before, inst) for x in cas[0].args[:2])
        return read is not None and expected is not None and read != expected

    def raw_operand(self, x, raw, inst):
        while isinstance(x, m.Conv):
            x = x.operand
        if isinstance(x, m.Const):
            return x.value
        if isinstance(x, m.Var):
            if self._slots is None:
                self._slots = {name: slots[0] for name, slots in self.decoder.groups if len(slots) == 1}
            name = x.sym.name if x.sym.scope is m.Scope.GLOBAL else f"{inst.name}.{x.sym.name}"
            k = self._slots.get(name)
            return None if k is None else raw[k]
        return None

    def flush_action(self, flush: CompiledFlush, before, after) -> Action:
        """A flush is shown as the `memory` moving: which CPU's store became visible."""
        b = self.decode(before)
        ch = changes(b, self.decode(after))
        views = self.cm.views
        if views is not None:  # lkmm: a CPU's view of one location moves one store newer
            from ...memory.lkmm import Propagation, propagation_text as lkmm_propagation_text

            assert isinstance(flush.buffer, Propagation)
            text = lkmm_propagation_text(views, flush.buffer, before, after,
                                         lambda k, raw: show_value(self.decoder.value(k, raw)))
            return Action(MEMORY, None, text, "", "", ch, "flush", None)
        entries = b.get(flush.buffer.name)  # a Buffered: (location, value), oldest first
        assert isinstance(entries, tuple)
        location, value = entries[0]
        text = f"flush {flush.buffer.cpu}: {location} = {show_value(value)}"
        return Action(MEMORY, None, text, "", "", ch, "flush", None)

    def trace(self, states: list[tuple], steps: Sequence[CompiledStep | CompiledFlush], loop_start: int | None = None,
              failure: tuple[CompiledStep, tuple] | None = None) -> Trace:
        self._decoded = {}
        try:
            decoded = tuple(self.decode(s) for s in states)
            actions = tuple(self.action(st, states[i], states[i + 1]) for i, st in enumerate(steps))
            fail = self.action(failure[0], failure[1], None, "failed") if failure else None
        finally:
            self._decoded = None
        return Trace(decoded, actions, loop_start, fail)

    def decode(self, s) -> TraceState:
        """State s decoded, once per `trace` (a step's action decodes both its ends)."""
        memo = self._decoded
        if memo is None:
            return self.decoder.decode(s)
        key = tuple(s)
        got = memo.get(key)
        if got is None:
            got = memo[key] = self.decoder.decode(s)
        return got


def state_space(cm: CompiledModel, graph: StateGraph, complete: bool = True) -> StateSpace:
    """The kept graph decoded for exporters (DOT's whole-graph drawing): every state and
    every transition with the step that took it. `complete`: the search was not cut short."""
    builder = TraceBuilder(cm)
    edges = tuple((i, j, builder.action(cs, graph.states[i], graph.states[j]))
                  for i in range(graph.expanded) for j, cs in graph.edges(i))
    return StateSpace(tuple(builder.decoder.decode(st) for st in graph.states), tuple(range(graph.initial)),
                      edges, complete and graph.expanded == len(graph.states))


def _every_actor(s: int, actors: list) -> list:
    return actors


def _every_actor_mask(s: int, actors: list) -> int:
    return (1 << len(actors)) - 1


def _none_left_out(s: int) -> int:
    return 0


def _itself(t: int) -> int:
    return t


def _no_tables() -> AmpleTables | None:
    return None


def _no_fields() -> tuple[tuple[tuple[tuple[int, int], ...], ...], ...]:
    return ()


def _as_is(states: list, steps: list, failing: CompiledStep | None) -> tuple[list, list, CompiledStep | None]:
    return states, steps, failing


class Reduction:
    """Hooks through which a state-space reduction (engines/reduce/) shapes the search;
    the engine calls them with packed states. The base class reduces nothing.

    `ample(s, actors)`: the actors (rows of `Search.actors`) to expand in state s, a
    subset of `actors` with an enabled step whenever s has one (so that a state
    without a successor is still a deadlock); returning `actors` itself expands
    everything. `movable(s)`: in graph mode, the gid mask of the actors the last
    `ample(s, ...)` left out that could move in s (fairness is judged on every actor).
    `canonical(t)`: the representative of successor t's class (symmetry), looked up
    and stored in its place; `concretise(states, steps, failing)` turns a path of
    representatives (state tuples, each step taken from the one before) into a run of
    the model, and the failing step into one that fails at its end. `ample_mask` is
    `ample` as a mask of actor numbers (bit g: `actors[g]`).

    The hooks are attributes, not methods: a reduction sets them to its analyses'
    bound methods, which the level loops bind and call per state with no delegation
    in between."""

    def __init__(self) -> None:
        self.ample: Callable[[int, list], list] = _every_actor
        self.ample_mask: Callable[[int, list], int] = _every_actor_mask
        self.movable: Callable[[int], int] = _none_left_out
        self.canonical: Callable[[int], int] = _itself
        self.concretise: Callable[[list, list, CompiledStep | None], tuple[list, list, CompiledStep | None]] = _as_is
        # `ample` as tables the native loop can walk (backends/c.py), or None when the
        # choice cannot be tabled (then only the Python loop reduces)
        self.ample_tables: Callable[[], AmpleTables | None] = _no_tables
        # `canonical` as tables the native loop can walk: per symmetry domain, per index,
        # the (shift, mask) of each of its fields, aligned across indices (reduce/symmetry.py)
        self.symmetry_fields: Callable[[], tuple[tuple[tuple[tuple[int, int], ...], ...], ...]] = _no_fields

    #: False when `canonical` is the identity: the engine then skips the call
    canonicalises: bool = False
    #: False when `ample` always returns every actor
    selects: bool = False


#: no reduction: the hooks a search without one binds (and, being off, never calls)
NO_REDUCTION = Reduction()


@dataclass(slots=True)
class Route:
    """A parallel worker's routing: the owner of packed state s is
    `owners[(s & omask) % OWNER_MOD]`; a successor another worker owns is kept in
    `routed` (states, parent ids, steps), and `by_owner` splits those into one batch per
    owner at the end of the level; the owner drops the ones it has. `omask` selects the
    bits the owner depends on (all ones: the whole state), so that most transitions,
    which leave those bits alone, stay with the worker that found them
    (parallel.choose_partition). A worker expanding states another worker owns
    (taken when it ran out of its own) routes every successor: its `me` is -1."""

    me: int
    workers: int
    owners: tuple[int, ...]  # OWNER_MOD entries, each a worker
    omask: int
    routed: tuple[list, list, list] = field(default_factory=lambda: ([], [], []))
    # the successors routed so far: an owner takes in a batch in order and keeps only
    # the first copy of a state, so a later copy need not travel (a third of what a
    # taken range routes, on kvm_vcpus N=3)
    sent: set = field(default_factory=set)

    def send(self, t: int, parent: int, step: int) -> None:
        """Route successor t (of state `parent` by `step`), unless it is routed already
        (as the generated level loop does in line)."""
        if t not in self.sent:
            self.sent.add(t)
            self.routed[0].append(t)
            self.routed[1].append(parent)
            self.routed[2].append(step)

    def by_owner(self) -> list[tuple[list, list, list]]:
        """The routed successors, one batch per worker (in the order they were routed)."""
        ts, ps, ks = self.routed
        if self.workers == 2 and self.me >= 0:  # all go to the other worker
            return [([], [], []), (ts, ps, ks)] if self.me == 0 else [(ts, ps, ks), ([], [], [])]
        out: list[tuple[list, list, list]] = [([], [], []) for _ in range(self.workers)]
        owners, omask = self.owners, self.omask
        for t, p, k in zip(ts, ps, ks):
            box = out[owners[(t & omask) % OWNER_MOD]]
            box[0].append(t)
            box[1].append(p)
            box[2].append(k)
        return out


#: array type codes for what the search stores by the million: a 64-bit word (parent
#: ids, fingerprints, states as they travel between workers) and a step number. CPython
#: converts an int for 'L' and 'I' without the byte-by-byte path of 'Q' and the argument
#: parsing of 'l' and 'H': array("L", xs) is 3x faster than array("Q", xs), and an
#: append 40-50 ns cheaper, once or twice per stored state. 'L' is 64 bits where the
#: parallel search runs (fork: Linux); elsewhere 'Q' keeps the width.
WORD = "L" if array("L").itemsize == 8 else "Q"
STEP = "I"
#: the parent id of an initial state (ids are unsigned)
NO_PARENT = (1 << 64) - 1


def home_slot(fp: int, spread: int) -> int:
    """Where the probe for a state that is its own fingerprint starts, in a table of
    2**(64 - spread) slots: the top bits of fp * 2**64/phi (Fibonacci hashing), which
    spreads consecutive states over the whole table, however large it grows."""
    return (fp * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF) >> spread


class Fingerprints:
    """Visited set of `--hash-compact`: 64-bit fingerprints in one flat open-addressing
    table (8 bytes a slot, at most 70% full), no state objects.

    A state of at most 63 bits is its own fingerprint (plus one, as 0 marks a free slot):
    nothing can collide. A wider state is hashed by multiply-shift (Dietzfelbinger et
    al.): ((a * s) mod 2^(w+64)) >> w for a fixed odd a of w + 64 bits, a family in
    which two distinct w-bit states collide with probability at most 2 / 2^64."""

    EXACT_BITS = 63  # states this narrow are their own fingerprints

    def __init__(self, bits: int, capacity: int = 1 << 16):
        self.exact = bits <= self.EXACT_BITS
        self.shift = bits
        # a fixed multiplier (deterministic runs): the digits of pi, forced odd, as wide as needed
        pi = int("243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89452821e638d0", 16)
        need = bits + 64
        if need > 300:  # wider states (u64 variables): more fixed bits, or the low fields barely count
            import random

            pi = (pi << (need - 300)) | random.Random(pi).getrandbits(need - 300)
        self.a = (pi >> max(0, 300 - need)) | 1
        self.size = capacity
        self.spread = 65 - capacity.bit_length()  # home_slot's shift for this size (a power of 2)
        self.table = array(WORD, bytes(8 * capacity))
        self.count = 0
        self.limit = capacity * 7 // 10

    def fingerprint(self, s: int) -> int:
        if self.exact:
            return s + 1
        return ((self.a * s) >> self.shift & 0xFFFFFFFFFFFFFFFF) or 1

    def __contains__(self, s: int) -> bool:
        fp = self.fingerprint(s)
        table, mask = self.table, self.size - 1
        i = home_slot(fp, self.spread) if self.exact else fp & mask
        while True:
            x = table[i]
            if x == fp:
                return True
            if x == 0:
                return False
            i = (i + 1) & mask

    contains = __contains__  # (native._Seen has both names too)

    def add(self, s: int) -> bool:
        """Insert state s; False if its fingerprint was already there."""
        fp = s + 1 if self.exact else ((self.a * s) >> self.shift & 0xFFFFFFFFFFFFFFFF) or 1
        table = self.table
        mask = self.size - 1
        # home_slot, written out: this runs once for every successor
        i = (fp * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF) >> self.spread if self.exact else fp & mask
        while True:
            x = table[i]
            if x == fp:
                return False
            if x == 0:
                table[i] = fp
                self.count += 1
                if self.count > self.limit:
                    self._grow()
                return True
            i = (i + 1) & mask

    def _grow(self):
        old = self.table
        self.size *= 2
        self.spread -= 1
        self.limit = self.size * 7 // 10
        self.table = array(WORD, bytes(8 * self.size))
        table, mask, exact, spread = self.table, self.size - 1, self.exact, self.spread
        for fp in old:
            if fp:
                i = home_slot(fp, spread) if exact else fp & mask
                while table[i]:
                    i = (i + 1) & mask
                table[i] = fp

    def collision_probability(self) -> float:
        """Estimated probability that two of the stored states' fingerprints collided, so
        that a state was taken for one already seen and never explored: the birthday
        bound n(n-1)/2 pairs times 2^-63 per pair, about n^2 / 2^64. Zero when every
        state fits in its fingerprint."""
        if self.exact:
            return 0.0
        n = self.count
        return min(1.0, n * (n - 1) / 2 * 2.0 ** -63)


def rss_bytes() -> int | None:
    """Resident memory of this process now (Linux /proc), None where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


#: the level loops `--loop` chooses between (explore() in the package): auto, Python at
#: once and the native one (native.py) from the level where its build is ready
LOOPS = ("python", "native", "auto")

#: the generated level loop takes over once this many states are stored: writing it
#: costs tens of milliseconds, more than the whole search of a small model
GENERATE_FROM = 20_000


class Search:
    """One variant's breadth-first search, level by level, over packed states.

    The level loop (`level`) is the hot path: per state it checks the invariants, then
    for each actor (a process instance, or under tso a store buffer's flush) reads its
    pc field and runs the steps enabled there; a successor is looked up in the visited
    set and, if new, appended to the next level with its parent and step. Trace
    reconstruction needs no stored states: the parent links give the steps, and running
    them again from the initial state gives the states.

    Parallel workers (parallel.py) run the same loop on their share of a level,
    routing successors they do not own to their owners."""

    def __init__(self, cm: CompiledModel, limits: Limits, graph: bool = False, hash_compact: bool = False,
                 reduction: Reduction | None = None, generate_from: int | None = GENERATE_FROM,
                 coverage: bool = False):
        self.cm = cm
        self.limits = limits
        self.graph = graph
        self.hash_compact = hash_compact and not graph
        self.reduction = reduction
        pk = cm.packing
        instances = cm.instances
        self.steps, self.actors = actor_tables(cm)
        self.gids = tuple(cs.gid for cs in self.steps)
        self.ends = [(pk.shift[inst.pc_slot], pk.mask(inst.pc_slot), inst.end_pcs) for inst in instances]
        self.invariants = [(inv.packed, inv.property.name) for inv in cm.invariants]
        self.finals = [(fin.packed, fin.property.name) for fin in cm.finals]
        # the states where `final` conditions are checked (there are none without one)
        self.at_final: Callable[[int], bool] = cm.final_state_packed or (lambda s: False)
        canonical = reduction.canonical if reduction is not None and reduction.canonicalises else (lambda t: t)
        self.initial: list[int] = list(dict.fromkeys(canonical(cm.pack(s)) for s in cm.program.initial_states))
        # per stored state: its parent's id (NO_PARENT for an initial state) and the step taken
        self.parent = array(WORD)
        self.via = array(STEP)
        # parallel: the parent links live in the workers, which `steps_to` then asks
        self.remote_steps_to: Callable[[int], tuple[int, list[int]]] | None = None
        self.seen: set[int] | Fingerprints = Fingerprints(pk.bits) if self.hash_compact else set()
        # the model's own level loop, for the states that need no decision (fastloop.py)
        self.loops = LevelLoopWriter(cm, self.actors) if generate_from is not None else None
        self._local_steps: tuple[int | None, frozenset[int]] = (None, frozenset())
        self.generate_from = generate_from
        self.index: dict[int, int] = {}  # graph mode: state -> id
        self.states: list[int] = []  # graph mode: every state by id
        self.first, self.dst, self.step, self.enabled = array(WORD, [0]), array(WORD), array(STEP), array("q")
        self.count = 0  # states stored (ids 0..count-1)
        self.expanded = 0
        self.transitions = 0
        self.depth = 0
        self.final_count = 0
        self.buffer_full = 0
        self.ample_states = 0  # states expanded with an ample set smaller than all their steps
        self.limit: str | None = None
        # per property: (state id, packed state, number of the failing step or None, kind, message)
        self.found: dict[str, tuple[int, int, int | None, str, str]] = {}
        # the properties no longer checked. One process: those found (the first violation
        # found is a shortest). A parallel worker: those found at an earlier level; within
        # a level it keeps the violation of least `rank`, so that which worker expanded a
        # state does not decide which violation is shown (parallel.py)
        self.settled: dict | set = self.found
        self.rank: Callable[[int, int], tuple] | None = None
        self.model_error: tuple[int, int, int | None, str] | None = None
        # coverage, recorded as the search runs (engines/coverage.py reads it): per step
        # number, bit 0 set when it ran and failed, bit pc + 1 when it ran and its actor's
        # field was pc after it; and which premises (CompiledModel.premises) held somewhere
        self.marks: list[int] | None = [0] * len(self.steps) if coverage else None
        self.held = [False] * len(cm.premises)
        self.premises = [(p.packed, n) for n, p in enumerate(cm.premises)] if coverage else []

    # -- storing states
    def add_initial(self) -> list[int]:
        level = []
        for s in self.initial:
            if self.store(s, NO_PARENT, 0):
                level.append(s)
        return level

    def store(self, s: int, parent: int, step: int) -> bool:
        """Record state s if new (outside the hot loop: initial states, received states)."""
        if self.graph:
            if s in self.index:
                return False
            self.index[s] = self.count
            self.states.append(s)
        elif self.hash_compact:
            if not self.seen.add(s):
                return False
        else:
            if s in self.seen:
                return False
            self.seen.add(s)
        self.parent.append(parent)
        self.via.append(step)
        self.count += 1
        return True

    # -- one level
    # Three level loops stand side by side, each a copy of the same expansion, and they
    # must stay separate: _level_generated runs the loop generated for this model (the
    # hot path: no per-step dispatch, inlined lookups); _level_generic is the same
    # search in plain Python, for the first levels, a depth bound, and the state where
    # the generated loop stopped on a model error; _level_graph also records every edge
    # for the liveness graph. A change to what a level does is made in all three (the
    # tests run every shipped model through both of the first two and compare).
    def level(self, frontier: list[int], ids, depth: int, progress=None, route: Route | None = None) -> list[int]:
        """Expand `frontier` (whose states have the ids `ids`, a range or a list) at
        `depth`; return the next level's new states. With `route` (parallel workers), a
        successor that another worker owns is routed to it instead (`Route`)."""
        if self.graph:
            return self._level_graph(frontier, ids, depth, progress)
        if self.loops is not None and self.generate_from is not None and (
                self.count >= self.generate_from or route is not None) and not (
                self.limits.max_depth is not None and depth >= self.limits.max_depth):
            return self._level_generated(frontier, ids, depth, progress, route)
        return self._level_generic(frontier, ids, depth, progress, route)

    def local_steps(self, omask: int) -> frozenset[int]:
        """The steps that leave the bits `omask` selects alone: a successor by one of them
        has the owner of its source (`LoopShape.local_steps`)."""
        if self._local_steps[0] != omask:
            self._local_steps = (omask, frozenset(k for k, cs in enumerate(self.steps) if not cs.writes & omask))
        return self._local_steps[1]

    def _level_generated(self, frontier: list[int], ids, depth: int, progress, route: Route | None = None) -> list[int]:
        """`level` through the model's generated loop (fastloop.py), which stops
        at every state that needs a decision; such a state is expanded here by the
        generic loop, and the generated loop resumes after it. A parallel worker (`route`)
        uses it from its first level (workers start past GENERATE_FROM states anyway); a
        successor it routed before handing a state to the generic loop is not routed
        again there (`Route.sent`)."""
        self.depth = max(self.depth, depth)
        red = self.reduction
        hooks = red if red is not None else NO_REDUCTION
        loops = self.loops
        assert loops is not None  # (`level` comes here only with the generated loops)
        nxt: list[int] = []
        max_states = self.limits.max_states if self.limits.max_states is not None else 1 << 62
        tick = None
        if progress is not None:
            def tick(count: int, queued: int) -> None:
                progress.tick(count, queued, depth)
        seen = self.seen
        canonical = red is not None and red.canonicalises
        local_steps: frozenset[int] = frozenset()
        if route is not None and route.me >= 0 and not canonical:  # symmetry may move any bits
            local_steps = self.local_steps(route.omask)
        j = 0
        while True:
            shape = LoopShape(
                invariants=tuple(k for k, (_, name) in enumerate(self.invariants) if name not in self.settled),
                deadlock=self.limits.check_deadlock and "deadlock" not in self.settled,
                compact=self.hash_compact, canonical=canonical,
                ample=red is not None and red.selects, progress=progress is not None, route=route is not None,
                route_all=route is not None and route.me < 0,
                finals=bool(self.finals), local_steps=local_steps, marks=self.marks is not None,
                premises=tuple(n for _, n in self.premises))
            loop = loops.loop(shape)
            status, j, count, expanded, transitions, ample_states, hits = loop(
                frontier, ids, j, self.count, self.expanded, max_states, seen, seen.add, nxt.append,
                self.parent.append, self.via.append, tick, hooks.ample_mask if shape.ample else None, self.actors,
                hooks.canonical if shape.canonical else None, route)
            self.count, self.expanded = count, expanded
            self.transitions += transitions
            self.ample_states += ample_states
            del self.parent[count:], self.via[count:]  # an interrupt may leave a half record
            if hits:
                marks = self.marks
                assert marks is not None  # (hits are counted only with marks)
                for k, h in enumerate(hits):
                    if h:
                        marks[k] |= h
            if status == DONE:
                return nxt
            if status == FULL:
                self.limit = "max-states"
                raise StopSearch
            if status == INTERRUPTED:
                raise KeyboardInterrupt
            nxt += self._level_generic(frontier[j:j + 1], ids[j:j + 1], depth, progress, route)
            j += 1
            if j >= len(frontier):
                return nxt

    def _level_generic(self, frontier: list[int], ids, depth: int, progress, route: Route | None) -> list[int]:
        limits = self.limits
        at_limit = limits.max_depth is not None and depth >= limits.max_depth
        max_states = limits.max_states if limits.max_states is not None else 1 << 62
        self.depth = max(self.depth, depth)
        actors = self.actors
        invariants = [x for x in self.invariants if x[1] not in self.settled]
        checks = bool(invariants or self.finals or self.premises)
        marks = self.marks
        deadlock_wanted = limits.check_deadlock and "deadlock" not in self.settled
        red = self.reduction
        ample = red.ample if red is not None and red.selects else None
        canonical = red.canonical if red is not None and red.canonicalises else None
        compact = self.hash_compact
        seen = self.seen
        seen_add = seen.add
        seen_contains = seen.__contains__
        nxt: list[int] = []
        nxt_append = nxt.append
        parent_append = self.parent.append
        via_append = self.via.append
        count = self.count
        expanded = self.expanded
        finals = bool(self.finals)
        transitions = 0
        ample_states = 0
        if route is not None:
            me, owners, omask, send, mod = route.me, route.owners, route.omask, route.send, OWNER_MOD
        try:
            for s, i in zip(frontier, ids):
                if checks:
                    for fn, name in invariants:
                        try:
                            ok = fn(s)
                        except ModelError as e:
                            self.model_error = (i, s, None, f"evaluating invariant {name}: {e}")
                            raise StopSearch from None
                        if not ok:
                            self._violated(name, i, s, None, m.PropertyKind.INVARIANT.value,
                                           f"invariant {name} is violated")
                            invariants = [x for x in invariants if x[1] not in self.settled]
                    if finals:
                        self._check_final(s, i)
                    if self.premises:
                        self._check_premises(s)
                moved = full = False
                if ample is None:
                    chosen = actors
                else:  # partial-order reduction: an ample set of the actors
                    chosen = ample(s, actors)
                    if chosen is not actors:
                        ample_states += 1
                for shift, mask, table in chosen:
                    for fn, k in table[s >> shift & mask]:
                        try:
                            t = fn(s)
                        except AssertionViolation as a:
                            moved = True
                            if marks is not None:
                                marks[k] |= 1
                            self._violated(a.property, i, s, k, m.PropertyKind.ASSERT.value,
                                           f"assertion {a.property} failed")
                            continue
                        except StoreBufferFull:
                            full = True  # disabled until a flush makes room
                            continue
                        except ModelError as e:
                            self.model_error = (i, s, k, str(e))
                            raise StopSearch from None
                        if t is None:
                            continue
                        moved = True
                        transitions += 1
                        if marks is not None:  # (before canonical, which may move the actor)
                            marks[k] |= 2 << (t >> shift & mask)
                        if canonical is not None:
                            t = canonical(t)
                        # another worker's state goes to its owner (all of them, for a worker
                        # expanding states it took: its `me` is -1), as the generated loop routes
                        if route is not None and owners[(t & omask) % mod] != me:
                            send(t, i, k)
                            continue
                        if compact:
                            if at_limit:
                                if not seen_contains(t):
                                    self.limit = "max-depth"
                                continue
                            if not seen_add(t):
                                continue
                        else:
                            if t in seen:
                                continue
                            if at_limit:
                                self.limit = "max-depth"
                                continue
                            seen_add(t)
                        nxt_append(t)
                        parent_append(i)
                        via_append(k)
                        count += 1
                if full:
                    self.buffer_full += 1
                if not moved and deadlock_wanted:
                    self._deadlock(s, i)
                    deadlock_wanted = "deadlock" not in self.settled
                expanded += 1
                if progress is not None and expanded & 1023 == 0:
                    progress.tick(count, count - expanded, depth)
                if count >= max_states and expanded < count:
                    self.limit = "max-states"
                    raise StopSearch
        finally:
            self.count = count
            self.expanded = expanded
            self.transitions += transitions
            self.ample_states += ample_states
            del self.parent[count:], self.via[count:]  # an interrupted append leaves no half record
        return nxt

    def _level_graph(self, frontier: list[int], ids, depth: int, progress) -> list[int]:
        """`level` keeping the graph: every edge with its step, and per expanded state the
        actors that could move (for the liveness engine's fairness)."""
        limits = self.limits
        at_limit = limits.max_depth is not None and depth >= limits.max_depth
        max_states = limits.max_states if limits.max_states is not None else 1 << 62
        self.depth = max(self.depth, depth)
        actors = self.actors
        red = self.reduction
        ample = red.ample if red is not None and red.selects else None
        canonical = red.canonical if red is not None and red.canonicalises else None
        movable = (red if red is not None else NO_REDUCTION).movable  # called only where `ample` left actors out
        gids = self.gids
        index, states = self.index, self.states
        first, dst, step, enabled = self.first, self.dst, self.step, self.enabled
        marks = self.marks
        nxt: list[int] = []
        try:
            for s, i in zip(frontier, ids):
                self._check_state(s, i)
                if self.premises:
                    self._check_premises(s)
                moved = full = False
                can_move = 0
                chosen = actors if ample is None else ample(s, actors)
                for shift, mask, table in chosen:
                    for fn, k in table[s >> shift & mask]:
                        try:
                            t = fn(s)
                        except AssertionViolation as a:
                            moved = True
                            can_move |= 1 << gids[k]
                            if marks is not None:
                                marks[k] |= 1
                            self._violated(a.property, i, s, k, m.PropertyKind.ASSERT.value,
                                           f"assertion {a.property} failed")
                            continue
                        except StoreBufferFull:
                            full = True
                            continue
                        except ModelError as e:
                            self.model_error = (i, s, k, str(e))
                            raise StopSearch from None
                        if t is None:
                            continue
                        moved = True
                        can_move |= 1 << gids[k]
                        self.transitions += 1
                        if marks is not None:
                            marks[k] |= 2 << (t >> shift & mask)
                        if canonical is not None:
                            t = canonical(t)
                        j = index.get(t)
                        if j is None:
                            if at_limit:
                                self.limit = "max-depth"
                                continue
                            j = index[t] = self.count
                            states.append(t)
                            nxt.append(t)
                            self.parent.append(i)
                            self.via.append(k)
                            self.count += 1
                        dst.append(j)
                        step.append(k)
                if full:
                    self.buffer_full += 1
                if not moved and self.limits.check_deadlock and "deadlock" not in self.settled:
                    self._deadlock(s, i)
                if chosen is not actors:  # fairness is judged on every actor that could move
                    self.ample_states += 1
                    can_move |= movable(s)
                first.append(len(dst))
                enabled.append(can_move)
                self.expanded += 1
                if progress is not None and self.expanded & 1023 == 0:
                    progress.tick(self.count, self.count - self.expanded, depth)
                if self.count >= max_states and self.expanded < self.count:
                    self.limit = "max-states"
                    raise StopSearch
        finally:
            # a search stopped inside a state (model error, interrupt) left it half expanded
            del dst[first[len(enabled)]:], step[first[len(enabled)]:]
            del first[len(enabled) + 1:]
        return nxt

    # -- what a state shows
    def _check_state(self, s: int, i: int) -> None:
        self._check_predicates(self.invariants, s, i, m.PropertyKind.INVARIANT, "invariant {} is violated")
        if self.finals:
            self._check_final(s, i)

    def _check_premises(self, s: int) -> None:
        """Mark the premises that hold in s; once one has, it is no longer evaluated."""
        held = False
        for fn, n in self.premises:
            try:
                if fn(s):
                    self.held[n] = held = True
            except ModelError:  # e.g. an index out of range: the property reports its own
                pass
        if held:  # (most states change nothing: the list is not rebuilt for them)
            self.premises = [x for x in self.premises if not self.held[x[1]]]

    def _check_final(self, s: int, i: int) -> None:
        if not self.at_final(s):
            return
        self.final_count += 1
        self._check_predicates(self.finals, s, i, m.PropertyKind.FINAL,
                               "final condition {} is violated in a final state")

    def _check_predicates(self, preds, s: int, i: int, kind: m.PropertyKind, message: str) -> None:
        """Record the first state in which each not-yet-violated predicate fails."""
        for fn, name in preds:
            if name in self.settled:
                continue
            try:
                ok = fn(s)
            except ModelError as e:
                what = "invariant" if kind is m.PropertyKind.INVARIANT else "final condition"
                self.model_error = (i, s, None, f"evaluating {what} {name}: {e}")
                raise StopSearch from None
            if not ok:
                self._violated(name, i, s, None, kind.value, message.format(name))

    def _violated(self, name: str, i: int, s: int, k: int | None, kind: str, message: str) -> None:
        old = self.found.get(name)  # the first found is a shortest: states come level by level
        if old is None or (self.rank is not None and name not in self.settled
                           and self.rank(i, s) < self.rank(old[0], old[1])):
            self.found[name] = (i, s, k, kind, message)

    def _deadlock(self, s: int, i: int) -> None:
        if not all((s >> shift & mask) in ends for shift, mask, ends in self.ends):
            self._violated("deadlock", i, s, None, m.PropertyKind.DEADLOCK.value,
                           stuck_message(self.cm, self.cm.unpack(s)))

    # -- traces
    def steps_to(self, i: int) -> tuple[int, list[int]]:
        """(the initial state's index in `initial`, the step numbers) of the stored path
        to state i: initial states were stored first, in that order."""
        if self.remote_steps_to is not None:
            return self.remote_steps_to(i)
        ks = []
        while self.parent[i] != NO_PARENT:
            ks.append(self.via[i])
            i = self.parent[i]
        return i, ks[::-1]

    def replay(self, start: int, ks: list[int]) -> tuple[list[tuple], list]:
        """Run the steps ks from initial state `start` again: the states as tuples, and
        the steps (a step is deterministic, so this is the path the search took)."""
        canonical = self.reduction.canonical if self.reduction is not None and self.reduction.canonicalises \
            else (lambda t: t)
        s = self.initial[start]
        states, steps = [self.cm.unpack(s)], []
        for k in ks:
            cs = self.steps[k]
            s = canonical(cs.packed(s))  # as the search stored it
            states.append(self.cm.unpack(s))
            steps.append(cs)
        return states, steps

    # -- the result
    def collisions(self) -> float:
        """The bound on a --hash-compact search's collisions: its visited set is
        Fingerprints (or native.py's C table, which answers the same), never a set."""
        seen = self.seen
        assert not isinstance(seen, set)
        return seen.collision_probability()

    def exploration(self, seconds: float, memory: int | None, workers: int = 1, note: str = "",
                    sums: tuple[int, int, int] | None = None) -> Exploration:
        """The result; `sums`: `states_sums` of every stored state, where they are not
        all in this process (parallel workers)."""
        limit = self.limit
        if self.model_error is not None:
            limit = "model error"
        stats = Stats(self.count, self.transitions, self.depth, seconds, limit is None, limit,
                      final_states=self.final_count if self.finals else None, buffer_full_states=self.buffer_full,
                      bytes_per_state=memory / self.count if memory is not None and self.count else None,
                      workers=workers, workers_note=note,
                      collision_probability=self.collisions() if self.hash_compact else None,
                      ample_states=self.ample_states if self.reduction is not None and self.reduction.selects
                      else None)
        result = Exploration(stats)
        if self.marks is not None:
            result.marks, result.held = tuple(zip(self.steps, self.marks)), tuple(self.held)
            sums = sums if sums is not None else states_sums(self.states if self.graph else self.seen)
            result.digest = hash(tuple(x & DIGEST_MASK for x in sums))
        builder = TraceBuilder(self.cm)
        if self.graph:
            expanded = len(self.enabled)
            unpack = self.cm.unpack
            result.graph = StateGraph(UnpackedStates(self.states, unpack), len(self.initial), expanded, self.first,
                                      self.dst, self.step, self.steps, self.enabled)
        for name, (i, s, cs, kind, msg) in self.found.items():
            trace, last = self.trace_to(builder, i, s, cs)
            if kind == m.PropertyKind.DEADLOCK.value:
                msg = stuck_message(self.cm, last)  # the run's own last state (symmetry: not the representative)
            result.counterexamples[name] = Counterexample(name, kind, msg, trace)
        if self.model_error is not None:
            i, s, cs, msg = self.model_error
            result.model_error = Counterexample("model error", "model error", msg, self.trace_to(builder, i, s, cs)[0])
        return result

    def trace_to(self, builder: TraceBuilder, i: int, s: int, k: int | None) -> tuple[Trace, tuple]:
        """The trace to stored state i (packed s), ending in step k's failure if k is
        given; and the trace's last state."""
        cs = self.steps[k] if k is not None else None
        start, ks = self.steps_to(i)
        states, steps = self.replay(start, ks)
        if self.cm.pack(states[-1]) != s:
            raise AssertionError("internal error: replaying the stored path does not reach the state")
        if self.reduction is not None and self.reduction.canonicalises:
            states, steps, cs = self.reduction.concretise(states, steps, cs)  # representatives -> a run
        failure = (cs, states[-1]) if cs is not None else None
        return builder.trace(states, steps, failure=failure), states[-1]


#: the stored states' digest keeps its sums modulo 2^64: the native loop adds them up
#: in C as u64 (a pass in Python over its table cost more than the coverage it serves)
DIGEST_MASK = (1 << 64) - 1


def states_sums(states) -> tuple[int, int, int]:
    """(number, sum, sum of squares) of a set of packed states (a set, a list, or
    `Fingerprints`): each a pass in C, and additive over disjoint sets (parallel
    workers), also modulo 2^64 (`DIGEST_MASK`, how the digest reads them). Two variants
    with the same sums have, but by accident, the same states."""
    if isinstance(states, Fingerprints):
        n, states = states.count, states.table  # free slots are 0, which adds nothing
    else:
        n = len(states)
    return n, sum(states), sum(map(operator.mul, states, states))


def explore_one(cm: CompiledModel, limits: Limits, progress: Progress | None, graph: bool, hash_compact: bool,
                reduction: Reduction | None, note: str = "", coverage: bool = False) -> Exploration:
    """The search in this process (`explore` in the package decides between this and the
    workers); `note` says why it ran in one process although more workers were asked for;
    `coverage`: record which steps ran (`Search.marks`)."""
    start = time.monotonic()
    rss = rss_bytes()
    search = Search(cm, limits, graph, hash_compact, reduction, coverage=coverage)
    run_levels(search, search.add_initial(), 0, 0, progress)
    if progress is not None:
        progress.done()
    seconds = time.monotonic() - start
    grown = rss_bytes()
    memory = grown - rss if rss is not None and grown is not None else None
    return search.exploration(seconds, memory, 1, note)


def run_levels(search: Search, level: list[int], first_id: int, depth: int, progress: Progress | None,
               until=None) -> tuple[list[int], int, int]:
    """Expand level after level until none is left, the search stops, or until(level,
    depth) says to hand over (parallel start-up); returns (level, first id, depth) where
    it stopped."""
    try:
        while level:
            if until is not None and until(level, depth):
                break
            nxt = search.level(level, range(first_id, first_id + len(level)), depth, progress)
            first_id += len(level)
            level = nxt
            depth += 1
            if search.limits.until_found and search.limits.until_found <= search.found.keys():
                search.limit = "found what was asked for"
                break
    except StopSearch:
        level = []
    except KeyboardInterrupt:
        search.limit = "interrupted"
        level = []
    except MemoryError:  # a limit like the others: what was explored is reported
        search.limit = OUT_OF_MEMORY
        level = []
        if isinstance(search.seen, set):  # the largest structure; nothing after the search needs it
            search.seen.clear()
    return level, first_id, depth


#: Stats.limit of a search that ran out of memory
OUT_OF_MEMORY = "out of memory"


class StopSearch(Exception):
    pass


def stuck_message(cm: CompiledModel, s: tuple) -> str:
    stuck = [f"{inst.name} at {inst.process.pc_names[s[inst.pc_slot]]}"
             for inst in cm.instances if s[inst.pc_slot] not in inst.end_pcs]
    return "deadlock: no process can move; not at a valid end: " + ", ".join(stuck)
