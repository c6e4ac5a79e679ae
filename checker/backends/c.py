"""IR -> C: the explicit engine's breadth-first level loop for one variant, as pan.c is
SPIN's (engines/explicit/native.py compiles it with the system's C compiler and loads
it with ctypes).

The state is the same packed integer as the Python back end's (`Packing`: every slot a
bit field holding its value minus its lower bound), here a `uint64_t`, so only a model
whose packed state is at most 63 bits wide is written (the visited set stores state + 1,
0 marking a free slot). Each step becomes one C function from the same IR and the same
lowering (semantics/lower.py, semantics/fold.py) as the Python back end's, statement
for statement: it returns 0 when the step is disabled, 1 with the successor, and
`BAIL` (2) whenever the Python step could raise: a value out of its range, an index out
of bounds, a division by zero, an arithmetic overflow, a failed assertion, a loop inside
a step that runs too long. The C loop never decides a verdict: a state where a step
bails, an invariant fails (or bails), a premise of vacuity holds, no step moves, or a
`final` condition may apply goes back to the Python search, which expands it with the
Python steps and reports what it finds (as the generated Python loop, fastloop.py,
does). So the C code only has to be right on the states that need no decision, and the
tests compare every step's C successor with the Python one on every reachable state.

What is not written (`Unsupported`, and the search runs in Python with a note): tso and
lkmm, fixed-width C integers (u8..u64, s8..s64: their wrap-around is the Python back
end's alone for now), conversions, quantifiers over kernel primitives,
states past 63 bits, more than 64 invariants or premises.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from typing import NoReturn

from .. import model as m
from ..base.errors import Span
from ..base.limits import MAX_STEP_LOOP
from ..base.safe_text import python_comment
from ..ir import (OAssert, OAssign, OBarrier, OBreak, OContinue, OEval, OGoto, OIf, OInline, OReturn, OWhile, Op,
                  Program, ProcessIR, Step, StepKind, builtins_in)
from ..semantics.fold import simplify, store_needs
from ..semantics.lower import EmittedSpelling
from ..base.record import record

#: the widest packed state the C loop takes: the visited set stores state + 1 in 64 bits
MAX_BITS = 63
#: invariants and premises are switched on and off by one 64-bit mask each
MAX_PREDICATES = 64
#: how many states one call of the level function expands before it returns, so that
#: the caller can show progress and take a Ctrl-C
CHUNK = 1 << 16


def compiler() -> str | None:
    """The C compiler this C is built with: $CC, else cc, as found on PATH."""
    return shutil.which(os.environ.get("CC") or "cc")


class Unsupported(Exception):
    """A model (or a construct in it) the C back end does not write: the search runs in
    Python. The message says what, for the run's note."""


@record
class StepRef:
    """One step of the search's numbering: process, instance and its IR step."""

    process: ProcessIR
    instance: int
    step: Step


@record
class Actor:
    """One row of the search's actor table: the field its steps are dispatched on, and
    by field value the numbers of the steps there."""

    shift: int
    mask: int
    steps_at: tuple[tuple[int, ...], ...]


@record
class CSource:
    """The translation unit and what the loader needs to know about it."""

    text: str
    steps: int
    invariants: int
    premises: int
    digest: str  # sha256 of the text: the build cache's key
    liveness: int = 0  # liveness properties: the fair-cycle check (_LIVENESS) is there


@record
class AmpleTables:
    """Partial-order reduction's choice of ample set (engines/reduce/por.py), as tables
    the C loop walks: per process instance (gid order, the actors' order) and per pc,
    (has a step there, may seed a cluster, the gid mask its steps there conflict with,
    one of them surely has a successor); `singletons`: only clusters of one instance
    that conflicts with nobody (the liveness form)."""

    rows: tuple[tuple[tuple[bool, bool, int, bool], ...], ...]
    singletons: bool


def _comment(text: str) -> str:
    """Source text made safe for a C comment: printable, one line, no comment end."""
    return python_comment(text).replace("*/", "* /")


class _Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.n = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def fresh(self) -> str:
        self.n += 1
        return f"t{self.n}"

    def indented(self, body: Callable[[], None]) -> None:
        """What `body` emits, one level deeper: a C block's statements."""
        self.depth += 1
        body()
        self.depth -= 1


def _p(code: str) -> str:
    return code if code.isidentifier() or code.lstrip("-").isdigit() else f"({code})"


#: a field of the packed state: (slot, or None when its index is computed; shift code,
#: width, lower and upper bound)
Place = tuple[int | None, str, int, int, int]


class CWriter:
    """IR -> the C of every step, predicate and the level loop. It follows the Python
    back end's sections (addresses, expressions, stores, operations, core operations),
    so that the two read alike; each is checked against the other by the tests."""

    def __init__(self, program: Program, shift: Sequence[int], width: Sequence[int], lo: Sequence[int],
                 hi: Sequence[int], bits: int):
        model = program.model
        if model.memory != "sc":
            raise Unsupported(f"memory {model.memory}")
        if bits > MAX_BITS:
            raise Unsupported(f"a packed state of {bits} bits (at most {MAX_BITS})")
        self.program = program
        self.layout = program.layout
        self.shift, self.width, self.lo, self.hi = tuple(shift), tuple(width), tuple(lo), tuple(hi)
        self.bits = bits
        self.proc: ProcessIR | None = None
        self.inst: int | None = None
        self.bound: dict[int, str] = {}
        self.direct = False  # (Spelling's switch for a locked primitive under tso: this C is sc only)

    # -- fields
    def mask(self, k: int) -> int:
        return (1 << self.width[k]) - 1

    def get(self, src: str, k: int) -> str:
        if self.width[k] == 0:
            return str(self.lo[k])
        raw = f"(i64)({src} >> {self.shift[k]} & {self.mask(k):#x})"
        return f"({raw} + {self.lo[k]})" if self.lo[k] else raw

    def get_dyn(self, src: str, shift_code: str, width: int, lo: int) -> str:
        if width == 0:
            return str(lo)
        raw = f"(i64)({src} >> ({shift_code}) & {(1 << width) - 1:#x})"
        return f"({raw} + {lo})" if lo else raw

    # -- addresses
    def address(self, target: m.TExpr, e: _Emitter, src: str) -> Place:
        layout = self.layout
        if isinstance(target, m.Var):
            k = layout.slot_of(target.sym, self.inst)
            return k, str(self.shift[k]), self.width[k], self.lo[k], self._hi(k)
        if not isinstance(target, m.Elem):
            raise Unsupported(f"a store to {type(target).__name__}")
        t = target.sym.type
        assert isinstance(t, m.ArrayT)
        base = layout.slot_of(target.sym, self.inst)
        idx = target.index
        if isinstance(idx, m.SelfE) and self.inst is not None:
            idx = m.Const(idx.span, idx.type, self.inst)
        if isinstance(idx, m.Const):
            if t.lo <= idx.value <= t.hi:
                k = base + idx.value - t.lo
                return k, str(self.shift[k]), self.width[k], self.lo[k], self._hi(k)
            e.emit(f"return BAIL;  /* index {idx.value} is outside {t.lo}..{t.hi} */")
            k = base
            return k, str(self.shift[k]), self.width[k], self.lo[k], self._hi(k)
        code = self.expr(idx, e, src)
        tmp = e.fresh()
        e.emit(f"i64 {tmp} = {code};")
        e.emit(f"if ({tmp} < {t.lo} || {tmp} > {t.hi}) return BAIL;  /* index out of bounds */")
        w = self.width[base]
        shift = f"{self.shift[base]} + {w} * ({tmp} - {t.lo})"
        return None, shift, w, self.lo[base], self._hi(base)

    def _hi(self, k: int) -> int:
        return self.hi[k]

    def index_inline(self, idx: m.TExpr, lo: int, hi: int, e: _Emitter, src: str) -> str:
        """An index as one expression that bails when out of bounds (reads may sit inside
        a quantifier's loop, where a hoisted temporary would not see its variable)."""
        return self.in_bounds(self.expr(idx, e, src), lo, hi, e)

    def in_bounds(self, code: str, lo: int, hi: int, e: _Emitter) -> str:
        tmp = e.fresh()
        return f"({{ i64 {tmp} = {code}; if ({tmp} < {lo} || {tmp} > {hi}) return BAIL; {tmp}; }})"

    def load(self, x: m.TExpr, e: _Emitter, src: str) -> str:
        if isinstance(x, m.Var):
            return self.get(src, self.layout.slot_of(x.sym, self.inst))
        assert isinstance(x, m.Elem)
        t = x.sym.type
        assert isinstance(t, m.ArrayT)
        base = self.layout.slot_of(x.sym, self.inst)
        idx = x.index
        if isinstance(idx, m.SelfE) and self.inst is not None:
            idx = m.Const(idx.span, idx.type, self.inst)
        if isinstance(idx, m.Const):
            if t.lo <= idx.value <= t.hi:
                return self.get(src, base + idx.value - t.lo)
            return "({ return BAIL; 0; })"
        i = self.index_inline(idx, t.lo, t.hi, e, src)
        w = self.width[base]
        return self.get_dyn(src, f"{self.shift[base]} + {w} * ({i} - {t.lo})", w, self.lo[base])

    # -- expressions (values as i64, with Python's meaning)
    def expr(self, x: m.TExpr, e: _Emitter, src: str) -> str:
        if isinstance(x.type, m.BitVecT):
            raise Unsupported(f"fixed-width integers ({x.type.describe()})")
        if isinstance(x, m.Const):
            return f"{int(x.value)}LL"
        if isinstance(x, (m.Var, m.Elem)):
            return self.load(x, e, src)
        if isinstance(x, m.SelfE):
            if self.inst is None:
                raise Unsupported("self outside a process")
            return f"{self.inst}LL"
        if isinstance(x, m.Bound):
            return self.bound[x.uid]
        if isinstance(x, m.Un):
            a = self.expr(x.operand, e, src)
            if x.op == "!":
                return f"(i64)(!{_p(a)})"
            if x.op == "-":
                return f"neg({a})"
            return f"(~{_p(a)})"
        if isinstance(x, m.Bin):
            if isinstance(x.left.type, m.BitVecT) or isinstance(x.right.type, m.BitVecT):
                raise Unsupported("fixed-width integers")
            a = self.expr(x.left, e, src)
            b = self.expr(x.right, e, src)
            return self.binop(x.op, a, b, e)
        if isinstance(x, m.Ite):
            c = self.expr(x.cond, e, src)
            return f"({_p(c)} ? {self.expr(x.then, e, src)} : {self.expr(x.orelse, e, src)})"
        if isinstance(x, m.At):
            return self.at(x, e, src)
        if isinstance(x, m.LocalOf):
            return self.local_of(x, e, src)
        if isinstance(x, m.Quant):
            if next(builtins_in(x.body), None) is not None:
                raise Unsupported("a kernel primitive inside a quantifier")
            var = f"q{x.bound.uid}"
            self.bound[x.bound.uid] = var
            body = self.expr(x.body, e, src)
            r = e.fresh()
            if x.kind == "exists":
                return (f"({{ i64 {r} = 0; for (i64 {var} = {x.lo}; {var} <= {x.hi}; {var}++) "
                        f"if ({body}) {{ {r} = 1; break; }} {r}; }})")
            return (f"({{ i64 {r} = 1; for (i64 {var} = {x.lo}; {var} <= {x.hi}; {var}++) "
                    f"if (!({body})) {{ {r} = 0; break; }} {r}; }})")
        if isinstance(x, m.Builtin):
            return self.builtin(x, e, src)
        raise Unsupported(f"the expression {type(x).__name__}")

    def binop(self, op: str, a: str, b: str, e: _Emitter) -> str:
        simple = {"+": "add", "-": "sub", "*": "mul", "/": "divc", "%": "modc", "<<": "shl", ">>": "shr"}
        if op in simple:
            return f"{simple[op]}({a}, {b})"
        if op in ("&", "|", "^"):
            return f"({_p(a)} {op} {_p(b)})"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return f"(i64)({_p(a)} {op} {_p(b)})"
        t = e.fresh()
        if op == "&&":  # Python's `and`: the first operand when it is false, else the second
            return f"({{ i64 {t} = {a}; {t} ? (i64)({b}) : {t}; }})"
        if op == "||":
            return f"({{ i64 {t} = {a}; {t} ? {t} : (i64)({b}); }})"
        if op == "->":  # (not a) or b
            return f"(!{_p(a)} ? 1LL : (i64)({b}))"
        raise Unsupported(f"the operator {op}")

    def at(self, x: m.At, e: _Emitter, src: str) -> str:
        proc = next(p for p in self.program.processes if p.name == x.process)
        pcs = sorted(proc.label_pcs.get(x.label, ()))
        base = self.layout.pc_base[x.process]
        if x.index is None:
            pc = self.get(src, base)
        elif isinstance(x.index, m.Const) and 0 <= x.index.value < proc.instances:
            pc = self.get(src, base + x.index.value)
        else:
            i = self.index_inline(x.index, 0, proc.instances - 1, e, src)
            w = self.width[base]
            pc = self.get_dyn(src, f"{self.shift[base]} + {w} * {i}", w, 0)
        if not pcs:
            return "0LL"
        tmp = e.fresh()
        return f"({{ i64 {tmp} = {pc}; (i64)(" + " || ".join(f"{tmp} == {p}" for p in pcs) + "); })"

    def local_of(self, x: m.LocalOf, e: _Emitter, src: str) -> str:
        proc = next(p for p in self.program.processes if p.name == x.process)
        base = self.layout.slot_of(x.sym, 0)
        if x.index is None:
            return self.get(src, base)
        if isinstance(x.index, m.Const) and 0 <= x.index.value < proc.instances:
            return self.get(src, self.layout.slot_of(x.sym, x.index.value))
        stride = self.shift[self.layout.slot_of(x.sym, 1)] - self.shift[base] if proc.instances > 1 else 0
        i = self.index_inline(x.index, 0, proc.instances - 1, e, src)
        return self.get_dyn(src, f"{self.shift[base]} + {stride} * {i}", self.width[base], self.lo[base])

    # -- kernel primitives, as their core operations: semantics/lower.py's Spelling decides
    # what is read, checked, computed and written, and in which order; _Spelled writes it
    def builtin(self, c: m.Builtin, e: _Emitter, src: str) -> str:
        return _Spelled(self, e, src).builtin(c) or ""  # "": no value

    # -- stores
    def store(self, target: m.TExpr, value: m.TExpr, e: _Emitter) -> None:
        self.store_code(target, self.expr(value, e, "v"), value, e)

    def store_code(self, target: m.TExpr, code: str, value: m.TExpr | None, e: _Emitter) -> None:
        t = target.type
        if isinstance(t, (m.BitVecT, m.WaitQueueT)):
            raise Unsupported(f"a store to a {t.describe()}")
        addr = self.address(target, e, "v")
        if store_needs(t, value).to_bool:
            code = f"(i64)({code} != 0)"
        self.put(addr, code, e)

    def slot(self, k: int) -> Place:
        return k, str(self.shift[k]), self.width[k], self.lo[k], self._hi(k)

    def put(self, addr: Place, code: str, e: _Emitter) -> None:
        """Write `code` into a field of `v`. Every store is checked, where the Python
        back end checks only what the types do not guarantee: the same outcome, as a
        check that cannot fail never fails."""
        slot, shift, width, lo, hi = addr
        tmp = e.fresh()
        e.emit(f"i64 {tmp} = {code};")
        e.emit(f"if ({tmp} < {lo} || {tmp} > {hi}) return BAIL;  /* out of range */")
        if width == 0:
            return
        fmask = (1 << width) - 1
        if slot is not None:
            e.emit(f"v = (v & ~{fmask << int(shift):#x}ULL) | ((u64)({tmp} - {lo}) << {shift});")
        else:
            sh = e.fresh()
            e.emit(f"int {sh} = {shift};")
            e.emit(f"v = (v & ~({fmask:#x}ULL << {sh})) | ((u64)({tmp} - {lo}) << {sh});")

    # -- operations
    def ops(self, ops: Sequence[Op], e: _Emitter) -> None:
        for op in ops:
            self.op(op, e)

    def op(self, op: Op, e: _Emitter) -> None:
        assert self.proc is not None and self.inst is not None
        if isinstance(op, OGoto):
            k = self.layout.pc_base[self.proc.name] + self.inst
            if self.width[k]:
                e.emit(f"v = (v & ~{self.mask(k) << self.shift[k]:#x}ULL) | {op.pc << self.shift[k]:#x}ULL;")
            e.emit(f"*out = v; return 1;  /* -> {_comment(self.proc.pc_names[op.pc])} */")
        elif isinstance(op, OAssign):
            self.store(self.simplify(op.target), self.simplify(op.value), e)
        elif isinstance(op, OEval):
            code = self.builtin(self.simplify(op.call), e, "v")  # type: ignore[arg-type]
            if code:
                e.emit(f"(void)({code});")
        elif isinstance(op, OIf):
            cond = self.simplify(op.cond)
            if isinstance(cond, m.Const):
                self.ops(op.then if cond.value else op.orelse, e)
                return
            c = e.fresh()
            e.emit(f"i64 {c} = {self.expr(cond, e, 'v')};")
            e.emit(f"if ({c}) {{")
            e.indented(lambda: self.ops(op.then, e))
            e.emit("} else {")
            e.indented(lambda: self.ops(op.orelse, e))
            e.emit("}")
        elif isinstance(op, OWhile):
            n = e.fresh()
            e.emit(f"long {n} = 0;")
            e.emit("for (;;) {")
            e.depth += 1
            # the Python step stops a loop that comes back to a state or runs too long: it
            # decides which, once this bails
            e.emit(f"if ({n}++ >= {MAX_STEP_LOOP}) return BAIL;")
            c = e.fresh()
            e.emit(f"i64 {c} = {self.expr(self.simplify(op.cond), e, 'v')};")
            e.emit(f"if (!{c}) break;")
            self.ops(op.body, e)
            e.depth -= 1
            e.emit("}")
        elif isinstance(op, (OBreak, OReturn)):
            e.emit("break;" if isinstance(op, OBreak) else "break;  /* return */")
        elif isinstance(op, OContinue):
            e.emit("continue;")
        elif isinstance(op, OInline):
            e.emit(f"do {{  /* inline {_comment(op.name)} */")
            e.indented(lambda: self.ops(op.body, e))
            e.emit("} while (0);")
        elif isinstance(op, OAssert):
            cond = self.simplify(op.cond)
            if isinstance(cond, m.Const):
                if not cond.value:
                    e.emit(f"return BAIL;  /* assertion {_comment(op.property)} fails */")
                return
            c = e.fresh()
            e.emit(f"i64 {c} = {self.expr(cond, e, 'v')};")
            e.emit(f"if (!{c}) return BAIL;  /* assertion {_comment(op.property)} fails */")
        elif isinstance(op, OBarrier):
            e.emit(f"/* {_comment(op.name)}() */")
        else:
            raise Unsupported(f"the operation {type(op).__name__}")

    def simplify(self, x: m.TExpr) -> m.TExpr:
        return simplify(x, self.inst)

    # -- functions
    def step_function(self, k: int, ref: StepRef) -> str:
        p, inst, st = ref.process, ref.instance, ref.step
        self.proc, self.inst = p, inst
        e = _Emitter()
        where = f"{st.span.file}:{st.span.line}"
        head = [f"static int step{k}(u64 s, u64 *out) {{",
                f"    /* {_comment(p.instance_name(inst))}: {_comment(where)}  {_comment(st.text)[:100]} */"]
        if st.kind is StepKind.SCHEDULE:
            slot = self.layout.task_slot[self.layout.gid_base[p.name] + inst]
            e.emit(f"if ({self.get('s', slot)} != 0) return 0;  /* asleep until woken */")
        if st.guard is not None:
            guard = self.simplify(st.guard)
            if isinstance(guard, m.Const):
                if not guard.value:
                    e.emit("return 0;  /* the guard never holds for this instance */")
                    return "\n".join(head + e.lines + ["}", ""])
            else:
                g = e.fresh()
                e.emit(f"i64 {g} = {self.expr(guard, e, 's')};")
                e.emit(f"if (!{g}) return 0;")
        e.emit("u64 v = s;")
        self.ops(st.body, e)
        e.emit("return 0;  /* (not reached: every path ends in a goto) */")
        return "\n".join(head + e.lines + ["}", ""])

    def predicate(self, name: str, cond: m.TExpr, what: str) -> str:
        self.proc, self.inst = None, None
        e = _Emitter()
        code = self.expr(simplify(cond, None), e, "s")
        return "\n".join([f"static int {name}(u64 s) {{", f"    /* {_comment(what)} */"] + e.lines
                         + [f"    return ({code}) != 0;", "}", ""])

    def live_predicate(self, name: str, cond: m.TExpr | None, what: str) -> str:
        """A liveness property's goal or trigger; one the C back end does not write
        always bails, so that the liveness engine judges that property in Python."""
        assert cond is not None
        try:
            return self.predicate(name, cond, what)
        except Unsupported as e:
            return "\n".join([f"static int {name}(u64 s) {{", f"    /* {_comment(what)}: not written ({_comment(str(e))}) */",
                              "    (void)s;", "    return BAIL;", "}", ""])

    def at_ends(self) -> str:
        parts = []
        for p in self.program.processes:
            ends = sorted(p.end_pcs)
            for i in range(p.instances):
                pc = self.get("s", self.layout.pc_base[p.name] + i)
                parts.append("(" + " || ".join(f"{pc} == {x}" for x in ends) + ")" if ends else "0")
        return "\n".join(["static int at_ends(u64 s) {", "    /* every process at a valid end */",
                          "    return " + (" && ".join(parts) or "1") + ";", "}", ""])


class _Spelled(EmittedSpelling[Place, _Emitter]):
    """The core operations in C: a value is an i64 expression, a place a field of the
    packed state `v` (CWriter.address)."""

    owner: CWriter

    def assign(self, tmp: str, code: str) -> None:
        self.e.emit(f"i64 {tmp} = {code};")

    def paren(self, code: str) -> str:
        return code  # a value here is already an operand (expr and the operators below parenthesise their own)

    def place(self, loc: m.TExpr) -> Place:
        return self.owner.address(loc, self.e, "v")

    def task(self, gid: int) -> Place:
        return self.owner.slot(self.owner.layout.task_slot[gid])

    def read(self, place: Place) -> str:
        _, shift, width, lo, _ = place
        return self.owner.get_dyn("v", shift, width, lo)

    def write(self, place: Place, code: str, const: int | None = None) -> None:
        self.owner.put(place, code if const is None else self.word(const), self.e)

    def note(self, text: str) -> None:
        self.e.emit(f"/* {_comment(text)} */")

    def first(self, cases: list[tuple[str, str | None, Callable[[], None]]]) -> None:
        for i, (cond, note, body) in enumerate(cases):
            self.e.emit(f"{'} else if' if i else 'if'} ({cond}) {{" + (f"  /* {_comment(note)} */" if note else ""))
            self.e.indented(body)
        if cases:
            self.e.emit("}")

    def bit_in_set(self, nr: str, bits: m.TExpr) -> str:
        assert isinstance(bits.type, m.BitsetT)
        return self.owner.in_bounds(nr, 0, bits.type.size - 1, self.e)

    def check_bit(self, nr: str, place: Place, size: int) -> None:
        self.e.emit(f"if ({nr} < 0 || {nr} >= {size}) return BAIL;  /* not a bit of the set */")

    # fixed-width integers: not written (`expr` refuses them before these are reached)
    def fits(self, t: m.BitVecT, span: Span) -> None:
        _fixed_width(t)

    def wrap(self, code: str, t: m.BitVecT) -> str:
        _fixed_width(t)

    def min_max(self, a: str, b: str, is_min: bool, signed: m.BitVecT | None) -> str:
        if signed is not None:
            _fixed_width(signed)
        return f"{'min2' if is_min else 'max2'}({a}, {b})"

    def abs(self, x: str, signed: m.BitVecT | None) -> str:
        if signed is not None:
            _fixed_width(signed)
        return f"absv({x})"  # (bails on INT64_MIN)

    # what C writes its own way: i64 values, and arithmetic that bails on overflow
    def word(self, v: int) -> str:
        return f"{v}LL"

    def group(self, code: str) -> str:
        return f"(i64)({code})"  # a C comparison is an int

    def plus(self, a: str, step: int) -> str:
        return f"add({a}, {step}LL)"

    def plus_delta(self, a: str, delta: str, negate: bool) -> str:
        return f"{'sub' if negate else 'add'}({a}, {delta})"


def _fixed_width(t: m.BitVecT) -> NoReturn:
    raise Unsupported(f"fixed-width integers ({t.describe()})")


def predicate_of(prop: m.Property) -> m.TExpr:
    """What an invariant row checks (a `reachable` property is searched for as !P)."""
    assert prop.cond is not None
    if prop.kind is m.PropertyKind.REACHABLE:
        return m.Un(prop.cond.span, m.BoolT(), "!", prop.cond)
    return prop.cond


def premise_of(prop: m.Property) -> m.TExpr:
    """A premise of vacuity: an invariant's left side of `->`, a liveness trigger."""
    if prop.kind is m.PropertyKind.INVARIANT:
        assert isinstance(prop.cond, m.Bin)
        return prop.cond.left
    assert prop.trigger is not None
    return prop.trigger


def c_source(program: Program, shift: Sequence[int], width: Sequence[int], lo: Sequence[int], hi: Sequence[int],
             bits: int,
             steps: Sequence[StepRef], actors: Sequence[Actor], invariants: Sequence[m.Property],
             premises: Sequence[m.Property], finals: bool, ample: AmpleTables | None = None,
             liveness: Sequence[m.Property] = (),
             symmetry: Sequence[Sequence[Sequence[tuple[int, int]]]] = ()) -> CSource:
    """The whole translation unit: the step functions numbered as the search numbers
    them, the predicates, and the level loop walking `actors` in the search's order
    (with `ample`, only the actors of the ample set it chooses in each state, and
    with `symmetry`'s fields each successor made its orbit's representative); and, for
    a model with `liveness` properties, the liveness engine's fair-cycle check
    (`_LIVENESS`) with each one's goal and trigger."""
    if len(invariants) > MAX_PREDICATES or len(premises) > MAX_PREDICATES:
        raise Unsupported(f"more than {MAX_PREDICATES} invariants or premises")
    if any(len(a.steps_at) > 63 for a in actors):
        raise Unsupported("a process with more than 62 program counters (coverage marks are 64 bits)")
    w = CWriter(program, shift, width, lo, hi, bits)
    model = program.model
    out = [f"/* Generated by timerace from {_comment(model.file)}, variant {_comment(model.variant)}:",
           "   the explicit engine's breadth-first level loop in C (checker/backends/c.py).",
           f"   State: one uint64_t of {bits} bits, the Python back end's packing. */",
           _PRELUDE.replace("@NSTEPS@", str(max(1, len(steps)))).replace("@CHUNK@", str(CHUNK))]
    if liveness:  # (only then: it is a good part of a small model's compile)
        out.append(_LIVENESS)
    for k, ref in enumerate(steps):
        out.append(w.step_function(k, ref))
    for n, prop in enumerate(invariants):
        out.append(w.predicate(f"invariant{n}", predicate_of(prop), f"invariant {prop.name}"))
    for n, prop in enumerate(premises):
        out.append(w.predicate(f"premise{n}", premise_of(prop), f"premise of {prop.name}"))
    for n, prop in enumerate(liveness):
        out.append(w.live_predicate(f"live_goal{n}", prop.goal, f"goal of {prop.name}"))
        if prop.trigger is not None:
            out.append(w.live_predicate(f"live_trigger{n}", prop.trigger, f"trigger of {prop.name}"))
    out.append(w.at_ends())
    out.append(_dispatchers(len(steps), len(invariants), len(premises), liveness))
    layout = program.layout
    gids = [layout.gid_base[ref.process.name] + ref.instance for ref in steps]
    if max(gids, default=0) > 62:
        raise Unsupported("more than 63 process instances (the enabled masks are 64 bits)")
    if ample is not None:
        out.append(_ample(actors, ample))
    out.append(_canonical(symmetry))
    out.append(_level(actors, gids, len(invariants), len(premises), finals, ample is not None, bool(symmetry)))
    text = "\n".join(out)
    import hashlib  # (here: only a native search or --dump-c writes C)

    return CSource(text, len(steps), len(invariants), len(premises), hashlib.sha256(text.encode()).hexdigest(),
                   len(liveness))


def _dispatchers(steps: int, invariants: int, premises: int, liveness: Sequence[m.Property] = ()) -> str:
    """By-number entry points, for the tests that compare each C step with its Python
    twin; and the liveness engine's marks of property p (`live_marks`)."""
    lines = ["int tr_step(int k, u64 s, u64 *out) {", "    switch (k) {"]
    lines += [f"    case {k}: return step{k}(s, out);" for k in range(steps)]
    lines += ["    }", "    return -1;", "}", "", "int tr_predicate(int kind, int n, u64 s) {",
              "    /* kind 0: invariant n, 1: premise n, 2: every process at a valid end */"]
    lines += [f"    if (kind == 0 && n == {n}) return invariant{n}(s);" for n in range(invariants)]
    lines += [f"    if (kind == 1 && n == {n}) return premise{n}(s);" for n in range(premises)]
    lines += ["    if (kind == 2) return at_ends(s);"]
    lines += ["    /* kind 3: the goal of liveness property n, 4: its trigger (1 when it has none) */"]
    for n, prop in enumerate(liveness):
        lines.append(f"    if (kind == 3 && n == {n}) return live_goal{n}(s);")
        lines.append(f"    if (kind == 4 && n == {n}) return " + (f"live_trigger{n}(s);" if prop.trigger else "1;"))
    lines += ["    return -1;", "}", ""]
    if not liveness:
        return "\n".join(lines)
    lines += ["int tr_live_marks(int p, u64 n, const u64 *states, unsigned char *bad, u64 *seeds, u64 *nseeds) {",
              "    switch (p) {"]
    for n, prop in enumerate(liveness):
        trigger = f"live_trigger{n}" if prop.trigger else "0"
        lines.append(f"    case {n}: return live_marks(live_goal{n}, {trigger}, n, states, bad, seeds, nseeds);")
    lines += ["    }", "    return -1;", "}", ""]
    return "\n".join(lines)


def _ample(actors: Sequence[Actor], ample: AmpleTables) -> str:
    """`PartialOrder.ample_mask` in C: the clusters at the state's pcs, smallest first
    (by size, then mask), the first that surely moves or has a step with a successor;
    else every actor. Where a step tried bails, the Python loop chooses instead."""
    n = len(ample.rows)
    if n != len(actors) or n > 63:
        raise Unsupported("partial-order reduction over other actors than the process instances")
    width = max(1, max((len(r) for r in ample.rows), default=1))
    if any(len(r) != len(a.steps_at) for r, a in zip(ample.rows, actors)):
        raise Unsupported("ample-set rows that do not match the actors' pcs")

    def table(ctype: str, name: str, pick) -> str:
        rows = ["{" + ", ".join(str(pick(x)) for x in r) + (", 0" * (width - len(r)) if len(r) < width else "")
                + "}" if r else "{0}" for r in ample.rows]
        return f"static const {ctype} {name}[{n}][{width}] = {{" + ", ".join(rows) + "};"

    lines = [
        "/* partial-order reduction: per instance and pc (has a step, a candidate, conflicts, surely moves) */",
        f"#define NINST {n}",
        f"#define ALLMASK {(1 << n) - 1:#x}ULL",
        f"#define SINGLETONS {int(ample.singletons)}",
        table("unsigned char", "P_HAS", lambda x: int(x[0])),
        table("unsigned char", "P_CAND", lambda x: int(x[1])),
        table("u64", "P_CONF", lambda x: f"{x[2]:#x}ULL"),
        table("unsigned char", "P_SURE", lambda x: int(x[3])),
        "static const int PC_SHIFT[NINST] = {" + ", ".join(str(a.shift) for a in actors) + "};",
        "static const u64 PC_MASK[NINST] = {" + ", ".join(f"{a.mask:#x}ULL" for a in actors) + "};",
        "",
    ]
    for g, a in enumerate(actors):  # whether instance g has a step with a successor: 1, 0, or BAIL
        lines += [f"static int moves{g}(u64 s) {{", "    u64 out; int r, bail = 0;", "    (void)out; (void)r;",
                  f"    switch (s >> {a.shift} & {a.mask:#x}) {{"]
        for value, at in enumerate(a.steps_at):
            if at:
                lines.append(f"    case {value}:")
                for k in at:
                    lines += [f"        r = step{k}(s, &out);", "        if (r == 1) return 1;",
                              "        if (r == BAIL) bail = 1;"]
                lines.append("        break;")
        lines += ["    }", "    return bail ? BAIL : 0;", "}", ""]
    lines += [
        "static int moves(int g, u64 s) {",
        "    switch (g) {",
        *[f"    case {g}: return moves{g}(s);" for g in range(n)],
        "    }",
        "    return 0;",
        "}",
        "",
        "/* the smallest cluster holding instance `seed` at the pcs `pc`, or 0 */",
        "static u64 cluster(int seed, const u64 *pc) {",
        "    if (!P_CAND[seed][pc[seed]]) return 0;",
        "    u64 mask = 1ULL << seed, need = P_CONF[seed][pc[seed]];",
        "    if (SINGLETONS) return need ? 0 : mask;",
        "    while (need & ~mask) {",
        "        u64 fresh = need & ~mask;",
        "        mask |= fresh;",
        "        for (int g = 0; fresh; g++, fresh >>= 1) {",
        "            if (!(fresh & 1)) continue;",
        "            if (P_HAS[g][pc[g]] && !P_CAND[g][pc[g]]) return 0;",
        "            need |= P_CONF[g][pc[g]];",
        "        }",
        "    }",
        "    return mask;",
        "}",
        "",
        "/* the ample set in s as a gid mask (ALLMASK: every actor); *bail when a step it",
        "   tried bailed, so that the Python loop decides */",
        "static u64 ample(u64 s, int *bail) {",
        "    u64 pc[NINST], movers = 0, cl[NINST];",
        "    int nc = 0;",
        "    for (int g = 0; g < NINST; g++) {",
        "        pc[g] = s >> PC_SHIFT[g] & PC_MASK[g];",
        "        if (P_HAS[g][pc[g]]) movers |= 1ULL << g;",
        "    }",
        "    for (int g = 0; g < NINST; g++) {",
        "        u64 c = cluster(g, pc);",
        "        if (!c || !(movers & ~c)) continue;",
        "        int dup = 0;",
        "        for (int i = 0; i < nc; i++) dup |= cl[i] == c;",
        "        if (dup) continue;",
        "        int i = nc++;  /* insertion by (size, mask), as PartialOrder sorts them */",
        "        int size = __builtin_popcountll(c);",
        "        while (i > 0 && (__builtin_popcountll(cl[i - 1]) > size",
        "                         || (__builtin_popcountll(cl[i - 1]) == size && cl[i - 1] > c))) {",
        "            cl[i] = cl[i - 1];",
        "            i--;",
        "        }",
        "        cl[i] = c;",
        "    }",
        "    for (int i = 0; i < nc; i++) {",
        "        u64 c = cl[i];",
        "        for (int g = 0; g < NINST; g++)",
        "            if ((c >> g & 1) && P_SURE[g][pc[g]]) return c;",
        "        int found = 0;",
        "        for (int g = 0; g < NINST && !found; g++) {",
        "            if (!(c >> g & 1)) continue;",
        "            int r = moves(g, s);",
        "            if (r == 1) found = 1;",
        "            else if (r == BAIL) *bail = 1;",
        "        }",
        "        if (found) return c;",
        "        if (*bail) return ALLMASK;",
        "    }",
        "    return ALLMASK;",
        "}",
        "",
    ]
    return "\n".join(lines)


def _canonical(domains: Sequence[Sequence[Sequence[tuple[int, int]]]]) -> str:
    """Symmetry reduction's representative (reduce/symmetry.py's `canonical`): per
    domain in turn, the indices sorted by their keys, largest first, each key its fields
    compared in order (the Python one's integer of the fields side by side, first most
    significant), and the fields moved only when the order changed."""
    lines = ["u64 tr_canonical(u64 t) {", "    /* the representative of t's orbit (the identity: no symmetry) */"]
    for d, fields in enumerate(domains):
        n, f = len(fields), len(fields[0]) if fields else 0
        if n < 2 or f == 0:
            continue  # (nothing to sort)
        sh = ", ".join("{" + ", ".join(str(s) for s, _ in fs) + "}" for fs in fields)
        mk = ", ".join("{" + ", ".join(f"{k:#x}ULL" for _, k in fs) + "}" for fs in fields)
        clear = 0
        for fs in fields:
            for s, k in fs:
                clear |= k << s
        lines += [
            "    {",
            f"        /* domain {d}: {n} indices of {f} fields each */",
            f"        static const int SH[{n}][{f}] = {{{sh}}};",
            f"        static const u64 MK[{n}][{f}] = {{{mk}}};",
            f"        u64 key[{n}][{f}];",
            f"        int order[{n}], moved = 0;",
            f"        for (int i = 0; i < {n}; i++) {{",
            "            order[i] = i;",
            f"            for (int x = 0; x < {f}; x++) key[i][x] = t >> SH[i][x] & MK[i][x];",
            "        }",
            f"        for (int i = 1; i < {n}; i++) {{  /* insertion sort, largest key first, stable */",
            "            int o = order[i], j = i;",
            "            while (j > 0) {",
            "                int x = 0, p = order[j - 1];",
            f"                while (x < {f} && key[p][x] == key[o][x]) x++;",
            f"                if (x == {f} || key[p][x] > key[o][x]) break;",
            "                order[j] = p;",
            "                j--;",
            "                moved = 1;",
            "            }",
            "            order[j] = o;",
            "        }",
            "        if (moved) {",
            f"            u64 out = t & {~clear & (1 << 64) - 1:#x}ULL;",
            f"            for (int j = 0; j < {n}; j++)",
            f"                for (int x = 0; x < {f}; x++) out |= key[order[j]][x] << SH[j][x];",
            "            t = out;",
            "        }",
            "    }",
        ]
    lines += ["    return t;", "}", ""]
    return "\n".join(lines)


def _level(actors: Sequence[Actor], gids: Sequence[int], invariants: int, premises: int, finals: bool,
           por: bool = False, symmetry: bool = False) -> str:
    """The level loop: per state the invariants and premises still asked for, then per
    actor (with `por`, per actor of the ample set) a switch on its field running the
    steps there into a buffer; the successors are stored only once every step ran
    without bailing, in the search's order."""
    lines = [
        "int tr_level(struct tr *t, u64 hi, u64 *jp, u64 *expanded, u64 max_states, u64 inv_on, u64 prem_on,",
        "             int deadlock) {",
        "    /* expands states[*jp .. hi); returns DONE, GENERIC (state *jp needs the Python loop),",
        "       FULL (max_states reached), CHUNK (come back for more) or NOMEM */",
        "    u64 succ[NSTEPS]; int via[NSTEPS]; int r;",
        "    u64 stop = *jp + CHUNK < hi ? *jp + CHUNK : hi;",
        "    for (u64 j = *jp; j < stop; j++) {",
        "        u64 s = t->states[j];",
        "        int n = 0;",
    ]
    for i in range(invariants):
        lines.append(f"        if ((inv_on >> {i} & 1) && invariant{i}(s) != 1) goto generic;")
    for i in range(premises):
        lines.append(f"        if ((prem_on >> {i} & 1) && premise{i}(s) != 0) goto generic;")
    if finals:
        lines.append("        if (at_ends(s)) goto generic;  /* `final` conditions are the Python loop's */")
    if por:
        lines += ["        int bail = 0;", "        u64 am = ample(s, &bail);", "        if (bail) goto generic;"]
    for g, a in enumerate(actors):
        cases = [(value, at) for value, at in enumerate(a.steps_at) if at]
        if not cases:
            continue
        if por:
            lines.append(f"        if (am >> {g} & 1)")
        lines.append(f"        switch (s >> {a.shift} & {a.mask:#x}) {{")
        for value, at in cases:
            lines.append(f"        case {value}:")
            for k in at:
                lines.append(f"            r = step{k}(s, &succ[n]);")
                lines.append("            if (r == BAIL) goto generic;")
                lines.append(f"            if (r) via[n++] = {k};")
            lines.append("            break;")
        lines.append("        }")
    fields = ", ".join(f"{{{a.shift}, {a.mask:#x}}}" for a in actors) or "{0, 0}"
    lines += [
        "        if (n == 0 && deadlock) goto generic;  /* the Python loop judges a state without successors */",
        "        int64_t en = 0;",
        "        if (t->graph && reserve_edges(t, n) < 0) { *jp = j; return NOMEM; }",
        "        for (int i = 0; i < n; i++) {",
        "            int k = via[i];",
        "            u64 id;",
        "            t->transitions++;",
        "            t->marks[k] |= 2ULL << (succ[i] >> FIELD[ACTOR[k]][0] & FIELD[ACTOR[k]][1]);",
        *(["            succ[i] = tr_canonical(succ[i]);  /* (after the mark: it may move the actor) */"]
          if symmetry else []),
        "            r = add_id(t, succ[i], &id);",
        "            if (r < 0) { *jp = j; return NOMEM; }",
        "            if (r) { if (tr_record(t, j, (u32)k) < 0) { *jp = j; return NOMEM; } }",
        "            if (t->graph) {",
        "                en |= 1LL << GID[k];",
        "                t->dst[t->ndst] = id;",
        "                t->step[t->ndst++] = (u32)k;",
        "            }",
        "        }",
        "        if (t->graph && state_end(t, en) < 0) { *jp = j; return NOMEM; }",
        *(["        if (am != ALLMASK) t->ample_states++;"] if por else []),
        "        *expanded += 1;",
        "        if (t->count >= max_states && *expanded < t->count) { *jp = j + 1; return FULL; }",
        "        continue;",
        "    generic:",
        "        *jp = j;",
        "        return GENERIC;",
        "    }",
        "    *jp = stop;",
        "    return stop < hi ? CHUNKED : DONE;",
        "}",
        "",
    ]
    # coverage marks: bit 1 + the field of the step's actor after the step (as the Python loops mark)
    actor_of = {k: g for g, a in enumerate(actors) for at in a.steps_at for k in at}
    nsteps = max(actor_of, default=-1) + 1
    table = [f"static const int FIELD[{max(1, len(actors))}][2] = {{{fields}}};",
             f"static const int ACTOR[{max(1, nsteps)}] = {{"
             + (", ".join(str(actor_of.get(k, 0)) for k in range(nsteps)) or "0") + "};",
             "/* graph mode: the process instance (gid) of each step, for the enabled masks */",
             f"static const int GID[{max(1, len(gids))}] = {{" + (", ".join(map(str, gids)) or "0") + "};"]
    return "\n".join(table + [""] + lines)


_PRELUDE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t u64;
typedef int64_t i64;
typedef uint32_t u32;

#define NSTEPS @NSTEPS@
#define CHUNK @CHUNK@ULL
#define BAIL 2
/* what tr_level returns (engines/explicit/native.py reads the same numbers) */
enum { DONE = 0, GENERIC = 1, FULL = 2, CHUNKED = 3, NOMEM = 4 };

/* Python's integer operators on values that fit in 64 bits; anything else bails (the
   Python step then decides: a model error, or a value the C loop cannot hold) */
#define add(a, b) ({ i64 _r; if (__builtin_add_overflow((i64)(a), (i64)(b), &_r)) return BAIL; _r; })
#define sub(a, b) ({ i64 _r; if (__builtin_sub_overflow((i64)(a), (i64)(b), &_r)) return BAIL; _r; })
#define mul(a, b) ({ i64 _r; if (__builtin_mul_overflow((i64)(a), (i64)(b), &_r)) return BAIL; _r; })
#define neg(a) ({ i64 _a = (a); if (_a == INT64_MIN) return BAIL; -_a; })
#define divc(a, b) ({ i64 _a = (a), _b = (b); if (_b == 0 || (_a == INT64_MIN && _b == -1)) return BAIL; _a / _b; })
#define modc(a, b) ({ i64 _a = (a), _b = (b); if (_b == 0 || (_a == INT64_MIN && _b == -1)) return BAIL; _a % _b; })
#define shl(a, b) ({ i64 _a = (a), _b = (b); if (_b < 0 || _b > 62) return BAIL; \
                     i64 _r = (i64)((u64)_a << _b); if ((_r >> _b) != _a) return BAIL; _r; })
#define shr(a, b) ({ i64 _a = (a), _b = (b); if (_b < 0) return BAIL; _b > 63 ? (_a < 0 ? -1 : 0) : _a >> _b; })
#define min2(a, b) ({ i64 _a = (a), _b = (b); _b < _a ? _b : _a; })
#define max2(a, b) ({ i64 _a = (a), _b = (b); _b > _a ? _b : _a; })
#define absv(a) ({ i64 _a = (a); if (_a == INT64_MIN) return BAIL; _a < 0 ? -_a : _a; })

/* The search's stores: states in breadth-first order (the queue), each one's parent and
   step, and the visited set, an open-addressing table of state + 1 (0: a free slot), at
   most 70% full, probed from the top bits of (state + 1) * 2^64/phi as Fingerprints is. */
struct tr {
    u64 *states, *parent;
    u32 *via;
    u64 count, records, cap;
    u64 *table;  /* graph mode: two words a slot, state + 1 and its id (one cache line, not two) */
    u64 size, used, limit;
    int spread;
    u64 transitions, ample_states;
    u64 marks[NSTEPS];
    /* graph mode: the edges of state i are dst/step[first[i] .. first[i + 1]), and
       enabled[i] has bit g set when actor g had a successor (the liveness engine's) */
    int graph;
    u64 *first, *dst;
    u32 *step;
    int64_t *enabled;
    u64 nfirst, ndst, nenabled, capfirst, capdst, capstep, capenabled;
};

struct tr *tr_new(int graph) {
    struct tr *t = calloc(1, sizeof *t);
    if (!t) return 0;
    t->size = 1 << 16;
    t->spread = 64 - 16;
    t->limit = t->size * 7 / 10;
    t->graph = graph;
    t->table = calloc(t->size << graph, sizeof(u64));
    if (graph) {
        t->first = calloc(1024, sizeof(u64));
        t->capfirst = 1024;
        t->nfirst = 1;  /* first[0] = 0 */
    }
    if (!t->table || (graph && !t->first)) {
        free(t->table); free(t->first); free(t);
        return 0;
    }
    return t;
}

void tr_free(struct tr *t) {
    if (!t) return;
    free(t->states); free(t->parent); free(t->via); free(t->table);
    free(t->first); free(t->dst); free(t->step); free(t->enabled); free(t);
}

static int grow_table(struct tr *t) {
    u64 size = t->size * 2, mask = size - 1;
    int spread = t->spread - 1;
    int g = t->graph;
    u64 *table = calloc(size << g, sizeof(u64));
    if (!table) return -1;
    for (u64 i = 0; i < t->size; i++) {
        u64 fp = t->table[i << g];
        if (!fp) continue;
        u64 h = (fp * 0x9E3779B97F4A7C15ULL) >> spread;
        while (table[h << g]) h = (h + 1) & mask;
        table[h << g] = fp;
        if (g) table[2 * h + 1] = t->table[2 * i + 1];
    }
    free(t->table);
    t->table = table; t->size = size; t->spread = spread; t->limit = size * 7 / 10;
    return 0;
}

static int grow(void **p, u64 *cap, u64 need, size_t item) {
    if (need <= *cap) return 0;
    u64 c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * item);
    if (!q) return -1;
    *p = q; *cap = c;
    return 0;
}

/* graph mode: an edge to state `dst` by step `k`, the end of a state's edges, its actors */
int tr_edge(struct tr *t, u64 dst, u32 k) {
    if (grow((void **)&t->dst, &t->capdst, t->ndst + 1, sizeof(u64)) < 0) return -1;
    if (grow((void **)&t->step, &t->capstep, t->ndst + 1, sizeof(u32)) < 0) return -1;
    t->dst[t->ndst] = dst;
    t->step[t->ndst++] = k;
    return 0;
}

/* the level loop's own: room for a state's n edges, written in place (no call an edge),
   and the end of its edges with its actors */
static inline int reserve_edges(struct tr *t, u64 n) {
    if (t->ndst + n <= t->capdst && t->ndst + n <= t->capstep) return 0;
    if (grow((void **)&t->dst, &t->capdst, t->ndst + n, sizeof(u64)) < 0) return -1;
    return grow((void **)&t->step, &t->capstep, t->ndst + n, sizeof(u32));
}

static inline int state_end(struct tr *t, int64_t en) {
    if ((t->nfirst >= t->capfirst && grow((void **)&t->first, &t->capfirst, t->nfirst + 1, sizeof(u64)) < 0)
        || (t->nenabled >= t->capenabled
            && grow((void **)&t->enabled, &t->capenabled, t->nenabled + 1, sizeof(int64_t)) < 0)) return -1;
    t->first[t->nfirst++] = t->ndst;
    t->enabled[t->nenabled++] = en;
    return 0;
}

int tr_first(struct tr *t, u64 x) {
    if (grow((void **)&t->first, &t->capfirst, t->nfirst + 1, sizeof(u64)) < 0) return -1;
    t->first[t->nfirst++] = x;
    return 0;
}

int tr_enabled(struct tr *t, int64_t mask) {
    if (grow((void **)&t->enabled, &t->capenabled, t->nenabled + 1, sizeof(int64_t)) < 0) return -1;
    t->enabled[t->nenabled++] = mask;
    return 0;
}

u64 tr_ndst(struct tr *t) { return t->ndst; }
u64 tr_nfirst(struct tr *t) { return t->nfirst; }
u64 tr_nenabled(struct tr *t) { return t->nenabled; }
u64 tr_first_at(struct tr *t, u64 i) { return t->first[i]; }
void tr_cut_edges(struct tr *t, u64 n) { if (t->ndst > n) t->ndst = n; }
void tr_cut_first(struct tr *t, u64 n) { if (t->nfirst > n) t->nfirst = n; }
u64 *tr_first_ptr(struct tr *t) { return t->first; }
u64 *tr_dst_ptr(struct tr *t) { return t->dst; }
u32 *tr_step_ptr(struct tr *t) { return t->step; }
int64_t *tr_enabled_ptr(struct tr *t) { return t->enabled; }

static int reserve(struct tr *t, u64 n) {
    if (n <= t->cap) return 0;
    u64 cap = t->cap ? t->cap : 1024;
    while (cap < n) cap *= 2;
    u64 *states = realloc(t->states, cap * sizeof(u64));
    if (!states) return -1;
    t->states = states;
    u64 *parent = realloc(t->parent, cap * sizeof(u64));
    if (!parent) return -1;
    t->parent = parent;
    u32 *via = realloc(t->via, cap * sizeof(u32));
    if (!via) return -1;
    t->via = via;
    t->cap = cap;
    return 0;
}

int tr_contains(struct tr *t, u64 s) {
    u64 fp = s + 1, mask = t->size - 1, h = (fp * 0x9E3779B97F4A7C15ULL) >> t->spread;
    for (;;) {
        u64 x = t->table[h << t->graph];
        if (x == fp) return 1;
        if (!x) return 0;
        h = (h + 1) & mask;
    }
}

/* state s into the visited set and, if new, at the end of the queue: 1 new, 0 seen,
   -1 out of memory; *id: its id (graph mode) */
static int add_id(struct tr *t, u64 s, u64 *id) {
    u64 fp = s + 1, mask = t->size - 1, h = (fp * 0x9E3779B97F4A7C15ULL) >> t->spread;
    for (;;) {
        u64 x = t->table[h << t->graph];
        if (x == fp) { if (t->graph) *id = t->table[2 * h + 1]; return 0; }
        if (!x) break;
        h = (h + 1) & mask;
    }
    if (reserve(t, t->count + 1) < 0) return -1;
    t->table[h << t->graph] = fp;
    if (t->graph) t->table[2 * h + 1] = t->count;
    *id = t->count;
    t->states[t->count++] = s;
    if (++t->used > t->limit && grow_table(t) < 0) return -1;
    return 1;
}

int tr_add(struct tr *t, u64 s) {
    u64 id;
    return add_id(t, s, &id);
}

/* graph mode: the id of state s, or -1 */
int64_t tr_lookup(struct tr *t, u64 s) {
    u64 fp = s + 1, mask = t->size - 1, h = (fp * 0x9E3779B97F4A7C15ULL) >> t->spread;
    for (;;) {
        u64 x = t->table[h << t->graph];
        if (x == fp) return (int64_t)t->table[2 * h + 1];
        if (!x) return -1;
        h = (h + 1) & mask;
    }
}

/* the parent and step of the state stored last without them */
int tr_record(struct tr *t, u64 parent, u32 via) {
    if (reserve(t, t->records + 1) < 0) return -1;
    t->parent[t->records] = parent;
    t->via[t->records] = via;
    t->records++;
    return 0;
}

/* a search the Python loop began, taken over at a level boundary: its n states (the
   frontier last, in its order; graph mode: every state in id order), with the parents
   and steps by id; graph mode also the edges, their ends and the enabled masks so far */
int tr_load(struct tr *t, u64 n, const u64 *states, const u64 *parent, const u32 *via) {
    u64 id;
    for (u64 i = 0; i < n; i++) {
        int r = add_id(t, states[i], &id);
        if (r < 0) return -1;
        if (r == 0) return -2;  /* a state twice: not a visited set */
    }
    if (reserve(t, n) < 0) return -1;
    if (n) {
        memcpy(t->parent, parent, n * sizeof(u64));
        memcpy(t->via, via, n * sizeof(u32));
    }
    t->records = n;
    return 0;
}

int tr_load_graph(struct tr *t, u64 nfirst, const u64 *first, u64 ndst, const u64 *dst, const u32 *step,
                  u64 nenabled, const int64_t *enabled) {
    if (grow((void **)&t->first, &t->capfirst, nfirst, sizeof(u64)) < 0
        || grow((void **)&t->dst, &t->capdst, ndst, sizeof(u64)) < 0
        || grow((void **)&t->step, &t->capstep, ndst, sizeof(u32)) < 0
        || grow((void **)&t->enabled, &t->capenabled, nenabled, sizeof(int64_t)) < 0) return -1;
    if (nfirst) memcpy(t->first, first, nfirst * sizeof(u64));
    if (ndst) { memcpy(t->dst, dst, ndst * sizeof(u64)); memcpy(t->step, step, ndst * sizeof(u32)); }
    if (nenabled) memcpy(t->enabled, enabled, nenabled * sizeof(int64_t));
    t->nfirst = nfirst; t->ndst = ndst; t->nenabled = nenabled;
    return 0;
}

u64 tr_count(struct tr *t) { return t->count; }
u64 tr_records(struct tr *t) { return t->records; }
u64 tr_state(struct tr *t, u64 i) { return t->states[i]; }
u64 tr_parent(struct tr *t, u64 i) { return t->parent[i]; }
u32 tr_via(struct tr *t, u64 i) { return t->via[i]; }
u64 *tr_states(struct tr *t) { return t->states; }
/* the stored states' sum and sum of squares, modulo 2^64 (search.states_sums, DIGEST_MASK) */
void tr_sums(struct tr *t, u64 *out) {
    u64 total = 0, squares = 0;
    for (u64 i = 0; i < t->count; i++) { total += t->states[i]; squares += t->states[i] * t->states[i]; }
    out[0] = total; out[1] = squares;
}
u64 *tr_marks(struct tr *t) { return t->marks; }
u64 tr_transitions(struct tr *t) { return t->transitions; }
u64 tr_ample_states(struct tr *t) { return t->ample_states; }
void tr_truncate(struct tr *t, u64 n) { if (t->records > n) t->records = n; }
"""

_LIVENESS = r"""
/* The liveness engine's fair-cycle check (engines/liveness.py: `components`,
   `_Graph.fair_components` and `_Graph.stem`, step for step) on the arrays the search
   kept: the edges of state u are dst/step[first[u] .. first[u + 1]), ids >= n were not
   expanded. Weak fairness of the actors only (bit g of a mask: actor g); `fair` actions
   and strong fairness are the Python check's. */

/* property p's marks on the n expanded states: bad[u] when the goal does not hold, and
   the seeds, the bad states where the trigger holds, in id order. 0, or 1 when a
   predicate bailed (the Python check then judges the property). */
static int live_marks(int (*goal)(u64), int (*trigger)(u64), u64 n, const u64 *states, unsigned char *bad,
                      u64 *seeds, u64 *nseeds) {
    u64 m = 0;
    for (u64 u = 0; u < n; u++) {
        int g = goal(states[u]);
        if (g == BAIL) return 1;
        bad[u] = !g;
        if (g) continue;
        if (trigger) {
            int r = trigger(states[u]);
            if (r == BAIL) return 1;
            if (!r) continue;
        }
        seeds[m++] = u;
    }
    *nseeds = m;
    return 0;
}

/* The strongly connected components of the graph restricted to the bad states, from
   the seeds in order (Tarjan's algorithm with explicit stacks), each judged as it is
   found: fair iff every fair actor moves on an edge inside it or is disabled in one of
   its states. comp[u]: -1 outside R (not reached from a seed through bad states), 0 in
   an unfair component, c > 0 in fair component c; *starved: the fair actors that made
   components unfair. Returns the number of fair components, -1 out of memory. */
int64_t tr_fair_sccs(u64 n, const u64 *first, const u64 *dst, const u32 *step, const int64_t *enabled,
                     const u64 *stepbits, u64 fair, const unsigned char *bad, const u64 *seeds, u64 nseeds,
                     int32_t *comp, u64 *starved) {
    int64_t *index = malloc((n + 1) * sizeof *index), *low = malloc((n + 1) * sizeof *low);
    u64 *stack = malloc((n + 1) * sizeof *stack), *work = malloc((n + 1) * sizeof *work);
    u64 *next = malloc((n + 1) * sizeof *next), *mark = calloc(n + 1, sizeof *mark);
    unsigned char *on = calloc(n + 1, 1);
    int64_t out = -1;
    if (!index || !low || !stack || !work || !next || !mark || !on) goto done;
    for (u64 u = 0; u < n; u++) { index[u] = -1; comp[u] = -1; }
    int64_t count = 0, fairs = 0;
    u64 sp = 0, wp = 0, sccs = 0, starve = 0;
    for (u64 i = 0; i < nseeds; i++) {
        u64 root = seeds[i];
        if (index[root] >= 0) continue;
        index[root] = low[root] = count++;
        stack[sp++] = root; on[root] = 1;
        work[wp] = root; next[wp++] = first[root];
        while (wp) {
            u64 u = work[wp - 1], k = next[wp - 1], end = first[u + 1];
            int down = 0;
            while (k < end) {
                u64 v = dst[k++];
                if (v >= n || !bad[v]) continue;
                if (index[v] < 0) {  /* descend; u resumes at edge k */
                    next[wp - 1] = k;
                    index[v] = low[v] = count++;
                    stack[sp++] = v; on[v] = 1;
                    work[wp] = v; next[wp++] = first[v];
                    down = 1;
                    break;
                }
                if (on[v] && index[v] < low[u]) low[u] = index[v];
            }
            if (down) continue;
            wp--;  /* every edge of u done */
            if (wp && low[u] < low[work[wp - 1]]) low[work[wp - 1]] = low[u];
            if (low[u] != index[u]) continue;
            u64 top = sp;
            do { sp--; on[stack[sp]] = 0; } while (stack[sp] != u);
            sccs++;  /* the component is stack[sp .. top) */
            for (u64 j = sp; j < top; j++) mark[stack[j]] = sccs;
            u64 moved = 0, disabled = 0;
            for (u64 j = sp; j < top; j++) {
                u64 w = stack[j];
                disabled |= fair & ~(u64)enabled[w];
                for (u64 e = first[w]; e < first[w + 1]; e++) {
                    u64 v = dst[e];
                    if (v < n && mark[v] == sccs) moved |= stepbits[step[e]];
                }
            }
            u64 unmet = fair & ~moved & ~disabled;
            starve |= unmet;
            int32_t c = unmet ? 0 : (int32_t)++fairs;
            for (u64 j = sp; j < top; j++) comp[stack[j]] = c;
        }
    }
    *starved = starve;
    out = fairs;
done:
    free(index); free(low); free(stack); free(work); free(next); free(mark); free(on);
    return out;
}

/* The shortest stem: a 0-1 breadth-first search over nodes 2u + phase (phase 1 once a
   seed was passed, through states of R only; the move from phase 0 to 1 at a seed is
   free, so it goes to the front of the queue). parent[node]: -1 a start, -2 not
   reached; edge[node]: the edge that led there, -1 for none or the free move. Returns
   the first node found in a fair component in phase 1, -1 none, -2 out of memory. */
int64_t tr_stem(u64 n, u64 initial, const u64 *first, const u64 *dst, const u64 *seeds, u64 nseeds,
                const int32_t *comp, int64_t *parent, int64_t *edge) {
    u64 nodes = 2 * n;
    unsigned char *done = calloc(nodes + 1, 1), *seed = calloc(n + 1, 1);
    int64_t *q = malloc((2 * nodes + 2) * sizeof *q);
    int64_t found = -2;
    if (!done || !seed || !q) goto out;
    for (u64 i = 0; i < nseeds; i++) seed[seeds[i]] = 1;
    for (u64 i = 0; i < nodes; i++) { parent[i] = -2; edge[i] = -1; }
    /* at most n pushes to the front (one per phase-0 node), nodes to the back */
    u64 head = nodes + 1, tail = nodes + 1;
    for (u64 u = 0; u < initial && u < n; u++)
        if (parent[2 * u] == -2) { parent[2 * u] = -1; q[tail++] = (int64_t)(2 * u); }
    found = -1;
    while (head < tail) {
        int64_t node = q[head++];
        if (done[node]) continue;
        done[node] = 1;
        u64 u = (u64)node >> 1;
        int phase = node & 1;
        if (phase && comp[u] > 0) { found = node; break; }
        if (!phase && seed[u] && !done[node + 1]) {
            parent[node + 1] = node;
            edge[node + 1] = -1;
            q[--head] = node + 1;
        }
        for (u64 k = first[u]; k < first[u + 1]; k++) {
            u64 v = dst[k];
            if (v >= n || (phase && comp[v] < 0)) continue;
            int64_t to = (int64_t)(2 * v) + phase;
            if (parent[to] == -2) { parent[to] = node; edge[to] = (int64_t)k; q[tail++] = to; }
        }
    }
out:
    free(done); free(seed); free(q);
    return found;
}
"""
