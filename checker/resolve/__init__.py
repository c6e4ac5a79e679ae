"""Syntax tree -> resolved model: bind names, check types and ranges, fold constants,
apply a variant's and the command line's constant overrides, expand inline procedures.

Every problem is a SpecError at the span of the offending text, with a hint where one
helps (the closest known name, the declared range, the rule that was broken).

The pass is one class, `_Resolver`, put together from one mixin per concern, each in
its own module: variants (constants and their overrides, the memory model), types
(types, dimensions, initial values), declarations (names, processes, properties,
lemmas), statements, inlines (`inline` and `fn` calls) and expressions. The mixins
never import each other; they share only `base` (the context `Ctx` and the built-in
names) and call each other through `self`. What other modules import from
`checker.resolve` is re-exported here.
"""

from __future__ import annotations

import itertools

from ..front import ast
from .. import model as m
from ..semantics.primitives import ALIASES, BUILTINS
from ..base.errors import NOWHERE, STAGE_CODES, Echo, Span, SpecError, combined, did_you_mean
from ..base.limits import MAX_VALUES
from .contexts import Contexts
from .base import BASE, DEFAULT_STORE_BUFFER, MEMORY_MODELS, RESERVED_TYPES, header_comment, variant_names
from .declarations import Declarations
from .expressions import Expressions
from .inlines import Inlines
from .statements import Statements, fair_end_traps, guest_end_reads
from .types import Types
from .variants import Variants, parse_defines

#: what the rest of the checker and the tests import from here
__all__ = [
    "ALIASES", "BASE", "BUILTINS", "DEFAULT_STORE_BUFFER", "MAX_VALUES", "MEMORY_MODELS", "RESERVED_TYPES",
    "header_comment", "parse_defines", "resolve", "variant_names",
]


def resolve(spec: ast.Spec, variant: str = BASE, defines: dict[str, str] | None = None,
            memory: str | None = None, store_buffer: int | None = None,
            preemptions: int | str | None = None) -> m.Model:
    """`memory`, `store_buffer` and `preemptions` (a bound or "unbounded") come from the
    command line and override the spec."""
    r = _Resolver(spec, variant, defines or {}, memory, store_buffer, preemptions)
    try:
        return r.run()
    except SpecError as e:
        r.note(e)
        raise r.failure().with_code(STAGE_CODES["resolve"]) from None


# ---- the resolver --------------------------------------------------------------


class _Resolver(Declarations, Variants, Types, Statements, Inlines, Expressions, Contexts):
    """The state of one resolution: the symbol tables, filled in the order `run` walks
    the declarations (constants first, so that types and sizes can use them; processes
    last, so that a body sees every global)."""

    def __init__(self, spec: ast.Spec, variant: str, defines: dict[str, str],
                 memory: str | None, store_buffer: int | None = None, preemptions: int | str | None = None):
        self.spec = spec
        self.preemptions_override = preemptions
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
        self.task_syms: dict[str, m.VarSym] = {}  # process -> its task state, once `P.state` is read
        self.writing: str | None = None  # the name an assignment is storing to (not a read)
        self.cpus: int | None = None  # `cpus N;`, once the contexts header is read (constants come first)
        # every error of the spec in one run: each declaration and statement is resolved
        # on after an error (`attempt`); a name whose declaration failed, or that was
        # reported unknown, is in `failed`, and a use of it is an Echo, not reported again
        self.errors: list[SpecError] = []
        self.echoes: list[Echo] = []
        self.failed: set[str] = set()  # names, `p.local` and `p@label` of p's
        self.failed_properties: set[str] = set()

    # -- errors
    def note(self, e: SpecError) -> None:
        for x in e.errors:
            if isinstance(x, Echo):
                self.echoes.append(x)
            else:
                self.errors.append(x)

    def attempt(self, fn, *args, name: str | None = None, default=None):
        """fn(*args), or `default` when it fails: the error is noted and `name` (what
        the call declares) marked failed, so that its uses are not reported again."""
        try:
            return fn(*args)
        except SpecError as e:
            self.note(e)
            if name is not None:
                self.failed.add(name)
            return default

    def failure(self) -> SpecError:
        """What the run raises: every error noted, in file order (an echo only if,
        against the rule, nothing it echoes was reported)."""
        echo: list[SpecError] = list(self.echoes[:1])
        return combined(self.errors or echo)

    # -- top level
    def run(self) -> m.Model:
        spec = self.spec
        variants = {v.name: v for v in spec.of(ast.VariantDecl)}
        if self.variant != BASE and self.variant not in variants:
            raise SpecError(NOWHERE, f"unknown variant '{self.variant}'",
                            did_you_mean(self.variant, variant_names(spec))
                            or f"variants: {', '.join(variant_names(spec))}", code="TR205")
        self._check_duplicates()
        overrides = self.attempt(self._collect_overrides, variants.get(self.variant), default={})
        self._resolve_consts(overrides)
        memory_name, store_buffer = self.attempt(self._memory, variants.get(self.variant), default=("sc", None))
        memory = m.MemoryModel(memory_name)
        try:
            self._contexts_header(self.preemptions_override)
        except SpecError as e:  # what comes next reads the CPUs and the preemption bound
            self.note(e)
            raise self.failure() from None
        for d in spec.of(ast.EnumDecl):
            t = m.EnumT(d.name, tuple(n for n, _ in d.members))
            self.enums[d.name] = t
            for i, (n, _) in enumerate(d.members):
                self.members[n] = (t, i)
        for d in spec.of(ast.ProcessDecl):
            self.process_decls[d.name] = d
            self.process_counts[d.name] = self.attempt(self._process_count, d, name=d.name)
        for d in spec.of(ast.InlineDecl):
            self.inlines[d.name] = d
        for d in spec.of(ast.FnDecl):
            self.fns[d.name] = d
        # every group is resolved even when one before it failed: what would only echo
        # an earlier error is an Echo (see `failed`), and the rest are errors of their own
        for d in spec.items:
            if isinstance(d, ast.VarDecl):
                sym = self.attempt(self._var, self._percpu_decl(d) if d.percpu else d, m.Scope.GLOBAL, None,
                                   name=d.name)
            elif isinstance(d, ast.WaitQueueDecl):
                sym = self.attempt(self._waitqueue, d, name=d.name)
            else:
                continue
            if sym is not None:
                self.globals[d.name] = sym
        resolved: list[m.Process] = []
        for d in spec.of(ast.ProcessDecl):
            if d.name in self.failed:  # its count failed: its body would be resolved against nothing
                continue
            p = self.attempt(self._process, d, name=d.name)
            if p is not None:
                resolved.append(p)
        processes = tuple(resolved)
        self.process_labels = {p.name: set(p.labels) for p in processes}
        self.processes = {p.name: p for p in processes}
        if not spec.of(ast.ProcessDecl) and not spec.of(ast.LemmaDecl):
            raise SpecError(Span(spec.file, 1, 1, 1, 1), "the model declares no process",
                            "add `process NAME { ... }` (or a `lemma`)")
        properties = self._properties()
        expected = self._expectations(variants.get(self.variant), properties)
        if self.errors or self.echoes:
            raise self.failure()
        constants = {n: self._const_value(c) for n, c in self.consts.items()}
        return m.Model(
            name=spec.name, file=spec.file, source=spec.source, variant=self.variant,
            constants=constants, memory=memory, declared_memory=m.MemoryModel(self.declared_memory),
            globals=tuple(self.globals.values()),
            processes=processes, properties=properties, expected_violations=expected,
            header=header_comment(spec.source), lemmas=tuple(self.lemmas),
            store_buffer=store_buffer, warnings=self._unread_locals(processes) + fair_end_traps(processes, properties)
            + guest_end_reads(processes, properties),
            task_states_read=frozenset(self.task_syms), cpus=self.cpus, preemptions=self.preemptions,
            exit_reasons=tuple(self.exit_reasons))
