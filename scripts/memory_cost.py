"""What x86-TSO costs: distinct states of every variant of every model, under sequential
consistency and under x86-TSO (each variant's own `memory` line is overridden), without
reductions (as `check --no-por`).

    python scripts/memory_cost.py                  # every models/*.spec
    python scripts/memory_cost.py models/x.spec    # some
    python scripts/memory_cost.py --store-buffer 3

Prints a Markdown table; a verdict column lists the properties each run violates, so
a row also shows what the memory model changes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from checker.base.errors import SpecError
from checker.pipeline import Options, check_spec, load
from checker.results.trace import Verdict


def violated(v) -> str:
    names = [o.property for o in v.outcomes if o.verdict is Verdict.VIOLATED]
    return ", ".join(names) if names else "-"


def rows(path: str, store_buffer: int | None):
    spec = load(path)
    runs = {}
    for memory in ("sc", "tso"):
        opts = Options(memory=memory, store_buffer=store_buffer, use_expectations=False, progress=False,
                       por=False, symmetry="off")
        runs[memory] = check_spec(spec, opts)
    for sc, tso in zip(runs["sc"].variants, runs["tso"].variants):
        ratio = tso.stats.states / sc.stats.states if sc.stats.states else float("nan")
        note = "" if tso.stats.buffer_full_states == 0 else f" (bound hit in {tso.stats.buffer_full_states} states)"
        yield (Path(path).stem, sc.variant, f"{sc.stats.states:,}", f"{tso.stats.states:,}", f"{ratio:.2f}",
               violated(sc), violated(tso) + note)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*")
    p.add_argument("--store-buffer", type=int)
    args = p.parse_args(argv)
    models = args.models or sorted(str(f) for f in Path("models").glob("*.spec"))
    print("| model | variant | states sc | states tso | tso/sc | violated under sc | violated under tso |")
    print("|---|---|---:|---:|---:|---|---|")
    for path in models:
        try:
            for r in rows(path, args.store_buffer):
                print("| " + " | ".join(r) + " |")
        except SpecError as e:
            print(f"{path}: {e.message}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
