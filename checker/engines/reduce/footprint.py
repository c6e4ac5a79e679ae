"""Footprints: what each step reads and writes, decided once from the IR, for the
partial-order reduction, the step merging and the symmetry check (the argument is in
the package's docstring)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ... import ir, model as m
from ...backends.python import views_of
from ...semantics.contexts import SCHED_IN
from ...semantics.fold import simplify
from ...semantics.primitives import BUILTINS, Arg
from ...semantics.lower import SAFE_READS, TestBit, WaitAdd, WaitRemove, Wake, lower
from ...base.record import record


# the arguments that a primitive which writes state writes
_LOCATIONS = (Arg.LV, Arg.BITS, Arg.WQ, Arg.LOCK)

Resource = int | tuple  # a slot number, or ("at", gid, pcs): instance gid is at one of pcs

#: a guard's test of one slot against a constant: (slot, comparison, value)
Lit = tuple[int, str, int]

_TESTS = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__}
_NEGATED = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_SWAPPED = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}


def holds(lit: Lit, value: int) -> bool:
    """The literal holds where its slot has `value`."""
    return bool(_TESTS[lit[1]](value, lit[2]))


@record
class Footprint:
    """What a step reads and writes (`reads` is everything it may read). In a model
    with execution contexts also (`Analysis.dynamic`): `lits`, the literals among the
    guard's conjuncts that it reaches without a conjunct that may fail, so that the
    step is disabled wherever one is false; and `masked`, (lit, slots) for a conjunct
    `lit || e` of the guard: slots only e reads, which the step does not depend on
    where lit holds (an interrupt-entry check `irqs_off[c] || !pending_H[c]`)."""

    reads: frozenset
    writes: frozenset
    lits: tuple[Lit, ...] = ()
    masked: tuple[tuple[Lit, frozenset], ...] = ()

    def conflicts(self, reads: frozenset, writes: frozenset) -> bool:
        """Dependent on an actor that reads `reads` and writes `writes`."""
        return bool(self.writes & (reads | writes) or self.reads & writes)


def static_value(x: m.TExpr, inst: int | None, fixed: dict | None = None) -> int | None:
    """The value of an expression made of constants and `self` (for instance `inst`),
    or None when it reads the state: what the compiled step folds it to (fold.py), so
    that a footprint names the slot the step's code accesses. `fixed`: the locals no
    step ever assigns (symbol -> its value), read as constants (a thread's `cpu` when
    it never migrates)."""
    if fixed:
        x = _fix(x, fixed)
    v = simplify(x, inst)
    return int(v.value) if isinstance(v, m.Const) else None


#: what an access touches: a slot, or ("at", gid, pcs) for a test of where an instance is
Access = int | tuple[str, int, frozenset[int]]


def _fix(x: m.TExpr, fixed: dict) -> m.TExpr:
    if isinstance(x, m.Var) and x.sym in fixed:
        return m.Const(x.span, x.type, fixed[x.sym])
    if isinstance(x, m.Bin):
        return m.Bin(x.span, x.type, x.op, _fix(x.left, fixed), _fix(x.right, fixed))
    if isinstance(x, (m.Un, m.Conv)):
        return dataclasses.replace(x, operand=_fix(x.operand, fixed))
    return x


class Collector:
    """Reads and writes of IR expressions and operations, for one process instance (or
    for a property: `proc` None)."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.layout = program.layout
        self.procs = {p.name: p for p in program.processes}
        self.tso = program.model.memory == "tso"
        self.proc: str | None = None
        self.reads: set[Access] = set()
        self.writes: set[Access] = set()
        self.fixed: dict = {}  # (process, instance) -> {symbol: value}: see `_fixed_locals`

    def slots(self, sym: m.VarSym, inst: int | None) -> range:
        base = self.layout.slot_of(sym, inst)
        n = sym.type.length if isinstance(sym.type, m.ArrayT) else 1
        return range(base, base + n)

    def instances(self, process: str, index: m.TExpr | None, inst: int | None) -> range:
        """The instances an `At` or `LocalOf` may name."""
        p = self.procs[process]
        if index is None:
            return range(0, 1)
        if isinstance(index, m.Const):
            return range(index.value, index.value + 1)
        if isinstance(index, m.SelfE) and inst is not None:
            return range(inst, inst + 1)
        return range(p.instances)

    def at(self, process: str, k: int, label: str) -> tuple[str, int, frozenset[int]]:
        p = self.procs[process]
        return ("at", self.layout.gid_base[process] + k, p.label_pcs.get(label, frozenset()))

    def element(self, x: m.Elem, inst: int | None) -> range:
        """The slots an array access may touch: one when the index is a constant or is
        computed from `self` and constants only (`fork[(self + 1) % N]`)."""
        t = x.sym.type
        assert isinstance(t, m.ArrayT)
        full = self.slots(x.sym, inst)
        k = static_value(x.index, inst, self.fixed.get((self.proc, inst or 0)))
        if k is None:
            return full
        k -= t.lo
        return full[k:k + 1] if 0 <= k < t.length else range(0)

    def expr(self, x: m.TExpr | None, inst: int | None):
        """Add what evaluating x reads (and, for a primitive with side effects inside a
        condition or a value, writes) to self.reads / self.writes."""
        if x is None or isinstance(x, (m.Const, m.SelfE, m.Bound)):
            return
        if isinstance(x, m.Var):
            self.reads.update(self.slots(x.sym, inst))
        elif isinstance(x, m.Elem):
            self.reads.update(self.element(x, inst))
            self.expr(x.index, inst)
        elif isinstance(x, m.LocalOf):
            for k in self.instances(x.process, x.index, inst):
                self.reads.update(self.slots(x.sym, k))
            self.expr(x.index, inst)
        elif isinstance(x, m.At):
            for k in self.instances(x.process, x.index, inst):
                self.reads.add(self.at(x.process, k, x.label))
            self.expr(x.index, inst)
        elif isinstance(x, (m.Un, m.Conv)):
            self.expr(x.operand, inst)
        elif isinstance(x, m.Bin):
            self.expr(x.left, inst)
            self.expr(x.right, inst)
        elif isinstance(x, m.Ite):
            for sub in (x.cond, x.then, x.orelse):
                self.expr(sub, inst)
        elif isinstance(x, m.Quant):
            self.expr(x.body, inst)
        elif isinstance(x, m.Builtin):
            self.builtin(x, inst)
        else:
            raise TypeError(f"no footprint for {type(x).__name__}")

    def target(self, x: m.TExpr, inst: int | None):
        """An lvalue that is written (its index is read)."""
        if isinstance(x, m.Var):
            self.writes.update(self.slots(x.sym, inst))
        elif isinstance(x, m.Elem):
            self.writes.update(self.element(x, inst))
            self.expr(x.index, inst)
        else:
            raise TypeError(f"not an lvalue: {type(x).__name__}")

    def builtin(self, b: m.Builtin, inst: int | None):
        """What a kernel primitive touches, from its row in builtins.py: location, bit set,
        lock and wait-queue arguments are read, and written by the side-effecting ones; the
        wait-queue operations also touch task states."""
        sig = BUILTINS[b.name]
        for kind, a in zip(sig.args, b.args):
            self.expr(a, inst)
            if sig.effect and kind in _LOCATIONS:
                self.target(a, inst)
        core = lower(b)
        if isinstance(core, (WaitAdd, WaitRemove)):
            self.writes.add(self.task_slot(inst))
        elif isinstance(core, Wake):
            self.writes.update(self.layout.task_slot.values())

    def task_slot(self, inst: int | None) -> int:
        return self.layout.task_slot[self._gid(inst)]

    def _gid(self, inst: int | None) -> int:
        assert self.proc is not None  # a step's (a property has no task slot or buffer)
        return self.layout.gid_base[self.proc] + (inst or 0)

    def ops(self, ops, inst: int | None, gotos: set):
        for op in ops:
            if isinstance(op, ir.OAssign):
                self.expr(op.value, inst)
                self.target(op.target, inst)
            elif isinstance(op, ir.OEval):
                self.builtin(op.call, inst)
            elif isinstance(op, ir.OIf):
                self.expr(op.cond, inst)
                self.ops(op.then, inst, gotos)
                self.ops(op.orelse, inst, gotos)
            elif isinstance(op, ir.OWhile):
                self.expr(op.cond, inst)
                self.ops(op.body, inst, gotos)
            elif isinstance(op, ir.OInline):
                self.ops(op.body, inst, gotos)
            elif isinstance(op, ir.OAssert):
                self.expr(op.cond, inst)
            elif isinstance(op, ir.OGoto):
                gotos.add(op.pc)
            elif not isinstance(op, (ir.OBreak, ir.OContinue, ir.OReturn, ir.OBarrier)):
                raise TypeError(f"no footprint for {type(op).__name__}")

    def step(self, p: ir.ProcessIR, inst: int, st: ir.Step, masked: list | None = None) -> tuple[set, set, set, bool]:
        """(reads, writes, target pcs, always enabled) of one step of one instance, its
        own pc not included. Always enabled: no guard, no sleep, no store buffer to wait
        for (so an instance at that pc can surely move). With `masked` (a list), the
        reads of each guard conjunct `lit || e` that only e makes go there as (lit, its
        reads) instead of into the reads."""
        self.proc = p.name
        self.reads, self.writes = set(), set()
        gotos: set = set()
        if masked is None:
            self.expr(st.guard, inst)
        else:
            for c in conjuncts(st.guard):
                lit = self.literal(c.left, inst) if isinstance(c, m.Bin) and c.op == "||" else None
                if lit is None:
                    self.expr(c, inst)
                    continue
                assert isinstance(c, m.Bin)
                self.expr(c.left, inst)
                outer, self.reads = self.reads, set()
                self.expr(c.right, inst)
                masked.append((lit, self.reads))
                self.reads = outer
        if st.kind is ir.StepKind.SCHEDULE:
            self.reads.add(self.task_slot(inst))
        self.ops(st.body, inst, gotos)
        reads, writes = self.reads, self.writes
        always = st.guard is None and st.kind is not ir.StepKind.SCHEDULE
        views = views_of(self.layout)
        if views is not None:  # lkmm: the machine's slots too (a store may wait for a full history)
            more_reads, more_writes = views.footprint(self._gid(inst), st.uid)
            if more_reads or more_writes:
                reads |= more_reads
                writes |= more_writes
                always = False
        buf = self.layout.buffer_of(self._gid(inst)) if self.tso else None
        if buf is not None:
            # conservatively: a fence reads the buffer; any access to a location the
            # CPU may buffer goes through (or past) the buffer
            located: set[Access] = set()
            for sym in buf.locations:
                located.update(self.slots(sym, None))
            hidden = set().union(*(r for _, r in masked)) if masked else set()
            if st.fence or located & (reads | writes | hidden):
                whole = set(range(buf.base, buf.base + 2 * buf.capacity))
                reads |= whole
                writes |= whole
                always = False  # a fence waits for an empty buffer, a store for a free entry
        return reads, writes, gotos, always

    def literal(self, x: m.TExpr, inst: int | None) -> Lit | None:
        """x as a test of one slot against a constant (`flag`, `!flag`, `v == K`,
        `n < K`, ..., with a constant or `self` index), or None."""
        negated = False
        while isinstance(x, m.Un) and x.op == "!":
            negated, x = not negated, x.operand
        if isinstance(x, m.Bin) and x.op in _TESTS:
            a, b, op = (x.right, x.left, _SWAPPED[x.op]) if isinstance(x.left, m.Const) else (x.left, x.right, x.op)
            if not isinstance(b, m.Const):
                return None
            k = self.one_slot(a, inst)
            return None if k is None else (k, _NEGATED[op] if negated else op, int(b.value))
        if isinstance(x.type, m.BoolT):
            k = self.one_slot(x, inst)
            return None if k is None else (k, "!=" if negated else "==", 1)
        return None

    def one_slot(self, x: m.TExpr, inst: int | None) -> int | None:
        """The one slot a scalar access names, or None (an array, a computed index)."""
        if isinstance(x, m.Var) and not isinstance(x.sym.type, m.ArrayT):
            return self.slots(x.sym, inst)[0]
        if isinstance(x, m.Elem):
            t = x.sym.type
            assert isinstance(t, m.ArrayT)
            k = static_value(x.index, inst, self.fixed.get((self.proc, inst or 0)))
            return self.slots(x.sym, inst)[k - t.lo] if k is not None and t.lo <= k <= t.hi else None
        if isinstance(x, m.LocalOf) and not isinstance(x.sym.type, m.ArrayT) \
                and (x.index is None or isinstance(x.index, (m.Const, m.SelfE))):
            ks = self.instances(x.process, x.index, inst)
            return self.slots(x.sym, ks[0])[0] if len(ks) == 1 else None
        return None

    def lits(self, p: ir.ProcessIR, inst: int, st: ir.Step) -> tuple[Lit, ...]:
        """The literals among the step's guard conjuncts, up to the first conjunct that
        is not one and may fail (the guard is evaluated left to right, short-circuit)."""
        self.proc = p.name
        out = []
        for c in conjuncts(st.guard):
            lit = self.literal(c, inst)
            if lit is not None:
                out.append(lit)
            elif not expr_cannot_fail(c, typed=True):
                break
        return tuple(out)

    def reads_of(self, x: m.TExpr | None) -> set:
        """What a property's expression reads (it has no side effects)."""
        self.proc = None
        self.reads, self.writes = set(), set()
        self.expr(x, None)
        return self.reads


@dataclass
class Analysis:
    """Footprints of every step of every actor and what follows from them.

    Actors are numbered by gid: the process instances, then (tso) one flush per store
    buffer (keyed (gid, 0)). For each instance and pc: the actors whose steps (at any
    pc) conflict with a step there (`conflicts`, a gid bit mask), whether a step there
    is visible, whether one closes a loop of the process (a back edge of its control
    flow: the static cycle proviso), and whether one is always enabled."""

    program: ir.Program
    footprints: dict = field(default_factory=dict)  # (gid, pc) -> Footprints of its steps
    visible_resources: frozenset = frozenset()
    conflicts: dict = field(default_factory=dict)  # (gid, pc) -> mask of other actors
    visible: dict = field(default_factory=dict)  # (gid, pc) -> a step there is visible
    closes_loop: dict = field(default_factory=dict)  # (gid, pc) -> a step there is a back edge
    always_enabled: dict = field(default_factory=dict)  # (gid, pc) -> a step there is always enabled
    proceeds: dict = field(default_factory=dict)  # (gid, pc) -> ... and surely has a successor (cannot fail)
    why: dict = field(default_factory=dict)  # (gid, pc) -> what it shares or shows, in words
    # state-dependent footprints (`dynamic`: a model with `cpus`, not under lkmm), per step:
    dynamic: bool = False
    step_bad: dict = field(default_factory=dict)  # (gid, pc) -> per step: why it is visible or a back edge, or ""
    step_needs: dict = field(default_factory=dict)  # (gid, pc) -> per step: (mask, ((gid2, lits), ...))
    reach: dict = field(default_factory=dict)  # (gid, pc) -> literal slots its steps from pc on may write
    writers: dict = field(default_factory=dict)  # literal slot -> the actors with a step that writes it
    lit_slots: frozenset = frozenset()  # every slot a literal of `dynamic` tests

    def candidate(self, gid: int, pc: int) -> bool:
        """The instance may be part of an ample set at pc: it has a step there, none is
        visible and none closes a loop."""
        key = (gid, pc)
        return bool(self.footprints.get(key)) and not self.visible[key] and not self.closes_loop[key]

    def independent(self, gid: int, pc: int) -> bool:
        """A candidate whose steps at pc commute with every other actor's."""
        return self.candidate(gid, pc) and not self.conflicts[(gid, pc)]


def _fixed_locals(program: ir.Program, col: Collector) -> dict:
    """(process, instance) -> {local: value} for the scalar locals of that instance that
    no step writes (assignments and primitives alike, as `col` finds them) and that start
    with one value: constants for the footprints. A thread that never migrates never
    writes its `cpu` (contexts.py), so its accesses to `in_irq[cpu]`, `pending_H[cpu]`
    name its CPU's element, not every CPU's."""
    layout = program.layout
    written: set = set()
    for p in program.processes:
        for i in range(p.instances):
            for st in p.steps:
                written |= col.step(p, i, st)[1]
    out: dict = {}
    for p in program.processes:
        decl = next((q for q in program.model.processes if q.name == p.name), None)
        for i in range(p.instances):
            here = {}
            for sym in decl.locals if decl is not None else ():
                if isinstance(sym.type, m.ArrayT):
                    continue
                k = layout.slot_of(sym, i)
                choices = program.init_choices[k]
                if k not in written and len(choices) == 1:
                    here[sym] = choices[0]
            out[(p.name, i)] = here
    return out


def back_edges(p: ir.ProcessIR, targets: dict) -> set:
    """The pcs of process p with a step that is a back edge of a depth-first search of
    its control flow from its entry (pc 0): every loop of the process contains one.
    `targets`: pc -> the pcs its steps lead to."""
    return {pc for pc, _ in back_edge_pairs(p, targets)}


def back_edge_pairs(p: ir.ProcessIR, targets: dict) -> set:
    """The back edges themselves, as (pc, target) pairs."""
    closing: set = set()
    state = [0] * len(p.steps_at)  # 0 new, 1 on the stack, 2 done
    for root in range(len(p.steps_at)):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(sorted(targets.get(root, ()))))]
        while stack:
            pc, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[pc] = 2
                stack.pop()
            elif state[nxt] == 1:
                closing.add((pc, nxt))
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(targets.get(nxt, ())))))
    return closing


def analyse(program: ir.Program, dynamic: bool = True) -> Analysis:
    """The footprints of `program`'s steps; `dynamic`: and, in a model with execution
    contexts (not under lkmm), the state-dependent ones the ample sets use (merging
    steps needs only the static ones)."""
    col = Collector(program)
    col.fixed = _fixed_locals(program, col)
    layout = program.layout
    raw: dict = {}  # (gid, pc) -> list of (reads, writes, gotos, lits, masked)
    referenced: set = set()  # every place proposition anything reads
    an = Analysis(program, dynamic=dynamic and program.model.cpus is not None and program.model.memory != "lkmm")
    closes: dict = {}  # (gid, pc) -> per step: it is a back edge
    for p in program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            targets: dict = {}
            for pc, steps in enumerate(p.steps_at):
                lst = []
                always = proceeds = False
                for st in steps:
                    masked: list | None = [] if an.dynamic else None
                    r, w, g, a = col.step(p, i, st, masked)
                    lits = col.lits(p, i, st) if an.dynamic else ()
                    proceeds |= a and cannot_fail(st.body)
                    referenced.update(x for x in r if isinstance(x, tuple))
                    lst.append((r, w, g, lits, masked or []))
                    # a sched-in step puts its thread back on a CPU where it stands: no loop of
                    # the process's control flow, though it goes to its own pc. A cycle of
                    # states through it also takes the thread off its CPU, by a preemption (a
                    # step of the scheduler's loop) or its schedule() (a back edge of its
                    # own), so the cycle proviso still has a back edge on every cycle.
                    if not (st.generated and st.text.startswith(SCHED_IN)):
                        targets.setdefault(pc, set()).update(g)
                    always |= a
                raw[(gid, pc)] = lst
                an.always_enabled[(gid, pc)] = always
                an.proceeds[(gid, pc)] = proceeds
            pairs = back_edge_pairs(p, targets)
            for pc, steps in enumerate(p.steps_at):
                an.closes_loop[(gid, pc)] = any(e[0] == pc for e in pairs)
                closes[(gid, pc)] = tuple(not (st.generated and st.text.startswith(SCHED_IN))
                                          and any((pc, t) in pairs for t in x[2])
                                          for st, x in zip(steps, raw[(gid, pc)]))
    visible: set = set()
    for prop in program.properties:
        # assertions and deadlocks need no visibility (module docstring): a failing
        # step is found failing, a deadlock stays one
        for x in (prop.cond, prop.trigger, prop.goal):
            visible |= col.reads_of(x)
    if any(prop.kind is m.PropertyKind.FINAL for prop in program.properties):
        # a `final` condition is read where every process is at a valid end
        for p in program.processes:
            for i in range(p.instances):
                visible.add(("at", layout.gid_base[p.name] + i, p.end_pcs))
    an.visible_resources = frozenset(visible)
    referenced |= {x for x in visible if isinstance(x, tuple)}
    by_gid: dict = {}
    for x in referenced:
        by_gid.setdefault(x[1], []).append(x)
    for (gid, pc), lst in raw.items():
        fps = []
        for r, w, g, lits, masked in lst:
            # the step writes a place proposition when it can move its instance into or
            # out of the proposition's pcs
            moves = {x for x in by_gid.get(gid, ()) if any((t in x[2]) != (pc in x[2]) for t in g)}
            hidden = tuple((lit, frozenset(x - r)) for lit, x in masked if x - r)
            fps.append(Footprint(frozenset(r.union(*(x for _, x in masked))), frozenset(w | moves), lits, hidden))
        an.footprints[(gid, pc)] = tuple(fps)
    n_inst = len(layout.instance_names)
    for k, b in enumerate(layout.buffers):
        whole = frozenset(range(b.base, b.base + 2 * b.capacity))
        located: set[int] = set()
        for sym in b.locations:
            located.update(col.slots(sym, None))
        key = (n_inst + k, 0)
        an.footprints[key] = (Footprint(whole, whole | located),)
        an.closes_loop[key] = False  # flushes only shrink the buffer: they close no loop
        an.always_enabled[key] = an.proceeds[key] = False
    views = views_of(layout)
    if views is not None:
        # lkmm: one actor per (CPU, location it reads), in compile's order: it moves that
        # view. Lazily it is enabled only where a step of the CPU consults the view or a
        # store waits for it; those reads of pcs are not in its footprint, because a step
        # the machine leaves alone (the only kind an ample set of one instance can hold)
        # moves its instance from a pc where no step consults or stores anything: it can
        # enable a propagation, never disable one or change what it does.
        k = 0
        for j, loc in enumerate(views.locations):
            for reader in loc.readers:
                cpu = views.cpu(reader)
                assert cpu is not None  # a location's readers are CPUs of the machine
                cur = cpu.cur[j]
                key = (n_inst + len(layout.buffers) + k, 0)
                an.footprints[key] = (Footprint(frozenset({cur}), frozenset({cur})),)
                an.closes_loop[key] = False  # a propagation only makes a view newer: it closes no loop
                an.always_enabled[key] = an.proceeds[key] = False
                k += 1
    actors: dict = {}  # gid -> (reads, writes) over all its steps
    for (gid, _pc), fps in an.footprints.items():
        r, w = actors.setdefault(gid, (set(), set()))
        for fp in fps:
            r |= fp.reads
            w |= fp.writes
    for key, fps in an.footprints.items():
        gid = key[0]
        mask = 0
        shared: set = set()
        for g2, (r2, w2) in actors.items():
            if g2 == gid:
                continue
            for fp in fps:
                if fp.writes & (r2 | w2) or fp.reads & w2:
                    mask |= 1 << g2
                    shared |= (fp.writes & (r2 | w2)) | (fp.reads & w2)
        shows = set().union(*(fp.writes for fp in fps)) & an.visible_resources if fps else set()
        an.conflicts[key] = mask
        an.visible[key] = bool(shows)
        words = []
        if shared:
            words.append("shares " + ", ".join(sorted(_name(layout, x) for x in shared)))
        if shows:
            words.append("changes what a property reads: " + ", ".join(sorted(_name(layout, x) for x in shows)))
        if an.closes_loop[key]:
            words.append("closes a loop")
        an.why[key] = "; ".join(words)
    if an.dynamic:
        buffered: set[int] = set()
        for b in layout.buffers:
            for sym in b.locations:
                buffered.update(col.slots(sym, None))
        _dynamic(an, {key: [x[2] for x in lst] for key, lst in raw.items()}, closes, buffered)
    return an


def _dynamic(an: Analysis, gotos: dict, closes: dict, buffered: set[int]) -> None:
    """The state-dependent footprints of a model with execution contexts (por.py uses
    them): per step, whether it is visible or a back edge, and the actors it conflicts
    with, always (a mask) or only where some literal it names does not hold; where each
    instance may still write each literal's slot; and who writes it. A literal on a
    location a store buffer may hold is left out: the guard reads it through its CPU's
    buffer, not the slot."""
    for key, fps in an.footprints.items():
        an.footprints[key] = tuple(dataclasses.replace(
            fp, lits=tuple(x for x in fp.lits if x[0] not in buffered),
            masked=tuple(e for e in fp.masked if e[0][0] not in buffered)) for fp in fps)
    closes = _consuming(an, gotos, closes)
    lit_slots: set[int] = set()
    actors: dict = {}  # gid -> (reads always made, writes, (lit, reads made unless lit holds) ...)
    for (gid, _pc), fps in an.footprints.items():
        r, w, hid = actors.setdefault(gid, (set(), set(), []))
        for fp in fps:
            lit_slots.update(x[0] for x in fp.lits)
            lit_slots.update(e[0][0] for e in fp.masked)
            r |= fp.reads - set().union(*(e[1] for e in fp.masked))
            w |= fp.writes
            hid.extend(fp.masked)
    info = {g: (r, w, [(lit, x - r) for lit, x in hid if x - r]) for g, (r, w, hid) in actors.items()}
    for key, fps in an.footprints.items():
        gid = key[0]
        out = []
        for fp in fps:
            base = fp.reads - set().union(*(e[1] for e in fp.masked))
            mask, cond = 0, []
            for g2, (r2, w2, hid2) in info.items():
                if g2 == gid:
                    continue
                if fp.writes & (r2 | w2) or base & w2:
                    mask |= 1 << g2
                    continue
                lits = {e[0] for e in fp.masked if e[1] & w2} | {e[0] for e in hid2 if fp.writes & e[1]}
                if lits:
                    cond.append((g2, tuple(sorted(lits))))
            out.append((mask, tuple(cond)))
        an.step_needs[key] = tuple(out)
        shut = closes.get(key, (False,) * len(fps))
        layout = an.program.layout
        an.step_bad[key] = tuple(
            ("changes what a property reads: " + ", ".join(sorted(_name(layout, x) for x in fp.writes
                                                                  & an.visible_resources)))
            if fp.writes & an.visible_resources else "closes a loop" if c else "" for fp, c in zip(fps, shut))
    for gid, (_r, w, _h) in info.items():
        for k in w & lit_slots:
            an.writers.setdefault(k, set()).add(gid)
    # where an instance may still write each literal's slot: its pc's steps and every
    # pc they lead to (the other actors have one pc)
    for (gid, pc), fps in an.footprints.items():
        an.reach[(gid, pc)] = set().union(*(fp.writes for fp in fps)) & lit_slots
    changed = True
    while changed:
        changed = False
        for key, targets in gotos.items():
            here = an.reach[key]
            for t in set().union(*targets):
                more = an.reach.get((key[0], t), set()) - here
                if more:
                    here |= more
                    changed = True
    an.reach = {key: frozenset(x) for key, x in an.reach.items()}
    an.writers = {k: tuple(sorted(g)) for k, g in an.writers.items()}
    an.lit_slots = frozenset(lit_slots)


def _consuming(an: Analysis, gotos: dict, closes: dict) -> dict:
    """`closes` without the back edges that consume what another actor must give
    again: a step that loops to its own pc, whose guard has a literal its body makes
    false (`await in_flight_H; in_flight_H = false; ...`: an interrupt's delivery, a
    timer's expiry) and leaves it so (no later write of the slot in the body, nested or
    not), where its actor writes the literal's slot nowhere else. On a cycle
    of states through it, another actor writes the slot back, by a step that is no
    sched-in, so that actor goes round a loop of its own control flow and takes a back
    edge of its own, which still counts: the cycle proviso holds without this one.
    Its writers must therefore have no such step themselves."""
    layout = an.program.layout
    col = Collector(an.program)
    found: dict = {}  # (gid, pc, j) -> the literal's slot
    for p in an.program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            for pc, steps in enumerate(p.steps_at):
                for j, (st, fp) in enumerate(zip(steps, an.footprints[(gid, pc)])):
                    if not closes[(gid, pc)][j] or gotos[(gid, pc)][j] != {pc}:
                        continue
                    col.proc = p.name
                    made: dict = {}  # slot -> the constant the body leaves in it
                    for op in st.body:
                        if isinstance(op, ir.OAssign) and isinstance(op.value, m.Const):
                            k = col.one_slot(op.target, i)
                            if k is not None:
                                made[k] = int(op.value.value)
                                continue
                        # any other write (nested in a branch, by a primitive, at a computed
                        # index) may give the slot back: `go = false; if (keep) go = true;`
                        col.reads, col.writes = set(), set()
                        col.ops([op], i, set())
                        for w in col.writes:
                            made.pop(w, None)
                    lit = next((x for x in fp.lits if x[0] in made and not holds(x, made[x[0]])), None)
                    if lit is not None:
                        found[(gid, pc, j)] = lit[0]
    out = dict(closes)
    if not found:
        return out
    exempt_gids = {key[0] for key in found}
    slots = set(found.values())
    writes: dict = {}  # slot -> [(gid, a sched-in step)] per step that writes it
    for p in an.program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            for pc, steps in enumerate(p.steps_at):
                for st, fp in zip(steps, an.footprints[(gid, pc)]):
                    for k in fp.writes & slots:
                        writes.setdefault(k, []).append((gid, st.generated and st.text.startswith(SCHED_IN)))
    for (gid, pc, j), k in found.items():
        mine = [w for w in writes.get(k, ()) if w[0] == gid]
        others = {w[0] for w in writes.get(k, ()) if w[0] != gid}
        sched_in = any(w[1] for w in writes.get(k, ()) if w[0] != gid)
        if len(mine) == 1 and not (others & exempt_gids) and not sched_in:
            row = list(out[(gid, pc)])
            row[j] = False
            out[(gid, pc)] = tuple(row)
    return out


def _name(layout: ir.StateLayout, x: Resource) -> str:
    if isinstance(x, tuple):
        return f"{layout.instance_names[x[1]]}@pcs{sorted(x[2])}"
    return layout.slots[x].name


def conjuncts(x: m.TExpr | None) -> list[m.TExpr]:
    """The operands of a guard's top-level `&&`s, in the order they are evaluated."""
    if x is None:
        return []
    if isinstance(x, m.Bin) and x.op == "&&":
        return conjuncts(x.left) + conjuncts(x.right)
    return [x]


def cannot_fail(ops) -> bool:
    """Ops that surely run to the end (nothing that can fail an assertion or raise a
    model error): barriers, gotos, branches on conditions that cannot fail, and plain
    assignments to a scalar of a constant in its range or of a variable of the same
    type."""
    for op in ops:
        if isinstance(op, (ir.OBarrier, ir.OGoto)):
            continue
        if isinstance(op, ir.OIf):
            if expr_cannot_fail(op.cond) and cannot_fail(op.then) and cannot_fail(op.orelse):
                continue
            return False
        if not (isinstance(op, ir.OAssign) and isinstance(op.target, m.Var)):
            return False
        t, v = op.target.type, op.value
        if isinstance(v, m.Var) and v.type == t:
            continue
        if not isinstance(v, m.Const):
            return False
        if isinstance(t, m.BoolT) and v.value in (0, 1):
            continue
        if isinstance(t, m.EnumT) and 0 <= v.value < len(t.members):
            continue
        if isinstance(t, m.IntT) and t.lo is not None and t.hi is not None and t.lo <= v.value <= t.hi:
            continue
        return False
    return True


def expr_cannot_fail(x: m.TExpr | None, typed: bool = False) -> bool:
    """An expression whose evaluation raises nothing: no division, shift or computed
    index (any of which may be out of range). `typed` (a guard's literals): also an
    index whose type lies in the array's bounds (`irqs_off[cpu]`), and another
    instance's local with a constant index."""
    if x is None or isinstance(x, (m.Const, m.Var, m.SelfE, m.Bound)):
        return True
    if isinstance(x, (m.Un, m.Conv)):
        return expr_cannot_fail(x.operand, typed)
    if isinstance(x, m.Bin):
        return x.op not in ("/", "%", "<<", ">>") and expr_cannot_fail(x.left, typed) \
            and expr_cannot_fail(x.right, typed)
    if isinstance(x, m.Ite):
        return all(expr_cannot_fail(e, typed) for e in (x.cond, x.then, x.orelse))
    if isinstance(x, m.At):
        return x.index is None or isinstance(x.index, m.Const)
    if isinstance(x, m.Elem):
        t, it = x.sym.type, x.index.type
        assert isinstance(t, m.ArrayT)
        if isinstance(x.index, m.Const):
            return t.lo <= x.index.value <= t.hi
        return typed and isinstance(it, m.IntT) and it.lo is not None and it.hi is not None \
            and t.lo <= it.lo and it.hi <= t.hi and expr_cannot_fail(x.index, typed)
    if isinstance(x, m.LocalOf):
        return typed and (x.index is None or isinstance(x.index, (m.Const, m.SelfE)))
    if isinstance(x, m.Builtin):
        core = lower(x)
        if isinstance(core, TestBit):
            return isinstance(core.nr, m.Const) and expr_cannot_fail(core.bits, typed)
        return isinstance(core, SAFE_READS) and all(expr_cannot_fail(a, typed) for a in x.args)
    return False
