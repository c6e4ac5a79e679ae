"""A spec must never run Python: names reach the generated code only as slot numbers
and sanitised comments, and the language has no string literals at all."""


import pytest

from checker import ir
from checker.cli import main
from checker.backends.python import compile_program
from checker.front.parse import parse
from checker.resolve import resolve

HOSTILE_NAMES = """
model __import__;
const __builtins__ = 1;
enum os { system, popen, eval }
var __class__: os = system;
var __import__x: 0..1 = 0;
process exec[2] {
  var open: 0..1 = 0;
  __init__: open = __builtins__;
  __import__x = open;
  __class__ = eval;
}
invariant __globals__: exec[0]@__init__ -> __class__ != eval;
expect violated __globals__;
"""


def test_python_names_are_only_names(tmp_path, capsys, monkeypatch):
    marker = tmp_path / "pwned"
    monkeypatch.chdir(tmp_path)
    cm = compile_program(ir.build(resolve(parse(HOSTILE_NAMES, "h.spec"))))
    code = cm.source
    # names appear in comments only, never as Python identifiers or calls
    for line in code.splitlines():
        stripped = line.split("#", 1)[0]
        assert "__import__" not in stripped and "__builtins__" not in stripped
        assert "exec(" not in stripped and "eval" not in stripped and "open" not in stripped
    spec = tmp_path / "h.spec"
    spec.write_text(HOSTILE_NAMES)
    assert main([str(spec), "--brief"]) == 0
    assert not marker.exists()


@pytest.mark.parametrize("payload", [
    'var x: 0..1 = 0; process p { x = "__import__(\'os\').system(\'touch pwned\')"; }',
    "var x: 0..1 = 0; process p { x = 1; } // \n__import__('os').system('touch pwned')",
    "var x: 0..1 = 0; process p { x = '1'; }",
    "var x: 0..1 = 0;\nprocess p {\n x = 1 +\n // ');import os;os.system(\"touch pwned\")\n 0; }",
    "var x: 0..1 = 0; process p { x = 1; }\ninvariant i: x == 0x1 ;\n/* \n\n import os */",
])
def test_code_in_strings_comments_and_newlines_never_runs(tmp_path, capsys, monkeypatch, payload):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "p.spec"
    spec.write_text("model m;\n" + payload + "\n")
    code = main([str(spec), "--brief"])
    assert code in (0, 1, 2)
    assert not (tmp_path / "pwned").exists()
    if payload.startswith("var x: 0..1 = 0; process p { x = ") and "1;" not in payload[30:36]:
        assert code == 2 and "unexpected character" in capsys.readouterr().err


def test_statement_text_in_comments_stays_on_one_line():
    text = "model m;\nvar x: 0..3 = 0;\nprocess p {\n  x = 1 +\n  // \x0b evil\n  2;\n}\n"
    cm = compile_program(ir.build(resolve(parse(text, "m.spec"))))
    compile(cm.source, "generated", "exec")
    for line in cm.source.splitlines():
        assert line.isprintable()


def test_generated_code_has_no_builtins_beyond_a_few():
    cm = compile_program(ir.build(resolve(parse("model m; var x: 0..1; process p { x = 1; }", "m.spec"))))
    # set: a loop inside one step remembers the states at its head (a state seen twice never ends)
    assert set(cm.namespace["__builtins__"]) <= {"min", "max", "any", "all", "range", "list", "len", "bool", "set"}
