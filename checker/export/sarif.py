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
from ..base.errors import NOWHERE, REGISTRY, Span, SpecError
from ..results.trace import Action, Counterexample, RunResult, Verdict, show_value
from .files import dump_json, write_text
from .markdown import root_of
from ..results.findings import run_warnings

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


SRCROOT = "SRCROOT"  # the uriBaseId of every location: the repository (code scanning's checkout)


def artifact_uri(path: str) -> str:
    """A URI reference for a spec path, relative to the repository (or the working
    folder) whatever path `check` was given: what code scanning resolves against."""
    full = os.path.abspath(path)  # a relative path is relative to cwd, which may be below the root
    for root in (root_of(os.getcwd()), root_of(os.path.dirname(full))):
        rel = os.path.relpath(full, root)
        if not rel.startswith(".."):
            return quote(rel.replace(os.sep, "/"))
    return quote(os.path.basename(full))


def _artifact(path: str) -> dict:
    return {"uri": artifact_uri(path), "uriBaseId": SRCROOT}


def fingerprint(model: str, variant: str, prop: str) -> str:
    """Stable across runs and unique per (model, variant, property), so that code
    scanning keeps one alert per violated property of each variant."""
    import hashlib

    return hashlib.sha256(f"{model}\0{variant}\0{prop}".encode()).hexdigest()[:32]


STATEMENT_LINES = 3  # a span longer than this is a block: the region is its first line only


def _region(span: Span) -> dict:
    region = {"startLine": max(span.line, 1)}
    if span.end_line - span.line >= STATEMENT_LINES:  # a block: point at its head, not its 78 lines
        if span.col > 0:
            region["startColumn"] = span.col
        return region
    if span.col > 0:
        region["startColumn"] = span.col
    if span.end_line >= span.line and span.end_line > 0:
        region["endLine"] = span.end_line
        if span.end_col > 0 and (span.end_line > span.line or span.end_col > span.col):
            region["endColumn"] = span.end_col
    return region


def _location(span: Span | None, file: str, message: str | None = None) -> dict:
    loc: dict = {"physicalLocation": {"artifactLocation": _artifact(span.file if span else file)}}
    if span is not None and span.line > 0:
        loc["physicalLocation"]["region"] = _region(span)
    if message:
        loc["message"] = {"text": message}
    return loc


def statement_span(a: Action) -> Span | None:
    """Where a step's statement is: an `if`/`while` step's span is the whole statement,
    body included (often dozens of lines), but the step is its head, as its text says."""
    sp = a.span
    if sp is None or sp.end_line <= sp.line or not a.text or a.text.endswith(("}", ";")):
        return sp
    return Span(sp.file, sp.line, sp.col, sp.line, sp.col + len(a.text))


def _step_text(n: int, a: Action) -> str:
    effects = ", ".join(f"{k} = {show_value(v)}" for k, v in a.changes)
    return (f"{n}. {a.process}: {a.text}" + (f" [{a.call}]" if a.call else "")
            + (f" => {a.detail}" if a.detail else "") + (f" -> {effects}" if effects else ""))


def code_flow(cx: Counterexample, file: str) -> dict:
    t = cx.trace
    steps = list(enumerate(t.actions, 1))
    if t.failure is not None:
        steps.append((t.length + 1, t.failure))
    threads: dict[str, list[dict]] = {}
    for n, a in steps:
        text = _step_text(n, a) + (" -- fails here" if a.kind == "failed" else "")
        entry = {"location": _location(statement_span(a), file, text), "executionOrder": n}
        if t.loop_start is not None and n - 1 == t.loop_start:
            entry["kinds"] = ["loop start"]
        threads.setdefault(a.process, []).append(entry)
    flows = [{"id": proc, "message": {"text": f"process {proc}"}, "locations": locs}
             for proc, locs in threads.items()]
    if not flows:  # a violation in the initial state: still one (empty-step) flow
        flows = [{"locations": [{"location": _location(None, file, "the initial state"), "executionOrder": 0}]}]
    msg = f"{cx.message}: {t.steps} steps"
    if t.loop_start is not None:
        msg += f", then back to step {t.loop_start + 1} forever"
    return {"message": {"text": msg}, "threadFlows": flows}


_HELP = ("Each result is one variant's outcome that differs from its expectation. The code flow is the "
         "counterexample: one thread flow per process, executionOrder numbering the interleaved steps. "
         "Reproduce with `check SPEC --variant VARIANT --full`; `--replay` re-runs a saved trace.")
_HELP_MD = ("Each result is one variant's outcome that differs from its expectation. The code flow is the "
            "counterexample: one thread flow per process, `executionOrder` numbering the interleaved steps.\n\n"
            "Reproduce with `check SPEC --variant VARIANT --full`; `--replay` re-runs a saved trace.")


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
            where = f" (declared at line {o.span.line} of {artifact_uri(o.span.file)})" if o.span and o.span.line else ""
            rules.setdefault(o.property, {
                "id": o.property,
                "name": o.property,
                "shortDescription": {"text": _describe(o.kind, o.property)},
                "fullDescription": {"text": f"The {o.kind} property `{o.property}`{where} of model "
                                            f"{result.model}, checked in every variant over every "
                                            "interleaving of the processes' steps."},
                "help": {"text": _HELP, "markdown": _HELP_MD},
                "defaultConfiguration": {"level": "error"},
            })
    if any(v.model_error is not None for v in result.variants):
        rules.setdefault("model-error", {"id": "model-error", "name": "model-error",
                                         "shortDescription": {"text": "the model went wrong during the search"},
                                         "fullDescription": {"text": "A step of the model went wrong (a value out "
                                                             "of its range, an index, a division by zero)."},
                                         "help": {"text": _HELP, "markdown": _HELP_MD},
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
            at = o.span
            if o.expected_violation and o.verdict is not Verdict.VIOLATED and o.expect_span is not None:
                at = o.expect_span  # the unmet expectation is the `expect` clause's
            elif o.counterexample is not None and o.counterexample.trace.failure is not None \
                    and o.counterexample.trace.failure.span is not None:
                at = statement_span(o.counterexample.trace.failure)  # the statement that failed
            res = {"ruleId": o.property, "ruleIndex": rule_ids.index(o.property), "level": level,
                   "message": {"text": text}, "locations": [_location(at, result.file)],
                   "partialFingerprints": {"timerace/v1": fingerprint(result.model, v.variant, o.property)},
                   "properties": {"variant": v.variant, "verdict": o.verdict.value, "expected": expected}}
            if o.counterexample is not None:
                res["codeFlows"] = [code_flow(o.counterexample, result.file)]
            results.append(res)
        if v.model_error is not None:
            cx = v.model_error
            failed_at = statement_span(cx.trace.failure) if cx.trace.failure else None
            results.append({"ruleId": "model-error", "ruleIndex": rule_ids.index("model-error"), "level": "error",
                            "message": {"text": f"variant {v.variant}: model error: {cx.message}"},
                            "locations": [_location(failed_at, result.file)],
                            "codeFlows": [code_flow(cx, result.file)],
                            "partialFingerprints": {"timerace/v1": fingerprint(result.model, v.variant,
                                                                               "model error")},
                            "properties": {"variant": v.variant, "verdict": "model error"}})
    found = run_warnings(result)
    if found:
        rules.setdefault("coverage", {"id": "coverage", "name": "coverage",
                                      "shortDescription": {"text": "code never executed, or a property that "
                                                           "holds vacuously"},
                                      "fullDescription": {"text": "Statements and branches no reachable state "
                                                          "runs, triggers that never hold, variants with the same "
                                                          "state space, locals nothing reads (on the unreduced "
                                                          "state graph)."},
                                      "help": {"text": _HELP, "markdown": _HELP_MD},
                                      "defaultConfiguration": {"level": "warning"}})
        rule_ids = list(rules)
    by_variant: dict[str, list] = {}
    for w in found:  # one alert per variant (as per violated property), each warning a related location
        by_variant.setdefault(w.variant, []).append(w)
    for variant, ws in by_variant.items():
        first = next((w for w in ws if w.line), None)
        loc = _location(Span(result.file, first.line, 1, first.line, 1) if first else None, result.file)
        related = [dict(_location(Span(result.file, w.line, 1, w.line, 1), result.file, w.message), id=k)
                   for k, w in enumerate(ws) if w.line]
        text = f"variant {variant}: {len(ws)} coverage warning{'s' if len(ws) != 1 else ''}: " + \
            "; ".join(w.message for w in ws[:5]) + ("; ..." if len(ws) > 5 else "")
        res = {"ruleId": "coverage", "ruleIndex": rule_ids.index("coverage"), "level": "warning",
               "message": {"text": text}, "locations": [loc],
               "partialFingerprints": {"timerace/v1": fingerprint(result.model, variant, "coverage")},
               "properties": {"variant": variant}}
        if related:
            res["relatedLocations"] = related
        results.append(res)
    run = {
        "tool": {"driver": {"name": "timerace", "version": __version__, "rules": list(rules.values())}},
        "invocations": [{"executionSuccessful": True, "commandLine": result.command or f"check {result.file}"}],
        "artifacts": [{"location": _artifact(result.file)}],
        "results": results,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write_sarif(result: RunResult, path: str) -> None:
    write_text(path, dump_json(to_sarif(result)))


def errors_to_sarif(e: SpecError, file: str, command: str | None) -> dict:
    """A spec that cannot be checked: one result per error (every error `e` stands for),
    one rule per error code, located at the error (at the spec for one without a
    position, such as a bad option)."""
    rules: dict[str, dict] = {}
    for x in e.errors:
        code = x.code or "TR001"
        entry = REGISTRY[code]
        rules.setdefault(code, {"id": code, "name": entry.title, "shortDescription": {"text": entry.title},
                                "fullDescription": {"text": entry.explanation},
                                "help": {"text": f"`check --explain {code}` prints this explanation."},
                                "defaultConfiguration": {"level": "error"}})
    rule_ids = list(rules)
    results = []
    for x in e.errors:
        code = x.code or "TR001"
        located = x.span.line > 0 and x.span.file != NOWHERE.file
        text = x.message + (f" (hint: {x.hint})" if x.hint else "")
        results.append({"ruleId": code, "ruleIndex": rule_ids.index(code), "level": "error",
                        "message": {"text": text},
                        "locations": [_location(x.span if located else None, file)],
                        "partialFingerprints": {"timerace/v1": fingerprint(file, code, x.message)}})
    run = {
        "tool": {"driver": {"name": "timerace", "version": __version__, "rules": list(rules.values())}},
        "invocations": [{"executionSuccessful": True, "commandLine": command or f"check {file}"}],
        "artifacts": [{"location": _artifact(file)}],
        "results": results,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write_errors_sarif(e: SpecError, file: str, command: str | None, path: str) -> None:
    write_text(path, dump_json(errors_to_sarif(e, file, command)))
