"""Issues 27/31: a timed hrtimer (`hrtimer T ... clock C`, `hrtimer_start(T, t)`) may
expire only once its clock has reached the expiry it was started with (semantics/
contexts.py, `start` and `expiry`). The natural model (tests/twins/timed_hrtimer.spec,
the exitless timer's TSC-deadline hrtimer armed timer_advance early) must give the
verdicts and the final outcomes of its twin that writes the hrtimer by hand, as
models/pi_timer.spec did (timed_hrtimer_hand.spec), under sc, tso and lkmm; pan and
Z3's bmc must agree. Misuse is an error at its position."""

from __future__ import annotations

from pathlib import Path

import pytest

from agreement import compiled, final_outcomes, spin_agrees_on_twins, verdicts_by_variant
from checker.base.errors import SpecError
from checker.cli import main
from checker.engines.explicit import explore
from checker.pipeline import Options, check_spec, load

ROOT = Path(__file__).resolve().parent
NATURAL, HAND = ROOT / "twins" / "timed_hrtimer.spec", ROOT / "twins" / "timed_hrtimer_hand.spec"
OUTCOME = ("deadline", "injected", "at")


@pytest.fixture(scope="module")
def runs():
    return {p: check_spec(load(str(p)), Options(progress=False)) for p in (NATURAL, HAND)}


def test_the_timer_fires_no_earlier_than_its_expiry(runs):
    r = runs[NATURAL]
    assert r.all_as_expected
    assert [(v.variant, v.memory) for v in r.variants] == [("base", "sc"), ("no_wait", "sc"), ("tso", "tso"),
                                                            ("lkmm", "lkmm")]
    for v in r.variants:
        got = {o.property: o.verdict.value for o in v.outcomes}
        early = "violated" if v.variant == "no_wait" else "holds"  # expiry = deadline - ADVANCE
        assert got == {"not_early": early, "queued_early": "holds", "injected_once_armed": "holds",
                       "eventually_injected": "holds", "deadlock": "holds"}, v.variant


def test_the_construct_has_the_verdicts_of_the_timer_written_by_hand(runs):
    assert runs[HAND].all_as_expected
    assert verdicts_by_variant(runs[NATURAL]) == verdicts_by_variant(runs[HAND])


def _outcomes(text: str, variant: str) -> set[tuple[int, ...]]:
    return final_outcomes(text, variant, OUTCOME)


@pytest.mark.parametrize("variant", ["base", "no_wait", "tso", "lkmm"])
def test_the_construct_gives_the_outcomes_of_the_timer_written_by_hand(variant):
    got = _outcomes(NATURAL.read_text(), variant)
    assert got == _outcomes(HAND.read_text(), variant)
    if variant == "no_wait":  # fired at its expiry, one tick before the deadline
        assert (3, 1, 2) in got
    else:
        assert all(at >= d for d, _, at in got)


def test_without_its_clock_the_timer_may_fire_at_any_moment():
    """The same model with an untimed hrtimer: the deadline properties no longer hold,
    which is why pi_timer could not use one (what the clock adds is observable)."""
    text = NATURAL.read_text().replace(" clock guest_tsc {", " {").replace(
        "hrtimer_start(apic_timer, deadline - ADVANCE);", "hrtimer_start(apic_timer);").replace(
        "invariant queued_early: armed_apic_timer -> expires_apic_timer + ADVANCE == deadline;\n", "")
    got = _outcomes(text, "no_wait")
    assert (3, 1, 0) in got  # fired before the clock moved at all


ERRORS = [
    ("hrtimer_start(apic_timer, deadline - ADVANCE);", "hrtimer_start(apic_timer);",
     "hrtimer 'apic_timer' runs on clock 'guest_tsc': 'hrtimer_start' needs its expiry"),
    (" clock guest_tsc {", " clock guest_ts {", "hrtimer 'apic_timer' runs on clock 'guest_ts', which is no global"),
    ("ghost var guest_tsc", "var guest_tsc", "the clock 'guest_tsc' of hrtimer 'apic_timer' is a `var`"),
    ("hrtimer_start(apic_timer, deadline - ADVANCE);", "hrtimer_start(apic_timer, deadline > 1);",
     "the expiry of hrtimer 'apic_timer' is bool, not a time"),
    ("hrtimer_start(apic_timer, deadline - ADVANCE);", "hrtimer_start(apic_timer, 1, 2);",
     "'hrtimer_start' takes 1 or 2 argument(s), not 3"),
]


@pytest.mark.parametrize("old, new, words", ERRORS)
def test_timed_hrtimer_errors(old, new, words):
    text = NATURAL.read_text()
    assert old in text
    with pytest.raises(SpecError) as e:
        compiled(text.replace(old, new))
    assert words in str(e.value)


def test_an_expiry_for_a_timer_without_a_clock_is_an_error_at_its_position(tmp_path, capsys):
    spec = tmp_path / "e.spec"
    spec.write_text("model e;\ncpus 1;\nhrtimer t on cpu 0 { skip; }\nprocess p on cpu 0 { hrtimer_start(t, 2); }\n")
    assert main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert "e.spec:4:39: error: hrtimer 't' has no clock: it may expire at any moment" in err
    assert "^" in err and "hint: declare its clock, `hrtimer t ... clock NAME { ... }`" in err
    assert "Traceback" not in err
    spec.write_text("model e;\ncpus 1;\nghost var b: bool = false;\nhrtimer t on cpu 0 clock b { skip; }\n"
                    "process p on cpu 0 { hrtimer_start(t, 1); }\n")
    assert main([str(spec)]) == 2
    assert "e.spec:4:26: error: the clock 'b' of hrtimer 't' is bool, not a time" in capsys.readouterr().err


def test_bmc_finds_the_early_expiry_at_the_explicit_depth():
    # the Z3 encoding gets the clock's guard from the same lowering
    from agreement import bmc_depths
    cm = compiled(NATURAL.read_text(), "no_wait")
    want = {k: c.trace.length for k, c in explore(cm).counterexamples.items()}
    assert set(want) == {"not_early"}
    depths, err, _ = bmc_depths(cm, max(want.values()) + 1)
    assert err is None and depths == want


ARRAYS = """model timed_arrays;
cpus 2;
ghost var tsc: 0..2 = 0;
var t_on: 0..2 = 0;              // 1 + the CPU the unpinned timer's callback ran on
var t_at: 0..2 = 0;
var u_on: 0..2 = 0;              // the same for the pinned one
var u_at: 0..2 = 0;
hrtimer t[2] clock tsc { atomic { t_at = tsc; t_on = smp_processor_id() + 1; } }
hrtimer u[2] pinned clock tsc { atomic { u_at = tsc; u_on = smp_processor_id() + 1; } }
process vcpu on cpu 1 { hrtimer_start(t, 2); hrtimer_start(u, 2); }
process clock { end_tick: loop { atomic { await tsc < 2; tsc = tsc + 1; } } }
invariant not_early: (t_on != 0 -> t_at == 2) && (u_on != 0 -> u_at == 2);
reachable t_on_0: t_on == 1;
reachable t_on_1: t_on == 2;
reachable u_on_0: u_on == 1;
reachable u_on_1: u_on == 2;
"""


def test_an_unpinned_or_pinned_timed_hrtimer_waits_for_its_clock_on_every_cpu():
    # the clock's guard is the expiry's, whichever CPU's expiry process takes it; the
    # pinned one fires only where it was started
    ex = explore(compiled(ARRAYS))
    assert ex.stats.complete and ex.model_error is None
    assert set(ex.counterexamples) == {"t_on_0", "t_on_1", "u_on_1"}  # reached witnesses; not_early holds


def test_a_start_past_the_clocks_range_is_a_model_error():
    ex = explore(compiled(ARRAYS.replace("hrtimer_start(t, 2);", "hrtimer_start(t, tsc + 3);")))
    assert ex.model_error is not None


def test_spin_agrees_on_the_timed_hrtimer_and_its_arrays(tmp_path):
    """pan on the construct's lowering (the hand twin is compared in the explicit engine)."""
    arrays = tmp_path / "src" / "timed_arrays.spec"
    arrays.parent.mkdir()
    arrays.write_text(ARRAYS + "variant tso { memory tso; }\n")
    spin_agrees_on_twins((NATURAL,), tmp_path, "variant lkmm { memory lkmm; }\n", {"base", "no_wait", "tso"})
    spin_agrees_on_twins((arrays,), tmp_path, "", {"base", "tso"})
