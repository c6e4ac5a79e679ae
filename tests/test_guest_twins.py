"""Issue 27: a shipped model's hand-made guest mode against the constructs. The twin
tests/twins/vcpu_requests_guest.spec is models/vcpu_requests.spec written with
`guest_enter()` and an interrupt for the reschedule IPI; under sc, x86-TSO and lkmm
each of its variants must have the shipped model's verdicts, which are checked independently of
the constructs (no contexts there)."""

from __future__ import annotations

from pathlib import Path

from checker.pipeline import Options, check_spec, load

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "models" / "vcpu_requests.spec"
TWIN = ROOT / "tests" / "twins" / "vcpu_requests_guest.spec"


def _verdicts(path: Path, variants: tuple[str, ...] = ()):
    result = check_spec(load(str(path)), Options(variants=variants, progress=False))
    return result, {v.variant: {o.property: (o.verdict, o.counterexample and o.counterexample.trace.length)
                                for o in v.outcomes} for v in result.variants}


def test_the_guest_mode_twin_has_the_hand_encoded_models_verdicts():
    twin, got = _verdicts(TWIN)
    assert twin.all_as_expected
    shipped, want = _verdicts(SHIPPED, tuple(got))
    assert set(got) == set(want) and len(got) >= 20  # every variant of the shipped model
    assert [v.memory for v in twin.variants] == [v.memory for v in shipped.variants]
    for variant in got:
        assert {p: v for p, (v, _) in got[variant].items()} == {p: v for p, (v, _) in want[variant].items()}, variant
        # the same shortest interleavings, with at most the two steps the shipped model
        # leaves implicit: E4's local_irq_disable() and the VM entry
        for prop, (_, steps) in want[variant].items():
            twin_steps = got[variant][prop][1]
            assert (twin_steps is None) == (steps is None) and (steps is None or steps <= twin_steps <= steps + 2), \
                (variant, prop)
