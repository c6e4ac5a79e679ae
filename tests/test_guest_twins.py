"""Issue 27: a shipped model written with guest mode as a context against the same
protocol hand-encoded. models/vcpu_requests.spec uses `guest_enter()` and an interrupt
for the reschedule IPI; tests/twins/vcpu_requests_hand.spec is the file it was before,
a latched flag and an `await` for the VM exit, with no contexts. Under sc, x86-TSO and
lkmm each variant must have the hand encoding's verdicts, which are checked
independently of the constructs."""

from __future__ import annotations

from pathlib import Path

from checker.pipeline import Options, check_spec, load

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "models" / "vcpu_requests.spec"
HAND = ROOT / "tests" / "twins" / "vcpu_requests_hand.spec"


def _verdicts(path: Path, variants: tuple[str, ...] = ()):
    result = check_spec(load(str(path)), Options(variants=variants, progress=False))
    return result, {v.variant: {o.property: (o.verdict, o.counterexample and o.counterexample.trace.length)
                                for o in v.outcomes} for v in result.variants}


def test_the_shipped_guest_mode_model_has_the_hand_encoded_twins_verdicts():
    shipped, got = _verdicts(SHIPPED)
    assert shipped.all_as_expected
    hand, want = _verdicts(HAND, tuple(got))
    assert hand.all_as_expected
    assert set(got) == set(want) and len(got) >= 20  # every variant of the shipped model
    assert [v.memory for v in shipped.variants] == [v.memory for v in hand.variants]
    assert {v.memory for v in shipped.variants} == {"sc", "tso", "lkmm"}
    for variant in got:
        assert {p: v for p, (v, _) in got[variant].items()} == {p: v for p, (v, _) in want[variant].items()}, variant
        # the same shortest interleavings, with at most the two steps the hand encoding
        # leaves implicit: E4's local_irq_disable() and the VM entry
        for prop, (_, steps) in want[variant].items():
            ctx_steps = got[variant][prop][1]
            assert (ctx_steps is None) == (steps is None) and (steps is None or steps <= ctx_steps <= steps + 2), \
                (variant, prop)
