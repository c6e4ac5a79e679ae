"""The trace and result types every engine returns and every exporter reads.

Values in a trace are plain Python data, already decoded from the state vector:
bools, ints, enum member names (str), bit sets and wait queues as sorted tuples of
members, arrays as tuples, program counters as label names. Exporters never need the
model or the layout to print them.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Callable
from dataclasses import field

from .. import model as m
from ..base.errors import Span
from ..ir import SlotKind, StateLayout, TASK_STATES
from ..base.record import record

Value = object  # bool | int | str | tuple (an array) | Members | Buffered (a store buffer)

#: the LKMM both `memory lkmm` and `check FILE.litmus` are measured against: the .cat
#: files pinned in ../shared/tools/herd7/lkmm (SOURCES.tsv), which herd7 7.56 runs
LKMM_NAME = ("the LKMM of linux-kernel.cat at torvalds/linux eb5cc113dd2f and lock.cat at 3867a24cc408 "
             "(herd7 7.56; before lkmmv2, without rmw-sequences)")
#: how an lkmm "holds" begins when the model may have outcomes the machine leaves out ...
LKMM_PARTIAL = "holds for the LKMM outcomes this semantics explores ("
#: ... and when it cannot (memory/lkmm.left_out found no shape that can occur in it)
LKMM_COMPLETE = "holds for every LKMM outcome of this model ("


def lkmm_note(left_out: tuple[str, ...]) -> str:
    """The note on an lkmm "holds": complete for this model, or the shapes of LKMM
    outcomes the machine did not explore that may occur in it (memory/lkmm.left_out)."""
    if not left_out:
        return (LKMM_COMPLETE + LKMM_NAME + "): complete for this model, since none of the shapes the machine "
                "leaves out can occur in it (no load and later store of a CPU that nothing orders and another "
                "CPU's store can follow, no location stored by two CPUs with a plain store, no relaxed RMW of "
                "another CPU's store, no access between an exact fence and its RMW, no atomic block that stores, "
                "no array index computed at run time)")
    return LKMM_PARTIAL + LKMM_NAME + "); not explored, and possible in this model: " + ", ".join(left_out)
MEMORY = "memory"  # the process an Action names when a store-buffer flush makes a store visible


class Members(tuple):
    """The members of a bit set or a wait queue, in order; a set, unlike an array's tuple."""

    __slots__ = ()


class Buffered(tuple):
    """A CPU's store buffer (tso): (location, value) pairs, oldest first."""

    __slots__ = ()


class Engine(str, enum.Enum):
    """What decided a property: the one list of engines (--engine). A str enum, so that
    the command line's word is the member and results compare and print as that word."""

    EXPLICIT = "explicit"  # the breadth-first search (engines/explicit)
    BMC = "bmc"  # bounded model checking with Z3
    INDUCTION = "induction"  # k-induction with Z3
    PDR = "pdr"  # PDR/IC3 through Z3's Spacer

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__  # equal to its word, so hashed as it


class Verdict(enum.Enum):
    HOLDS = "holds"
    VIOLATED = "violated"
    INCOMPLETE = "incomplete"  # no violation found, but the search was cut short
    ERROR = "model error"  # the model went wrong (range, index, division) during the search
    PROVED = "proved"  # lemmas and k-induction: holds for all values / depths
    UNKNOWN = "unknown"  # the solver gave up (timeout)
    CHECKER_BUG = "checker bug"  # a Z3 counterexample did not replay through the compiled steps


@record
class Action:
    """One step of a trace: who moved, from which statement, and what changed."""

    process: str  # instance name, e.g. `vcpu` or `cpu[1]`; `memory` for a TSO flush
    span: Span | None
    text: str
    pc_from: str
    pc_to: str
    changes: tuple[tuple[str, Value], ...]
    kind: str = "step"  # "step" | "flush" | "failed" (the step that failed an assert / erred)
    inline: str | None = None
    detail: str = ""  # what it decided: a branch taken and the values tested, what an atomic returned
    call: str = ""  # in an inline: its call, with the arguments' values, e.g. `load(cpu = 1) at line 7`
    cpu: int | None = None  # execution contexts: the CPU the step ran on (contexts.step_cpu)


@record
class TraceState:
    values: tuple[tuple[str, Value], ...]  # variables in layout order
    pcs: tuple[tuple[str, str], ...]  # process instance -> label name

    def get(self, name: str) -> Value:
        for k, v in self.values:
            if k == name:
                return v
        raise KeyError(name)


@record
class Trace:
    """states[0] is initial; actions[i] leads from states[i] to states[i+1].

    A lasso (liveness) has `loop_start`: actions[loop_start:] form the loop, so the last
    state equals states[loop_start] and the run repeats the loop forever. When
    loop_start == len(actions) the loop is empty: the run stays in its last state
    forever (nothing, or only processes without fairness, could move there). A trace
    that ends in a failed step has `failure`: the step that failed (an assert, a model
    error) from the last state.
    """

    states: tuple[TraceState, ...]
    actions: tuple[Action, ...]
    loop_start: int | None = None
    failure: Action | None = None

    @property
    def length(self) -> int:
        return len(self.actions)

    @property
    def steps(self) -> int:
        """The counterexample's length as every exporter counts it: each step taken,
        the failing step (an assert, a model error) included."""
        return len(self.actions) + (self.failure is not None)


@record
class Counterexample:
    property: str
    kind: str  # PropertyKind value, or "model error"
    message: str
    trace: Trace
    engine: str = "explicit"
    # the violating state: (operand as written, its value) for each side of the property's
    # comparisons, then (`proc@`, location) for every process; a lemma's parameters and sides
    violation: tuple[tuple[str, str], ...] = ()


@record
class StateSpace:
    """The reachable state graph, decoded for exporters (`--dot-graph` draws it): the
    engine keeps the graph when asked (engines/explicit, graph=True) and run.py
    decodes it for models under the size limit, so nothing searches twice.

    `edges` are (source index, target index, the step taken); `complete` is False when
    the search was cut short, so some states' successors are missing.
    """

    states: tuple[TraceState, ...]
    initial: tuple[int, ...]
    edges: tuple[tuple[int, int, Action], ...]
    complete: bool = True


@record
class Stats:
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True
    limit: str | None = None  # why not complete: "max-states", "max-depth", "interrupted", ...
    engine: str = "explicit"
    bytes_per_state: float | None = None  # memory the search grew by (RSS), per stored state
    final_states: int | None = None  # with `final` conditions: states where every process ended
    buffer_full_states: int = 0  # tso: states in which a store waited for a full store buffer
    workers: int = 1  # processes that shared the search
    workers_note: str = ""  # why fewer workers than asked for, or when they started
    collision_probability: float | None = None  # --hash-compact: estimated chance a state was missed
    notes: tuple[str, ...] = ()  # what else the engine wants said about this search
    ample_states: int | None = None  # partial-order reduction: states expanded with an ample set (None: off)
    reductions: tuple[str, ...] = ()  # the reductions applied, or why not, in words
    loop: str = ""  # the explicit level loop that ran, "native" or "python" ("": not said, the API's default)
    # --loop auto: (depth, states stored) where the native loop took over from the Python one
    loop_from: tuple[int, int] | None = None


@record
class PropertyOutcome:
    property: str
    kind: str
    verdict: Verdict
    expected_violation: bool
    counterexample: Counterexample | None = None
    span: Span | None = None
    note: str = ""
    bound: int | None = None  # bmc without a violation: searched up to this depth only
    expect_span: Span | None = None  # where the variant's `expect` clause names this property, if it does

    @builtins.property  # `property` here is the field above
    def as_expected(self) -> bool:
        if self.verdict in (Verdict.ERROR, Verdict.UNKNOWN, Verdict.CHECKER_BUG):
            return False
        if self.verdict is Verdict.INCOMPLETE:
            return False
        return (self.verdict is Verdict.VIOLATED) == self.expected_violation


@record
class VariantResult:
    variant: str
    constants: tuple[tuple[str, Value], ...]
    outcomes: tuple[PropertyOutcome, ...]
    stats: Stats
    memory: str = "sc"
    fairness: tuple[str, ...] = ()
    model_error: Counterexample | None = None
    store_buffer: int | None = None  # tso: the most stores a store buffer held
    graph: StateSpace | None = None  # only when asked for and under the size limit
    checker_bugs: tuple[str, ...] = ()  # Z3 results the compiled steps contradicted
    coverage: object | None = None  # engines/coverage.Coverage, after a complete explicit search
    coverage_note: str = ""  # why there is no coverage (empty: none was asked for, or it is there)
    lint: tuple[tuple[int, str], ...] = ()  # the resolver's warnings (line, message)
    # memory-model findings (line, message): under tso and lkmm an `atomic { }` block over
    # several shared locations is an ordering the kernel has no instruction for
    memory_findings: tuple[tuple[int, str], ...] = ()
    preemptions: int | None = None  # execution contexts: the preemption bound the search kept to
    lkmm_left_out: tuple[str, ...] | None = None  # lkmm: the shapes it may leave out (None: not lkmm)


@record
class RunResult:
    model: str
    file: str
    header: str
    variants: tuple[VariantResult, ...]
    command: str = ""
    use_expectations: bool = True
    lemmas: tuple = field(default=())

    @property
    def all_as_expected(self) -> bool:
        return all(o.as_expected for v in self.variants for o in v.outcomes) and \
            all(v.model_error is None and not v.checker_bugs for v in self.variants)


# ---- decoding states -----------------------------------------------------------


class StateDecoder:
    """Turns state tuples into trace values, using the layout and the processes' pc names."""

    def __init__(self, layout: StateLayout, pc_names: dict[str, tuple[str, ...]]):
        self.layout = layout
        self.pc_names = pc_names  # instance name -> pc names
        self.members: dict[int, tuple[str, ...]] = {}
        groups: dict[str, list[int]] = {}
        order: list[str] = []
        for i, sl in enumerate(layout.slots):
            if sl.kind in (SlotKind.PC, SlotKind.VIEW):
                continue
            if sl.kind in (SlotKind.VAR, SlotKind.BUFFER):
                assert sl.var is not None, sl  # a variable's or a store buffer's slots carry its name
                key = sl.var
            else:
                key = sl.name
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(i)
        self.groups = [(k, tuple(groups[k])) for k in order]
        self.pc_slots: list[tuple[str, int]] = []
        for i, sl in enumerate(layout.slots):
            if sl.kind is SlotKind.PC:
                assert sl.process is not None, sl  # a pc slot names its process instance
                self.pc_slots.append((sl.process, i))
        # `decode`'s plan, decided once: each slot's meaning as one call on its raw value
        # (a trace decodes every slot of every state: `value`'s tests, made per slot,
        # were most of a liveness lasso's cost)
        self.convert: tuple[Callable[[int], Value], ...] = tuple(self._converter(i) for i in range(len(layout.slots)))
        self._plan: list[tuple[str, int, tuple[int, ...]]] = []  # (name, 0 scalar | 1 array | 2 buffer, slots)
        for name, slots in self.groups:
            sl = layout.slots[slots[0]]
            if sl.kind is SlotKind.BUFFER:
                self._plan.append((name, 2, slots))
            elif sl.element is None:
                self._plan.append((name, 0, slots))
            else:
                self._plan.append((name, 1, slots))
        self._pcs = tuple((proc, self.pc_names[proc], i) for proc, i in self.pc_slots)

    def _converter(self, slot: int) -> Callable[[int], Value]:
        """Slot's raw value -> its trace value, as `value` says, in one call."""
        sl = self.layout.slots[slot]
        t = sl.type
        if sl.kind is SlotKind.TASK:
            return TASK_STATES.__getitem__
        if isinstance(t, m.BoolT):
            return bool
        if isinstance(t, m.EnumT):
            members, n = t.members, len(t.members)
            return lambda raw: members[raw] if 0 <= raw < n else raw
        if isinstance(t, m.BitVecT) and t.signed:
            return lambda raw: m.to_signed(int(raw), t.width)
        if isinstance(t, (m.IntT, m.BitVecT)):
            return int
        return lambda raw: self.value(slot, raw)  # bit sets, wait queues: their members

    def value(self, slot: int, raw: int) -> Value:
        sl = self.layout.slots[slot]
        t = sl.type
        if sl.kind is SlotKind.TASK:
            return TASK_STATES[raw]
        if isinstance(t, m.BoolT):
            return bool(raw)
        if isinstance(t, m.EnumT):
            return t.members[raw] if 0 <= raw < len(t.members) else raw
        if isinstance(t, m.BitsetT):
            bits = [b for b in range(t.size) if raw >> b & 1]
            return Members(t.elem.members[b] for b in bits) if t.elem else Members(bits)
        if isinstance(t, m.WaitQueueT):
            return Members(self.layout.instance_names[g] for g in range(len(self.layout.instance_names))
                         if raw >> g & 1)
        return m.value_of(int(raw), t)  # s8 .. s64: the pattern's two's-complement value

    def buffered(self, slots: tuple[int, ...], state: tuple[int, ...]) -> Buffered:
        entries = []
        for a in slots[::2]:
            address = state[a]
            if address == 0:
                break
            entries.append((self.layout.slots[address - 1].name, self.value(address - 1, state[a + 1])))
        return Buffered(entries)

    def decode(self, state: tuple[int, ...]) -> TraceState:
        convert = self.convert
        values: list[tuple[str, Value]] = []
        for name, how, at in self._plan:
            if how == 0:
                k = at[0]
                values.append((name, convert[k](state[k])))
            elif how == 1:
                values.append((name, tuple([convert[i](state[i]) for i in at])))
            else:
                values.append((name, self.buffered(at, state)))
        if self.layout.lkmm is not None:
            values += self.stale(state)
        pcs = tuple([(proc, names[state[i]]) for proc, names, i in self._pcs])
        return TraceState(tuple(values), pcs)

    def stale(self, state: tuple[int, ...]) -> list[tuple[str, Value]]:
        """lkmm: per CPU, `view(cpu) = [x=0]`, the locations where it still reads an older
        store than memory's, and the value it reads there (an empty list: none)."""
        views = self.layout.lkmm
        if views is None:
            return []
        from ..memory.lkmm import Views  # (loaded by the runs under `memory lkmm` only)

        assert isinstance(views, Views)  # (StateLayout types it `object`: the IR sits below memory/)
        out: list[tuple[str, Value]] = []
        for cpu in views.cpus:
            entries = []
            for j, loc in enumerate(views.locations):
                lag = state[cpu.cur[j]]
                if cpu.gid in loc.readers and 0 < lag < views.bound:
                    entries.append((loc.name, self.value(loc.slot, state[loc.old[lag - 1]])))
            if any(cpu.gid in loc.readers for loc in views.locations):
                out.append((f"view({cpu.name})", Buffered(entries)))
        return out


def changes(before: TraceState, after: TraceState) -> tuple[tuple[str, Value], ...]:
    out = []
    for (k, a), (_, b) in zip(before.values, after.values):
        if a != b:
            out.append((k, b))
    return tuple(out)


def show_value(v: Value) -> str:
    """A value as a kernel developer writes it: true/false, 0x-free ints, {A, B} sets."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Members):
        return "{" + ", ".join(show_value(x) for x in v) + "}"
    if isinstance(v, Buffered):
        return "[" + ", ".join(f"{loc}={show_value(x)}" for loc, x in v) + "]"
    if isinstance(v, tuple):
        return "[" + ", ".join(show_value(x) for x in v) + "]"
    return str(v)


def show_number(v) -> str:
    """A lemma's value, where the bits matter: decimal and hex for integers, true/false for bools."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v} ({hex(v)})" if v >= 0 else f"{v} (-{hex(-v)})"


# ---- replaying a saved trace ---------------------------------------------------


class ReplayStatus(enum.Enum):
    OK = "ok"  # the step ran as recorded
    CHANGED = "changed"  # it ran, but the model now needs other or extra steps of the process for it
    SKIPPED = "skipped"  # it changed nothing the trace records and has no counterpart any more
    DIVERGED = "diverged"  # no step of the process leads to the recorded state


@record
class ReplayStep:
    number: int  # 1-based step of the recorded trace
    recorded: Action
    status: ReplayStatus
    ran: tuple[Action, ...] = ()  # what the model ran for it (extra steps first), when not exactly the recorded one
    note: str = ""
    line: int | None = None  # the statement's line in the replayed model (None: it has no such statement)


@record
class ReplayResult:
    """A saved trace re-executed against a (possibly edited) model: whether every step is
    still enabled and still reaches the violation, or where and why it diverges."""

    trace_file: str
    recorded_variant: str
    property: str
    kind: str
    recorded_steps: int
    variant: str  # the variant replayed against
    steps: tuple[ReplayStep, ...]
    reproduced: bool
    reason: str  # why it reproduces, or where and why it diverges
    diverged_at: int | None = None  # 0: initial state, 1..n: a step, n + 1: the final check
    expected_violation: bool = False  # the variant expects this property to be violated
    inconclusive: bool = False  # the replay hit a limit and cannot say
    notes: tuple[str, ...] = ()
