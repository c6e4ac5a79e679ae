"""The litmus suite (tests/litmus/*.spec) under sequential consistency and x86-TSO.

The expected verdicts are the published x86-TSO ones (Owens, Sarkar, Sewell 2009;
Intel SDM vol. 3A 9.2), and the final-state counts were worked out by hand from the
interleavings (for example SB: (r0, r1) in {01, 10, 11} under sc, plus 00 under tso).
"""

import sys
from pathlib import Path

import pytest

from checker.cli import main

LITMUS = Path(__file__).parent / "litmus"
sys.path.insert(0, str(LITMUS))
from litmus_table import SUITE, outcome  # noqa: E402

# name: (verdict under sc, final states under sc, verdict under tso, final states under tso)
EXPECTED = {
    "sb": ("forbidden", 3, "allowed", 4),
    "sb_mb": ("forbidden", 3, "forbidden", 3),
    "sb_xchg": ("forbidden", 3, "forbidden", 3),
    "mp": ("forbidden", 3, "forbidden", 3),
    "n6": ("forbidden", 4, "allowed", 5),
    "sb_wmb": ("forbidden", 3, "allowed", 4),
    "sb_cmpxchg_fail": ("forbidden", 3, "forbidden", 3),
    "sb_set_bit": ("forbidden", 3, "forbidden", 3),
    "lb": ("forbidden", 3, "forbidden", 3),
    "two_plus_two_w": ("forbidden", 3, "forbidden", 3),
    "iriw": ("forbidden", 15, "forbidden", 15),
}


def test_suite_is_complete():
    assert set(SUITE) == set(EXPECTED) == {p.stem for p in LITMUS.glob("*.spec")}


@pytest.mark.parametrize("name", SUITE)
def test_verdicts_and_final_states(name):
    sc_verdict, sc_finals, tso_verdict, tso_finals = EXPECTED[name]
    assert outcome(name, "sc")[:2] == (sc_verdict, sc_finals)
    assert outcome(name, "tso")[:2] == (tso_verdict, tso_finals)


@pytest.mark.parametrize("name", SUITE)
def test_each_file_checks_itself(name, capsys):
    """Every litmus file carries its tso expectation and an sc variant."""
    assert main([str(LITMUS / f"{name}.spec"), "--brief"]) == 0
    assert "every outcome is as expected" in capsys.readouterr().out


def test_readme_table_matches():
    """tests/litmus/README.md quotes the verdicts and counts; keep it honest."""
    rows = {}
    for line in (LITMUS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in EXPECTED:
            rows[cells[0]] = (cells[2], int(cells[3]), cells[4], int(cells[5]))
    assert rows == EXPECTED
