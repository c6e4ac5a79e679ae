"""Every shipped model and variant under sc, x86-TSO and lkmm: the README's model table.

One row per design: a variant and its memory-model twins, which the models name
`NAME_tso` and `NAME_lkmm` (`base_tso` is the base under x86-TSO; a model declared
`memory tso` names its sc twins `NAME_sc`). Each cell is the
variant as shipped, with its own `memory` declaration and constants (an lkmm twin may
use smaller constants; its label says so): the properties it violates with the steps of
each shortest counterexample, its distinct states, and `UNEXPECTED` where an outcome is
not what its `expect` clause says. `-` is a design with no variant under that memory
model. The label column is each variant's `// label` line (tests/test_model_labels.py),
the twins' only where they differ from the sc variant's. Nothing is forced with
`--memory-model`: a model's expectations per memory model are what is checked.

    python bench/model_table.py [--json OUT] [MODEL...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from checker.base.shipped import model_file
from checker.pipeline import Options, check_spec, load
from checker.results.trace import RunResult, VariantResult, Verdict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_model_labels import model_labels  # noqa: E402  (the one parser of label lines)

MEMORIES = ("sc", "tso", "lkmm")


def design_of(variant: str, memory: str) -> str:
    """The design a variant checks: `base_tso` under tso is `base`, and so is a variant
    named after its memory model alone (vcpu_requests' `lkmm`, `lkmm_sc`); a name that
    does not say its memory model is a design of its own."""
    name = variant
    if name == memory:
        return "base"
    if name.endswith("_" + memory):
        name = name[: -len(memory) - 1]
    elif memory != "sc" or any(name.endswith("_" + m) for m in MEMORIES[1:]):
        return variant
    return "base" if name in MEMORIES else name


def summary(v: VariantResult) -> dict:
    violated = [{"property": o.property,
                 "steps": o.counterexample.trace.steps if o.counterexample else None}
                for o in v.outcomes if o.verdict is Verdict.VIOLATED]
    return {"variant": v.variant, "memory": v.memory, "states": v.stats.states,
            "complete": v.stats.complete, "violated": violated,
            "unexpected": sorted(o.property for o in v.outcomes if not o.as_expected)}


def cell(got: dict | None) -> str:
    if got is None:
        return "-"
    if got["violated"]:
        text = "violated " + ", ".join(p["property"] + (f" ({p['steps']})" if p["steps"] else "")
                                       for p in got["violated"])
    else:
        text = "holds"
    text += f"; {got['states']:,}"
    if not got["complete"]:
        text += " (search not finished)"
    if got["unexpected"]:
        text += "; UNEXPECTED: " + ", ".join(got["unexpected"])
    return text


def model_rows(path: Path, result: RunResult | None = None) -> list[dict]:
    """One model: every variant checked with its expectations (or `result`, that
    search made already: the tests pass theirs), grouped into designs."""
    labels, _ = model_labels(path)
    if result is None:
        result = check_spec(load(str(path)), Options(progress=False))
    designs: dict[str, dict] = {}
    for v in result.variants:
        name = design_of(v.variant, v.memory)
        if v.memory in designs.get(name, {}):  # two variants of one design and memory model
            name = v.variant
        row = designs.setdefault(name, {"model": path.stem, "design": name, "labels": {}})
        row[v.memory] = summary(v)
        row["labels"][v.memory] = labels.get(v.variant, "(no label)")
    return list(designs.values())


def label_cell(row: dict) -> str:
    labels = row["labels"]
    first = labels.get("sc")
    rest = [f"{m}: {labels[m]}" for m in MEMORIES[1:] if m in labels and labels[m] != first]
    return "; ".join(([first] if first else []) + rest)


def row_line(row: dict) -> str:
    """The row as the README's table has it."""
    return (f"| {row['model']} | `{row['design']}` | {label_cell(row).replace('|', '/')} | "
            + " | ".join(cell(row.get(m)) for m in MEMORIES) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="model names (default: every models/*.spec)")
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    paths = [Path(model_file(m)) for m in args.models] \
        or sorted((ROOT / "models").glob("*.spec"))
    rows: list[dict] = []
    print("| model | variant | label | sc | x86-TSO | lkmm |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        for row in model_rows(path):
            rows.append(row)
            print(row_line(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    unexpected = sum(bool(row[m]["unexpected"]) for row in rows for m in MEMORIES if m in row)
    print(f"\n{len(rows)} designs, {sum(m in row for row in rows for m in MEMORIES)} variants; "
          f"{unexpected} with an unexpected outcome")
    sys.exit(1 if unexpected else 0)


if __name__ == "__main__":
    main()
