"""JUnit XML, read with junitparser as a CI server would: one test case per (variant,
property); an unexpected outcome is a failure whose message holds the race diagram."""

from __future__ import annotations

from junitparser import Error, Failure, JUnitXml, Skipped

from checker.export.text import race_diagram


def cases(path):
    xml = JUnitXml.fromfile(str(path))
    return [(suite, case) for suite in xml for case in suite]


def test_one_case_per_variant_and_property(exported):
    folder, _, result = exported["counter"]
    got = [(s.name, c.name, c.result) for s, c in cases(folder / "out/counter.xml")]
    assert [(s, n) for s, n, _ in got] == [("counter.base", "both_counted"), ("counter.base", "deadlock"),
                                          ("counter.atomic_inc", "both_counted"), ("counter.atomic_inc", "deadlock")]
    assert all(r == [] for _, _, r in got), "every outcome is as expected: all pass"


def test_an_unexpected_violation_is_a_failure_holding_the_race_diagram(exported):
    folder, _, result = exported["four"]
    xml = JUnitXml.fromfile(str(folder / "out/four.xml"))
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (3, 2, 0, 0)
    by = {c.name: c for _, c in cases(folder / "out/four.xml")}
    assert by["calm"].result == []
    (fail,) = by["seen"].result
    assert isinstance(fail, Failure)
    cx = next(o.counterexample for o in result.variants[0].outcomes if o.property == "seen")
    assert fail.message == f"assertion seen failed (expected: holds; {cx.trace.steps} steps)"  # one line (issue 20)
    assert race_diagram(cx.trace) in fail.text
    assert "Trace:" in fail.text
    import xml.etree.ElementTree as ET

    raw = {c.get("name"): c for c in ET.parse(folder / "out/four.xml").iter("testcase")}
    assert raw["seen"].get("line") == "27" and raw["seen"].get("file") == "models/four.spec"


def test_model_errors_are_errors_and_incomplete_verdicts_are_skipped(exported):
    folder, _, _ = exported["overflow"]
    by = {c.name: c.result for _, c in cases(folder / "out/overflow.xml")}
    assert isinstance(by["deadlock"][0], Skipped)
    assert isinstance(by["model error"][0], Error)
    assert "value 2 is outside the range of budget" in by["model error"][0].message
