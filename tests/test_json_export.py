"""The JSON result file: every output validates against the shipped, versioned JSON
Schema (spec/trace-schema.json), and its counterexamples read back unchanged."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from checker.export import json as jx
from checker.export.files import counterexamples
from helpers import run_check

VALIDATOR = jsonschema.Draft202012Validator


def validate(doc):
    VALIDATOR(jx.schema()).validate(doc)


def test_the_schema_is_a_valid_versioned_json_schema_shipped_in_the_package():
    text = resources.files("checker.spec").joinpath("trace-schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    VALIDATOR.check_schema(schema)
    assert schema["properties"]["version"]["const"] == jx.SCHEMA_VERSION
    assert schema["$id"].endswith(f":{jx.SCHEMA_VERSION}") and schema["description"]
    assert jx.schema() == schema


def test_every_output_validates_against_the_schema(exported):
    for name, (folder, _, _) in exported.items():
        files = list((folder / "out").glob("*.json"))
        assert files, name
        for f in files:
            validate(json.loads(f.read_text()))


def test_the_schema_rejects_what_it_should(exported):
    doc = json.loads((exported["counter"][0] / "out/counter.json").read_text())
    validate(doc)
    broken = json.loads(json.dumps(doc))
    broken["variants"][0]["outcomes"][0]["verdict"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)
    broken = json.loads(json.dumps(doc))
    del broken["variants"][0]["outcomes"][0]["counterexample"]["trace"]["actions"][0]["line"]
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)


def test_the_file_holds_the_run_model_properties_verdicts_stats_and_actions(exported):
    doc = json.loads((exported["four"][0] / "out/four.json").read_text())
    assert doc["model"] == "four" and doc["file"] == "models/four.spec"
    assert doc["command"].startswith("check models/four.spec --json out/four.json")
    assert doc["header"].startswith("Four CPUs race")
    assert [p["name"] for p in doc["properties"]] == ["calm", "seen", "deadlock"]
    base = doc["variants"][0]
    assert base["stats"] == {"engine": "explicit", "states": 240, "transitions": 523, "depth": 12,
                             "complete": True, "limit": None, "final_states": None, "buffer_full_states": 0,
                             "ample_states": None,
                             "reductions": ["no reductions: --dot-graph draws the whole state graph"],
                             "loop": "python"}
    seen = next(o for o in base["outcomes"] if o["property"] == "seen")
    assert (seen["verdict"], seen["expected"], seen["as_expected"]) == ("violated", "holds", False)
    step = seen["counterexample"]["trace"]["actions"][2]
    assert (step["process"], step["line"], step["label"], step["text"]) == \
        ("timer[0]", 20, "line20", "set_bit(TIMER, requests);")
    assert step["changes"] == {"requests": {"set": ["TIMER"]}}
    assert seen["counterexample"]["trace"]["failure"]["kind"] == "failed"


def test_timing_only_when_asked(tmp_path):
    run_check(tmp_path, "counter", "--json", "a.json")
    run_check(tmp_path, "counter", "--json", "b.json", "--with-timing")
    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    assert "seconds" not in a["variants"][0]["stats"] and "seconds" in b["variants"][0]["stats"]
    validate(b)


def test_counterexamples_read_back_unchanged(exported):
    for name, (folder, _, result) in exported.items():
        doc = json.loads(next((folder / "out").glob("*.json")).read_text())
        assert jx.read_json(doc) == [(v.variant, cx) for v, cx in counterexamples(result)], name


def test_an_lkmm_run_validates_against_the_schema(tmp_path):
    """`--memory-model lkmm` writes memory_model "lkmm" and its history bound, which the
    schema lists (it once allowed only sc and tso, and every lkmm run failed it)."""
    import contextlib
    import io
    from pathlib import Path

    from checker.cli import main

    out = tmp_path / "counter.json"
    spec = Path(__file__).parent / "models" / "counter.spec"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([str(spec), "--memory-model", "lkmm", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    validate(doc)
    assert {v["memory_model"] for v in doc["variants"]} == {"lkmm"}
    assert all(v["store_buffer"] == 2 for v in doc["variants"])
    broken = json.loads(json.dumps(doc))
    broken["variants"][0]["memory_model"] = "arm"
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)


def test_a_context_model_run_validates_against_the_schema(tmp_path):
    """A model with execution contexts writes each step's CPU and the variant's
    preemption bound, which the schema lists (every context model's run failed it)."""
    import contextlib
    import io
    from pathlib import Path

    from checker.cli import main

    out = tmp_path / "hvp.json"
    spec = Path(__file__).parent.parent / "models" / "hv_timer_preempt.spec"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([str(spec), "--variant", "base", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    validate(doc)
    steps = [a for o in doc["variants"][0]["outcomes"] if o["counterexample"]
             for a in o["counterexample"]["trace"]["actions"]]
    assert steps and all(isinstance(a.get("cpu"), int) for a in steps if a["process"] != "memory")
    assert doc["variants"][0]["preemptions"] >= 1
