"""Syntax tree -> resolved model: bind names, check types and ranges, fold constants,
apply a variant's and the command line's constant overrides, expand inline procedures.

Every problem is a SpecError at the span of the offending text, with a hint where one
helps (the closest known name, the declared range, the rule that was broken).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field

from . import ast
from . import model as m
from .builtins import ALIASES, BUILTINS, Arg, Cls, Pure, Result, RmwOp
from .errors import NOWHERE, STAGE_CODES, Span, SpecError, did_you_mean, raise_all, source_lines, source_text
from .limits import MAX_PROCESSES, MAX_VALUES
from .parse import literal_value

BASE = "base"
DEADLOCK = "deadlock"
ASSERTIONS = "assertions"
MEMORY_MODELS = ("sc", "tso")
# Stores a CPU's store buffer holds under tso unless `memory tso(N)` or --store-buffer
# says otherwise. Two is what the classic litmus tests (n6) need.
DEFAULT_STORE_BUFFER = 2
MAX_STORE_BUFFER = 8


# The kernel primitives are the rows of builtins.py; resolve checks their arguments.
WAITQUEUE_BUILTINS = frozenset(name for name, p in BUILTINS.items() if p.needs_process)

RESERVED_TYPES = ("bool", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")


def variant_names(spec: ast.Spec) -> list[str]:
    return [BASE] + [v.name for v in spec.of(ast.VariantDecl)]


def header_comment(source: str) -> str:
    """The comment block a model starts with (what it models and what its variants show)."""
    lines = []
    in_block = False
    for raw in source_lines(source):
        line = raw.strip()
        if in_block:
            end = line.find("*/")
            lines.append(line[:end] if end >= 0 else line.lstrip("* ").rstrip())
            if end >= 0:
                in_block = False
            continue
        if line.startswith("//"):
            lines.append(line[2:].removeprefix(" "))
        elif line.startswith("/*"):
            in_block = "*/" not in line[2:]
            lines.append(line[2:].split("*/")[0].strip())
        elif not line and lines:
            lines.append("")
        elif line:
            break
    return "\n".join(lines).strip()


def parse_define(text: str) -> tuple[str, str]:
    """`NAME=VALUE` from the command line."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise SpecError(NOWHERE, f"-D expects NAME=VALUE, got {text!r}",
                        "for example: -D KICK_ON_PENDING=false")
    return name.strip(), value.strip()


def _check_array_size(n: int, span: Span) -> None:
    if n > MAX_VALUES:
        raise SpecError(span, f"an array of {n} elements; the limit is {MAX_VALUES:,}",
                        f"a model holds at most {MAX_VALUES:,} values (variables and array elements) in all")


def parse_defines(texts) -> dict[str, str]:
    """Every `-D NAME=VALUE`; a name given twice is refused: which one was meant?"""
    out: dict[str, str] = {}
    for text in texts:
        name, value = parse_define(text)
        if name in out:
            raise SpecError(NOWHERE, f"-D {name} is given twice ({name}={out[name]}, then {name}={value})",
                            f"give -D {name}=... once")
        out[name] = value
    return out


def resolve(spec: ast.Spec, variant: str = BASE, defines: dict[str, str] | None = None,
            memory: str | None = None, store_buffer: int | None = None) -> m.Model:
    """`memory` and `store_buffer` come from the command line and override the spec."""
    try:
        return _Resolver(spec, variant, defines or {}, memory, store_buffer).run()
    except SpecError as e:
        raise e.with_code(STAGE_CODES["resolve"]) from None


# ---- the resolver --------------------------------------------------------------


@dataclass
class _Ctx:
    """Where an expression or statement is being resolved."""

    process: m.Process | None = None
    process_count: int | None = None
    locals: dict[str, m.VarSym] = field(default_factory=dict)
    params: dict[str, m.TExpr] = field(default_factory=dict)
    bound: dict[str, m.Bound] = field(default_factory=dict)
    effects: bool = False  # side-effecting builtins allowed here
    in_atomic: bool = False
    in_loop: bool = False
    in_inline: bool = False
    inline_in_atomic: bool = False  # the innermost inline was expanded inside this atomic step
    inline_stack: tuple[str, ...] = ()
    labels: set[str] | None = None
    what: str = "expression"


class _Resolver:
    def __init__(self, spec: ast.Spec, variant: str, defines: dict[str, str],
                 memory: str | None, store_buffer: int | None = None):
        self.spec = spec
        self.variant = variant
        self.defines = defines
        self.memory_override = memory
        self.store_buffer_override = store_buffer
        self.consts: dict[str, m.Const] = {}
        self.enums: dict[str, m.EnumT] = {}
        self.members: dict[str, tuple[m.EnumT, int]] = {}
        self.globals: dict[str, m.VarSym] = {}
        self.inlines: dict[str, ast.InlineDecl] = {}
        self.fns: dict[str, ast.FnDecl] = {}
        self.process_decls: dict[str, ast.ProcessDecl] = {}
        self.process_counts: dict[str, int | None] = {}
        self.process_labels: dict[str, set[str]] = {}
        self.processes: dict[str, m.Process] = {}  # filled once every body is resolved
        self.assert_names: dict[str, Span] = {}
        self.lemmas: list[m.Lemma] = []
        self.uid = itertools.count()
        self.read_locals: set[int] = set()  # ids of the local VarSyms some expression reads
        self.writing: str | None = None  # the name an assignment is storing to (not a read)

    # -- top level
    def run(self) -> m.Model:
        spec = self.spec
        variants = {v.name: v for v in spec.of(ast.VariantDecl)}
        if self.variant != BASE and self.variant not in variants:
            raise SpecError(NOWHERE, f"unknown variant '{self.variant}'",
                            did_you_mean(self.variant, variant_names(spec))
                            or f"variants: {', '.join(variant_names(spec))}", code="TR205")
        self._check_duplicates()
        overrides = self._collect_overrides(variants.get(self.variant))
        self._resolve_consts(overrides)
        memory, store_buffer = self._memory(variants.get(self.variant))
        for d in spec.of(ast.EnumDecl):
            t = m.EnumT(d.name, tuple(n for n, _ in d.members))
            self.enums[d.name] = t
            for i, (n, _) in enumerate(d.members):
                self.members[n] = (t, i)
        for d in spec.of(ast.ProcessDecl):
            self.process_decls[d.name] = d
            self.process_counts[d.name] = self._process_count(d)
        for d in spec.of(ast.InlineDecl):
            self.inlines[d.name] = d
        for d in spec.of(ast.FnDecl):
            self.fns[d.name] = d
        # several errors per run: each declaration of a group is resolved even when one
        # before it failed, and the group's errors are reported together; the next group
        # is not started (its errors could be echoes of these)
        errors: list[SpecError] = []
        for d in spec.items:
            try:
                if isinstance(d, ast.VarDecl):
                    self.globals[d.name] = self._var(d, m.Scope.GLOBAL, None)
                elif isinstance(d, ast.WaitQueueDecl):
                    self.globals[d.name] = self._waitqueue(d)
            except SpecError as e:
                errors.append(e)
        raise_all(errors)
        processes = []
        for d in spec.of(ast.ProcessDecl):
            try:
                processes.append(self._process(d))
            except SpecError as e:
                errors.append(e)
        raise_all(errors)
        processes = tuple(processes)
        self.process_labels = {p.name: set(p.labels) for p in processes}
        self.processes = {p.name: p for p in processes}
        if not processes and not spec.of(ast.LemmaDecl):
            raise SpecError(Span(spec.file, 1, 1, 1, 1), "the model declares no process",
                            "add `process NAME { ... }` (or a `lemma`)")
        properties = self._properties()
        expected = self._expectations(variants.get(self.variant), properties)
        constants = {n: self._const_value(c) for n, c in self.consts.items()}
        return m.Model(
            name=spec.name, file=spec.file, source=spec.source, variant=self.variant,
            constants=constants, memory=memory, globals=tuple(self.globals.values()),
            processes=processes, properties=properties, expected_violations=expected,
            header=header_comment(spec.source), lemmas=tuple(self.lemmas),
            store_buffer=store_buffer, warnings=self._unread_locals(processes))

    def _unread_locals(self, processes) -> tuple[tuple[int, str], ...]:
        """(line, message) for each process-local variable nothing reads: it only widens
        the state (a value written and never read still makes states differ)."""
        out = []
        for p in processes:
            decls = {v.name: v for v in self.process_decls[p.name].locals}
            for sym in p.locals:
                if id(sym) not in self.read_locals and sym.name in decls:
                    out.append((decls[sym.name].span.line,
                                f"{p.name}: local '{sym.name}' is never read"))
        return tuple(out)

    def _const_value(self, c: m.Const):
        if isinstance(c.type, m.BoolT):
            return bool(c.value)
        if isinstance(c.type, m.EnumT):
            return c.type.members[c.value]
        return c.value

    def _memory(self, variant: ast.VariantDecl | None) -> tuple[str, int | None]:
        """The memory model and, under tso, the store-buffer bound. The command line wins
        over the variant's `memory` line, which wins over the model's."""
        model_decls = self.spec.of(ast.MemoryDecl)
        if len(model_decls) > 1:
            raise SpecError(model_decls[1].span, "`memory` is declared twice")
        decls = list(model_decls)
        for v in self.spec.of(ast.VariantDecl):
            if len(v.memory) > 1:
                raise SpecError(v.memory[1].span, f"variant '{v.name}' declares `memory` twice")
            decls += v.memory
        for d in decls:
            self._check_memory_decl(d)
        top = model_decls[0] if model_decls else None
        own = variant.memory[0] if variant is not None and variant.memory else None
        chosen = own or top
        memory = self.memory_override or (chosen.name if chosen else "sc")
        if self.memory_override and self.memory_override not in MEMORY_MODELS:
            raise SpecError(NOWHERE, f"unknown memory model '{self.memory_override}'",
                            f"use one of: {', '.join(MEMORY_MODELS)}")
        if memory != "tso":
            return memory, None
        if self.store_buffer_override is not None:
            bound = self.store_buffer_override
            if not 1 <= bound <= MAX_STORE_BUFFER:
                raise SpecError(NOWHERE, f"a store buffer holds 1 to {MAX_STORE_BUFFER} stores, not {bound}")
            return memory, bound
        for d in (own, top):  # the nearest `memory tso(N)` gives the bound
            if d is not None and d.bound is not None:
                return memory, self.const_int(d.bound, "a store buffer's size")
        return memory, DEFAULT_STORE_BUFFER

    def _check_memory_decl(self, d: ast.MemoryDecl):
        if d.name not in MEMORY_MODELS:
            raise SpecError(d.span, f"unknown memory model '{d.name}'",
                            f"use one of: {', '.join(MEMORY_MODELS)}")
        if d.bound is not None:
            if d.name != "tso":
                raise SpecError(d.bound.span, f"only tso has store buffers; `memory {d.name}` takes no size")
            n = self.const_int(d.bound, "a store buffer's size")
            if not 1 <= n <= MAX_STORE_BUFFER:
                raise SpecError(d.bound.span, f"a store buffer holds 1 to {MAX_STORE_BUFFER} stores, not {n}")

    def _check_duplicates(self):
        seen: dict[str, tuple[str, Span]] = {}
        props: dict[str, Span] = {}
        variants: dict[str, Span] = {}

        def add(name: str, what: str, span: Span):
            if name in RESERVED_TYPES or name in ("self", "true", "false", "any"):
                raise SpecError(span, f"'{name}' is a reserved word and cannot name a {what}", code="TR204")
            if name in seen:
                prev_what, prev = seen[name]
                raise SpecError(span, f"duplicate name '{name}'",
                                f"already declared as a {prev_what} at {prev}", code="TR202")
            seen[name] = (what, span)

        for d in self.spec.items:
            if isinstance(d, ast.ConstDecl):
                add(d.name, "constant", d.span)
            elif isinstance(d, ast.EnumDecl):
                add(d.name, "enum", d.span)
                for n, s in d.members:
                    add(n, "enum member", s)
            elif isinstance(d, (ast.VarDecl, ast.WaitQueueDecl)):
                add(d.name, "variable", d.span)
            elif isinstance(d, ast.ProcessDecl):
                add(d.name, "process", d.span)
            elif isinstance(d, ast.InlineDecl):
                add(d.name, "inline procedure", d.span)
            elif isinstance(d, ast.FnDecl):
                add(d.name, "function", d.span)
            elif isinstance(d, (ast.InvariantDecl, ast.FinalDecl, ast.PropertyDecl, ast.LemmaDecl,
                                ast.ReachableDecl)):
                if d.name in props or d.name in (DEADLOCK, ASSERTIONS):
                    raise SpecError(d.span, f"duplicate property name '{d.name}'",
                                    "deadlock and assertions are built-in property names"
                                    if d.name in (DEADLOCK, ASSERTIONS)
                                    else f"already declared at {props[d.name]}", code="TR202")
                props[d.name] = d.span
            elif isinstance(d, ast.VariantDecl):
                if d.name in variants or d.name == BASE:
                    raise SpecError(d.span, f"duplicate variant name '{d.name}'",
                                    "'base' names the model without overrides"
                                    if d.name == BASE else f"already declared at {variants[d.name]}", code="TR202")
                variants[d.name] = d.span
        models = self.spec.of(ast.ModelDecl)
        if len(models) > 1:
            raise SpecError(models[1].span, "a spec declares one model", "remove this `model` line")

    # -- constants
    def _collect_overrides(self, variant: ast.VariantDecl | None) -> dict[str, tuple[ast.Expr, str]]:
        names = {d.name for d in self.spec.of(ast.ConstDecl)}
        out: dict[str, tuple[ast.Expr, str]] = {}
        if variant is not None:
            for o in variant.overrides:
                if o.name not in names:
                    raise SpecError(o.span, f"variant '{variant.name}' sets '{o.name}', which is not a constant",
                                    did_you_mean(o.name, names) or "a variant may only set `const` knobs")
                if o.name in out:
                    raise SpecError(o.span, f"variant '{variant.name}' sets '{o.name}' twice")
                out[o.name] = (o.value, f"variant {variant.name}")
        for name, text in self.defines.items():
            if name not in names:
                raise SpecError(NOWHERE, f"-D {name}: no constant named '{name}' in {self.spec.file}",
                                did_you_mean(name, names) or
                                (f"constants: {', '.join(sorted(names))}" if names else "the model declares no constants"))
            out[name] = (_define_expr(text), f"-D {name}")
        return out

    def _resolve_consts(self, overrides):
        for d in self.spec.of(ast.ConstDecl):
            expr, origin = overrides.get(d.name, (d.value, None))
            default = self._const_expr(d.value, f"constant '{d.name}'")
            if origin is None:
                self.consts[d.name] = default
                continue
            try:
                value = self._const_expr(expr, f"constant '{d.name}'")
            except SpecError as e:
                if origin.startswith("-D"):
                    raise SpecError(NOWHERE, f"{origin}: {e.message}", e.hint) from None
                raise
            if type(value.type) is not type(default.type) or (
                    isinstance(default.type, m.EnumT) and value.type != default.type):
                msg = (f"{origin}: '{d.name}' is a {default.type.describe()} constant, "
                       f"not {_article(value.type.describe())}")
                span = NOWHERE if origin.startswith("-D") else expr.span
                raise SpecError(span, msg, f"its default is {self._show(default)}")
            self.consts[d.name] = m.Const(d.span, value.type, value.value)

    def _show(self, c: m.Const) -> str:
        v = self._const_value(c)
        return str(v).lower() if isinstance(v, bool) else str(v)

    def _const_expr(self, e: ast.Expr, what: str) -> m.Const:
        """Evaluate a constant expression (literals, constants, enum members, arithmetic)."""
        if isinstance(e, ast.Name) and e.name in self.spec_enum_members():
            t, i = self.spec_enum_members()[e.name]
            return m.Const(e.span, t, i)
        r = self.expr(e, _Ctx(what=what))
        if not isinstance(r, m.Const):
            raise SpecError(e.span, f"{what} must be a constant expression",
                            "use literals, other constants and enum members", code="TR206")
        return r

    def spec_enum_members(self) -> dict[str, tuple[m.EnumT, int]]:
        if not self.members:
            for d in self.spec.of(ast.EnumDecl):
                t = m.EnumT(d.name, tuple(n for n, _ in d.members))
                self.enums[d.name] = t
                for i, (n, _) in enumerate(d.members):
                    self.members[n] = (t, i)
        return self.members

    def const_int(self, e: ast.Expr, what: str) -> int:
        c = self._const_expr(e, what)
        if not isinstance(c.type, m.IntT):
            raise SpecError(e.span, f"{what} must be an integer, not {c.type.describe()}")
        return c.value

    # -- types and variables
    def _type(self, t: ast.TypeExpr) -> m.Type:
        if isinstance(t, ast.BoolType):
            return m.BOOL
        if isinstance(t, ast.RangeType):
            lo = self.const_int(t.lo, "a range bound")
            hi = self.const_int(t.hi, "a range bound")
            if lo > hi:
                raise SpecError(t.span, f"empty range {lo}..{hi}", "the lower bound comes first")
            return m.IntT(lo, hi)
        if isinstance(t, ast.BitsetType):
            if t.size is not None and isinstance(t.size, ast.Name) and t.size.name in self.enums:
                e = self.enums[t.size.name]
                return m.BitsetT(len(e.members), e)
            if t.size is not None and isinstance(t.size, ast.Name) and t.size.name in self.process_decls:
                count = self.process_counts.get(t.size.name)  # bitset(vcpu): one bit per instance
                if count is None:
                    raise SpecError(t.size.span, f"'{t.size.name}' is one process, not an array",
                                    "bitset(P) has a bit per instance of `process P[N]`; write bitset(N)")
                if not 1 <= count <= 64:
                    raise SpecError(t.span, f"a bit set has 1 to 64 bits, not {count}")
                return m.BitsetT(count)
            if t.size is not None:
                size = self.const_int(t.size, "a bit set's size")
            else:
                lo = self.const_int(t.lo, "a bit set's range")
                if lo != 0:
                    raise SpecError(t.span, "a bit set's bits are numbered from 0", "write bitset(N) or bitset(0..N-1)")
                size = self.const_int(t.hi, "a bit set's range") + 1
            if not 1 <= size <= 64:
                raise SpecError(t.span, f"a bit set has 1 to 64 bits, not {size}")
            return m.BitsetT(size)
        if isinstance(t, ast.NamedType):
            if t.name in self.enums:
                return self.enums[t.name]
            fixed = m.fixed_width_type(t.name)
            if fixed is not None:
                return fixed
            raise SpecError(t.span, f"unknown type '{t.name}'",
                            did_you_mean(t.name, list(self.enums) + ["bool"] + list(m.BITVEC_TYPES)
                                         + list(m.SIGNED_TYPES))
                            or "types are bool, an enum, a range lo..hi, bitset(N), u8 .. u64 or s8 .. s64", code="TR201")
        raise SpecError(t.span, "unsupported type")

    def _dim(self, d: ast.Dim) -> tuple[int, int, str | None]:
        if d.count is not None:
            if isinstance(d.count, ast.Name) and d.count.name in self.process_counts:
                n = self.process_counts[d.count.name]
                if n is None:
                    raise SpecError(d.count.span, f"'{d.count.name}' is a single process, not an array of processes",
                                    f"declare it as `process {d.count.name}[N]` to index by it")
                return 0, n - 1, d.count.name
            n = self.const_int(d.count, "an array size")
            if n < 1:
                raise SpecError(d.span, f"an array needs at least one element, not {n}")
            _check_array_size(n, d.span)
            return 0, n - 1, None
        lo = self.const_int(d.lo, "an array bound")
        hi = self.const_int(d.hi, "an array bound")
        if lo > hi:
            raise SpecError(d.span, f"empty index range {lo}..{hi}")
        _check_array_size(hi - lo + 1, d.span)
        return lo, hi, None

    def _var(self, d: ast.VarDecl, scope: m.Scope, process: str | None) -> m.VarSym:
        elem = self._type(d.type)
        if d.dim is not None:
            lo, hi, by = self._dim(d.dim)
            typ: m.Type = m.ArrayT(elem, lo, hi, by)
            n = hi - lo + 1
        else:
            typ, n = elem, 1
        init = self._init(d, elem, n)
        return m.VarSym(d.name, typ, scope, d.span, init, process)

    def _waitqueue(self, d: ast.WaitQueueDecl) -> m.VarSym:
        if d.dim is not None:
            lo, hi, by = self._dim(d.dim)
            return m.VarSym(d.name, m.ArrayT(m.WaitQueueT(), lo, hi, by), m.Scope.GLOBAL, d.span,
                            ((0,),) * (hi - lo + 1))
        return m.VarSym(d.name, m.WaitQueueT(), m.Scope.GLOBAL, d.span, ((0,),))

    def _init(self, d: ast.VarDecl, elem: m.Type, n: int) -> tuple[tuple[int, ...], ...]:
        e = d.init
        if e is None:
            default = elem.lo if isinstance(elem, m.IntT) and elem.lo > 0 else 0
            if isinstance(elem, m.IntT) and elem.hi < 0:
                default = elem.hi
            return ((default,),) * n
        if isinstance(e, ast.AnyInit):
            dom = self._domain(elem, d.type.span)
            vals = dom if isinstance(elem, m.BitVecT) else tuple(dom)  # 2**64 values stay a range
            return (vals,) * n
        if isinstance(e, ast.ListInit) and isinstance(elem, m.BitsetT):
            return ((self._bitset_value(e, elem),),) * n
        if isinstance(e, ast.ListInit):
            if n == 1 and d.dim is None:
                raise SpecError(e.span, f"'{d.name}' is not an array; give one value", None)
            if len(e.items) != n:
                raise SpecError(e.span, f"'{d.name}' has {n} elements but {len(e.items)} initial values",
                                "give one value for every element, or a single value for all")
            return tuple((self._init_value(x, elem, d.name),) for x in e.items)
        return ((self._init_value(e, elem, d.name),),) * n

    def _domain(self, t: m.Type, span: Span) -> range:
        if isinstance(t, m.BitVecT):
            return range(1 << t.width)  # enumerated only by the explicit engine, which may refuse
        if isinstance(t, m.BoolT):
            return range(2)
        if isinstance(t, m.EnumT):
            return range(len(t.members))
        if isinstance(t, m.IntT):
            if t.hi - t.lo > 4096:
                raise SpecError(span, "`any` over more than 4096 values", "narrow the range")
            return range(t.lo, t.hi + 1)
        if isinstance(t, m.BitsetT) and t.size <= 12:
            return range(1 << t.size)
        raise SpecError(span, f"`any` is not allowed for {t.describe()}")

    def _bitset_value(self, e: ast.ListInit, t: m.BitsetT) -> int:
        mask = 0
        for x in e.items:
            nr = self._bitnr(self.expr(x, _Ctx()), t, x.span)
            mask |= 1 << nr
        return mask

    def _bitnr(self, nr: m.TExpr, t: m.BitsetT, span: Span) -> int:
        if not isinstance(nr, m.Const):
            raise SpecError(span, "a bit number here must be a constant", code="TR206")
        self._check_bitnr_type(nr, t, span)
        if not 0 <= nr.value < t.size:
            raise SpecError(span, f"bit {nr.value} is outside {t.describe()} (bits 0..{t.size - 1})")
        return nr.value

    def _init_value(self, e: ast.Expr, t: m.Type, name: str) -> int:
        c = self.expr(e, _Ctx(what=f"the initial value of '{name}'"))
        if not isinstance(c, m.Const):
            raise SpecError(e.span, f"the initial value of '{name}' must be a constant")
        self._check_assignable(t, c, e.span, f"'{name}'")
        if isinstance(t, m.IntT):
            c = self._value(c)
        if isinstance(t, m.IntT) and not t.lo <= c.value <= t.hi:
            raise SpecError(e.span, f"initial value {c.value} of '{name}' is outside its range {t.lo}..{t.hi}",
                            f"'{name}' is declared as {t.lo}..{t.hi}")
        if isinstance(t, m.BitVecT):
            return m.bv_convert(c.value, c.type, t)  # C conversion: -1 is u8's largest value
        return c.value

    # -- processes
    def _process_count(self, d: ast.ProcessDecl) -> int | None:
        if d.dim is None:
            return None
        if d.dim.count is None:
            raise SpecError(d.dim.span, "a process array takes a count, `process name[N]`")
        n = self.const_int(d.dim.count, "a process count")
        if not 1 <= n <= MAX_PROCESSES:
            raise SpecError(d.dim.span, f"a process array has 1 to {MAX_PROCESSES} processes, not {n}",
                            f"a model has at most {MAX_PROCESSES} processes in all, counting every instance")
        return n

    def _process(self, d: ast.ProcessDecl) -> m.Process:
        count = self.process_counts[d.name]
        locals_: dict[str, m.VarSym] = {}
        for v in d.locals:
            if v.name in locals_:
                raise SpecError(v.span, f"duplicate local variable '{v.name}'", code="TR202")
            if v.name in self.globals or v.name in self.consts:
                raise SpecError(v.span, f"local variable '{v.name}' shadows a global name",
                                "give it another name")
            locals_[v.name] = self._var(v, m.Scope.LOCAL, d.name)
        labels: set[str] = set()
        proc_stub = m.Process(d.name, d.span, count, d.unfair, tuple(locals_.values()), (),
                              frozenset(), d.end_span)
        ctx = _Ctx(process=proc_stub, process_count=count, locals=locals_, labels=labels)
        body = self.stmts(d.body, ctx)
        self._check_gotos(body, labels)
        return m.Process(d.name, d.span, count, d.unfair, tuple(locals_.values()), body,
                         frozenset(labels), d.end_span)

    def _check_gotos(self, body, labels: set[str]):
        for s in _walk(body):
            if isinstance(s, m.SGoto) and s.label not in labels:
                raise SpecError(s.span, f"goto to an unknown label '{s.label}'",
                                did_you_mean(s.label, labels) or "labels are `name:` before a statement", code="TR201")

    # -- statements
    def stmts(self, body, ctx: _Ctx) -> tuple[m.RStmt, ...]:
        return tuple(self.stmt(s, ctx) for s in body)

    def stmt(self, s: ast.Stmt, ctx: _Ctx) -> m.RStmt:
        eff = _Ctx(**{**ctx.__dict__, "effects": True})
        if isinstance(s, ast.Block):
            return _block(s.span, self.stmts(s.body, ctx))
        if isinstance(s, ast.Assign):
            target = self.lvalue(s.target, ctx)
            if isinstance(s.value, ast.ListInit):  # `s = {...};`: constant bits of a bit set
                if not isinstance(target.type, m.BitsetT):
                    raise SpecError(s.value.span, f"`{{...}}` is a bit set, and '{s.target.name}' is "
                                    f"{target.type.describe()}", "a set value goes to a `bitset` variable",
                                    "TR203")
                mask = self._bitset_value(s.value, target.type)
                return m.SAssign(s.span, target, m.Const(s.value.span, target.type, mask))
            value = self.expr(s.value, eff)
            self._check_assignable(target.type, value, s.value.span, f"'{s.target.name}'")
            if isinstance(target.type, m.IntT):
                value = self._value(value)
            self._check_static_range(target.type, value, s.value.span, s.target.name)
            return m.SAssign(s.span, target, value)
        if isinstance(s, ast.If):
            cond = self.cond(s.cond, eff, "an `if` condition")
            then = self._as_body(self.stmt(s.then, ctx))
            orelse = self._as_body(self.stmt(s.orelse, ctx)) if s.orelse else ()
            return m.SIf(s.span, cond, then, orelse)
        if isinstance(s, ast.While):
            cond = self.cond(s.cond, eff, "a `while` condition")
            inner = _Ctx(**{**ctx.__dict__, "in_loop": True})
            return m.SWhile(s.span, cond, self._as_body(self.stmt(s.body, inner)))
        if isinstance(s, ast.Loop):
            if ctx.in_atomic:
                raise SpecError(s.span, "`loop` inside `atomic` would never end",
                                "use `while (cond)` inside atomic blocks")
            inner = _Ctx(**{**ctx.__dict__, "in_loop": True})
            return m.SLoop(s.span, self._as_body(self.stmt(s.body, inner)))
        if isinstance(s, (ast.Break, ast.Continue)):
            word = "break" if isinstance(s, ast.Break) else "continue"
            if not ctx.in_loop:
                raise SpecError(s.span, f"`{word}` outside a loop",
                                "`break` and `continue` belong inside `while` or `loop`")
            return m.SBreak(s.span) if word == "break" else m.SContinue(s.span)
        if isinstance(s, ast.Labeled):
            if ctx.in_atomic:
                raise SpecError(s.label_span, "labels are not allowed inside `atomic`",
                                "an atomic block is one step; label the `atomic` statement itself")
            if ctx.labels is not None:
                if s.label in ctx.labels and not ctx.in_inline:
                    raise SpecError(s.label_span, f"duplicate label '{s.label}' in process '{ctx.process.name}'", code="TR202")
                ctx.labels.add(s.label)
            return m.SLabeled(s.span, s.label, self.stmt(s.stmt, ctx))
        if isinstance(s, ast.Goto):
            if ctx.in_atomic:
                raise SpecError(s.span, "`goto` is not allowed inside `atomic`")
            return m.SGoto(s.span, s.label)
        if isinstance(s, ast.Await):
            if ctx.in_atomic:
                raise SpecError(s.span, "`await` inside `atomic` must be its first statement",
                                "an atomic block is one step; it may only wait before it starts")
            return m.SAwait(s.span, self.cond(s.cond, ctx, "an `await` condition"))
        if isinstance(s, ast.Atomic):
            return self._atomic(s, ctx)
        if isinstance(s, ast.Choose):
            if ctx.in_atomic:
                raise SpecError(s.span, "`choose` is not allowed inside `atomic`",
                                "put the `choose` outside and an atomic block in each branch")
            branches = []
            for b in s.branches:
                if not b.body:
                    raise SpecError(b.span, "an empty `choose` branch", "write `skip;` for a branch that does nothing")
                branches.append(self.stmts(b.body, ctx))
            return m.SChoose(s.span, tuple(branches))
        if isinstance(s, ast.Assert):
            name = s.name or ASSERTIONS
            if s.name is not None:
                if s.name in (DEADLOCK, ASSERTIONS):
                    raise SpecError(s.span, f"'{s.name}' is a built-in property name")
                prev = self.assert_names.get(s.name)
                if prev is not None and prev != s.span and not ctx.in_inline:
                    raise SpecError(s.span, f"duplicate assertion name '{s.name}'", f"already used at {prev}", code="TR202")
                self.assert_names[s.name] = s.span
            else:
                self.assert_names.setdefault(ASSERTIONS, s.span)
            return m.SAssert(s.span, name, self.cond(s.cond, ctx, "an assertion"))
        if isinstance(s, ast.Skip):
            return m.SSkip(s.span)
        if isinstance(s, ast.Return):
            if not ctx.in_inline:
                raise SpecError(s.span, "`return` outside an inline procedure",
                                "a process ends when it reaches the end of its body")
            if ctx.in_atomic and not ctx.inline_in_atomic:
                raise SpecError(s.span, "`return` inside `atomic` cannot leave the inline procedure around it",
                                "an atomic block is one step and ends at its closing brace; "
                                "use `if`/`else` inside it, or put the `return` outside it")
            return m.SReturn(s.span)
        if isinstance(s, ast.CallStmt):
            return self._call_stmt(s, ctx)
        raise SpecError(s.span, "unsupported statement")

    def _as_body(self, s: m.RStmt) -> tuple[m.RStmt, ...]:
        return s.body if isinstance(s, m.SInlined) and s.name == "" else (s,)

    def _atomic(self, s: ast.Atomic, ctx: _Ctx) -> m.RStmt:
        body = list(s.body.body)
        if not body:
            raise SpecError(s.span, "an empty `atomic` block", "write `skip;`")
        guard = None
        if isinstance(body[0], ast.Await):
            if ctx.in_atomic:
                raise SpecError(body[0].span, "an `atomic` inside another one cannot start with `await`",
                                "a nested atomic block is part of the outer step, which cannot wait halfway")
            guard = m.SAwait(body[0].span, self.cond(body[0].cond, ctx, "an `await` condition"))
            body = body[1:]
        # A nested atomic block (typically from an inline procedure called inside an
        # atomic block) is simply part of the outer step.
        nested = ctx.in_atomic
        inner = _Ctx(**{**ctx.__dict__, "in_atomic": True, "in_loop": ctx.in_loop if nested else False,
                        "inline_in_atomic": ctx.inline_in_atomic if nested else False})
        rest = self.stmts(body, inner)
        for st in _walk(rest):
            if isinstance(st, m.SEval) and BUILTINS[st.call.name].blocks:
                raise SpecError(st.span, f"`{st.call.name}()` blocks and cannot be inside `atomic`")
        return m.SAtomic(s.span, ((guard,) if guard else ()) + rest)

    def _call_stmt(self, s: ast.CallStmt, ctx: _Ctx) -> m.RStmt:
        c = s.call
        if c.name in self.inlines:
            return self._expand_inline(c, ctx)
        name = ALIASES.get(c.name, c.name)
        if name in BUILTINS:
            e = self._builtin(c, _Ctx(**{**ctx.__dict__, "effects": True}), statement=True)
            return m.SEval(s.span, e)
        if c.name in self.fns:
            raise SpecError(c.span, f"'{c.name}' is a pure function; its value is unused",
                            "use it in an expression, e.g. `await f(...)` or `x = f(...)`")
        raise SpecError(c.name_span, f"unknown procedure '{c.name}'",
                        did_you_mean(c.name, list(self.inlines) + list(BUILTINS) + list(ALIASES))
                        or "declare it with `inline NAME(params) { ... }`")

    def _expand_inline(self, c: ast.Call, ctx: _Ctx) -> m.RStmt:
        d = self.inlines[c.name]
        if c.name in ctx.inline_stack:
            chain = " -> ".join(ctx.inline_stack + (c.name,))
            raise SpecError(c.name_span, f"recursive inline procedure '{c.name}' ({chain})",
                            "inline procedures are expanded at each call and cannot recurse")
        if len(c.args) != len(d.params):
            raise SpecError(c.span, f"'{c.name}' takes {len(d.params)} argument(s), not {len(c.args)}",
                            f"declared at {d.span}")
        # The body sees its own parameters, never the caller's parameters or bound
        # names: substitution must not capture (an inline called from an inline whose
        # parameter shares a name with a global the callee reads).
        params = {p: self._argument(a, ctx) for p, a in zip(d.params, c.args)}
        inner = _Ctx(**{**ctx.__dict__, "params": params, "bound": {}, "in_inline": True,
                        "in_loop": False,  # like C: break/continue never leave a procedure
                        "inline_in_atomic": ctx.in_atomic,
                        "inline_stack": ctx.inline_stack + (c.name,)})
        body = self.stmts(d.body.body, inner)
        if ctx.in_atomic:
            for st in _walk_loops(body):
                raise SpecError(st.span, "`return` inside a loop of an inline procedure called in `atomic`",
                                "restructure the loop, or call the procedure outside `atomic`")
        return m.SInlined(c.span, c.name, body)

    def _argument(self, a: ast.Expr, ctx: _Ctx) -> m.TExpr:
        if isinstance(a, ast.Name) and (a.name in ctx.bound or a.name in ctx.params):
            # the caller's own parameter (an array passed on) or bound name comes first,
            # as in `_name`: a global of the same name must not capture it
            return self.expr(a, _Ctx(**{**ctx.__dict__, "effects": False, "what": "an argument"}))
        if isinstance(a, ast.Name) and a.name in self.globals and isinstance(
                self.globals[a.name].type, (m.ArrayT, m.WaitQueueT)):
            sym = self.globals[a.name]
            return m.Var(a.span, sym.type, sym)
        if isinstance(a, ast.Name) and a.name in ctx.locals and isinstance(ctx.locals[a.name].type, m.ArrayT):
            sym = ctx.locals[a.name]
            self.read_locals.add(id(sym))
            return m.Var(a.span, sym.type, sym)
        e = self.expr(a, _Ctx(**{**ctx.__dict__, "effects": False, "what": "an argument"}))
        return e

    # -- expressions
    def cond(self, e: ast.Expr, ctx: _Ctx, what: str) -> m.TExpr:
        r = self.expr(e, _Ctx(**{**ctx.__dict__, "what": what}))
        if not isinstance(r.type, m.BoolT):
            raise SpecError(e.span, f"{what} must be a bool, not {r.type.describe()}",
                            "compare it, e.g. `x != 0`" if m.is_intlike(r.type) else None)
        return r

    def lvalue(self, lv: ast.LValue, ctx: _Ctx) -> m.TExpr:
        self.writing = lv.name
        try:
            if lv.index is None:
                e = self.expr(ast.Name(lv.span, lv.name), ctx, lvalue=True)
            else:
                e = self.expr(ast.Index(lv.span, lv.name, lv.span, lv.index), ctx, lvalue=True)
        finally:
            self.writing = None
        if not isinstance(e, (m.Var, m.Elem)):
            raise SpecError(lv.span, f"cannot assign to '{lv.name}'", "only variables can be assigned")
        if isinstance(e.type, (m.ArrayT, m.WaitQueueT)):
            raise SpecError(lv.span, f"cannot assign a whole {e.type.describe()} '{lv.name}'",
                            "assign one element: name[i] = value")
        return e

    def expr(self, e: ast.Expr, ctx: _Ctx, lvalue: bool = False) -> m.TExpr:
        if isinstance(e, ast.Number):
            return m.Const(e.span, m.INT, e.value)
        if isinstance(e, ast.BoolLit):
            return m.Const(e.span, m.BOOL, int(e.value))
        if isinstance(e, ast.SelfRef):
            if ctx.process is None or ctx.process_count is None:
                raise SpecError(e.span, "`self` outside a process array",
                                "`self` is the index of a process declared as `process name[N]`")
            return m.SelfE(e.span, m.IntT(0, ctx.process_count - 1))
        if isinstance(e, ast.Name):
            return self._name(e, ctx, lvalue)
        if isinstance(e, ast.Index):
            return self._index(e, ctx)
        if isinstance(e, ast.Unary):
            return self._unary(e, ctx)
        if isinstance(e, ast.Binary):
            return self._binary(e, ctx)
        if isinstance(e, ast.Conditional):
            c = self.cond(e.cond, ctx, "a `?:` condition")
            pure = _Ctx(**{**ctx.__dict__, "effects": False, "what": "a branch of `?:`"})
            a, b = self.expr(e.then, pure), self.expr(e.orelse, pure)
            t = self._join(a, b, e.span)
            a, b = self._conv(a, t), self._conv(b, t)
            if isinstance(c, m.Const):
                return a if c.value else b
            return m.Ite(e.span, t, c, a, b)
        if isinstance(e, ast.Call):
            return self._call(e, ctx)
        if isinstance(e, ast.AtLabel):
            return self._at(e, ctx)
        if isinstance(e, ast.LocalRef):
            return self._local_ref(e, ctx)
        if isinstance(e, ast.Quantifier):
            return self._quant(e, ctx)
        if isinstance(e, (ast.ListInit, ast.AnyInit)):
            raise SpecError(e.span, "`{...}` and `any` are only allowed as initial values")
        raise SpecError(e.span, "unsupported expression")

    def _name(self, e: ast.Name, ctx: _Ctx, lvalue: bool) -> m.TExpr:
        n = e.name
        if n in ctx.bound:
            return ctx.bound[n]
        if n in ctx.params:
            p = ctx.params[n]
            return _respan(p, e.span)
        if n in ctx.locals:
            sym = ctx.locals[n]
            if n == self.writing:
                self.writing = None  # the target itself; its index, if any, is read
            else:
                self.read_locals.add(id(sym))
            return m.Var(e.span, sym.type, sym)
        if n in self.globals:
            sym = self.globals[n]
            return m.Var(e.span, sym.type, sym)
        if n in self.consts:
            if lvalue:
                raise SpecError(e.span, f"cannot assign to constant '{n}'",
                                "constants are fixed per variant; change them with a variant or -D")
            c = self.consts[n]
            return m.Const(e.span, c.type, c.value)
        members = self.members or self.spec_enum_members()
        if n in members:
            t, i = members[n]
            return m.Const(e.span, t, i)
        known = list(ctx.bound) + list(ctx.params) + list(ctx.locals) + list(self.globals) \
            + list(self.consts) + list(members)
        if n in self.process_decls:
            raise SpecError(e.span, f"'{n}' is a process, not a value", f"write `{n}@label` to ask where it is")
        raise SpecError(e.span, f"unknown name '{n}'",
                        did_you_mean(n, known) or "declare it with `var`, `const` or `enum`", code="TR201")

    def _index(self, e: ast.Index, ctx: _Ctx) -> m.TExpr:
        base = self._name(ast.Name(e.name_span, e.name), ctx, False)
        if not isinstance(base, m.Var) or not isinstance(base.type, m.ArrayT):
            raise SpecError(e.name_span, f"'{e.name}' is not an array",
                            f"it is a {base.type.describe()}")
        idx = self._value(self.expr(e.index, ctx))
        t = base.type
        if not m.is_intlike(idx.type):
            raise SpecError(e.index.span, f"an array index must be an integer, not {idx.type.describe()}")
        if isinstance(idx, m.Const) and not t.lo <= idx.value <= t.hi:
            raise SpecError(e.index.span, f"index {idx.value} is outside '{e.name}' ({t.lo}..{t.hi})")
        return m.Elem(e.span, t.elem, base.sym, idx)

    def _unary(self, e: ast.Unary, ctx: _Ctx) -> m.TExpr:
        x = self.expr(e.operand, ctx)
        if e.op == "!":
            if not isinstance(x.type, m.BoolT):
                raise SpecError(e.operand.span, f"`!` needs a bool, not {x.type.describe()}")
            return m.Const(e.span, m.BOOL, 1 - x.value) if isinstance(x, m.Const) else m.Un(e.span, m.BOOL, "!", x)
        if not m.is_intlike(x.type):
            raise SpecError(e.operand.span, f"`{e.op}` needs an integer, not {x.type.describe()}")
        t = x.type if isinstance(x.type, m.BitVecT) else m.INT
        if isinstance(x, m.Const):
            v = {"-": -x.value, "+": x.value, "~": ~x.value}[e.op]
            return m.Const(e.span, t, v & t.mask if isinstance(t, m.BitVecT) else v)
        return x if e.op == "+" else m.Un(e.span, t, e.op, x)

    def _binary(self, e: ast.Binary, ctx: _Ctx) -> m.TExpr:
        op = e.op
        if op in ("&&", "||", "->"):
            a = self.cond(e.left, ctx, f"an operand of `{op}`")
            pure = _Ctx(**{**ctx.__dict__, "effects": False, "what": f"the right operand of `{op}`"})
            b = self.cond(e.right, pure, f"an operand of `{op}`")
            if isinstance(a, m.Const) and isinstance(b, m.Const):
                v = {"&&": a.value and b.value, "||": a.value or b.value,
                     "->": (not a.value) or b.value}[op]
                return m.Const(e.span, m.BOOL, int(bool(v)))
            if isinstance(a, m.Const):
                if op == "&&":
                    return b if a.value else m.Const(e.span, m.BOOL, 0)
                if op == "||":
                    return m.Const(e.span, m.BOOL, 1) if a.value else b
                return b if a.value else m.Const(e.span, m.BOOL, 1)
            if isinstance(b, m.Const):
                # a knob on the right folds too, so a dead test takes no step; the left
                # operand is dropped only when evaluating it changes nothing
                keep_a = {"&&": bool(b.value), "||": not b.value, "->": not b.value}[op]
                if keep_a:
                    return a if op != "->" else m.Un(e.span, m.BOOL, "!", a)
                if not _has_effects(a):
                    return m.Const(e.span, m.BOOL, 0 if op == "&&" else 1)
            return m.Bin(e.span, m.BOOL, op, a, b)
        a, b = self.expr(e.left, ctx), self.expr(e.right, ctx)
        if op in ("==", "!="):
            self._comparable(a, b, e)
            t: m.Type = m.BOOL
        elif op in ("<", "<=", ">", ">="):
            for x, s in ((a, e.left), (b, e.right)):
                if not m.is_intlike(x.type):
                    raise SpecError(s.span, f"`{op}` compares integers, not {x.type.describe()}")
            t = m.BOOL
        else:
            for x, s in ((a, e.left), (b, e.right)):
                if not m.is_intlike(x.type) and not (op in ("&", "|", "^") and isinstance(x.type, m.BitsetT)):
                    raise SpecError(s.span, f"`{op}` needs integers, not {x.type.describe()}",
                                    "use && and || for bools" if isinstance(x.type, m.BoolT) and op in ("&", "|") else None)
            t = m.INT
        # Unsigned operands: C's conversions, made explicit as Conv nodes.
        width_t = a.type if op in ("<<", ">>") else m.arith_type(a.type, b.type)
        if isinstance(width_t, m.BitVecT) and (m.is_intlike(a.type) or isinstance(a.type, m.BitsetT)):
            if op in ("<<", ">>"):
                b = self._conv(b, width_t)  # the count, in the operand's type
            else:
                a, b = self._conv(a, width_t), self._conv(b, width_t)
            if t is m.INT:
                t = width_t
        if isinstance(a, m.Const) and isinstance(b, m.Const):
            if isinstance(t, m.BitVecT):
                if op in ("/", "%") and b.value == 0:
                    raise SpecError(e.span, "division by zero in a constant expression")
                return m.Const(e.span, t, m.bv_binop(op, a.value, b.value, t.width, t.signed))
            if isinstance(width_t, m.BitVecT) and op in ("<", "<=", ">", ">="):
                return m.Const(e.span, t, int(m.bv_compare(op, a.value, b.value, width_t)))
            return m.Const(e.span, t, _fold(op, a.value, b.value, e.span))
        return m.Bin(e.span, t, op, a, b)

    def _conv(self, x: m.TExpr, t: m.Type) -> m.TExpr:
        """`x` converted to the fixed-width type `t` (C: modulo 2**width), or a signed
        pattern to its value where `t` is an integer range; folded if constant."""
        if isinstance(t, m.IntT):
            return self._value(x)
        if not isinstance(t, m.BitVecT) or x.type == t:
            return x
        if isinstance(x, m.Const):
            return m.Const(x.span, t, m.bv_convert(x.value, x.type, t))
        return m.Conv(x.span, t, x)

    @staticmethod
    def _value(x: m.TExpr) -> m.TExpr:
        """A signed pattern (s8 .. s64) as the integer it stands for, where an integer is
        wanted: stored into a range, an index, a bit number. Anything else is itself."""
        t = x.type
        if not (isinstance(t, m.BitVecT) and t.signed):
            return x
        if isinstance(x, m.Const):
            return m.Const(x.span, m.INT, m.to_signed(x.value, t.width))
        return m.Conv(x.span, m.INT, x)

    def _comparable(self, a: m.TExpr, b: m.TExpr, e: ast.Binary):
        ta, tb = a.type, b.type
        if m.is_intlike(ta) and m.is_intlike(tb):
            return
        if isinstance(ta, m.BitsetT) and (m.is_intlike(tb) or isinstance(tb, m.BitsetT)):
            return
        if isinstance(tb, m.BitsetT) and m.is_intlike(ta):
            return
        if isinstance(ta, m.BoolT) and isinstance(tb, m.BoolT):
            return
        if isinstance(ta, m.EnumT) and ta == tb:
            return
        raise SpecError(e.span, f"cannot compare {ta.describe()} with {tb.describe()}",
                        "both sides of == and != must have the same type")

    def _join(self, a: m.TExpr, b: m.TExpr, span: Span) -> m.Type:
        if m.is_intlike(a.type) and m.is_intlike(b.type):
            return m.arith_type(a.type, b.type)
        if type(a.type) is type(b.type) and (not isinstance(a.type, m.EnumT) or a.type == b.type):
            return a.type
        raise SpecError(span, f"the branches of `?:` have different types ({a.type.describe()} and {b.type.describe()})")

    def _call(self, e: ast.Call, ctx: _Ctx) -> m.TExpr:
        if e.name in self.fns:
            return self._expand_fn(e, ctx)
        if m.fixed_width_type(e.name) is not None:
            if len(e.args) != 1:
                raise SpecError(e.span, f"the conversion '{e.name}(x)' takes one argument")
            x = self.expr(e.args[0], _Ctx(**{**ctx.__dict__, "effects": False}))
            if not m.is_intlike(x.type) and not isinstance(x.type, m.BitsetT):
                raise SpecError(e.args[0].span, f"cannot convert {x.type.describe()} to {e.name}")
            t = m.fixed_width_type(e.name)
            return _respan(self._conv(x, t), e.span) if x.type != t else x
        name = ALIASES.get(e.name, e.name)
        if name in BUILTINS:
            return self._builtin(e, ctx, statement=False)
        if e.name in self.inlines:
            raise SpecError(e.name_span, f"inline procedure '{e.name}' has no value",
                            "call it as a statement; for a value use `fn NAME(args) = expr;`")
        raise SpecError(e.name_span, f"unknown function '{e.name}'",
                        did_you_mean(e.name, list(self.fns) + list(BUILTINS) + list(ALIASES))
                        or "declare it with `fn NAME(args) = expr;`", code="TR201")

    def _expand_fn(self, e: ast.Call, ctx: _Ctx) -> m.TExpr:
        d = self.fns[e.name]
        if e.name in ctx.inline_stack:
            raise SpecError(e.name_span, f"recursive function '{e.name}'",
                            "functions are expanded where they are used and cannot recurse")
        if len(e.args) != len(d.params):
            raise SpecError(e.span, f"'{e.name}' takes {len(d.params)} argument(s), not {len(e.args)}")
        # Capture-avoiding substitution: the arguments are resolved in the caller's
        # scope, the body in a scope of its own parameters only, so a caller's
        # quantifier variable, lemma parameter or fn parameter named like one of ours
        # (or like a global the body reads) cannot replace it.
        params: dict[str, m.TExpr] = {}
        for p, a in zip(d.params, e.args):
            arg = self._argument(a, ctx)
            if p.type is not None:
                pt = self._type(p.type)
                self._check_assignable(pt, arg, a.span, f"parameter '{p.name}' of '{e.name}'")
                arg = self._conv(arg, pt)
            params[p.name] = arg
        inner = _Ctx(**{**ctx.__dict__, "params": params, "bound": {}, "effects": False,
                        "inline_stack": ctx.inline_stack + (e.name,), "what": f"function '{e.name}'"})
        body = self.expr(d.body, inner)
        if d.result is not None:
            rt = self._type(d.result)
            self._check_assignable(rt, body, d.body.span, f"the result of '{e.name}'")
            body = self._conv(body, rt)
        # the expansion stands for the call: traces and counterexamples show `f(x)`, not f's body
        return dataclasses.replace(body, span=e.span)

    def _builtin(self, e: ast.Call, ctx: _Ctx, statement: bool) -> m.Builtin:
        name = ALIASES.get(e.name, e.name)
        sig = BUILTINS[name]
        if len(e.args) != len(sig.args):
            raise SpecError(e.span, f"'{e.name}' takes {len(sig.args)} argument(s), not {len(e.args)}")
        if sig.effect and not ctx.effects:
            raise SpecError(e.span, f"'{e.name}' changes state and cannot appear in {ctx.what}",
                            "side effects belong in statements: assignments, `if`/`while` conditions, calls")
        if sig.statement_only and not statement:
            raise SpecError(e.span, f"'{e.name}()' is a statement, not a value")
        if name in WAITQUEUE_BUILTINS and ctx.process is None:
            raise SpecError(e.span, f"'{e.name}' needs a process context")
        bits_t: m.BitsetT | None = None
        resolved: dict[int, m.TExpr] = {}
        for i, (kind, a) in enumerate(zip(sig.args, e.args)):
            if kind is Arg.BITS:  # first, so that a bit number can be checked against it
                x = self.expr(a, ctx, lvalue=True)
                if not isinstance(x, (m.Var, m.Elem)) or not isinstance(x.type, m.BitsetT):
                    raise SpecError(a.span, f"'{e.name}' needs a bit set variable here, not {x.type.describe()}",
                                    "declare it as `var name: bitset(N);`")
                bits_t = x.type
                resolved[i] = x
        for i, (kind, a) in enumerate(zip(sig.args, e.args)):
            if kind is Arg.BITS:
                continue
            if kind is Arg.LOCK:
                x = self.expr(a, ctx, lvalue=True)
                if not isinstance(x, (m.Var, m.Elem)) or x.type != m.BOOL:
                    raise SpecError(a.span, f"'{e.name}' needs a lock here, not {x.type.describe()}",
                                    "declare a spinlock as a bool variable: `var lock: bool = false;`")
            elif kind is Arg.LV:
                x = self.expr(a, ctx, lvalue=True)
                if isinstance(x, (m.Var, m.Elem)) and isinstance(x.type, m.BitsetT):
                    raise SpecError(a.span, f"'{e.name}' takes a scalar variable; '{_root_name(a)}' is a bit set",
                                    "change bits with set_bit/clear_bit (or their atomic forms), or assign the "
                                    "whole set: `s = {...};`", "TR207")
                if not isinstance(x, (m.Var, m.Elem)) or isinstance(x.type, (m.ArrayT, m.WaitQueueT, m.BitsetT)):
                    raise SpecError(a.span, f"'{e.name}' needs a variable here",
                                    "pass a scalar variable or an array element")
            elif kind is Arg.WQ:
                x = self.expr(a, ctx, lvalue=True)
                if not isinstance(x, (m.Var, m.Elem)) or not isinstance(x.type, m.WaitQueueT):
                    raise SpecError(a.span, f"'{e.name}' needs a wait queue, not {x.type.describe()}",
                                    "declare one with `waitqueue name;`")
            elif kind is Arg.NR:
                x = self._value(self.expr(a, _Ctx(**{**ctx.__dict__, "effects": False})))
                self._check_bitnr_type(x, bits_t, a.span)
                if isinstance(x, m.Const) and not 0 <= x.value < bits_t.size:
                    raise SpecError(a.span, f"bit {x.value} is outside {bits_t.describe()}")
            else:
                x = self.expr(a, _Ctx(**{**ctx.__dict__, "effects": False, "what": "an argument"}))
            resolved[i] = x
        args = [resolved[i] for i in range(len(sig.args))]
        lv_type = args[0].type if args else None
        # the location a read-modify-write acts on (the second argument of atomic_add(i, v))
        loc_type = next((x.type for k, x in zip(sig.args, args) if k is Arg.LV), lv_type)
        for i, (kind, x, a) in enumerate(zip(sig.args, args, e.args)):
            if kind is Arg.VAL and sig.args[0] is Arg.LV and lv_type is not None:
                self._check_assignable(lv_type, x, a.span, "the variable")
                args[i] = self._conv(x, lv_type)
        arith = sig.op in (RmwOp.ADD, RmwOp.SUB, RmwOp.OR)
        if arith and sig.step is None:  # by an argument, in the kernel's order (i, v)
            if not m.is_intlike(args[1].type) or not m.is_intlike(args[0].type):
                raise SpecError(e.span, f"'{e.name}' works on integers")
            if isinstance(args[0].type, m.BitVecT) and args[0].type.signed:  # C converts i to v's type
                args[0] = self._conv(args[0], args[1].type)
        if sig.op is RmwOp.OR and not isinstance(args[1].type, m.BitVecT):
            raise SpecError(e.args[1].span, f"'{e.name}' needs an unsigned fixed-width variable (u8 .. u64), "
                            f"not {args[1].type.describe()}", "declare it as `var v: u32;`")
        if arith and sig.step is not None and not m.is_intlike(args[0].type):
            raise SpecError(e.args[0].span, f"'{e.name}' needs an integer variable, not {args[0].type.describe()}")
        if sig.cls is Cls.PURE:
            for x, a in zip(args, e.args):
                if not m.is_intlike(x.type):
                    raise SpecError(a.span, f"'{name}' takes integers, not {x.type.describe()}")
            joined = m.arith_type(args[0].type, args[-1].type)
            args = [self._conv(x, joined) for x in args]
        result = {Result.VOID: m.VOID, Result.BOOL: m.BOOL, Result.INT: m.INT}.get(sig.result)
        if sig.cls is Cls.PURE:
            result = m.arith_type(args[0].type, args[-1].type)
        elif sig.result is Result.INT and isinstance(loc_type, m.BitVecT):
            result = loc_type  # atomic_inc_return on an unsigned counter wraps
        if sig.result is Result.LV:
            result = lv_type if isinstance(lv_type, m.BitVecT) or not m.is_intlike(lv_type) else m.INT
        if result is m.VOID and not statement:
            raise SpecError(e.span, f"'{e.name}' has no value", "call it as a statement")
        if sig.cls is Cls.PURE and all(isinstance(x, m.Const) for x in args):
            if sig.pure is Pure.ABS:
                v = abs(m.value_of(args[0].value, result))
                return m.Const(e.span, result, v & result.mask if isinstance(result, m.BitVecT) else v)
            if isinstance(result, m.BitVecT):  # compare the patterns as values
                pick = (min if sig.pure is Pure.MIN else max)(args, key=lambda x: m.value_of(x.value, result))
                return m.Const(e.span, result, pick.value)
            fold = min if sig.pure is Pure.MIN else max
            return m.Const(e.span, result, fold(args[0].value, args[1].value))  # type: ignore[return-value]
        return m.Builtin(e.span, result, name, tuple(args))

    def _check_bitnr_type(self, x: m.TExpr, t: m.BitsetT | None, span: Span):
        if t is None:
            return
        if t.elem is not None:
            if x.type != t.elem and not m.is_intlike(x.type):
                raise SpecError(span, f"a bit of {t.describe()} is a {t.elem.name} member, not {x.type.describe()}")
        elif not m.is_intlike(x.type):
            raise SpecError(span, f"a bit number must be an integer, not {x.type.describe()}",
                            "declare the set as bitset(Enum) to use enum members as bits")

    def _process_index(self, e, ctx: _Ctx, example: str) -> m.TExpr | None:
        """The instance named by `p[i]` in `p[i]@label` or `p[i].name` (None for a single
        process), checked against the process array's size."""
        count = self.process_counts[e.process]
        if count is None:
            if e.index is not None:
                raise SpecError(e.index.span, f"'{e.process}' is a single process, not an array")
            return None
        if e.index is None:
            raise SpecError(e.process_span, f"'{e.process}' is an array of {count} processes",
                            f"name one: {example}")
        idx = self._value(self.expr(e.index, _Ctx(**{**ctx.__dict__, "effects": False})))
        if not m.is_intlike(idx.type):
            raise SpecError(e.index.span, "a process index must be an integer")
        if isinstance(idx, m.Const) and not 0 <= idx.value < count:
            raise SpecError(e.index.span, f"process index {idx.value} is outside 0..{count - 1}")
        return idx

    def _at(self, e: ast.AtLabel, ctx: _Ctx) -> m.TExpr:
        if e.process not in self.process_decls:
            raise SpecError(e.process_span, f"unknown process '{e.process}'",
                            did_you_mean(e.process, self.process_decls), code="TR201")
        idx = self._process_index(e, ctx, f"{e.process}[i]@{e.label}")
        labels = self.process_labels.get(e.process)
        if labels is None:
            labels = _labels_of(self.process_decls[e.process], self.inlines)
        if e.label not in labels and e.label != "end":  # `end`: at any valid end state
            raise SpecError(e.label_span, f"process '{e.process}' has no label '{e.label}'",
                            did_you_mean(e.label, labels) or
                            (f"its labels: {', '.join(sorted(labels))}" if labels else "it has no labels"))
        return m.At(e.span, m.BOOL, e.process, idx, e.label)

    def _local_ref(self, e: ast.LocalRef, ctx: _Ctx) -> m.TExpr:
        """`p.r`: another process's register, visible to properties only (a process reads
        its own locals by name and cannot see another's)."""
        if e.process not in self.process_decls:
            raise SpecError(e.process_span, f"unknown process '{e.process}'",
                            did_you_mean(e.process, self.process_decls), code="TR201")
        if ctx.process is not None:
            raise SpecError(e.span, f"'{e.process}.{e.name}' is another process's local variable",
                            "processes share only global variables; properties may read locals as proc.name")
        idx = self._process_index(e, ctx, f"{e.process}[i].{e.name}")
        proc = self.processes.get(e.process)
        if proc is None:
            raise SpecError(e.span, f"'{e.process}.{e.name}' can only be read by properties")
        sym = next((v for v in proc.locals if v.name == e.name), None)
        if sym is not None:
            self.read_locals.add(id(sym))
        if sym is None:
            names = [v.name for v in proc.locals]
            raise SpecError(e.name_span, f"process '{e.process}' has no local variable '{e.name}'",
                            did_you_mean(e.name, names) or
                            (f"its locals: {', '.join(names)}" if names else "it declares no locals"))
        if isinstance(sym.type, m.ArrayT):
            raise SpecError(e.name_span, f"'{e.process}.{e.name}' is an array; properties read scalar locals",
                            "copy the element you need into a scalar local")
        return m.LocalOf(e.span, sym.type, sym, e.process, idx)

    def _quant(self, e: ast.Quantifier, ctx: _Ctx) -> m.TExpr:
        lo = self.const_int(e.lo, "a quantifier bound")
        hi = self.const_int(e.hi, "a quantifier bound")
        if hi - lo > 64:
            raise SpecError(e.span, "a quantifier ranges over at most 65 values")
        b = m.Bound(e.span, m.IntT(lo, hi) if lo <= hi else m.INT, e.var, next(self.uid))
        inner = _Ctx(**{**ctx.__dict__, "bound": {**ctx.bound, e.var: b}, "effects": False})
        body = self.cond(e.body, inner, f"the body of `{e.kind}`")
        return m.Quant(e.span, m.BOOL, e.kind, b, lo, hi, body)

    # -- checks
    def _check_assignable(self, target: m.Type, value: m.TExpr, span: Span, what: str):
        tv = value.type
        ok = (m.is_intlike(target) and m.is_intlike(tv)) or \
            (isinstance(target, m.BoolT) and isinstance(tv, m.BoolT)) or \
            (isinstance(target, m.EnumT) and target == tv) or \
            (isinstance(target, m.BitsetT) and (tv == target or m.is_intlike(tv)))
        if not ok:
            raise SpecError(span, f"type mismatch: {what} is {target.describe()}, the value is {tv.describe()}",
                            "a bool is true/false; compare integers to get one" if isinstance(target, m.BoolT) else None, code="TR203")

    def _check_static_range(self, target: m.Type, value: m.TExpr, span: Span, name: str):
        if isinstance(target, m.IntT) and target.lo is not None and isinstance(value, m.Const) \
                and not target.lo <= value.value <= target.hi:
            raise SpecError(span, f"value {value.value} is outside the range of '{name}' ({target.lo}..{target.hi})")

    # -- properties
    def _properties(self) -> tuple[m.Property, ...]:
        props: list[m.Property] = []
        errors: list[SpecError] = []
        for d in self.spec.items:
            try:
                self._property(d, props)
            except SpecError as e:
                errors.append(e)
        raise_all(errors)
        for name, span in self.assert_names.items():
            props.append(m.Property(name, m.PropertyKind.ASSERT, span))
        if self.spec.of(ast.ProcessDecl):
            first = self.spec.of(ast.ProcessDecl)[0]
            props.append(m.Property(DEADLOCK, m.PropertyKind.DEADLOCK, first.span))
        return tuple(props)

    def _property(self, d, props: list[m.Property]) -> None:
        """Resolve top-level declaration d into `props` if it is a property."""
        if isinstance(d, ast.InvariantDecl):
            props.append(m.Property(d.name, m.PropertyKind.INVARIANT, d.span,
                                    cond=self.cond(d.cond, _Ctx(what=f"invariant '{d.name}'"), "an invariant")))
        elif isinstance(d, ast.ReachableDecl):
            props.append(m.Property(d.name, m.PropertyKind.REACHABLE, d.span,
                                    cond=self.cond(d.cond, _Ctx(what=f"reachable '{d.name}'"), "a reachable condition")))
        elif isinstance(d, ast.FinalDecl):
            props.append(m.Property(d.name, m.PropertyKind.FINAL, d.span,
                                    cond=self.cond(d.cond, _Ctx(what=f"final condition '{d.name}'"),
                                                   "a final condition")))
        elif isinstance(d, ast.PropertyDecl):
            ctx = _Ctx(what=f"property '{d.name}'")
            trig = self.cond(d.trigger, ctx, "a property's condition") if d.trigger is not None else None
            goal = self.cond(d.goal, ctx, "a property's goal")
            props.append(m.Property(d.name, m.PropertyKind.LIVENESS, d.span, trigger=trig, goal=goal))
        elif isinstance(d, ast.LemmaDecl):
            self.lemmas.append(self._lemma(d))
            props.append(m.Property(d.name, m.PropertyKind.LEMMA, d.span))

    def _lemma(self, d: ast.LemmaDecl) -> m.Lemma:
        """A lemma's parameters become bound variables; its body may use them, constants
        and `fn`s, but no state: facts about reachable states are invariants."""
        bound: dict[str, m.Bound] = {}
        params = []
        for p in d.params:
            if p.type is None:
                raise SpecError(p.span, f"lemma parameter '{p.name}' needs a type", f"for example `{p.name}: u64`")
            if p.name in bound:
                raise SpecError(p.span, f"duplicate lemma parameter '{p.name}'", code="TR202")
            t = self._type(p.type)
            if not isinstance(t, (m.BitVecT, m.IntT, m.BoolT, m.EnumT)):
                raise SpecError(p.type.span, f"a lemma parameter cannot be a {t.describe()}",
                                "use u8..u64, a range lo..hi, bool or an enum")
            b = m.Bound(p.span, t, p.name, next(self.uid))
            bound[p.name] = b
            params.append(b)
        body = self.cond(d.body, _Ctx(bound=bound, what=f"lemma '{d.name}'"), "a lemma")
        for x in _subexprs(body):
            if isinstance(x, (m.Var, m.Elem, m.At, m.SelfE)):
                raise SpecError(x.span, f"lemma '{d.name}' reads the state ({source_of(self.spec.source, x.span)})",
                                "a lemma is a fact about its parameters and constants; "
                                "facts about reachable states are invariants")
        return m.Lemma(d.name, d.span, tuple(params), body)

    def _expectations(self, variant: ast.VariantDecl | None, props) -> frozenset[str]:
        names = {p.name for p in props}
        if variant is None:
            expects = tuple(x for x in self.spec.items if isinstance(x, ast.ExpectDecl))
        else:
            expects = variant.expects
        out = set()
        for x in expects:
            for name, span in x.violated:
                if name not in names:
                    raise SpecError(span, f"`expect` names an unknown property '{name}'",
                                    did_you_mean(name, names) or f"properties: {', '.join(sorted(names))}")
                out.add(name)
        return frozenset(out)


# ---- helpers -------------------------------------------------------------------


def _subexprs(x: m.TExpr):
    """Every node of a typed expression, the root first."""
    yield x
    for attr in ("operand", "left", "right", "cond", "then", "orelse", "index", "body"):
        sub = getattr(x, attr, None)
        if isinstance(sub, m.TExpr):
            yield from _subexprs(sub)
    for sub in getattr(x, "args", ()):
        yield from _subexprs(sub)


def source_of(source: str, span: Span) -> str:
    return source_text(source, span, 60)


def _block(span: Span, body: tuple[m.RStmt, ...]) -> m.RStmt:
    """A `{ ... }` block is just its statements; keep them together for the IR."""
    return m.SInlined(span, "", body)


def _walk(body):
    for s in body:
        yield s
        for attr in ("then", "orelse", "body"):
            sub = getattr(s, attr, None)
            if isinstance(sub, tuple):
                yield from _walk(sub)
        if isinstance(s, m.SLabeled):
            yield from _walk((s.stmt,))
        if isinstance(s, m.SChoose):
            for b in s.branches:
                yield from _walk(b)


def _walk_loops(body, in_loop=False):
    """`return` statements that sit inside a loop (not counting nested inlines)."""
    for s in body:
        if isinstance(s, m.SReturn) and in_loop:
            yield s
        if isinstance(s, (m.SWhile, m.SLoop)):
            yield from _walk_loops(s.body, True)
        elif isinstance(s, m.SIf):
            yield from _walk_loops(s.then, in_loop)
            yield from _walk_loops(s.orelse, in_loop)
        elif isinstance(s, m.SInlined) and s.name == "":
            yield from _walk_loops(s.body, in_loop)


def _labels_of(d: ast.ProcessDecl, inlines) -> set[str]:
    out: set[str] = set()
    seen: set[str] = set()

    def walk(s):
        if isinstance(s, ast.Labeled):
            out.add(s.label)
            walk(s.stmt)
        for attr in ("then", "orelse", "body"):
            sub = getattr(s, attr, None)
            if isinstance(sub, ast.Stmt):
                walk(sub)
            elif isinstance(sub, tuple):
                for x in sub:
                    walk(x)
        if isinstance(s, ast.Choose):
            for b in s.branches:
                walk(b)
        if isinstance(s, ast.CallStmt) and s.call.name in inlines and s.call.name not in seen:
            seen.add(s.call.name)
            walk(inlines[s.call.name].body)

    for s in d.body:
        walk(s)
    return out


def _has_effects(e: m.TExpr) -> bool:
    """Whether evaluating the expression changes state (a side-effecting builtin inside)."""
    if isinstance(e, m.Builtin) and BUILTINS[e.name].effect:
        return True
    return any(_has_effects(x) for x in _children(e))


def _children(e: m.TExpr):
    for attr in ("operand", "left", "right", "cond", "then", "orelse", "index", "body"):
        x = getattr(e, attr, None)
        if isinstance(x, m.TExpr):
            yield x
    if isinstance(e, m.Builtin):
        yield from e.args


def _respan(e: m.TExpr, span: Span) -> m.TExpr:
    """An inline argument or a function's expansion keeps its meaning but points at the
    use site (so a trace shows `if (check_block(...))`, not the function's body)."""
    return dataclasses.replace(e, span=span)


def _fold(op: str, a: int, b: int, span: Span) -> int:
    if op in ("/", "%") and b == 0:
        raise SpecError(span, "division by zero in a constant expression")
    if op in ("<<", ">>") and b < 0:
        raise SpecError(span, "negative shift count")
    if op == "<<" and b > 256:
        raise SpecError(span, "shift count too large")
    v = m.fold_binop(op, a, b)
    if v is None:
        raise ValueError(op)
    return v


def _article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _define_expr(text: str) -> ast.Expr:
    import re

    span = NOWHERE
    low = text.lower()
    if low in ("true", "false"):
        return ast.BoolLit(span, low == "true")
    digits = text.removeprefix("-")
    if re.fullmatch(r"0[xX][0-9a-fA-F]+|[0-9]+", digits):
        try:  # the spec's limit on literals, before Python's on converting long decimal text
            literal_value(digits, span)
        except SpecError as e:
            raise SpecError(NOWHERE, f"-D value: {e.message}", e.hint) from None
    try:
        return ast.Number(span, int(text, 0))
    except ValueError:
        pass
    if text.startswith("-"):
        try:
            return ast.Unary(span, "-", ast.Number(span, int(text[1:], 0)))
        except ValueError:
            pass
    if text.isidentifier():
        return ast.Name(span, text)
    raise SpecError(NOWHERE, f"-D value {text!r} is not a number, true/false or a name",
                    "for example: -D N=3, -D KICK=false, -D START=IN_GUEST_MODE")


def _root_name(e: ast.Expr) -> str:
    """The variable an lvalue expression names (`s` of `s` or `s[i]`), for messages."""
    return getattr(e, "name", None) or getattr(getattr(e, "base", None), "name", None) or "it"
