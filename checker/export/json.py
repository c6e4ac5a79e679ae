"""The JSON result file (`--json OUT`), schema `spec/trace-schema.json`, version 1."""

from __future__ import annotations

import json

from ..trace import Action, Buffered, Counterexample, Members, RunResult, Trace, TraceState, Value

SCHEMA_VERSION = 1


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
        "text": a.text,
        "from": a.pc_from,
        "to": a.pc_to,
        "inline": a.inline,
        "changes": {k: value(v) for k, v in a.changes},
    }


def trace(t: Trace) -> dict:
    return {
        "states": [state(s) for s in t.states],
        "actions": [action(a) for a in t.actions],
        "loop_start": t.loop_start,
        "failure": action(t.failure) if t.failure else None,
    }


def counterexample(cx: Counterexample) -> dict:
    return {"property": cx.property, "kind": cx.kind, "message": cx.message, "engine": cx.engine,
            "trace": trace(cx.trace)}


def to_dict(result: RunResult) -> dict:
    return {
        "schema": "timerace-result",
        "version": SCHEMA_VERSION,
        "model": result.model,
        "file": result.file,
        "command": result.command,
        "use_expectations": result.use_expectations,
        "all_as_expected": result.all_as_expected,
        "variants": [
            {
                "name": v.variant,
                "constants": {k: c for k, c in v.constants},
                "memory_model": v.memory,
                "store_buffer": v.store_buffer,
                "fairness": list(v.fairness),
                "stats": {
                    "engine": v.stats.engine,
                    "states": v.stats.states,
                    "transitions": v.stats.transitions,
                    "depth": v.stats.depth,
                    "seconds": round(v.stats.seconds, 3),
                    "complete": v.stats.complete,
                    "limit": v.stats.limit,
                    "final_states": v.stats.final_states,
                    "buffer_full_states": v.stats.buffer_full_states,
                },
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


def write_json(result: RunResult, path: str) -> None:
    text = json.dumps(to_dict(result), indent=2, sort_keys=False) + "\n"
    if path == "-":
        import sys

        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
