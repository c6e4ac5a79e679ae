"""models/vcpu_requests.spec: the mode/requests pairing of vcpu-requests.rst under
x86-TSO, and the same variants under sequential consistency."""

from pathlib import Path

import pytest

from checker.cli import main
from checker.pipeline import Options, check_spec, load
from checker.results.trace import Buffered, Verdict

MODEL = str(Path(__file__).parent.parent / "models" / "vcpu_requests.spec")


def outcome(variant: str, **opts):
    result = check_spec(load(MODEL), Options(variants=(variant,), use_expectations=False, progress=False, **opts))
    v = result.variants[0]
    return next(o for o in v.outcomes if o.property == "request_not_stranded"), v


def test_the_model_checks_itself(capsys):
    assert main([MODEL, "--brief"]) == 0
    assert "every outcome is as expected" in capsys.readouterr().out


@pytest.mark.parametrize("variant, tso, sc", [
    ("base", Verdict.HOLDS, Verdict.HOLDS),
    ("no_vcpu_mb", Verdict.VIOLATED, Verdict.HOLDS),
    ("plain_request_plain_mode", Verdict.VIOLATED, Verdict.HOLDS),
    ("set_bit_plain_mode", Verdict.HOLDS, Verdict.HOLDS),
    ("plain_request_cmpxchg", Verdict.HOLDS, Verdict.HOLDS),
    ("no_kick_sc", Verdict.VIOLATED, Verdict.VIOLATED),
])
def test_verdicts_under_both_memory_models(variant, tso, sc):
    assert outcome(variant, memory="tso")[0].verdict is tso
    assert outcome(variant, memory="sc")[0].verdict is sc


def test_missing_vcpu_barrier_holds_under_sc_from_the_command_line(capsys):
    args = [MODEL, "--variant", "no_vcpu_mb", "--brief"]
    assert main(args) == 0  # violated, as expected, under the model's tso
    capsys.readouterr()
    assert main(args + ["--memory-model", "sc"]) == 1  # the expectation fails: sc cannot show it
    out = capsys.readouterr().out
    assert "memory model sequential consistency" in out
    row = next(line.split() for line in out.splitlines() if line.startswith("no_vcpu_mb "))
    assert row[:5] == ["no_vcpu_mb", "request_not_stranded", "holds", "violated", "UNEXPECTED"]


def test_the_counterexample_is_the_vcpus_delayed_mode_store():
    o, _ = outcome("no_vcpu_mb")
    last = o.counterexample.trace.states[-1]
    assert last.get("sb(vcpu)") == Buffered([("mode", "IN_GUEST_MODE")])
    assert last.get("mode") == "OUTSIDE_GUEST_MODE"  # what the kick's cmpxchg saw
    # in guest mode (guest_enter's VM exit not taken), no reschedule IPI on its way
    assert dict(last.pcs) == {"requester": "end", "vcpu": "end_guest", "reschedule": "end_irq",
                              "reschedule_delivery": "end_flight"}
    assert last.get("guest_mode") == (True,) and last.get("pending_reschedule") is False
    assert last.get("in_flight_reschedule") is False


def test_the_requesters_store_lands_after_the_vcpu_checked():
    o, _ = outcome("plain_request_plain_mode")
    actions = o.counterexample.trace.actions
    assert (actions[-1].process, actions[-1].kind) == ("memory", "flush")
    assert actions[-1].text == "flush requester: requests = {0}"


@pytest.mark.parametrize("variant", ["base", "no_vcpu_mb", "plain_request_plain_mode", "set_bit_plain_mode"])
def test_the_store_buffer_bound_never_bites(variant):
    """No store ever waits for room, so a bigger buffer changes nothing: the verdicts
    hold for store buffers of any size, as the output says."""
    o2, v2 = outcome(variant, memory="tso")
    o4, v4 = outcome(variant, memory="tso", store_buffer=4)
    assert v2.stats.buffer_full_states == 0
    assert (o2.verdict, v2.stats.states) == (o4.verdict, v4.stats.states)
