"""Symmetry reduction: interchangeable process instances, and the canonical state a
search stores for each orbit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ... import ir, model as m
from ...backends.python import (views_of, AssertionViolation, CompiledFlush, CompiledModel, CompiledStep, ModelError,
                               StoreBufferFull)
from ...semantics.lower import WaitAdd, Wake, lower
from ...base.record import record

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
#   - under tso, nothing of the domain goes through a store buffer by address;
#   - under lkmm, the domain has no data arrays (each element would be a location with
#     a history and views of its own); an index's CPU views are its belongings.
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
                assert isinstance(q, (m.Var, m.Elem))  # a wait queue variable
                if not (isinstance(q, m.Elem) and self.index_term(q.index) == ("proc", self.proc)):
                    self.u.shared_waits.setdefault(self.proc, set()).add(q.sym)
            if isinstance(core, Wake) and not core.all:
                q = x.args[0]
                assert isinstance(q, (m.Var, m.Elem))
                self.u.wake_one.add(q.sym)
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


@record
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
    if program.model.memory == "lkmm" and arrays:
        raise _Asymmetric(f"under lkmm, each element of {arrays[0].name} has a history and views of its own")
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
                    views = views_of(layout)
                    cpu = views.cpu(gid) if views is not None else None
                    if cpu is not None:  # lkmm: the instance's views (in the same order for every index)
                        slots[i].extend(cpu.slots)
            array_queues: list[list[int]] = [[] for _ in range(n)]  # element i of each queue array
            for sym in d.arrays:
                base = layout.var_base[(sym, None)]
                assert isinstance(sym.type, m.ArrayT)  # an array indexed by the domain
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
        exec(compile("\n".join(lines) + "\n", "<timerace symmetry>", "exec"), ns)
        return ns["canonical"]

    def tables(self) -> tuple[tuple[tuple[tuple[int, int], ...], ...], ...]:
        """`fields` for the native loop, which sorts the indices by the same keys in C
        (backends/c.py's `canonical`)."""
        return tuple(tuple(tuple(fs) for fs in fields) for fields in self.fields)

    def _permute_by_keys(self, t: int, domain: int, keys: tuple) -> int:
        order = tuple(sorted(range(len(keys)), key=keys.__getitem__, reverse=True))
        fn = self._permutations.get((domain, order))
        if fn is None:
            fn = self._permutations[(domain, order)] = self._permutation(domain, order)
        return fn(t)

    def permute(self, t: int, domain: int, order: list[int]) -> int:
        """Packed state t with index j of the domain holding what index order[j] held."""
        return self._permutation(domain, tuple(order))(t)

    def _permutation(self, domain: int, order: tuple) -> Callable[[int], int]:
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
        exec(compile(f"def permute(t):\n    return {' | '.join(parts)}\n", "<timerace symmetry>", "exec"), ns)
        return ns["permute"]

    def canonical_state(self, t: tuple) -> tuple:
        """The representative of state tuple t."""
        return self.cm.unpack(self.canonical(self.cm.pack(t)))

    def concretise(self, states: list[tuple], steps: list,
                   failing: CompiledStep | None = None) -> tuple[list, list, CompiledStep | None]:
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


