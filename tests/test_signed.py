"""Signed fixed-width types s8 .. s64 and abs(): C semantics in every back end.

Each operator is checked, for every width, against a reference written here by hand
on Python integers (two's complement wrap, C's truncating division, an arithmetic
right shift), through the whole pipeline: a model assigns `r = a OP b` for drawn
values and an invariant states the reference's results. The explicit engine must find
that it holds, and BMC (Z3 bit-vectors) to the model's depth must agree; the Promela
twin is compared with pan on s8 and s16.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agreement import assert_engines_agree, compiled
from checker.base.errors import SpecError

WIDTHS = (8, 16, 32, 64)


def wrap(v: int, w: int) -> int:
    """Python's integer as a w-bit two's-complement value."""
    v &= (1 << w) - 1
    return v - (1 << w) if v >= 1 << (w - 1) else v


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def reference(op: str, a: int, b: int, w: int) -> int | bool:
    if op == "+": return wrap(a + b, w)
    if op == "-": return wrap(a - b, w)
    if op == "*": return wrap(a * b, w)
    if op == "/": return wrap(c_div(a, b), w)
    if op == "%": return wrap(a - c_div(a, b) * b, w)
    if op == "&": return wrap(a & b, w)
    if op == "|": return wrap(a | b, w)
    if op == "^": return wrap(a ^ b, w)
    if op == "<<": return wrap(a << b, w) if b < w else 0
    if op == ">>": return a >> min(b, w - 1)  # arithmetic
    if op == "<": return a < b
    if op == "<=": return a <= b
    if op == ">": return a > b
    if op == ">=": return a >= b
    if op == "==": return a == b
    if op == "!=": return a != b
    raise ValueError(op)


ARITH = ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>")
COMPARE = ("<", "<=", ">", ">=", "==", "!=")


def lit(v: int | bool) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def model(w: int, rows: list[tuple[str, int, int]], rtype: str | None = None) -> str:
    """`r_i = a_i OP b_i` for each row, and an invariant with the reference's values."""
    t = f"s{w}"
    decl, body, want = [], [], []
    for i, (op, a, b) in enumerate(rows):
        rt = "bool" if op in COMPARE else (rtype or t)
        decl += [f"var a{i}: {t} = {a};", f"var b{i}: {t} = {b};", f"var r{i}: {rt} = {'false' if rt == 'bool' else 0};"]
        body.append(f"r{i} = a{i} {op} b{i};")
        want.append(f"r{i} == {lit(reference(op, a, b, w))}")
    return "\n".join([f"model signed{w};", *decl, "process p {", *("  " + s for s in body), "}",
                      f"invariant reference: p@end -> ({' && '.join(want)});", ""])


def values(w: int):
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, -1, 0, 1]))


@st.composite
def rows(draw, w: int, op: str):
    out = []
    for _ in range(draw(st.integers(1, 4))):
        a = draw(values(w))
        if op in ("<<", ">>"):
            b = draw(st.integers(0, w + 2))
        else:
            b = draw(values(w).filter(lambda v: v != 0) if op in ("/", "%") else values(w))
        out.append((op, a, b))
    return out


def holds_in_explicit_and_bmc(text: str, steps: int) -> None:
    exp, got = assert_engines_agree(compiled(text), steps + 1)
    assert exp == {} and got == {}, (exp, got, text)


@pytest.mark.parametrize("op", ARITH + COMPARE)
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_signed_operator_matches_c(op, data):
    w = data.draw(st.sampled_from(WIDTHS))
    rs = data.draw(rows(w, op))
    holds_in_explicit_and_bmc(model(w, rs), len(rs))


def test_the_reference_would_catch_an_unsigned_reading():
    """The harness can fail: an invariant with the unsigned answer is violated."""
    text = model(8, [("<", -1, 1)]).replace("r0 == true", "r0 == false")
    exp, _ = assert_engines_agree(compiled(text), 2)
    assert exp == {"reference": 1}


CONVERSIONS = """model conversions;
var s: s8 = -2;
var u: u8 = 254;
var a: s16 = 0;
var b: u16 = 0;
var c: s64 = 0;
var d: u8 = 0;
var e: s8 = 0;
var f: s32 = 0;
process p {
  a = s;            // sign-extended: -2
  b = s;            // -2 modulo 2**16: 65534
  c = s16(s) * 3;   // -6
  d = s;            // the same bits: 254
  e = u;            // 254 as s8: -2
  f = u16(s) + 0;   // 65534
  e = -e;           // 2
  c = ~c;           // 5
}
invariant converted: p@end -> (a == -2 && b == 65534 && c == 5 && d == 254 && e == 2 && f == 65534
                               && s < 0 && u > 0 && s8(u) == s && s64(s) == -2 && u64(s) > 0);
"""


def test_conversions_between_signed_and_unsigned_as_c():
    holds_in_explicit_and_bmc(CONVERSIONS, 8)


def test_a_wrong_conversion_is_seen():
    exp, _ = assert_engines_agree(compiled(CONVERSIONS.replace("a == -2", "a == 254")), 9)
    assert exp == {"converted": 8}


ABS = """model absolute;
var x: s8 = -128;
var y: s16 = -300;
var z: 0..9 = 0;
var i: -5..5 = -4;
var r: s8 = 0;
var q: s16 = 0;
process p {
  r = abs(x);        // the minimum stays itself, as the kernel's abs() wraps
  q = abs(y) + abs(s16(7));
  z = abs(i) + abs(-3);
}
invariant absolute: p@end -> (r == -128 && q == 307 && z == 7 && abs(x + 1) == 127);
"""


def test_abs():
    holds_in_explicit_and_bmc(ABS, 3)


def test_kernel_time_arithmetic():
    """`s64 delta = deadline - now`: a deadline past a wrapped clock is still ahead."""
    text = """model ktime;
var now: u64 = 0xFFFFFFFFFFFFFFF0;
var deadline: u64 = 0x10;
var delta: s64 = 0;
process p { delta = deadline - now; }
invariant ahead: p@end -> (delta == 32 && delta > 0);
"""
    holds_in_explicit_and_bmc(text, 1)


def test_signed_min_max_order_by_value():
    text = """model mm;
var a: s8 = -100;
var b: s8 = 100;
var lo: s8 = 0;
var hi: s8 = 0;
process p { lo = min(a, b); hi = max(a, b); }
invariant ordered: p@end -> (lo == -100 && hi == 100);
"""
    holds_in_explicit_and_bmc(text, 2)


def test_promela_twin_of_s8_and_s16_agrees_with_pan(tmp_path):
    from test_promela import agreement, needs_spin
    needs_spin()
    spec = tmp_path / "signed.spec"
    text = model(8, [("/", -7, 2), ("%", -7, 2), (">>", -128, 3), (">>", -1, 9), ("<", -1, 1), ("*", 100, 3)])
    text = text.replace("process p {", "var t: s16 = -300;\nvar m: s8 = 0;\nprocess p {\n  t = t / 7 + abs(t);"
                        "\n  m = min(a0, a2);")
    text = text.replace("invariant reference: p@end -> (", "invariant reference: p@end -> (t == 258 && m == -128 && ")
    spec.write_text(text)
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [] and differences == {"base": []}
    assert [o["verdict"] for o in ours["variants"][0]["outcomes"] if o["property"] == "reference"] == ["holds"]


def test_promela_refuses_s32_and_wider(tmp_path):
    from checker import ir
    from checker.backends import promela
    from checker.front.parse import parse
    from checker.resolve import resolve
    prog = ir.build(resolve(parse("model w;\nvar x: s32 = -1;\nprocess p { x = x - 1; }\n", "w.spec"), "base"))
    with pytest.raises(SpecError, match="s32"):
        promela.refuse(prog)


def test_a_signed_value_stored_in_a_range_or_used_as_an_index_is_its_value():
    text = """model ranges;
var s: s8 = -3;
var r: -5..5 = 0;
var arr[-4..4]: 0..9 = {1, 2, 3, 4, 5, 6, 7, 8, 9};
var got: 0..9 = 0;
var bits: bitset(4) = {};
var n: -9..9 = 0;
process p {
  r = s;               // -3, in range
  got = arr[s];        // element -3
  set_bit(s + 4, bits);
  n = r + s;           // -6
}
invariant values: p@end -> (r == -3 && got == 2 && test_bit(1, bits) && n == -6);
"""
    holds_in_explicit_and_bmc(text, 4)


def test_lemma_over_a_signed_parameter_shows_signed_values(tmp_path, capsys):
    """-v of the minimum is the minimum again: Z3 must find it, and say -128."""
    from checker.cli import main
    spec = tmp_path / "lem.spec"
    spec.write_text("model lem;\nprocess p { skip; }\nlemma neg: forall (v: s8) v < 0 -> -v > 0;\n"
                    "lemma abs_pos: forall (v: s16) v > -32768 -> abs(v) >= 0;\n")
    assert main([str(spec)]) == 1
    out = capsys.readouterr().out
    assert "lemma neg is false for v = -128 (-0x80)" in out
    assert "abs_pos   proved" in out
