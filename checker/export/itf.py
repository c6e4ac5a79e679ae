"""ITF, the Informal Trace Format of Apalache and Quint (Apalache ADR-015), so that
existing trace tools can read our counterexamples (`--itf DIR`, one
`<model>.<variant>.<property>.itf.json` per counterexample).

Encoding: integers `{"#bigint": "5"}`, enum members plain strings, booleans JSON
booleans, arrays JSON arrays, bit sets and wait queues `{"#set": [...]}` sorted,
process program counters one record variable (`pc`) of label names, with a list for
an array of processes. Nothing is ever `null`. Each state's `#meta` has its `index`
and, from state 1 on, the `step` that led to it; a lasso has `loop`.

`read_itf` turns such a file back into a Counterexample, for `check --replay`.
"""

from __future__ import annotations

import json
import re

from ..base.errors import Span
from ..results.trace import Action, Buffered, Counterexample, Members, RunResult, Trace, TraceState, Value, changes
from .files import counterexamples, dump_json, file_stem, write_text

SPEC_URL = "https://apalache-mc.org/docs/adr/015adr-trace.html"
_INSTANCE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\[(?P<index>\d+)\]$")


def value(v: Value):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return {"#bigint": str(v)}
    if isinstance(v, Members):
        return {"#set": [value(x) for x in sorted(v, key=_order)]}
    if isinstance(v, Buffered):  # tso: a store buffer, oldest store first, as a list of records
        return [{"location": loc, "value": value(x)} for loc, x in v]
    if isinstance(v, tuple):
        return [value(x) for x in v]
    return str(v)


def _order(x):
    """Sets are sorted: numbers by value, names alphabetically, numbers first."""
    return (0, x, "") if isinstance(x, int) else (1, 0, str(x))


def pc_record(pcs: tuple[tuple[str, str], ...]) -> dict:
    """`{"vcpu": "halt", "timer": ["line20", "end"]}`: an array of processes is a list."""
    out: dict = {}
    for inst, label in pcs:
        m = _INSTANCE.match(inst)
        if m:
            out.setdefault(m["name"], []).append(label)
        else:
            out[inst] = label
    return out


def pc_variable(states: tuple[TraceState, ...]) -> str:
    """`pc`, unless the model has a variable of that name."""
    taken = {k for k, _ in states[0].values} if states else set()
    name = "pc"
    while name in taken:
        name += "_"
    return name


def step_meta(a: Action) -> dict:
    out: dict[str, object] = {"process": a.process, "kind": a.kind, "statement": a.text, "label": a.pc_from, "next_label": a.pc_to}
    if a.span is not None:
        out["file"] = a.span.file
        out["line"] = a.span.line
    if a.inline:
        out["inline"] = a.inline
    if a.call:
        out["call"] = a.call
    if a.detail:
        out["detail"] = a.detail
    if a.cpu is not None:
        out["cpu"] = a.cpu
    return out


def to_itf(result: RunResult, variant: str, cx: Counterexample) -> dict:
    t = cx.trace
    pc = pc_variable(t.states)
    var_names = [k for k, _ in t.states[0].values] + [pc] if t.states else [pc]
    meta: dict[str, object] = {
        "format": "ITF",
        "format-description": SPEC_URL,
        "source": result.file,
        "model": result.model,
        "variant": variant,
        "property": cx.property,
        "kind": cx.kind,
        "engine": cx.engine,
        "description": f"{cx.message} (variant {variant}, {t.steps} steps)",
        "pcVariable": pc,
    }
    if t.failure is not None:
        meta["failure"] = step_meta(t.failure)
    if cx.violation:
        meta["violation"] = [{"operand": k, "value": v} for k, v in cx.violation]
    states = []
    for i, s in enumerate(t.states):
        smeta: dict = {"index": i}
        if i > 0:
            smeta["step"] = step_meta(t.actions[i - 1])
        state = {"#meta": smeta}
        for k, v in s.values:
            state[k] = value(v)
        state[pc] = pc_record(s.pcs)
        states.append(state)
    out: dict[str, object] = {"#meta": meta, "vars": var_names, "states": states}
    if t.loop_start is not None:
        out["loop"] = t.loop_start
    return out


def write_itf(result: RunResult, folder: str) -> list[str]:
    written = []
    for v, cx in counterexamples(result):
        path = f"{folder}/{file_stem(result, v.variant, cx.property)}.itf.json"
        write_text(path, dump_json(to_itf(result, v.variant, cx)))
        written.append(path)
    return written


# ---- reading back (for --replay) ----------------------------------------------


class TraceFormatError(ValueError):
    """The file is not a trace this checker wrote (or can read)."""


def from_value(x) -> Value:
    if isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, list):
        if x and all(isinstance(e, dict) and set(e) == {"location", "value"} for e in x):
            return Buffered((e["location"], from_value(e["value"])) for e in x)
        return tuple(from_value(e) for e in x)
    if isinstance(x, dict):
        if "#bigint" in x:
            return int(x["#bigint"])
        if "#set" in x:
            return Members(from_value(e) for e in x["#set"])
        if "#tup" in x:
            return tuple(from_value(e) for e in x["#tup"])
    raise TraceFormatError(f"unsupported ITF value {json.dumps(x)[:60]}")


def _pcs(record) -> tuple[tuple[str, str], ...]:
    if not isinstance(record, dict):
        raise TraceFormatError("the program-counter variable is not a record")
    out = []
    for name, label in record.items():
        if isinstance(label, list):
            out += [(f"{name}[{i}]", str(lb)) for i, lb in enumerate(label)]
        else:
            out.append((name, str(label)))
    return tuple(out)


def _action(meta: dict) -> Action:
    span = Span(meta["file"], int(meta["line"]), 0, int(meta["line"]), 0) if "line" in meta else None
    return Action(meta["process"], span, meta.get("statement", ""), meta.get("label", ""),
                  meta.get("next_label", ""), (), meta.get("kind", "step"), meta.get("inline"),
                  meta.get("detail", ""), meta.get("call", ""), meta.get("cpu"))


def read_itf(doc: dict) -> tuple[str, Counterexample]:
    """(recorded variant, counterexample) from a parsed ITF document we wrote."""
    try:
        meta = doc.get("#meta", {})
        pc = meta.get("pcVariable", "pc")
        if not doc["states"] or not isinstance(doc["vars"], list):
            raise TraceFormatError("an ITF trace needs `vars` (a list) and at least one state")
        states = []
        for raw in doc["states"]:
            values = tuple((k, from_value(raw[k])) for k in doc["vars"] if k != pc)
            states.append(TraceState(values, _pcs(raw.get(pc, {}))))
        actions = []
        for i, raw in enumerate(doc["states"][1:], 1):
            step = raw.get("#meta", {}).get("step")
            if step is None:
                raise TraceFormatError(f"state {i} has no `step` in its #meta: which process moved is unknown")
            a = _action(step)
            actions.append(Action(a.process, a.span, a.text, a.pc_from, a.pc_to,
                                  changes(states[i - 1], states[i]), a.kind, a.inline))
        failure = _action(meta["failure"]) if "failure" in meta else None
        trace = Trace(tuple(states), tuple(actions), doc.get("loop"), failure)
        cx = Counterexample(meta.get("property", "?"), meta.get("kind", "?"), meta.get("description", ""),
                            trace, meta.get("engine", "explicit"))
        return meta.get("variant", "base"), cx
    except (KeyError, TypeError, AttributeError) as e:
        raise TraceFormatError(f"not an ITF trace written by timerace ({type(e).__name__}: {e})") from None
