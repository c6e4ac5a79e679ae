"""Error codes (one registry, checker/base/errors.py), several errors per run, and the
parser's messages (issue 21)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.cli import main
from checker.base.errors import REGISTRY, STAGE_CODES, SpecError, SpecErrors

CHECKER = Path(__file__).parent.parent / "checker"


def check(tmp_path, text: str, *args: str):
    path = tmp_path / "bad.spec"
    path.write_text(text, encoding="utf-8")
    return main([str(path), *args])


def test_every_raise_site_uses_a_registered_code():
    """A code written at a raise site (`SpecError(..., "TRnnn")`) is in the registry; every
    stage default is too."""
    used = set()
    for f in CHECKER.rglob("*.py"):
        used |= set(re.findall(r'"(TR\d{3})"', f.read_text(encoding="utf-8")))
    assert used and used <= set(REGISTRY), used - set(REGISTRY)
    assert set(STAGE_CODES.values()) <= set(REGISTRY)
    with pytest.raises(AssertionError):
        SpecError(None, "x", None, "TR999")


def test_every_error_message_ends_with_a_code(tmp_path, capsys):
    cases = ["model m;\nprocess p { x = 1; }\n",  # resolve
             "model m;\nprocess p { skip }\n",  # parse
             "model m;\nprocess p { goto nowhere; }\n"]  # lowering
    for text in cases:
        assert check(tmp_path, text) == 2
        err = capsys.readouterr().err
        first = err.splitlines()[0]
        assert re.search(r"\[TR\d{3}\]$", first), first
    assert main([str(tmp_path / "missing.spec")]) == 2
    assert "[TR600]" in capsys.readouterr().err


def test_explain_prints_the_registry_entry(capsys):
    assert main(["--explain", "TR103"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TR103: nested comment") and "Comments do not nest" in out
    assert main(["--explain", "TR999"]) == 2
    assert "unknown error code" in capsys.readouterr().err


THREE = """model three;
var x: 0..3 = 0;
process a { y = 1; }
process b { x = true; }
process c { x = nope(1); }
"""


def test_several_errors_per_run(tmp_path, capsys):
    assert check(tmp_path, THREE) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ": error: " in ln]
    assert len(lines) == 3, err
    assert [ln.split(":")[1] for ln in lines] == ["3", "4", "5"]  # sorted by position
    assert all(re.search(r"\[TR\d{3}\]$", ln) for ln in lines)
    assert err.rstrip().endswith("3 errors")


def test_errors_of_properties_are_collected_too(tmp_path, capsys):
    text = "model m;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\ninvariant a: y == 1;\ninvariant b: x == true;\n"
    assert check(tmp_path, text) == 2
    err = capsys.readouterr().err
    assert "bad.spec:4:" in err and "bad.spec:5:" in err


def test_spec_errors_stand_for_the_first():
    from checker.base.errors import Span

    e = SpecErrors([SpecError(Span("f", 5, 1, 5, 2), "later"), SpecError(Span("f", 2, 1, 2, 2), "first")])
    assert e.message == "first" and e.span.line == 2


def test_missing_semicolon_says_expected_semicolon(tmp_path, capsys):
    assert check(tmp_path, "model m;\nvar x: 0..3 = 0;\nprocess p {\n  x = x + 1 x = 2;\n}\n") == 2
    err = capsys.readouterr().err
    assert "expected ';' before 'x' [TR101]" in err
    assert "addop" not in err and "unop" not in err and "__ANON" not in err


def test_nested_comment(tmp_path, capsys):
    text = ("/* a header comment that quotes kernel code:\n       /* For x86 */\n"
            "       if (swait_active(q)) swake_up_one(q);\n*/\nmodel nested_comment;\nprocess p { skip; }\n")
    assert check(tmp_path, text) == 2
    err = capsys.readouterr().err
    assert "[TR103]" in err and "comments do not nest" in err and "2:8" in err


def test_unclosed_comment_has_its_code(tmp_path, capsys):
    assert check(tmp_path, "model m;\n/* never closed\nprocess p { skip; }\n") == 2
    assert "unclosed comment [TR102]" in capsys.readouterr().err


def test_every_terminal_has_a_name_the_error_can_show(tmp_path, capsys):
    from checker.front.parse import _parser

    assert not [t.name for t in _parser().terminals if t.name.startswith("__ANON")]
    assert check(tmp_path, "model m;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\nproperty q: always (x == 1 x);\n") == 2
    err = capsys.readouterr().err
    assert "'->'" in err and "__ANON" not in err


def test_eventually_alone_suggests_always_eventually(tmp_path, capsys):
    assert check(tmp_path, "model m;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\nproperty q: eventually x == 1;\n") == 2
    err = capsys.readouterr().err
    assert "`eventually P` alone is not a property [TR108]" in err and "always eventually" in err


def test_transformer_refuses_an_unknown_rule():
    from lark import Tree

    from checker.front.parse import _Builder

    with pytest.raises(Exception, match="no builder for grammar rule 'mystery'"):
        _Builder("f").transform(Tree("mystery", []))


# ---- small language gaps (reproducers in reviews/language/) --------------------


def test_set_literal_assign(tmp_path, capsys):
    text = """model setassign;
var s: bitset(3) = {0};
process p { s = {1, 2}; s = {}; }
reachable both: test_bit(1, s) && test_bit(2, s) && !test_bit(0, s);
reachable empty: p@end && !test_bit(0, s) && !test_bit(1, s);
"""
    assert check(tmp_path, text) == 0, capsys.readouterr()
    capsys.readouterr()
    assert check(tmp_path, "model m;\nvar x: 0..3 = 0;\nprocess p { x = {1}; }\n") == 2
    assert "`{...}` is a bit set, and 'x' is 0..3 [TR203]" in capsys.readouterr().err
    assert check(tmp_path, "model m;\nvar s: bitset(2);\nprocess p { s = {2}; }\n") == 2
    assert "bit 2 is outside bitset(2)" in capsys.readouterr().err


def test_bitset_of_process_array(tmp_path, capsys):
    text = """model bitset_of_process_array;
var blocked[2]: bitset(vcpu);
process vcpu[3] { atomic { set_bit(self, blocked[0]); } }
reachable all: test_bit(0, blocked[0]) && test_bit(1, blocked[0]) && test_bit(2, blocked[0]);
"""
    assert check(tmp_path, text) == 0, capsys.readouterr()
    capsys.readouterr()
    assert check(tmp_path, "model m;\nvar b: bitset(p);\nprocess p { skip; }\n") == 2
    assert "'p' is one process, not an array" in capsys.readouterr().err


def test_write_once_on_a_bitset_says_so(tmp_path, capsys):
    assert check(tmp_path, "model r4;\nvar requests: bitset(2);\n"
                           "process p { WRITE_ONCE(requests, requests | 1); }\n") == 2
    err = capsys.readouterr().err
    assert "'WRITE_ONCE' takes a scalar variable; 'requests' is a bit set [TR207]" in err
    assert "set_bit" in err
