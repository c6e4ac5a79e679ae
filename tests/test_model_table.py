"""bench/model_table.py, the README's table of every model and variant under sc, x86-TSO
and lkmm: twins grouped into one design by their names, each cell what the search found
(violations with their steps, states), an unexpected outcome said, and labels per twin.
On timer_migration, whose twins are `base_tso`/`base_lkmm` (a few hundred states in
all), and on a `memory tso` model whose sc twins end in `_sc`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def table():
    spec = importlib.util.spec_from_file_location("bench_model_table", ROOT / "bench" / "model_table.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_model_table"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_design_names(table):
    assert table.design_of("base_tso", "tso") == "base"
    assert table.design_of("no_entry_mb_lkmm", "lkmm") == "no_entry_mb"
    assert table.design_of("lkmm", "lkmm") == "base"
    assert table.design_of("lkmm_sc", "sc") == "base"
    assert table.design_of("no_vcpu_mb_sc", "sc") == "no_vcpu_mb"
    assert table.design_of("early_check", "sc") == "early_check"
    # a name that says another memory model than the variant's: a design of its own
    assert table.design_of("base_tso", "sc") == "base_tso"
    assert table.design_of("no_vcpu_mb", "tso") == "no_vcpu_mb"


@pytest.fixture(scope="module")
def migration(table):
    return {row["design"]: row for row in table.model_rows(ROOT / "models" / "timer_migration.spec")}


def test_twins_share_a_row(table, migration):
    assert set(migration) == {"base", "fixed"}
    assert {m: migration["base"][m]["variant"] for m in table.MEMORIES} == \
        {"sc": "base", "tso": "base_tso", "lkmm": "base_lkmm"}
    assert {m: migration["fixed"][m]["variant"] for m in table.MEMORIES} == \
        {"sc": "fixed", "tso": "fixed_tso", "lkmm": "fixed_lkmm"}


def test_cells_say_what_the_search_found(table, migration):
    for memory in table.MEMORIES:
        got = migration["base"][memory]
        assert table.cell(got).startswith("violated timer_on_vcpu_cpu (")
        assert [p["property"] for p in got["violated"]] == ["timer_on_vcpu_cpu"]
        assert got["violated"][0]["steps"] > 0 and got["states"] > 0 and got["complete"]
        assert table.cell(migration["fixed"][memory]).startswith("holds; ")
    assert table.cell(None) == "-"
    assert not any(row[m]["unexpected"] for row in migration.values() for m in table.MEMORIES)
    got = dict(migration["fixed"]["sc"], unexpected=["timer_on_vcpu_cpu"], complete=False)
    assert table.cell(got).endswith("(search not finished); UNEXPECTED: timer_on_vcpu_cpu")


def test_labels_per_twin(table, migration):
    text = table.label_cell(migration["base"])
    assert text.startswith("commit 2f52d58c92d9 (the request checked before local_irq_disable only")
    assert "; tso: commit 2f52d58c92d9 (as base, under x86-TSO); lkmm: commit 2f52d58c92d9 (as base, " in text


def test_a_tso_model_groups_its_sc_twins(table, tmp_path):
    spec = tmp_path / "m.spec"
    spec.write_text("// label base: kernel v6.18\n// label fixed: mutation: a store\n"
                    "// label fixed_sc: mutation: the same under sc\n"
                    "// label relaxed_lkmm: mutation: lkmm only\n"
                    "model m;\nmemory tso;\nconst X = false;\nvar x: 0..1 = 0;\n"
                    "process p { if (X) x = 1; }\ninvariant zero: x == 0;\n"
                    "variant fixed { X = true; } expect violated zero;\n"
                    "variant fixed_sc { X = true; memory sc; } expect violated zero;\n"
                    "variant relaxed_lkmm { memory lkmm; }\n")
    rows = {row["design"]: row for row in table.model_rows(spec)}
    assert set(rows) == {"base", "fixed", "relaxed"}
    assert table.label_cell(rows["relaxed"]) == "lkmm: mutation: lkmm only"
    assert table.label_cell(rows["fixed"]) == "mutation: the same under sc; tso: mutation: a store"
    assert rows["fixed"]["sc"]["variant"] == "fixed_sc" and rows["fixed"]["tso"]["variant"] == "fixed"
    assert rows["fixed"]["sc"]["violated"][0]["property"] == "zero"


SHIPPED = sorted((ROOT / "models").glob("*.spec"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_the_readme_table_is_what_the_checker_finds(table, path):
    """The README's model table, a model at a time, is bench/model_table.py's rows from
    the model's shared search (its xdist group's): the label, each memory model's
    verdicts with the steps of each violation, and the states."""
    from shared_runs import checked

    readme = (ROOT / "README.md").read_text().splitlines()
    got = [table.row_line(row) for row in table.model_rows(path, checked(path))]
    assert [line for line in readme if line.startswith(f"| {path.stem} | `")] == got
