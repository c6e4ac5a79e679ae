"""Constants and their overrides: a `const` is folded once, then a variant's `set`
lines and the command line's `-D NAME=VALUE` replace its value (the command line last,
on top of the variant); an override must keep the constant's type. The memory model is
chosen here too, by the same precedence (command line, variant, model).
"""

from __future__ import annotations

import re

from ..front import ast
from .. import model as m
from ..base.errors import NOWHERE, Echo, SpecError, did_you_mean
from ..front.parse import literal_value
from .base import BOUNDED, Ctx, DEFAULT_STORE_BUFFER, MAX_STORE_BUFFER, MEMORY_MODELS, Shared


def parse_define(text: str) -> tuple[str, str]:
    """`NAME=VALUE` from the command line."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise SpecError(NOWHERE, f"-D expects NAME=VALUE, got {text!r}",
                        "for example: -D KICK_ON_PENDING=false")
    return name.strip(), value.strip()


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


class Variants(Shared):
    """Constants: folded in declaration order, so a constant may use earlier ones; an
    override is resolved like the default and must have its type (an enum: the same
    enum). Also the memory model, which a variant may change like a constant."""

    def _collect_overrides(self, variant: ast.VariantDecl | None) -> dict[str, tuple[ast.Expr, str]]:
        names = {d.name for d in self.spec.of(ast.ConstDecl)}
        out: dict[str, tuple[ast.Expr, str]] = {}
        if variant is not None:
            for o in variant.overrides:
                if o.name not in names:
                    raise SpecError(o.span, f"variant '{variant.name}' sets '{o.name}', which is not a constant",
                                    did_you_mean(o.name, names) or "a variant may only set `const` knobs")
                if o.name in out:
                    raise SpecError(o.span, f"variant '{variant.name}' sets '{o.name}' twice",
                                    "set each constant once per variant")
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
            self.attempt(self._resolve_const, d, overrides, name=d.name)

    def _resolve_const(self, d: ast.ConstDecl, overrides):
        """One constant: its default, then the override that replaces it, if any."""
        expr, origin = overrides.get(d.name, (d.value, None))
        default = self._const_expr(d.value, f"constant '{d.name}'")
        if origin is None:
            self.consts[d.name] = default
            return
        try:
            value = self._const_expr(expr, f"constant '{d.name}'")
        except SpecError as e:
            if origin.startswith("-D") and not isinstance(e, Echo):
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

    def _const_value(self, c: m.Const):
        if isinstance(c.type, m.BoolT):
            return bool(c.value)
        if isinstance(c.type, m.EnumT):
            return c.type.members[c.value]
        return c.value

    def _const_expr(self, e: ast.Expr, what: str) -> m.Const:
        """Evaluate a constant expression (literals, constants, enum members, arithmetic)."""
        if isinstance(e, ast.Name) and e.name in self.spec_enum_members():
            t, i = self.spec_enum_members()[e.name]
            return m.Const(e.span, t, i)
        r = self.expr(e, Ctx(what=what))
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
            raise SpecError(e.span, f"{what} must be an integer, not {c.type.describe()}",
                            "an integer literal or constant")
        return c.value

    def _memory(self, variant: ast.VariantDecl | None) -> tuple[str, int | None]:
        """The memory model and, under tso, the store-buffer bound. The command line wins
        over the variant's `memory` line, which wins over the model's."""
        model_decls = self.spec.of(ast.MemoryDecl)
        if len(model_decls) > 1:
            raise SpecError(model_decls[1].span, "`memory` is declared twice",
                            "declare the memory model once (a variant may override it)")
        decls = list(model_decls)
        for v in self.spec.of(ast.VariantDecl):
            if len(v.memory) > 1:
                raise SpecError(v.memory[1].span, f"variant '{v.name}' declares `memory` twice",
                                "declare the memory model once per variant")
            decls += v.memory
        for d in decls:
            self._check_memory_decl(d)
        top = model_decls[0] if model_decls else None
        own = variant.memory[0] if variant is not None and variant.memory else None
        chosen = own or top
        self.declared_memory = chosen.name if chosen else "sc"
        memory = self.memory_override or self.declared_memory
        if self.memory_override and self.memory_override not in MEMORY_MODELS:
            raise SpecError(NOWHERE, f"unknown memory model '{self.memory_override}'",
                            f"use one of: {', '.join(MEMORY_MODELS)}")
        if memory not in BOUNDED:
            return memory, None
        what = BOUNDED[memory]
        if self.store_buffer_override is not None:
            bound = self.store_buffer_override
            if not 1 <= bound <= MAX_STORE_BUFFER:
                raise SpecError(NOWHERE, f"{what} holds 1 to {MAX_STORE_BUFFER} stores, not {bound}",
                                f"a bound from 1 to {MAX_STORE_BUFFER}")
            return memory, bound
        for d in (own, top):  # the nearest `memory tso(N)` / `memory lkmm(N)` gives the bound
            if d is not None and d.bound is not None and d.name == memory:
                return memory, self.const_int(d.bound, f"the size of {what}")
        return memory, DEFAULT_STORE_BUFFER

    def _check_memory_decl(self, d: ast.MemoryDecl):
        if d.name not in MEMORY_MODELS:
            raise SpecError(d.span, f"unknown memory model '{d.name}'",
                            f"use one of: {', '.join(MEMORY_MODELS)}")
        if d.bound is not None:
            if d.name not in BOUNDED:
                raise SpecError(d.bound.span, f"only tso and lkmm are bounded; `memory {d.name}` takes no size",
                                "write `memory sc;`, or `memory tso(N)` / `memory lkmm(N)`")
            what = BOUNDED[d.name]
            n = self.const_int(d.bound, f"the size of {what}")
            if not 1 <= n <= MAX_STORE_BUFFER:
                raise SpecError(d.bound.span, f"{what} holds 1 to {MAX_STORE_BUFFER} stores, not {n}",
                                f"a bound from 1 to {MAX_STORE_BUFFER}")


# ---- helpers---------------------------------------------------------------


def _article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _define_expr(text: str) -> ast.Expr:
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
