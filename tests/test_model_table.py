"""bench/model_table.py, the README's table of every model and variant under sc, x86-TSO
and lkmm: twins grouped into one design by their names, each cell what the search found
(violations with their steps, states), an unexpected outcome said, and labels per twin.
On vcpu_preempted_kick, whose twins are `base_tso`/`base_lkmm`, and on a `memory tso`
model whose sc twins end in `_sc`; both small."""

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
def kick(table):
    return {row["design"]: row for row in table.model_rows(ROOT / "models" / "vcpu_preempted_kick.spec")}


def test_twins_share_a_row(table, kick):
    assert set(kick) == {"base", "early_check", "entry_mb"}
    base = kick["base"]
    assert {m: base[m]["variant"] for m in table.MEMORIES} == {"sc": "base", "tso": "base_tso", "lkmm": "base_lkmm"}
    assert "entry_mb" in kick and "sc" not in kick["entry_mb"]


def test_cells_say_what_the_search_found(table, kick):
    base = kick["base"]
    assert table.cell(base["sc"]).startswith("holds; ")
    tso = table.cell(base["tso"])
    assert tso.startswith("violated request_seen_before_guest (") and "lost_while_preempted (" in tso
    assert all(p["steps"] and p["steps"] > 0 for p in base["tso"]["violated"])
    assert table.cell(None) == "-"
    assert not any(row[m]["unexpected"] for row in kick.values() for m in table.MEMORIES if m in row)
    got = dict(base["sc"], unexpected=["request_seen_before_guest"], complete=False)
    assert table.cell(got).endswith("(search not finished); UNEXPECTED: request_seen_before_guest")


def test_labels_per_twin(table, kick):
    text = table.label_cell(kick["base"])
    assert text.startswith("kernel v5.4 ")
    assert "; tso: mutation: v5.4 without the entry's smp_mb, under x86-TSO" in text
    assert table.label_cell(kick["entry_mb"]).startswith("tso: kernel v5.4 ")


def test_a_tso_model_groups_its_sc_twins(table, tmp_path):
    spec = tmp_path / "m.spec"
    spec.write_text("// label base: kernel v6.18\n// label fixed: mutation: a store\n"
                    "// label fixed_sc: mutation: the same under sc\n"
                    "model m;\nmemory tso;\nconst X = false;\nvar x: 0..1 = 0;\n"
                    "process p { if (X) x = 1; }\ninvariant zero: x == 0;\n"
                    "variant fixed { X = true; } expect violated zero;\n"
                    "variant fixed_sc { X = true; memory sc; } expect violated zero;\n")
    rows = {row["design"]: row for row in table.model_rows(spec)}
    assert set(rows) == {"base", "fixed"}
    assert rows["fixed"]["sc"]["variant"] == "fixed_sc" and rows["fixed"]["tso"]["variant"] == "fixed"
    assert rows["fixed"]["sc"]["violated"][0]["property"] == "zero"
