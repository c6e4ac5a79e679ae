"""Atomic blocks and inline procedures: how they nest, and what cannot cross them.

An atomic block is one step; an inline procedure is expanded where it is called. These
tests pin the corners where the two meet: a `return` or `break` must never jump out of
a place the generated step cannot leave, and an atomic block nested through an inline
call is simply part of the outer step.
"""

from checker.cli import main
from checker.run import Options, check_spec
from checker.parse import parse


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


def test_return_of_an_inline_called_inside_atomic_still_works(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, """model r; var x: 0..3 = 0;
inline f() { if (x == 0) return; x = 3; }
process p { atomic { f(); x = x + 1; } }
invariant one: p@end -> x == 1;
""")
    assert code == 0, err
