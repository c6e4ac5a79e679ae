"""Operators lex, bind and evaluate as in C, end to end (parse, fold, generated code).

`<<` and `>>` once lexed as two `<`/`>` comparison tokens; these pin the values the
checker computes with shifts next to comparisons, folded and at run time.
"""

from checker.cli import main


def run(tmp_path, capsys, text: str) -> tuple[int, str]:
    spec = tmp_path / "t.spec"
    spec.write_text(text)
    code = main([str(spec), "--brief"])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_shifts_lex_bind_and_evaluate(tmp_path, capsys):
    code, out = run(tmp_path, capsys, """model shifts;
const K = 1 << 3;                              // folded: 8
var x: 0..7 = 3;
var y: 0..255 = 0;
var z: bool = false;
process p {
  y = x << 2 >> 1;                             // (3 << 2) >> 1 = 6
  z = 1 << x < K + 1 && K >> 1 <= x + 1;      // 8 < 9 && 4 <= 4
}
invariant values: p@end -> (y == 6 && z && K == 8);
""")
    assert code == 0, out


def test_relational_operators_still_lex_next_to_shifts(tmp_path, capsys):
    code, out = run(tmp_path, capsys, """model rel;
var x: 0..7 = 3;
process p { x = x < 4 ? 1 : 2; x = x <= 1 ? x >> 1 : 7; x = x > 0 || x >= 0 ? x : 0; }
invariant zero: p@end -> x == 0;
""")
    assert code == 0, out
