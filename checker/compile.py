"""IR -> compiled steps: one generated Python function per step and process instance.

The generated module is plain, printable Python (`check --dump-python`). Nothing from
the spec's text reaches it except through a safe mapping: variables become slot
numbers, constants become integer literals, and source text appears only in comments
after being reduced to printable characters on one line. The module runs with no
builtins but the handful it needs.

A step function takes a state tuple `s` and returns the successor state as a list, or
None when the step is not enabled. It raises `AssertionViolation` when an `assert` fails
and `ModelError` when the model itself goes wrong (a value out of its range, an index
out of bounds, a division by zero).

Under x86-TSO (`memory tso`) a plain store to a shared variable appends (address, value)
to its CPU's store buffer instead of writing memory; a load of a variable the CPU may
have buffered reads the newest matching entry, else memory; a fence step (see
`ir.is_fence`) starts with "return None unless my buffer is empty", and the locked
operations in it act on memory directly. One more function per buffer, `<cpu>_flush`,
moves the oldest entry to memory. A store that finds its buffer full raises
`StoreBufferFull`: the engine treats the step as disabled until a flush makes room, and
counts the states where that happened, because the verdicts then hold only for buffers
of that size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import model as m
from .ir import (OAssert, OAssign, OBarrier, OBreak, OContinue, OEval, OGoto, OIf, OInline, OReturn,
                 OWhile, Op, Program, ProcessIR, Step, StepKind, StoreBuffer)


class ModelError(Exception):
    """The model went wrong while running a step (not a property violation)."""


class AssertionViolation(Exception):
    def __init__(self, prop: str):
        super().__init__(prop)
        self.property = prop


class StoreBufferFull(Exception):
    """A plain store found its CPU's store buffer full (tso): the step waits for a flush."""


@dataclass(frozen=True, slots=True)
class CompiledStep:
    fn: Callable
    step: Step
    instance: int
    gid: int
    name: str  # the generated function's name


@dataclass(frozen=True, slots=True)
class CompiledInstance:
    """One running process: its pc slot and, by pc, the steps it can take."""

    name: str
    gid: int
    process: ProcessIR
    instance: int
    pc_slot: int
    steps_at: tuple[tuple[CompiledStep, ...], ...]
    end_pcs: frozenset[int]


@dataclass(frozen=True, slots=True)
class CompiledFlush:
    """The step that makes the oldest store of one CPU's buffer visible in memory.

    `steps_at` is indexed by the buffer's first address slot (`slot`), like a process's
    steps are indexed by its pc: empty at address 0 (nothing buffered), the flush
    otherwise. An engine walks both tables the same way."""

    fn: Callable
    buffer: StoreBuffer
    name: str
    slot: int
    gid: int  # an actor of its own, numbered after the process instances: the memory
    # system drains every buffer eventually, whatever its CPU does (fairness sees that)
    steps_at: tuple[tuple["CompiledFlush", ...], ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class CompiledPredicate:
    property: m.Property
    fn: Callable  # state -> bool
    name: str


@dataclass(frozen=True, slots=True)
class CompiledModel:
    program: Program
    instances: tuple[CompiledInstance, ...]
    invariants: tuple[CompiledPredicate, ...]
    liveness: tuple[tuple[m.Property, Callable | None, Callable], ...]
    source: str  # the generated Python
    namespace: dict = field(repr=False, default_factory=dict)
    flushes: tuple[CompiledFlush, ...] = ()  # tso: one per store buffer
    finals: tuple[CompiledPredicate, ...] = ()  # `final` conditions
    final_state: Callable | None = None  # state -> every process at a valid end, buffers empty

    @property
    def layout(self):
        return self.program.layout


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
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


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


def _assert_failed(prop: str):
    raise AssertionViolation(prop)


def _store_buffer_full():
    raise StoreBufferFull()


_RUNTIME = {
    "__builtins__": {"min": min, "max": max, "any": any, "all": all, "range": range,
                     "list": list, "len": len, "bool": bool},
    "_range_error": _range_error, "_index_error": _index_error, "_ix": _ix, "_div": _div, "_mod": _mod,
    "_shl": _shl, "_shr": _shr, "_assert_failed": _assert_failed, "_store_buffer_full": _store_buffer_full,
}


def compile_program(program: Program) -> CompiledModel:
    return _Compiler(program).run()


def _comment(text: str) -> str:
    """Source text made safe for a one-line Python comment."""
    return "".join(ch for ch in " ".join(text.split()) if ch.isprintable() and ch.isascii())


def _ident(text: str) -> str:
    """A spec name reduced to a safe Python identifier fragment (names are already [A-Za-z0-9_])."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in text)


class _Emitter:
    """Lines of one generated function, with fresh temporaries."""

    def __init__(self):
        self.lines: list[str] = []
        self.depth = 1
        self.tmp = 0

    def emit(self, line: str):
        self.lines.append("    " * self.depth + line)

    def fresh(self) -> str:
        self.tmp += 1
        return f"_t{self.tmp}"


class _Compiler:
    def __init__(self, program: Program):
        self.program = program
        self.layout = program.layout
        self.names: list[str] = []
        self.src: list[str] = []
        self.bound: dict[int, str] = {}
        self.tso = program.model.memory == "tso"
        self.buffer: StoreBuffer | None = None  # the store buffer of the CPU being compiled
        self.direct = False  # inside a locked operation: loads and stores use memory

    def run(self) -> CompiledModel:
        model = self.program.model
        self.src.append(f"# Generated by timerace from {_comment(model.file)}, variant {_comment(model.variant)}.")
        self.src.append("# State: " + ", ".join(f"s[{i}] {_comment(sl.name)}" for i, sl in enumerate(self.layout.slots)))
        if self.tso:
            self.src.append(f"# Memory model x86-TSO: each store buffer holds at most {model.store_buffer} stores;"
                            " an entry is (address = slot + 1, value), address 0 = empty.")
            for b in self.layout.buffers:
                names = ", ".join(sorted(_comment(v.name) for v in b.locations))
                self.src.append(f"#   {_comment(b.name)}: s[{b.base}..{b.base + 2 * b.capacity - 1}], buffers {names}")
        self.src.append("")
        plan: list[tuple[ProcessIR, int, Step, str]] = []
        for p in self.program.processes:
            for i in range(p.instances):
                for st in p.steps:
                    fname = f"{_ident(p.name)}{i if p.count is not None else ''}_step{st.uid}"
                    self.src.append(self.step_function(fname, p, i, st))
                    plan.append((p, i, st, fname))
        flush_names: list[tuple[StoreBuffer, str]] = []
        for b in self.layout.buffers:
            fname = f"{_ident(b.cpu.replace('[', '').replace(']', ''))}_flush"
            self.src.append(self.flush_function(fname, b))
            flush_names.append((b, fname))
        inv_names: list[tuple[m.Property, str]] = []
        final_names: list[tuple[m.Property, str]] = []
        live_names: list[tuple[m.Property, str | None, str]] = []
        for k, prop in enumerate(self.program.properties):
            if prop.kind is m.PropertyKind.INVARIANT:
                fname = f"invariant_{k}_{_ident(prop.name)}"
                self.src.append(self.predicate(fname, prop.cond, f"invariant {prop.name}"))
                inv_names.append((prop, fname))
            elif prop.kind is m.PropertyKind.FINAL:
                fname = f"final_{k}_{_ident(prop.name)}"
                self.src.append(self.predicate(fname, prop.cond, f"final {prop.name} (checked in final states)"))
                final_names.append((prop, fname))
            elif prop.kind is m.PropertyKind.LIVENESS:
                trig = None
                if prop.trigger is not None:
                    trig = f"trigger_{k}_{_ident(prop.name)}"
                    self.src.append(self.predicate(trig, prop.trigger, f"property {prop.name}: condition"))
                goal = f"goal_{k}_{_ident(prop.name)}"
                self.src.append(self.predicate(goal, prop.goal, f"property {prop.name}: goal"))
                live_names.append((prop, trig, goal))
        if final_names:
            self.src.append(self.final_state_function())
        source = "\n".join(self.src) + "\n"
        ns = dict(_RUNTIME)
        exec(compile(source, f"<timerace {model.name}.{model.variant}>", "exec"), ns)  # noqa: S102
        instances = []
        gid = 0
        by_instance: dict[tuple[str, int], dict[int, CompiledStep]] = {}
        for p, i, st, fname in plan:
            g = self.layout.gid_base[p.name] + i
            by_instance.setdefault((p.name, i), {})[st.uid] = CompiledStep(ns[fname], st, i, g, fname)
        for p in self.program.processes:
            for i in range(p.instances):
                table = by_instance.get((p.name, i), {})
                steps_at = tuple(tuple(table[st.uid] for st in at) for at in p.steps_at)
                instances.append(CompiledInstance(p.instance_name(i), self.layout.gid_base[p.name] + i, p, i,
                                                  self.layout.pc_base[p.name] + i, steps_at, p.end_pcs))
                gid += 1
        invariants = tuple(CompiledPredicate(prop, ns[f], f) for prop, f in inv_names)
        liveness = tuple((prop, ns[t] if t else None, ns[g]) for prop, t, g in live_names)
        flushes = []
        for k, (b, fname) in enumerate(flush_names):
            cf = CompiledFlush(ns[fname], b, fname, b.base, len(self.layout.instance_names) + k)
            addresses = self.layout.slots[b.base].type.hi
            object.__setattr__(cf, "steps_at", ((),) + ((cf,),) * addresses)
            flushes.append(cf)
        finals = tuple(CompiledPredicate(prop, ns[f], f) for prop, f in final_names)
        return CompiledModel(self.program, tuple(instances), invariants, liveness, source, ns,
                             tuple(flushes), finals, ns["final_state"] if finals else None)

    # -- functions
    def step_function(self, fname: str, p: ProcessIR, inst: int, st: Step) -> str:
        e = _Emitter()
        self.proc, self.inst = p, inst
        e.lines.append(f"def {fname}(s):")
        where = f"{st.span.file}:{st.span.line}"
        e.emit(f"# {_comment(p.instance_name(inst))}: {_comment(where)}  {_comment(st.text)[:100]}")
        self.buffer = self.layout.buffer_of(self.layout.gid_base[p.name] + inst) if self.tso else None
        self.direct = False
        if self.buffer is not None and st.fence:
            e.emit(f"if s[{self.buffer.base}] != 0:  # a fence: waits until {_comment(self.buffer.name)} is empty")
            e.emit("    return None")
        if st.kind is StepKind.SCHEDULE:
            slot = self.layout.task_slot[self.layout.gid_base[p.name] + inst]
            e.emit(f"if s[{slot}] != 0:  # asleep until woken (task state INTERRUPTIBLE)")
            e.emit("    return None")
        if st.guard is not None:
            g = self.expr(st.guard, e, "s")
            e.emit(f"if not ({g}):")
            e.emit("    return None")
        e.emit("v = list(s)")
        # a locked `atomic` block is one LOCK-prefixed instruction: memory, not the buffer
        self.direct = st.kind is StepKind.ATOMIC and st.fence
        self.ops(st.body, e)
        self.direct = False
        return "\n".join(e.lines) + "\n"

    def flush_function(self, fname: str, b: StoreBuffer) -> str:
        e = _Emitter()
        e.lines.append(f"def {fname}(s):")
        e.emit(f"# the oldest store in {_comment(b.name)} reaches memory; the others move up")
        first, value = b.entry(0)
        e.emit(f"a = s[{first}]")
        e.emit("if a == 0:")
        e.emit("    return None")
        e.emit("v = list(s)")
        e.emit(f"v[a - 1] = s[{value}]")
        end = b.base + 2 * b.capacity
        if b.capacity > 1:
            e.emit(f"v[{b.base}:{end}] = s[{b.base + 2}:{end}] + (0, 0)")
        else:
            e.emit(f"v[{b.base}:{end}] = (0, 0)")
        e.emit("return v")
        return "\n".join(e.lines) + "\n"

    def final_state_function(self) -> str:
        """Every process at a valid end and every store buffer empty: where `final`
        conditions are checked (and final states counted)."""
        e = _Emitter()
        e.lines.append("def final_state(s):")
        e.emit("# every process at a valid end, every store buffer empty")
        parts = []
        for p in self.program.processes:
            ends = sorted(p.end_pcs)
            for i in range(p.instances):
                slot = self.layout.pc_base[p.name] + i
                if not ends:
                    parts.append("False")
                elif len(ends) == 1:
                    parts.append(f"s[{slot}] == {ends[0]}")
                else:
                    parts.append(f"s[{slot}] in {tuple(ends)!r}")
        parts += [f"s[{b.base}] == 0" for b in self.layout.buffers]
        e.emit("return " + " and ".join(parts))
        return "\n".join(e.lines) + "\n"

    def predicate(self, fname: str, cond: m.TExpr, what: str) -> str:
        e = _Emitter()
        self.proc, self.inst = None, None
        self.buffer, self.direct = None, False  # properties read memory, as other CPUs would
        e.lines.append(f"def {fname}(s):")
        e.emit(f"# {_comment(what)}")
        e.emit(f"return bool({self.expr(cond, e, 's')})")
        return "\n".join(e.lines) + "\n"

    # -- operations
    def ops(self, ops: tuple[Op, ...] | list[Op], e: _Emitter):
        for op in ops:
            self.op(op, e)

    def op(self, op: Op, e: _Emitter):
        if isinstance(op, OGoto):
            e.emit(f"v[{self.layout.pc_base[self.proc.name] + self.inst}] = {op.pc}  # -> {_comment(self.proc.pc_names[op.pc])}")
            e.emit("return v")
        elif isinstance(op, OAssign):
            self.store(op.target, self.expr(op.value, e, "v"), op.value, e)
        elif isinstance(op, OEval):
            code = self.builtin(op.call, e, "v")
            if code not in ("None", ""):
                e.emit(code)
        elif isinstance(op, OIf):
            c = self.expr(op.cond, e, "v")
            e.emit(f"if {c}:")
            e.depth += 1
            self.ops(op.then, e)
            if not op.then:
                e.emit("pass")
            e.depth -= 1
            if op.orelse:
                e.emit("else:")
                e.depth += 1
                self.ops(op.orelse, e)
                e.depth -= 1
        elif isinstance(op, OWhile):
            e.emit("while True:")
            e.depth += 1
            c = self.expr(op.cond, e, "v")
            e.emit(f"if not ({c}):")
            e.emit("    break")
            self.ops(op.body, e)
            e.depth -= 1
        elif isinstance(op, OBreak):
            e.emit("break")
        elif isinstance(op, OContinue):
            e.emit("continue")
        elif isinstance(op, OInline):
            e.emit(f"for _once in range(1):  # inline {_comment(op.name)}")
            e.depth += 1
            self.ops(op.body, e)
            e.emit("pass")
            e.depth -= 1
        elif isinstance(op, OReturn):
            e.emit("break  # return")
        elif isinstance(op, OAssert):
            c = self.expr(op.cond, e, "v")
            e.emit(f"if not ({c}):")
            e.emit(f"    _assert_failed({op.property!r})")
        elif isinstance(op, OBarrier):
            e.emit(f"pass  # {op.name}()")
        else:
            raise TypeError(op)

    def store(self, target: m.TExpr, code: str, value: m.TExpr | None, e: _Emitter):
        slot, name, lo_hi = self.address(target, e, "v")
        t = target.type
        if isinstance(t, m.BoolT) and not _is_01(value):
            code = f"(1 if {code} else 0)"
        check = None
        if isinstance(t, m.IntT) and t.lo is not None and not _fits(value, t):
            check = (t.lo, t.hi)
        elif isinstance(t, m.BitsetT) and not (value is not None and value.type == t):
            check = (0, (1 << t.size) - 1)
        if check:
            tmp = e.fresh()
            e.emit(f"{tmp} = {code}")
            e.emit(f"if {tmp} < {check[0]} or {tmp} > {check[1]}:")
            e.emit(f"    _range_error({name!r}, {tmp}, {check[0]}, {check[1]})")
            code = tmp
        buf = self.buffered(target)
        if buf is None:
            e.emit(f"v[{slot}] = {code}")
            return
        if not (code.isidentifier() or code.lstrip("-").isdigit()):
            tmp = e.fresh()
            e.emit(f"{tmp} = {code}")
            code = tmp
        addr = str(int(slot) + 1) if slot.isdigit() else f"{slot} + 1"
        e.emit(f"# {_comment(name)} goes into {_comment(buf.name)}; memory keeps the old value until a flush")
        for k in range(buf.capacity):
            a, val = buf.entry(k)
            e.emit(f"{'if' if k == 0 else 'elif'} v[{a}] == 0:")
            e.emit(f"    v[{a}], v[{val}] = {addr}, {code}")
        e.emit("else:")
        e.emit(f"    _store_buffer_full()  # all {buf.capacity} entries in use: wait for a flush")

    def buffered(self, target: m.TExpr) -> StoreBuffer | None:
        """The store buffer a plain access to `target` goes through, if any (tso)."""
        if self.buffer is None or self.direct or not isinstance(target, (m.Var, m.Elem)) \
                or target.sym.scope is not m.Scope.GLOBAL or target.sym not in self.buffer.locations:
            return None
        return self.buffer

    def load(self, x: m.TExpr, slot: str, e: _Emitter, src: str) -> str:
        """A load: the newest entry of this CPU's buffer for that address, else memory."""
        buf = self.buffered(x)
        if buf is None:
            return f"{src}[{slot}]"
        e.emit(f"# {_comment(self.var_name(x.sym))} is read through {_comment(buf.name)}: "
               "its newest store there, else memory")
        # one expression, no temporaries: a load may sit inside a quantifier's generator
        addr = str(int(slot) + 1) if slot.isdigit() else f"({slot} + 1)"
        code = f"{src}[{slot}]"
        for k in range(buf.capacity):  # oldest first, so that the newest ends up outermost
            a, val = buf.entry(k)
            code = f"{src}[{val}] if {src}[{a}] == {addr} else {code}"
        return f"({code})"

    def address(self, target: m.TExpr, e: _Emitter, src: str, inline: bool = False) -> tuple[str, str, None]:
        """The slot of a variable or array element, as code; bounds-checked when dynamic.

        `inline` gives a single expression (no temporaries): reads may sit inside a
        quantifier's generator, where a hoisted temporary would not see its variable."""
        if isinstance(target, m.Var):
            base = self.layout.slot_of(target.sym, self.inst)
            return str(base), self.var_name(target.sym), None
        assert isinstance(target, m.Elem)
        t = target.sym.type
        assert isinstance(t, m.ArrayT)
        base = self.layout.slot_of(target.sym, self.inst)
        name = self.var_name(target.sym)
        idx = target.index
        if isinstance(idx, m.Const):
            return str(base + idx.value - t.lo), f"{name}[{idx.value}]", None
        if isinstance(idx, m.SelfE) and self.inst is not None:
            return str(base + self.inst - t.lo), f"{name}[{self.inst}]", None
        code = self.expr(idx, e, src)
        off = base - t.lo
        if inline:
            checked = code
            if not (isinstance(idx.type, m.IntT) and idx.type.lo is not None and t.lo <= idx.type.lo and idx.type.hi <= t.hi):
                checked = f"_ix({code}, {t.lo}, {t.hi}, {name!r})"
            return (f"{off} + {checked}" if off else checked), f"{name}[...]", None
        tmp = e.fresh()
        e.emit(f"{tmp} = {code}")
        if not (isinstance(idx.type, m.IntT) and idx.type.lo is not None and t.lo <= idx.type.lo and idx.type.hi <= t.hi):
            e.emit(f"if {tmp} < {t.lo} or {tmp} > {t.hi}:")
            e.emit(f"    _index_error({name!r}, {tmp}, {t.lo}, {t.hi})")
        return (f"{off} + {tmp}" if off else tmp), f"{name}[...]", None

    def var_name(self, sym: m.VarSym) -> str:
        if sym.scope is m.Scope.LOCAL and self.proc is not None:
            return f"{self.proc.instance_name(self.inst)}.{sym.name}"
        return sym.name

    # -- expressions
    def expr(self, x: m.TExpr, e: _Emitter, src: str) -> str:
        if isinstance(x, m.Const):
            return str(int(x.value))
        if isinstance(x, (m.Var, m.Elem)):
            if isinstance(x, m.Var) and x.sym.scope is m.Scope.LOCAL and self.inst is None:
                raise TypeError("a process-local variable outside its process")
            slot, _, _ = self.address(x, e, src, inline=True)
            return self.load(x, slot, e, src)
        if isinstance(x, m.LocalOf):
            return self.local_of(x, e, src)
        if isinstance(x, m.SelfE):
            return str(self.inst)
        if isinstance(x, m.Bound):
            return self.bound[x.uid]
        if isinstance(x, m.Un):
            a = self.expr(x.operand, e, src)
            return {"!": f"(not {a})", "-": f"(-{a})", "~": f"(~{a})"}[x.op]
        if isinstance(x, m.Bin):
            a = self.expr(x.left, e, src)
            b = self.expr(x.right, e, src)
            return _PY_BINOP.get(x.op, "({a} " + x.op + " {b})").format(a=a, b=b)
        if isinstance(x, m.Ite):
            c = self.expr(x.cond, e, src)
            return f"({self.expr(x.then, e, src)} if {c} else {self.expr(x.orelse, e, src)})"
        if isinstance(x, m.At):
            proc = next(p for p in self.program.processes if p.name == x.process)
            pcs = sorted(proc.label_pcs.get(x.label, ()))
            base = self.layout.pc_base[x.process]
            if x.index is None:
                slot = str(base)
            elif isinstance(x.index, m.Const):
                slot = str(base + x.index.value)
            else:
                i = self.expr(x.index, e, src)
                slot = f"{base} + {i}" if base else i
            if not pcs:
                return "False"
            if len(pcs) == 1:
                return f"({src}[{slot}] == {pcs[0]})"
            return f"({src}[{slot}] in {tuple(pcs)!r})"
        if isinstance(x, m.Quant):
            var = f"_q{x.bound.uid}"
            self.bound[x.bound.uid] = var
            body = self.expr(x.body, e, src)
            fn = "any" if x.kind == "exists" else "all"
            return f"{fn}({body} for {var} in range({x.lo}, {x.hi + 1}))"
        if isinstance(x, m.Builtin):
            return self.builtin(x, e, src)
        raise TypeError(x)

    def local_of(self, x: m.LocalOf, e: _Emitter, src: str) -> str:
        """`p.r` / `p[i].r` in a property: instances lay their locals out alike, so the
        slot of instance i is the slot of instance 0 plus i strides."""
        proc = next(p for p in self.program.processes if p.name == x.process)
        base = self.layout.var_base[(x.sym, 0)]
        if x.index is None:
            return f"{src}[{base}]"
        if isinstance(x.index, m.Const):
            return f"{src}[{self.layout.var_base[(x.sym, x.index.value)]}]"
        stride = self.layout.var_base[(x.sym, 1)] - base if proc.instances > 1 else 0
        i = self.expr(x.index, e, src)
        t = x.index.type
        if not (isinstance(t, m.IntT) and t.lo is not None and 0 <= t.lo and t.hi < proc.instances):
            i = f"_ix({i}, 0, {proc.instances - 1}, {x.process!r})"
        return f"{src}[{base} + {stride} * {i}]"

    def builtin(self, c: m.Builtin, e: _Emitter, src: str) -> str:
        """Emit the side effects of a kernel primitive; return the code of its value.
        Under tso a locked primitive reads and writes memory directly: its step only
        runs with an empty store buffer (`Step.fence`)."""
        from .resolve import BUILTINS, LOCKED

        outer = self.direct
        self.direct = outer or BUILTINS[c.name].tso == LOCKED
        try:
            return self._builtin(c, e, src)
        finally:
            self.direct = outer

    def _builtin(self, c: m.Builtin, e: _Emitter, src: str) -> str:
        n, a = c.name, c.args
        if n in ("atomic_read", "READ_ONCE", "smp_load_acquire"):
            return self.expr(a[0], e, src)
        if n == "test_bit":
            nr = self.expr(a[0], e, src)
            if not isinstance(a[0], m.Const):  # a computed bit number must name a bit of the set
                nr = f"_ix({nr}, 0, {a[1].type.size - 1}, {self.var_name(a[1].sym) + ' bit'!r})"
            return f"(({self.expr(a[1], e, src)} >> {nr}) & 1)"
        if n == "bitmap_empty":
            return f"({self.expr(a[0], e, src)} == 0)"
        if n in ("min", "max"):
            return f"{n}({self.expr(a[0], e, src)}, {self.expr(a[1], e, src)})"
        if n in ("waitqueue_active", "swait_active"):
            return f"({self.expr(a[0], e, src)} != 0)"
        if n in ("atomic_set", "WRITE_ONCE", "smp_store_release", "smp_store_mb"):
            self.store(a[0], self.expr(a[1], e, src), a[1], e)
            return ""
        if n in ("atomic_inc", "atomic_dec", "atomic_add", "atomic_sub",
                 "atomic_inc_return", "atomic_dec_return", "atomic_dec_and_test"):
            target = a[1] if n in ("atomic_add", "atomic_sub") else a[0]
            delta = {"atomic_inc": "1", "atomic_inc_return": "1", "atomic_dec": "-1",
                     "atomic_dec_return": "-1", "atomic_dec_and_test": "-1"}.get(n)
            if delta is None:
                d = self.expr(a[0], e, src)
                delta = d if n == "atomic_add" else f"-({d})"
            cur = self.expr(target, e, src)
            new = e.fresh()
            e.emit(f"{new} = {cur} + {delta}")
            self.store(target, new, None, e)
            if n == "atomic_dec_and_test":
                return f"({new} == 0)"
            return new if n.endswith("_return") else ""
        if n in ("test_and_set_bit", "test_and_clear_bit", "set_bit", "clear_bit"):
            nr = self.expr(a[0], e, src)
            slot, name, _ = self.address(a[1], e, src)
            size = a[1].type.size
            if not isinstance(a[0], m.Const):
                e.emit(f"if {nr} < 0 or {nr} >= {size}:")
                e.emit(f"    _index_error({name!r} + ' bit', {nr}, 0, {size - 1})")
            old = e.fresh()
            e.emit(f"{old} = (v[{slot}] >> {nr}) & 1")
            if "set" in n:
                e.emit(f"v[{slot}] |= 1 << {nr}")
            else:
                e.emit(f"v[{slot}] &= ~(1 << {nr})")
            return old if n.startswith("test_and") else ""
        if n == "xchg":
            old = e.fresh()
            e.emit(f"{old} = {self.expr(a[0], e, src)}")
            self.store(a[0], self.expr(a[1], e, src), a[1], e)
            return old
        if n == "cmpxchg":
            old = e.fresh()
            e.emit(f"{old} = {self.expr(a[0], e, src)}")
            e.emit(f"if {old} == {self.expr(a[1], e, src)}:")
            e.depth += 1
            self.store(a[0], self.expr(a[2], e, src), a[2], e)
            e.depth -= 1
            return old
        if n in ("prepare_to_wait", "finish_wait"):
            slot, _, _ = self.address(a[0], e, src)
            gid = self.layout.gid_base[self.proc.name] + self.inst
            task = self.layout.task_slot[gid]
            if n == "prepare_to_wait":
                e.emit(f"v[{slot}] |= {1 << gid}  # {_comment(self.proc.instance_name(self.inst))} waits")
                e.emit(f"v[{task}] = 1  # INTERRUPTIBLE")
            else:
                e.emit(f"v[{task}] = 0  # RUNNING")
                e.emit(f"v[{slot}] &= ~{1 << gid}")
            return ""
        if n in ("wake_up", "swake_up_one"):
            slot, _, _ = self.address(a[0], e, src)
            w = e.fresh()
            e.emit(f"{w} = v[{slot}]")
            sleepers = sorted(self.layout.task_slot.items())
            if n == "wake_up":
                for gid, task in sleepers:
                    e.emit(f"if {w} & {1 << gid}:")
                    e.emit(f"    v[{task}] = 0  # wake {_comment(self.layout.instance_names[gid])}")
                e.emit(f"v[{slot}] = 0")
            else:
                first = True
                for gid, task in sleepers:
                    kw = "if" if first else "elif"
                    first = False
                    e.emit(f"{kw} {w} & {1 << gid}:")
                    e.emit(f"    v[{task}] = 0  # wake {_comment(self.layout.instance_names[gid])}")
                    e.emit(f"    v[{slot}] = {w} & ~{1 << gid}")
            return ""
        raise TypeError(f"builtin {n}")


def _is_01(value: m.TExpr | None) -> bool:
    return value is not None and isinstance(value, (m.Const, m.Var, m.Elem)) and isinstance(value.type, m.BoolT)


def _fits(value: m.TExpr | None, t: m.IntT) -> bool:
    """Whether a value is statically known to lie in the target's range."""
    if value is None:
        return False
    if isinstance(value, m.Const):
        return t.lo <= value.value <= t.hi
    vt = value.type
    return isinstance(vt, m.IntT) and vt.lo is not None and t.lo <= vt.lo and vt.hi <= t.hi
