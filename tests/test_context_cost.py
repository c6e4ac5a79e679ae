"""The README's table "The cost of execution contexts" is what bench/context_cost.py
finds now: the base variant of each context model and of each hand-encoded twin
(tests/twins/*_hand.spec) under sc, x86-TSO and lkmm, a test per row."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

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


BENCH = _bench()


def test_readme_context_cost_table_has_a_row_per_model_in_order():
    """Every shipped model with CPUs and every hand-encoded twin, in the bench's order."""
    assert [r[0] for r in readme_rows()] == BENCH.paths()
    assert {r[0] for r in readme_rows() if r[1] == "yes"} == set(BENCH.context_models())


@pytest.mark.parametrize("path", BENCH.paths(), ids=lambda p: Path(p).stem)
def test_readme_context_cost_row_matches_the_checker(path):
    """One row per test, so that xdist spreads the table's searches over its workers."""
    got = BENCH.row(path)
    assert {r[0]: r for r in readme_rows()}[path] == got
    assert not any("refused" in c or "error" in c for c in got[2:])  # checked under each memory model
