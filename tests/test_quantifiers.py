"""Quantifiers over arrays: `exists i in lo..hi: (a[i])` in invariants and awaits.

An array indexed by a quantifier's variable once compiled into a bounds check placed
before the quantifier, where the variable does not exist (a NameError traceback).
These pin the verdicts, the state count, and that an index out of range inside a
quantifier is a model error with its message, not a traceback.
"""

from checker.cli import main
from checker.front.parse import parse
from checker.pipeline import Options, check_spec


def run(tmp_path, capsys, text: str) -> tuple[int, str]:
    spec = tmp_path / "t.spec"
    spec.write_text(text)
    code = main([str(spec)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_array_indexed_by_a_quantified_variable(tmp_path, capsys):
    text = """model q;
var owner[3]: bool = {false, true, false};
var turn: 0..2 = 0;
process p { await exists i in 0..2: (owner[i] && i == 1); atomic { owner[1] = false; owner[turn] = true; } }
invariant one_owner: exists i in 0..2: (owner[i] && forall j in 0..2: (j == i || !owner[j]));
"""
    code, out = run(tmp_path, capsys, text)
    assert code == 0, out
    assert "Traceback" not in out
    # p: 2 steps, one state each, plus the initial state
    assert check_spec(parse(text, "q.spec"), Options()).variants[0].stats.states == 3


def test_quantified_index_out_of_bounds_is_a_model_error(tmp_path, capsys):
    code, out = run(tmp_path, capsys, """model q;
var a[3]: bool = {true, true, true};
process p { skip; }
invariant all_set: forall i in 0..3: (a[i]);
""")
    assert code == 1
    assert "evaluating invariant all_set: index 3 is outside a (0..2)" in out
    assert "Traceback" not in out
