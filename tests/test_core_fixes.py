"""Regression tests for core bugs found while building the Z3 engines (which must
mirror the compiled step semantics exactly)."""

from checker.cli import main


def _check(tmp_path, text, *args):
    spec = tmp_path / "m.spec"
    spec.write_text(text)
    return main([str(spec), "--brief", *args])


def test_quantifier_body_may_index_by_its_bound_variable(tmp_path, capsys):
    text = ("model q; var a[3]: 0..2 = 0; process p { a[1] = 2; }\n"
            "invariant allz: forall k in 0..2: (a[k] == 0);\n")
    assert _check(tmp_path, text, "--no-expect") == 1
    assert "allz" in capsys.readouterr().out


def test_index_check_respects_short_circuit(tmp_path, capsys):
    text = ("model q; var a[3]: 0..2 = 0; var i: 0..5 = 0;\n"
            "process p { i = 4; if (i < 3 && a[i] == 0) { skip; } }\n")
    assert _check(tmp_path, text) == 0


def test_index_out_of_range_is_a_model_error(tmp_path, capsys):
    text = ("model q; var a[3]: 0..2 = 0; var i: 0..5 = 0;\n"
            "process p { i = 4; if (a[i] == 0) { skip; } }\n")
    assert _check(tmp_path, text) == 1
    assert "model error" in capsys.readouterr().out


def test_dynamic_process_index_in_at_is_checked(tmp_path, capsys):
    text = "model q; var i: 0..3 = 3; process p[2] { a: skip; }\ninvariant x: p[i]@a;\n"
    assert _check(tmp_path, text) == 1
    assert "model error" in capsys.readouterr().out


def test_break_in_inline_called_inside_atomic_is_rejected(tmp_path, capsys):
    text = ("model q; var x: 0..5 = 0;\ninline inc() { x = x + 1; if (x == 2) break; }\n"
            "process p { atomic { while (x < 4) { inc(); } } }\n")
    assert _check(tmp_path, text) == 2
    assert "`break` outside a loop" in capsys.readouterr().err


def test_shift_operators_parse(tmp_path):
    text = ("model s; const A = 1 << 3; const B = 16 >> 2; var x: 0..8 = 0;\n"
            "process p { if (x < 2 && 1 > x) x = A - B - 4 + (x << 1) + (x >> 1); }\n"
            "invariant small: x <= 4;\n")
    assert _check(tmp_path, text) == 0
