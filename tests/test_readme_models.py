"""The README's "Models" table quotes state counts under sc and x86-TSO, without
reductions: recompute every row it has, so the numbers cannot drift from what
`check --no-por` reports."""

import re
from pathlib import Path

import pytest

from checker.pipeline import Options, check_spec, load

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
    spec = load(str(ROOT / path))
    counts = {}
    for memory in ("sc", "tso"):
        result = check_spec(spec, Options(memory=memory, use_expectations=False, progress=False, por=False,
                                          symmetry="off"))
        assert len(result.variants) == variants
        counts[memory] = sum(v.stats.states for v in result.variants)
    assert (counts["sc"], counts["tso"]) == (sc, tso)
