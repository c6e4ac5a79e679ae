"""IR -> Promela: a twin of one variant that SPIN explores state for state as we do.

A pipeline branch beside compile.py: it reads the resolved, lowered `ir.Program` (one
variant, constants applied) and writes Promela text; it never sees the parse tree and
never runs the model.

The encoding is chosen so that pan's state is exactly our state:

* Every slot of our state vector is a Promela global: variables (a process's locals as
  `<instance>_<name>`), each instance's program counter `pc_<instance>` and, for a
  process that sleeps, its task state `task_<instance>`.
* Each process instance is one `active proctype` with a single `do` loop; each IR step
  is one option `d_step { pc == k && guard -> body; pc = next }`. SPIN's own control
  point therefore never changes (the loop is end-labelled), and one of our steps is one
  pan transition. The body is the IR's semantics translated operation by operation, in
  the order the compiled Python evaluates it (side effects of kernel primitives inside
  an expression happen first, as `python.Compiler.builtin` emits them); constants, `self` and
  quantifiers are folded by the compiler's own `simplify`, so both sides fold alike.
  Scratch values live in globals `tr_t<k>` that every step sets back to 0, so they add
  no state (`hidden` ones would stop pan's breadth-first search, `-DBFS`). spin hides a
  global that nothing reads, so the monitor has an option, never taken, that reads them all.
* Model names stay as they are unless Promela, cpp, C or pan's own code would clash with
  them (see `_PROMELA` below): then the twin's name differs and its header lists it.
* Properties are checked by one monitor process that never leaves its end-labelled
  loop: each check is an option `d_step { violated -> assert(name) }` that returns to
  where it was, so it adds no state, and `./pan -c0` can go on past a violation and
  still count exactly our states. The `assert` names the property: pan prints
  "assertion violated invariant_<name>" (a byte that is always 0). Our deadlock
  ("no step enabled, and some process not at a valid end") is the predicate itself,
  written out from every step's enabling condition, not SPIN's `timeout` (which the
  monitor's own options would disturb) nor its invalid-end-state check (which cannot
  see our end labels).
* A failed `assert` statement in the model: the step's effects are undone and the step
  ends where it began (a self-loop), as our search records the violation and stores no
  successor.
* `memory tso`: each CPU's store buffer is two global arrays in our layout's encoding
  (`sb_<cpu>_a[k]` the address, our slot number + 1, 0 for empty; `sb_<cpu>_v[k]` the
  value; oldest first), exactly as compile.py keeps it: a plain store appends (a full
  buffer: the step is undone, as above, where our search treats it as disabled; either
  way no successor, and the flush is enabled there), a load takes the newest matching
  entry else memory, a fence step is enabled only with an empty buffer, locked
  operations and locked `atomic` blocks use memory directly, and one process per buffer
  (`flush_<cpu>`) moves the oldest entry to memory. Its weak fairness under -f is our
  "every buffer drains". A value out of its range, a bad index, a division by zero: an assertion
  `model_error_...` (our search stops there).
* Several initial states (`any`): a chooser process picks one in its first step, and
  the processes wait for it (`tr_chosen`). pan then stores one state more than we do,
  the one before the choice; the header says so.
* Liveness properties become `ltl` claims, checked with `./pan -a -f -N name`: SPIN's
  weak fairness (-f) is per process, as ours; a process declared `unfair` has no SPIN
  equivalent (pan treats it as fair), which the header says. Fairness of one action
  (`fair S`) has none either, and a variant with one and a liveness property is refused.
  A `stutter` step is an option that changes nothing (a self-loop, as ours).

Arithmetic on plain integers is Promela's 32-bit `int` (C's, as pan runs it), where
ours is unbounded: the values of a model's ranges are small, but an intermediate value
beyond 2^31 would wrap in the twin (not checked).

* u32/u64 variables (Promela's `int` is 32-bit signed) live in C: `c_state "uint64_t x"`
  in pan's state vector, and every condition or assignment that touches such a value is
  written in C (`c_expr { ... }`, `c_code { ... }`, Promela's globals as `now.<name>`),
  where unsigned arithmetic wraps modulo 2**width exactly as ours does (model.bv_binop).

What cannot be translated faithfully is refused with a SpecError (exit 2): u32/u64
values in an ltl claim, a kernel primitive, a tso store buffer, a step that may fail an
assert (its undo), or a division by a computed value; several initial values of a u64;
a shift of a plain int whose count may pass 30 and u16 products (they leave a 32-bit
int); values or sets too wide for a 32-bit int.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import model as m
from ..semantics.primitives import BUILTINS, Cls
from ..base.errors import Span, SpecError
from ..semantics.fold import fits, fits_bv, simplify, store_needs
from ..semantics.lower import TextSpelling
from ..ir import (OAssert, OAssign, OBarrier, OBreak, OContinue, OEval, OGoto, OIf, OInline, OReturn, OWhile, Program,
                  ProcessIR, Step, StepKind, StoreBuffer, builtins_in, plain_stores, walk_ops)

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
MAX_BV_WIDTH = 16  # wider unsigned arithmetic can leave Promela's 32-bit signed int

# Names. A model name reaches three namespaces in its twin: SPIN's (Promela keywords), the
# C preprocessor's that spin runs on the twin (which predefines `linux` and `unix`, and
# expands an enum member's `#define` everywhere, inside `c_code` too), and pan's C code,
# where every global is a field `now.<name>` beside pan's and the C library's macros, and
# a process is a macro `P<name>`. A clash gives a twin spin or gcc rejects. Names that are
# safe stay as in the model, so that the twin reads like the model (a uniform prefix on
# every name would not); a name that is not safe gets a trailing `_`, or, for a name C
# could see as a macro, a `v_` prefix (see `_Translator.unique`), and the header lists
# every name changed (spin's trails show the twin's names). The sets below are the Promela
# keywords, the C keywords, the lower- and mixed-case object-like macros pan.c sees (`gcc
# -E -dM pan.c` under the flags pan's documentation lists, with SPIN 6.5 and glibc), and
# what cpp and the twin's own C text need. The upper-case macros are too many (hundreds,
# varying with the C library, SPIN's version and `-D` flags such as `-DBFS`): a global or
# process whose name has no lower-case letter gets the prefix instead. A name starting
# with `tr_` or `model_error_` is the twin's own. Only names that are C identifiers in
# pan (globals, processes) avoid C's; an enum member or an ltl claim is gone (or a string)
# by the time gcc runs.
_PROMELA = frozenset("""
active assert atomic bit bool break byte c_code c_decl c_expr c_state c_track chan d_step
d_proctype do else empty enabled eval false fi full goto hidden if init inline int len local
mtype nempty never nfull np_ od of pc_value printf printm priority proctype provided run
short show skip timeout true typedef unless unsigned xr xs select for in get_priority
set_priority ltl always eventually until weak strong release implies equivalent stutter
notrace trace _ _pid _nr_pr _last _priority pid D_proctype STDIN end""".split())  # end: the twin's end labels
_C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
_Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false
nullptr static_assert thread_local true typeof typeof_unqual asm""".split())
# object-like macros in lower or mixed case (also pan's own that it #undefs later, such as
# `rand`), and `sv`, a field of pan's state struct beside the globals; a name matching the
# pattern gets the `v_` prefix (a trailing `_` still matches it)
_C_MACROS = frozenset("""
sv errno rand uchar uint ulong ushort stdin stdout stderr wasnew sa_handler sa_sigaction
sigev_notify_attributes sigev_notify_function st_atime st_ctime st_mtime
Air0 Air1 Air2 Air3 G_int G_long IfNotBlocked L_ctermid L_tmpnam P_tmpdir PanSource Pclaim
SpinVersion StackSize UnBlock""".split())
_C_MACRO_PATTERN = re.compile(r"(max|min)seq\d+|si_\w+")
# what spin's cpp replaces (its predefined macros, `defined`) and the names in the twin's
# own C text, which an enum member's #define would replace there
_CPP = frozenset("""
linux unix defined now uerror uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t
int64_t include stdint h""".split())
# identifiers of pan's C code starting with P, which a process's macro `P<name>` redefines
_PAN_P = frozenset("P_PROC P_RAND P_o P_o_tmp P_s P_s_tmp P__Q PanSource Pclaim Pptr Printf".split())
_OURS = ("tr_", "model_error_")  # prefixes of the names the twin makes up


def _unsafe(name: str, c: bool, process: bool = False) -> bool:
    """Whether `name` clashes with Promela, with cpp, or (c: the name reaches pan's C code
    as a field or macro) with C and pan."""
    if name in _PROMELA or name in _CPP:
        return True
    return c and (name in _C_KEYWORDS or name in _C_MACROS or process and "P" + name in _PAN_P)


_IDENT = re.compile(r"[^A-Za-z0-9_]")


def _ident(text: str) -> str:
    return _IDENT.sub("_", text.replace("[", "_").replace("]", ""))


def _comment(text: str) -> str:
    """Text made safe inside a /* */ comment, on one line."""
    return "".join(ch for ch in " ".join(text.split()) if ch.isprintable() and ch.isascii()).replace("*/", "* /")


def refuse(program: Program) -> None:
    """Raise a SpecError if this variant has no faithful Promela twin."""
    model = program.model
    where = model.processes[0].span if model.processes else Span(model.file, 0, 0, 0, 0)
    if model.memory == "lkmm":
        raise SpecError(where, "the Promela twin has no `memory lkmm`: its views and histories are the explicit "
                        "engine's (checker/memory/lkmm.py)",
                        "translate the variant under sc or tso (--memory-model tso), or check it with the "
                        "explicit engine")
    for b in program.layout.buffers:
        wide = [v for v in b.locations if _c_type(v.type.elem if isinstance(v.type, m.ArrayT) else v.type)]
        if wide:
            raise SpecError(wide[0].span, f"'{wide[0].name}' is a {wide[0].type.describe()} stored through a "
                            "tso store buffer: the Promela twin's buffers hold 32-bit ints",
                            "translate the variant under sequential consistency (--memory-model sc)")
    for sl in program.layout.slots:
        t = sl.type
        if isinstance(t, m.IntT) and t.lo is not None and t.hi is not None and (t.lo < INT_MIN or t.hi > INT_MAX):
            raise SpecError(where, f"'{sl.name}' ranges over {t.describe()}, wider than Promela's 32-bit int")
        if isinstance(t, m.BitsetT) and t.size > 30:
            raise SpecError(where, f"'{sl.name}' is a set of {t.size} bits, more than a Promela int holds")
        if isinstance(t, m.BitVecT) and t.signed and t.width > MAX_BV_WIDTH:
            raise SpecError(where, f"'{sl.name}' is an {t.describe()}: the Promela twin translates signed "
                            f"types up to s{MAX_BV_WIDTH}", "check it with the explicit engine or bmc")
    if len(program.layout.instance_names) > 30 and any(isinstance(sl.type, m.WaitQueueT)
                                                        for sl in program.layout.slots):
        raise SpecError(where, "a wait queue of more than 30 processes does not fit a Promela int")


def _c_type(t: m.Type) -> str | None:
    """The C type a u32/u64 lives in (Promela's int cannot hold it); None otherwise."""
    if isinstance(t, m.BitVecT) and t.width > MAX_BV_WIDTH:
        return "uint32_t" if t.width <= 32 else "uint64_t"
    return None


def _children(x) -> tuple:
    """The sub-expressions of an expression (or of a builtin call)."""
    if isinstance(x, m.Builtin):
        return x.args
    if isinstance(x, m.Bin):
        return (x.left, x.right)
    if isinstance(x, (m.Un, m.Conv)):
        return (x.operand,)
    if isinstance(x, m.Ite):
        return (x.cond, x.then, x.orelse)
    if isinstance(x, (m.Elem, m.At, m.LocalOf)):
        return (x.index,) if x.index is not None else ()
    if isinstance(x, m.Quant):
        return (x.body,)
    return ()


# ---- Promela statements -----------------------------------------------------------


@dataclass
class _Block:
    """`if` or `do`: options of (guard, statements)."""

    kind: str  # "if" | "do"
    options: list[tuple[str, list]] = field(default_factory=list)
    label: str | None = None


def _render(seq: list, depth: int) -> list[str]:
    """Statements, one a line, separated by `;`."""
    out: list[str] = []
    pad = "\t" * depth
    for k, st in enumerate(seq):
        sep = ";" if k < len(seq) - 1 else ""
        if isinstance(st, _Block):
            head = f"{st.label}: " if st.label else ""
            out.append(f"{pad}{head}{st.kind}")
            for guard, body in st.options:
                lines = _render(body, depth + 2) if body else [pad + "\t\tskip"]
                out.append(f"{pad}:: {guard} ->")
                out.extend(lines)
            out.append(f"{pad}{'fi' if st.kind == 'if' else 'od'}{sep}")
        else:
            out.append(f"{pad}{st}{sep}")
    return out


class _Seq:
    """The statements of one step's body being built, with hidden scratch variables."""

    def __init__(self, owner: _Translator):
        self.owner = owner
        self.stack: list[list] = [[]]

    def emit(self, st):
        self.stack[-1].append(st)

    def fresh(self) -> str:
        return self.owner.fresh()

    def push(self) -> list:
        self.stack.append([])
        return self.stack[-1]

    def pop(self) -> list:
        return self.stack.pop()


# ---- the translator ---------------------------------------------------------------


class _Translator:
    """IR -> the Promela twin. One class of about 800 lines, on purpose: it is one
    translation, section by section (names, declarations, expressions, stores,
    operations, the chooser, the claims), whose parts share the naming state and the
    current step; split, each part would take all of it as arguments. Its sections
    follow python.Compiler's in order, so that a reader can hold the two side by side."""

    def __init__(self, program: Program):
        self.program = program
        self.model = program.model
        self.layout = program.layout
        self.names: dict = {}  # (VarSym, instance or None) -> Promela name
        self.used: set[str] = set()  # names taken in the twin
        self.renamed: dict[str, str] = {}  # twin name -> model name, where they differ
        self.temps = 0
        self.temps_max = 0
        self.labels = 0
        self.proc: ProcessIR | None = None
        self.inst: int | None = None
        self.errors: dict[str, str] = {}  # assertion name -> what it means
        self.loops: list[tuple[str, str | None]] = []  # ("while", continue label) | ("once", None)
        self.failed_label: str | None = None  # a step that may fail (assert, full buffer): where it goes
        self.done_label = ""
        self.enum_names: dict[tuple[str, int], str] = {}
        self.static_init: dict[int, int] = {}  # slot -> the value its declaration gives
        self.c = False  # writing C (c_expr/c_code) rather than Promela: an expression on u32/u64 values
        self.c_syms: set = {sym for sym, _i in program.layout.var_base if _c_type(sym.type)}
        self.gated = False  # the processes wait for the chooser (`tr_chosen`)
        self.buffer: StoreBuffer | None = None  # tso: the store buffer of the CPU being translated
        self.direct = False  # tso: inside a locked operation loads and stores use memory

    # -- names
    def unique(self, base: str, c: bool = True, process: bool = False, shown: str | None = None,
               derived=lambda name: ()) -> str:
        """A twin name for a model name `base`: unchanged if it is safe (`_unsafe`) and
        free; a `v_` prefix if it does not start with a letter, is the twin's own (`tr_`,
        `model_error_`) or, reaching C (`c`), has no lower-case letter (C's macro style) or
        matches `_C_MACRO_PATTERN`;
        else `_` until it is safe and free. An enum member is a `#define` that spin's cpp
        expands before pan's C is written (`c` false: upper case is safe). `derived`: the
        names the twin makes from it, which must be free too."""
        name = _ident(base)
        if not re.match(r"[A-Za-z]", name) or name.startswith(_OURS) or \
                c and (not re.search(r"[a-z]", name) or _C_MACRO_PATTERN.fullmatch(name)):
            name = "v_" + name
        while name in self.used or _unsafe(name, c, process) or \
                any(n in self.used or _unsafe(n, c) for n in derived(name)):
            name += "_"
        for n in (name, *derived(name)):
            self.take(n)
        if name != _ident(base):
            self.renamed[name] = shown or base
        return name

    def claim_name(self, base: str) -> str:
        """An `ltl` claim's name: Promela's namespace only (a claim is no C identifier), so
        it may share a variable's name but no process's, macro's or other claim's."""
        taken = self.used - set(self.names.values())
        name = base
        while name in taken or _unsafe(name, c=False):
            name += "_"
        self.take(name)
        if name != base:
            self.renamed[name] = base
        return name

    def take(self, name: str) -> str:
        """A name the twin itself declares: a model name must not take it."""
        self.used.add(name)
        return name

    def fresh(self) -> str:
        self.temps += 1
        self.temps_max = max(self.temps_max, self.temps)
        return f"tr_t{self.temps}"

    def var_name(self, sym: m.VarSym, inst: int | None) -> str:
        key = (sym, inst if sym.scope is m.Scope.LOCAL else None)
        if key not in self.names:
            raise KeyError(sym.name)
        return self.names[key]

    def ref(self, name: str) -> str:
        """A global of the state vector: `now.name` in C."""
        return f"now.{name}" if self.c else name

    def ite(self, c: str, a: str, b: str) -> str:
        return f"({c} ? {a} : {b})" if self.c else f"({c} -> {a} : {b})"

    def pc(self, gid: int) -> str:
        return self.ref(f"pc_{self.inst_ident[gid]}")

    def task(self, gid: int) -> str:
        return self.ref(f"task_{self.inst_ident[gid]}")

    def needs_c(self, x) -> bool:
        """Whether an expression reads a u32/u64 variable or computes on such values."""
        if x is None:
            return False
        if isinstance(x, (m.Var, m.Elem, m.LocalOf)) and x.sym in self.c_syms:
            return True
        if isinstance(x, m.TExpr) and _c_type(x.type):
            return True
        return any(self.needs_c(c) for c in _children(x))

    # -- declarations
    def name_processes(self) -> None:
        """The processes' names, then every name the twin makes from them or from the
        properties, before any variable is named (a variable `pc_<process>` yields)."""
        self.take("deadlock")
        for prop in self.program.properties:
            for kind in ("invariant", "final", "assert"):
                self.take(f"{kind}_{_ident(prop.name)}")
        for p in self.program.processes:
            for st in p.steps:
                for o in walk_ops(st.body):
                    if isinstance(o, OAssert):
                        self.take("assert_" + _ident(o.property))
        for proc in ("tr_init", "tr_monitor"):
            self.take(proc)
            self.take("P" + proc)  # pan's macro for the process
        self.inst_ident = [self.unique(n, process=True, derived=lambda ident: (
            f"pc_{ident}", f"task_{ident}", f"flush_{ident}", f"sb_{ident}_a", f"sb_{ident}_v",
            f"P{ident}", f"Pflush_{ident}"))
            for n in self.layout.instance_names]

    def declare(self) -> list[str]:
        out = []
        for sym, inst in self.layout.var_base:
            if sym.scope is m.Scope.LOCAL:
                instance = self.layout.instance_names[self.layout.gid_base[sym.process] + inst]
                self.names[(sym, inst)] = self.unique(f"{instance}_{sym.name}", shown=f"{instance}.{sym.name}")
            else:
                self.names[(sym, inst)] = self.unique(sym.name)
        for sym_inst, base in self.layout.var_base.items():
            sym, inst = sym_inst
            name = self.names[sym_inst]
            t = sym.type
            if sym in self.c_syms:
                out.append(self.c_state(sym, name, base))
                continue
            elem = t.elem if isinstance(t, m.ArrayT) else t
            ptype = self.ptype(elem)
            inits = [self.program.init_choices[base + k] for k in range(t.length if isinstance(t, m.ArrayT) else 1)]
            first = [c[0] for c in inits]
            common = max(set(first), key=first.count)  # the others are set by the chooser
            for k in range(len(first)):
                self.static_init[base + k] = common
            if isinstance(t, m.ArrayT):
                decl = f"{ptype} {name}[{t.length}] = {common}"
            else:
                decl = f"{ptype} {name} = {common}"
            what = f"{sym.name}: {t.describe()}"
            if sym.scope is m.Scope.LOCAL:
                what = f"{self.layout.instance_names[self.layout.gid_base[sym.process] + inst]}.{what}"
            out.append(f"{decl};\t/* {_comment(what)} */")
        for p in self.program.processes:
            for i in range(p.instances):
                gid = self.layout.gid_base[p.name] + i
                ptype = "byte" if len(p.pc_names) <= 256 else "short"
                out.append(f"{ptype} pc_{self.inst_ident[gid]} = 0;\t/* {_comment(p.instance_name(i))}'s "
                           f"program counter: {_comment(', '.join(f'{k} {n}' for k, n in enumerate(p.pc_names)))} */")
        for gid in sorted(self.layout.task_slot):
            out.append(f"bit task_{self.inst_ident[gid]} = 0;\t/* {_comment(self.layout.instance_names[gid])}"
                       "'s task state: 0 RUNNING, 1 INTERRUPTIBLE */")
        for b in self.layout.buffers:
            locs = ", ".join(sorted(f"{self.names[(v, None)]} = {self.address_of(v)}" for v in b.locations))
            out.append(f"byte {self.sb(b)}_a[{b.capacity}] = 0;\t/* {_comment(b.name)}: the addresses "
                       f"(slot + 1) of its stores, oldest first, 0 = empty: {_comment(locs)} */")
            out.append(f"int {self.sb(b)}_v[{b.capacity}] = 0;\t/* ... and their values */")
        return out

    def sb(self, b: StoreBuffer) -> str:
        return self.ref(f"sb_{self.inst_ident[b.gid]}")

    def address_of(self, sym: m.VarSym) -> str:
        """A buffered variable's address as our state layout numbers it (its slot + 1;
        an array: its first element's)."""
        return str(self.layout.slot_of(sym, None) + 1)

    def c_state(self, sym: m.VarSym, name: str, base: int) -> str:
        """A u32/u64 variable: C state in pan's state vector (`now.name`)."""
        t = sym.type
        ctype = _c_type(t.elem if isinstance(t, m.ArrayT) else t)
        n = t.length if isinstance(t, m.ArrayT) else 1
        inits = [self.program.init_choices[base + k] for k in range(n)]
        if any(len(c) != 1 for c in inits) or (n > 1 and any(c[0] != 0 for c in inits)):
            raise SpecError(sym.span, f"'{sym.name}' is a {t.describe()} with several (or, for an array, "
                            "non-zero) initial values: the Promela twin keeps it in C state, which starts "
                            "with one value", "give it one initial value")
        for k in range(n):
            self.static_init[base + k] = inits[k][0]
        dims = f"[{n}]" if isinstance(t, m.ArrayT) else ""
        init = "" if isinstance(t, m.ArrayT) else f' "{inits[0][0]}"'
        return f'c_state "{ctype} {name}{dims}" "Global"{init}\t/* {_comment(sym.name + ": " + t.describe())}, in C */'

    def ptype(self, t: m.Type) -> str:
        if isinstance(t, m.BoolT):
            return "bit"
        if isinstance(t, m.EnumT):
            return "byte"
        if isinstance(t, m.IntT):
            assert t.lo is not None and t.hi is not None  # a declared variable has its range
            if 0 <= t.lo and t.hi <= 255:
                return "byte"
            if -32768 <= t.lo and t.hi <= 32767:
                return "short"
            return "int"
        if isinstance(t, m.BitVecT):
            return "byte" if t.width <= 8 else "int"
        if isinstance(t, m.BitsetT):
            return "byte" if t.size <= 8 else "int"
        if isinstance(t, m.WaitQueueT):
            return "byte" if len(self.layout.instance_names) <= 8 else "int"
        raise TypeError(t)

    # -- expressions (the order and the folding of python.Compiler.expr)
    def simplify(self, x: m.TExpr) -> m.TExpr:
        return simplify(x, self.inst)

    def model_error(self, seq: _Seq, cond: str, kind: str, what: str):
        """`if cond: the model goes wrong` (an assertion named after what went wrong)."""
        name = "model_error_" + _ident(kind)
        self.errors.setdefault(name, what)
        opt = [f"assert({name})"]
        seq.emit(_Block("if", [(f"({cond})", opt), ("else", [])]))

    def expr(self, x: m.TExpr, seq: _Seq) -> str:
        if isinstance(x, m.Const):
            return self.const(x)
        if isinstance(x, (m.Var, m.Elem)):
            return self.load(x, seq)
        if isinstance(x, m.LocalOf):
            return self.local_of(x, seq)
        if isinstance(x, m.SelfE):
            return str(self.inst)
        if isinstance(x, m.Bound):
            raise SpecError(x.span, "a quantifier over a range that is not constant cannot be translated")
        if isinstance(x, m.Conv) and not isinstance(x.type, m.BitVecT):  # a signed pattern's value
            from_t = x.operand.type
            assert isinstance(from_t, m.BitVecT)
            self.check_bv(from_t, x.span)
            h = from_t.half
            return f"(({self.expr(x.operand, seq)} ^ {h}) - {h})"
        if isinstance(x, m.Conv):
            assert isinstance(x.type, m.BitVecT)  # (the other conversion is above)
            self.check_bv(x.type, x.span)
            a = self.expr(x.operand, seq)
            if fits_bv(x.operand, x.type):
                return a
            src = x.operand.type
            if isinstance(src, m.BitVecT) and src.signed:  # sign-extend the narrower pattern
                self.check_bv(src, x.span)
                a = f"(({a} ^ {src.half}) - {src.half})"
            return f"(({_c_type(x.type)})({a}))" if _c_type(x.type) else f"({a} & {x.type.mask})"
        if isinstance(x, m.Un):
            a = self.expr(x.operand, seq)
            if _c_type(x.type):  # C's unsigned arithmetic wraps as ours does
                return f"(({_c_type(x.type)})({x.op}({a})))"
            if isinstance(x.type, m.BitVecT):
                self.check_bv(x.type, x.span)
                return f"((-{a}) & {x.type.mask})" if x.op == "-" else f"({a} ^ {x.type.mask})"
            return {"!": f"(!{a})", "-": f"(-{a})", "~": f"(~{a})"}[x.op]
        if isinstance(x, m.Bin):
            a = self.expr(x.left, seq)
            b = self.expr(x.right, seq)
            if _c_type(x.type):  # in C: unsigned arithmetic modulo 2**width, as ours (model.bv_binop)
                assert isinstance(x.type, m.BitVecT)
                ct, w = _c_type(x.type), x.type.width
                if x.op in ("+", "-", "*"):
                    return f"(({ct})({a} {x.op} {b}))"
                if x.op in ("&", "|", "^"):
                    return f"({a} {x.op} {b})"
                if x.op in ("/", "%"):
                    if not (isinstance(x.right, m.Const) and x.right.value != 0):
                        raise SpecError(x.span, "a u32/u64 division by a computed value cannot be translated "
                                        "(its division-by-zero check would need a statement)")
                    return f"({a} {x.op} {b})"
                return f"({b} < {w} ? (({ct})({a} {x.op} {b})) : 0)"
            if isinstance(x.type, m.BitVecT):
                self.check_bv(x.type, x.span)
                w, mask = x.type.width, x.type.mask
                if x.op == "*" and w > 8:
                    raise SpecError(x.span, f"a u{w} product can exceed Promela's 32-bit int",
                                    "the Promela twin multiplies unsigned values up to u8")
                if x.op in ("+", "-", "*"):
                    return f"(({a} {x.op} {b}) & {mask})"
                if x.op in ("&", "|", "^"):
                    return f"({a} {x.op} {b})"
                if x.type.signed and x.op in ("/", "%", ">>"):
                    h = x.type.half
                    sa, sb = f"(({a} ^ {h}) - {h})", f"(({b} ^ {h}) - {h})"
                    if x.op == ">>":  # arithmetic; a count of width or more leaves the sign
                        return self.ite(f"{b} < {w}", f"(({sa} >> {b}) & {mask})", self.ite(f"{a} >= {h}", str(mask), "0"))
                    self.model_error(seq, f"{b} == 0", "division_by_zero", "division by zero")
                    return f"(({sa} {x.op} {sb}) & {mask})"  # C truncates toward zero, as model.c_div
                if x.op in ("/", "%"):
                    self.model_error(seq, f"{b} == 0", "division_by_zero", "division by zero")
                    return f"({a} {x.op} {b})"
                if x.op == "<<":
                    return self.ite(f"{b} < {w}", f"(({a} << {b}) & {mask})", "0")
                return self.ite(f"{b} < {w}", f"({a} >> {b})", "0")
            if x.op in ("/", "%"):
                # C, like our _div, truncates toward zero
                self.model_error(seq, f"{b} == 0", "division_by_zero", "division by zero")
                return f"({a} {x.op} {b})"
            if x.op in ("<<", ">>"):
                rt = x.right.type
                if not (isinstance(x.right, m.Const) and 0 <= x.right.value <= 30 or isinstance(rt, m.IntT)
                        and rt.lo is not None and rt.hi is not None and rt.hi <= 30):
                    raise SpecError(x.span, "a shift whose count may exceed 30 cannot be translated faithfully "
                                    "to Promela's 32-bit int", "give the count a range within 0..30")
                if not (isinstance(x.right, m.Const) or isinstance(rt, m.IntT) and rt.lo is not None and rt.lo >= 0):
                    self.model_error(seq, f"{b} < 0", "shift_count", "a negative shift count")
            if x.op == "->":
                return f"(!{a} || {b})"
            lt = x.left.type
            if x.op in ("<", "<=", ">", ">=") and isinstance(lt, m.BitVecT) and lt.signed:
                self.check_bv(lt, x.span)  # two's complement order: flip the sign bits
                return f"(({a} ^ {lt.half}) {x.op} ({b} ^ {lt.half}))"
            return f"({a} {x.op} {b})"
        if isinstance(x, m.Ite):
            c = self.expr(x.cond, seq)
            return self.ite(c, self.expr(x.then, seq), self.expr(x.orelse, seq))
        if isinstance(x, m.At):
            return self.at(x, seq)
        if isinstance(x, m.Quant):
            x = self.simplify(x)  # unrolled
            return self.expr(x, seq)
        if isinstance(x, m.Builtin):
            return self.builtin(x, seq)
        raise TypeError(x)

    def const(self, x: m.Const) -> str:
        if isinstance(x.type, m.EnumT) and 0 <= x.value < len(x.type.members) and not self.c:
            return self.enum_names.get((x.type.name, x.value), str(x.value))
        if isinstance(x.type, m.BoolT):
            return ("1" if x.value else "0") if self.c else ("true" if x.value else "false")
        if self.c and not INT_MIN <= x.value <= INT_MAX:
            return f"{int(x.value)}ULL"
        return str(int(x.value))

    def check_bv(self, t: m.BitVecT, span: Span):
        if t.signed and t.width > MAX_BV_WIDTH:
            raise SpecError(span, f"{t.describe()} arithmetic cannot be translated to the Promela twin",
                            f"the Promela twin translates signed types up to s{MAX_BV_WIDTH}")
        if t.width > MAX_BV_WIDTH and not self.c:
            raise SpecError(span, f"u{t.width} arithmetic cannot be translated faithfully to Promela's "
                            "32-bit signed int", "the Promela twin supports unsigned types up to u16")

    def index(self, sym: m.VarSym, idx: m.TExpr, seq: _Seq) -> str:
        t = sym.type
        assert isinstance(t, m.ArrayT)
        name = self.ref(self.var_name(sym, self.inst))
        if isinstance(idx, m.Const):
            if not t.lo <= idx.value <= t.hi:
                self.model_error(seq, "true", "index", f"an index outside {sym.name}")
                return f"{name}[0]"
            return f"{name}[{idx.value - t.lo}]"
        code = self.expr(idx, seq)
        it = idx.type
        if not (isinstance(it, m.IntT) and it.lo is not None and it.hi is not None
                and t.lo <= it.lo and it.hi <= t.hi):
            tmp = self.fresh()
            seq.emit(f"{tmp} = {code}")
            self.model_error(seq, f"{tmp} < {t.lo} || {tmp} > {t.hi}", "index", f"an index outside {sym.name}")
            code = tmp
        return f"{name}[{code} - {t.lo}]" if t.lo else f"{name}[{code}]"

    def buffered(self, target: m.TExpr) -> StoreBuffer | None:
        """The store buffer a plain access to `target` goes through (python.Compiler.buffered;
        the decision is ir.StoreBuffer.holds)."""
        return self.buffer if self.buffer is not None and not self.direct and self.buffer.holds(target) else None

    def slot_code(self, x: m.Var | m.Elem, seq: _Seq) -> str:
        """`x`'s address (slot + 1) as code; `lvalue` has already checked a computed index."""
        base = self.layout.slot_of(x.sym, None) + 1
        if isinstance(x, m.Var):
            return str(base)
        t = x.sym.type
        assert isinstance(t, m.ArrayT)
        if isinstance(x.index, m.Const):
            return str(base + x.index.value - t.lo)
        return f"({base - t.lo} + {self.expr(x.index, seq)})"

    def load(self, x: m.Var | m.Elem, seq: _Seq) -> str:
        """The newest entry of this CPU's buffer for that address, else memory."""
        code = self.lvalue(x, seq)
        buf = self.buffered(x)
        if buf is None:
            return code
        addr = self.slot_code(x, seq)
        sb = self.sb(buf)
        for k in range(buf.capacity):  # oldest first, so that the newest ends up outermost
            code = self.ite(f"{sb}_a[{k}] == {addr}", f"{sb}_v[{k}]", code)
        return code

    def lvalue(self, x: m.Var | m.Elem, seq: _Seq) -> str:
        if isinstance(x, m.Var):
            return self.ref(self.var_name(x.sym, self.inst))
        return self.index(x.sym, x.index, seq)

    def instance_choice(self, process: str, idx: m.TExpr | None, seq: _Seq, of) -> str:
        """`of(gid)` for the instance `idx` of `process` (a choice when idx is computed)."""
        proc = next(p for p in self.program.processes if p.name == process)
        base = self.layout.gid_base[process]
        if idx is None:
            return of(base)
        if isinstance(idx, m.Const) and 0 <= idx.value < proc.instances:
            return of(base + idx.value)
        code = self.expr(idx, seq)
        self.model_error(seq, f"{code} < 0 || {code} > {proc.instances - 1}", "index",
                         f"an instance of {process} that does not exist")
        out = "0"
        for i in reversed(range(proc.instances)):
            out = self.ite(f"{code} == {i}", of(base + i), out)
        return out

    def at(self, x: m.At, seq: _Seq) -> str:
        proc = next(p for p in self.program.processes if p.name == x.process)
        pcs = sorted(proc.label_pcs.get(x.label, ()))

        def of(gid: int) -> str:
            if not pcs:
                return "0" if self.c else "false"
            pc = self.pc(gid)
            return "(" + " || ".join(f"{pc} == {k}" for k in pcs) + ")"

        return self.instance_choice(x.process, x.index, seq, of)

    def local_of(self, x: m.LocalOf, seq: _Seq) -> str:
        base = self.layout.gid_base[x.process]
        if x.sym.task:  # `P.state`: the task-state global
            return self.instance_choice(x.process, x.index, seq, lambda gid: self.task(gid))
        return self.instance_choice(x.process, x.index, seq, lambda gid: self.ref(self.names[(x.sym, gid - base)]))

    def builtin(self, c: m.Builtin, seq: _Seq) -> str:
        """A kernel primitive's call (semantics/lower.py decides what is read, checked
        and written)."""
        return _Spelled(self, seq).builtin(c) or ""  # "": no value

    # -- stores (python.Compiler.store_code)
    def store(self, target: m.TExpr, value: m.TExpr, seq: _Seq):
        code = self.expr(value, seq)
        self.store_code(target, code, value, seq)

    def store_code(self, target: m.TExpr, code: str, value: m.TExpr | None, seq: _Seq):
        assert isinstance(target, (m.Var, m.Elem))  # what a store can write
        addr = self.lvalue(target, seq)
        t = target.type
        needs = store_needs(t, value)
        if needs.to_bool:
            code = f"({code} -> 1 : 0)"
        if needs.wrap:
            assert isinstance(t, m.BitVecT)  # only a C integer wraps
            self.check_bv(t, target.span)
            src = value.type if value is not None else None
            if isinstance(src, m.BitVecT) and src.signed and src.width < t.width:
                code = f"(((({code}) ^ {src.half}) - {src.half}) & {t.mask})"
            else:
                code = f"(({code}) & {t.mask})"
        check = needs.check
        if check:
            tmp = self.fresh()
            seq.emit(f"{tmp} = {code}")
            name = target.sym.name
            self.model_error(seq, f"{tmp} < {check[0]} || {tmp} > {check[1]}", f"range_{name}",
                             f"a value outside the range of {name} ({check[0]}..{check[1]})")
            code = tmp
        buf = self.buffered(target)
        if buf is None:
            seq.emit(f"{addr} = {code}")
            return
        # tso: the store goes into this CPU's buffer; memory keeps the old value until a flush
        if not re.fullmatch(r"-?\w+", code):
            tmp = self.fresh()
            seq.emit(f"{tmp} = {code}")
            code = tmp
        where = self.slot_code(target, seq)
        sb = self.sb(buf)
        rest: list = [f"goto {self.failed_label}"]  # full: the step waits for a flush (no successor)
        for k in reversed(range(buf.capacity)):
            rest = [_Block("if", [(f"({sb}_a[{k}] == 0)", [f"{sb}_a[{k}] = {where}", f"{sb}_v[{k}] = {code}"]),
                                  ("else", rest)])]
        seq.emit(rest[0])

    # -- operations (python.Compiler.op)
    def do_loop(self, loop: tuple, ops, seq: _Seq, head=None, tail=None) -> None:
        """`ops` inside `do :: true -> ... od`, with `loop` (kind, label) the target of
        their `break` and `continue`; `head` and `tail` add to the body before and after."""
        self.loops.append(loop)
        body = seq.push()
        if head is not None:
            head(body)
        self.ops(ops, seq)
        if tail is not None:
            tail(body)
        seq.pop()
        self.loops.pop()
        seq.emit(_Block("do", [("true", body)]))

    def ops(self, ops, seq: _Seq):
        for op in ops:
            self.op(op, seq)

    def op(self, op, seq: _Seq):
        if isinstance(op, OGoto):
            assert self.proc is not None and self.inst is not None  # a step's operation
            gid = self.layout.gid_base[self.proc.name] + self.inst
            seq.emit(f"{self.pc(gid)} = {op.pc}\t/* -> {_comment(self.proc.pc_names[op.pc])} */")
            if self.failed_label:
                seq.emit(f"goto {self.done_label}")
        elif isinstance(op, OAssign):
            target, value = self.simplify(op.target), self.simplify(op.value)
            if self.needs_c(target) or self.needs_c(value):
                self.c_assign(target, value, seq)
            else:
                self.store(target, value, seq)
        elif isinstance(op, OEval):
            if self.needs_c(op.call):
                raise SpecError(op.call.span, f"{op.call.name}() on u32/u64 values cannot be translated to Promela")
            call = self.simplify(op.call)
            assert isinstance(call, m.Builtin)  # folding keeps a call a call
            self.builtin(call, seq)  # for its side effects; the value is unused
        elif isinstance(op, OIf):
            cond = self.simplify(op.cond)
            if isinstance(cond, m.Const):
                self.ops(op.then if cond.value else op.orelse, seq)
                return
            c = self.guard(cond, seq)
            seq.push()
            self.ops(op.then, seq)
            then = seq.pop()
            seq.push()
            self.ops(op.orelse, seq)
            orelse = seq.pop()
            seq.emit(_Block("if", [(c, then), ("else", orelse)]))
        elif isinstance(op, OWhile):
            self.labels += 1
            top = f"tr_loop{self.labels}"

            def head(body):
                body.append(f"{top}: skip")
                c = self.guard(self.simplify(op.cond), seq, negate=True)
                seq.emit(_Block("if", [(c, ["break"]), ("else", [])]))

            self.do_loop(("while", top), op.body, seq, head)
        elif isinstance(op, OBreak):
            seq.emit("break")
        elif isinstance(op, OContinue):
            kind, label = self.loops[-1] if self.loops else ("once", None)
            seq.emit(f"goto {label}" if kind == "while" else "break")
        elif isinstance(op, OInline):  # a loop run once, so that its `return` can `break`
            self.do_loop(("once", None), op.body, seq, tail=lambda body: body.append("break"))
        elif isinstance(op, OReturn):
            seq.emit("break")
        elif isinstance(op, OAssert):
            cond = self.simplify(op.cond)
            name = "assert_" + _ident(op.property)
            if isinstance(cond, m.Const):
                if not cond.value:
                    seq.emit(f"assert({name})")
                    seq.emit(f"goto {self.failed_label}")
                return
            c = self.guard(cond, seq, negate=True)
            seq.emit(_Block("if", [(c, [f"assert({name})", f"goto {self.failed_label}"]), ("else", [])]))
        elif isinstance(op, OBarrier):
            pass  # no effect under sequential consistency
        else:
            raise TypeError(op)

    def pure(self, x: m.TExpr) -> str:
        """A property's condition: a pure expression (no statements can precede it)."""
        seq = _Seq(self)
        code = self.expr(self.simplify(x), seq)
        if seq.stack[0]:
            raise SpecError(x.span, "a property with a computed index (which could go wrong) cannot be "
                            "translated to Promela", "index with a quantifier over the array's range instead")
        return code

    # -- steps
    def enabled(self, p: ProcessIR, inst: int, st: Step, pc_value: int, c: bool = False) -> str | None:
        """The step's enabling condition as a pure expression (None: never enabled); in C
        (without the `c_expr` around it) when asked or when its guard needs C."""
        self.proc, self.inst = p, inst
        if not c and st.guard is not None and self.needs_c(self.simplify(st.guard)):
            inner = self.enabled(p, inst, st, pc_value, c=True)
            return None if inner is None else f"c_expr {{ {inner} }}"
        self.c = c
        try:
            return self._enabled(p, inst, st, pc_value)
        finally:
            self.c = False

    def _enabled(self, p: ProcessIR, inst: int, st: Step, pc_value: int) -> str | None:
        gid = self.layout.gid_base[p.name] + inst
        parts = [self.ref("tr_chosen")] if self.gated else []
        parts.append(f"{self.pc(gid)} == {pc_value}")
        self.buffer = self.layout.buffer_of(gid) if self.model.memory == "tso" else None
        if self.buffer is not None and st.fence:
            parts.append(f"{self.sb(self.buffer)}_a[0] == 0")  # a fence waits for an empty buffer
        if st.kind is StepKind.SCHEDULE:
            parts.append(f"{self.task(gid)} == 0")
        if st.guard is not None:
            g = self.simplify(st.guard)
            if isinstance(g, m.Const):
                if not g.value:
                    return None
            else:
                seq = _Seq(self)
                code = self.expr(g, seq)
                if seq.stack[0]:
                    # a guard whose evaluation can go wrong (a computed index): its checks
                    # need statements, which a guard cannot have
                    raise SpecError(st.span, "a guard with a computed index or division cannot be translated "
                                    "to a Promela d_step guard", "compute the index in a step before the await")
                parts.append(f"({code})" if self.c else code)
        return " && ".join(parts)

    def guard(self, x: m.TExpr, seq: _Seq, negate: bool = False) -> str:
        """A condition as an option's guard: Promela, or `c_expr { ... }` on u32/u64 values."""
        if self.needs_c(x):
            code = self.cexpr(x, "a condition")
            return f"c_expr {{ {'!' if negate else ''}({code}) }}"
        code = self.expr(x, seq)
        return f"(!{code})" if negate else f"({code})"

    def cexpr(self, x: m.TExpr, what: str) -> str:
        """A pure expression in C (no statements may precede it)."""
        self.c = True
        try:
            seq = _Seq(self)
            code = self.expr(x, seq)
        finally:
            self.c = False
        if seq.stack[0]:
            raise SpecError(x.span, f"{what} on u32/u64 values with a computed index or a check that needs a "
                            "statement cannot be translated to Promela")
        return code

    def c_assign(self, target: m.TExpr, value: m.TExpr, seq: _Seq):
        """`target = value` in C (python.Compiler.store_code: a C cast is the conversion
        modulo 2**width; a range check is a model error)."""
        code = self.cexpr(value, "an assignment")
        tgt = self.cexpr(target, "an assignment")
        assert isinstance(target, (m.Var, m.Elem))  # what an assignment writes
        t = target.type
        if _c_type(t):
            body = f"{tgt} = ({_c_type(t)})({code});"
        elif isinstance(t, m.BoolT):
            body = f"{tgt} = ({code}) ? 1 : 0;"
        elif isinstance(t, m.IntT) and t.lo is not None and not fits(value, t):
            unsigned = isinstance(value.type, m.BitVecT)
            name = "model_error_" + _ident(f"range_{target.sym.name}")
            self.errors.setdefault(name, f"a value outside the range of {target.sym.name} ({t.lo}..{t.hi})")
            low = f"tr_c < {t.lo} || " if not (unsigned and t.lo <= 0) else ""
            body = (f"{{ {'uint64_t' if unsigned else 'int64_t'} tr_c = ({code}); if ({low}tr_c > {t.hi}) "
                    f"uerror(\"assertion violated {name}\"); {tgt} = tr_c; }}")
        elif isinstance(t, (m.IntT, m.EnumT)):
            body = f"{tgt} = ({code});"
        else:
            raise SpecError(target.span, f"a {t.describe()} assigned from u32/u64 values cannot be translated")
        seq.emit(f"c_code {{ {body} }}")

    def step_option(self, p: ProcessIR, inst: int, st: Step, pc_value: int) -> list[str] | None:
        cond = self.enabled(p, inst, st, pc_value)
        if cond is None:
            return None
        self.temps = 0
        asserts = any(isinstance(o, OAssert) for o in walk_ops(st.body))
        buffered = self.buffer is not None and any(True for _ in plain_stores(st))
        self.failed_label = f"tr_failed{st.uid}" if asserts or buffered else None
        self.done_label = f"tr_done{st.uid}"
        seq = _Seq(self)
        saved = []
        if self.failed_label:  # a failed assert or a full store buffer: no successor, undo the writes
            saved = self.save_writes(p, inst, st, seq)
        # a locked `atomic` block is one LOCK-prefixed instruction: memory, not the buffer
        self.direct = st.kind is StepKind.ATOMIC and st.fence
        self.ops(st.body, seq)
        self.direct = False
        body = seq.stack[0]
        if self.failed_label:
            body.append(f"{self.failed_label}: " + "; ".join(f"{var} = {copy}" for var, copy in saved))
            body.append(f"{self.done_label}: skip")
        if self.temps:  # scratch values are in pan's state vector (not `hidden`: see translate)
            resets = "; ".join(f"tr_t{k} = 0" for k in range(1, self.temps + 1))
            body.append(f"{resets}\t/* scratch values back to 0 */")
        self.failed_label = None
        where = f"{st.span.file}:{st.span.line}"
        lines = [f"\t:: d_step {{ /* {_comment(where)}  {_comment(st.text)[:90]} */"]
        lines.append(f"\t\t{cond} ->")
        lines += _render(body, 2)
        lines.append("\t   }")
        return lines

    def save_writes(self, p, inst, st, seq: _Seq) -> list[tuple[str, str]]:
        """Copy everything the step may write to hidden variables first (a failed assert
        restores them): every variable it assigns or passes to a writing primitive, the
        wait queues and task states, and the pc."""
        self.proc, self.inst = p, inst
        syms: list[m.VarSym | str] = []  # "tasks": every task state and wait queue
        for o in walk_ops(st.body):
            if isinstance(o, OAssign):
                assert isinstance(o.target, (m.Var, m.Elem))
                syms.append(o.target.sym)
            xs = (o.call,) if isinstance(o, OEval) else (o.value,) if isinstance(o, OAssign) else \
                (o.cond,) if isinstance(o, (OIf, OWhile, OAssert)) else ()
            for x in xs:
                for b in builtins_in(x):
                    if BUILTINS[b.name].effect and b.args:
                        syms += [arg.sym for arg in b.args if isinstance(arg, (m.Var, m.Elem))]
                    if BUILTINS[b.name].cls in (Cls.WQ_ADD, Cls.WQ_REMOVE, Cls.WQ_WAKE):
                        syms.append("tasks")
        out = []
        seen = set()
        for sym in syms:
            if isinstance(sym, str):  # "tasks"
                names = [self.task(g) for g in sorted(self.layout.task_slot)]
            else:
                if sym in self.c_syms:
                    raise SpecError(st.span, f"a step that may fail (an assert) and writes the {sym.type.describe()} "
                                    f"'{sym.name}' cannot be translated: its undo would need C copies")
                name = self.var_name(sym, self.inst)
                names = [f"{name}[{k}]" for k in range(sym.type.length)] if isinstance(sym.type, m.ArrayT) \
                    else [name]
            for nm in names:
                if nm not in seen:
                    seen.add(nm)
                    out.append(nm)
        out.append(self.pc(self.layout.gid_base[p.name] + inst))
        if self.buffer is not None:
            sb = self.sb(self.buffer)
            out += [f"{sb}_{part}[{k}]" for k in range(self.buffer.capacity) for part in "av"]
        pairs = []
        for nm in out:
            copy = self.fresh()
            seq.emit(f"{copy} = {nm}")
            pairs.append((nm, copy))
        return pairs


class _Spelled(TextSpelling[str]):
    """The core operations in Promela: a location is its variable's name."""

    owner: _Translator

    def __init__(self, owner: _Translator, seq: _Seq):
        super().__init__(owner)
        self.seq = seq

    def value(self, x: m.TExpr) -> str:
        return self.owner.expr(x, self.seq)

    def fresh(self) -> str:
        return self.owner.fresh()

    def assign(self, tmp: str, code: str) -> None:
        self.seq.emit(f"{tmp} = {code}")

    def paren(self, code: str) -> str:
        return f"({code})"

    def store(self, loc: m.TExpr, value: m.TExpr) -> None:
        self.owner.store(loc, value, self.seq)

    def store_code(self, loc: m.TExpr, code: str) -> None:
        self.owner.store_code(loc, code, None, self.seq)

    def place(self, loc: m.TExpr) -> str:
        assert isinstance(loc, (m.Var, m.Elem))  # a place is a variable or an element
        return self.owner.lvalue(loc, self.seq)

    def task(self, gid: int) -> str:
        return self.owner.task(gid)

    def read(self, place: str) -> str:
        return place

    def write(self, place: str, code: str, const: int | None = None) -> None:
        self.seq.emit(f"{place} = {code}")

    def note(self, text: str) -> None:
        pass  # the twin's steps carry their source line instead

    def body(self, of: Callable[[], None]) -> list:
        self.seq.push()
        of()
        return self.seq.pop()

    def when(self, cond: str, then: Callable[[], None], note: str | None = None) -> None:
        self.seq.emit(_Block("if", [(f"({cond})", self.body(then)), ("else", [])]))

    def first(self, cases: list[tuple[str, str | None, Callable[[], None]]]) -> None:
        opts = [(f"({cond})", self.body(of)) for cond, _, of in cases]
        rest: list = []  # `if ... elif ...` as nested ifs
        for guard, stmts in reversed(opts):
            rest = [_Block("if", [(guard, stmts), ("else", rest)])]
        for st in rest:
            self.seq.emit(st)

    def bit_in_set(self, nr: str, bits: m.TExpr) -> str:
        assert isinstance(bits.type, m.BitsetT)
        self.check_bit(nr, None, bits.type.size)
        return nr

    def check_bit(self, nr: str, place: str | None, size: int) -> None:
        self.owner.model_error(self.seq, f"{nr} < 0 || {nr} >= {size}", "bit_number", "a bit number outside its set")

    def fits(self, t: m.BitVecT, span: Span) -> None:
        self.owner.check_bv(t, span)

    def wrap(self, code: str, t: m.BitVecT) -> str:
        return f"({code}) & {t.mask}"

    def min_max(self, a: str, b: str, is_min: bool, signed: m.BitVecT | None) -> str:
        x, y = (f"({a} ^ {signed.half})", f"({b} ^ {signed.half})") if signed is not None else (a, b)
        return self.owner.ite(f"{x} <= {y}" if is_min else f"{x} >= {y}", a, b)

    def abs(self, x: str, signed: m.BitVecT | None) -> str:
        if signed is not None:
            return self.owner.ite(f"{x} >= {signed.half}", f"((-{x}) & {signed.mask})", x)
        return self.owner.ite(f"{x} < 0", f"(-{x})", x)


def _chooser(t: _Translator) -> list[str] | None:
    """Several initial states: one transition from the state before the choice to each."""
    multi = [(k, c) for k, c in enumerate(t.program.init_choices)
             if len(c) > 1 or k in t.static_init and c[0] != t.static_init[k]]
    if not multi:
        return None
    slot_name = {}
    for (sym, inst), base in t.layout.var_base.items():
        name = t.names[(sym, inst)]
        if isinstance(sym.type, m.ArrayT):
            for k in range(sym.type.length):
                slot_name[base + k] = f"{name}[{k}]"
        else:
            slot_name[base] = name
    lines = ["/* Initial values that a declaration cannot give (`any`, or arrays whose elements",
             " * start differently): the chooser sets them in one step, and the processes wait for",
             " * it. pan stores one state more than timerace: the one before the choice. */",
             "bit tr_chosen = 0;", "", "active proctype tr_init()", "{", "\tif"]
    import itertools

    count = 1
    for _k, c in multi:
        count *= len(c)
    if count > 4096:
        raise SpecError(t.model.processes[0].span, f"`any` gives {count:,} initial states: too many for the "
                        "Promela twin's chooser (at most 4,096)")
    for values in itertools.product(*(c for _k, c in multi)):
        assigns = "; ".join(f"{slot_name[k]} = {v}" for (k, _c), v in zip(multi, values))
        lines.append(f"\t:: d_step {{ {assigns}; tr_chosen = 1 }}")
    lines += ["\tfi", "}"]
    return lines


def translate(program: Program) -> str:
    """The Promela twin of one variant (raises SpecError if it has none)."""
    try:
        return _translate(program)
    except SpecError as e:
        raise e.with_code("TR500") from None


def _translate(program: Program) -> str:
    refuse(program)
    t = _Translator(program)
    # enum members as macros, named as in the model
    enum_lines = []
    enums = {}
    for sl in program.layout.slots:
        ty = sl.type
        if isinstance(ty, m.EnumT):
            enums[ty.name] = ty
        if isinstance(ty, m.BitsetT) and ty.elem is not None:
            enums[ty.elem.name] = ty.elem
    t.name_processes()
    for name, ty in enums.items():
        for k, member in enumerate(ty.members):
            macro = t.unique(member, c=False)
            t.enum_names[(name, k)] = macro
            enum_lines.append(f"#define {macro} {k}\t/* {_comment(name)} */")
    decls = t.declare()
    chooser = _chooser(t)
    procs: list[str] = []
    gate = "tr_chosen && " if chooser else ""
    t.gated = bool(chooser)
    steps: list[tuple[ProcessIR, int, Step, int]] = []  # every step that can ever be enabled
    for p in program.processes:
        for i in range(p.instances):
            gid = program.layout.gid_base[p.name] + i
            fair = "" if not p.unfair else " /* declared `unfair`: SPIN's -f treats it as fair */"
            procs.append(f"active proctype {t.inst_ident[gid]}()\t/* {_comment(p.instance_name(i))}{fair} */")
            procs.append("{")
            procs.append("end:\tdo")
            options = len(procs)
            for pc_value, at in enumerate(p.steps_at):
                for st in at:
                    lines = t.step_option(p, i, st, pc_value)
                    if lines is None:
                        continue
                    steps.append((p, i, st, pc_value))
                    procs += lines
            if len(procs) == options:  # no step at all (its code folded away): it rests at its end
                procs.append("\t:: false")
            procs.append("\tod")
            procs.append("}")
            procs.append("")
    # tso: one process per store buffer moves its oldest store to memory
    t.buffer = None
    for b in program.layout.buffers:
        sb = t.sb(b)
        writes = []
        for sym in sorted(b.locations, key=lambda v: program.layout.slot_of(v, None)):
            base = program.layout.slot_of(sym, None) + 1
            name = t.names[(sym, None)]
            if isinstance(sym.type, m.ArrayT):
                writes += [(f"({sb}_a[0] == {base + k})", [f"{name}[{k}] = {sb}_v[0]"])
                           for k in range(sym.type.length)]
            else:
                writes.append((f"({sb}_a[0] == {base})", [f"{name} = {sb}_v[0]"]))
        shift = [f"{sb}_{part}[{k}] = {sb}_{part}[{k + 1}]" for k in range(b.capacity - 1) for part in "av"]
        shift += [f"{sb}_a[{b.capacity - 1}] = 0", f"{sb}_v[{b.capacity - 1}] = 0"]
        procs.append(f"active proctype flush_{t.inst_ident[b.gid]}()\t/* the oldest store in "
                     f"{_comment(b.name)} reaches memory; the others move up */")
        procs.append("{")
        procs.append("end:\tdo")
        procs.append("\t:: d_step {")
        procs.append(f"\t\t{gate}{sb}_a[0] != 0 ->")
        procs += _render([_Block("if", writes)] + shift, 2)
        procs.append("\t   }")
        procs.append("\tod")
        procs.append("}")
        procs.append("")
    # properties
    t.proc, t.inst = None, None
    checks: list[tuple[str, str, bool, str]] = []  # (assert name, violated-condition, in C, comment)
    ltl: list[tuple[str, str, str]] = []
    skipped: list[str] = []
    in_c = any(st.guard is not None and t.needs_c(t.simplify(st.guard)) for _p, _i, st, _k in steps)

    def at_end(c: bool) -> str:
        """Every process at a valid end (and every store buffer drained)."""
        t.c = c
        ends = []
        for p in program.processes:
            for i in range(p.instances):
                pc = t.pc(program.layout.gid_base[p.name] + i)
                ends.append("(" + " || ".join(f"{pc} == {k}" for k in sorted(p.end_pcs)) + ")"
                            if p.end_pcs else "0")
        ends += [f"{t.sb(b)}_a[0] == 0" for b in program.layout.buffers]
        t.c = False
        return " && ".join(ends) or "1"

    def anyone(c: bool, moves: bool = False) -> str:
        """Some step (or flush) enabled; with `moves`, a `stutter` step does not count."""
        conds = [f"({t.enabled(p, i, st, k, c=c)})" for p, i, st, k in steps
                 if not (moves and st.kind is StepKind.STUTTER)]
        t.c = c
        conds += [f"({t.sb(b)}_a[0] != 0)" for b in program.layout.buffers]
        t.c = False
        return " ||\n\t\t   ".join(conds) or "0"

    for prop in program.properties:
        pname = _ident(prop.name)
        if prop.kind in (m.PropertyKind.INVARIANT, m.PropertyKind.FINAL):
            assert prop.cond is not None
            c_mode = t.needs_c(t.simplify(prop.cond))
            c = t.cexpr(t.simplify(prop.cond), "a property") if c_mode else t.pure(prop.cond)
            if prop.kind is m.PropertyKind.INVARIANT:
                checks.append((f"invariant_{pname}", f"!{c}", c_mode, f"invariant {prop.name}"))
            else:
                checks.append((f"final_{pname}", f"({at_end(c_mode)}) && !({anyone(c_mode, moves=True)}) && !{c}",
                               c_mode, f"final {prop.name}: checked where every process is at a valid end "
                               "and no step is enabled"))
        elif prop.kind is m.PropertyKind.REACHABLE:
            # searched for as a violation, as the explicit engine does: pan's "assertion
            # violated reachable_<name>" means the state was reached (our holds)
            assert prop.cond is not None
            c_mode = t.needs_c(t.simplify(prop.cond))
            c = t.cexpr(t.simplify(prop.cond), "a property") if c_mode else t.pure(prop.cond)
            checks.append((f"reachable_{pname}", f"{c}", c_mode,
                           f"reachable {prop.name}: violated here means reached"))
        elif prop.kind is m.PropertyKind.DEADLOCK:
            checks.append(("deadlock", f"!({at_end(in_c)}) && !(\n\t\t   {anyone(in_c)})", in_c,
                           "deadlock: no step enabled, some process not at a valid end"))
        elif prop.kind is m.PropertyKind.LIVENESS:
            fa = next((fa for p in program.processes for fa in p.fair_actions), None)
            if fa is not None:
                raise SpecError(fa.span, f"liveness property {prop.name}: the Promela twin cannot express "
                                f"`{'strongly ' if fa.strong else ''}fair` on one action: SPIN's weak fairness (-f) "
                                "is per process",
                                "the explicit engine checks it (`check` without --promela); a twin of a variant "
                                "without liveness properties keeps only the safety checks, where `fair` changes nothing")
            assert prop.goal is not None
            if t.needs_c(t.simplify(prop.goal)) or prop.trigger is not None and t.needs_c(t.simplify(prop.trigger)):
                raise SpecError(prop.span, f"liveness property {prop.name} reads u32/u64 values, which an ltl "
                                "claim cannot (c_expr is not allowed there)")
            goal = t.pure(prop.goal)
            if prop.trigger is not None:
                trig = t.pure(prop.trigger)
                f = f"[] (({'tr_chosen && ' if chooser else ''}{trig}) -> <> {goal})"
            else:
                f = f"[] <> {goal}"
            ltl.append((t.claim_name(pname), f, prop.name))
        elif prop.kind is m.PropertyKind.ASSERT:
            pass  # in the steps
        else:
            skipped.append(f"{prop.kind.value} {prop.name}")
    header = _header(program, ltl, skipped, bool(chooser), t)
    out = [header, ""]
    if t.c_syms:
        out += ["c_decl { \\#include <stdint.h> }\t/* u32/u64 variables live in C: pan's `now.<name>` */", ""]
    out += enum_lines
    if enum_lines:
        out.append("")
    out += decls
    names = [c[0] for c in checks] + sorted(t.errors) + \
        sorted({"assert_" + _ident(o.property) for p in program.processes for st in p.steps
                for o in walk_ops(st.body) if isinstance(o, OAssert)})
    out.append("")
    # Not `hidden`: pan refuses breadth-first search (-DBFS) on a model with hidden
    # variables. A name is always 0 and a scratch value is 0 again at the end of every step,
    # so in pan's state vector they add no state.
    out.append("/* Always 0: each names a property in pan's \"assertion violated <name>\" */")
    for nm in names:
        what = next((c[3] for c in checks if c[0] == nm), t.errors.get(nm, nm))
        out.append(f"byte {nm} = 0;\t/* {_comment(what)} */")
    if t.temps_max:
        out.append("int " + ", ".join(f"tr_t{k}" for k in range(1, t.temps_max + 1)) +
                   ";\t/* scratch values inside one step, 0 between steps */")
    out.append("")
    if chooser:
        out += chooser
        out.append("")
    out += procs
    # spin hides a global that nothing reads (its dataflow optimisation, off only with
    # `spin -o2`): pan would then not tell apart states that differ only there, and count
    # fewer than we do. An option that is never taken reads every global.
    reads = [f"{t.names[key]}[0]" if isinstance(key[0].type, m.ArrayT) else t.names[key]
             for key in t.layout.var_base if key[0] not in t.c_syms]
    reads += [t.pc(g) for g in range(len(t.inst_ident))] + [t.task(g) for g in sorted(t.layout.task_slot)]
    reads += [f"{t.sb(b)}_{part}[0]" for b in program.layout.buffers for part in "av"]
    if checks or reads:
        out.append("/* The properties, checked in every state without adding one: each option returns to")
        out.append(" * where it was. */")
        out.append("active proctype tr_monitor()")
        out.append("{")
        out.append("end:\tdo")
        if reads:
            out.append("\t:: false ->\t/* never taken: reads every global, so that spin hides none (pan would "
                       "count fewer states) */")
            for k in range(0, len(reads), 8):
                sep = " &&" if k + 8 < len(reads) else ""
                out.append("\t\t" + " && ".join(f"{r} == {r}" for r in reads[k:k + 8]) + sep)
        for name, cond, c_mode, what in checks:
            out.append(f"\t:: d_step {{ /* {_comment(what)} */")
            if c_mode:
                out.append(f"\t\tc_expr {{ {'now.tr_chosen && ' if gate else ''}{cond} }} -> assert({name}) }}")
            else:
                out.append(f"\t\t{gate}{cond} -> assert({name}) }}")
        out.append("\tod")
        out.append("}")
        out.append("")
    for name, f, orig in ltl:
        out.append(f"ltl {name} {{ {f} }}\t/* property {_comment(orig)} */")
    return "\n".join(out).rstrip() + "\n"


def _header(program: Program, ltl, skipped, chooser: bool, t: _Translator) -> str:
    model = program.model
    consts = ", ".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in model.constants.items())
    stem = f"{model.name}.{model.variant}"
    lines = [f"/* Promela twin of {_comment(model.file)}, model {_comment(model.name)}, variant "
             f"{_comment(model.variant)}",
             f" * (generated by timerace `check --promela`; memory model {model.memory}"
             + (f", store buffers of {model.store_buffer} stores" if model.memory == "tso" else "") + ").",
             f" * Constants: {_comment(consts) or 'none'}.",
             " *",
             " * One timerace step is one pan transition (see checker/backends/promela.py), so with reductions off",
             " * pan stores exactly the states timerace counts (`check --no-por --no-symmetry`):",
             f" *   spin -o3 -a {stem}.pml && gcc -O2 -DNOREDUCE -DNOCLAIM -o pan pan.c && ./pan -m100000 -c0",
             " * (-c0 goes on past violations, -DNOCLAIM leaves the ltl claims out; raise -m if pan says",
             " * the depth is too small). Default settings, for the time to a verdict:",
             f" *   spin -a {stem}.pml && gcc -O2 -o pan pan.c && ./pan -m100000",
             " * Breadth-first, for the shortest trails (safety only; the same states as depth-first):",
             f" *   spin -o3 -a {stem}.pml && gcc -O2 -DBFS -DNOREDUCE -DNOCLAIM -o pan pan.c && ./pan -c0",
             " * A violation reads \"assertion violated <name>\": invariant_<property>, final_<property>,",
             " * assert_<property>, deadlock, or model_error_<what> (the model itself went wrong);",
             " * reachable_<property> is the opposite: that state was reached, the property holds."]
    if chooser:
        lines.append(" * The model has several initial states: pan stores one more state than timerace (the")
        lines.append(" * one before the chooser picks the initial values).")
    if ltl:
        procs = sum(p.instances for p in program.processes) + len(program.layout.buffers) + 2 \
            + (1 if chooser else 0)  # flushes, monitor, claim, chooser
        nfair = max(2, (procs + 1) // 4 + 1)
        flag = f" -DNFAIR={nfair}" if nfair > 2 else ""
        lines.append(" * Liveness, one pan run per claim, built without -DNOCLAIM (SPIN's weak fairness, -f,")
        lines.append(f" * is per process, as ours): gcc -O2{flag} -o pan pan.c, then")
        for name, _f, _o in ltl:
            lines.append(f" *   ./pan -m100000 -a -f -A -N {name}")
        lines.append(" * (-A: the invariant checks are left to the safety run.)")
        if any(isinstance(o, OAssert) for p in program.processes for st in p.steps for o in walk_ops(st.body)):
            lines.append(" * NOTE: a step whose assert fails loops in place here (pan -c0 can go on without a")
            lines.append(" * new state), while timerace drops it: once an assert has failed, a liveness verdict")
            lines.append(" * may differ.")
        unfair = [p.name for p in program.processes if p.unfair]
        if unfair:
            lines.append(f" * NOTE: {_comment(', '.join(unfair))} declared `unfair`: SPIN has no per-process fairness,")
            lines.append(" * so pan assumes it fair too; a liveness verdict may differ from timerace's.")
    if t.renamed:
        lines.append(" * Names changed for SPIN and C (a keyword, or a name pan's C code already uses), as")
        lines.append(" * `twin <- model`; spin's trails show the twin's names:")
        pairs = [f"{twin} <- {_comment(orig)}" for twin, orig in sorted(t.renamed.items())]
        for k in range(0, len(pairs), 6):
            lines.append(" *   " + ", ".join(pairs[k:k + 6]))
    if model.lemmas or skipped:
        names = [lm.name for lm in model.lemmas] or [s.split()[-1] for s in skipped]
        lines.append(f" * Not translated: lemmas {_comment(', '.join(names))} (timerace proves them with Z3).")
    lines.append(" */")
    return "\n".join(lines)
