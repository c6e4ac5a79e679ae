"""Partial-order reduction (engines/reduce/) on models with execution contexts: the
reduced search reaches the final states and verdicts of the unreduced one, on generated
context programs (hypothesis, small) under sc and x86-TSO and on the shipped context
models forced to each (and to lkmm, where the reduction is lazy propagation), and a planted footprint that leaves out what makes a thread wait
for an interrupt (its guard's reads of the context state) is caught. Tiny context models, each with a violation
the reduced search must keep, catch a conditional read dropped, the cycle proviso lost
(the ignoring problem: a loop spun for ever while another actor's step waits) and the
consumption exemption granted where its conditions fail.

The reduction must treat a raise as dependent on the target CPU's thread steps: a
pending, unmasked interrupt is taken before that CPU's next process-context step
(LANGUAGE.md, "When a handler runs"), so a raise disables them; unless interrupts are
off there and stay so, which the state-dependent footprints see (engines/reduce/)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agreement import compiled
from checker.engines import reduce
from checker.engines.explicit import Limits, explore
from checker.engines.reduce import footprint
from checker.pipeline import Options, check_spec, load

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("x", "y", "r", "a", "b")
CONTEXT_MODELS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "models").glob("*.spec")
                        if any(line.startswith("cpus ") for line in p.read_text().splitlines()))


def program(seed: int, memory: str) -> str:
    """A small context program: two CPUs, a handler per CPU, a thread on each, a device
    without a CPU; raises from each, shared variables, interrupts masked around some
    statements, the second thread sometimes preemptible."""
    rng = random.Random(seed)

    def stmts(n: int, raiser: bool, irqs: bool) -> str:
        out = []
        for _ in range(n):
            k = rng.randrange(6 if raiser else 4)
            v, w = rng.choice(("x", "y")), rng.choice(("r", "a", "b"))
            out.append([f"{v} = 1;", f"{w} = {v};", f"if ({v} == 1) {w} = 1;",
                        "skip;", f"send_IPI({rng.randrange(2)}, h);", f"{v} = 1; send_IPI({rng.randrange(2)}, h);"][k])
        if irqs and n > 1 and rng.random() < 0.5:
            i = rng.randrange(n - 1)
            out[i] = "local_irq_disable(); " + out[i]
            out[i + 1] += " local_irq_enable();"
        return " ".join(out)

    pre = rng.random() < 0.3
    return (f"model gen;\ncpus 2;\nmemory {memory};\n" + ("preemptions 1;\n" if pre else "")
            + "".join(f"var {n}: 0..1 = 0;\n" for n in NAMES)
            + f"interrupt h[2] {{ {stmts(rng.randrange(1, 3), False, False)} }}\n"
            + f"process p on cpu 0 {{ {stmts(rng.randrange(1, 4), True, True)} }}\n"
            + ("preemptible " if pre else "") + f"process q on cpu 1 {{ {stmts(rng.randrange(1, 3), True, True)} }}\n"
            + f"process dev {{ {stmts(rng.randrange(1, 3), True, False)} }}\n")


def finals(cm, por: bool) -> tuple[set, int]:
    """The shared values of the states where nothing can move (the reduction keeps every
    one: no property makes a step visible here), with the reduction or without, and how
    many states it expanded with an ample set."""
    red = reduce.plan(cm, True, "off") if por else None
    ex = explore(cm, Limits(check_deadlock=False), graph=True, reduction=red)
    g = ex.graph
    assert ex.stats.complete and ex.model_error is None and g.expanded == len(g.states)
    slot = {sl.name: k for k, sl in enumerate(cm.program.layout.slots)}
    return ({tuple(s[slot[n]] for n in NAMES) for i, s in enumerate(g.states) if g.first[i] == g.first[i + 1]},
            ex.stats.ample_states or 0)


def agree(seed: int, memory: str) -> tuple[bool, int]:
    cm = compiled(program(seed, memory))
    full, _ = finals(cm, False)
    got, ample = finals(cm, True)
    return got == full, ample


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10 ** 6), st.sampled_from(["sc", "tso"]))
def test_reduced_context_programs_reach_the_unreduced_final_states(seed, memory):
    same, _ = agree(seed, memory)
    assert same, program(seed, memory)


SEEDS = range(40)


def test_the_reduction_has_ample_sets_to_take_in_context_programs():
    """Not vacuous: nearly every one of these programs has states expanded with an ample
    set (a seed list shared with the planted fault's test)."""
    some = SEEDS[:20]
    assert sum(agree(s, "sc")[1] > 0 for s in some) >= 3 * len(some) // 4


# the handler reads what the thread writes with interrupts off: it runs before the
# thread's local_irq_disable() (r = 0) or after its local_irq_enable() (r = 1)
MASKED = """model masked;
cpus 2;
var x: 0..1 = 0; var y: 0..1 = 0; var r: 0..1 = 0; var a: 0..1 = 0; var b: 0..1 = 0;
interrupt h[2] { r = x; }
process p on cpu 0 { local_irq_disable(); x = 1; local_irq_enable(); }
process dev { send_IPI(0, h); }
"""


def test_a_thread_that_masks_interrupts_keeps_its_outcomes_reduced_and_the_handler_still_runs_first():
    full, _ = finals(compiled(MASKED), False)
    got, ample = finals(compiled(MASKED), True)
    assert got == full == {(1, 0, 0, 0, 0), (1, 0, 1, 0, 0)}
    # with interrupts off, p's steps do not read pending_h[0] (their guard's
    # `irqs_off[0] || !pending_h[0]`), and h[0] cannot enter while p keeps them off: p is
    # an ample set of its own in the states where the IPI is no longer in flight (state-
    # dependent footprints; with static ones the delivery's write of pending_h[0] kept p
    # from ever being one)
    assert ample == 3


def test_a_footprint_blind_to_the_context_state_is_caught(monkeypatch):
    """The planted fault: footprints leave out the context state a thread step's guard
    reads (interrupts pending, masked, running; the CPU's current thread), so a raise
    and a handler's entry look independent of the target CPU's thread. The reduced search then lets local_irq_disable() go first
    for good and misses r = 0, and some generated program misses a final state."""
    slot_reads = footprint.Collector.expr

    def blind(self, x, inst):
        if isinstance(x, (footprint.m.Var, footprint.m.Elem)) and (x.sym.name in ("in_irq", "irqs_off", "curr")
                                                                     or x.sym.name.startswith(("pending_", "in_flight_"))):
            return
        slot_reads(self, x, inst)

    monkeypatch.setattr(footprint.Collector, "expr", blind)
    assert finals(compiled(MASKED), True)[0] == {(1, 0, 1, 0, 0)}
    # with remote raises in flight, the first 119 seeds happen to miss nothing when blind
    # (a raise now writes in_flight_H, and only the delivery writes pending_H); these do
    assert any(not agree(s, "sc")[0] for s in (119, 132))


@pytest.mark.parametrize("fault", ["writers", "reach"])
def test_a_state_dependent_footprint_that_trusts_a_literal_too_far_is_caught(monkeypatch, fault):
    """Planted faults in the state-dependent footprints: a literal's slot relied on
    (the delivery's `in_flight_h[0]` while nothing is in flight) without its writers
    joining the cluster, or with every writer taken to be past its last write. The device
    may still raise, so before p's local_irq_disable() the reduced search must let the
    IPI arrive and the handler run (r = 0); with either fault it lets p go first for
    good, and a generated program misses a final state too."""
    real = footprint._dynamic

    def planted(an, *args):
        real(an, *args)
        if fault == "writers":
            an.writers = {}
        else:
            an.reach = {key: frozenset() for key in an.reach}

    monkeypatch.setattr(footprint, "_dynamic", planted)
    assert finals(compiled(MASKED), True)[0] == {(1, 0, 1, 0, 0)}
    assert not agree(15, "sc")[0]


# under lkmm the reduction is lazy propagation (--no-por: eager); the small bases only
SMALL = ("models/csd_wait_ipi.spec", "models/hv_timer_preempt.spec", "models/timer_migration.spec")


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
def test_shipped_context_models_keep_their_verdicts_with_the_reduction(memory):
    """Each context model's base forced to sc, x86-TSO and (the small ones) lkmm,
    reduced and not: the same verdicts."""
    for path in CONTEXT_MODELS if memory != "lkmm" else SMALL:
        spec = load(str(ROOT / path))
        got = []
        for por in (False, True):
            result = check_spec(spec, Options(variants=("base",), memory=memory, por=por, symmetry="off",
                                              progress=False, use_expectations=False, coverage=False))
            got.append({o.property: o.verdict for o in result.variants[0].outcomes})
        assert got[0] == got[1], path


def test_the_debugging_aid_says_what_keeps_ample_sets_out(tmp_path, capsys):
    """scripts/por_why.py on the masked-IPI model: the only state-by-state reason left
    is the handler's exit, the back edge of its loop (the cycle proviso), in the two
    states where it runs; the delivery's loop, which consumes what the device gives once,
    is no back edge; the counts are the reduced search's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("por_why", ROOT / "scripts" / "por_why.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    f = tmp_path / "masked.spec"
    f.write_text(MASKED)
    assert mod.main([str(f)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{f} base: 16 states, 3 expanded with an ample set", out
    assert out.splitlines()[1:] == ["      2  h[0]: step `irq exit: h` closes a loop"], out
    assert mod.main([str(tmp_path / "none.spec")]) == 2


# Tiny context models where a reduction that trusts too much misses a violation.
# A vCPU polls `stop || ready`: where stop is false the poll reads ready (a conditional
# read), so the host's `ready = false` must be tried first too; it leaves the vCPU stuck
# for good (a deadlock).
POLL = """model poll;
cpus 2;
var stop: bool = false;
var ready: bool = true;
process vcpu on cpu 0 { await stop || ready; }
process host on cpu 1 { ready = false; }
"""
# The ignoring problem: a vCPU on CPU 0 spins for ever with interrupts toggled, steps of
# its own that nothing else reads; the IPI to CPU 1 and its handler, which breaks the
# invariant, are expanded only because the spin's loop closes by a back edge (the cycle
# proviso).
SPIN = """model spin;
cpus 2;
var done: bool = false;
interrupt h[2] { done = true; }
process dev { send_IPI(1, h); }
process vcpu on cpu 0 { var t: 0..1 = 0; loop { local_irq_disable(); t = 1 - t; local_irq_enable(); } }
invariant not_done: !done;
"""
# Two one-step loops that each consume their own flag and give the other's back: each
# writer of the other's flag has a consuming loop itself, so neither loop is exempt from
# the cycle proviso, and the device's step is still taken.
PING = """model ping;
cpus 2;
var a: bool = true; var b: bool = false; var bad: bool = false;
process p on cpu 0 { loop { atomic { await a; a = false; b = true; } } }
process q on cpu 1 { loop { atomic { await b; b = false; a = true; } } }
process dev { bad = true; }
invariant never_bad: !bad;
"""
# A one-step loop that consumes its flag and, in a branch, gives it back at once (an
# expiry that re-arms itself): no consumption, a back edge like any other. Until this
# test, `_consuming` read only the body's top-level assignments and exempted it, so the
# reduced search spun on p for ever and never ran dev (`never_bad` held).
REARM = """model rearm;
cpus 2;
var go: bool = true; var keep: bool = true; var bad: bool = false;
process p on cpu 0 { loop { atomic { await go; go = false; if (keep) { go = true; } } } }
process dev { bad = true; }
invariant never_bad: !bad;
"""
# A one-pc loop that consumes its flag in one alternative and gives it back in another:
# its actor writes the flag twice, so the loop is no consumption (nobody else has to give
# the flag back, and nobody does).
SELF_FEED = """model self_feed;
cpus 2;
var go: bool = true; var bad: bool = false;
process p on cpu 0 { loop { choose { atomic { await go; go = false; } } or { atomic { await !go; go = true; } } } }
process dev { bad = true; }
invariant never_bad: !bad;
"""
TINY = {"poll": (POLL, "deadlock"), "spin": (SPIN, "not_done"), "ping": (PING, "never_bad"),
        "rearm": (REARM, "never_bad"), "self_feed": (SELF_FEED, "never_bad")}


def verdicts(text: str, por: bool) -> dict:
    from checker.front.parse import parse

    result = check_spec(parse(text, "m.spec"), Options(variants=("base",), por=por, symmetry="off", progress=False,
                                                       use_expectations=False, coverage=False))
    return {o.property: o.verdict.value for o in result.variants[0].outcomes}


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_context_models_keep_their_violations_with_the_reduction(name):
    text, prop = TINY[name]
    full = verdicts(text, False)
    assert full[prop] == "violated"
    assert verdicts(text, True) == full


def test_a_conditional_read_dropped_is_caught(monkeypatch):
    """The planted fault: a conditional read (`lit || e` in a guard) taken as no read
    at all, even where lit is false: the poll looks independent of the host and goes
    first for good, and the deadlock is missed."""
    real = footprint._dynamic

    def planted(an, *args):
        real(an, *args)
        an.step_needs = {key: tuple((mask, ()) for mask, _ in row) for key, row in an.step_needs.items()}

    monkeypatch.setattr(footprint, "_dynamic", planted)
    assert verdicts(POLL, True)["deadlock"] == "holds"


@pytest.mark.parametrize("fault", ["every loop consumes", "no back edges"])
def test_a_cycle_proviso_lost_for_context_models_is_caught(monkeypatch, fault):
    """The planted faults: `_consuming` exempting every loop from the cycle proviso, or
    the dynamic path ignoring back edges. The reduced search then spins on the vCPU for
    ever and never sends the IPI."""
    if fault == "every loop consumes":
        monkeypatch.setattr(footprint, "_consuming",
                            lambda an, gotos, closes: {key: (False,) * len(row) for key, row in closes.items()})
    else:
        real = footprint._dynamic

        def planted(an, *args):
            real(an, *args)
            an.step_bad = {key: tuple("" if b == "closes a loop" else b for b in row)
                           for key, row in an.step_bad.items()}

        monkeypatch.setattr(footprint, "_dynamic", planted)
    assert verdicts(SPIN, True)["not_done"] == "holds"
    assert verdicts(PING, True)["never_bad"] == "holds"
