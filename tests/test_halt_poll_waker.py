"""models/halt_poll.spec, the waker's smp_mb() before swait_active() (issue 18): the
timer's expiry and kvm_vcpu_wake_up written statement by statement (SPLIT_WAKER).
Without the barrier (v4.6's bare swait_active) the wake-up is lost under the
Linux-kernel memory model and not on x86, where atomic_inc is a locked instruction;
the kernel's code (swq_has_sleeper, rcuwait_wake_up's barrier (B)) holds under all
three memory models."""

from pathlib import Path

import pytest

from checker.semantics.primitives import BUILTINS
from checker.cli import main
from checker.front.parse import parse
from checker.pipeline import Options, check_spec, load
from checker.results.trace import Verdict

MODEL = str(Path(__file__).resolve().parent.parent / "models" / "halt_poll.spec")
WAKER = ("waker_sc", "waker_tso", "waker_lkmm", "waker_no_mb_sc", "waker_no_mb_tso", "waker_no_mb_lkmm")


def run(variant: str, spec=None, **opts):
    result = check_spec(spec or load(MODEL), Options(variants=(variant,), use_expectations=False, progress=False,
                                                     **opts))
    v = result.variants[0]
    return next(o for o in v.outcomes if o.property == "timer_wakes_vcpu"), v


def test_the_waker_variants_check_themselves(capsys):
    args = [MODEL, "--brief"] + [a for v in WAKER for a in ("--variant", v)]
    assert main(args) == 0
    assert "every outcome is as expected" in capsys.readouterr().out


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
def test_the_kernels_waker_holds_under_every_memory_model(memory):
    o, _ = run("waker_lkmm", memory=memory)
    assert o.verdict is Verdict.HOLDS


@pytest.mark.parametrize("memory, verdict", [("sc", Verdict.HOLDS), ("tso", Verdict.HOLDS),
                                             ("lkmm", Verdict.VIOLATED)])
def test_waker_without_smp_mb_loses_the_timer_only_under_lkmm(memory, verdict):
    o, _ = run("waker_no_mb_lkmm", memory=memory)
    assert o.verdict is verdict


def test_lkmm_counterexample_is_the_waiter_test_reading_a_stale_queue():
    """The lost wake-up is SB: the waker's swait_active() read the queue before the
    waiter's prepare_to_rcuwait reached it, with no smp_mb() between its increment and
    that load; the vCPU then sleeps for ever while the coalescing timer keeps firing."""
    o, _ = run("waker_no_mb_lkmm")
    t = o.counterexample.trace
    stale = [(i, a) for i, a in enumerate(t.actions) if "an older store than memory's" in a.detail]
    assert len(stale) == 1
    i, a = stale[0]
    assert (a.process, a.text) == ("apic_timer", "if (swait_active(wait))")
    # the callback runs on CPU 1, whose view it shares (a view is a CPU's, LANGUAGE.md)
    assert a.detail.startswith("not taken: read wait = {}, an older store than memory's {vcpu}: the newer store had not "
                               "propagated to cpu1")
    before = t.states[i]
    assert before.get("view(cpu1)") == (("wait", ()),) and before.get("wait") == ("vcpu",)
    # after its increment the waker took no barrier before the load
    inc = max(j for j, b in enumerate(t.actions[:i]) if b.process == "apic_timer" and b.text == "atomic_inc(pending);")
    assert not any(b.process == "apic_timer" and "smp_mb" in b.text for b in t.actions[inc:i])
    loop = t.states[t.loop_start:]
    assert all(s.get("vcpu.state") == "INTERRUPTIBLE" and s.get("pending") == 1 and s.get("owed") for s in loop)
    assert dict(t.states[-1].pcs)["vcpu"] == "asleep"
    assert {b.process for b in t.actions[t.loop_start:]} == {"apic_timer", "apic_timer_expiry"}


def test_the_lkmm_holds_is_for_histories_of_any_length():
    """waker_lkmm keeps 6 stores per location, where no store ever waits for a full
    history; with the default 2 some do, and the verdict would hold only up to 2."""
    _, v = run("waker_lkmm")
    assert v.store_buffer == 6 and v.stats.buffer_full_states == 0
    o, v2 = run("waker_lkmm", store_buffer=2)
    assert o.verdict is Verdict.HOLDS and v2.stats.buffer_full_states > 0


def test_x86_is_saved_by_the_locked_increment():
    """Under x86-TSO the bare swait_active() is safe because atomic_inc is LOCK-prefixed
    (it drains the store buffer): with a plain store of `pending` instead, the same
    waker loses the timer under tso too."""
    text = Path(MODEL).read_text()
    t5 = "atomic_inc(pending);               // T5"
    assert text.count(t5) == 1
    plain = parse(text.replace(t5, "WRITE_ONCE(pending, 1);            // T5"), MODEL)
    assert run("waker_no_mb_tso")[0].verdict is Verdict.HOLDS
    assert run("waker_no_mb_tso", spec=plain)[0].verdict is Verdict.VIOLATED
    assert run("waker_tso", spec=plain)[0].verdict is Verdict.HOLDS  # the smp_mb() orders it


def test_the_request_stand_in_is_ordered_as_set_bit():
    """WAKER_REQUEST writes kvm_make_request's set_bit() as xchg_relaxed on the bool:
    the same ordering under lkmm (unordered) and on x86 (a locked instruction)."""
    a, b = BUILTINS["xchg_relaxed"], BUILTINS["set_bit"]
    assert (a.cls, a.order, a.x86) == (b.cls, b.order, b.x86)
    for memory in ("sc", "tso"):
        assert run("waker_no_mb_tso", memory=memory, defines={"WAKER_REQUEST": "true"})[0].verdict is Verdict.HOLDS


def test_forced_to_one_memory_model_the_twins_disagree_with_their_expectations(capsys):
    args = [MODEL, "--brief", "--variant", "waker_no_mb_tso", "--variant", "waker_no_mb_lkmm", "--memory-model", "tso"]
    assert main(args) == 1
    rows, variant = {}, None
    for line in capsys.readouterr().out.splitlines():  # within 100 columns each name is above its rows
        if line.startswith("waker_no_mb_"):
            variant = line.split()[0]
        if variant and "timer_wakes_vcpu" in line.split() and variant not in rows:
            rows[variant] = line.split()[line.split().index("timer_wakes_vcpu"):]
    assert rows["waker_no_mb_lkmm"][1:4] == ["holds", "violated", "UNEXPECTED"]
    assert rows["waker_no_mb_tso"][1:4] == ["holds", "holds", "ok"]
