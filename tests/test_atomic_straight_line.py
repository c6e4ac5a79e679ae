"""An `atomic` block's straight-line body against a plain sequential interpreter.

The compiler keeps constant writes to fixed fields pending, to merge them into one
`v & clear | set`; every read of the state after them must see them. A store whose
target index reads a variable written just before (`i = 1; a[i] = 5;`) once read the
old `i` in the explicit engine (bmc was right), so the two engines disagreed."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from checker.api import check_source

#: statements over a local `i` (0..1), a global `x` (0..3) and `a[2]` (0..3), each a
#: function of the store that a plain interpreter runs: (text, effect)
STATEMENTS = [
    *[(f"i = {c};", lambda s, c=c: s.update(i=c)) for c in (0, 1)],
    *[(f"x = {c};", lambda s, c=c: s.update(x=c)) for c in (0, 3)],
    *[(f"a[i] = {c};", lambda s, c=c: s["a"].__setitem__(s["i"], c)) for c in (2, 3)],
    *[(f"a[{k}] = x;", lambda s, k=k: s["a"].__setitem__(k, s["x"])) for k in (0, 1)],
    ("x = a[i];", lambda s: s.update(x=s["a"][s["i"]])),
    ("i = x % 2;", lambda s: s.update(i=s["x"] % 2)),
    ("a[x % 2] = 1;", lambda s: s["a"].__setitem__(s["x"] % 2, 1)),
]


def spec_for(body: list[int]) -> tuple[str, dict]:
    s = {"i": 0, "x": 0, "a": [0, 0]}
    for k in body:
        STATEMENTS[k][1](s)
    text = "\n".join([
        "model straight;",
        "var x: 0..3 = 0;",
        "var a[2]: 0..3 = 0;",
        "process p { var i: 0..1 = 0; atomic { " + " ".join(STATEMENTS[k][0] for k in body) + " } }",
        f"invariant result: p@end -> x == {s['x']} && a[0] == {s['a'][0]} && a[1] == {s['a'][1]};",
    ])
    return text, s


def test_index_read_after_a_pending_constant_write():
    text, _ = spec_for([1, 4])  # i = 1; a[i] = 2;
    run = check_source(text)
    assert {o.property: o.verdict.value for o in run.variants[0].outcomes}["result"] == "holds"


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, len(STATEMENTS) - 1), min_size=1, max_size=6))
def test_atomic_body_runs_in_program_order(body):
    text, _ = spec_for(body)
    for options in ({}, {"engine": "bmc", "depth": 3}):
        run = check_source(text, **options)
        verdicts = {o.property: o.verdict.value for o in run.variants[0].outcomes}
        assert verdicts["result"] == "holds", (options, text)
