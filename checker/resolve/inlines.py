"""Calls of `inline` procedures (statements) and `fn` functions (expressions), both
expanded at the call site, and the arguments passed to them.

Scoping is lexical: an argument is resolved in the caller's scope, the body in a scope
holding only the callee's own parameters (`bound` is emptied), so substitution never
captures a caller's name. Neither may recurse (`inline_stack`).
"""

from __future__ import annotations

import dataclasses

from ..front import ast
from .. import model as m
from ..semantics.primitives import ALIASES, BUILTINS, Cls
from ..base.errors import Span, SpecError, did_you_mean
from ..base.limits import MAX_EXPANSION
from .base import Ctx, Shared


class Inlines(Shared):
    """Expansion of `inline` and `fn` calls: each parameter is replaced by the resolved
    argument (typed expressions, not text), and the body is resolved afresh at every
    call, in the caller's process and atomic context but in its own name scope (and an
    `fn` body is always pure)."""

    def _call_stmt(self, s: ast.CallStmt, ctx: Ctx) -> m.RStmt:
        c = s.call
        if c.name in self.inlines:
            return self._expand_inline(c, ctx)
        name = ALIASES.get(c.name, c.name)
        if name in BUILTINS and BUILTINS[name].cls is Cls.PURE:  # it would fold to a constant: no step at all
            raise SpecError(c.span, f"'{c.name}' computes a value, and this statement drops it",
                            "use it in an expression, e.g. `x = " + c.name + "(...)`, or delete the statement")
        if name in BUILTINS:
            e = self._builtin(c, dataclasses.replace(ctx, effects=True), statement=True)
            assert isinstance(e, m.Builtin)  # only a pure function folds
            return m.SEval(s.span, e)
        if c.name in self.fns:
            raise SpecError(c.span, f"'{c.name}' is a pure function; its value is unused",
                            "use it in an expression, e.g. `await f(...)` or `x = f(...)`")
        raise SpecError(c.name_span, f"unknown procedure '{c.name}'",
                        did_you_mean(c.name, list(self.inlines) + list(BUILTINS) + list(ALIASES))
                        or "declare it with `inline NAME(params) { ... }`")

    def _expand_inline(self, c: ast.Call, ctx: Ctx) -> m.RStmt:
        d = self.inlines[c.name]
        if c.name in ctx.inline_stack:
            chain = " -> ".join(ctx.inline_stack + (c.name,))
            raise SpecError(c.name_span, f"recursive inline procedure '{c.name}' ({chain})",
                            "inline procedures are expanded at each call and cannot recurse")
        _check_depth(c.name, c.name_span, ctx)
        if len(c.args) != len(d.params):
            raise SpecError(c.span, f"'{c.name}' takes {len(d.params)} argument(s), not {len(c.args)}",
                            f"declared at {d.span}")
        # The body sees its own parameters, never the caller's parameters or bound
        # names: substitution must not capture (an inline called from an inline whose
        # parameter shares a name with a global the callee reads).
        params = {p: self._argument(a, ctx) for p, a in zip(d.params, c.args)}
        inner = dataclasses.replace(ctx, params=params, bound={}, in_inline=True,
                        in_loop=False,  # like C: break/continue never leave a procedure
                        inline_in_atomic=ctx.in_atomic,
                        inline_stack=ctx.inline_stack + (c.name,))
        try:
            body = self.stmts(d.body.body, inner)
        except RecursionError:  # within the limits, the bodies still nest too deep: said at the first call
            if ctx.inline_stack:
                raise
            raise _too_deep(c.name, c.name_span) from None
        if ctx.in_atomic:
            for st in _walk_loops(body):
                raise SpecError(st.span, "`return` inside a loop of an inline procedure called in `atomic`",
                                "restructure the loop, or call the procedure outside `atomic`")
        return m.SInlined(c.span, c.name, body)

    def _argument(self, a: ast.Expr, ctx: Ctx) -> m.TExpr:
        if isinstance(a, ast.Name) and (a.name in ctx.bound or a.name in ctx.params):
            # the caller's own parameter (an array passed on) or bound name comes first,
            # as in `_name`: a global of the same name must not capture it
            return self.expr(a, dataclasses.replace(ctx, effects=False, what="an argument"))
        if isinstance(a, ast.Name) and a.name in self.globals and isinstance(
                self.globals[a.name].type, (m.ArrayT, m.WaitQueueT)):
            sym = self.globals[a.name]
            return m.Var(a.span, sym.type, sym)
        if isinstance(a, ast.Name) and a.name in ctx.locals and isinstance(ctx.locals[a.name].type, m.ArrayT):
            sym = ctx.locals[a.name]
            self.read_locals.add(id(sym))
            return m.Var(a.span, sym.type, sym)
        e = self.expr(a, dataclasses.replace(ctx, effects=False, what="an argument"))
        return e

    def _expand_fn(self, e: ast.Call, ctx: Ctx) -> m.TExpr:
        d = self.fns[e.name]
        if e.name in ctx.inline_stack:
            raise SpecError(e.name_span, f"recursive function '{e.name}'",
                            "functions are expanded where they are used and cannot recurse")
        _check_depth(e.name, e.name_span, ctx)
        if len(e.args) != len(d.params):
            raise SpecError(e.span, f"'{e.name}' takes {len(d.params)} argument(s), not {len(e.args)}",
                            f"declared at {d.span}")
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
        inner = dataclasses.replace(ctx, params=params, bound={}, effects=False,
                        inline_stack=ctx.inline_stack + (e.name,), what=f"function '{e.name}'")
        try:
            body = self.expr(d.body, inner)
        except RecursionError:
            if ctx.inline_stack:
                raise
            raise _too_deep(e.name, e.name_span) from None
        if d.result is not None:
            rt = self._type(d.result)
            self._check_assignable(rt, body, d.body.span, f"the result of '{e.name}'")
            body = self._conv(body, rt)
        # the expansion stands for the call: traces and counterexamples show `f(x)`, not f's body
        return dataclasses.replace(body, span=e.span)


# ---- helpers---------------------------------------------------------------


def _check_depth(name: str, span: Span, ctx: Ctx) -> None:
    """Refuses a call whose expansion would nest more than MAX_EXPANSION calls deep."""
    stack = ctx.inline_stack + (name,)
    if len(stack) > MAX_EXPANSION:
        chain = " -> ".join(stack) if len(stack) <= 6 else " -> ".join(stack[:3] + ("...",) + stack[-2:])
        raise SpecError(span, f"inline and fn calls nest {len(stack)} deep here ({chain}); the limit is "
                        f"{MAX_EXPANSION}", "each call is expanded in place: call the inner ones from a shallower "
                        "level, or merge procedures that only call the next", code="TR107")


def _too_deep(name: str, span: Span) -> SpecError:
    return SpecError(span, f"the expansion of '{name}' nests too deeply to resolve (its calls' bodies, one "
                     "inside the other)", "split the nested statements or expressions over more procedures "
                     "called one after another", code="TR107")


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
        elif isinstance(s, m.SInlined) and s.name == "" or isinstance(s, m.SFair):
            yield from _walk_loops(s.body, in_loop)
