"""Statements: the control rules of the language (no `loop`, label, `goto` or
`choose` inside `atomic`; `await` only first in it; `break` only in a loop, `return`
only in an inline), checked where the statement is resolved.
"""

from __future__ import annotations

import dataclasses

from ..front import ast
from .. import model as m
from ..semantics.primitives import BUILTINS
from ..base.errors import Echo, Span, SpecError, did_you_mean
from .base import ASSERTIONS, Ctx, DEADLOCK, Shared


class Statements(Shared):
    """Statements in a process body or an inline body. The side-effecting primitives are
    allowed (`effects=True`) in an assignment's value, an `if`/`while` condition and a
    call statement, not in an `await` condition nor in parts that must stay pure (`?:`
    branches, the right operand of `&&`, arguments)."""

    def stmts(self, body, ctx: Ctx) -> tuple[m.RStmt, ...]:
        """The statements of a body; one that fails is noted and left out, and the next
        is resolved (the model is not built when any failed)."""
        out = []
        for s in body:
            r = self.attempt(self.stmt, s, ctx)
            if r is not None:
                out.append(r)
        return tuple(out)

    def _part(self, s: ast.Stmt, ctx: Ctx) -> tuple[m.RStmt, ...]:
        """A branch or a loop's body: resolved even when the condition before it failed."""
        out = self.stmts((s,), ctx)
        return self._as_body(out[0]) if out else ()

    def stmt(self, s: ast.Stmt, ctx: Ctx) -> m.RStmt:
        eff = dataclasses.replace(ctx, effects=True)
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
            cond = self.attempt(self.cond, s.cond, eff, "an `if` condition")
            then = self._part(s.then, ctx)
            orelse = self._part(s.orelse, ctx) if s.orelse else ()
            if cond is None:
                raise Echo(s.cond.span, "the condition failed")
            return m.SIf(s.span, cond, then, orelse)
        if isinstance(s, ast.While):
            cond = self.attempt(self.cond, s.cond, eff, "a `while` condition")
            body = self._part(s.body, dataclasses.replace(ctx, in_loop=True))
            if cond is None:
                raise Echo(s.cond.span, "the condition failed")
            return m.SWhile(s.span, cond, body)
        if isinstance(s, ast.Loop):
            if ctx.in_atomic:
                raise SpecError(s.span, "`loop` inside `atomic` would never end",
                                "use `while (cond)` inside atomic blocks")
            inner = dataclasses.replace(ctx, in_loop=True)
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
                    assert ctx.process is not None  # labels are collected in a process body
                    raise SpecError(s.label_span, f"duplicate label '{s.label}' in process '{ctx.process.name}'",
                                    "give each label its own name in a process", code="TR202")
                ctx.labels.add(s.label)
            return m.SLabeled(s.span, s.label, self.stmt(s.stmt, ctx))
        if isinstance(s, ast.Goto):
            if ctx.in_atomic:
                raise SpecError(s.span, "`goto` is not allowed inside `atomic`",
                                "an atomic block runs as one step; jump after it")
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
                    raise SpecError(s.span, f"'{s.name}' is a built-in property name",
                                    "choose another assert name")
                prev = self.assert_names.get(s.name)
                if prev is not None and prev != s.span and not ctx.in_inline:
                    raise SpecError(s.span, f"duplicate assertion name '{s.name}'", f"already used at {prev}", code="TR202")
                self.assert_names[s.name] = s.span
            else:
                self.assert_names.setdefault(ASSERTIONS, s.span)
            return m.SAssert(s.span, name, self.cond(s.cond, ctx, "an assertion"))
        if isinstance(s, ast.Skip):
            return m.SSkip(s.span)
        if isinstance(s, ast.Preemptible):
            if ctx.in_atomic:
                raise SpecError(s.span, "`preemptible` is not allowed inside `atomic`",
                                "an atomic block is one step: nothing preempts it")
            # a block the context lowering recognises by its name (no identifier can be it)
            return m.SInlined(s.span, m.PREEMPTIBLE_REGION, self.stmts(s.body.body, ctx))
        if isinstance(s, (ast.Stutter, ast.Fair)):
            word = "stutter" if isinstance(s, ast.Stutter) else "fair"
            if ctx.in_atomic:
                raise SpecError(s.span, f"`{word}` is not allowed inside `atomic`",
                                "an atomic block is one step; mark the `atomic` statement itself"
                                if word == "fair" else "put the `stutter;` before or after the atomic block")
            if isinstance(s, ast.Stutter):
                return m.SStutter(s.span)
            body = self._as_body(self.stmt(s.stmt, ctx))
            if not body:
                raise SpecError(s.span, "`fair` needs a statement that takes a step", "write `fair { ... }`")
            return m.SFair(s.span, s.strong, body)
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
        raise SpecError(s.span, "unsupported statement", "spec/LANGUAGE.md lists the statements")

    def _as_body(self, s: m.RStmt) -> tuple[m.RStmt, ...]:
        return s.body if isinstance(s, m.SInlined) and s.name == "" else (s,)

    def _atomic(self, s: ast.Atomic, ctx: Ctx) -> m.RStmt:
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
        inner = dataclasses.replace(ctx, in_atomic=True, in_loop=ctx.in_loop if nested else False,
                        inline_in_atomic=ctx.inline_in_atomic if nested else False)
        rest = self.stmts(body, inner)
        for st in m.walk_statements(rest):
            if isinstance(st, m.SEval) and BUILTINS[st.call.name].blocks:
                raise SpecError(st.span, f"`{st.call.name}()` blocks and cannot be inside `atomic`",
                                "move it out of the atomic block: a step that waits cannot be part of one")
        return m.SAtomic(s.span, ((guard,) if guard else ()) + rest)

    def _check_gotos(self, body, labels: set[str]):
        for s in m.walk_statements(body):
            if isinstance(s, m.SGoto) and s.label not in labels:
                self.note(SpecError(s.span, f"goto to an unknown label '{s.label}'",
                                    did_you_mean(s.label, labels) or "labels are `name:` before a statement",
                                    code="TR201"))


def fair_end_traps(processes, properties) -> tuple[tuple[int, str], ...]:
    """(line, message) for each `end` label that starts a `choose` of a fair process in
    which a branch can never start (`await false`: the author's way of saying "may stay
    here") and none is `stutter;`. Weak fairness forces the other branches once one of
    them stays enabled, so the process cannot rest at the label for ever, and a liveness
    property that needs it to may hold for the wrong reason."""
    if not any(p.kind is m.PropertyKind.LIVENESS for p in properties):
        return ()
    out = []
    for proc in processes:
        if proc.unfair:
            continue
        for s in m.walk_statements(proc.body):
            if not (isinstance(s, m.SLabeled) and s.label.startswith("end")):
                continue
            first = _first(s.stmt)
            if isinstance(first, (m.SLoop, m.SWhile)) and first.body:
                first = _first(first.body[0]) if isinstance(first, m.SLoop) else first
            if not isinstance(first, m.SChoose):
                continue
            starts = [_first(b[0]) if b else None for b in first.branches]
            if any(isinstance(x, m.SStutter) for x in starts):
                continue
            never = [x for x in starts if x is not None and _never_starts(x)]
            if never:
                out.append((s.span.line,
                            f"{proc.name}: end label '{s.label}': the branch meant to stay there (line "
                            f"{never[0].span.line}) can never start, so weak fairness forces another branch once "
                            f"one stays enabled, and {proc.name} cannot rest at '{s.label}' for ever; to let it, "
                            f"write that branch as `{{ stutter; }}`, or declare `unfair process {proc.name}`"))
    return tuple(out)


def _first(s):
    """The statement whose first step `s` takes (through blocks and labels)."""
    while True:
        if isinstance(s, m.SInlined) and s.body:
            s = s.body[0]
        elif isinstance(s, m.SLabeled):
            s = s.stmt
        elif isinstance(s, m.SFair) and s.body:
            s = s.body[0]
        else:
            return s


def _never_starts(s) -> bool:
    """An `await false` (or an atomic block guarded by it): a step that is never enabled."""
    if isinstance(s, m.SAtomic) and s.body and isinstance(s.body[0], m.SAwait):
        s = s.body[0]
    return isinstance(s, m.SAwait) and isinstance(s.cond, m.Const) and not s.cond.value


# ---- helpers---------------------------------------------------------------


def _block(span: Span, body: tuple[m.RStmt, ...]) -> m.RStmt:
    """A `{ ... }` block is just its statements; keep them together for the IR."""
    return m.SInlined(span, "", body)


def guest_end_reads(processes, properties) -> tuple[tuple[int, str], ...]:
    """(line, message) for each property that reads `G@end` of a guest: a guest may stop
    at any pc (it runs only while its thread is in guest mode), so `G@end` holds wherever
    it is not halted, its first pc included, and says nothing about what it has done."""
    guests = {p.name for p in processes if p.context is not None and p.context.kind is m.ContextKind.GUEST}
    out = []
    for prop in properties:
        for x in (prop.cond, prop.trigger, prop.goal):
            for at in m.terms(x):
                if isinstance(at, m.At) and at.process in guests and at.label == "end":
                    out.append((at.span.line,
                                f"{prop.name}: '{at.process}@end' holds wherever the guest {at.process} is not "
                                f"halted, before it has run at all too (a guest may stop at any pc); to say "
                                f"how far it got, put a label there (`{at.process}@LABEL`) or set a ghost flag"))
    return tuple(out)
