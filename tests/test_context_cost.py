"""The README's table "The cost of execution contexts" is what bench/context_cost.py
finds now: the base variant of each context model (and of vcpu_requests and its context
twin) under sc, x86-TSO and lkmm. Small searches: every row together is some twenty
thousand states."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench_context_cost", ROOT / "bench" / "context_cost.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_context_cost"] = mod
    spec.loader.exec_module(mod)
    return mod


def readme_rows() -> list[tuple[str, ...]]:
    section = (ROOT / "README.md").read_text().split("**The cost of execution contexts.**", 1)[1]
    rows = []
    for line in section.split("\n\n", 2)[1].splitlines():
        cells = tuple(c.strip() for c in line.strip().strip("|").split("|"))
        if cells[0].startswith("`"):
            rows.append((cells[0].strip("`"),) + cells[1:])
    return rows


def test_readme_context_cost_table_matches_the_checker():
    bench = _bench()
    got = list(bench.rows())
    assert readme_rows() == got
    # every shipped model with CPUs has its row, checked under each memory model
    assert {r[0] for r in got if r[1] == "yes"} == set(bench.context_models())
    assert not any("refused" in c or "error" in c for r in got for c in r[2:])
