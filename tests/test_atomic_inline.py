"""Atomic blocks and inline procedures: how they nest, and what cannot cross them.

An atomic block is one step; an inline procedure is expanded where it is called. These
tests pin the corners where the two meet: a `return` or `break` must never jump out of
a place the generated step cannot leave, and an atomic block nested through an inline
call is simply part of the outer step.
"""

from checker.cli import main
from checker.pipeline import Options, check_spec
from checker.front.parse import parse


def run(tmp_path, capsys, text: str, *args: str) -> tuple[int, str, str]:
    spec = tmp_path / "t.spec"
    spec.write_text(text)
    code = main([str(spec), "--brief", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_return_inside_atomic_leaving_its_inline_is_a_clear_error(tmp_path, capsys):
    # Used to reach the generated Python as a `break` outside a loop: a traceback.
    code, out, err = run(tmp_path, capsys, """model r; var x: 0..3 = 0;
inline f() { atomic { if (x == 0) return; x = x + 1; } x = 2; }
process p { f(); }
""")
    assert code == 2
    assert "t.spec:2:35: error: `return` inside `atomic` cannot leave the inline procedure" in err
    assert "Traceback" not in err


def test_a_return_inside_an_atomic_inline_skips_only_the_rest_of_the_inline(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, """model r; var x: 0..3 = 0;
inline f() { if (x == 0) return; x = 3; }
process p { atomic { f(); x = x + 1; } }
invariant one: p@end -> x == 1;
""")
    assert code == 0, err


def test_atomic_nested_through_an_inline_is_part_of_the_outer_step(tmp_path, capsys):
    # g() is one step on its own and a part of the outer step inside `atomic`.
    # By hand: p takes 2 steps (x: 0 -> 2 -> 5), q waits for x == 2 then for x == 5.
    # States: (x, pc p, pc q) = (0,0,0) (2,1,0) (2,1,1) (5,2,0) (5,2,1) (5,2,2): 6.
    text = """model n; var x: 0..5 = 0;
inline g() { atomic { x = x + 1; x = x + 1; } }
process p { g(); atomic { g(); x = x + 1; } }
process q { await x >= 2; end_wait: atomic { await x == 5; skip; } }
invariant never_odd: x != 1 && x != 3 && x != 4;
"""
    code, out, err = run(tmp_path, capsys, text)
    assert code == 0, err
    result = check_spec(parse(text, "n.spec"), Options())
    assert result.variants[0].stats.states == 6


def test_nested_atomic_cannot_wait(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, """model n; var x: 0..5 = 0;
process p { atomic { x = 1; atomic { await x == 1; x = 2; } } }
""")
    assert code == 2
    assert "an `atomic` inside another one cannot start with `await`" in err


def test_break_cannot_leave_an_inline_called_inside_an_atomic_loop(tmp_path, capsys):
    # As in C, `break` never leaves a procedure. Inside `atomic` it used to be accepted
    # and then silently acted as `return` (x reached 4 instead of stopping at 2).
    code, out, err = run(tmp_path, capsys, """model b; var x: 0..5 = 0;
inline f() { if (x == 2) break; }
process p { atomic { while (x < 4) { x = x + 1; f(); } } }
""")
    assert code == 2
    assert "t.spec:2:26: error: `break` outside a loop" in err
