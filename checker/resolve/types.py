"""Declared types and variables: type expressions (ranges, bit sets, enums, u8 ..
s64), array dimensions (a count, a range, or a process array's name), and initial
values, which must be constants within the declared type.
"""

from __future__ import annotations

from ..front import ast
from .. import model as m
from ..base.errors import Echo, Span, SpecError, did_you_mean
from ..base.limits import MAX_VALUES
from .base import Ctx, Shared


class Types(Shared):
    """Types and variables. Sizes and bounds are constant expressions, resolved after
    the constants (and after a variant's overrides, so a variant can resize an array)."""

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
                if t.size.name in self.failed:
                    raise Echo(t.size.span, f"process '{t.size.name}' failed to resolve before")
                count = self.process_counts.get(t.size.name)  # bitset(vcpu): one bit per instance
                if count is None:
                    raise SpecError(t.size.span, f"'{t.size.name}' is one process, not an array",
                                    "bitset(P) has a bit per instance of `process P[N]`; write bitset(N)")
                if not 1 <= count <= 64:
                    raise SpecError(t.span, f"a bit set has 1 to 64 bits, not {count}",
                                    "a bit set is one 64-bit word; use an array of bools for more")
                return m.BitsetT(count)
            if t.size is not None:
                size = self.const_int(t.size, "a bit set's size")
            else:
                assert t.lo is not None and t.hi is not None, "bitset(lo..hi) when not bitset(N)"
                lo = self.const_int(t.lo, "a bit set's range")
                if lo != 0:
                    raise SpecError(t.span, "a bit set's bits are numbered from 0", "write bitset(N) or bitset(0..N-1)")
                size = self.const_int(t.hi, "a bit set's range") + 1
            if not 1 <= size <= 64:
                raise SpecError(t.span, f"a bit set has 1 to 64 bits, not {size}",
                                "a bit set is one 64-bit word; use an array of bools for more")
            return m.BitsetT(size)
        if isinstance(t, ast.NamedType):
            if t.name in self.enums:
                return self.enums[t.name]
            fixed = m.fixed_width_type(t.name)
            if fixed is not None:
                return fixed
            if t.name in self.failed:
                raise Echo(t.span, f"type '{t.name}' failed to resolve before")
            self.failed.add(t.name)
            raise SpecError(t.span, f"unknown type '{t.name}'",
                            did_you_mean(t.name, list(self.enums) + ["bool"] + list(m.BITVEC_TYPES)
                                         + list(m.SIGNED_TYPES))
                            or "types are bool, an enum, a range lo..hi, bitset(N), u8 .. u64 or s8 .. s64", code="TR201")
        raise SpecError(t.span, "unsupported type",
                        "types are bool, an enum, a range lo..hi, bitset(N), u8 .. u64 or s8 .. s64")

    def _dim(self, d: ast.Dim) -> tuple[int, int, str | None]:
        if d.count is not None:
            if isinstance(d.count, ast.Name) and d.count.name in self.process_counts:
                if d.count.name in self.failed:
                    raise Echo(d.count.span, f"process '{d.count.name}' failed to resolve before")
                n = self.process_counts[d.count.name]
                if n is None:
                    raise SpecError(d.count.span, f"'{d.count.name}' is a single process, not an array of processes",
                                    f"declare it as `process {d.count.name}[N]` to index by it")
                return 0, n - 1, d.count.name
            n = self.const_int(d.count, "an array size")
            if n < 1:
                raise SpecError(d.span, f"an array needs at least one element, not {n}",
                                "an array has 1 or more elements: `var a[N]: T` with N >= 1")
            _check_array_size(n, d.span)
            return 0, n - 1, None
        assert d.lo is not None and d.hi is not None, "a dimension is a count or a range lo..hi"
        lo = self.const_int(d.lo, "an array bound")
        hi = self.const_int(d.hi, "an array bound")
        if lo > hi:
            raise SpecError(d.span, f"empty index range {lo}..{hi}", "an index range lo..hi has lo <= hi")
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
        return m.VarSym(d.name, typ, scope, d.span, init, process, ghost=d.ghost)

    def _waitqueue(self, d: ast.WaitQueueDecl) -> m.VarSym:
        if d.dim is not None:
            lo, hi, by = self._dim(d.dim)
            return m.VarSym(d.name, m.ArrayT(m.WaitQueueT(), lo, hi, by), m.Scope.GLOBAL, d.span,
                            ((0,),) * (hi - lo + 1))
        return m.VarSym(d.name, m.WaitQueueT(), m.Scope.GLOBAL, d.span, ((0,),))

    def _init(self, d: ast.VarDecl, elem: m.Type, n: int) -> tuple[tuple[int, ...] | range, ...]:
        e = d.init
        if e is None:
            default = 0
            if isinstance(elem, m.IntT):
                lo, hi = _declared(elem)
                default = lo if lo > 0 else hi if hi < 0 else 0
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
            lo, hi = _declared(t)
            if hi - lo > 4096:
                raise SpecError(span, "`any` over more than 4096 values", "narrow the range")
            return range(lo, hi + 1)
        if isinstance(t, m.BitsetT) and t.size <= 12:
            return range(1 << t.size)
        raise SpecError(span, f"`any` is not allowed for {t.describe()}",
                        "`any` takes a bool, an enum, a range, a small bit set or an unsigned type")

    def _bitset_value(self, e: ast.ListInit, t: m.BitsetT) -> int:
        mask = 0
        for x in e.items:
            nr = self._bitnr(self.expr(x, Ctx()), t, x.span)
            mask |= 1 << nr
        return mask

    def _bitnr(self, nr: m.TExpr, t: m.BitsetT, span: Span) -> int:
        if not isinstance(nr, m.Const):
            raise SpecError(span, "a bit number here must be a constant",
                            "a literal, a constant or an enum member of the set's type", code="TR206")
        self._check_bitnr_type(nr, t, span)
        if not 0 <= nr.value < t.size:
            raise SpecError(span, f"bit {nr.value} is outside {t.describe()} (bits 0..{t.size - 1})",
                            f"its bits are 0 to {t.size - 1}")
        return nr.value

    def _init_value(self, e: ast.Expr, t: m.Type, name: str) -> int:
        c = self.expr(e, Ctx(what=f"the initial value of '{name}'"))
        if not isinstance(c, m.Const):
            raise SpecError(e.span, f"the initial value of '{name}' must be a constant",
                            "literals, constants and enum members; set it from a process's first step otherwise")
        self._check_assignable(t, c, e.span, f"'{name}'")
        if isinstance(t, m.IntT):
            c = self._value(c)
            assert isinstance(c, m.Const)  # a constant's value is a constant
            lo, hi = _declared(t)
            if not lo <= c.value <= hi:
                raise SpecError(e.span, f"initial value {c.value} of '{name}' is outside its range {lo}..{hi}",
                                f"'{name}' is declared as {lo}..{hi}")
        if isinstance(t, m.BitVecT):
            return m.bv_convert(c.value, c.type, t)  # C conversion: -1 is u8's largest value
        return c.value


# ---- helpers---------------------------------------------------------------


def _declared(t: m.IntT) -> tuple[int, int]:
    """A declared range's bounds (only arithmetic's int is unbounded, and nothing declares it)."""
    assert t.lo is not None and t.hi is not None, t
    return t.lo, t.hi


def _check_array_size(n: int, span: Span) -> None:
    if n > MAX_VALUES:
        raise SpecError(span, f"an array of {n} elements; the limit is {MAX_VALUES:,}",
                        f"a model holds at most {MAX_VALUES:,} values (variables and array elements) in all")
