"""IR -> compiled steps: one generated Python function per step and process instance.

The generated module is plain, printable Python (`check --dump-python`). Nothing from
the spec's text reaches it except through a safe mapping: variables become slot
numbers, constants become integer literals, and source text appears only in comments
after being reduced to printable characters on one line. The module runs with no
builtins but the handful it needs.

States are packed into one Python int (`Packing`): every slot of the state tuple
(ir.StateLayout) is a bit field holding its value minus the slot's lower bound, so a
state hashes and compares as one integer and costs a few dozen bytes to store. A step
function takes a packed state `s` and returns the successor (an int) or None when the
step is not enabled; it tests its guard before building anything. It raises
`AssertionViolation` when an `assert` fails and `ModelError` when the model itself goes
wrong (a value out of its range, an index out of bounds, a division by zero). Each
compiled step also has a tuple form (`CompiledStep.fn`: state tuple -> list or None),
a thin wrapper for the callers that think in tuples (replay, the Z3 engines' replay,
tests); only the explicit engine runs the packed functions directly.

The generator folds what is known per process instance (`self`, constants, quantifiers
over constant ranges, which it unrolls), so `fork[first(self)]` becomes a fixed bit
field, and merges a step's writes of constants into one mask-and-set.

Under x86-TSO (`memory tso`) a plain store to a shared variable appends (address, value)
to its CPU's store buffer instead of writing memory (values are stored minus the
smallest lower bound of the buffered variables); a load of a variable the CPU may have
buffered reads the newest matching entry, else memory; a fence step (see
`ir.is_fence`) starts with "return None unless my buffer is empty", and the locked
operations in it act on memory directly. One more function per buffer, `<cpu>_flush`,
moves the oldest entry to memory. A store that finds its buffer full raises
`StoreBufferFull`: the engine treats the step as disabled until a flush makes room, and
counts the states where that happened, because the verdicts then hold only for buffers
of that size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import model as m
from ..base.errors import Span, SpecError
from ..semantics.fold import fits_bv, simplify, store_needs
from ..base.limits import MAX_NESTING, MAX_STEP_LOOP
from ..semantics.lower import EmittedSpelling
from ..ir import (OAssert, OAssign, OBarrier, OBreak, OContinue, OEval, OGoto, OIf, OInline, OReturn, OWhile, Op,
                  Program, ProcessIR, SlotKind, StateLayout, Step, StepKind, StoreBuffer)
from ..base.safe_text import python_comment as _comment
from ..base.record import record

if TYPE_CHECKING:  # the lkmm machine is loaded by the runs under `memory lkmm` only
    from ..memory import lkmm as lkmm_machine


class ModelError(Exception):
    """The model went wrong while running a step (not a property violation)."""


class AssertionViolation(Exception):
    def __init__(self, prop: str):
        super().__init__(prop)
        self.property = prop


class StoreBufferFull(Exception):
    """A plain store found its CPU's store buffer full (tso): the step waits for a flush."""


@record
class CompiledStep:
    fn: Callable  # state tuple -> successor list, or None when disabled (a wrapper of `packed`)
    step: Step
    instance: int
    gid: int
    name: str  # the generated function's name
    packed: Callable = field(compare=False)  # packed state -> packed successor or None
    # the bits of the packed state the step may change (-1: an address computed at run
    # time, any bit): a parallel worker need not compute the owner of a successor by a
    # step that leaves the owner's bits alone (engines/explicit/fastloop.py)
    writes: int = field(default=-1, compare=False)


@record
class CompiledInstance:
    """One running process: its pc slot and, by pc, the steps it can take."""

    name: str
    gid: int
    process: ProcessIR
    instance: int
    pc_slot: int
    steps_at: tuple[tuple[CompiledStep, ...], ...]
    end_pcs: frozenset[int]


@record
class CompiledFlush:
    """The step that makes the oldest store of one CPU's buffer visible in memory.

    `steps_at` is indexed by the buffer's first address slot (`slot`), like a process's
    steps are indexed by its pc: empty at address 0 (nothing buffered), the flush
    otherwise. An engine walks both tables the same way."""

    fn: Callable
    buffer: StoreBuffer | lkmm_machine.Propagation  # tso: the buffer it drains; lkmm: the view it moves
    name: str
    slot: int
    gid: int  # an actor of its own, numbered after the process instances: the memory
    # system drains every buffer eventually, whatever its CPU does (fairness sees that)
    packed: Callable = field(compare=False)
    steps_at: tuple[tuple[CompiledFlush, ...], ...] = field(default=(), repr=False, compare=False)
    writes: int = field(default=-1, compare=False)  # as CompiledStep's: a flush stores where its entry says


@record
class CompiledPredicate:
    property: m.Property
    fn: Callable  # state tuple -> bool
    name: str
    packed: Callable = field(compare=False)  # packed state -> bool


@record
class Packing:
    """Where each slot of the state tuple lives in the packed state (one int): slot k
    holds `value - lo[k]` in `width[k]` bits from bit `shift[k]` (width 0: the value is
    always lo[k]). Slots follow each other in layout order, so the elements of an array,
    the instances of a process and the entries of a store buffer are evenly spaced."""

    shift: tuple[int, ...]
    width: tuple[int, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    bits: int  # the widest a packed state can be

    def mask(self, k: int) -> int:
        return (1 << self.width[k]) - 1

    def field(self, k: int) -> tuple[int, int]:
        """(shift, mask) of slot k: its raw value is `s >> shift & mask`."""
        return self.shift[k], self.mask(k)


@record
class CompiledModel:
    program: Program
    instances: tuple[CompiledInstance, ...]
    invariants: tuple[CompiledPredicate, ...]
    liveness: tuple[tuple[m.Property, Callable | None, Callable], ...]  # on state tuples
    source: str  # the generated Python
    packing: Packing
    pack: Callable = field(repr=False)  # state tuple -> int (ModelError if out of range)
    unpack: Callable = field(repr=False)  # int -> state tuple
    namespace: dict = field(repr=False, default_factory=dict)
    flushes: tuple[CompiledFlush, ...] = ()  # tso: one per store buffer
    finals: tuple[CompiledPredicate, ...] = ()  # `final` conditions
    final_state: Callable | None = None  # state tuple -> every process at a valid end, buffers empty, none can move
    final_state_packed: Callable | None = field(default=None, repr=False)
    liveness_packed: tuple = field(default=(), repr=False)  # `liveness` on packed states, in the same order
    # the questions of vacuity, in property order: the trigger of `always (P -> eventually
    # Q)` and the left side of an invariant's `->`; the search records whether a reachable
    # state satisfies each (engines/coverage.py)
    premises: tuple[CompiledPredicate, ...] = ()

    @property
    def layout(self) -> StateLayout:
        return self.program.layout

    @property
    def views(self) -> lkmm_machine.Views | None:
        """lkmm: where the machine's slots are (`layout.lkmm`, typed there as an object:
        ir sits below memory/ and cannot name the class)."""
        return views_of(self.program.layout)


def views_of(layout: StateLayout) -> lkmm_machine.Views | None:
    views = layout.lkmm
    if views is not None:
        from ..memory import lkmm as lkmm_machine

        assert isinstance(views, lkmm_machine.Views)
    return views


def packing_of(layout) -> Packing:
    """Bit fields for every slot, in layout order, each as narrow as its type allows;
    but the lkmm machine's slots (last, `memory.lkmm.extend`) are a byte each from a
    byte boundary when they all fit in one (lkmm.Machine then reads and writes its part
    of a state as bytes, in C, rather than field by field: fast, at a few hundred bytes
    more a state)."""
    bounds = [_slot_bounds(layout, k) for k in range(len(layout.slots))]
    machine = [k for k, sl in enumerate(layout.slots) if sl.kind is SlotKind.VIEW]
    uniform = 0
    if machine and all(bounds[k][0] == 0 for k in machine):
        widest = max((hi - lo).bit_length() for lo, hi in (bounds[k] for k in machine))
        uniform = 8 if widest <= 8 else 0
    shift, width, los, his = [], [], [], []
    at = 0
    for k, (lo, hi) in enumerate(bounds):
        w = (hi - lo).bit_length()
        if uniform and k >= machine[0]:
            w = uniform
            if k == machine[0]:
                at = -(-at // 8) * 8
        shift.append(at)
        width.append(w)
        los.append(lo)
        his.append(hi)
        at += w
    return Packing(tuple(shift), tuple(width), tuple(los), tuple(his), at)


def _type_bounds(t: m.Type, layout) -> tuple[int, int]:
    if isinstance(t, m.ArrayT):
        return _type_bounds(t.elem, layout)
    if isinstance(t, m.BoolT):
        return 0, 1
    if isinstance(t, m.EnumT):
        return 0, max(len(t.members) - 1, 0)
    if isinstance(t, m.BitsetT):
        return 0, (1 << t.size) - 1
    if isinstance(t, m.WaitQueueT):
        return 0, (1 << len(layout.instance_names)) - 1
    if isinstance(t, m.IntT) and t.lo is not None and t.hi is not None:
        return t.lo, t.hi
    width = getattr(t, "width", None)  # a C unsigned type: 0 .. 2**width - 1
    if isinstance(width, int):
        return 0, (1 << width) - 1
    raise TypeError(f"no bounds for a slot of type {t.describe()}")


def _slot_bounds(layout, k: int) -> tuple[int, int]:
    sl = layout.slots[k]
    if sl.kind is SlotKind.BUFFER:
        b = next(b for b in layout.buffers if b.name == sl.var)
        if sl.element % 2 == 0:  # an address: a slot number + 1, 0 for an empty entry
            return 0, sl.type.hi
        bounds = [_type_bounds(sym.type, layout) for sym in b.locations] or [(0, 0)]
        return min(lo for lo, _ in bounds), max(hi for _, hi in bounds)
    return _type_bounds(sl.type, layout)


def _range_error(name: str, value: int, lo: int, hi: int):
    raise ModelError(f"value {value} is outside the range of {name} ({lo}..{hi})")


def _index_error(name: str, index: int, lo: int, hi: int):
    raise ModelError(f"index {index} is outside {name} ({lo}..{hi})")


def _ix(i: int, lo: int, hi: int, name: str) -> int:
    if i < lo or i > hi:
        _index_error(name, i, lo, hi)
    return i


def _div(a: int, b: int) -> int:
    if b == 0:
        raise ModelError("division by zero")
    return m.c_div(a, b)


def _mod(a: int, b: int) -> int:
    return a - _div(a, b) * b


def _shl(a: int, b: int) -> int:
    if b < 0 or b > 4096:
        raise ModelError(f"shift count {b} out of range")
    return a << b


def _shr(a: int, b: int) -> int:
    if b < 0:
        raise ModelError(f"shift count {b} out of range")
    return a >> b


# How each operator of the language reads in the generated Python (C semantics where
# Python's differ: division truncates toward zero, shifts refuse negative counts).
_PY_BINOP = {
    "&&": "({a} and {b})", "||": "({a} or {b})", "->": "((not {a}) or {b})",
    "/": "_div({a}, {b})", "%": "_mod({a}, {b})", "<<": "_shl({a}, {b})", ">>": "_shr({a}, {b})",
}


def _bv(op: str, a: int, b: int, width: int, signed: bool = False) -> int:
    """A fixed-width (u8..u64, s8..s64) operator; see model.bv_binop."""
    if op in ("/", "%") and b == 0:
        raise ModelError("division by zero")
    return m.bv_binop(op, a, b, width, signed)


def _step_loop_error(repeats: bool, line: int, col: int):
    why = ("comes back to a state it was in: it never ends" if repeats
           else f"runs {MAX_STEP_LOOP} iterations without ending")
    raise ModelError(f"the loop whose `while` condition is at line {line}, col {col} {why}, inside one step "
                     "(an atomic block or a notifier)")


def _assert_failed(prop: str):
    raise AssertionViolation(prop)


def _store_buffer_full():
    raise StoreBufferFull()


_RUNTIME = {
    "__builtins__": {"min": min, "max": max, "any": any, "all": all, "range": range,
                     "list": list, "len": len, "bool": bool, "set": set},
    "_range_error": _range_error, "_index_error": _index_error, "_ix": _ix, "_div": _div, "_mod": _mod,
    "_shl": _shl, "_shr": _shr, "_bv": _bv,
    "_assert_failed": _assert_failed, "_step_loop_error": _step_loop_error, "_store_buffer_full": _store_buffer_full,
}


def compile_program(program: Program, lazy_propagation: bool = True) -> CompiledModel:
    """`lazy_propagation`: under lkmm, views move only where that can matter
    (lkmm_machine.Machine.propagate); False for every interleaving (--no-por)."""
    try:
        if program.model.memory == "lkmm" and program.layout.lkmm is None:
            from ..memory import lkmm as lkmm_machine

            program = lkmm_machine.extend(program, lazy_propagation)
        return Compiler(program).run()
    except SpecError as e:
        raise e.with_code("TR400") from None


def _ident(text: str) -> str:
    """A spec name reduced to a safe Python identifier fragment (names are already [A-Za-z0-9_])."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in text)


@dataclass(slots=True)
class _Addr:
    """A variable's bit field, as generated code: a fixed slot, or an array element
    whose slot (and so shift) depends on an index computed at run time."""

    name: str  # as error messages show it
    slot: int | None  # the slot when it is known at compile time
    slot_code: str  # the slot number as code
    shift_code: str  # the field's first bit as code
    width: int
    lo: int

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


class Emitter:
    """Lines of one generated function, with fresh temporaries, and the writes of
    constants to fixed fields not yet emitted (merged into one `v & clear | set`)."""

    def __init__(self):
        self.lines: list[str] = []
        self.depth = 1
        self.tmp = 0
        self.clear = 0  # bits of pending constant writes
        self.set = 0
        self.writes = 0  # every bit the emitted code may change (-1: any, an address computed at run time)

    def emit(self, line: str):
        self.lines.append("    " * self.depth + line)

    def fresh(self) -> str:
        self.tmp += 1
        return f"_t{self.tmp}"

    def pending(self) -> str:
        """`v` with the pending constant writes applied, as code (and forget them)."""
        code = "v"
        if self.clear:
            code = f"v & ~{self.clear:#x}" + (f" | {self.set:#x}" if self.set else "")
            self.writes |= self.clear
        self.clear = self.set = 0
        return code

    def flush(self):
        if self.clear:
            self.emit(f"v = {self.pending()}")


_PACK_TERMS = 256  # fields per line of the generated `pack`


def _paren(code: str) -> str:
    return code if code.isidentifier() or code.isdigit() else f"({code})"


class Compiler:
    """IR -> the generated Python of every step, the packing and the predicates. About
    800 lines, on purpose: one translation in sections (names and packing, expressions,
    stores, loads through store buffers, operations, the core operations, the run) that
    share the emitter's state; promela._Translator follows the same sections."""

    def __init__(self, program: Program):
        self.program = program
        self.layout = program.layout
        self.pk = packing_of(program.layout)
        self.names: list[str] = []
        self.src: list[str] = []
        self.bound: dict[int, str] = {}
        self.tso = program.model.memory == "tso"
        # lkmm: every store to a global slot k also sets bit `marks + k` of the result, so
        # that the machine (lkmm_machine.py) knows what the step stored, equal values too
        self.views = views_of(program.layout)
        self.marks = self.pk.bits if self.views is not None else None
        self.buffer: StoreBuffer | None = None  # the store buffer of the CPU being compiled
        self.direct = False  # inside a locked operation: loads and stores use memory
        self.proc: ProcessIR | None = None  # the process instance being compiled (None: a property)
        self.inst: int | None = None
        self.step_writes: dict[str, int] = {}  # step function name -> the bits it may change
        self.spans: dict[str, Span] = {}  # generated function -> the statement or property it runs

    def run(self) -> CompiledModel:
        model = self.program.model
        pk = self.pk
        self.src.append(f"# Generated by timerace from {_comment(model.file)}, variant {_comment(model.variant)}.")
        self.src.append(f"# State: one int of {pk.bits} bits; each slot is a field `s >> shift & mask` holding "
                        "its value minus its lower bound:")
        fields = []
        for k, sl in enumerate(self.layout.slots):
            lo = f" {pk.lo[k]:+d}" if pk.lo[k] else ""
            fields.append(f"{_comment(sl.name)} = s >> {pk.shift[k]} & {pk.mask(k)}{lo}" if pk.width[k]
                          else f"{_comment(sl.name)} = {pk.lo[k]} (fixed)")
        line = "#  "
        for f_ in fields:
            if len(line) + len(f_) > 100:
                self.src.append(line.rstrip(";"))
                line = "#  "
            line += f" {f_};"
        self.src.append(line.rstrip(";"))
        if self.tso:
            self.src.append(f"# Memory model x86-TSO: each store buffer holds at most {model.store_buffer} stores;"
                            " an entry is (address = slot + 1, value), address 0 = empty.")
            for b in self.layout.buffers:
                names = ", ".join(sorted(_comment(v.name) for v in b.locations))
                self.src.append(f"#   {_comment(b.name)}: slots {b.base}..{b.base + 2 * b.capacity - 1}, buffers {names}")
        self.src.append("")
        self.src.append(self.unpack_function())
        self.src.append(self.pack_function())
        plan: list[tuple[ProcessIR, int, Step, str]] = []
        for p in self.program.processes:
            for i in range(p.instances):
                for st in p.steps:
                    fname = f"{_ident(p.name)}{i if p.count is not None else ''}_step{st.uid}"
                    self.src.append(self.step_function(fname, p, i, st))
                    self.spans[fname] = st.span
                    plan.append((p, i, st, fname))
        flush_names: list[tuple[StoreBuffer, str]] = []
        for b in self.layout.buffers:
            fname = f"{_ident(b.cpu.replace('[', '').replace(']', ''))}_flush"
            self.src.append(self.flush_function(fname, b))
            flush_names.append((b, fname))
        inv_names: list[tuple[m.Property, str]] = []
        final_names: list[tuple[m.Property, str]] = []
        live_names: list[tuple[m.Property, str | None, str]] = []
        premise_names: list[tuple[m.Property, str]] = []
        for k, prop in enumerate(self.program.properties):
            if prop.kind is m.PropertyKind.INVARIANT:
                assert prop.cond is not None
                fname = f"invariant_{k}_{_ident(prop.name)}"
                self.src.append(self.predicate(fname, prop.cond, f"invariant {prop.name}"))
                inv_names.append((prop, fname))
                if isinstance(prop.cond, m.Bin) and prop.cond.op == "->":
                    premise = f"premise_{k}_{_ident(prop.name)}"
                    self.src.append(self.predicate(premise, prop.cond.left, f"invariant {prop.name}: left side"))
                    premise_names.append((prop, premise))
            elif prop.kind is m.PropertyKind.REACHABLE:  # searched for as a violation of !P
                assert prop.cond is not None
                fname = f"reachable_{k}_{_ident(prop.name)}"
                self.src.append(self.predicate(fname, m.Un(prop.cond.span, m.BoolT(), "!", prop.cond),
                                               f"reachable {prop.name} (negated)"))
                inv_names.append((prop, fname))
            elif prop.kind is m.PropertyKind.FINAL:
                assert prop.cond is not None
                fname = f"final_{k}_{_ident(prop.name)}"
                self.src.append(self.predicate(fname, prop.cond, f"final {prop.name} (checked in final states)"))
                final_names.append((prop, fname))
            elif prop.kind is m.PropertyKind.LIVENESS:
                trig = None
                if prop.trigger is not None:
                    trig = f"trigger_{k}_{_ident(prop.name)}"
                    self.src.append(self.predicate(trig, prop.trigger, f"property {prop.name}: condition"))
                    premise_names.append((prop, trig))
                goal = f"goal_{k}_{_ident(prop.name)}"
                assert prop.goal is not None
                self.src.append(self.predicate(goal, prop.goal, f"property {prop.name}: goal"))
                live_names.append((prop, trig, goal))
        if final_names:
            self.src.append(self.final_state_function())
        source = "\n".join(self.src) + "\n"
        ns: dict[str, Any] = dict(_RUNTIME)  # exec's namespace: the generated functions, by name
        ns.update(_SHIFT=pk.shift, _MASK=tuple(pk.mask(k) for k in range(len(pk.shift))), _LO=pk.lo)
        try:
            code = compile(source, f"<timerace {model.name}.{model.variant}>", "exec")
        except (SyntaxError, RecursionError, MemoryError) as e:
            raise self.too_deep(e) from None
        exec(code, ns)
        unpack = ns["unpack"]
        pack = _checked_pack(ns["pack"], pk, self.layout)
        instances = []
        by_instance: dict[tuple[str, int], dict[int, tuple[CompiledStep, ...]]] = {}
        machine = None
        if self.views is not None:
            from ..memory import lkmm as lkmm_machine

            machine = lkmm_machine.Machine(self.views, self.layout, pk, pk.bits, StoreBufferFull)
        for p, i, st, fname in plan:
            g = self.layout.gid_base[p.name] + i
            forms = [(fname, ns[fname], self.step_writes.get(fname, 0))]
            if machine is not None:  # lkmm: the machine runs the step; a failing cmpxchg has a form of its own
                forms = [(name, fn, -1) for name, fn in machine.steps(ns[fname], g, st.uid, fname)]
            by_instance.setdefault((p.name, i), {})[st.uid] = tuple(
                CompiledStep(_on_tuples(fn, pack, unpack), st, i, g, name, fn, writes) for name, fn, writes in forms)
        for p in self.program.processes:
            for i in range(p.instances):
                table = by_instance.get((p.name, i), {})
                steps_at = tuple(tuple(cs for st in at for cs in table[st.uid]) for at in p.steps_at)
                instances.append(CompiledInstance(p.instance_name(i), self.layout.gid_base[p.name] + i, p, i,
                                                  self.layout.pc_base[p.name] + i, steps_at, p.end_pcs))
        invariants = tuple(CompiledPredicate(prop, _pred_on_tuples(ns[f], pack), f, ns[f]) for prop, f in inv_names)
        # liveness predicates see only states the steps made (the graph's, a replay's),
        # which are in range: the unchecked pack, as the packed invariants have none
        raw = ns["pack"]
        liveness = tuple((prop, _pred_on_tuples(ns[t], raw) if t else None, _pred_on_tuples(ns[g], raw))
                         for prop, t, g in live_names)
        flushes = []
        for k, (b, fname) in enumerate(flush_names):
            cf = CompiledFlush(_on_tuples(ns[fname], pack, unpack), b, fname, b.base,
                               len(self.layout.instance_names) + k, packed=ns[fname])
            addresses = self.layout.slots[b.base].type
            assert isinstance(addresses, m.IntT) and addresses.hi is not None  # an address: 0..slots
            object.__setattr__(cf, "steps_at", ((),) + ((cf,),) * addresses.hi)
            flushes.append(cf)
        if machine is not None:  # lkmm: one fair propagation actor per (CPU, location it reads)
            views = machine.v
            pcs = {inst.gid: (pk.shift[inst.pc_slot], pk.mask(inst.pc_slot), inst.process.steps_at)
                   for inst in instances}
            for j, loc in enumerate(views.locations):
                for r in loc.readers:
                    cpu = views.cpu(r)
                    assert cpu is not None  # a reader is a CPU's views
                    fn = machine.propagate(cpu, j, pcs)
                    what = lkmm_machine.Propagation(cpu.name, loc.name, j)
                    cf = CompiledFlush(_on_tuples(fn, pack, unpack), what, f"propagate_{j}_{r}", cpu.cur[j],
                                       len(self.layout.instance_names) + len(flushes), packed=fn)
                    object.__setattr__(cf, "steps_at", ((),) + ((cf,),) * views.bound)
                    flushes.append(cf)
        finals = tuple(CompiledPredicate(prop, _pred_on_tuples(ns[f], pack), f, ns[f]) for prop, f in final_names)
        final_packed = _quiescent(ns["final_state"], instances, pk) if finals else None
        return CompiledModel(self.program, tuple(instances), invariants, liveness, source, pk, pack, unpack, ns,
                             tuple(flushes), finals,
                             _pred_on_tuples(final_packed, pack) if final_packed is not None else None,
                             final_packed,
                             tuple((prop, ns[t] if t else None, ns[g]) for prop, t, g in live_names),
                             tuple(CompiledPredicate(prop, _pred_on_tuples(ns[f], raw), f, ns[f])
                                   for prop, f in premise_names))

    # -- the state as a tuple and back
    def too_deep(self, error: Exception) -> SpecError:
        """Python refuses code that nests past its own limits (200 parentheses, 100
        indentation levels, its recursion limit); within the spec's nesting limit
        (limits.MAX_NESTING) some constructs still cost several levels of Python each,
        and a `fn` call pastes its body in place. The error points at the statement or
        property whose function it is, found by compiling each function alone."""
        if isinstance(error, SyntaxError) and not str(error.msg).startswith("too many"):
            raise error  # not a limit: a bug in this module
        for chunk in self.src:
            name = chunk[4:chunk.find("(")] if chunk.startswith("def ") else ""
            try:
                compile(chunk, "<timerace>", "exec")
            except (SyntaxError, RecursionError, MemoryError) as e:
                reason = e.msg if isinstance(e, SyntaxError) else "it nests too deeply for Python's compiler"
                span = self.spans.get(name, Span(self.program.model.file, 0, 0, 0, 0))
                return SpecError(span, f"this nests too deeply to compile: {reason} in the generated Python",
                                 f"split it over several statements, constants or `fn`s; the spec may nest "
                                 f"{MAX_NESTING} levels, but an index, a conversion or a `fn` call costs "
                                 "Python more than one")
        return SpecError(Span(self.program.model.file, 0, 0, 0, 0),
                         "the model nests too deeply to compile to Python")

    def unpack_function(self) -> str:
        e = Emitter()
        e.lines.append("def unpack(s):")
        e.emit("# the packed state as a tuple of slot values (for traces and the tuple-based callers)")
        parts = [self.get("s", self.slot_addr(k)) for k in range(len(self.layout.slots))]
        e.emit("return (" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")")
        return "\n".join(e.lines) + "\n"

    def pack_function(self) -> str:
        e = Emitter()
        e.lines.append("def pack(t):")
        e.emit("# a tuple of slot values (each within its slot's range) as the packed state")
        pk = self.pk
        parts = []
        for k in range(len(self.layout.slots)):
            if not pk.width[k]:
                continue
            v = f"t[{k}]" if not pk.lo[k] else f"(t[{k}] - {pk.lo[k]})"
            parts.append(f"{v} << {pk.shift[k]}" if pk.shift[k] else v)
        if len(parts) <= _PACK_TERMS:
            e.emit("return " + (" | ".join(parts) if parts else "0"))
        else:  # one expression of thousands of `|` nests too deeply for Python's compiler
            e.emit("s = " + " | ".join(parts[:_PACK_TERMS]))
            for i in range(_PACK_TERMS, len(parts), _PACK_TERMS):
                e.emit("s |= " + " | ".join(parts[i:i + _PACK_TERMS]))
            e.emit("return s")
        return "\n".join(e.lines) + "\n"

    # -- reading and writing fields
    def slot_addr(self, k: int, name: str | None = None) -> _Addr:
        pk = self.pk
        return _Addr(name or self.layout.slots[k].name, k, str(k), str(pk.shift[k]), pk.width[k], pk.lo[k])

    def get(self, src: str, a: _Addr) -> str:
        """The value of a field, as an expression."""
        if a.width == 0:
            return str(a.lo)
        if a.shift_code == "0":
            raw = f"{src} & {a.mask}"
        else:
            raw = f"{src} >> {_paren(a.shift_code)} & {a.mask}"
        if a.lo:
            return f"(({raw}) {'+' if a.lo > 0 else '-'} {abs(a.lo)})"
        return f"({raw})"

    def put(self, e: Emitter, a: _Addr, code: str, const: int | None = None):
        """Write `code` (already within the field's range) into `v`."""
        mark = 0
        if self.marks is not None:
            if a.slot is None:
                e.flush()
                e.emit(f"v |= 1 << ({self.marks} + {a.slot_code})  # lkmm: a store to this slot")
            elif self.layout.slots[a.slot].kind is SlotKind.VAR and self.layout.slots[a.slot].process is None:
                mark = 1 << (self.marks + a.slot)
        if a.width == 0:
            if mark:
                e.flush()
                e.emit(f"v |= {mark:#x}  # lkmm: a store to {_comment(a.name)}")
            return  # the value was checked to be the field's only one
        if const is not None and a.slot is not None:
            m_ = a.mask << self.pk.shift[a.slot]
            e.clear |= m_
            e.set = (e.set & ~m_) | ((const - a.lo) << self.pk.shift[a.slot]) | mark
            return
        e.flush()
        val = code if not a.lo else f"{_paren(code)} - {a.lo}" if a.lo > 0 else f"{_paren(code)} + {-a.lo}"
        if a.slot is not None:
            sh = self.pk.shift[a.slot]
            e.writes |= a.mask << sh
            e.emit(f"v = v & ~{a.mask << sh:#x} | {_paren(val)} << {sh}" + (f" | {mark:#x}" if mark else ""))
        else:
            e.writes = -1
            shift = e.fresh()
            e.emit(f"{shift} = {a.shift_code}")
            e.emit(f"v = v & ~({a.mask} << {shift}) | {_paren(val)} << {shift}")

    # -- functions
    def step_function(self, fname: str, p: ProcessIR, inst: int, st: Step) -> str:
        e = Emitter()
        self.proc, self.inst = p, inst
        e.lines.append(f"def {fname}(s):")
        where = f"{st.span.file}:{st.span.line}"
        e.emit(f"# {_comment(p.instance_name(inst))}: {_comment(where)}  {_comment(st.text)[:100]}")
        self.buffer = self.layout.buffer_of(self.layout.gid_base[p.name] + inst) if self.tso else None
        self.direct = False
        if self.buffer is not None and st.fence:
            e.emit(f"if {self.get('s', self.slot_addr(self.buffer.base))} != 0:"
                   f"  # a fence: waits until {_comment(self.buffer.name)} is empty")
            e.emit("    return None")
        if st.kind is StepKind.SCHEDULE:
            slot = self.layout.task_slot[self.layout.gid_base[p.name] + inst]
            e.emit(f"if {self.get('s', self.slot_addr(slot))} != 0:  # asleep until woken (task state INTERRUPTIBLE)")
            e.emit("    return None")
        if st.guard is not None:
            guard = self.simplify(st.guard)
            if not isinstance(guard, m.Const):
                e.emit(f"if not ({self.expr(guard, e, 's')}):")
                e.emit("    return None")
            elif not guard.value:
                e.emit("return None  # the guard never holds for this instance")
                return "\n".join(e.lines) + "\n"
        e.emit("v = s")
        # a locked `atomic` block is one LOCK-prefixed instruction: memory, not the buffer
        self.direct = st.kind is StepKind.ATOMIC and st.fence
        self.ops(st.body, e)
        self.direct = False
        self.step_writes[fname] = e.writes
        return "\n".join(e.lines) + "\n"

    def flush_function(self, fname: str, b: StoreBuffer) -> str:
        e = Emitter()
        self.proc, self.inst = None, None
        e.lines.append(f"def {fname}(s):")
        e.emit(f"# the oldest store in {_comment(b.name)} reaches memory; the others move up")
        first, value = b.entry(0)
        pk = self.pk
        e.emit(f"a = {self.get('s', self.slot_addr(first))}")
        e.emit("if a == 0:")
        e.emit("    return None")
        e.emit(f"x = {self.get('s', self.slot_addr(value))}")
        lo = pk.shift[b.base]
        end = b.base + 2 * b.capacity
        hi = pk.shift[end - 1] + pk.width[end - 1]
        entry = pk.shift[b.base + 2] - lo if b.capacity > 1 else hi - lo
        region = (1 << (hi - lo)) - 1
        if b.capacity > 1:
            e.emit(f"v = s & ~{region << lo:#x} | (s >> {lo + entry} & {region >> entry:#x}) << {lo}"
                   "  # entries 1.. move to 0..; the last becomes empty")
        else:
            e.emit(f"v = s & ~{region << lo:#x}  # the entry becomes empty")
        e.emit("k = a - 1  # the slot the store goes to")
        e.emit("return v & ~(_MASK[k] << _SHIFT[k]) | (x - _LO[k]) << _SHIFT[k]")
        return "\n".join(e.lines) + "\n"

    def final_state_function(self) -> str:
        """Every process at a valid end and every store buffer empty: where `final`
        conditions are checked (and final states counted)."""
        e = Emitter()
        e.lines.append("def final_state(s):")
        e.emit("# every process at a valid end, every store buffer empty")
        parts = []
        for p in self.program.processes:
            ends = sorted(p.end_pcs)
            for i in range(p.instances):
                pc = self.get("s", self.slot_addr(self.layout.pc_base[p.name] + i))
                if not ends:
                    parts.append("False")
                elif len(ends) == 1:
                    parts.append(f"{pc} == {ends[0]}")
                else:
                    parts.append(f"{pc} in {tuple(ends)!r}")
        parts += [f"{self.get('s', self.slot_addr(b.base))} == 0" for b in self.layout.buffers]
        if self.views is not None and not self.views.lazy:  # lkmm: every store has reached every CPU that reads it
            # (lazily, a view that nothing reads again never moves: final states are those
            # the eager moves would settle into, with the same memory and locals)
            parts += [f"{self.get('s', self.slot_addr(cpu.cur[j]))} == 0" for j, loc in enumerate(self.views.locations)
                      for cpu in self.views.cpus if cpu.gid in loc.readers]
        e.emit("return " + " and ".join(parts))
        return "\n".join(e.lines) + "\n"

    def cond_then_flush(self, cond: m.TExpr, e: Emitter) -> str:
        """A branch condition as code, with what evaluating it stored (xchg, cmpxchg, ...)
        written to `v` before the branch: a constant store is otherwise kept pending and
        flushed by the first statement of one branch only, and lost on the other."""
        code = self.expr(cond, e, "v")
        if e.clear:
            e.emit(f"_cond = {code}")
            e.flush()
            code = "_cond"
        return code

    def predicate(self, fname: str, cond: m.TExpr, what: str) -> str:
        e = Emitter()
        self.proc, self.inst = None, None
        self.buffer, self.direct = None, False  # properties read memory, as other CPUs would
        self.spans[fname] = cond.span
        e.lines.append(f"def {fname}(s):")
        e.emit(f"# {_comment(what)}")
        e.emit(f"return {self.expr(self.simplify(cond), e, 's')}")
        return "\n".join(e.lines) + "\n"

    # -- constant folding (per instance: `self` is known; fold.py)
    def simplify(self, x: m.TExpr) -> m.TExpr:
        return simplify(x, self.inst)

    # -- operations
    def ops(self, ops: tuple[Op, ...] | list[Op], e: Emitter):
        for op in ops:
            self.op(op, e)
        e.flush()

    def op(self, op: Op, e: Emitter):
        if isinstance(op, OGoto):
            assert self.proc is not None and self.inst is not None  # a step's operation
            pc = self.layout.pc_base[self.proc.name] + self.inst
            self.put(e, self.slot_addr(pc), str(op.pc), const=op.pc)
            e.emit(f"return {e.pending()}  # -> {_comment(self.proc.pc_names[op.pc])}")
        elif isinstance(op, OAssign):
            value = self.simplify(op.value)
            target = self.simplify(op.target)
            # constant writes to fixed fields wait in the emitter, to be merged; anything
            # that reads `v` (the value, or the index of `a[i] = 5`) must see them first
            if not isinstance(value, m.Const) or (isinstance(target, m.Elem) and
                                                  not isinstance(target.index, (m.Const, m.SelfE))):
                e.flush()
            self.store(target, value, e)
        elif isinstance(op, OEval):
            e.flush()
            call = self.simplify(op.call)
            assert isinstance(call, m.Builtin)  # folding keeps a call a call
            code = self.builtin(call, e, "v")
            if code not in ("None", ""):
                e.emit(code)
        elif isinstance(op, OIf):
            e.flush()
            cond = self.simplify(op.cond)
            if isinstance(cond, m.Const):  # decided for this instance: only that branch
                self.ops(op.then if cond.value else op.orelse, e)
                return
            e.emit(f"if {self.cond_then_flush(cond, e)}:")
            e.depth += 1
            before = len(e.lines)
            self.ops(op.then, e)
            if len(e.lines) == before:  # nothing to do (a write of a one-value field emits no code)
                e.emit("pass")
            e.depth -= 1
            if op.orelse:
                e.emit("else:")
                e.depth += 1
                before = len(e.lines)
                self.ops(op.orelse, e)
                if len(e.lines) == before:
                    e.emit("pass")
                e.depth -= 1
        elif isinstance(op, OWhile):
            # a loop inside one step: the state is all it depends on (loads read the state,
            # nothing else is chosen), so a state seen before at its head means it never ends
            e.flush()
            seen, span = e.fresh(), op.cond.span
            e.emit(f"{seen} = set()  # the states at the loop's head")
            e.emit("while True:")
            e.depth += 1
            e.emit(f"if v in {seen} or len({seen}) >= {MAX_STEP_LOOP}:")
            e.emit(f"    _step_loop_error(v in {seen}, {span.line}, {span.col})")
            e.emit(f"{seen}.add(v)")
            c = self.cond_then_flush(self.simplify(op.cond), e)
            e.emit(f"if not ({c}):")
            e.emit("    break")
            self.ops(op.body, e)
            e.depth -= 1
        elif isinstance(op, OBreak):
            e.flush()
            e.emit("break")
        elif isinstance(op, OContinue):
            e.flush()
            e.emit("continue")
        elif isinstance(op, OInline):
            e.flush()
            e.emit(f"for _once in range(1):  # inline {_comment(op.name)}")
            e.depth += 1
            self.ops(op.body, e)
            e.emit("pass")
            e.depth -= 1
        elif isinstance(op, OReturn):
            e.flush()
            e.emit("break  # return")
        elif isinstance(op, OAssert):
            e.flush()
            cond = self.simplify(op.cond)
            if isinstance(cond, m.Const):
                if not cond.value:
                    e.emit(f"_assert_failed({op.property!r})  # fails for this instance whenever it runs")
                return
            e.emit(f"if not ({self.cond_then_flush(cond, e)}):")
            e.emit(f"    _assert_failed({op.property!r})")
        elif isinstance(op, OBarrier):
            e.emit(f"pass  # {op.name}()")
        else:
            raise TypeError(op)

    def store(self, target: m.TExpr, value: m.TExpr, e: Emitter):
        """target = value (an expression already simplified)."""
        code = self.expr(value, e, "v")
        self.store_code(target, code, value, e)

    def store_code(self, target: m.TExpr, code: str, value: m.TExpr | None, e: Emitter):
        a = self.address(target, e, "v")
        t = target.type
        const = value.value if isinstance(value, m.Const) else None
        needs = store_needs(t, value)
        if needs.to_bool:
            code = f"(1 if {code} else 0)"
            if const is not None:
                const = 1 if const else 0
                code = str(const)
        if needs.wrap:  # C conversion: modulo 2**width (a narrower signed value sign-extended)
            assert isinstance(t, m.BitVecT)  # only a C integer wraps
            src = value.type if value is not None else None
            if const is not None and src is not None:  # (a constant is a known value)
                const = m.bv_convert(const, src, t)
                code = str(const)
            elif isinstance(src, m.BitVecT) and src.signed and src.width < t.width:
                code = f"((({code}) ^ {hex(src.half)}) - {hex(src.half)}) & {hex(t.mask)}"
            else:
                code = f"({code}) & {hex(t.mask)}"
        check = needs.check
        if check:
            e.flush()
            tmp = e.fresh()
            e.emit(f"{tmp} = {code}")
            e.emit(f"if {tmp} < {check[0]} or {tmp} > {check[1]}:")
            e.emit(f"    _range_error({a.name!r}, {tmp}, {check[0]}, {check[1]})")
            code, const = tmp, None
        buf = self.buffered(target)
        if buf is None:
            self.put(e, a, code, const)
            return
        e.flush()
        if not (code.isidentifier() or code.lstrip("-").isdigit()):
            tmp = e.fresh()
            e.emit(f"{tmp} = {code}")
            code = tmp
        addr = str(a.slot + 1) if a.slot is not None else f"{a.slot_code} + 1"
        e.emit(f"# {_comment(a.name)} goes into {_comment(buf.name)}; memory keeps the old value until a flush")
        for k in range(buf.capacity):
            at, val = buf.entry(k)
            e.emit(f"{'if' if k == 0 else 'elif'} {self.get('v', self.slot_addr(at))} == 0:")
            e.depth += 1
            self.put(e, self.slot_addr(at), addr)
            self.put(e, self.slot_addr(val), code)
            e.depth -= 1
        e.emit("else:")
        e.emit(f"    _store_buffer_full()  # all {buf.capacity} entries in use: wait for a flush")

    def buffered(self, target: m.TExpr) -> StoreBuffer | None:
        """The store buffer a plain access to `target` goes through, if any (tso); an
        atomic step's accesses (`direct`) go to memory."""
        return self.buffer if self.buffer is not None and not self.direct and self.buffer.holds(target) else None

    def load(self, x: m.Var | m.Elem, a: _Addr, e: Emitter, src: str) -> str:
        """A load: the newest entry of this CPU's buffer for that address, else memory."""
        buf = self.buffered(x)
        code = self.get(src, a)
        if buf is None:
            return code
        e.emit(f"# {_comment(self.var_name(x.sym))} is read through {_comment(buf.name)}: "
               "its newest store there, else memory")
        # one expression, no temporaries: a load may sit inside a quantifier's generator
        addr = str(a.slot + 1) if a.slot is not None else f"({a.slot_code} + 1)"
        for k in range(buf.capacity):  # oldest first, so that the newest ends up outermost
            at, val = buf.entry(k)
            code = f"{self.get(src, self.slot_addr(val))} if {self.get(src, self.slot_addr(at))} == {addr} else {code}"
        return f"({code})"

    def address(self, target: m.TExpr, e: Emitter, src: str, inline: bool = False) -> _Addr:
        """The field of a variable or array element; bounds-checked when the index is
        computed (or folded to a constant out of range: that fails when the step runs).

        `inline` gives a single expression (no temporaries): reads may sit inside a
        quantifier's generator, where a hoisted temporary would not see its variable."""
        if isinstance(target, m.Var):
            return self.slot_addr(self.layout.slot_of(target.sym, self.inst), self.var_name(target.sym))
        assert isinstance(target, m.Elem)
        t = target.sym.type
        assert isinstance(t, m.ArrayT)
        base = self.layout.slot_of(target.sym, self.inst)
        name = self.var_name(target.sym)
        idx = target.index
        if isinstance(idx, m.SelfE) and self.inst is not None:
            idx = m.Const(idx.span, idx.type, self.inst)
        if isinstance(idx, m.Const):
            if t.lo <= idx.value <= t.hi:
                return self.slot_addr(base + idx.value - t.lo, f"{name}[{idx.value}]")
            code = f"_index_error({name!r}, {idx.value}, {t.lo}, {t.hi})"  # raises when it runs
        else:
            code = self.expr(idx, e, src)
        pk = self.pk
        w = pk.width[base]
        first = pk.shift[base] - w * t.lo  # the shift of element 0, were there one
        checked = code
        if not isinstance(idx, m.Const) and not (isinstance(idx.type, m.IntT) and idx.type.lo is not None
                                                 and idx.type.hi is not None
                                                 and t.lo <= idx.type.lo and idx.type.hi <= t.hi):
            if inline:
                checked = f"_ix({code}, {t.lo}, {t.hi}, {name!r})"
            else:
                tmp = e.fresh()
                e.emit(f"{tmp} = {code}")
                e.emit(f"if {tmp} < {t.lo} or {tmp} > {t.hi}:")
                e.emit(f"    _index_error({name!r}, {tmp}, {t.lo}, {t.hi})")
                checked = tmp
        elif not inline and not checked.isidentifier() and not isinstance(idx, m.Const):
            tmp = e.fresh()
            e.emit(f"{tmp} = {code}")
            checked = tmp
        off = base - t.lo
        slot_code = f"{off} + {_paren(checked)}" if off else checked
        scaled = _paren(checked) if w == 1 else f"{w} * {_paren(checked)}"
        shift_code = f"{first} + {scaled}" if first else scaled
        return _Addr(f"{name}[...]", None, slot_code, shift_code, w, pk.lo[base])

    def var_name(self, sym: m.VarSym) -> str:
        if sym.scope is m.Scope.LOCAL and self.proc is not None and self.inst is not None:
            return f"{self.proc.instance_name(self.inst)}.{sym.name}"
        return sym.name

    # -- expressions
    def expr(self, x: m.TExpr, e: Emitter, src: str) -> str:
        if isinstance(x, m.Const):
            return str(int(x.value))
        if isinstance(x, (m.Var, m.Elem)):
            if isinstance(x, m.Var) and x.sym.scope is m.Scope.LOCAL and self.inst is None:
                raise TypeError("a process-local variable outside its process")
            return self.load(x, self.address(x, e, src, inline=True), e, src)
        if isinstance(x, m.LocalOf):
            return self.local_of(x, e, src)
        if isinstance(x, m.SelfE):
            return str(self.inst)
        if isinstance(x, m.Bound):
            return self.bound[x.uid]
        if isinstance(x, m.Conv):
            a = self.expr(x.operand, e, src)
            from_t = x.operand.type
            if not isinstance(x.type, m.BitVecT):  # a signed pattern's value
                assert isinstance(from_t, m.BitVecT)
                h = hex(from_t.half)
                return f"(({a} ^ {h}) - {h})"
            if fits_bv(x.operand, x.type):
                return a
            if isinstance(from_t, m.BitVecT) and from_t.signed:  # sign-extend the narrower pattern
                return f"((({a} ^ {hex(from_t.half)}) - {hex(from_t.half)}) & {hex(x.type.mask)})"
            return f"({a} & {hex(x.type.mask)})"
        if isinstance(x, m.Un):
            a = self.expr(x.operand, e, src)
            if isinstance(x.type, m.BitVecT):
                return f"((-{a}) & {hex(x.type.mask)})" if x.op == "-" else f"({a} ^ {hex(x.type.mask)})"
            return {"!": f"(not {a})", "-": f"(-{a})", "~": f"(~{a})"}[x.op]
        if isinstance(x, m.Bin):
            a = self.expr(x.left, e, src)
            b = self.expr(x.right, e, src)
            if isinstance(x.type, m.BitVecT):  # unsigned: operands are already converted
                w, mask = x.type.width, hex(x.type.mask)
                if x.op in ("+", "-", "*"):
                    return f"(({a} {x.op} {b}) & {mask})"
                if x.op in ("&", "|", "^"):
                    return f"({a} {x.op} {b})"
                if x.type.signed and x.op in ("/", "%", ">>"):
                    return f"_bv({x.op!r}, {a}, {b}, {w}, True)"
                return f"_bv({x.op!r}, {a}, {b}, {w})"
            lt = x.left.type
            if x.op in ("<", "<=", ">", ">=") and isinstance(lt, m.BitVecT) and lt.signed:
                # two's complement order is the unsigned order of the patterns with the sign bit flipped
                return f"(({a} ^ {hex(lt.half)}) {x.op} ({b} ^ {hex(lt.half)}))"
            return _PY_BINOP.get(x.op, "({a} " + x.op + " {b})").format(a=a, b=b)
        if isinstance(x, m.Ite):
            c = self.expr(x.cond, e, src)
            return f"({self.expr(x.then, e, src)} if {c} else {self.expr(x.orelse, e, src)})"
        if isinstance(x, m.At):
            proc = next(p for p in self.program.processes if p.name == x.process)
            pcs = sorted(proc.label_pcs.get(x.label, ()))
            base = self.layout.pc_base[x.process]
            if x.index is None:
                pc = self.get(src, self.slot_addr(base))
            elif isinstance(x.index, m.Const) and 0 <= x.index.value < proc.instances:
                pc = self.get(src, self.slot_addr(base + x.index.value))
            else:
                i = self.expr(x.index, e, src)
                it = x.index.type
                if isinstance(x.index, m.Const) or not (
                        isinstance(it, m.IntT) and it.lo is not None and it.hi is not None
                        and 0 <= it.lo and it.hi < proc.instances):
                    i = f"_ix({i}, 0, {proc.instances - 1}, {x.process!r})"
                w = self.pk.width[base]
                scaled = f"{_paren(i)}" if w == 1 else f"{w} * {_paren(i)}"
                sh = self.pk.shift[base]
                pc = self.get(src, _Addr(x.process, None, "", f"{sh} + {scaled}" if sh else scaled, w, 0))
            if not pcs:
                return "False"
            if len(pcs) == 1:
                return f"({pc} == {pcs[0]})"
            return f"({pc} in {tuple(pcs)!r})"
        if isinstance(x, m.Quant):
            var = f"_q{x.bound.uid}"
            self.bound[x.bound.uid] = var
            body = self.expr(x.body, e, src)
            fn = "any" if x.kind == "exists" else "all"
            return f"{fn}({body} for {var} in range({x.lo}, {x.hi + 1}))"
        if isinstance(x, m.Builtin):
            return self.builtin(x, e, src)
        raise TypeError(x)

    def local_of(self, x: m.LocalOf, e: Emitter, src: str) -> str:
        """`p.r` / `p[i].r` in a property: instances lay their locals out alike, so the
        field of instance i is the field of instance 0 plus i strides."""
        proc = next(p for p in self.program.processes if p.name == x.process)
        base = self.layout.slot_of(x.sym, 0)
        if x.index is None:
            return self.get(src, self.slot_addr(base))
        if isinstance(x.index, m.Const) and 0 <= x.index.value < proc.instances:
            return self.get(src, self.slot_addr(self.layout.slot_of(x.sym, x.index.value)))
        pk = self.pk
        stride = pk.shift[self.layout.slot_of(x.sym, 1)] - pk.shift[base] if proc.instances > 1 else 0
        i = self.expr(x.index, e, src)
        t = x.index.type
        if isinstance(x.index, m.Const) or not (isinstance(t, m.IntT) and t.lo is not None and t.hi is not None
                                                and 0 <= t.lo and t.hi < proc.instances):
            i = f"_ix({i}, 0, {proc.instances - 1}, {x.process!r})"
        sh = f"{pk.shift[base]} + {stride} * {_paren(i)}" if pk.shift[base] else f"{stride} * {_paren(i)}"
        return self.get(src, _Addr(x.sym.name, None, "", sh, pk.width[base], pk.lo[base]))

    def builtin(self, c: m.Builtin, e: Emitter, src: str) -> str:
        """Emit the side effects of a kernel primitive; return the code of its value
        (semantics/lower.py decides what is read, checked and written)."""
        return _Spelled(self, e, src).builtin(c) or ""  # "": no value


class _Spelled(EmittedSpelling[_Addr, Emitter]):
    """The core operations as specialised Python: fields of the packed state `v`."""

    owner: Compiler

    def assign(self, tmp: str, code: str) -> None:
        self.e.flush()  # `code` may read what was just stored
        self.e.emit(f"{tmp} = {code}")

    def paren(self, code: str) -> str:
        return _paren(code)

    def place(self, loc: m.TExpr) -> _Addr:
        return self.owner.address(loc, self.e, self.src)

    def task(self, gid: int) -> _Addr:
        return self.owner.slot_addr(self.owner.layout.task_slot[gid])

    def read(self, place: _Addr) -> str:
        return self.owner.get("v", place)

    def write(self, place: _Addr, code: str, const: int | None = None) -> None:
        self.owner.put(self.e, place, code, const)
        self.e.flush()  # later code reads `v`

    def note(self, text: str) -> None:
        self.e.emit(f"# {_comment(text)}")

    def first(self, cases: list[tuple[str, str | None, Callable[[], None]]]) -> None:
        e = self.e
        for i, (cond, note, body) in enumerate(cases):
            e.emit(f"{'elif' if i else 'if'} {cond}:" + (f"  # {_comment(note)}" if note else ""))
            e.depth += 1
            body()
            e.flush()
            e.depth -= 1

    def bit_in_set(self, nr: str, bits: m.TExpr) -> str:
        t = bits.type
        assert isinstance(t, m.BitsetT) and isinstance(bits, (m.Var, m.Elem))  # a bitset variable
        return f"_ix({nr}, 0, {t.size - 1}, {self.owner.var_name(bits.sym) + ' bit'!r})"

    def check_bit(self, nr: str, place: _Addr, size: int) -> None:
        self.e.emit(f"if {nr} < 0 or {nr} >= {size}:")
        self.e.emit(f"    _index_error({place.name!r} + ' bit', {nr}, 0, {size - 1})")

    def fits(self, t: m.BitVecT, span: Span) -> None:
        pass  # Python's ints hold every width

    def wrap(self, code: str, t: m.BitVecT) -> str:
        return f"({code}) & {hex(t.mask)}"

    def min_max(self, a: str, b: str, is_min: bool, signed: m.BitVecT | None) -> str:
        fn = (min if is_min else max).__name__  # Python's own, in _RUNTIME
        if signed is not None:  # the patterns in two's complement order
            return f"{fn}({a}, {b}, key=lambda _v: _v ^ {hex(signed.half)})"
        return f"{fn}({a}, {b})"

    def abs(self, x: str, signed: m.BitVecT | None) -> str:
        if signed is not None:
            return f"((-{x} & {hex(signed.mask)}) if {x} & {hex(signed.half)} else {x})"
        return f"(-{x} if {x} < 0 else {x})"


def _checked_pack(pack: Callable, pk: Packing, layout) -> Callable:
    """`pack` for states that come from outside the engine (replay, a solver): a value
    out of its slot's range is a ModelError, not a silently corrupted state."""
    bounds = tuple(zip(pk.lo, pk.hi))

    def checked(t) -> int:
        if len(t) != len(bounds):
            raise ModelError(f"a state has {len(t)} values; this model's states have {len(bounds)}")
        for k, (x, (lo, hi)) in enumerate(zip(t, bounds)):
            if not lo <= x <= hi:
                raise ModelError(f"value {x} is outside the range of {layout.slots[k].name} ({lo}..{hi})")
        return pack(t)

    return checked


def _on_tuples(packed: Callable, pack: Callable, unpack: Callable) -> Callable:
    """A packed step as the tuple-based callers run it: state tuple -> list or None."""

    def step(s):
        r = packed(pack(s))
        return None if r is None else list(unpack(r))

    step.__name__ = packed.__name__
    return step


def _quiescent(at_ends: Callable, instances, pk: Packing) -> Callable:
    """Where `final` conditions are checked: every process at a valid end, every buffer
    empty (`at_ends`, the generated `final_state`), and no step enabled, as SPIN's
    `timeout`: a process resting at an `end` label that can still move is not done.
    A `stutter` step does not count: it changes nothing. A step that would fail an
    assertion or raise a model error counts as enabled (the search reports it)."""
    tables = [(pk.shift[inst.pc_slot], pk.mask(inst.pc_slot),
               tuple(tuple(cs.packed for cs in at if cs.step.kind is not StepKind.STUTTER) for at in inst.steps_at))
              for inst in instances]

    def final_state(s) -> bool:
        if not at_ends(s):
            return False
        for shift, mask, table in tables:
            for fn in table[s >> shift & mask]:
                try:
                    if fn(s) is not None:
                        return False
                except StoreBufferFull:
                    continue
                except (AssertionViolation, ModelError):
                    return False
        return True

    return final_state


def _pred_on_tuples(packed: Callable, pack: Callable) -> Callable:
    def holds(s) -> bool:
        return bool(packed(pack(s)))

    holds.__name__ = packed.__name__
    return holds
