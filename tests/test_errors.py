"""Bad input: every error names file:line:col, shows the line with a caret, gives a hint
where one helps, and exits 2 without a traceback."""

import pytest

from checker.cli import main
from checker.base.errors import SpecError
from checker.front.parse import parse
from checker.ir import build
from checker.resolve import resolve

OK_TAIL = "\nprocess p { x = 1; }\n"

# (name, spec text, variant, defines, expected message fragment, expected line:col, hint fragment)
CASES = [
    ("unterminated block", "model m;\nvar x: 0..1;\nprocess p {\n  x = 1;\n",
     None, {}, "unexpected end of file", "4:9", "never closed"),
    ("missing semicolon", "model m;\nvar x: 0..1\nprocess p { x = 1; }\n",
     None, {}, "expected ';' before 'process'", "3:1", "missing ';'"),
    ("unexpected character", "model m;\nvar x: 0..1;\nprocess p { x = $1; }\n",
     None, {}, "unexpected character '$'", "3:17", "names are letters"),
    ("unknown variable", "model m;\nvar count: 0..1;\nprocess p { cuont = 1; }\n",
     None, {}, "unknown name 'cuont'", "3:13", "did you mean 'count'?"),
    ("type mismatch", "model m;\nvar b: bool = false;\nprocess p { b = 3; }\n",
     None, {}, "type mismatch: 'b' is bool, the value is int", "3:17", None),
    ("initial value out of range", "model m;\nvar x: 0..2 = 5;\nprocess p { x = 1; }\n",
     None, {}, "initial value 5 of 'x' is outside its range 0..2", "2:15", "declared as 0..2"),
    ("duplicate name", "model m;\nvar x: 0..1;\nvar x: bool;" + OK_TAIL,
     None, {}, "duplicate name 'x'", "3:5", "already declared as a variable at"),
    ("goto to a missing label", "model m;\nvar x: 0..1;\nprocess p { top: x = 1; goto tpo; }\n",
     None, {}, "goto to an unknown label 'tpo'", "3:25", "did you mean 'top'?"),
    ("recursive inline", "model m;\nvar x: 0..1;\ninline f() { g(); }\ninline g() { f(); }\nprocess p { f(); }\n",
     None, {}, "recursive inline procedure 'f' (f -> g -> f)", "4:14", "cannot recurse"),
    ("self outside a process array", "model m;\nvar x: 0..3;\nprocess p { x = self; }\n",
     None, {}, "`self` outside a process array", "3:17", "process name[N]"),
    ("unknown variant", "model m;\nvar x: 0..1;" + OK_TAIL + "variant fixed { }\n",
     "fxied", {}, "unknown variant 'fxied'", None, "did you mean 'fixed'?"),
    ("-D of an unknown constant", "model m;\nconst KICK = true;\nvar x: 0..1;" + OK_TAIL,
     None, {"KIKC": "false"}, "-D KIKC: no constant named 'KIKC'", None, "did you mean 'KICK'?"),
    ("-D of the wrong type", "model m;\nconst KICK = true;\nvar x: 0..1;" + OK_TAIL,
     None, {"KICK": "3"}, "'KICK' is a bool constant, not an int", None, "its default is true"),
    ("unknown type", "model m;\nvar x: Mdoe;\nenum Mode { A, B }" + OK_TAIL,
     None, {}, "unknown type 'Mdoe'", "2:8", "did you mean 'Mode'?"),
    ("break outside a loop", "model m;\nvar x: 0..1;\nprocess p { break; }\n",
     None, {}, "`break` outside a loop", "3:13", None),
    ("return outside an inline", "model m;\nvar x: 0..1;\nprocess p { return; }\n",
     None, {}, "`return` outside an inline procedure", "3:13", None),
    ("assignment to a constant", "model m;\nconst N = 1;\nvar x: 0..1;\nprocess p { N = 2; }\n",
     None, {}, "cannot assign to constant 'N'", "4:13", "variant or -D"),
    ("await in the middle of atomic", "model m;\nvar x: 0..1;\nprocess p { atomic { x = 1; await x == 0; } }\n",
     None, {}, "`await` inside `atomic` must be its first statement", "3:29", None),
    ("expect names an unknown property", "model m;\nvar x: 0..1;" + OK_TAIL + "invariant small: x < 2;\nexpect violated smal;\n",
     None, {}, "`expect` names an unknown property 'smal'", "5:17", "did you mean 'small'?"),
    ("variant sets something not a constant", "model m;\nconst A = 1;\nvar x: 0..1;" + OK_TAIL + "variant v { x = 1; }\n",
     "v", {}, "variant 'v' sets 'x', which is not a constant", "5:13", None),
    ("constant array index out of bounds", "model m;\nvar a[2]: bool;\nprocess p { a[2] = true; }\n",
     None, {}, "index 2 is outside 'a' (0..1)", "3:15", None),
    ("unknown label in P@label", "model m;\nvar x: 0..1;\nprocess p { crit: x = 1; }\ninvariant i: !p@crti;\n",
     None, {}, "process 'p' has no label 'crti'", "4:17", "did you mean 'crit'?"),
    ("side effect in an invariant", "model m;\nvar x: 0..1;" + OK_TAIL + "invariant i: xchg(x, 1) == 0;\n",
     None, {}, "'xchg' changes state and cannot appear in an invariant", "4:14", "side effects belong in statements"),
    ("loop without a step", "model m;\nvar x: 0..1;\nprocess p { x = 1; loop { } }\n",
     None, {}, "process 'p' has a loop that takes no step", "3:20", "add `skip;`"),
    ("wrong number of arguments", "model m;\nvar x: 0..1;\nprocess p { atomic_inc(x, x); }\n",
     None, {}, "'atomic_inc' takes 1 argument(s), not 2", "3:13", None),
    ("empty range", "model m;\nvar x: 3..1;" + OK_TAIL,
     None, {}, "empty range 3..1", "2:8", "lower bound comes first"),
    ("if condition is not a bool", "model m;\nvar x: 0..1;\nprocess p { if (x) x = 0; }\n",
     None, {}, "an `if` condition must be a bool, not 0..1", "3:17", "compare it"),
    ("schedule inside atomic", "model m;\nvar x: 0..1;\nwaitqueue wq;\nprocess p { atomic { prepare_to_wait(wq); schedule(); } }\n",
     None, {}, "`schedule()` blocks and cannot be inside `atomic`", "4:43", None),
    ("a model with no process", "model m;\nvar x: 0..1;\n",
     None, {}, "the model declares no process", "1:1", None),
    ("enum comparison across types", "model m;\nenum A { A1 }\nenum B { B1 }\nvar a: A = A1;\nprocess p { await a == B1; }\n",
     None, {}, "cannot compare A with B", "5:19", None),
]


@pytest.mark.parametrize("name,text,variant,defines,message,where,hint", CASES, ids=[c[0] for c in CASES])
def test_error_message(name, text, variant, defines, message, where, hint):
    with pytest.raises(SpecError) as info:
        build(resolve(parse(text, "bad.spec"), variant or "base", defines))
    err = info.value
    assert message in err.message
    if where is not None:
        assert f"{err.span.line}:{err.span.col}" == where
    if hint is not None:
        assert err.hint is not None and hint in err.hint
    rendered = err.render(text)
    if where is not None:
        line, col = map(int, where.split(":"))
        lines = rendered.splitlines()
        assert lines[0].startswith(f"bad.spec:{line}:{col}: error: ")
        # the source line, then a caret under the offending column
        assert lines[1] == "  " + text.splitlines()[line - 1]
        assert lines[2].index("^") == 2 + col - 1


def test_at_least_fifteen_distinct_errors():
    assert len({c[4] for c in CASES}) >= 15


@pytest.mark.parametrize("name,text,variant,defines,message,where,hint", CASES, ids=[c[0] for c in CASES])
def test_cli_reports_error_with_exit_2(tmp_path, capsys, name, text, variant, defines, message, where, hint):
    spec = tmp_path / "bad.spec"
    spec.write_text(text)
    argv = [str(spec), "--brief"]
    if variant:
        argv += ["--variant", variant]
    for k, v in defines.items():
        argv += ["-D", f"{k}={v}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert message in err
    if where is not None:
        assert f"bad.spec:{where}: error:" in err
        assert "^" in err


def test_missing_file_is_bad_input(tmp_path, capsys):
    assert main([str(tmp_path / "nope.spec")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_malformed_define(tmp_path, capsys):
    spec = tmp_path / "m.spec"
    spec.write_text("model m; const K = 1; var x: 0..1;" + OK_TAIL)
    assert main([str(spec), "-D", "K"]) == 2
    assert "-D expects NAME=VALUE" in capsys.readouterr().err


def test_usage_error_exits_2(tmp_path, capsys):
    spec = tmp_path / "m.spec"
    spec.write_text("model m; var x: 0..1;" + OK_TAIL)
    with pytest.raises(SystemExit) as info:
        main([str(spec), "--max-states", "many"])
    assert info.value.code == 2
