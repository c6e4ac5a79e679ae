"""What execution contexts cost: the README's table "The cost of execution contexts".

For every shipped model with `cpus` (and the hand-encoded twin of one written from it),
the distinct states of its base variant forced to sc, x86-TSO and lkmm, as
`check --variant base --memory-model M` explores them (partial-order reduction on), how
many of them partial-order reduction expanded with an ample set, and the states with
`--no-por` (under lkmm: without lazy propagation). A twin's row is the same protocol
without contexts, as the model was written before it used them: what the constructs
cost over the hand encoding.

    python bench/context_cost.py            # prints the Markdown table
"""

from __future__ import annotations

from pathlib import Path

from checker.base.errors import SpecError
from checker.pipeline import Options, check_spec, load
from checker.results.trace import Verdict

ROOT = Path(__file__).resolve().parent.parent
TWINS = {"models/vcpu_requests.spec": "tests/twins/vcpu_requests_hand.spec",  # a context model: its hand-encoded twin
         "models/ipi_fastpath.spec": "tests/twins/ipi_fastpath_hand.spec",
         "models/halt_poll.spec": "tests/twins/halt_poll_hand.spec",
         "models/pi_timer.spec": "tests/twins/pi_timer_hand.spec",
         "models/pi_timer_v6.spec": "tests/twins/pi_timer_v6_hand.spec",
         "models/pi_two_posters.spec": "tests/twins/pi_two_posters_hand.spec",
         "models/ipi_fastpath_reenter.spec": "tests/twins/ipi_fastpath_reenter_hand.spec",
         "models/timer_advance_tuning.spec": "tests/twins/timer_advance_tuning_hand.spec",
         "models/hv_sw_switch.spec": "tests/twins/hv_sw_switch_hand.spec"}
MEMORIES = ("sc", "tso", "lkmm")


def context_models() -> list[str]:
    """The shipped models that declare CPUs, by file name."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "models").glob("*.spec")
                  if any(line.startswith("cpus ") for line in p.read_text().splitlines()))


def cell(path: str, memory: str) -> str:
    """The base variant's states under `memory` (its ample-set share under sc/tso, and
    the states without the reduction), the properties that do not hold there, or why it
    is not checked."""
    runs = []
    for por in (True, False):
        try:
            result = check_spec(load(str(ROOT / path)), Options(variants=("base",), memory=memory, progress=False,
                                                                 use_expectations=False, por=por, coverage=False))
        except SpecError as e:
            return "refused (contexts under lkmm)" if "not supported yet" in e.message else f"error: {e.message}"
        runs.append(result.variants[0])
    v, plain = runs
    bad = [o.property for o in v.outcomes if o.verdict is not Verdict.HOLDS]
    verdict = f"; {', '.join(bad)} {'not holding' if len(bad) > 1 else 'does not hold'}" if bad else ""
    ample = "" if memory == "lkmm" or v.stats.ample_states is None else f"{v.stats.ample_states:,} ample, "
    return f"{v.stats.states:,} ({ample}{plain.stats.states:,} without POR{verdict})"


def paths() -> list[str]:
    """The table's models in row order: the context models, then the hand-encoded twins."""
    return context_models() + list(TWINS.values())


def row(path: str) -> tuple[str, ...]:
    """(model, contexts, sc, tso, lkmm) of one model of the table."""
    twin_of = {hand: shipped for shipped, hand in TWINS.items()}
    contexts = f"no (`{Path(twin_of[path]).stem}` hand-encoded)" if path in twin_of else "yes"
    return (path, contexts) + tuple(cell(path, mm) for mm in MEMORIES)


def rows():
    """(model, contexts, sc, tso, lkmm) per row, the hand-encoded twins last."""
    for path in paths():
        yield row(path)


def main() -> int:
    print("| model | contexts | sc | x86-TSO | lkmm |")
    print("|---|---|---:|---:|---:|")
    for r in rows():
        print(f"| `{r[0]}` | " + " | ".join(r[1:]) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
