"""An independent reference semantics for expressions, on the syntax tree.

The checker resolves names and expands `fn` calls once, in checker/resolve/, and every
engine (explicit, bmc, induction, the Promela twin) starts from that resolved model,
so a resolver bug is shared by all of them and no cross-engine test can see it. This
evaluator shares nothing with the pipeline after the parser: it reads `checker.front.ast`
and gives an expression its meaning by textbook substitution, the way LANGUAGE.md
describes it. A call `f(a, b)` is f's body with the parameters replaced by the
argument expressions (capture-avoiding: a binder of the body that would capture a
free name of an argument is renamed first); a quantifier is its body with the bound
name replaced by each literal of its range in turn. Names left once every binder is
gone are constants, enum members or variables (read in the initial state).

Scope: integers (unbounded, `/` and `%` truncating toward zero as in C), bools, ranges,
enums, arrays, `?:`, `min`/`max`, `exists`/`forall`, `fn` without unsigned parameter
types. `&&`, `||`, `->`, `?:` and quantifiers short-circuit, as the compiled code does.
Anything else raises `Unsupported`.
"""

from __future__ import annotations

import dataclasses
import itertools

from checker.front import ast


class Unsupported(Exception):
    """The expression uses something this evaluator does not model."""


class RefModelError(Exception):
    """The expression goes wrong when evaluated (a division by zero, an index out of bounds)."""


_fresh = itertools.count()


def free_names(e: ast.Expr) -> set[str]:
    """Names free in `e` (not bound by one of its quantifiers)."""
    if isinstance(e, ast.Name):
        return {e.name}
    if isinstance(e, ast.Quantifier):
        return free_names(e.lo) | free_names(e.hi) | (free_names(e.body) - {e.var})
    if isinstance(e, ast.Index):
        return {e.name} | free_names(e.index)
    out: set[str] = set()
    for c in _children(e):
        out |= free_names(c)
    return out


def _children(e: ast.Expr) -> tuple[ast.Expr, ...]:
    if isinstance(e, ast.Unary):
        return (e.operand,)
    if isinstance(e, ast.Binary):
        return (e.left, e.right)
    if isinstance(e, ast.Conditional):
        return (e.cond, e.then, e.orelse)
    if isinstance(e, ast.Call):
        return e.args
    if isinstance(e, ast.Index):
        return (e.index,)
    if isinstance(e, ast.Quantifier):
        return (e.lo, e.hi, e.body)
    if isinstance(e, (ast.Number, ast.BoolLit, ast.Name)):
        return ()
    raise Unsupported(type(e).__name__)


def subst(e: ast.Expr, m: dict[str, ast.Expr]) -> ast.Expr:
    """`e` with each free name in `m` replaced by its expression, capture-avoiding."""
    if not m:
        return e
    if isinstance(e, ast.Name):
        return m.get(e.name, e)
    if isinstance(e, (ast.Number, ast.BoolLit)):
        return e
    if isinstance(e, ast.Index):
        name = e.name
        if name in m:  # an array passed to a fn by name
            target = m[name]
            if not isinstance(target, ast.Name):
                raise Unsupported("indexing an argument that is not an array name")
            name = target.name
        return dataclasses.replace(e, name=name, index=subst(e.index, m))
    if isinstance(e, ast.Quantifier):
        lo, hi = subst(e.lo, m), subst(e.hi, m)
        inner = {k: v for k, v in m.items() if k != e.var}
        var, body = e.var, e.body
        if any(var in free_names(v) for v in inner.values()):
            fresh = f"{var}'{next(_fresh)}"  # not a name the parser accepts: cannot clash
            body = subst(body, {var: ast.Name(e.span, fresh)})
            var = fresh
        return dataclasses.replace(e, var=var, lo=lo, hi=hi, body=subst(body, inner))
    if isinstance(e, ast.Unary):
        return dataclasses.replace(e, operand=subst(e.operand, m))
    if isinstance(e, ast.Binary):
        return dataclasses.replace(e, left=subst(e.left, m), right=subst(e.right, m))
    if isinstance(e, ast.Conditional):
        return dataclasses.replace(e, cond=subst(e.cond, m), then=subst(e.then, m), orelse=subst(e.orelse, m))
    if isinstance(e, ast.Call):
        return dataclasses.replace(e, args=tuple(subst(a, m) for a in e.args))
    raise Unsupported(type(e).__name__)


def _cdiv(a: int, b: int) -> int:
    if b == 0:
        raise RefModelError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class Reference:
    """The constants, enums, fns and initial variable values of one spec."""

    def __init__(self, spec: ast.Spec):
        self.fns = {d.name: d for d in spec.of(ast.FnDecl)}
        self.values: dict[str, object] = {}
        for d in spec.of(ast.EnumDecl):
            for i, (member, _) in enumerate(d.members):
                self.values[member] = i
        for d in spec.of(ast.ConstDecl):
            self.values[d.name] = self.eval(d.value)
        for d in spec.of(ast.VarDecl):
            self.values[d.name] = self._initial(d)
        self.invariants = {d.name: d.cond for d in spec.of(ast.InvariantDecl)}

    def _initial(self, d: ast.VarDecl):
        if isinstance(d.init, ast.ListInit):
            return [self.eval(x) for x in d.init.items]
        if d.dim is not None or d.init is None or isinstance(d.init, ast.AnyInit):
            raise Unsupported(f"the initial value of {d.name}")
        return self.eval(d.init)

    def invariant(self, name: str) -> bool:
        return self.eval(self.invariants[name])

    def eval(self, e: ast.Expr):
        if isinstance(e, ast.Number):
            return e.value
        if isinstance(e, ast.BoolLit):
            return e.value
        if isinstance(e, ast.Name):
            if e.name not in self.values:
                raise Unsupported(f"free name {e.name}")
            return self.values[e.name]
        if isinstance(e, ast.Index):
            arr, i = self.values[e.name], self.eval(e.index)
            if not isinstance(arr, list):
                raise Unsupported(f"{e.name} is not an array")
            if not 0 <= i < len(arr):
                raise RefModelError(f"index {i} out of bounds of {e.name}")
            return arr[i]
        if isinstance(e, ast.Unary):
            v = self.eval(e.operand)
            return {"!": lambda: not v, "-": lambda: -v, "~": lambda: ~v}[e.op]()
        if isinstance(e, ast.Binary):
            return self._binary(e)
        if isinstance(e, ast.Conditional):
            return self.eval(e.then) if self.eval(e.cond) else self.eval(e.orelse)
        if isinstance(e, ast.Quantifier):
            lo, hi = self.eval(e.lo), self.eval(e.hi)
            cases = (self.eval(subst(e.body, {e.var: ast.Number(e.span, k)})) for k in range(lo, hi + 1))
            return any(cases) if e.kind == "exists" else all(cases)
        if isinstance(e, ast.Call):
            return self._call(e)
        raise Unsupported(type(e).__name__)

    def _call(self, e: ast.Call):
        if e.name in ("min", "max") and e.name not in self.fns:
            a, b = (self.eval(x) for x in e.args)
            return min(a, b) if e.name == "min" else max(a, b)
        d = self.fns.get(e.name)
        if d is None:
            raise Unsupported(f"call of {e.name}")
        if any(p.type is not None and not isinstance(p.type, (ast.RangeType, ast.BoolType)) for p in d.params) \
                or (d.result is not None and not isinstance(d.result, (ast.RangeType, ast.BoolType))):
            raise Unsupported(f"typed parameters of {e.name}")
        return self.eval(subst(d.body, {p.name: a for p, a in zip(d.params, e.args)}))

    def _binary(self, e: ast.Binary):
        op = e.op
        if op == "&&":
            return bool(self.eval(e.left)) and bool(self.eval(e.right))
        if op == "||":
            return bool(self.eval(e.left)) or bool(self.eval(e.right))
        if op == "->":
            return (not self.eval(e.left)) or bool(self.eval(e.right))
        a, b = self.eval(e.left), self.eval(e.right)
        if op == "/":
            return _cdiv(a, b)
        if op == "%":
            return a - b * _cdiv(a, b)
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
               "==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, "<=": lambda: a <= b,
               ">": lambda: a > b, ">=": lambda: a >= b, "&": lambda: a & b, "|": lambda: a | b,
               "^": lambda: a ^ b}
        if op not in ops:
            raise Unsupported(f"operator {op}")
        return ops[op]()
