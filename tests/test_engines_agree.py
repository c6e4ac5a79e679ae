"""The engines check each other: on random small models, the explicit engine finds a
violation at depth d <= K if and only if BMC to depth K finds one, at the same d.

The models are spec text: a few processes and bounded variables, guarded
assignments, `await`, `atomic`, `choose`, loops, asserts and an invariant. Some
assignments can leave their variable's range, so model errors are compared too.
Deterministic: hypothesis runs derandomized, and every BMC trace is replayed through
the compiled steps (a mismatch fails the test as a checker bug)."""

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agreement import assert_engines_agree, compiled, explicit_depths
from helpers import examples

K = 4
EXAMPLES = examples(100)


@st.composite
def conditions(draw, names, his, depth=0):
    i = draw(st.integers(0, len(names) - 1))
    kind = draw(st.sampled_from(["lt", "eq", "neq_var", "not", "and"] if depth < 1 else ["lt", "eq", "neq_var"]))
    if kind == "lt":
        return f"{names[i]} < {draw(st.integers(0, his[i] + 1))}"
    if kind == "eq":
        return f"{names[i]} == {draw(st.integers(0, his[i]))}"
    if kind == "neq_var":
        return f"{names[i]} != {names[draw(st.integers(0, len(names) - 1))]}"
    if kind == "not":
        return f"!({draw(conditions(names, his, depth + 1))})"
    return f"({draw(conditions(names, his, depth + 1))}) && ({draw(conditions(names, his, depth + 1))})"


@st.composite
def assignments(draw, names, his):
    i = draw(st.integers(0, len(names) - 1))
    j = draw(st.integers(0, len(names) - 1))
    c = draw(st.integers(0, 2))
    form = draw(st.sampled_from(["mod", "mod", "const", "unsafe"]))
    if form == "mod":  # stays in range
        return f"{names[i]} = ({names[j]} + {c}) % {his[i] + 1};"
    if form == "const":
        return f"{names[i]} = {min(c, his[i])};"
    return f"{names[i]} = {names[j]} + {c};"  # may leave the range: a model error


@st.composite
def statements(draw, names, his, depth=0):
    kinds = ["assign", "assign", "if", "await", "atomic", "choose", "assert"]
    kind = draw(st.sampled_from(kinds if depth < 1 else ["assign", "await", "assert"]))
    a = lambda: draw(assignments(names, his))  # noqa: E731
    c = lambda: draw(conditions(names, his))  # noqa: E731
    if kind == "assign":
        return a()
    if kind == "if":
        return f"if ({c()}) {{ {draw(statements(names, his, depth + 1))} }} else {{ {a()} }}"
    if kind == "await":
        return f"await {c()};"
    if kind == "atomic":
        return f"atomic {{ {a()} if ({c()}) {{ {a()} }} }}"
    if kind == "choose":
        return f"choose {{ {a()} }} or {{ {draw(statements(names, his, depth + 1))} }}"
    return f"assert {c()};"


@st.composite
def models(draw):
    n = draw(st.integers(1, 3))
    names = [f"v{i}" for i in range(n)]
    his = [draw(st.integers(1, 3)) for _ in names]
    lines = ["model random;"]
    for name, hi in zip(names, his):
        lines.append(f"var {name}: 0..{hi} = {draw(st.integers(0, hi))};")
    for p in range(draw(st.integers(1, 3))):
        body = " ".join(draw(st.lists(statements(names, his), min_size=1, max_size=4)))
        if draw(st.booleans()):
            body = f"loop {{ {body} }}"
        lines.append(f"process p{p} {{ {body} }}")
    lines.append(f"invariant inv: ({draw(conditions(names, his))}) || ({draw(conditions(names, his))});")
    return "\n".join(lines) + "\n"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_explicit_and_bmc_agree_on_violation_depths(text):
    cm = compiled(text)
    exp, got = assert_engines_agree(cm, K)
    for name, d in exp.items():  # what was compared (see --hypothesis-show-statistics)
        event(f"{name if name in ('inv', 'deadlock') else 'assert'} violated "
              f"{'within' if d <= K else 'beyond'} depth {K}")
    if not exp:
        event("no violation")
    if any(d <= K for d in got.values()):
        event("bmc found a violation")
    if explicit_depths(cm)[1] is not None:
        event("model error (compared too)")
