"""What every part of the resolver shares: the context an expression or statement is
resolved in (`Ctx`), the built-in names, and the two questions run.py asks of a spec
before resolving it (its variants, its header comment).

It sits below the parts (declarations, types, expressions, statements, inlines,
variants, contexts), which never import each other: each is a mixin of `_Resolver` and
reaches the others through `self`, as `Shared` declares.
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..front import ast
from .. import model as m
from ..semantics.primitives import BUILTINS
from ..base.errors import Echo, Span, SpecError, source_lines
from ..base.record import record

BASE = "base"
DEADLOCK = "deadlock"
ASSERTIONS = "assertions"
MEMORY_MODELS = m.MEMORY_MODELS  # the one definition: model.MemoryModel
# the bounded models and what their bound counts: tso a CPU's store buffer, lkmm the
# stores of one location a CPU may still read (spec/LANGUAGE.md, "memory lkmm")
BOUNDED = {"tso": "a store buffer", "lkmm": "a location's history"}
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


@record
class Ctx:
    """Where an expression or statement is being resolved.

    A new scope is `dataclasses.replace(ctx, ...)`: the dicts and the label set are
    shared with the enclosing scope, not copied (labels collect into the process's set).
    Lookup order in `_name`: bound names (quantifiers, lemma parameters), then the
    parameters of the fn or inline being expanded, then locals, globals, constants,
    enum members. An fn or inline body starts with `bound` empty and `params` its own:
    bodies are lexically scoped (see `Inlines`)."""

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
    failed: frozenset[str] = frozenset()  # the process's locals whose declaration failed
    what: str = "expression"
    property: bool = False  # an invariant, final, reachable or liveness condition: reads context state


def labels_of(d: ast.ProcessDecl, inlines) -> set[str]:
    """The labels of a process's body as written, with those of the inline procedures
    it calls (for `p@label` before p is resolved, and for `goto` after a failed body).
    Walked with a stack: a chain of inline calls may be longer than Python's recursion."""
    out: set[str] = set()
    seen: set[str] = set()
    stack = list(d.body)
    while stack:
        s = stack.pop()
        if isinstance(s, ast.Labeled):
            out.add(s.label)
            stack.append(s.stmt)
        if isinstance(s, ast.Fair):
            stack.append(s.stmt)
        for attr in ("then", "orelse", "body"):
            sub = getattr(s, attr, None)
            if isinstance(sub, ast.Stmt):
                stack.append(sub)
            elif isinstance(sub, tuple):
                stack.extend(sub)
        if isinstance(s, ast.Choose):
            stack.extend(s.branches)
        if isinstance(s, ast.CallStmt) and s.call.name in inlines and s.call.name not in seen:
            seen.add(s.call.name)
            stack.append(inlines[s.call.name].body)
    return out


class Shared:
    """What the mixins share, declared once so that each is type-checked against it: the
    state of one resolution (set in `_Resolver.__init__`, or by the mixin named beside
    it) and the methods one mixin calls on another (each defined by the mixin named)."""

    spec: ast.Spec
    variant: str
    defines: dict[str, str]
    memory_override: str | None
    store_buffer_override: int | None
    preemptions_override: int | str | None
    consts: dict[str, m.Const]
    enums: dict[str, m.EnumT]
    members: dict[str, tuple[m.EnumT, int]]
    globals: dict[str, m.VarSym]
    inlines: dict[str, ast.InlineDecl]
    fns: dict[str, ast.FnDecl]
    process_decls: dict[str, ast.ProcessDecl]
    process_counts: dict[str, int | None]
    process_labels: dict[str, set[str]]
    processes: dict[str, m.Process]
    assert_names: dict[str, Span]
    lemmas: list[m.Lemma]
    uid: itertools.count[int]
    read_locals: set[int]
    task_syms: dict[str, m.VarSym]
    writing: str | None
    errors: list[SpecError]
    echoes: list[Echo]
    failed: set[str]
    failed_properties: set[str]
    cpus: int | None  # Contexts
    interrupt_names: list[str]  # Contexts
    exit_reasons: list[str]  # Contexts
    percpu_names: set[str]  # Contexts
    preemptions: int | None  # Contexts
    declared_memory: str  # Variants

    if TYPE_CHECKING:
        # _Resolver
        @abstractmethod
        def note(self, e: SpecError) -> None: ...

        @abstractmethod
        def attempt(self, fn: Callable[..., Any], *args: Any, name: str | None = None, default: Any = None) -> Any:
            ...

        # Variants
        @abstractmethod
        def const_int(self, e: ast.Expr, what: str) -> int: ...

        @abstractmethod
        def spec_enum_members(self) -> dict[str, tuple[m.EnumT, int]]: ...

        # Types
        @abstractmethod
        def _type(self, t: ast.TypeExpr) -> m.Type: ...

        @abstractmethod
        def _var(self, d: ast.VarDecl, scope: m.Scope, process: str | None) -> m.VarSym: ...

        @abstractmethod
        def _bitset_value(self, e: ast.ListInit, t: m.BitsetT) -> int: ...

        # Expressions
        @abstractmethod
        def cond(self, e: ast.Expr, ctx: Ctx, what: str) -> m.TExpr: ...

        @abstractmethod
        def lvalue(self, lv: ast.LValue, ctx: Ctx) -> m.TExpr: ...

        @abstractmethod
        def expr(self, e: ast.Expr, ctx: Ctx, lvalue: bool = False) -> m.TExpr: ...

        @abstractmethod
        def _conv(self, x: m.TExpr, t: m.Type) -> m.TExpr: ...

        @staticmethod
        @abstractmethod
        def _value(x: m.TExpr) -> m.TExpr: ...

        @abstractmethod
        def _builtin(self, e: ast.Call, ctx: Ctx, statement: bool) -> m.Builtin | m.Const: ...

        @abstractmethod
        def _check_bitnr_type(self, x: m.TExpr, t: m.BitsetT | None, span: Span) -> None: ...

        @abstractmethod
        def _check_assignable(self, target: m.Type, value: m.TExpr, span: Span, what: str) -> None: ...

        @abstractmethod
        def _check_static_range(self, target: m.Type, value: m.TExpr, span: Span, name: str) -> None: ...

        # Statements
        @abstractmethod
        def stmts(self, body: Any, ctx: Ctx) -> tuple[m.RStmt, ...]: ...

        @abstractmethod
        def _check_gotos(self, body: Any, labels: set[str]) -> None: ...

        # Inlines
        @abstractmethod
        def _call_stmt(self, s: ast.CallStmt, ctx: Ctx) -> m.RStmt: ...

        @abstractmethod
        def _expand_fn(self, e: ast.Call, ctx: Ctx) -> m.TExpr: ...

        # Contexts
        @abstractmethod
        def _thread_locals(self, d: ast.ProcessDecl, locals_: dict[str, m.VarSym]) -> None: ...

        @abstractmethod
        def _process_context(self, d: ast.ProcessDecl, count: int | None, ctx: Ctx) -> m.ProcessContext | None: ...

        @abstractmethod
        def _context_arg(self, kind: Any, a: ast.Expr, ctx: Ctx, fname: str) -> m.TExpr: ...

        @abstractmethod
        def context_global(self, name: str) -> m.VarSym | None: ...

        @abstractmethod
        def context_local(self, proc: m.Process, name: str) -> m.VarSym: ...
