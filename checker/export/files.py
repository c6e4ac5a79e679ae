"""What the exporters share: which counterexamples a run has, what their files are
called, and how files are written so that the same run gives the same bytes.

Determinism is a contract of every exporter: output depends only on the result
objects (never on the clock, hash order or the machine), files are UTF-8 with `\\n`
line ends, and wall-clock times appear only when asked for (`--with-timing`).
"""

from __future__ import annotations

import json
import os
import re

from ..trace import Counterexample, RunResult, VariantResult


def counterexamples(result: RunResult) -> list[tuple[VariantResult, Counterexample]]:
    """Every counterexample of a run, in report order: variants as checked, properties in
    declaration order, a variant's model error last."""
    out = []
    for v in result.variants:
        for o in v.outcomes:
            if o.counterexample is not None:
                out.append((v, o.counterexample))
        if v.model_error is not None:
            out.append((v, v.model_error))
    return out


def _safe(name: str) -> str:
    """A name made safe for a file name (spec names already are, except `model error`)."""
    return re.sub(r"[^A-Za-z0-9_\-]+", "_", name).strip("_") or "_"


def variant_stem(result: RunResult, variant: str) -> str:
    return f"{_safe(result.model)}.{_safe(variant)}"


def file_stem(result: RunResult, variant: str, prop: str) -> str:
    """`<model>.<variant>.<property>`: one file per counterexample and format."""
    return f"{variant_stem(result, variant)}.{_safe(prop)}"


def write_text(path: str, text: str) -> None:
    """Write UTF-8 with `\\n` line ends on every platform, creating the folder."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def dump_json(doc, width: int = 100) -> str:
    """JSON with two-space indents, but any value that fits on its line stays on one
    line (`{"#bigint": "0"}`, short lists), so that traces stay readable in review."""
    return _dump(doc, 0, width) + "\n"


def _dump(x, indent: int, width: int, used: int = 0) -> str:
    """`x` at nesting `indent`, on a line of which `used` columns are already taken."""
    flat = json.dumps(x, ensure_ascii=False)
    if used + len(flat) <= width or not isinstance(x, (dict, list)) or not x:
        return flat
    pad = " " * (indent + 2)
    if isinstance(x, dict):
        items = []
        for k, v in x.items():
            head = f"{pad}{json.dumps(k, ensure_ascii=False)}: "
            items.append(head + _dump(v, indent + 2, width, len(head)))
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _dump(v, indent + 2, width, len(pad)) for v in x]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def describe(cx: Counterexample) -> str:
    """`invariant both_counted`, `assert seen`, `deadlock`, `model error`."""
    return cx.kind if cx.property == cx.kind else f"{cx.kind} {cx.property}"
