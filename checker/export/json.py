"""The JSON result file (`--json OUT`): the whole run, for scripts and other tools.

The format is defined by the JSON Schema `spec/trace-schema.json` (shipped in the
package as `checker.spec`), versioned by the top-level `version`: a change that can
break a reader bumps it. Wall-clock seconds appear only with `--with-timing`, so the
same model and flags give the same bytes.

`read_json` turns a counterexample in such a file back into trace objects, for
`check --replay`.
"""

from __future__ import annotations

import json
from importlib import resources

from .. import __version__
from ..base.errors import NOWHERE, REGISTRY, Span, SpecError
from ..results.trace import Action, Buffered, Counterexample, Members, RunResult, Trace, TraceState, Value
from .files import dump_json, write_text
from ..results.findings import memory_warnings, run_warnings

SCHEMA_VERSION = 3  # 2: top-level `warnings` (coverage and vacuity); 3: `loop` always, `loop_from`
SCHEMA_FILE = "trace-schema.json"


def schema() -> dict:
    """The JSON Schema of this format, as shipped in the package."""
    return json.loads(resources.files("checker.spec").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


def value(v: Value):
    if isinstance(v, Members):
        return {"set": [value(x) for x in v]}
    if isinstance(v, Buffered):  # a tso store buffer, oldest store first
        return {"buffer": [{"location": loc, "value": value(x)} for loc, x in v]}
    if isinstance(v, tuple):
        return [value(x) for x in v]
    return v


def state(s: TraceState) -> dict:
    return {"vars": {k: value(v) for k, v in s.values}, "pcs": dict(s.pcs)}


def action(a: Action) -> dict:
    return {
        "process": a.process,
        "kind": a.kind,
        "file": a.span.file if a.span else None,
        "line": a.span.line if a.span else None,
        "column": a.span.col if a.span else None,
        "end_line": a.span.end_line if a.span else None,
        "end_column": a.span.end_col if a.span else None,
        "text": a.text,
        "label": a.pc_from,
        "next_label": a.pc_to,
        "inline": a.inline,
        "call": a.call,
        "detail": a.detail,
        "changes": {k: value(v) for k, v in a.changes},
        **({"cpu": a.cpu} if a.cpu is not None else {}),
    }


def trace(t: Trace) -> dict:
    return {
        "length": t.length,
        "steps": t.steps,
        "states": [state(s) for s in t.states],
        "actions": [action(a) for a in t.actions],
        "loop_start": t.loop_start,
        "failure": action(t.failure) if t.failure else None,
    }


def counterexample(cx: Counterexample) -> dict:
    return {"property": cx.property, "kind": cx.kind, "message": cx.message, "engine": cx.engine,
            "trace": trace(cx.trace), "violation": [{"operand": k, "value": v} for k, v in cx.violation]}


def properties(result: RunResult) -> list[dict]:
    """Every property checked in some variant, in declaration order."""
    seen: dict[str, dict] = {}
    for v in result.variants:
        for o in v.outcomes:
            seen.setdefault(o.property, {"name": o.property, "kind": o.kind,
                                         "line": o.span.line if o.span else None})
    return list(seen.values())


def _to_dict(result: RunResult, timing: bool = False) -> dict:
    def stats(v) -> dict:
        out = {
            "engine": v.stats.engine,
            "states": v.stats.states,
            "transitions": v.stats.transitions,
            "depth": v.stats.depth,
            "complete": v.stats.complete,
            "limit": v.stats.limit,
            "final_states": v.stats.final_states,
            "buffer_full_states": v.stats.buffer_full_states,
            "ample_states": v.stats.ample_states,
            "reductions": list(v.stats.reductions),
        }
        if v.stats.loop:
            out["loop"] = v.stats.loop
        if v.stats.loop_from is not None:
            out["loop_from"] = {"depth": v.stats.loop_from[0], "states": v.stats.loop_from[1]}
        if timing:
            out["seconds"] = round(v.stats.seconds, 3)
        return out

    return {
        "schema": "timerace-result",
        "version": SCHEMA_VERSION,
        "tool": {"name": "timerace", "version": __version__},
        "model": result.model,
        "file": result.file,
        "header": result.header,
        "command": result.command,
        "use_expectations": result.use_expectations,
        "all_as_expected": result.all_as_expected,
        "properties": properties(result),
        "variants": [
            {
                "name": v.variant,
                "constants": {k: c for k, c in v.constants},
                "memory_model": v.memory,
                "store_buffer": v.store_buffer,
                **({"preemptions": v.preemptions} if v.preemptions is not None else {}),
                "fairness": list(v.fairness),
                "stats": stats(v),
                "outcomes": [
                    {
                        "property": o.property,
                        "kind": o.kind,
                        "verdict": o.verdict.value,
                        "expected": "violated" if o.expected_violation else "holds",
                        "as_expected": o.as_expected,
                        "line": o.span.line if o.span else None,
                        "note": o.note,
                        "counterexample": counterexample(o.counterexample) if o.counterexample else None,
                    }
                    for o in v.outcomes
                ],
                "model_error": counterexample(v.model_error) if v.model_error else None,
            }
            for v in result.variants
        ],
    }


def to_dict(result: RunResult, timing: bool = False) -> dict:
    doc = _to_dict(result, timing)
    warnings = [{"variant": w.variant, "line": w.line, "message": w.message}
                for w in run_warnings(result) + memory_warnings(result)]
    if warnings:
        doc["warnings"] = warnings
    return doc


def write_json(result: RunResult, path: str, timing: bool = False) -> None:
    _write(dump_json(to_dict(result, timing)), path)


def _write(text: str, path: str) -> None:
    if path == "-":
        import sys

        sys.stdout.write(text)
        return
    write_text(path, text)


# ---- a spec that cannot be checked ----------------------------------------------

ERRORS_SCHEMA_FILE = "errors-schema.json"
ERRORS_VERSION = 1


def errors_schema() -> dict:
    """The JSON Schema of the errors file, as shipped in the package."""
    return json.loads(resources.files("checker.spec").joinpath(ERRORS_SCHEMA_FILE).read_text(encoding="utf-8"))


def error(e: SpecError) -> dict:
    s = e.span
    code = e.code or "TR001"
    return {"file": None if s.file == NOWHERE.file else s.file, "line": s.line or None, "column": s.col or None,
            "end_line": s.end_line or None, "end_column": s.end_col or None, "code": code,
            "title": REGISTRY[code].title, "message": e.message, "hint": e.hint}


def errors_to_dict(e: SpecError, file: str, command: str | None) -> dict:
    """The errors file: every error `e` stands for, in file order."""
    return {"schema": "timerace-errors", "version": ERRORS_VERSION,
            "tool": {"name": "timerace", "version": __version__}, "file": file, "command": command,
            "count": len(e.errors), "errors": [error(x) for x in e.errors]}


def write_errors_json(e: SpecError, file: str, command: str | None, path: str) -> None:
    _write(dump_json(errors_to_dict(e, file, command)), path)


# ---- reading back (for --replay) ----------------------------------------------


def from_value(x) -> Value:
    if isinstance(x, list):
        return tuple(from_value(e) for e in x)
    if isinstance(x, dict) and "set" in x:
        return Members(from_value(e) for e in x["set"])
    if isinstance(x, dict) and "buffer" in x:
        return Buffered((e["location"], from_value(e["value"])) for e in x["buffer"])
    return x


def _action(d: dict) -> Action:
    span = Span(d["file"], d["line"], d["column"], d["end_line"], d["end_column"]) if d["line"] is not None else None
    return Action(d["process"], span, d["text"], d["label"], d["next_label"],
                  tuple((k, from_value(v)) for k, v in d["changes"].items()), d["kind"], d.get("inline"),
                  d.get("detail", ""), d.get("call", ""), d.get("cpu"))


def read_counterexample(d: dict) -> Counterexample:
    t = d["trace"]
    states = tuple(TraceState(tuple((k, from_value(v)) for k, v in s["vars"].items()), tuple(s["pcs"].items()))
                   for s in t["states"])
    trace_ = Trace(states, tuple(_action(a) for a in t["actions"]), t["loop_start"],
                   _action(t["failure"]) if t["failure"] else None)
    return Counterexample(d["property"], d["kind"], d["message"], trace_, d["engine"],
                          tuple((x["operand"], x["value"]) for x in d.get("violation", ())))


def read_json(doc: dict) -> list[tuple[str, Counterexample]]:
    """Every counterexample in a result file: (variant, counterexample)."""
    out = []
    for v in doc["variants"]:
        for o in v["outcomes"]:
            if o["counterexample"] is not None:
                out.append((v["name"], read_counterexample(o["counterexample"])))
        if v["model_error"] is not None:
            out.append((v["name"], read_counterexample(v["model_error"])))
    return out
