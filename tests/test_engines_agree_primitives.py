"""The engines check each other on the kernel primitives, arrays, locals and bit sets.

tests/test_engines_agree.py compares the explicit engine and BMC on plain assignments;
two explicit-engine bugs lived where it does not look: a store whose index read a
variable written just before it in the same step (`atomic { i = 1; a[i] = 5; }`) and an
`xchg` in a branch condition that lost its store on one branch. Both would have shown
here: random steps made of value-returning RMWs (`xchg`, `cmpxchg`, `atomic_*_return`,
`test_and_set_bit`, ...) in conditions, assignments and `atomic` blocks, over a local,
an array indexed by variables, and a bit set, with one invariant per location and value, so that any difference in what
is reachable, or how soon, fails.
Deterministic: hypothesis runs derandomized; every BMC trace is replayed through the
compiled steps."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agreement import assert_engines_agree, compiled
from helpers import examples

K = 4
EXAMPLES = examples(50)
HI = 3  # every integer variable is 0..HI; an RMW may leave the range: a model error, compared too

#: value-returning primitives over an integer location `{v}` (with `{c}`, `{d}` constants)
RMWS = ["xchg({v}, {c})", "cmpxchg({v}, {c}, {d})", "atomic_inc_return({v})", "atomic_dec_return({v})",
        "atomic_fetch_add({c}, {v})", "atomic_add_return({c}, {v})", "xchg_relaxed({v}, {c})",
        "cmpxchg_acquire({v}, {c}, {d})", "atomic_dec_and_test({v})", "atomic_inc_and_test({v})"]
#: over the bit set `s` (bits 0..2)
BITOPS = ["test_and_set_bit({b}, s)", "test_and_clear_bit({b}, s)", "test_bit({b}, s)"]
VOIDS = ["set_bit({b}, s);", "clear_bit({b}, s);", "atomic_inc({v});", "atomic_set({v}, {c});",
         "WRITE_ONCE({v}, {c});"]


@st.composite
def locations(draw, local: bool):
    """An integer location: a global, an array element indexed by a constant or a
    variable, or (in a process) its local `r`."""
    kinds = ["x", "y", "a_const", "a_var"] + (["r"] if local else [])
    k = draw(st.sampled_from(kinds))
    if k == "a_const":
        return f"a[{draw(st.integers(0, 1))}]"
    if k == "a_var":
        return f"a[{draw(st.sampled_from(['x', 'y', 'r'] if local else ['x', 'y']))} % 2]"
    return k


@st.composite
def values(draw, local: bool):
    """An expression with at most one RMW in it (one step does one locked operation)."""
    form = draw(st.sampled_from(["const", "loc", "rmw", "bit", "rmw_plus"]))
    if form == "const":
        return str(draw(st.integers(0, HI)))
    if form == "loc":
        return draw(locations(local))
    fill = dict(v=draw(locations(local)), c=draw(st.integers(0, HI)), d=draw(st.integers(0, HI)),
                b=draw(st.integers(0, 2)))
    if form == "bit":
        return f"({draw(st.sampled_from(BITOPS)).format(**fill)} ? 1 : 0)"
    rmw = draw(st.sampled_from(RMWS)).format(**fill)
    if "test(" in rmw:
        rmw = f"({rmw} ? 1 : 0)"
    return f"({rmw} + 1) % {HI + 1}" if form == "rmw_plus" else rmw


@st.composite
def conditions(draw, local: bool):
    op = draw(st.sampled_from(["==", "!=", "<"]))
    return f"{draw(values(local))} {op} {draw(st.integers(0, HI))}"


@st.composite
def statements(draw, depth=0):
    kinds = ["assign", "void", "if", "if", "atomic", "atomic"] if depth == 0 else ["assign", "void"]
    kind = draw(st.sampled_from(kinds))
    if kind == "assign":
        target = draw(locations(True))
        value = draw(values(True))
        if "(" in value and any(f"{op}(" in value for op in ("xchg", "cmpxchg", "atomic_")) \
                and target.startswith("a[") and "%" in target:
            value = draw(values(True).filter(lambda v: "(" not in v or "?" in v))
        return f"{target} = {value};"
    if kind == "void":
        fill = dict(v=draw(locations(True)), c=draw(st.integers(0, HI)), b=draw(st.integers(0, 2)))
        return draw(st.sampled_from(VOIDS)).format(**fill)
    if kind == "if":
        orelse = f" else {{ {draw(statements(1))} }}" if draw(st.booleans()) else ""
        return f"if ({draw(conditions(True))}) {{ {draw(statements(1))} }}{orelse}"
    # writes, then reads and stores whose index depends on them, in one step
    c = lambda: draw(st.integers(0, HI))  # noqa: E731
    forms = [lambda: f"r = {c()};", lambda: f"a[r % 2] = {c()};", lambda: "x = a[r % 2];",
             lambda: "r = (x + 1) % 4;", lambda: f"y = {c()};", lambda: "a[y % 2] = r;",
             lambda: f"x = {c()};", lambda: f"a[x % 2] = {c()};"]
    body = " ".join(draw(st.sampled_from(forms))() for _ in range(draw(st.integers(2, 4))))
    return f"atomic {{ {body} }}"


@st.composite
def models(draw):
    lines = ["model prims;", f"var x: 0..{HI} = 0;", f"var y: 0..{HI} = 1;", f"var a[2]: 0..{HI} = 0;",
             "var s: bitset(3) = {};"]
    procs = draw(st.integers(1, 2))
    for p in range(procs):
        body = " ".join(draw(st.lists(statements(), min_size=1, max_size=3)))
        lines.append(f"process p{p} {{ var r: 0..{HI} = {p}; {body} }}")
    ends = " && ".join(f"p{p}@end" for p in range(procs))
    # one invariant per (location, value), at the end and anywhere: the engines must
    # agree on which values are reachable, and how soon
    cells = ["x", "y", "a[0]", "a[1]"]
    pins = [f"{c} == {v}" for c in cells for v in range(HI + 1)] + [f"test_bit({b}, s)" for b in range(3)]
    for k, pin in enumerate(pins):
        lines.append(f"invariant end{k}: !({ends} && {pin});")
    for k, pin in enumerate(pins):
        lines.append(f"invariant any{k}: !({pin});")
    return "\n".join(lines) + "\n"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(models())
def test_explicit_and_bmc_agree_on_primitives_arrays_and_locals(text):
    assert_engines_agree(compiled(text), K)
