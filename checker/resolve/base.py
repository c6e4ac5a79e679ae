"""What every part of the resolver shares: the context an expression or statement is
resolved in (`Ctx`), the built-in names, and the two questions run.py asks of a spec
before resolving it (its variants, its header comment).

It sits below the parts (declarations, types, expressions, statements, inlines,
variants), which never import each other: each is a mixin of `_Resolver` and reaches
the others through `self`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..front import ast
from .. import model as m
from ..semantics.primitives import BUILTINS
from ..base.errors import source_lines

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


@dataclass(frozen=True, slots=True)
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
