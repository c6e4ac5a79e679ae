"""SARIF 2.1.0 (`--sarif OUT.sarif`), for CI code-scanning views.

One rule per property; one result per outcome that differs from its expectation (an
unexpected violation, an expected violation that did not show, a model error, an
incomplete verdict), located at the property's declaration in the spec. A result with
a trace carries it as a codeFlow: one threadFlow per process, whose locations are that
process's steps in the spec, and `executionOrder` numbers the steps across processes,
which is how SARIF describes an interleaving.
"""

from __future__ import annotations

import os
from urllib.parse import quote

from .. import __version__
from ..errors import Span
from ..trace import Action, Counterexample, RunResult, Verdict, show_value
from .files import dump_json, write_text

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def artifact_uri(path: str) -> str:
    """A URI reference for a spec path: relative paths stay relative."""
    if os.path.isabs(path):
        return "file://" + quote(path.replace(os.sep, "/"))
    return quote(path.replace(os.sep, "/"))


def _region(span: Span) -> dict:
    region = {"startLine": max(span.line, 1)}
    if span.col > 0:
        region["startColumn"] = span.col
    if span.end_line >= span.line and span.end_line > 0:
        region["endLine"] = span.end_line
        if span.end_col > 0 and (span.end_line > span.line or span.end_col > span.col):
            region["endColumn"] = span.end_col
    return region


def _location(span: Span | None, file: str, message: str | None = None) -> dict:
    loc: dict = {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(span.file if span else file)}}}
    if span is not None and span.line > 0:
        loc["physicalLocation"]["region"] = _region(span)
    if message:
        loc["message"] = {"text": message}
    return loc


def _step_text(n: int, a: Action) -> str:
    effects = ", ".join(f"{k} = {show_value(v)}" for k, v in a.changes)
    return f"{n}. {a.process}: {a.text}" + (f" -> {effects}" if effects else "")


def code_flow(cx: Counterexample, file: str) -> dict:
    t = cx.trace
    steps = list(enumerate(t.actions, 1))
    if t.failure is not None:
        steps.append((t.length + 1, t.failure))
    threads: dict[str, list[dict]] = {}
    for n, a in steps:
        text = _step_text(n, a) + (" -- fails here" if a.kind == "failed" else "")
        entry = {"location": _location(a.span, file, text), "executionOrder": n}
        if t.loop_start is not None and n - 1 == t.loop_start:
            entry["kinds"] = ["loop start"]
        threads.setdefault(a.process, []).append(entry)
    flows = [{"id": proc, "message": {"text": f"process {proc}"}, "locations": locs}
             for proc, locs in threads.items()]
    if not flows:  # a violation in the initial state: still one (empty-step) flow
        flows = [{"locations": [{"location": _location(None, file, "the initial state"), "executionOrder": 0}]}]
    msg = f"{cx.message}: {t.length} steps"
    if t.loop_start is not None:
        msg += f", then back to step {t.loop_start + 1} forever"
    return {"message": {"text": msg}, "threadFlows": flows}


def _describe(kind: str, prop: str) -> str:
    if kind == "deadlock":
        return "no deadlock and no invalid end state"
    if kind == "assert" and prop == "assertions":
        return "every unnamed assert holds"
    return f"{kind} {prop} holds"


def to_sarif(result: RunResult) -> dict:
    rules: dict[str, dict] = {}
    for v in result.variants:
        for o in v.outcomes:
            rules.setdefault(o.property, {
                "id": o.property,
                "name": o.property,
                "shortDescription": {"text": _describe(o.kind, o.property)},
                "defaultConfiguration": {"level": "error"},
            })
    if any(v.model_error is not None for v in result.variants):
        rules.setdefault("model-error", {"id": "model-error", "name": "model-error",
                                         "shortDescription": {"text": "the model went wrong during the search"},
                                         "defaultConfiguration": {"level": "error"}})
    rule_ids = list(rules)
    results = []
    for v in result.variants:
        for o in v.outcomes:
            if o.as_expected:
                continue
            expected = "violated" if o.expected_violation else "hold"
            if o.verdict is Verdict.INCOMPLETE:
                level, text = "warning", f"variant {v.variant}: {o.kind} {o.property} is not verified: {o.note}"
            elif o.verdict is Verdict.VIOLATED:
                level = "error"
                text = (f"variant {v.variant}: {o.counterexample.message if o.counterexample else o.property} "
                        f"(expected to {expected})")
            else:
                level = "error"
                text = f"variant {v.variant}: {o.kind} {o.property} {o.verdict.value}, but it is expected to be {expected}"
            res = {"ruleId": o.property, "ruleIndex": rule_ids.index(o.property), "level": level,
                   "message": {"text": text}, "locations": [_location(o.span, result.file)],
                   "properties": {"variant": v.variant, "verdict": o.verdict.value, "expected": expected}}
            if o.counterexample is not None:
                res["codeFlows"] = [code_flow(o.counterexample, result.file)]
            results.append(res)
        if v.model_error is not None:
            cx = v.model_error
            where = cx.trace.failure.span if cx.trace.failure else None
            results.append({"ruleId": "model-error", "ruleIndex": rule_ids.index("model-error"), "level": "error",
                            "message": {"text": f"variant {v.variant}: model error: {cx.message}"},
                            "locations": [_location(where, result.file)],
                            "codeFlows": [code_flow(cx, result.file)],
                            "properties": {"variant": v.variant, "verdict": "model error"}})
    from ..engines.coverage import run_warnings

    found = run_warnings(result)
    if found:
        rules.setdefault("coverage", {"id": "coverage", "name": "coverage",
                                      "shortDescription": {"text": "code never executed, or a property that "
                                                           "holds vacuously"},
                                      "defaultConfiguration": {"level": "warning"}})
        rule_ids = list(rules)
    for w in found:
        loc = _location(Span(result.file, w.line, 1, w.line, 1) if w.line else None, result.file)
        results.append({"ruleId": "coverage", "ruleIndex": rule_ids.index("coverage"), "level": "warning",
                        "message": {"text": f"variant {w.variant}: {w.message}"}, "locations": [loc],
                        "properties": {"variant": w.variant}})
    run = {
        "tool": {"driver": {"name": "timerace", "version": __version__, "rules": list(rules.values())}},
        "invocations": [{"executionSuccessful": True, "commandLine": result.command or f"check {result.file}"}],
        "artifacts": [{"location": {"uri": artifact_uri(result.file)}}],
        "results": results,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write_sarif(result: RunResult, path: str) -> None:
    write_text(path, dump_json(to_sarif(result)))
