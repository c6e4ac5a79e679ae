"""Resolved model -> IR: the flat state layout and, per process, its atomic steps.

A process's body becomes a control-flow graph whose nodes are program counters (pcs).
Each simple statement is one `Step`; `if`/`while` conditions are steps that pick the
next pc; `goto`, `break`, `continue`, `return` and the ends of blocks are not steps
(they only decide where a step leads); `choose` is a pc whose steps are the first
steps of its branches; an `atomic` block is one step with a straight-line body.

Under `memory tso` the layout also holds, per CPU (process instance) that makes plain
stores to shared variables, a bounded FIFO store buffer, and each step records whether
it is a fence (smp_mb, a LOCK-prefixed RMW, an atomic block that writes shared memory):
the compiler turns that into "enabled only when this CPU's buffer is empty".
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import sys
from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import TypedDict, TypeGuard

from .semantics import contexts
from . import model as m
from .semantics.primitives import BUILTINS, X86, Cls
from .base.errors import Span, SpecError, source_text
from .base.limits import MAX_PROCESSES, MAX_VALUES
from .semantics.lower import lock_guard
from .base.record import record

# ---- state layout --------------------------------------------------------------


class SlotKind(enum.Enum):
    VAR = "var"
    PC = "pc"
    TASK = "task"  # a sleeping-capable process's task state: 0 RUNNING, 1 INTERRUPTIBLE
    BUFFER = "buffer"  # half of a store-buffer entry (tso): its address or its value
    VIEW = "view"  # lkmm: an older store's value, a view's lag (checker/memory/lkmm.py)


@record
class Slot:
    """One small integer of the state vector."""

    name: str  # as shown in traces: `mode`, `pending[1]`, `vcpu[0].x`, `pc vcpu`
    kind: SlotKind
    type: m.Type
    var: str | None = None  # the variable's display name (without an element index)
    element: int | None = None  # index within an array variable
    process: str | None = None  # instance name, for PC/TASK/local slots


@record(eq=False)
class StoreBuffer:
    """One CPU's x86-TSO store buffer: `capacity` entries, oldest first, packed from the
    front. Entry k is two slots: `base + 2k` holds the address (the stored variable's
    slot + 1; 0 marks an empty entry) and `base + 2k + 1` the value. Keeping unused
    entries at (0, 0) makes equal buffers equal tuples."""

    cpu: str  # process instance name
    gid: int
    base: int
    capacity: int
    locations: frozenset  # the global VarSyms this CPU stores plainly: the only ones buffered

    @property
    def name(self) -> str:
        return f"sb({self.cpu})"

    def entry(self, k: int) -> tuple[int, int]:
        """The (address slot, value slot) of entry k."""
        return self.base + 2 * k, self.base + 2 * k + 1

    def holds(self, target: m.TExpr) -> bool:
        """Whether a plain access to `target` goes through this buffer: a global this CPU
        stores plainly (the one definition both back ends ask)."""
        return (isinstance(target, (m.Var, m.Elem)) and target.sym.scope is m.Scope.GLOBAL
                and target.sym in self.locations)


@record
class StateLayout:
    """Where every variable, program counter, task state and store buffer lives in the
    state tuple."""

    slots: tuple[Slot, ...]
    var_base: dict  # (VarSym, instance or None) -> first slot
    pc_base: dict[str, int]  # process name -> slot of instance 0 (instances are contiguous)
    task_slot: dict[int, int]  # gid -> slot, for processes that can sleep on a wait queue
    gid_base: dict[str, int]  # process name -> gid of instance 0
    instance_names: tuple[str, ...]  # by gid
    buffers: tuple[StoreBuffer, ...] = ()  # tso only, by gid order
    lkmm: object | None = None  # lkmm only: lkmm_machine.Views, where the machine's slots are

    def __len__(self) -> int:
        return len(self.slots)

    def buffer_of(self, gid: int) -> StoreBuffer | None:
        return next((b for b in self.buffers if b.gid == gid), None)

    def slot_of(self, sym: m.VarSym, instance: int | None) -> int:
        if sym.task:  # `P.state`
            assert sym.process is not None, "a task state belongs to its process"
            return self.task_slot[self.gid_base[sym.process] + (instance or 0)]
        key = (sym, instance if sym.scope is m.Scope.LOCAL else None)
        return self.var_base[key]


TASK_STATES = ("RUNNING", "INTERRUPTIBLE")

# ---- steps ---------------------------------------------------------------------


class StepKind(enum.Enum):
    ASSIGN = "assign"
    CALL = "call"
    BRANCH = "branch"  # if/while condition
    AWAIT = "await"
    ATOMIC = "atomic"
    ASSERT = "assert"
    SKIP = "skip"
    BARRIER = "barrier"
    SCHEDULE = "schedule"
    STUTTER = "stutter"  # changes nothing and stays: the process may rest there for ever


@record
class Op:
    """One operation of a step's body; bodies run to completion in one atomic step."""


@record
class OAssign(Op):
    target: m.TExpr
    value: m.TExpr


@record
class OEval(Op):
    call: m.Builtin


@record
class OIf(Op):
    cond: m.TExpr
    then: tuple[Op, ...]
    orelse: tuple[Op, ...]


@record
class OWhile(Op):
    cond: m.TExpr
    body: tuple[Op, ...]


@record
class OBreak(Op):
    pass


@record
class OContinue(Op):
    pass


@record
class OAssert(Op):
    property: str
    cond: m.TExpr
    span: Span


@record
class OBarrier(Op):
    name: str


@record
class OInline(Op):
    """An inline procedure's body inside an atomic step; `return` leaves it."""

    name: str
    body: tuple[Op, ...]


@record
class OReturn(Op):
    pass


@record
class OGoto(Op):
    """Set this process's pc: every path through a step's body ends in one."""

    pc: int


@record
class Step:
    uid: int  # unique within its process
    process: str
    kind: StepKind
    guard: m.TExpr | None  # pure; the step is enabled when it holds
    body: tuple[Op, ...]
    span: Span
    text: str  # the statement as written, for traces
    inline: str | None  # innermost inline procedure it was expanded from
    label: str | None
    fence: bool = False  # tso: runs only with an empty store buffer (see `is_fence`)
    generated: bool = False  # made by contexts.py (sched-in, preemption, irq entry/exit), not written
    # a step the partial-order reduction merged (engines/reduce.py): the uids of the steps
    # it runs, in order (coverage counts each of them as run when it runs)
    parts: tuple[int, ...] = ()


@record
class ProcessIR:
    name: str
    count: int | None
    unfair: bool
    pc_names: tuple[str, ...]
    steps_at: tuple[tuple[Step, ...], ...]  # by pc
    steps: tuple[Step, ...]
    end_pcs: frozenset[int]
    label_pcs: dict[str, frozenset[int]]
    sleeps: bool  # calls prepare_to_wait / finish_wait / schedule: has a task state
    plain_stores: frozenset = frozenset()  # global VarSyms it writes with plain stores
    fair_actions: tuple[FairAction, ...] = ()  # `fair` / `strongly fair` statements

    @property
    def instances(self) -> int:
        return 1 if self.count is None else self.count

    def instance_name(self, i: int) -> str:
        return self.name if self.count is None else f"{self.name}[{i}]"


@record
class FairAction:
    """The first step(s) of a `fair` statement: per instance, taken eventually while it
    stays enabled (weak) or when it is enabled infinitely often (strong)."""

    uids: frozenset[int]  # the Step uids that take it (several: a `fair choose`)
    strong: bool
    span: Span
    text: str

    def describe(self) -> str:
        return f"the action at line {self.span.line}"


MAX_INITIAL_STATES = 1_000_000


@record
class Program:
    """The whole IR: the model it came from, its layout, processes and initial states.

    `init_choices` gives, per slot, the values it may start with (a `range` for `any`,
    which may be far too large to enumerate, e.g. a u64); `initial_states` enumerates
    them for the explicit engine, while the Z3 engines constrain them symbolically."""

    model: m.Model
    layout: StateLayout
    processes: tuple[ProcessIR, ...]
    init_choices: tuple[tuple[int, ...] | range, ...]
    properties: tuple[m.Property, ...] = field(default=())

    @property
    def initial_states(self) -> tuple[tuple[int, ...], ...]:
        return _initial_states(self.model, self.layout, self.init_choices)


def build(model: m.Model) -> Program:
    try:
        model = contexts.lower(model)  # execution contexts: hidden state, guards, generated steps
        procs = tuple(_ProcessBuilder(model, p).build() for p in model.processes)
        procs = contexts.finish(model, procs, sys.modules[__name__])
        layout = _layout(model, procs)
        choices = _init_choices(layout)
        if model.cpus is not None:
            listed = list(choices)
            contexts.initial_cpus(model, layout, listed)
            choices = tuple(listed)
        return Program(model, layout, procs, choices, model.properties)
    except SpecError as e:
        raise e.with_code("TR300") from None


# ---- layout --------------------------------------------------------------------


def _layout(model: m.Model, procs: tuple[ProcessIR, ...]) -> StateLayout:
    slots: list[Slot] = []
    var_base: dict = {}

    def add_var(sym: m.VarSym, instance: int | None, prefix: str):
        if len(slots) + (sym.type.length if isinstance(sym.type, m.ArrayT) else 1) > MAX_VALUES:
            raise SpecError(sym.span, f"'{prefix}{sym.name}' takes the state past {MAX_VALUES:,} values, the limit",
                            "that is the limit on variables and array elements in all, each process "
                            "instance's locals counted")
        var_base[(sym, instance)] = len(slots)
        name = prefix + sym.name
        if isinstance(sym.type, m.ArrayT):
            for k in range(sym.type.length):
                slots.append(Slot(f"{name}[{sym.type.lo + k}]", SlotKind.VAR, sym.type.elem, name, k,
                                  prefix.rstrip(".") or None))
        else:
            slots.append(Slot(name, SlotKind.VAR, sym.type, name, None, prefix.rstrip(".") or None))

    for sym in model.globals:
        add_var(sym, None, "")
    for p in model.processes:
        for i in range(p.instances):
            for sym in p.locals:
                add_var(sym, i, p.instance_name(i) + ".")
    pc_base: dict[str, int] = {}
    gid_base: dict[str, int] = {}
    names: list[str] = []
    for pir in procs:
        pc_base[pir.name] = len(slots)
        gid_base[pir.name] = len(names)
        for i in range(pir.instances):
            slots.append(Slot(f"pc {pir.instance_name(i)}", SlotKind.PC, m.IntT(0, len(pir.pc_names) - 1),
                              None, None, pir.instance_name(i)))
            names.append(pir.instance_name(i))
    task_slot: dict[int, int] = {}
    for pir in procs:
        if pir.sleeps or pir.name in model.task_states_read:  # (one that never waits stays RUNNING)
            for i in range(pir.instances):
                task_slot[gid_base[pir.name] + i] = len(slots)
                slots.append(Slot(f"{pir.instance_name(i)}.state", SlotKind.TASK, m.IntT(0, 1),
                                  None, None, pir.instance_name(i)))
    if len(names) > MAX_PROCESSES:
        raise SpecError(model.processes[0].span,
                        f"{len(names)} processes in one model; the limit is {MAX_PROCESSES}",
                        "every instance of a process array counts")
    buffers: list[StoreBuffer] = []
    if model.memory == "tso":
        addresses = m.IntT(0, len(slots))
        assert model.store_buffer is not None, "a tso model has its store buffers' size"
        for pir in procs:
            if not pir.plain_stores:
                continue  # a CPU that never stores plainly never has anything buffered
            for i in range(pir.instances):
                cpu = pir.instance_name(i)
                b = StoreBuffer(cpu, gid_base[pir.name] + i, len(slots), model.store_buffer, pir.plain_stores)
                for k in range(b.capacity):
                    slots.append(Slot(f"{b.name}[{k}] address", SlotKind.BUFFER, addresses, b.name, 2 * k, cpu))
                    slots.append(Slot(f"{b.name}[{k}] value", SlotKind.BUFFER, m.INT, b.name, 2 * k + 1, cpu))
                buffers.append(b)
        if len(names) + len(buffers) > 62:
            raise SpecError(model.processes[0].span, "under tso a model has at most 62 processes and store buffers together",
                            "each process instance and each CPU's store buffer takes one of 62 places: use fewer instances")
    return StateLayout(tuple(slots), var_base, pc_base, task_slot, gid_base, tuple(names), tuple(buffers))


def _init_choices(layout: StateLayout) -> tuple[tuple[int, ...] | range, ...]:
    choices: list[tuple[int, ...] | range] = [(0,)] * len(layout.slots)
    for (sym, _inst), base in layout.var_base.items():
        for k, allowed in enumerate(sym.init):
            choices[base + k] = allowed
    return tuple(choices)


def _initial_states(model: m.Model, layout: StateLayout, choices) -> tuple[tuple[int, ...], ...]:
    count = 1
    for c in choices:
        count *= c.stop - c.start if isinstance(c, range) else len(c)
    if count > MAX_INITIAL_STATES:
        widest = max(((sym, len(sym.init[0]) if not isinstance(sym.init[0], range)
                       else sym.init[0].stop - sym.init[0].start) for sym, _ in layout.var_base),
                     key=lambda x: x[1])[0]
        raise SpecError(widest.span, f"`any` gives {count:,} initial states; the explicit engine "
                        f"enumerates at most {MAX_INITIAL_STATES:,} ('{widest.name}' is a {widest.type.describe()})",
                        "check this model with --engine bmc or --engine induction, which treat `any` "
                        "symbolically, or give the variable a smaller type or a fixed initial value")
    return tuple(itertools.product(*choices))


# ---- lowering one process ------------------------------------------------------


class _StepFields(TypedDict, total=False):
    """What a node knows of its step before pcs are known (a jump or a choice: its span)."""

    kind: StepKind
    guard: m.TExpr | None
    body: list[Op]
    span: Span
    text: str
    inline: str | None
    branch: m.TExpr  # a branch step's condition


class _Node:
    __slots__ = ("kind", "target", "targets", "step", "gotos", "pc", "uid")

    def __init__(self, kind: str):
        self.kind = kind  # "step" | "jump" | "choice" | "end"
        self.target: _Node | None = None  # jump
        self.targets: list[_Node] = []  # choice
        self.step: _StepFields = {}  # step fields before pcs are known (none: a node with no span)
        self.pc: int | None = None


@dataclass
class _Scope:
    labels: dict[str, _Node] = field(default_factory=dict)
    parent: _Scope | None = None

    def find(self, name: str) -> _Node | None:
        s: _Scope | None = self
        while s is not None:
            if name in s.labels:
                return s.labels[name]
            s = s.parent
        return None


@dataclass
class _Ctx:
    brk: _Node | None = None
    cont: _Node | None = None
    ret: _Node | None = None
    scope: _Scope = field(default_factory=_Scope)
    inline: str | None = None


class _ProcessBuilder:
    def __init__(self, model: m.Model, proc: m.Process):
        self.model = model
        self.proc = proc
        self.nodes: list[_Node] = []
        self.gotos: list[tuple[_Node, str, _Scope, Span]] = []
        self.labelled: list[tuple[str, _Node]] = []
        self.loop_bodies: dict[int, _Node] = {}  # id of a while/loop statement -> its body's entry
        self.end_covered: list[_Node] = []  # body entries of `end`-labelled loops: valid ends too
        self.stutters: dict[int, tuple[_Node, _Node]] = {}  # id of a `stutter;` place -> (it, its step back)
        self.fair: list[tuple[_Node, m.SFair]] = []  # `fair` statements: their entry nodes
        self.sleeps = False

    def node(self, kind: str) -> _Node:
        n = _Node(kind)
        self.nodes.append(n)
        return n

    def text(self, span: Span) -> str:
        return source_text(self.model.source, span)

    def build(self) -> ProcessIR:
        end = self.node("end")
        root = _Ctx()
        entry = self.lower_block(self.proc.body, end, root)
        for jump, label, scope, span in self.gotos:
            target = scope.find(label)
            if target is None:
                raise SpecError(span, f"goto to an unknown label '{label}'",
                                "labels are local to their process (and the inline they are in)")
            jump.target = target
        return self.finish(entry, end)

    # -- statements to nodes (built back to front: each returns its entry node)
    def lower_block(self, body, nxt: _Node, ctx: _Ctx) -> _Node:
        entry = nxt
        for s in reversed(body):
            entry = self.lower(s, entry, ctx)
        return entry

    def step(self, kind: StepKind, s: m.RStmt, body: list[Op], nxt: _Node | None, ctx: _Ctx,
             guard: m.TExpr | None = None, text: str | None = None) -> _Node:
        n = self.node("step")
        n.step = dict(kind=kind, guard=guard, body=body, span=s.span,
                      text=text if text is not None else self.text(s.span), inline=ctx.inline)
        n.targets = [nxt] if nxt is not None else []
        return n

    def lower(self, s: m.RStmt, nxt: _Node, ctx: _Ctx) -> _Node:
        if isinstance(s, m.SInlined):
            if s.name == "":
                return self.lower_block(s.body, nxt, ctx)
            inner = _Ctx(ctx.brk, ctx.cont, nxt, _Scope(parent=ctx.scope), s.name)
            return self.lower_block(s.body, nxt, inner)
        if isinstance(s, m.SAssign):
            return self.step(StepKind.ASSIGN, s, [OAssign(s.target, s.value)], nxt, ctx)
        if isinstance(s, m.SEval):
            name = s.call.name
            cls = BUILTINS[name].cls
            if cls is Cls.SCHEDULE:
                self.sleeps = True
                return self.step(StepKind.SCHEDULE, s, [], nxt, ctx)
            if cls in (Cls.WQ_ADD, Cls.WQ_REMOVE):  # finish_wait writes the task state too, waited or not
                self.sleeps = True
            if cls is Cls.FENCE:
                return self.step(StepKind.BARRIER, s, [OBarrier(name)], nxt, ctx)
            if cls is Cls.LOCK:  # an await-and-set: the step waits for the lock and takes it
                return self.step(StepKind.ATOMIC, s, [OEval(s.call)], nxt, ctx, guard=lock_guard(s.call))
            return self.step(StepKind.CALL, s, [OEval(s.call)], nxt, ctx)
        if isinstance(s, m.SAssert):
            return self.step(StepKind.ASSERT, s, [OAssert(s.property, s.cond, s.span)], nxt, ctx)
        if isinstance(s, m.SSkip):
            return self.step(StepKind.SKIP, s, [], nxt, ctx)
        if isinstance(s, m.SStutter):
            # a place with a step that changes nothing and comes back, beside what follows
            place = self.node("choice")
            place.step = dict(span=s.span)
            back = self.step(StepKind.STUTTER, s, [], place, ctx)
            place.targets = [back, nxt]
            self.stutters[id(place)] = (place, back)
            return place
        if isinstance(s, m.SFair):
            entry = self.lower_block(s.body, nxt, ctx)
            self.fair.append((entry, s))
            return entry
        if isinstance(s, m.SAwait):
            return self.step(StepKind.AWAIT, s, [], nxt, ctx, guard=s.cond)
        if isinstance(s, m.SIf):
            if isinstance(s.cond, m.Const):
                return self.lower_block(s.then if s.cond.value else s.orelse, nxt, ctx)
            then = self.lower_block(s.then, nxt, ctx)
            orelse = self.lower_block(s.orelse, nxt, ctx)
            n = self.step(StepKind.BRANCH, s, [], None, ctx, text=f"if ({self.text(s.cond.span)})")
            n.targets = [then, orelse]
            n.step["branch"] = s.cond
            return n
        if isinstance(s, (m.SWhile, m.SLoop)):
            head = self.node("jump")
            head.step = dict(span=s.span)  # where to point if the loop takes no step
            inner = _Ctx(nxt, head, ctx.ret, ctx.scope, ctx.inline)
            body = self.lower_block(s.body, head, inner)
            self.loop_bodies[id(s)] = body
            if isinstance(s, m.SLoop) or (isinstance(s.cond, m.Const) and s.cond.value):
                head.target = body
                return head
            if isinstance(s.cond, m.Const):
                return nxt
            n = self.step(StepKind.BRANCH, s, [], None, ctx, text=f"while ({self.text(s.cond.span)})")
            n.targets = [body, nxt]
            n.step["branch"] = s.cond
            head.target = n
            return n
        if isinstance(s, m.SBreak):
            return self.jump(ctx.brk)
        if isinstance(s, m.SContinue):
            return self.jump(ctx.cont)
        if isinstance(s, m.SReturn):
            return self.jump(ctx.ret)
        if isinstance(s, m.SGoto):
            j = self.node("jump")
            j.step = dict(span=s.span)
            self.gotos.append((j, s.label, ctx.scope, s.span))
            return j
        if isinstance(s, m.SLabeled):
            entry = self.lower(s.stmt, nxt, ctx)
            if s.label in ctx.scope.labels:
                raise SpecError(s.span, f"duplicate label '{s.label}'", "give each label its own name")
            ctx.scope.labels[s.label] = entry
            self.labelled.append((s.label, entry))
            if s.label.startswith("end") and id(s.stmt) in self.loop_bodies:
                # an idle loop rests between iterations: at its head and where its body starts
                self.end_covered.append(self.loop_bodies[id(s.stmt)])
            return entry
        if isinstance(s, m.SChoose):
            n = self.node("choice")
            n.targets = [self.lower_block(b, nxt, ctx) for b in s.branches]
            n.step = dict(span=s.span)
            for t in n.targets:  # a branch that starts with `stutter;` stays at the choose
                if id(t) in self.stutters:
                    self.stutters[id(t)][1].targets = [n]
            return n
        if isinstance(s, m.SAtomic):
            stmts = list(s.body)
            guard = None
            if stmts and isinstance(stmts[0], m.SAwait):
                guard = stmts[0].cond
                stmts.pop(0)
            ops = self.ops(stmts)
            return self.step(StepKind.ATOMIC, s, ops, nxt, ctx, guard=guard,
                             text=self.text(s.span))
        raise SpecError(s.span, f"unsupported statement {type(s).__name__}",
                        "spec/LANGUAGE.md lists the statements")

    def jump(self, target: _Node | None) -> _Node:
        j = self.node("jump")
        j.target = target
        return j

    # -- an atomic block's body as straight-line operations
    def ops(self, body) -> list[Op]:
        out: list[Op] = []
        for s in body:
            if isinstance(s, m.SAssign):
                out.append(OAssign(s.target, s.value))
            elif isinstance(s, m.SEval):
                if BUILTINS[s.call.name].cls is Cls.FENCE:
                    out.append(OBarrier(s.call.name))
                else:
                    if BUILTINS[s.call.name].cls in (Cls.WQ_ADD, Cls.WQ_REMOVE):
                        self.sleeps = True
                    out.append(OEval(s.call))
            elif isinstance(s, m.SAssert):
                out.append(OAssert(s.property, s.cond, s.span))
            elif isinstance(s, m.SSkip):
                pass
            elif isinstance(s, m.SIf):
                out.append(OIf(s.cond, tuple(self.ops(s.then)), tuple(self.ops(s.orelse))))
            elif isinstance(s, m.SWhile):
                out.append(OWhile(s.cond, tuple(self.ops(s.body))))
            elif isinstance(s, m.SBreak):
                out.append(OBreak())
            elif isinstance(s, m.SContinue):
                out.append(OContinue())
            elif isinstance(s, m.SInlined):
                inner = tuple(self.ops(s.body))
                out.append(OInline(s.name, inner) if s.name else OInline("", inner))
            elif isinstance(s, m.SReturn):
                out.append(OReturn())
            elif isinstance(s, m.SAtomic):  # nested: already part of this step
                out.extend(self.ops(s.body))
            else:
                raise SpecError(s.span, f"{type(s).__name__[1:].lower()} is not allowed inside `atomic`",
                                "an atomic block is straight-line code with `if` and bounded `while`: move it out")
        return out

    # -- nodes to pcs and steps
    def resolve(self, n: _Node) -> _Node:
        seen: list[_Node] = []
        while n.kind == "jump":
            if n in seen or n.target is None:
                where = next((j.step["span"] for j in seen if j.step), self.proc.span)
                raise SpecError(where, f"process '{self.proc.name}' has a loop that takes no step",
                                "a `loop` or `goto` cycle must contain at least one statement; add `skip;` or `await`")
            seen.append(n)
            n = n.target
        return n

    def finish(self, entry: _Node, end: _Node) -> ProcessIR:
        order: list[_Node] = []
        pcs: dict[int, int] = {}

        def visit(n: _Node) -> int:
            n = self.resolve(n)
            if id(n) not in pcs:
                pcs[id(n)] = len(order)
                order.append(n)
            return pcs[id(n)]

        # breadth-first from the entry, so pcs are numbered in a stable, readable order
        visit(entry)
        i = 0
        while i < len(order):
            n = order[i]
            i += 1
            if n.kind == "step":
                for t in n.targets:
                    visit(t)
            elif n.kind == "choice":
                for s in self.closure(n):
                    for t in s.targets:
                        visit(t)
        uid = itertools.count()
        made: dict[int, Step] = {}
        labels_of: dict[int, str] = {}
        for label, node in self.labelled:
            labels_of.setdefault(id(self.resolve(node)), label)

        def make(n: _Node) -> Step:
            if id(n) not in made:
                d = n.step
                targets = [pcs[id(self.resolve(t))] for t in n.targets]
                body: tuple[Op, ...]
                if "branch" in d:
                    body = (OIf(d["branch"], (OGoto(targets[0]),), (OGoto(targets[1]),)),)
                else:
                    body = tuple(d["body"]) + (OGoto(targets[0]),)
                made[id(n)] = Step(next(uid), self.proc.name, d["kind"], d["guard"], body, d["span"],
                                   d["text"], d["inline"], labels_of.get(id(n)), is_fence(d["kind"], body))
            return made[id(n)]

        steps_at: list[tuple[Step, ...]] = []
        for n in order:
            if n.kind == "step":
                steps_at.append((make(n),))
            elif n.kind == "choice":
                steps_at.append(tuple(make(s) for s in self.closure(n)))
            else:
                steps_at.append(())
        names: list[str] = []
        used: set[str] = set()
        next_suffix: dict[str, int] = {}  # base -> the first k not yet tried (linear, not quadratic)
        for n in order:
            if id(n) in labels_of:
                name = labels_of[id(n)]
            elif n.kind == "end":
                # a finished process; "terminated" when the model has its own `end:` label
                name = "terminated" if any(label == "end" for label, _ in self.labelled) else "end"
            else:
                name = f"line{n.step['span'].line}"
            base = name
            if name in used:  # base_2, base_3, ...: the first one free (names are only ever added)
                k = next_suffix.get(base, 2)
                while (name := f"{base}_{k}") in used:
                    k += 1
                next_suffix[base] = k + 1
            used.add(name)
            names.append(name)
        label_pcs: dict[str, set[int]] = {}
        pcs_of_step: dict[int, list[int]] = {}  # Step uid -> the pcs that may take it
        for pc, at in enumerate(steps_at):
            for st in at:
                pcs_of_step.setdefault(st.uid, []).append(pc)
        for label, node in self.labelled:
            r = self.resolve(node)
            if id(r) in pcs:
                label_pcs.setdefault(label, set()).add(pcs[id(r)])
            elif r.kind == "step" and id(r) in made:
                label_pcs.setdefault(label, set()).update(pcs_of_step.get(made[id(r)].uid, ()))
            else:
                label_pcs.setdefault(label, set())
        end_pcs = {pcs[id(end)]} if id(end) in pcs else set()
        for label, pcset in label_pcs.items():
            if label.startswith("end"):
                end_pcs |= pcset
        for place, _back in self.stutters.values():
            if id(place) in pcs and any(self.resolve(t).kind == "end" for t in order[pcs[id(place)]].targets):
                end_pcs.add(pcs[id(place)])
        for node in self.end_covered:
            r = self.resolve(node)
            if id(r) in pcs:
                end_pcs.add(pcs[id(r)])
            elif r.kind == "step" and id(r) in made:
                end_pcs.update(pcs_of_step.get(made[id(r)].uid, ()))
        # `proc@end`: the process is at a valid end (terminated, or at a label end...)
        label_pcs["end"] = set(end_pcs) | label_pcs.get("end", set())
        all_steps = tuple(sorted(made.values(), key=lambda s: s.uid))
        fair_actions = []
        for node, fair in self.fair:
            r = self.resolve(node)
            firsts = [r] if r.kind == "step" else self.closure(r) if r.kind == "choice" else []
            uids = frozenset(made[id(x)].uid for x in firsts if id(x) in made)
            if uids:
                fair_actions.append(FairAction(uids, fair.strong, fair.span, self.text(fair.span)))
        stores = frozenset(sym for st in all_steps for sym in plain_stores(st))
        return ProcessIR(self.proc.name, self.proc.count, self.proc.unfair, tuple(names),
                         tuple(steps_at), all_steps, frozenset(end_pcs),
                         {k: frozenset(v) for k, v in label_pcs.items()}, self.sleeps, stores,
                         tuple(fair_actions))

    def closure(self, n: _Node, seen=None) -> list[_Node]:
        """The step nodes a process at choice node `n` may take first."""
        seen = seen if seen is not None else set()
        out: list[_Node] = []
        for t in n.targets:
            r = self.resolve(t)
            if id(r) in seen:
                continue
            seen.add(id(r))
            if r.kind == "step":
                out.append(r)
            elif r.kind == "choice":
                out.extend(self.closure(r, seen))
            elif id(n) in self.stutters:  # `stutter;` last: the process may rest there (a valid end)
                continue
            else:
                raise SpecError(n.step["span"], "a `choose` branch must start with a statement",
                                "a branch that only leaves (break, return, goto) needs a `skip;` first")
        return out


# ---- memory accesses (what tso needs to know about a step) ----------------------


def walk_ops(ops) -> Iterator[Op]:
    for op in ops:
        yield op
        if isinstance(op, OIf):
            yield from walk_ops(op.then)
            yield from walk_ops(op.orelse)
        elif isinstance(op, (OWhile, OInline)):
            yield from walk_ops(op.body)


def builtins_in(x: m.TExpr | None) -> Iterator[m.Builtin]:
    """Every kernel primitive called inside an expression, innermost last."""
    if x is None:
        return
    if isinstance(x, m.Builtin):
        yield x
        for a in x.args:
            yield from builtins_in(a)
    elif isinstance(x, m.Bin):
        yield from builtins_in(x.left)
        yield from builtins_in(x.right)
    elif isinstance(x, (m.Un, m.Conv)):
        yield from builtins_in(x.operand)
    elif isinstance(x, m.Ite):
        for sub in (x.cond, x.then, x.orelse):
            yield from builtins_in(sub)
    elif isinstance(x, (m.Elem, m.At, m.LocalOf)):
        yield from builtins_in(x.index)
    elif isinstance(x, m.Quant):
        yield from builtins_in(x.body)


def op_exprs(op: Op) -> tuple:
    if isinstance(op, OAssign):
        return (op.target, op.value)
    if isinstance(op, OEval):
        return (op.call,)
    if isinstance(op, (OIf, OWhile, OAssert)):
        return (op.cond,)
    return ()


def _is_global(target: m.TExpr) -> TypeGuard[m.Var | m.Elem]:
    return isinstance(target, (m.Var, m.Elem)) and target.sym.scope is m.Scope.GLOBAL


SCHEDULE_X86 = next(p.x86 for p in BUILTINS.values() if p.cls is Cls.SCHEDULE)


def is_fence(kind: StepKind, body) -> bool:
    """Whether x86 runs this step as a full fence: it contains smp_mb, a LOCK-prefixed
    read-modify-write or a lock-taking primitive, or it is an `atomic` block that writes
    shared memory (on x86 only a locked instruction makes a read-modify-write atomic)."""
    if kind is StepKind.SCHEDULE:
        return SCHEDULE_X86 is X86.LOCKED
    for op in walk_ops(body):
        if isinstance(op, OBarrier) and BUILTINS[op.name].x86 is X86.FENCE:
            return True
        for x in op_exprs(op):
            if any(BUILTINS[b.name].x86 in (X86.LOCKED, X86.FENCE) for b in builtins_in(x)):
                return True
        if kind is StepKind.ATOMIC and _plain_store_target(op) is not None:
            return True
    return False


def _plain_store_target(op: Op) -> m.VarSym | None:
    """The global a plain store writes (a `ghost var` is outside the memory model: none)."""
    if isinstance(op, OAssign) and _is_global(op.target):
        sym = op.target.sym
    elif isinstance(op, OEval) and BUILTINS[op.call.name].x86 is X86.STORE and _is_global(op.call.args[0]):
        sym = op.call.args[0].sym
    else:
        return None
    return None if sym.ghost else sym


def plain_stores(step: Step) -> Iterator[m.VarSym]:
    """The global variables a step writes with plain stores, which tso buffers: an
    assignment or WRITE_ONCE-like primitive, outside a locked `atomic` block."""
    if step.kind is StepKind.ATOMIC and step.fence:
        return
    for op in walk_ops(step.body):
        sym = _plain_store_target(op)
        if sym is not None:
            yield sym


# ---- dead values ----------------------------------------------------------------


def mentions(x: object, sym: m.VarSym) -> bool:
    """Whether an expression, an op or a property reads or writes `sym` anywhere."""
    return any(isinstance(t, (m.Var, m.Elem, m.LocalOf)) and t.sym == sym for t in m.terms(x))


def before_gotos(ops: tuple[Op, ...], pcs: set[int] | frozenset[int], extra: tuple[Op, ...]) -> tuple[Op, ...]:
    """`ops` with `extra` run just before every jump into one of `pcs`, wherever the jump
    sits in the step's body."""
    out: list[Op] = []
    for op in ops:
        if isinstance(op, OGoto) and op.pc in pcs:
            out += [*extra, op]
        elif isinstance(op, OIf):
            out.append(dataclasses.replace(op, then=before_gotos(op.then, pcs, extra),
                                           orelse=before_gotos(op.orelse, pcs, extra)))
        elif isinstance(op, (OWhile, OInline)):
            out.append(dataclasses.replace(op, body=before_gotos(op.body, pcs, extra)))
        else:
            out.append(op)
    return tuple(out)


def forget_dead(proc: ProcessIR, sym: m.VarSym) -> ProcessIR:
    """Dead-variable reduction for one scalar local of `proc`, as SPIN's: on each step
    into a pc from which every path overwrites `sym` before reading it, set it back to
    its initial value, so that states which differ only in a value nobody will read are
    one state. The caller guarantees that no other process and no property mentions it.

    At a dead pc `sym` then always holds its initial value (the initial state has it,
    every step into a dead pc from a live one or that writes `sym` resets it, and a step
    from a dead pc that does not write it leaves it), so only those steps get the reset
    and a step that changed nothing still changes nothing."""
    (init,) = sym.init
    if not isinstance(init, tuple) or len(init) != 1:
        return proc  # `any` initial value: no single value to forget to
    reset = OAssign(m.Var(sym.span, sym.type, sym), m.Const(sym.span, sym.type, init[0]))

    def kills(st: Step) -> bool:  # writes sym first, on every path, reading nothing of it before
        if mentions(st.guard, sym):
            return False
        for op in st.body:
            if isinstance(op, OAssign) and isinstance(op.target, m.Var) and op.target.sym == sym:
                return not mentions(op.value, sym)
            if mentions(op, sym) or isinstance(op, OGoto):
                return False
        return False

    def targets(st: Step) -> set[int]:
        return {op.pc for op in walk_ops(st.body) if isinstance(op, OGoto)}

    kill = {st.uid: kills(st) for st in proc.steps}
    use = {st.uid: not kill[st.uid] and (mentions(st.guard, sym) or mentions(st.body, sym)) for st in proc.steps}
    live = [False] * len(proc.steps_at)
    changed = True
    while changed:  # least fixpoint: live at a pc if some step there reads it, or passes it on
        changed = False
        for pc, at in enumerate(proc.steps_at):
            if not live[pc] and any(use[st.uid] or (not kill[st.uid] and any(live[t] for t in targets(st)))
                                    for st in at):
                live[pc] = changed = True

    dead = {pc for pc, on in enumerate(live) if not on}
    remade: dict[int, Step] = {}
    for pc, at in enumerate(proc.steps_at):
        for st in at:
            if live[pc] or kill[st.uid] or mentions(st.body, sym):
                remade[st.uid] = dataclasses.replace(st, body=before_gotos(st.body, dead, (reset,)))
    if not remade:
        return proc

    def again(st: Step) -> Step:
        return remade.get(st.uid, st)

    return dataclasses.replace(proc, steps_at=tuple(tuple(again(st) for st in at) for at in proc.steps_at),
                               steps=tuple(again(st) for st in proc.steps))
