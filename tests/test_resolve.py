"""The resolver at its boundary: `resolve(parse(text), ...)` -> model, or a SpecError at
the offending text. Each test states one rule of checker/resolve/ (types, constant
folding, names, lexical scoping of fn and inline bodies, variants, process arrays),
independent of how the pass is split into modules."""

from __future__ import annotations

import pytest

from checker import model as m
from checker.base.errors import SpecError
from checker.front.parse import parse
from checker.resolve import BASE, resolve, variant_names


def model_of(text: str, variant: str = BASE, defines: dict[str, str] | None = None, memory: str | None = None):
    return resolve(parse(text, "t.spec"), variant, defines, memory)


def error_of(text: str, **kw) -> SpecError:
    with pytest.raises(SpecError) as e:
        model_of(text, **kw)
    return e.value


def where(e: SpecError) -> tuple[int, int]:
    return e.span.line, e.span.col


def first_assign(model: m.Model, process: str = "p") -> m.SAssign:
    proc = next(p for p in model.processes if p.name == process)
    stack = list(proc.body)
    while stack:
        s = stack.pop(0)
        if isinstance(s, m.SAssign):
            return s
        stack[:0] = list(getattr(s, "body", ()))
    raise AssertionError("no assignment")


def value_of(text: str, decls: str = "", variant: str = BASE) -> m.TExpr:
    """The resolved right-hand side of `x = <text>;`, x a u64-wide free integer slot."""
    model = model_of(f"model t;\n{decls}\nvar x: u64;\nvar y: 0..3;\nvar b: u8;\nvar s: s8;\n"
                     f"process p {{ x = {text}; }}\n", variant)
    return first_assign(model).value


# ---- types of expressions -----------------------------------------------------


def test_unsigned_arithmetic_takes_the_wider_fixed_width_type():
    v = value_of("b + x")
    assert isinstance(v, m.Bin) and v.type == m.BitVecT(64)
    assert isinstance(v.left, m.Conv) and v.left.type == m.BitVecT(64)  # C's conversion, explicit


def test_a_range_variable_is_an_integer_and_comparisons_are_bools():
    model = model_of("model t;\nvar y: 0..3;\nvar c: bool;\nprocess p { c = y + 1 < 3; }\n")
    v = first_assign(model).value
    assert v.type == m.BOOL and isinstance(v, m.Bin) and v.left.type == m.INT


def test_a_signed_value_stored_into_a_range_is_converted_to_its_integer():
    model = model_of("model t;\nvar y: -4..3;\nvar s: s8 = -2;\nprocess p { y = s; }\n")
    v = first_assign(model).value
    assert isinstance(v, m.Conv) and v.type == m.INT and v.operand.type == m.BitVecT(8, signed=True)


# ---- constant folding -----------------------------------------------------------


def test_constants_fold_through_arithmetic_and_other_constants():
    model = model_of("model t;\nconst A = 3;\nconst B = A * 4 + 1;\nvar x: 0..20;\nprocess p { x = B - A; }\n")
    assert model.constants == {"A": 3, "B": 13}
    v = first_assign(model).value
    assert isinstance(v, m.Const) and v.value == 10


def test_fixed_width_constants_wrap_like_c():
    v = value_of("u8(250) + u8(10)")
    assert isinstance(v, m.Const) and v.type == m.BitVecT(8) and v.value == 4


def test_a_constant_knob_folds_a_dead_condition_away():
    model = model_of("model t;\nconst ON = false;\nvar y: 0..3;\nvar c: bool;\nprocess p { c = y == 1 && ON; }\n")
    v = first_assign(model).value
    assert isinstance(v, m.Const) and v.value == 0


def test_division_by_zero_in_a_constant_is_reported_at_the_expression():
    e = error_of("model t;\nconst Z = 0;\nconst Q = 4 / Z;\nvar x: 0..1;\nprocess p { x = 1; }\n")
    assert "division by zero" in e.message and where(e) == (3, 11)


# ---- names and their errors ------------------------------------------------------


def test_unknown_name_points_at_the_name_with_a_suggestion():
    e = error_of("model t;\nvar count: 0..3;\nprocess p {\n  count = cuont + 1;\n}\n")
    assert e.message == "unknown name 'cuont'" and where(e) == (4, 11)
    assert "count" in (e.hint or "")


def test_assigning_a_constant_is_refused():
    e = error_of("model t;\nconst N = 2;\nprocess p { N = 1; }\n")
    assert e.message == "cannot assign to constant 'N'" and where(e) == (3, 13)


def test_a_local_may_not_shadow_a_global():
    e = error_of("model t;\nvar x: 0..1;\nprocess p {\n  var x: bool;\n  x = true;\n}\n")
    assert "shadows a global name" in e.message and e.span.line == 4


# ---- scoping of fn and inline parameters ------------------------------------------


def test_fn_body_sees_its_own_parameter_not_the_callers_quantifier_variable():
    # `i` inside `next` is next's parameter, bound to the caller's `i + 1`, never the
    # caller's quantifier variable of the same name (capture-avoiding substitution)
    model = model_of("model t;\nfn next(i) = i + 1;\nvar x: 0..1;\nprocess p { x = 1; }\n"
                     "invariant ok: forall i in 0..2: (next(i + 1) == i + 2);\n")
    inv = next(p for p in model.properties if p.name == "ok")
    q = inv.cond
    assert isinstance(q, m.Quant)
    left = q.body.left  # next(i + 1) expanded: (i + 1) + 1
    assert isinstance(left, m.Bin) and isinstance(left.left, m.Bin) and left.left.left == q.bound


def test_inline_parameter_named_like_a_global_does_not_capture_the_callees_global():
    # outer's parameter `g` is bound to 1; inner reads the global `g`, which outer's
    # parameter must not replace
    model = model_of("model t;\nvar g: 0..3 = 2;\nvar x: 0..3;\n"
                     "inline inner() { x = g; }\ninline outer(g) { inner(); }\n"
                     "process p { outer(1); }\n")
    v = first_assign(model).value
    assert isinstance(v, m.Var) and v.sym.name == "g" and v.sym.scope is m.Scope.GLOBAL


def test_inline_argument_replaces_its_parameter_where_the_body_uses_it():
    model = model_of("model t;\nvar x: 0..3;\ninline put(v) { x = v; }\nprocess p {\n  put(2);\n}\n")
    v = first_assign(model).value
    assert isinstance(v, m.Const) and v.value == 2
    assert (v.span.line, v.span.col) == (3, 21)  # the use of `v` in put's body, not the call


def test_fn_parameter_is_not_visible_outside_its_body():
    e = error_of("model t;\nfn f(a) = a + 1;\nvar x: 0..3;\nprocess p { x = a; }\n")
    assert e.message == "unknown name 'a'" and where(e) == (4, 17)


def test_break_cannot_leave_an_inline_procedure():
    e = error_of("model t;\nvar x: 0..3;\ninline stop() { break; }\nprocess p { while (x < 2) { stop(); } }\n")
    assert e.message.startswith("`break` outside a loop") and where(e) == (3, 17)


# ---- variants and -D overriding constants -----------------------------------------


VARIANTS = ("model t;\nconst K = 1;\nconst ON = true;\nvar x: 0..5;\nprocess p { x = K; }\n"
            "variant big { K = 4; }\nvariant off { ON = false; }\n")


def test_a_variant_overrides_a_constant_and_the_use_sees_it():
    assert variant_names(parse(VARIANTS, "t.spec")) == ["base", "big", "off"]
    assert model_of(VARIANTS).constants["K"] == 1
    big = model_of(VARIANTS, variant="big")
    assert big.constants["K"] == 4 and first_assign(big).value.value == 4


def test_the_command_line_overrides_on_top_of_the_variant():
    model = model_of(VARIANTS, variant="big", defines={"K": "5"})
    assert model.constants == {"K": 5, "ON": True}


def test_a_variant_may_not_change_a_constants_type():
    e = error_of(VARIANTS.replace("variant off { ON = false; }", "variant off { ON = 3; }"), variant="off")
    assert "'ON' is a bool constant" in e.message and where(e) == (7, 20)
    assert e.hint == "its default is true"


def test_a_variant_may_only_set_constants():
    e = error_of(VARIANTS + "variant bad { x = 1; }\n", variant="bad")
    assert "sets 'x', which is not a constant" in e.message and where(e) == (8, 15)


# ---- process arrays and `self` ----------------------------------------------------


def test_self_in_a_process_array_ranges_over_its_indices():
    model = model_of("model t;\nconst N = 3;\nvar slot[N]: bool;\nprocess cpu[N] { slot[self] = true; }\n")
    (proc,) = model.processes
    assert proc.count == 3
    target = first_assign(model, "cpu").target
    assert isinstance(target, m.Elem) and isinstance(target.index, m.SelfE)
    assert target.index.type == m.IntT(0, 2)


def test_an_array_sized_by_a_process_array_is_indexed_by_it():
    model = model_of("model t;\nvar pending[cpu]: bool;\nprocess cpu[2] { pending[self] = true; }\n")
    (g,) = model.globals
    assert g.type == m.ArrayT(m.BOOL, 0, 1, "cpu")


def test_a_process_index_outside_the_array_is_refused_at_the_index():
    e = error_of("model t;\nvar x: 0..1;\nprocess cpu[2] { x = 1; }\ninvariant i: !cpu[2]@end;\n")
    assert e.message == "process index 2 is outside 0..1" and where(e) == (4, 19)


def test_self_in_a_single_process_is_refused():
    e = error_of("model t;\nvar x: 0..3;\nprocess p {\n  x = self;\n}\n")
    assert e.message == "`self` outside a process array" and where(e) == (4, 7)


def test_properties_read_a_process_arrays_local_by_index():
    model = model_of("model t;\nprocess cpu[2] { var r: 0..3; r = 1; }\ninvariant i: cpu[1].r <= 1;\n")
    inv = next(p for p in model.properties if p.name == "i")
    ref = inv.cond.left
    assert isinstance(ref, m.LocalOf) and ref.process == "cpu" and ref.index.value == 1
