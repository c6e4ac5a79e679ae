"""Print the litmus suite's verdicts and final-state counts under sc and x86-TSO.

    python tests/litmus/litmus_table.py         (from the repository root)

Each test's `final forbidden: ...` condition states the outcome in question; it is
"violated" when the outcome is reachable, i.e. the memory model allows it. The counts
are distinct final states: every process ended and every store buffer drained.
"""

from __future__ import annotations

from pathlib import Path

from checker.pipeline import Options, check_spec, load
from checker.results.trace import Verdict

HERE = Path(__file__).resolve().parent
SUITE = ("sb", "sb_mb", "sb_xchg", "mp", "n6",  # the five the x86-TSO issue names
         "sb_wmb", "sb_cmpxchg_fail", "sb_set_bit", "lb", "two_plus_two_w", "iriw")


def outcome(name: str, memory: str) -> tuple[str, int, int]:
    """(allowed | forbidden, distinct final states, distinct states) of the base model."""
    spec = load(str(HERE / f"{name}.spec"))
    result = check_spec(spec, Options(variants=("base",), memory=memory, use_expectations=False,
                                      progress=False))
    v = result.variants[0]
    forbidden = next(o for o in v.outcomes if o.property == "forbidden")
    assert forbidden.verdict in (Verdict.HOLDS, Verdict.VIOLATED), forbidden
    return ("allowed" if forbidden.verdict is Verdict.VIOLATED else "forbidden",
            v.stats.final_states, v.stats.states)


def table() -> str:
    rows = ["| test | sc | final states (sc) | x86-TSO | final states (tso) | states sc / tso |",
            "|---|---|---:|---|---:|---:|"]
    for name in SUITE:
        sc, tso = outcome(name, "sc"), outcome(name, "tso")
        rows.append(f"| {name} | {sc[0]} | {sc[1]} | {tso[0]} | {tso[1]} | {sc[2]} / {tso[2]} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
