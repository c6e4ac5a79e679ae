"""The covering set of variants the per-model cross-checks run (tests/variant_cover.py):
between them its variants run every statement and branch outcome, under each memory
model, that the model's variants run, and it leaves variants out only where it can."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared_runs import checked
from variant_cover import SMALL, _items, covering_variants

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "models").glob("*.spec"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_the_covering_set_runs_what_every_variant_runs(path):
    variants = checked(path).variants
    cover = covering_variants(path)
    assert cover and set(cover) <= {v.variant for v in variants}
    assert [v.variant for v in variants if v.variant in cover] == list(cover)  # file order
    every = frozenset().union(*(_items(v) for v in variants))
    assert frozenset().union(*(_items(v) for v in variants if v.variant in cover)) == every
    if sum(v.stats.states for v in variants) <= SMALL:
        assert len(cover) == len(variants)
    # no variant of a set that leaves some out is there for nothing: each runs something
    # the others do not
    for name in cover:
        rest = frozenset().union(*(_items(v) for v in variants if v.variant in cover and v.variant != name))
        if len(cover) < len(variants):
            assert _items(next(v for v in variants if v.variant == name)) - rest, name


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_a_large_model_leaves_variants_out():
    cover = covering_variants(ROOT / "models" / "pi_timer.spec")
    assert 0 < len(cover) < len(checked(ROOT / "models" / "pi_timer.spec").variants)
    assert "base_tso" in cover or any(v.endswith("_tso") for v in cover)  # tso's statements, under tso
