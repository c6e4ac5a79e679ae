"""Coverage and vacuity (engines/coverage.py) and `reachable` declarations (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from checker.cli import main
from checker.front.parse import parse
from checker.pipeline import Options, check_spec, compile_variant, load
from shared_runs import checked
from variant_cover import covering_variants

import coverage_oracle

ROOT = Path(__file__).resolve().parent.parent

DEAD = """model dead;
var x: 0..3 = 0;
var y: 0..3 = 0;
process p {
  x = 1;
  if (x == 2) {
    y = 1;
  }
  await (x == 1);
  y = 2;
}
invariant inv: y == 3 -> x == 2;
property live: always (y == 3 -> eventually x == 0);
"""


def run(tmp_path, text: str, *args: str, capsys=None):
    path = tmp_path / "m.spec"
    path.write_text(text, encoding="utf-8")
    code = main([str(path), *args])
    return code, path


def test_dead_statement_and_untaken_branch_are_warned_with_their_lines(tmp_path, capsys):
    code, _ = run(tmp_path, DEAD)
    out = capsys.readouterr().out
    assert code == 0
    assert "warning: base: line 7: p: `y = 1;` is never executed" in out
    assert "warning: base: line 6: p: `if (x == 2)` never takes its then branch" in out
    assert "`y = 2;` is never executed" not in out and "`x = 1;` is never executed" not in out


def test_vacuous_trigger_and_implication_left_side(tmp_path, capsys):
    run(tmp_path, DEAD)
    out = capsys.readouterr().out
    assert "line 12: inv: the left side `y == 3` of its `->` never holds" in out
    assert "line 13: live: the trigger `y == 3` never holds in a reachable state" in out
    # a trigger that does hold is not warned about
    run(tmp_path, DEAD.replace("always (y == 3", "always (y == 2"))
    assert "live: the trigger" not in capsys.readouterr().out


def test_coverage_counts_per_instance_of_a_process_array(tmp_path):
    spec = parse("""model arr;
var x: 0..3 = 0;
process p[2] {
  if (self == 1) { x = 1; }
}
""", "arr.spec")
    cov = check_spec(spec, Options()).variants[0].coverage
    assert cov.statements == coverage_oracle.analyse(compile_variant(spec, "base", Options())).statements
    by_text = {s.text: s for s in cov.statements}
    assert by_text["x = 1;"].executed == 1 and by_text["x = 1;"].instances == 2
    assert dict(by_text["if (self == 1)"].branches) == {"then": True, "else": True}


def test_coverage_under_por_is_that_of_every_interleaving_here(tmp_path):
    """Partial-order reduction expands fewer interleavings; the statements it ran here are
    those of the unreduced search, and the coverage says which search recorded it."""
    text = """model por;
var a: 0..1 = 0;
var b: 0..1 = 0;
var seen: 0..1 = 0;
process p { a = 1; }
process q { if (a == 0) { seen = 1; } b = 1; }
invariant ok: b <= 1;
"""
    spec = parse(text, "por.spec")
    with_por = check_spec(spec, Options(por=True)).variants[0]
    without = check_spec(spec, Options(por=False)).variants[0]
    assert [s.executed for s in with_por.coverage.statements] == [s.executed for s in without.coverage.statements]
    assert with_por.coverage.states == with_por.stats.states < without.stats.states
    assert with_por.coverage.reduced == "partial-order reduction" and without.coverage.reduced == ""
    assert not with_por.coverage.dead()


def test_same_state_space_variants_and_silent_process(tmp_path, capsys):
    text = """model knobs;
const K = false;
const GO = true;
var x: 0..1 = 0;
process p { x = 1; }
process r { await GO; x = 0; }
invariant fine: x <= 1;
variant nothing { K = true; }
variant stuck { GO = false; }
"""
    code, _ = run(tmp_path, text)
    out = capsys.readouterr().out
    assert "warning: nothing: the same reachable states as base" in out
    assert "warning: stuck: process r never takes a step, so invariants fine hold without it" in out
    assert "stuck: the same reachable states" not in out


def test_coverage_table_lists_every_statement(tmp_path, capsys):
    run(tmp_path, DEAD, "--coverage")
    out = capsys.readouterr().out
    assert "coverage of base: 4/5 statements executed" in out
    assert "DEAD  y = 1;" in out and "then:NO else:yes" in out


def test_warnings_in_json_and_sarif(tmp_path, capsys):
    out_json, out_sarif = tmp_path / "r.json", tmp_path / "r.sarif"
    code, _ = run(tmp_path, DEAD, "--json", str(out_json), "--sarif", str(out_sarif))
    assert code == 0
    doc = json.loads(out_json.read_text())
    from checker.export.json import schema

    jsonschema.validate(doc, schema())
    assert {"variant": "base", "line": 7, "message": "p: `y = 1;` is never executed"} in doc["warnings"]
    sarif = json.loads(out_sarif.read_text())
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "coverage"]
    assert results and all(r["level"] == "warning" for r in results)
    assert any(r["locations"][0]["physicalLocation"]["region"]["startLine"] == 7 for r in results)


def test_no_coverage_after_an_incomplete_search(tmp_path, capsys):
    code, _ = run(tmp_path, DEAD, "--max-states", "2")
    out = capsys.readouterr().out
    assert code == 3 and "never executed" not in out


REACH = """model reach;
var armed: bool = false;
var fired: bool = false;
process timer { armed = true; }
process irq { if (armed && fired) { fired = false; } }
reachable arms: armed;
sometimes fires: fired;
"""


def test_reachable_unreached_is_a_violation(tmp_path, capsys):
    code, _ = run(tmp_path, REACH)
    out = capsys.readouterr().out
    assert code == 1
    assert "fires     violated  holds     UNEXPECTED" in out
    assert "arms      holds     holds     ok" in out


def test_reachable_declaration_checks_with_and_without_por(tmp_path, capsys):
    for flags in ((), ("--no-por",)):
        code, _ = run(tmp_path, REACH.replace("sometimes fires: fired;", "sometimes fires: armed && !fired;"),
                      *flags)
        assert code == 0, capsys.readouterr().out
        capsys.readouterr()


def test_reachable_expected_violated_and_cut_short(tmp_path, capsys):
    code, _ = run(tmp_path, REACH + "variant v { } expect violated fires;\n", "--variant", "v")
    assert code == 0
    capsys.readouterr()
    code, _ = run(tmp_path, REACH.replace("reachable arms: armed;", ""), "--max-depth", "0")
    out = capsys.readouterr().out
    assert code == 3 and "not reached before the search was cut short" in out


@pytest.mark.parametrize("kw", ["reachable", "sometimes"])
def test_reachable_reads_process_locals_and_labels(tmp_path, capsys, kw):
    text = f"model r;\nprocess p {{ var c: 0..1 = 0; c = 1; }}\n{kw} set: p@end && p.c == 1;\n"
    code, _ = run(tmp_path, text)
    assert code == 0, capsys.readouterr().out


def test_doc_locals_in_properties(tmp_path, capsys):
    """LANGUAGE.md said properties cannot read process locals, while the code (and a later
    section) let them: the reproducer checks, and the doc no longer says otherwise."""
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "spec" / "LANGUAGE.md").read_text(encoding="utf-8")
    assert "Properties cannot read them" not in doc
    repro = Path("/work/shared/reviews/language/doc_locals_in_properties.spec")
    text = repro.read_text() if repro.exists() else \
        "model r8;\nvar x: 0..1 = 0;\nprocess p { var c: 0..1 = 0; c = 1; x = 1; }\n" \
        "invariant reads_local: p@end -> p.c == 1;\n"
    code, _ = run(tmp_path, text)
    assert code == 0


def test_unused_local_is_warned(tmp_path, capsys):
    text = """model unused;
var x: 0..3 = 0;
var a[2]: 0..1 = 0;
process p {
  var never: 0..1 = 0;
  var written: 0..1 = 0;
  var r: 0..3 = 0;
  var i: 0..1 = 0;
  var c: 0..1 = 0;
  written = 1;
  r = x;
  a[i] = 1;
  c = 1;
  x = r + 1;
}
invariant q: p.c <= 1;
"""
    code, _ = run(tmp_path, text)
    out = capsys.readouterr().out
    assert code == 0
    assert "warning: base: line 5: p: local 'never' is never read" in out
    assert "warning: base: line 6: p: local 'written' is never read" in out
    for used in ("'r'", "'i'", "'c'"):  # read by a step, as an index, by a property
        assert f"local {used}" not in out


def test_no_coverage_flag_skips_the_pass(tmp_path, capsys):
    code, _ = run(tmp_path, DEAD, "--no-coverage")
    out = capsys.readouterr().out
    assert code == 0 and "never executed" not in out and "never holds" not in out


@pytest.mark.parametrize("model", sorted(p.name for p in (ROOT / "models").glob("*.spec")))
def test_coverage_the_search_recorded_is_that_of_every_state(model):
    """Each shipped variant of the model's covering set (variant_cover), searched as
    `check` searches it (partial-order reduction, merged steps, symmetry where it
    applies, tso and lkmm): the statements, branches, vacuous premises and silent
    processes the search recorded are those an unreduced pass over every reachable state
    finds (tests/coverage_oracle.py)."""
    spec = load(str(ROOT / "models" / model))
    cover = covering_variants(ROOT / "models" / model)
    for v in checked(ROOT / "models" / model, variants=cover).variants:  # `check`'s search, shared
        if v.coverage is None:
            assert v.coverage_note, v.variant  # (a search cut short says why)
            continue
        ref = coverage_oracle.analyse(compile_variant(spec, v.variant, Options()))
        assert ref is not None, v.variant
        got = v.coverage
        assert (got.statements, got.never_true, got.silent_processes) == \
            (ref.statements, ref.never_true, ref.silent_processes), v.variant
