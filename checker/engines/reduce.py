"""Reductions for the explicit engine: partial-order reduction and symmetry.

Both are decided here from the IR before the search. The engine (engines/explicit) calls
them through its `Reduction` hooks: `ample(s, actors)`, the actors whose steps to
expand in state s, and `canonical(t)`, the representative stored for successor t;
`movable` and `concretise` serve the liveness graph and the traces. run.py decides
what applies to a variant (`plan`) and rebuilds counterexamples (see there).

Partial-order reduction (ample sets, as in SPIN; Peled, Holzmann)
------------------------------------------------------------------
Every step has a footprint: the resources it reads and writes. A resource is a slot of
the state vector (a variable or array element, a task state, a store-buffer slot) or
a place proposition `P@label` (which another process or a property reads; a step
writes it when it can move its process into or out of the label's pcs). Side effects
count wherever they sit (`if (xchg(...))`), and so do the wait-queue primitives' task
states. Under tso the flush of each store buffer is an actor of its own, which reads
and writes that buffer and writes every location the buffer holds, so a CPU's plain
stores, its loads of what it may have buffered and its fences depend on its flush.
Two steps of different actors conflict when one writes what the other reads or writes.

In a state, a *cluster* is a set of actors C such that no step of C's instances at
their current pcs (A, the ample set) conflicts with any step, at any pc, of an actor
outside C; and every step in A is
- invisible: it writes nothing an invariant, a `final` condition or a liveness
  property reads (with a `final` condition, moving into or out of a valid end counts);
- no back edge of its process's control flow (a depth-first search from the entry):
  the static cycle proviso;
and some step in A has a successor in the state: it is enabled and does not fail
(known statically for a step with no guard, no sleep, no store buffer to wait for and
nothing that can fail, else tried). A step that only fails an assertion or raises a
model error ends the search there, so it does not count. The engine expands A, for
the smallest cluster found from each instance, or every step when there is none.
Assertions and deadlocks need no visibility; an ample set is never empty where
something can move.

Why the verdicts are those of the full search: take a state s expanded with A, and a
run w of the full model from s to a violation (a state that breaks an invariant, a
step that fails an assertion, raises a model error or finds its buffer full, or a
deadlock).
- If an instance of C moves in w, its first move a is a step of A (C's instances move
  only through A), enabled in s (the steps before it, all outside C, write nothing a
  reads): a commutes to the front, giving a run one step shorter from a(s) to the
  same violation.
- Otherwise every step of w commutes with A. For an enabled a in A, w runs from a(s)
  to a(end), which breaks the same invariant (a is invisible), fails the same step, or
  is no deadlock after all (a is still enabled there). (This is why a must have a
  successor: a failing step leaves nothing to go on from.) This case cannot repeat for
  ever: the states would go round a cycle of the reduced graph; some process moving in
  a cycle goes round a loop of its control flow, so takes a back edge, which no
  reduced ample set contains.
By induction on the length of w, the reduced search reaches a violation of the same
property. Nothing depends on the order of the search, so hash-partitioned workers may
use the same ample sets.

Liveness (weak fairness, engines/liveness.py): clusters are single instances P whose
steps at the pc conflict with no other actor at all. On a fair infinite run from s
the second case needs P enabled forever and never moving, so it arises only for an
`unfair` P; moving P's invisible steps, which no other actor reads, earlier or in
between changes neither what any other instance can do nor the properties'
propositions, so the reordered run is a fair, reduced run that violates the property
too. The graph records, in reduced states too, every actor that could move
(`movable`), so fairness is judged on full enabled sets; and every fair lasso of the
reduced graph is one of the model.

Symmetry is described below, at `Symmetry`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import ir, model as m
from ..backends.python import AssertionViolation, CompiledFlush, CompiledModel, ModelError, StoreBufferFull
from ..semantics.fold import simplify
from .explicit import Reduction
from ..semantics.primitives import BUILTINS, Arg
from ..semantics.lower import SAFE_READS, TestBit, WaitAdd, WaitRemove, Wake, lower

# the arguments that a primitive which writes state writes
_LOCATIONS = (Arg.LV, Arg.BITS, Arg.WQ, Arg.LOCK)

Resource = int | tuple  # a slot number, or ("at", gid, pcs): instance gid is at one of pcs


@dataclass(frozen=True, slots=True)
class Footprint:
    reads: frozenset
    writes: frozenset

    def conflicts(self, reads: frozenset, writes: frozenset) -> bool:
        """Dependent on an actor that reads `reads` and writes `writes`."""
        return bool(self.writes & (reads | writes) or self.reads & writes)


# ---- footprints ------------------------------------------------------------------


def static_value(x: m.TExpr, inst: int | None) -> int | None:
    """The value of an expression made of constants and `self` (for instance `inst`),
    or None when it reads the state: what the compiled step folds it to (fold.py), so
    that a footprint names the slot the step's code accesses."""
    v = simplify(x, inst)
    return int(v.value) if isinstance(v, m.Const) else None


class _Collector:
    """Reads and writes of IR expressions and operations, for one process instance (or
    for a property: `proc` None)."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.layout = program.layout
        self.procs = {p.name: p for p in program.processes}
        self.tso = program.model.memory == "tso"

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

    def at(self, process: str, k: int, label: str) -> tuple:
        p = self.procs[process]
        return ("at", self.layout.gid_base[process] + k, p.label_pcs.get(label, frozenset()))

    def element(self, x: m.Elem, inst: int | None) -> range:
        """The slots an array access may touch: one when the index is a constant or is
        computed from `self` and constants only (`fork[(self + 1) % N]`)."""
        t = x.sym.type
        full = self.slots(x.sym, inst)
        k = static_value(x.index, inst)
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

    def step(self, p: ir.ProcessIR, inst: int, st: ir.Step) -> tuple[set, set, set, bool]:
        """(reads, writes, target pcs, always enabled) of one step of one instance, its
        own pc not included. Always enabled: no guard, no sleep, no store buffer to wait
        for (so an instance at that pc can surely move)."""
        self.proc = p.name
        self.reads, self.writes = set(), set()
        gotos: set = set()
        self.expr(st.guard, inst)
        if st.kind is ir.StepKind.SCHEDULE:
            self.reads.add(self.task_slot(inst))
        self.ops(st.body, inst, gotos)
        reads, writes = self.reads, self.writes
        always = st.guard is None and st.kind is not ir.StepKind.SCHEDULE
        buf = self.layout.buffer_of(self._gid(inst)) if self.tso else None
        if buf is not None:
            # conservatively: a fence reads the buffer; any access to a location the
            # CPU may buffer goes through (or past) the buffer
            located = set()
            for sym in buf.locations:
                located.update(self.slots(sym, None))
            if st.fence or located & (reads | writes):
                whole = set(range(buf.base, buf.base + 2 * buf.capacity))
                reads |= whole
                writes |= whole
                always = False  # a fence waits for an empty buffer, a store for a free entry
        return reads, writes, gotos, always

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

    def candidate(self, gid: int, pc: int) -> bool:
        """The instance may be part of an ample set at pc: it has a step there, none is
        visible and none closes a loop."""
        key = (gid, pc)
        return bool(self.footprints.get(key)) and not self.visible[key] and not self.closes_loop[key]

    def independent(self, gid: int, pc: int) -> bool:
        """A candidate whose steps at pc commute with every other actor's."""
        return self.candidate(gid, pc) and not self.conflicts[(gid, pc)]


def back_edges(p: ir.ProcessIR, targets: dict) -> set:
    """The pcs of process p with a step that is a back edge of a depth-first search of
    its control flow from its entry (pc 0): every loop of the process contains one.
    `targets`: pc -> the pcs its steps lead to."""
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
                closing.add(pc)
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(targets.get(nxt, ())))))
    return closing


def analyse(program: ir.Program) -> Analysis:
    col = _Collector(program)
    layout = program.layout
    raw: dict = {}  # (gid, pc) -> list of (reads, writes, gotos)
    referenced: set = set()  # every place proposition anything reads
    an = Analysis(program)
    for p in program.processes:
        for i in range(p.instances):
            gid = layout.gid_base[p.name] + i
            targets: dict = {}
            for pc, steps in enumerate(p.steps_at):
                lst = []
                always = proceeds = False
                for st in steps:
                    r, w, g, a = col.step(p, i, st)
                    proceeds |= a and _cannot_fail(st.body)
                    referenced.update(x for x in r if isinstance(x, tuple))
                    lst.append((r, w, g))
                    targets.setdefault(pc, set()).update(g)
                    always |= a
                raw[(gid, pc)] = lst
                an.always_enabled[(gid, pc)] = always
                an.proceeds[(gid, pc)] = proceeds
            closing = back_edges(p, targets)
            for pc in range(len(p.steps_at)):
                an.closes_loop[(gid, pc)] = pc in closing
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
        for r, w, g in lst:
            # the step writes a place proposition when it can move its instance into or
            # out of the proposition's pcs
            moves = {x for x in by_gid.get(gid, ()) if any((t in x[2]) != (pc in x[2]) for t in g)}
            fps.append(Footprint(frozenset(r), frozenset(w | moves)))
        an.footprints[(gid, pc)] = tuple(fps)
    n_inst = len(layout.instance_names)
    for k, b in enumerate(layout.buffers):
        whole = frozenset(range(b.base, b.base + 2 * b.capacity))
        located = set()
        for sym in b.locations:
            located.update(col.slots(sym, None))
        key = (n_inst + k, 0)
        an.footprints[key] = (Footprint(whole, whole | located),)
        an.closes_loop[key] = False  # flushes only shrink the buffer: they close no loop
        an.always_enabled[key] = an.proceeds[key] = False
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
    return an


def _name(layout: ir.StateLayout, x: Resource) -> str:
    if isinstance(x, tuple):
        return f"{layout.instance_names[x[1]]}@pcs{sorted(x[2])}"
    return layout.slots[x].name


# ---- partial-order reduction at run time ------------------------------------------


#: after this many pc vectors, the ample-set cache stays only if it was hit at least as often
CACHE_TRIAL = 1 << 14


class PartialOrder:
    """The ample-set hook. In a state, a *cluster* is a set of actors closed under
    conflict at their current pcs: none of their steps there conflicts with an actor
    outside it, none is visible and none closes a loop. `ample(s, actors)` returns the
    smallest cluster, found from each instance in turn, that has a step with a
    successor in s (statically known when one of its steps is always enabled and
    cannot fail, otherwise tried), or every actor. `singletons`: only clusters of one
    instance whose steps there conflict with nobody, the form the liveness argument
    needs (module docstring). Clusters depend only on the instances' pcs, which are
    neighbouring bit fields of the packed state, so they are cached by those bits
    (unless nearly every state has a pc vector of its own, as in dining philosophers,
    where the cache would only cost memory)."""

    def __init__(self, cm: CompiledModel, an: Analysis, singletons: bool):
        self.cm = cm
        self.an = an
        self.singletons = singletons
        self.n_inst = len(cm.instances)
        self.n_actors = self.n_inst + len(cm.flushes)
        pcs = [inst.pc_slot for inst in cm.instances]
        assert pcs == list(range(pcs[0], pcs[0] + len(pcs))), "instances' pcs are contiguous"
        pk = cm.packing
        # the pcs are neighbouring bit fields of the packed state: one shift and mask give them all
        self.shift = pk.shift[pcs[0]]
        self.mask = (1 << (pk.shift[pcs[-1]] + pk.width[pcs[-1]] - self.shift)) - 1
        self.fields = [(pk.shift[k] - self.shift, pk.mask(k), pk.lo[k]) for k in pcs]
        self.actor_fields = [pk.field(inst.pc_slot) for inst in cm.instances] + [pk.field(f.slot) for f in cm.flushes]
        self.cache: dict = {}
        self.caching, self.lookups = True, 0
        self.chosen: dict[int, list] = {}  # gid mask -> those rows of the search's actors
        self.flush_conflicts = [an.conflicts[(g, 0)] for g in range(self.n_inst, self.n_actors)]
        self.all_mask = (1 << self.n_actors) - 1
        self.last: tuple | None = None  # (state, mask of the actors chosen)
        # per instance and pc, what the clusters are built from, as lists (no dict lookups):
        # (has a step, is a candidate, conflict mask, a step surely has a successor)
        self.at = [[(bool(an.footprints.get((g, pc))), an.candidate(g, pc), an.conflicts.get((g, pc), 0),
                     an.proceeds.get((g, pc), False)) for pc in range(len(inst.process.steps_at))]
                   for g, inst in enumerate(cm.instances)]
        self.flush_visible = [an.visible[(g, 0)] for g in range(self.n_inst, self.n_actors)]
        self.flush_proceeds = [an.proceeds[(g, 0)] for g in range(self.n_inst, self.n_actors)]

    def ample(self, s: int, actors: list) -> list:
        mask = self.ample_mask(s, actors)
        return actors if mask == self.all_mask else self.chosen[mask]

    def ample_mask(self, s: int, actors: list) -> int:
        """`ample` as a gid mask (the generated level loop tests one bit per actor)."""
        key = s >> self.shift & self.mask
        options = self.cache.get(key)
        if options is None:
            options = self._options(tuple((key >> sh & mk) + lo for sh, mk, lo in self.fields), actors)
            if self.caching:
                self.cache[key] = options
                if len(self.cache) == CACHE_TRIAL:  # nearly every state its own pc vector: stop caching
                    self.caching = self.lookups > 2 * CACHE_TRIAL
                    if not self.caching:
                        self.cache.clear()
        self.lookups += 1
        for mask, unsure in options:
            if unsure is None or self._can_move(s, unsure):
                self.last = (s, mask)
                return mask
        self.last = (s, self.all_mask)
        return self.all_mask

    def _cluster(self, seed: int, here: list) -> int | None:
        """The smallest cluster containing instance `seed`, as a gid mask, or None;
        `here[g]`: instance g's row of `at` at its current pc."""
        _, candidate, need, _ = here[seed]
        if not candidate:
            return None
        mask = 1 << seed
        if self.singletons:
            return mask if not need else None
        n_inst = self.n_inst
        while need & ~mask:
            new = need & ~mask
            mask |= new
            g = 0
            while new:
                if new & 1:
                    if g < n_inst:
                        has_step, candidate, conflicts, _ = here[g]
                        if has_step and not candidate:
                            return None
                        need |= conflicts
                    else:
                        if self.flush_visible[g - n_inst]:
                            return None
                        need |= self.flush_conflicts[g - n_inst]
                new >>= 1
                g += 1
        return mask

    def _options(self, pcs: tuple, actors: list) -> tuple:
        """The clusters at this pc vector, smallest first: (gid mask, None if one of its
        steps is always enabled, else the instances to try); `chosen` gets their actors."""
        here = [rows[pc] for rows, pc in zip(self.at, pcs)]
        movers = self.all_mask & ~((1 << self.n_inst) - 1)  # a flush may always have a step
        for g, row in enumerate(here):
            if row[0]:
                movers |= 1 << g
        clusters = {c for g in range(self.n_inst) if (c := self._cluster(g, here)) is not None and movers & ~c}
        out = []
        for c in sorted(clusters, key=lambda c: (bin(c).count("1"), c)):
            members = [g for g in range(self.n_actors) if c >> g & 1]
            sure = any(here[g][3] if g < self.n_inst else self.flush_proceeds[g - self.n_inst] for g in members)
            self.chosen.setdefault(c, [actors[g] for g in members])
            out.append((c, None if sure else tuple(members)))
            if sure:
                break  # a cluster that surely moves: no later one is ever tried
        return tuple(out)

    def _can_move(self, s: int, members) -> bool:
        """Some step of the members has a successor in packed state s (one that only
        fails an assertion or raises a model error has none: an ample set of such steps
        would end the search there)."""
        for g in members:
            shift, fmask = self.actor_fields[g]
            table = self.cm.instances[g].steps_at if g < self.n_inst else self.cm.flushes[g - self.n_inst].steps_at
            for cs in table[s >> shift & fmask]:
                try:
                    if cs.packed(s) is not None:
                        return True
                except (AssertionViolation, ModelError, StoreBufferFull):
                    pass
        return False

    def _movable(self, s: int, gids) -> int:
        """The actors among `gids` with a step enabled in packed state s (one that
        moves, or fails)."""
        mask = 0
        for g in gids:
            shift, fmask = self.actor_fields[g]
            table = self.cm.instances[g].steps_at if g < self.n_inst else self.cm.flushes[g - self.n_inst].steps_at
            for cs in table[s >> shift & fmask]:
                try:
                    if cs.packed(s) is not None:
                        mask |= 1 << g
                        break
                except (AssertionViolation, ModelError):
                    mask |= 1 << g  # it moves, into a failure the search reports
                    break
                except StoreBufferFull:
                    pass
        return mask

    def movable(self, s: int) -> int:
        """The actors the last ample set in s left out that could move there."""
        if self.last is None or self.last[0] != s:
            raise AssertionError("movable(s) follows ample(s, ...)")
        left = self.all_mask & ~self.last[1]
        return self._movable(s, [g for g in range(self.n_actors) if left >> g & 1])


# ---- symmetry ----------------------------------------------------------------------
#
# Which process arrays are interchangeable, decided on the IR. Index sets are joined
# (union-find) when the model relates them: `x[self]` in process P joins array x and
# P; `P[i]@l`, `x[i]` under one quantifier join P, x and i; `i == j` joins i and j; an
# array declared `[P]` belongs to P. A joined set that contains a process array is a
# *domain*: its process arrays and data arrays are permuted together, instance k of
# each with element k of each. The model is symmetric in a domain when nothing can
# tell its indices apart:
#   - `self` and a quantifier's variable are used only as indices into the domain
#     (and compared with == / != among themselves), never as numbers;
#   - process code never uses a constant or a computed index into the domain (a
#     property may, if the property reads the same after permuting those constants:
#     `inc[0]@end && inc[1]@end`);
#   - the domain's processes never wait on a shared queue that swake_up_one wakes (it
#     wakes the lowest-numbered waiter); elements of an array start alike;
#   - under tso, nothing of the domain goes through a store buffer by address.
# Liveness properties turn symmetry off: fairness is per instance, and the quotient
# graph does not record which instance moved.


class _Asymmetric(Exception):
    pass


class _UnionFind:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a, b):
        self.parent[self.find(a)] = self.find(b)


@dataclass
class _Uses:
    """What the symmetry analysis gathers while walking the model."""

    links: _UnionFind = field(default_factory=_UnionFind)
    ranges: dict = field(default_factory=dict)  # ("bound", uid) -> (lo, hi)
    as_number: dict = field(default_factory=dict)  # node -> where it was used as a number
    fixed_in_code: dict = field(default_factory=dict)  # node -> where code indexes it by a constant
    computed: dict = field(default_factory=dict)  # node -> where it is indexed by a computed value
    fixed_in_props: dict = field(default_factory=dict)  # node -> [property names]
    shared_waits: dict = field(default_factory=dict)  # process -> queue VarSyms it waits on, not by self
    wake_one: set = field(default_factory=set)  # queue VarSyms that swake_up_one wakes


class _SymmetryWalker:
    def __init__(self, program: ir.Program, uses: _Uses):
        self.program = program
        self.u = uses
        self.procs = {p.name: p for p in program.processes}
        self.where = ""
        self.proc: str | None = None  # the process whose code is walked
        self.prop: str | None = None  # or the property

    def array_node(self, sym: m.VarSym):
        return ("var", id(sym))

    def index_term(self, x: m.TExpr):
        """The node an index expression stands for when it is `self` or a quantifier's
        variable; None otherwise."""
        if isinstance(x, m.SelfE) and self.proc is not None and self.procs[self.proc].count is not None:
            return ("proc", self.proc)
        if isinstance(x, m.Bound):
            return ("bound", x.uid)
        return None

    def indexed(self, node, index: m.TExpr | None):
        """`node` (an array or a process array) indexed by `index`."""
        if index is None:
            return
        term = self.index_term(index)
        if term is not None:
            self.u.links.join(node, term)
            return
        if isinstance(index, m.Const):
            if self.prop is not None:
                self.u.fixed_in_props.setdefault(node, set()).add(self.prop)
            else:
                self.u.fixed_in_code.setdefault(node, self.where)
            return
        self.u.computed.setdefault(node, self.where)
        self.expr(index)

    def expr(self, x: m.TExpr | None):
        if x is None or isinstance(x, (m.Const, m.Var)):
            if isinstance(x, m.Var) and isinstance(x.sym.type, m.ArrayT):
                self.u.computed.setdefault(self.array_node(x.sym), self.where)  # the whole array at once
            return
        term = self.index_term(x)
        if term is not None:  # `self` or a bound variable where a number is expected
            self.u.as_number.setdefault(term, self.where)
            return
        if isinstance(x, m.SelfE):
            return
        if isinstance(x, m.Elem):
            self.indexed(self.array_node(x.sym), x.index)
        elif isinstance(x, (m.At, m.LocalOf)):
            if self.procs[x.process].count is not None:
                self.indexed(("proc", x.process), x.index)
        elif isinstance(x, (m.Un, m.Conv)):
            self.expr(x.operand)
        elif isinstance(x, m.Bin):
            lt, rt = self.index_term(x.left), self.index_term(x.right)
            if x.op in ("==", "!=") and lt is not None and rt is not None:
                self.u.links.join(lt, rt)  # comparing two indices is the same after permuting both
                return
            self.expr(x.left)
            self.expr(x.right)
        elif isinstance(x, m.Ite):
            for sub in (x.cond, x.then, x.orelse):
                self.expr(sub)
        elif isinstance(x, m.Quant):
            self.u.ranges[("bound", x.bound.uid)] = (x.lo, x.hi)
            self.u.links.find(("bound", x.bound.uid))
            self.expr(x.body)
        elif isinstance(x, m.Builtin):
            for a in x.args:
                self.expr(a)
            core = lower(x)
            if isinstance(core, WaitAdd) and self.proc is not None:
                q = x.args[0]
                if not (isinstance(q, m.Elem) and self.index_term(q.index) == ("proc", self.proc)):
                    self.u.shared_waits.setdefault(self.proc, set()).add(q.sym)
            if isinstance(core, Wake) and not core.all:
                self.u.wake_one.add(x.args[0].sym)
        else:
            raise TypeError(f"symmetry: no rule for {type(x).__name__}")

    def ops(self, ops):
        for op in ops:
            if isinstance(op, ir.OAssign):
                self.expr(op.target)
                self.expr(op.value)
            elif isinstance(op, ir.OEval):
                self.expr(op.call)
            elif isinstance(op, (ir.OIf, ir.OWhile)):
                self.expr(op.cond)
                self.ops(op.then if isinstance(op, ir.OIf) else op.body)
                if isinstance(op, ir.OIf):
                    self.ops(op.orelse)
            elif isinstance(op, ir.OInline):
                self.ops(op.body)
            elif isinstance(op, ir.OAssert):
                self.expr(op.cond)

    def run(self):
        model = self.program.model
        for sym in model.globals:
            t = sym.type
            if isinstance(t, m.ArrayT) and t.by_process is not None:
                self.u.links.join(self.array_node(sym), ("proc", t.by_process))
        for p in self.program.processes:
            self.proc, self.prop = p.name, None
            if p.count is not None:
                self.u.links.find(("proc", p.name))
            for st in p.steps:
                self.where = f"{p.name}, line {st.span.line}: {st.text}"
                self.expr(st.guard)
                self.ops(st.body)
        for prop in self.program.properties:
            self.proc, self.prop = None, prop.name
            self.where = f"property {prop.name}"
            for x in (prop.cond, prop.trigger, prop.goal):
                self.expr(x)


@dataclass(frozen=True, slots=True)
class Domain:
    """Process arrays (and the data arrays indexed with them) whose index k can be
    permuted: `procs` are permuted together, instance k of each with element k of
    every array in `arrays`."""

    size: int
    procs: tuple[str, ...]
    arrays: tuple[m.VarSym, ...]

    def describe(self) -> str:
        what = " + ".join(f"{p}[{self.size}]" for p in self.procs)
        if self.arrays:
            what += " with " + ", ".join(a.name for a in self.arrays)
        return what


def symmetry_domains(program: ir.Program) -> tuple[list[Domain], list[str]]:
    """The symmetric domains of a model, and for every process array left out, why."""
    if program.model.cpus is not None:  # threads are numbered in `curr`, handlers bound to CPUs
        return [], [f"{p.name}[{p.instances}]: execution contexts name CPUs and threads"
                    for p in program.processes if p.count is not None]
    uses = _Uses()
    _SymmetryWalker(program, uses).run()
    links = uses.links
    groups: dict = {}
    for node in list(links.parent):
        groups.setdefault(links.find(node), []).append(node)
    procs = {p.name: p for p in program.processes}
    syms = {id(s): s for s in program.model.globals}
    for p in program.model.processes:
        for s in p.locals:
            syms[id(s)] = s
    domains: list[Domain] = []
    reasons: list[str] = []
    for members in sorted(groups.values(), key=lambda g: sorted(map(str, g))):
        pnames = sorted(n[1] for n in members if n[0] == "proc")
        if not pnames:
            continue
        label = " + ".join(f"{n}[{procs[n].instances}]" for n in pnames)
        try:
            domains.append(_check_domain(program, uses, members, pnames, procs, syms))
        except _Asymmetric as e:
            reasons.append(f"{label}: {e}")
    return domains, reasons


def _check_domain(program, uses: _Uses, members, pnames, procs, syms) -> Domain:
    sizes = {procs[n].instances for n in pnames}
    if len(sizes) != 1:
        raise _Asymmetric("arrays of different sizes are indexed together")
    n = sizes.pop()
    if n < 2:
        raise _Asymmetric("a single instance")
    arrays = []
    for node in members:
        if node[0] == "var":
            sym = syms[node[1]]
            t = sym.type
            if sym.scope is not m.Scope.GLOBAL:
                raise _Asymmetric(f"the local array {sym.name} is indexed by the process index")
            if not (isinstance(t, m.ArrayT) and t.lo == 0 and t.length == n):
                raise _Asymmetric(f"{sym.name} is indexed with the process index but has not exactly "
                                  f"{n} elements from 0")
            if len(set(sym.init)) != 1:
                raise _Asymmetric(f"the elements of {sym.name} start with different values")
            arrays.append(sym)
        elif node[0] == "bound":
            lo, hi = uses.ranges.get(node, (0, n - 1))
            if (lo, hi) != (0, n - 1):
                raise _Asymmetric(f"a quantifier over {lo}..{hi} indexes it (not 0..{n - 1})")
    for node in members:
        for table, what in ((uses.as_number, "uses the index as a number"),
                            (uses.fixed_in_code, "names one instance or element by a constant index"),
                            (uses.computed, "indexes it by a computed value")):
            if node in table:
                raise _Asymmetric(f"{what}: {table[node]}")
    for p in pnames:
        for q in uses.shared_waits.get(p, ()):
            if q in uses.wake_one:
                raise _Asymmetric(f"its instances wait on {q.name}, where swake_up_one wakes the "
                                  "lowest-numbered waiter")
    if program.model.memory == "tso":
        for p in pnames:
            stored = procs[p].plain_stores
            for sym in arrays:
                if sym in stored:
                    raise _Asymmetric(f"under tso, stores to {sym.name} go through store buffers by address")
    domain = Domain(n, tuple(pnames), tuple(sorted(arrays, key=lambda s: s.name)))
    fixed_props = set()
    for node in members:
        fixed_props |= uses.fixed_in_props.get(node, set())
    for prop in program.properties:
        if prop.name in fixed_props and not _symmetric_property(prop, domain, members):
            raise _Asymmetric(f"property {prop.name} names instances by constant indices and does not "
                              "read the same after swapping them")
    return domain


_COMMUTATIVE = frozenset({"&&", "||", "==", "!=", "+", "*", "&", "|", "^"})


def _normal(x: m.TExpr | None, domain: Domain, perm: tuple[int, ...] | None):
    """A hashable normal form of a property expression, with the constant indices into
    `domain` mapped through `perm`: chains of one commutative operator become sorted
    tuples, so `a && b` and `b && a` compare equal."""
    if x is None:
        return None

    def index(node_in_domain: bool, idx):
        if node_in_domain and perm is not None and isinstance(idx, m.Const) and 0 <= idx.value < len(perm):
            return ("c", perm[idx.value])
        return _normal(idx, domain, perm)

    arrays = {id(a) for a in domain.arrays}
    if isinstance(x, m.Const):
        return ("c", int(x.value))
    if isinstance(x, m.Var):
        return ("v", id(x.sym))
    if isinstance(x, m.Elem):
        return ("e", id(x.sym), index(id(x.sym) in arrays, x.index))
    if isinstance(x, m.At):
        return ("at", x.process, index(x.process in domain.procs, x.index), x.label)
    if isinstance(x, m.LocalOf):
        return ("lo", id(x.sym), x.process, index(x.process in domain.procs, x.index))
    if isinstance(x, (m.SelfE, m.Bound)):
        return ("b", getattr(x, "uid", -1))
    if isinstance(x, m.Un):
        return ("u", x.op, _normal(x.operand, domain, perm))
    if isinstance(x, m.Conv):
        return ("conv", x.type.describe(), _normal(x.operand, domain, perm))
    if isinstance(x, m.Bin):
        if x.op in _COMMUTATIVE:
            parts = []

            def flatten(e):
                if isinstance(e, m.Bin) and e.op == x.op:
                    flatten(e.left)
                    flatten(e.right)
                else:
                    parts.append(_normal(e, domain, perm))

            flatten(x)
            return ("bin", x.op, tuple(sorted(parts, key=repr)))
        return ("bin", x.op, (_normal(x.left, domain, perm), _normal(x.right, domain, perm)))
    if isinstance(x, m.Ite):
        return ("ite",) + tuple(_normal(e, domain, perm) for e in (x.cond, x.then, x.orelse))
    if isinstance(x, m.Quant):
        return ("q", x.kind, x.bound.uid, x.lo, x.hi, _normal(x.body, domain, perm))
    if isinstance(x, m.Builtin):
        return ("f", x.name, tuple(_normal(a, domain, perm) for a in x.args))
    raise TypeError(f"symmetry: no normal form for {type(x).__name__}")


def _symmetric_property(prop: m.Property, domain: Domain, members) -> bool:
    """Whether the property reads the same after any permutation of the domain's
    indices: checked for a swap and a rotation, which generate them all."""
    n = domain.size
    generators = [(1, 0) + tuple(range(2, n)), tuple(range(1, n)) + (0,)]
    for x in (prop.cond, prop.trigger, prop.goal):
        plain = _normal(x, domain, None)
        if any(_normal(x, domain, g) != plain for g in generators):
            return False
    return True


class Symmetry:
    """The canonicalisation hook: `canonical(t)` is the representative of t's orbit
    under the domains' permutations, the state with each domain's indices sorted
    (largest first) by everything that belongs to an index: its instances' pcs,
    locals, task states and store buffers, its elements of the domain's arrays, and its
    instances' bits in every wait queue. Since that is all that differs between the
    states of an orbit, the states of one orbit sort to the same representative; the
    search stores only those.

    All of an index's belongings are bit fields of the packed state, of the same widths
    for every index; a permutation moves fields. Deciding whether a state is already a
    representative is generated code (one expression per index), since the engine asks
    for every successor; most are.

    States of one orbit have the same futures up to renaming (the analysis above makes
    sure), so breadth-first search over representatives finds a shortest path to every
    orbit; `concretise` turns such a path back into a run of the model."""

    def __init__(self, cm: CompiledModel, domains: list[Domain]):
        self.cm = cm
        self.domains = domains
        self.process_of = {inst.name: inst.process.name for inst in cm.instances}
        layout, pk = cm.layout, cm.packing
        queue_slots = [k for k, sl in enumerate(layout.slots)
                       if sl.kind is ir.SlotKind.VAR and isinstance(sl.type, m.WaitQueueT)]
        self.fields = []  # per domain, per index: (shift, mask) of each field, aligned across indices
        for d in domains:
            n = d.size
            slots: list[list[int]] = [[] for _ in range(n)]
            bits: list[list[int]] = [[] for _ in range(n)]  # bit positions: an index's instances in queues
            gids = [[layout.gid_base[pname] + i for pname in d.procs] for i in range(n)]
            for pname in d.procs:
                mp = next(mp for mp in cm.program.model.processes if mp.name == pname)
                for i in range(n):
                    gid = layout.gid_base[pname] + i
                    slots[i].append(layout.pc_base[pname] + i)
                    for sym in mp.locals:
                        base = layout.var_base[(sym, i)]
                        width = sym.type.length if isinstance(sym.type, m.ArrayT) else 1
                        slots[i].extend(range(base, base + width))
                    if gid in layout.task_slot:
                        slots[i].append(layout.task_slot[gid])
                    buf = layout.buffer_of(gid)
                    if buf is not None:
                        slots[i].extend(range(buf.base, buf.base + 2 * buf.capacity))
            array_queues: list[list[int]] = [[] for _ in range(n)]  # element i of each queue array
            for sym in d.arrays:
                base = layout.var_base[(sym, None)]
                for i in range(n):
                    (array_queues if isinstance(sym.type.elem, m.WaitQueueT) else slots)[i].append(base + i)
            in_arrays = {q for qs in array_queues for q in qs}
            for i in range(n):
                # a queue element of the domain holds only its own index's instances
                bits[i] = [pk.shift[q] + g for q in queue_slots if q not in in_arrays for g in gids[i]] \
                    + [pk.shift[q] + g for q in array_queues[i] for g in gids[i]]
            self.fields.append([[pk.field(k) for k in slots[i]] + [(b, 1) for b in bits[i]] for i in range(n)])
        self._permutations: dict = {}
        self.canonical = self._generate()

    def _generate(self):
        """`canonical` as generated code: per domain, each index's key as one integer
        (its fields side by side, first most significant), and the permutation only
        when the keys are out of order."""
        lines = ["def canonical(t):"]
        for k, fields in enumerate(self.fields):
            keys = []
            for i, fs in enumerate(fields):
                parts, at = [], 0
                for sh, mk in reversed(fs):
                    parts.append(f"(t >> {sh} & {mk})" + (f" << {at}" if at else ""))
                    at += mk.bit_length()
                keys.append(" | ".join(parts) or "0")
                lines.append(f"    k{i} = {keys[-1]}")
            n = len(fields)
            ordered = " >= ".join(f"k{i}" for i in range(n))
            lines.append(f"    if not ({ordered}):")
            lines.append(f"        t = permute(t, {k}, ({', '.join(f'k{i}' for i in range(n))},))")
        lines.append("    return t")
        ns = {"permute": self._permute_by_keys}
        exec(compile("\n".join(lines) + "\n", "<timerace symmetry>", "exec"), ns)  # noqa: S102 - ints only
        return ns["canonical"]

    def _permute_by_keys(self, t: int, domain: int, keys: tuple) -> int:
        order = tuple(sorted(range(len(keys)), key=keys.__getitem__, reverse=True))
        fn = self._permutations.get((domain, order))
        if fn is None:
            fn = self._permutations[(domain, order)] = self._permutation(domain, order)
        return fn(t)

    def permute(self, t: int, domain: int, order: list[int]) -> int:
        """Packed state t with index j of the domain holding what index order[j] held."""
        return self._permutation(domain, tuple(order))(t)

    def _permutation(self, domain: int, order: tuple) -> object:
        """One permutation as generated code: every moved field in one expression."""
        fields = self.fields[domain]
        clear = 0
        for fs in fields:
            for sh, mk in fs:
                clear |= mk << sh
        parts = [f"t & {~clear}"]
        for j, i in enumerate(order):
            for (src, mk), (dst, _) in zip(fields[i], fields[j]):
                if mk:
                    shift = f" >> {src - dst}" if src > dst else f" << {dst - src}" if dst > src else ""
                    parts.append(f"(t & {mk << src}){shift}")
        ns: dict = {}
        exec(compile(f"def permute(t):\n    return {' | '.join(parts)}\n", "<timerace symmetry>", "exec"), ns)  # noqa: S102
        return ns["permute"]

    def canonical_state(self, t: tuple) -> tuple:
        """The representative of state tuple t."""
        return self.cm.unpack(self.canonical(self.cm.pack(t)))

    def concretise(self, states: list[tuple], steps: list, failing=None) -> tuple[list, list, object]:
        """A run of the model for a path of representatives, where each step was taken
        from the representative before it: from the concrete state reached so far, the
        same statement in whichever instance leads to the next representative, run again
        (so every state shown is one the model reaches). `failing`: the step that fails
        (an assertion, a model error) in the last representative; returned as the same
        statement of the instance that fails the same way in the concrete state."""
        x = states[0]
        out_states, out_steps = [x], []
        for cs, target in zip(steps, states[1:]):
            for alt in self.alternatives(cs, x):
                try:
                    r = alt.fn(x)
                except (AssertionViolation, ModelError, StoreBufferFull):
                    continue
                if r is not None and self.canonical_state(tuple(r)) == target:
                    x = tuple(r)
                    out_states.append(x)
                    out_steps.append(alt)
                    break
            else:
                raise AssertionError(f"symmetry: no instance of {cs.name} leads to the next representative")
        if failing is not None:
            how = _failure(failing, states[-1])
            for alt in self.alternatives(failing, x):
                if _failure(alt, x) == how:
                    failing = alt
                    break
            else:
                raise AssertionError(f"symmetry: no instance of {failing.name} fails in the concrete state")
        return out_states, out_steps, failing

    def alternatives(self, cs, x: tuple) -> list:
        """The same statement as `cs` in every instance of its process at x (or the flush
        of every store buffer of its process's instances), in instance order."""
        if isinstance(cs, CompiledFlush):
            proc = self.process_of[cs.buffer.cpu]
            return [f for f in self.cm.flushes if self.process_of[f.buffer.cpu] == proc]
        return [alt for inst in self.cm.instances if inst.process.name == cs.step.process
                for alt in inst.steps_at[x[inst.pc_slot]] if alt.step.uid == cs.step.uid]


def _failure(cs, s: tuple):
    """How a step fails in s: (exception type, the assertion's property), or None."""
    try:
        cs.fn(s)
    except AssertionViolation as e:
        return AssertionViolation, e.property
    except ModelError:
        return ModelError, None
    return None


# ---- merging local steps ---------------------------------------------------------------


def merge_local_steps(program: ir.Program) -> tuple[ir.Program, int]:
    """The program with chains of local steps merged into the step that follows them
    (SPIN's statement merging), for the search with partial-order reduction only.

    A step t merges into the next when, in every instance of its process, t is the only
    step at its pc, always enabled, invisible, no back edge, and conflicts with no other
    actor; and it has one target. The merged step runs the chain, then the first step
    u that is not such a step (unless u sits at a choice): atomically, which changes no
    verdict, since the chain commutes with everything any other actor does and no
    property sees it, so running it just before u is as good as running it earlier.
    u must be always enabled too, or wait only on a guard that reads nothing the chain
    writes, in front of a chain that cannot fail (an assertion or a model error must
    not hide behind a wait); the pc of u must be a valid end exactly when the chain's
    first pc is, so that a process stuck before the merged step is stuck where it
    would have been. Returns the program and the number of steps merged away."""
    an = analyse(program)
    layout = program.layout
    procs = []
    merged_count = 0
    for p in program.processes:
        gids = [layout.gid_base[p.name] + i for i in range(p.instances)]
        targets = {}
        for pc, steps in enumerate(p.steps_at):
            if len(steps) == 1:
                gotos = {op.pc for op in ir.walk_ops(steps[0].body) if isinstance(op, ir.OGoto)}
                if len(gotos) == 1 and all(an.independent(g, pc) and an.always_enabled[(g, pc)] for g in gids):
                    targets[pc] = gotos.pop()
        # a chain starts where the process can arrive other than through a merged step
        arrive = {0}
        for pc, steps in enumerate(p.steps_at):
            for st in steps:
                for op in ir.walk_ops(st.body):
                    if isinstance(op, ir.OGoto) and targets.get(pc) != op.pc:
                        arrive.add(op.pc)
        uid = max((st.uid for st in p.steps), default=-1) + 1
        steps_at = list(p.steps_at)
        new_steps = list(p.steps)
        gone: set = set()  # pcs whose step now runs inside a merged one
        for start in sorted(set(targets) & arrive):
            chain = [start]
            while targets.get(chain[-1]) is not None and targets[chain[-1]] not in chain \
                    and targets[chain[-1]] in targets:
                chain.append(targets[chain[-1]])
            after = targets[chain[-1]]
            written: set = set()
            for pc in chain:
                for g in gids:
                    for fp in an.footprints[(g, pc)]:
                        written |= fp.writes
            ops: list = []
            for pc in chain:
                ops.extend(op for op in p.steps_at[pc][0].body if not isinstance(op, ir.OGoto))
            first = p.steps_at[start][0]
            nxt = p.steps_at[after]
            end = (start in p.end_pcs) == (after in p.end_pcs)
            # u may take part only if it cannot be disabled where the chain could still run
            # (and fail: an assertion, a value out of range); a guard that reads nothing the
            # chain writes may wait in front of a chain that cannot fail
            sure = all(an.always_enabled[(g, after)] for g in gids)
            hoist = len(nxt) == 1 and nxt[0].kind is not ir.StepKind.SCHEDULE and not nxt[0].fence \
                and not any(_buffered(layout, fp) for g in gids for fp in an.footprints[(g, after)]) \
                and all(not (_reads_of(program, p, g, nxt[0].guard) & written) for g in gids) \
                and _cannot_fail(ops)
            if len(nxt) == 1 and (sure or hoist) and end and after not in chain \
                    and nxt[0].kind is not ir.StepKind.STUTTER:  # (a stutter stays a step that changes nothing)
                u = nxt[0]
                step = replace(first, uid=uid, kind=u.kind, guard=u.guard, body=tuple(ops) + u.body,
                               text="; ".join([p.steps_at[pc][0].text for pc in chain] + [u.text]), fence=u.fence,
                               parts=_parts(p, chain) + _parts(p, [after]))
                gone.update(chain)
            elif len(chain) >= 2:
                step = replace(first, uid=uid, guard=None, body=tuple(ops) + (ir.OGoto(after),),
                               text="; ".join(p.steps_at[pc][0].text for pc in chain),
                               fence=p.steps_at[chain[-1]][0].fence, parts=_parts(p, chain))
                gone.update(chain[:-1])
            else:
                continue
            uid += 1
            steps_at[start] = (step,)
            new_steps.append(step)
        merged_count += len(gone) * p.instances
        procs.append(replace(p, steps_at=tuple(steps_at), steps=tuple(new_steps)))
    return replace(program, processes=tuple(procs)), merged_count


def _parts(p: ir.ProcessIR, pcs) -> tuple[int, ...]:
    """The uids of the original steps at pcs (each a step that may itself be merged)."""
    return tuple(uid for pc in pcs for st in p.steps_at[pc][:1] for uid in (st.parts or (st.uid,)))


def _buffered(layout: ir.StateLayout, fp: Footprint) -> bool:
    """The step goes through a store buffer (it may wait for room in it)."""
    return any(isinstance(x, int) and layout.slots[x].kind is ir.SlotKind.BUFFER for x in fp.reads | fp.writes)


def _cannot_fail(ops) -> bool:
    """Ops that surely run to the end (nothing that can fail an assertion or raise a
    model error): barriers, gotos, branches on conditions that cannot fail, and plain
    assignments to a scalar of a constant in its range or of a variable of the same
    type."""
    for op in ops:
        if isinstance(op, (ir.OBarrier, ir.OGoto)):
            continue
        if isinstance(op, ir.OIf):
            if _expr_cannot_fail(op.cond) and _cannot_fail(op.then) and _cannot_fail(op.orelse):
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
        if isinstance(t, m.IntT) and t.lo is not None and t.lo <= v.value <= t.hi:
            continue
        return False
    return True




def _expr_cannot_fail(x: m.TExpr | None) -> bool:
    """An expression whose evaluation raises nothing: no division, shift or computed
    index (any of which may be out of range)."""
    if x is None or isinstance(x, (m.Const, m.Var, m.SelfE, m.Bound)):
        return True
    if isinstance(x, (m.Un, m.Conv)):
        return _expr_cannot_fail(x.operand)
    if isinstance(x, m.Bin):
        return x.op not in ("/", "%", "<<", ">>") and _expr_cannot_fail(x.left) and _expr_cannot_fail(x.right)
    if isinstance(x, m.Ite):
        return all(_expr_cannot_fail(e) for e in (x.cond, x.then, x.orelse))
    if isinstance(x, m.At):
        return x.index is None or isinstance(x.index, m.Const)
    if isinstance(x, m.Elem):
        t = x.sym.type
        return isinstance(x.index, m.Const) and t.lo <= x.index.value <= t.hi
    if isinstance(x, m.Builtin):
        core = lower(x)
        if isinstance(core, TestBit):
            return isinstance(core.nr, m.Const) and _expr_cannot_fail(core.bits)
        return isinstance(core, SAFE_READS) and all(_expr_cannot_fail(a) for a in x.args)
    return False


def _reads_of(program: ir.Program, p: ir.ProcessIR, gid: int, guard: m.TExpr | None) -> set:
    col = _Collector(program)
    col.proc = p.name
    col.reads, col.writes = set(), set()
    col.expr(guard, gid - program.layout.gid_base[p.name])
    return col.reads


# ---- what a run applies ---------------------------------------------------------------


class SymmetryMode:
    """How --symmetry is set: AUTO applies it where the analysis proves the model
    symmetric, ON does the same and says why wherever it cannot, OFF never."""

    AUTO, ON, OFF = "auto", "on", "off"


class Plan(Reduction):
    """The reductions one variant's search applies (the engine's hooks), and in words
    what was applied or left out and why (printed with the results)."""

    def __init__(self, por: PartialOrder | None = None, symmetry: Symmetry | None = None,
                 notes: tuple[str, ...] = ()):
        self.por = por
        self.symmetry = symmetry
        self.notes = notes
        self.selects = por is not None
        self.canonicalises = symmetry is not None
        if por is not None:
            self.ample = por.ample
            self.ample_mask = por.ample_mask
            self.movable = por.movable
        if symmetry is not None:
            self.canonical = symmetry.canonical
            self.concretise = symmetry.concretise

    @property
    def active(self) -> bool:
        return self.selects or self.canonicalises


def plan(cm: CompiledModel, por: bool = True, symmetry: str = SymmetryMode.AUTO,
         whole_graph: bool = False, merged: int = 0) -> Plan:
    """Decide the reductions for one compiled variant. `whole_graph`: the caller draws
    the whole state graph (--dot-graph), which no reduction may thin out. `merged`: how
    many local steps `merge_local_steps` merged away in `cm` (for the notes)."""
    notes: list[str] = []
    liveness = bool(cm.liveness)
    if whole_graph:
        if por or symmetry != SymmetryMode.OFF:
            notes.append("no reductions: --dot-graph draws the whole state graph")
        return Plan(notes=tuple(notes))
    if cm.program.model.memory == "lkmm":  # the machine's views are per CPU: no footprints or permutations for them yet
        if cm.layout.lkmm is not None and cm.layout.lkmm.lazy:
            notes.append("under lkmm a store propagates to a CPU only where that CPU next reads, fences or holds "
                         "up a store (--no-por: anywhere); no partial-order or symmetry reduction")
        elif por or symmetry == SymmetryMode.ON:
            notes.append("no reductions under lkmm: the search is over every interleaving")
        return Plan(notes=tuple(notes))
    order = None
    fair_lines = sorted({fa.span.line for p in cm.program.processes for fa in p.fair_actions})
    if por and liveness and fair_lines:  # the ample-set argument above is made for fairness per process
        notes.append("no partial-order reduction: the variant has liveness properties and `fair` actions (line "
                     + ", ".join(map(str, fair_lines)) + ")")
        por = False
    if por and cm.instances:  # (a model of lemmas alone has nothing to interleave)
        order = PartialOrder(cm, analyse(cm.program), singletons=liveness)
        if merged:
            notes.append(f"local steps merged into the step that follows them: {merged}")
        if liveness:
            notes.append("liveness: ample sets of one process whose steps no other process can see, "
                         "which keeps weak fairness")
    sym = None
    if symmetry != SymmetryMode.OFF:
        domains, reasons = symmetry_domains(cm.program)
        if domains and liveness:
            if symmetry == SymmetryMode.ON:
                notes.append("symmetry not applied: the variant has liveness properties, and fairness is "
                             "per instance")
        elif domains:
            sym = Symmetry(cm, domains)
            notes.append("symmetry: states counted up to permutations of " +
                         "; ".join(d.describe() for d in domains))
        if symmetry == SymmetryMode.ON:
            if reasons:
                notes.extend("not symmetric: " + r for r in reasons)
            elif not domains and not any(p.count for p in cm.program.processes):
                notes.append("symmetry not applied: the model has no process arrays")
    return Plan(order, sym, tuple(notes))
