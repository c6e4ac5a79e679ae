"""The README's "Models" table quotes state counts under sc and x86-TSO, without
reductions: recompute every row it has, so the numbers cannot drift from what
`check --no-por` reports."""

import re
from pathlib import Path

import pytest

from shared_runs import checked

ROOT = Path(__file__).parent.parent


def table_rows():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Models", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        m = re.match(r"\|\s*`(models/[\w.]+)`\s*\|.*\|\s*(\d+)\s*\|\s*([\d,]+)\s*\|\s*([\d,]+)\s*\|\s*$", line)
        if m:
            yield m.group(1), int(m.group(2)), int(m.group(3).replace(",", "")), int(m.group(4).replace(",", ""))


def test_the_table_has_rows():
    assert any(True for _ in table_rows())


@pytest.mark.parametrize("path, variants, sc, tso", list(table_rows()))
def test_row_matches_the_checker(path, variants, sc, tso):
    """`check --no-por --memory M` on every variant. A variant declared under M searches
    what it searches in the unreduced run the other tests share (--memory only overrides
    the declared model), so only the others are searched again under M."""
    plain = checked(ROOT / path, por=False, symmetry="off")
    assert len(plain.variants) == variants
    counts = {}
    for memory in ("sc", "tso"):
        own = [v for v in plain.variants if v.memory == memory]
        rest = tuple(v.variant for v in plain.variants if v.memory != memory)
        forced = checked(ROOT / path, memory=memory, por=False, symmetry="off", variants=rest).variants if rest else ()
        assert all(v.memory == memory for v in forced)
        counts[memory] = sum(v.stats.states for v in own) + sum(v.stats.states for v in forced)
    assert (counts["sc"], counts["tso"]) == (sc, tso)


@pytest.mark.xdist_group("timer_migration")  # reads timer_migration's shared search (shared_runs)
def test_memory_overrides_only_what_a_variant_declares_otherwise():
    """What the row test relies on: --memory sc on a variant declared sc is that variant's own search."""
    path = ROOT / "models" / "timer_migration.spec"
    plain = {v.variant: v for v in checked(path, por=False, symmetry="off").variants}
    sc = [v for v in plain.values() if v.memory == "sc"]
    assert sc
    forced = checked(path, memory="sc", por=False, symmetry="off", variants=tuple(v.variant for v in sc))
    assert [(v.variant, v.stats.states, v.stats.transitions, v.outcomes) for v in forced.variants] == \
        [(v.variant, v.stats.states, v.stats.transitions, v.outcomes) for v in sc]
