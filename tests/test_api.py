"""The Python API (checker/api.py, exported by the package): what a script or a
notebook gets back, the options it can pass, and that bad input raises SpecError
with a span instead of exiting."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest

import checker
from checker import (Counterexample, PropertyOutcome, RunResult, SpecError, Span, VariantResult, Verdict,
                     check_file, check_source)
from helpers import MODELS, TESTS
from test_readme import README, fenced_blocks

COUNTER = str(MODELS / "counter.spec")


def outcome(result: RunResult, variant: str, prop: str) -> PropertyOutcome:
    (v,) = [v for v in result.variants if v.variant == variant]
    (o,) = [o for o in v.outcomes if o.property == prop]
    return o


def test_package_exports_the_api():
    assert set(checker.__all__) >= {"check_file", "check_source", "SpecError", "RunResult", "Verdict"}
    for name in checker.__all__:
        assert getattr(checker, name) is not None
    assert checker.SpecError is __import__("checker.base.errors").base.errors.SpecError
    with pytest.raises(AttributeError):
        checker.no_such_name  # noqa: B018


def test_import_checker_imports_neither_z3_nor_the_parser():
    """`import checker` is cheap; the explicit engine never loads Z3 either."""
    code = ("import sys, checker\n"
            "assert 'z3' not in sys.modules and 'lark' not in sys.modules, 'import checker'\n"
            "from checker import check_file\n"
            f"r = check_file({COUNTER!r})\n"
            "assert r.variants, r\n"
            "assert 'z3' not in sys.modules, 'check_file with the explicit engine'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=TESTS.parent)
    assert done.returncode == 0, done.stderr


def test_check_file_returns_the_exporters_result_objects():
    r = check_file(COUNTER)
    assert isinstance(r, RunResult) and r.model == "counter" and r.file == COUNTER
    assert [v.variant for v in r.variants] == ["base", "atomic_inc"]
    assert all(isinstance(v, VariantResult) and v.stats.complete and v.stats.states > 0 for v in r.variants)
    bug = outcome(r, "base", "both_counted")
    assert (bug.verdict, bug.expected_violation, bug.as_expected) == (Verdict.VIOLATED, True, True)
    assert isinstance(bug.counterexample, Counterexample) and bug.counterexample.trace.actions
    assert bug.span.line > 0
    fixed = outcome(r, "atomic_inc", "both_counted")
    assert (fixed.verdict, fixed.counterexample) == (Verdict.HOLDS, None)
    assert r.all_as_expected


def test_check_file_finds_a_violation_without_expectations():
    r = check_file(COUNTER, variants="base", expectations=False)
    assert [v.variant for v in r.variants] == ["base"]
    bug = outcome(r, "base", "both_counted")
    assert bug.verdict is Verdict.VIOLATED and not bug.as_expected and not r.all_as_expected
    # the race, step by step: both read x before either writes it
    texts = [a.text for a in bug.counterexample.trace.actions]
    assert texts[:2] == ["r = x;", "r = x;"]


def test_check_file_options():
    assert outcome(check_file(COUNTER, variants=["base"], defines={"ATOMIC": True}),
                   "base", "both_counted").verdict is Verdict.HOLDS
    cut = check_file(COUNTER, variants="atomic_inc", max_states=3)
    assert not cut.variants[0].stats.complete and cut.variants[0].stats.limit == "max-states"
    assert outcome(cut, "atomic_inc", "both_counted").verdict is Verdict.INCOMPLETE
    tso = check_file(str(TESTS / "litmus" / "sb.spec"), memory_model="tso")
    assert {v.memory for v in tso.variants} == {"tso"}
    assert {v.memory for v in check_file(str(TESTS / "litmus" / "sb.spec"), memory_model="sc").variants} == {"sc"}
    shallow = check_file(COUNTER, variants="base", max_depth=1, deadlock=False)
    assert not shallow.variants[0].stats.complete
    assert [o.property for o in shallow.variants[0].outcomes] == ["both_counted"]  # no deadlock check


@pytest.mark.slow
def test_check_file_bmc_engine():
    r = check_file(COUNTER, variants="base", engine="bmc", depth=4)
    bug = outcome(r, "base", "both_counted")
    assert bug.verdict is Verdict.VIOLATED and bug.counterexample.engine == "bmc"


def test_check_source_checks_a_spec_in_a_string():
    text = (MODELS / "counter.spec").read_text()
    r = check_source(text, "counter.spec", variants="base")
    assert r.file == "counter.spec" and outcome(r, "base", "both_counted").verdict is Verdict.VIOLATED
    with pytest.raises(TypeError):
        check_source(text, max_state=3)  # a misspelt option is a Python error, not ignored


def test_bad_spec_raises_spec_error_with_span_not_system_exit():
    with pytest.raises(SpecError) as e:
        check_source("model bad;\nvar x: 0..2 = 0;\nprocess p {\n  x = y + 1;\n}\n", "bad.spec")
    assert e.value.span == Span("bad.spec", 4, 7, 4, 8)
    assert e.value.message == "unknown name 'y'" and e.value.hint
    with pytest.raises(SpecError) as e:
        check_source("model bad;\nvar x: 0..2 = 0\nprocess p { skip; }\n", "bad.spec")
    assert (e.value.span.line, e.value.span.col) == (3, 1)
    with pytest.raises(SpecError) as e:
        check_file(str(TESTS / "no_such.spec"))
    assert e.value.message.startswith("no such file") and e.value.span.file.endswith("no_such.spec")


@pytest.mark.parametrize("kwargs, says", [
    ({"variants": "atomic"}, "unknown variant 'atomic'"),
    ({"defines": {"NOPE": 1}}, "-D NOPE: no constant named 'NOPE'"),
    ({"defines": {"ATOMIC": 1.5}}, "-D ATOMIC: expected a bool, an int or a str"),
    ({"engine": "spin"}, "unknown engine 'spin'"),
    ({"memory_model": "arm"}, "unknown memory model 'arm'"),
    ({"depth": 3}, "depth is for engine='bmc'"),
    ({"engine": "bmc", "max_states": 3}, "max_states and max_depth are for the explicit engine"),
    ({"max_states": 0}, "max_states must be a whole number >= 1"),
    ({"symmetry": "yes"}, "symmetry must be"),
    ({"engine": "bmc", "timeout": 0}, "timeout must be a positive number"),
])
def test_bad_options_raise_spec_error(kwargs, says):
    with pytest.raises(SpecError) as e:
        check_file(COUNTER, **kwargs)
    assert e.value.message.startswith(says), e.value.message


def test_readme_python_example_prints_what_it_shows(monkeypatch):
    blocks = fenced_blocks(README)
    i = next(i for i, b in enumerate(blocks) if b.startswith("from checker import"))
    code, shown = blocks[i], blocks[i + 1]
    monkeypatch.chdir(TESTS.parent)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == shown


def test_check_of_a_small_model_loads_only_what_its_run_uses(tmp_path):
    """Start-up (issue 30): `check FILE` without output files, on a model without
    liveness, loads no Z3, networkx, exporter of files, litmus reader or axiomatic
    LKMM, Promela back end, C back end or native loop, liveness or replay engine, nor
    the workers or multiprocessing (the workers start only on a large model); an sc
    model loads no lkmm machine, and a run without an error or a shipped model's name
    no importlib.resources (pathlib, zipfile) or difflib. A model
    with a liveness property then loads the liveness engine, and still no Z3. Which
    modules load is what this checks; the CPU it saves is bench's."""
    live = tmp_path / "live.spec"
    live.write_text("model live;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n"
                    "property one: always eventually x == 1;\n")
    code = ("import sys, importlib.util\n"
            "from checker.cli import main\n"
            f"code = main([{COUNTER!r}, '--brief'])\n"
            "assert code in (0, 1), code\n"
            "heavy = ['z3', 'networkx', 'multiprocessing', 'checker.litmus.axiomatic', 'checker.litmus.reader',\n"
            "         'checker.backends.promela', 'checker.export.json', 'checker.export.sarif', 'checker.export.dot',\n"
            "         'checker.export.junit', 'checker.export.itf', 'checker.export.mermaid', 'checker.export.markdown',\n"
            "         'checker.export.html', 'checker.engines.smt', 'checker.backends.c',\n"
            "         'checker.engines.explicit.native', 'checker.engines.explicit.parallel',\n"
            "         'checker.engines.liveness', 'checker.engines.replay',\n"
            "         'checker.memory.lkmm', 'checker.base.shipped', 'importlib.resources', 'difflib']\n"
            "missing = [m for m in heavy if importlib.util.find_spec(m) is None]\n"
            "assert not missing, missing\n"
            "loaded = [m for m in heavy if m in sys.modules]\n"
            "assert not loaded, loaded\n"
            f"assert main([{str(live)!r}, '--brief']) == 0\n"
            "assert 'checker.engines.liveness' in sys.modules and 'z3' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=TESTS.parent)
    assert done.returncode == 0, done.stderr
