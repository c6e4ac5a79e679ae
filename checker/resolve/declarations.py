"""The declarations other than variables and constants: duplicate names across the
whole spec, processes (their locals and bodies), properties, lemmas and `expect` lines.
The walk over the declarations in order is `_Resolver.run`, in the package's face.
"""

from __future__ import annotations

from ..front import ast
from .. import model as m
from ..base.errors import Span, SpecError, did_you_mean, source_text
from ..base.limits import MAX_PROCESSES
from .base import ASSERTIONS, BASE, Ctx, DEADLOCK, RESERVED_TYPES, Shared, labels_of


class Declarations(Shared):
    """Whole-spec checks and the declarations that hold statements or properties. A
    process's labels are collected while its body is resolved (`Ctx.labels`), so the
    `goto` check runs after the body; properties are resolved after every process,
    because `p.local` needs the process's locals."""

    def _check_duplicates(self):
        seen: dict[str, tuple[str, Span]] = {}
        props: dict[str, Span] = {}
        variants: dict[str, Span] = {}

        def add(name: str, what: str, span: Span):
            if name in RESERVED_TYPES or name in ("self", "true", "false", "any"):
                self.note(SpecError(span, f"'{name}' is a reserved word and cannot name a {what}",
                                    f"choose another name, e.g. '{name}_'", code="TR204"))
            elif name in seen:
                prev_what, prev = seen[name]
                self.note(SpecError(span, f"duplicate name '{name}'",
                                    f"already declared as a {prev_what} at {prev}", code="TR202"))
            else:
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
                    self.note(SpecError(d.span, f"duplicate property name '{d.name}'",
                                        "deadlock and assertions are built-in property names"
                                        if d.name in (DEADLOCK, ASSERTIONS)
                                        else f"already declared at {props[d.name]}", code="TR202"))
                else:
                    props[d.name] = d.span
            elif isinstance(d, ast.VariantDecl):
                if d.name in variants or d.name == BASE:
                    self.note(SpecError(d.span, f"duplicate variant name '{d.name}'",
                                        "'base' names the model without overrides"
                                        if d.name == BASE else f"already declared at {variants[d.name]}",
                                        code="TR202"))
                else:
                    variants[d.name] = d.span
        models = self.spec.of(ast.ModelDecl)
        if len(models) > 1:
            self.note(SpecError(models[1].span, "a spec declares one model", "remove this `model` line"))

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

    def _process_count(self, d: ast.ProcessDecl) -> int | None:
        if d.dim is None:
            return None
        if d.dim.count is None:
            raise SpecError(d.dim.span, "a process array takes a count, `process name[N]`",
                            "e.g. `process vcpu[2] { ... }`")
        n = self.const_int(d.dim.count, "a process count")
        if not 1 <= n <= MAX_PROCESSES:
            raise SpecError(d.dim.span, f"a process array has 1 to {MAX_PROCESSES} processes, not {n}",
                            f"a model has at most {MAX_PROCESSES} processes in all, counting every instance")
        return n

    def _process(self, d: ast.ProcessDecl) -> m.Process:
        count = self.process_counts[d.name]
        locals_: dict[str, m.VarSym] = {}
        failed: set[str] = set()
        for v in d.locals:
            if v.name in locals_ or v.name in failed:
                self.note(SpecError(v.span, f"duplicate local variable '{v.name}'",
                                    "give each local its own name", code="TR202"))
            elif v.name in self.globals or v.name in self.consts:
                self.note(SpecError(v.span, f"local variable '{v.name}' shadows a global name",
                                    "give it another name"))
            else:
                sym = self.attempt(self._var, v, m.Scope.LOCAL, d.name)
                if sym is None:
                    failed.add(v.name)
                else:
                    locals_[v.name] = sym
        self.failed |= {f"{d.name}.{n}" for n in failed}  # for `p.n` in properties
        self._thread_locals(d, locals_)
        labels: set[str] = set()
        proc_stub = m.Process(d.name, d.span, count, d.unfair, tuple(locals_.values()), (),
                              frozenset(), d.end_span)
        ctx = Ctx(process=proc_stub, process_count=count, locals=locals_, labels=labels, failed=frozenset(failed))
        before = len(self.errors) + len(self.echoes)
        body = self.stmts(d.body, ctx)
        # a label inside a statement that failed was never collected: check against them all
        self._check_gotos(body, labels if len(self.errors) + len(self.echoes) == before
                          else labels | labels_of(d, self.inlines))
        context = self._process_context(d, count, ctx)
        return m.Process(d.name, d.span, count, d.unfair, tuple(locals_.values()), body,
                         frozenset(labels), d.end_span, context)

    def _properties(self) -> tuple[m.Property, ...]:
        props: list[m.Property] = []
        for d in self.spec.items:
            try:
                self._property(d, props)
            except SpecError as e:
                self.note(e)
                if isinstance(d, ast.Decl):  # an `expect` naming it is no error of its own
                    self.failed_properties.add(d.name)
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
                                    cond=self.cond(d.cond, Ctx(what=f"invariant '{d.name}'", property=True), "an invariant")))
        elif isinstance(d, ast.ReachableDecl):
            props.append(m.Property(d.name, m.PropertyKind.REACHABLE, d.span,
                                    cond=self.cond(d.cond, Ctx(what=f"reachable '{d.name}'", property=True), "a reachable condition")))
        elif isinstance(d, ast.FinalDecl):
            props.append(m.Property(d.name, m.PropertyKind.FINAL, d.span,
                                    cond=self.cond(d.cond, Ctx(what=f"final condition '{d.name}'", property=True),
                                                   "a final condition")))
        elif isinstance(d, ast.PropertyDecl):
            ctx = Ctx(what=f"property '{d.name}'", property=True)
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
                raise SpecError(p.span, f"duplicate lemma parameter '{p.name}'", "give each parameter its own name",
                                code="TR202")
            t = self._type(p.type)
            if not isinstance(t, (m.BitVecT, m.IntT, m.BoolT, m.EnumT)):
                raise SpecError(p.type.span, f"a lemma parameter cannot be a {t.describe()}",
                                "use u8..u64, a range lo..hi, bool or an enum")
            b = m.Bound(p.span, t, p.name, next(self.uid))
            bound[p.name] = b
            params.append(b)
        body = self.cond(d.body, Ctx(bound=bound, what=f"lemma '{d.name}'"), "a lemma")
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
                if name not in names and name not in self.failed_properties:
                    self.note(SpecError(span, f"`expect` names an unknown property '{name}'",
                                        did_you_mean(name, names) or f"properties: {', '.join(sorted(names))}"))
                out.add(name)
        return frozenset(out)


# ---- helpers---------------------------------------------------------------


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
