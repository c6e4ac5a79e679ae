"""Issue 27: an interrupt raised from another CPU is in flight until its delivery, a
step of its own (semantics/contexts.py, `raise_on` and `delivery`). The natural model
(tests/twins/ipi_in_flight.spec: `send_IPI(1, h); flag = true;` against `await flag;
saw = handled;`) must see the flag before the handler under sc, tso and lkmm, and give
the outcomes of its twin that writes the arrival by hand (ipi_in_flight_hand.spec);
pan must agree on the Promela twins."""

from __future__ import annotations

from pathlib import Path

import pytest

from agreement import compiled, final_outcomes, spin_agrees_on_twins, verdicts_by_variant
from checker.base.errors import SpecError
from checker.engines.explicit import explore
from checker.pipeline import Options, check_spec, load

ROOT = Path(__file__).resolve().parent
NATURAL, HAND = ROOT / "twins" / "ipi_in_flight.spec", ROOT / "twins" / "ipi_in_flight_hand.spec"
OUTCOME = ("data", "flag", "handled", "got", "saw")


@pytest.fixture(scope="module")
def runs():
    return {p: check_spec(load(str(p)), Options(progress=False)) for p in (NATURAL, HAND)}


def test_the_natural_model_lets_the_flag_overtake_the_ipi(runs):
    r = runs[NATURAL]
    assert r.all_as_expected
    assert [(v.variant, v.memory) for v in r.variants] == [("base", "sc"), ("tso", "tso"), ("lkmm", "lkmm")]
    for v in r.variants:
        got = {o.property: o.verdict.value for o in v.outcomes}
        # the flag overtakes the IPI; what was stored before the send is still seen; it arrives
        assert got == {"handler_first": "violated", "data_seen": "holds", "delivered": "holds",
                       "late_handler": "holds", "deadlock": "holds"}, v.variant


def test_the_construct_has_the_verdicts_of_the_arrival_written_by_hand(runs):
    assert runs[HAND].all_as_expected
    assert verdicts_by_variant(runs[NATURAL]) == verdicts_by_variant(runs[HAND])


def _outcomes(path: Path, variant: str) -> set[tuple[int, ...]]:
    return final_outcomes(path.read_text(), variant, OUTCOME)


@pytest.mark.parametrize("variant", ["base", "tso", "lkmm"])
def test_the_construct_gives_the_outcomes_of_the_arrival_written_by_hand(variant):
    got = _outcomes(NATURAL, variant)
    assert got == _outcomes(HAND, variant)
    assert (1, 1, 1, 1, 0) in got and (1, 1, 1, 1, 1) in got  # the handler late, and in time
    assert all(g == 1 for _, _, _, g, _ in got)


IMMEDIATE = """model self_ipi;
cpus 2;
var flag: bool = false;
var handled: bool = false;
var saw: bool = true;
interrupt h[2] { handled = true; }
process sender on cpu 1 { send_IPI(1, h); flag = true; }
process target on cpu 0 { await flag; saw = handled; }
final handler_first: saw;
"""


def test_a_self_ipi_is_pending_at_once_and_makes_no_flight_state():
    # the sender raises on its own CPU: the handler runs before its next step
    cm = compiled(IMMEDIATE)
    assert "in_flight_h" not in {sl.name for sl in cm.program.layout.slots}
    assert explore(cm).counterexamples == {}


def test_in_flight_of_an_interrupt_never_raised_remotely_is_an_error():
    with pytest.raises(SpecError, match="never raised from another CPU"):
        compiled(IMMEDIATE + "invariant none: !in_flight_h[0];\n")


def test_spin_agrees_on_the_in_flight_twins(tmp_path):
    spin_agrees_on_twins((NATURAL, HAND), tmp_path, "variant lkmm { memory lkmm; } expect violated handler_first;\n",
                         {"base", "tso"})


def test_bmc_finds_the_overtaking_flag_at_the_explicit_depth():
    # the Z3 encoding gets the delivery from the same lowering (sc: bmc's memory model)
    from agreement import bmc_depths
    cm = compiled(NATURAL.read_text())
    want = {k: c.trace.length for k, c in explore(cm).counterexamples.items()}
    assert set(want) == {"handler_first", "late_handler"}  # the violation, and the witness
    depths, err, _ = bmc_depths(cm, max(want.values()) + 1)
    assert err is None and depths == want


FAIR = """model fair_delivery;
cpus 2;
var handled: bool = false;
interrupt h[2] { handled = true; }
process sender on cpu 0 { send_IPI(1, h); }
process target on cpu 1 { loop { skip; } }
property arrives: always eventually handled;
"""


def test_an_ipi_in_flight_is_eventually_delivered_under_weak_fairness():
    # the target's thread could run for ever; the delivery is the interrupt's own
    # weakly fair step, and then entry is taken before the thread's next step
    from test_liveness import check
    _, ex, out = check(FAIR)
    assert ex.stats.complete and out["arrives"].verdict.value == "holds"
    _, _, out = check(FAIR.replace("property arrives: always eventually handled;",
                                   "property arrives: always eventually in_flight_h[1];"))
    assert out["arrives"].verdict.value == "violated"  # in flight once, never again
