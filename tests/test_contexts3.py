"""Issue 27: the defects the fuzzer found in execution contexts (a notifier that blocks,
a loop inside one step that never ends) and the context state properties read."""

from __future__ import annotations

from pathlib import Path

import pytest

from agreement import compiled, language_example
from checker import model as m
from checker.base.errors import SpecError
from checker.cli import main
from checker.results.trace import Verdict
from checker.engines import liveness
from checker.engines.explicit import Limits, explore

ROOT = Path(__file__).resolve().parent.parent

NOTIFIER = """model m;
cpus 2;
var x: 0..1 = 0;
waitqueue wq;
preemptible process worker on cpu 0 {
  on sched_in { CALL }
  x = 1;
}
"""


@pytest.mark.parametrize("call, col, words", [
    ("schedule();", 17, "calls 'schedule', which blocks"),
    ("prepare_to_wait(wq);", 17, "calls 'prepare_to_wait', which changes the task's wait state"),
    ("finish_wait(wq);", 17, "calls 'finish_wait', which changes the task's wait state"),
    ("if (x == 0) { schedule(); }", 31, "calls 'schedule', which blocks"),
])
@pytest.mark.parametrize("hook", ["sched_in", "sched_out"])
def test_a_notifier_cannot_block_or_wait(tmp_path, capsys, call, col, words, hook):
    """Was a `no lowering` TypeError (schedule) or a KeyError (the task slot) traceback."""
    spec = tmp_path / "m.spec"
    spec.write_text(NOTIFIER.replace("CALL", call).replace("sched_in", hook))
    assert main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"m.spec:6:{col + len(hook) - len('sched_in')}: error:" in err
    assert words in err and "Traceback" not in err


def test_a_notifier_may_still_wake_a_task():
    text = NOTIFIER.replace("CALL", "wake_up(wq);")
    assert explore(compiled(text)).stats.complete


HANG = """model m;
var x: 0..1 = 0;
process p { atomic { while (x == 0) { skip; } } }
"""

NOTIFIER_HANG = NOTIFIER.replace("CALL", "while (x == 0) { skip; }")


@pytest.mark.parametrize("text, where", [(HANG, "line 3, col 29"), (NOTIFIER_HANG, "line 6, col 24")])
def test_a_loop_that_never_ends_inside_one_step_is_a_model_error_at_the_loop(text, where):
    """Was a search that never ended: the step function looped for ever."""
    ex = explore(compiled(text), workers=1)
    assert ex.model_error is not None
    assert f"the loop whose `while` condition is at {where} comes back to a state it was in: it never ends" in ex.model_error.message
    assert not ex.stats.complete


def test_a_loop_inside_one_step_that_ends_is_no_error():
    text = """model m;
var x: 0..7 = 0;
var done: bool = false;
process p { atomic { while (x < 7) { x = x + 1; } done = true; } }
final counted: x == 7 && done;
"""
    ex = explore(compiled(text), workers=1)
    assert ex.model_error is None and ex.stats.complete and not ex.counterexamples


def test_a_loop_that_never_ends_is_reported_by_the_command_line(tmp_path, capsys):
    spec = tmp_path / "m.spec"
    spec.write_text(HANG)
    assert main([str(spec), "--workers", "1"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # the message wraps
    assert "(model error)" in out and "it never ends" in out


# ---- the context state, read by properties with the names traces print

STATE = """model state;
cpus 2;
preemptions 1;
var x: 0..1 = 0;
interrupt ipi[2] { x = 1; }
hrtimer t on cpu 1 { x = 0; }
interrupt dev on cpu 0 { skip; }
preemptible process worker on cpu 0 {
  preempt_disable();
  send_IPI(1, ipi);
  hrtimer_start(t);
  raise_irq(dev);
  preempt_enable();
}
"""

CONTEXT_MODELS = ["models/timer_migration.spec", "models/hv_timer_preempt.spec", "models/vcpu_preempted_kick.spec"]


def _initial_reads(cm) -> str:
    """Every context slot of the initial state as `name == value`, named as traces print it."""
    model = cm.program.model
    user = {g.name for g in model.globals if g.name not in _hidden(model)}
    s = cm.program.initial_states[0]
    terms = []
    for k, sl in enumerate(cm.program.layout.slots):
        local = sl.var.split(".", 1)[1] if sl.process and sl.var else None
        if sl.kind.value != "var" or sl.var in user or (sl.process and local not in ("cpu",) + CONTEXT_LOCALS):
            continue
        if isinstance(sl.type, m.ArrayT) or sl.name.endswith("_expiry"):
            continue
        value = ("true" if s[k] else "false") if isinstance(sl.type, m.BoolT) else str(s[k])
        terms.append(f"{sl.name} == {value}")
    irqs = [p for p in model.processes if p.context and p.context.kind is m.ContextKind.INTERRUPT]
    for h in irqs:
        names = [h.instance_name(i) for i in range(h.instances)]
        terms += [f"{n}@{m.IRQ_IDLE}" for n in names]
    return " && ".join(terms)


def _hidden(model) -> set[str]:
    procs = [p.name for p in model.processes]
    return set(m.CONTEXT_GLOBALS) | {m.pending_name(p) for p in procs} | {m.armed_name(p) for p in procs}


CONTEXT_LOCALS = m.CONTEXT_LOCALS


@pytest.mark.parametrize("path", CONTEXT_MODELS + ["STATE"])
def test_every_context_slot_a_trace_prints_is_readable_by_that_name(path):
    """The initial state's context slots and handler labels, written as the trace prints
    them, make a `reachable` condition that resolves and is reached (at the initial state)."""
    text = STATE if path == "STATE" else (ROOT / path).read_text()
    reads = _initial_reads(compiled(text))
    assert "curr[0] ==" in reads and "irqs_off[0] == false" in reads and ".preempt_count == 0" in reads
    handlers = [p for p in compiled(text).program.model.processes
                if p.context and p.context.kind is m.ContextKind.INTERRUPT]
    assert ("@end_irq" in reads) is bool(handlers)
    cm = compiled(text + f"\nreachable probe_initial: {reads};\n")
    ex = explore(cm, Limits(max_depth=0))
    assert "probe_initial" in ex.counterexamples  # reached: its negation fails at once
    assert ex.counterexamples["probe_initial"].trace.length == 0


@pytest.mark.parametrize("prop, violated", [
    ("invariant count_bounded: worker.preempt_count <= 1;", False),
    ("invariant never_pending: !pending_ipi[1];", True),
    ("invariant ipi_idle: ipi[1]@end_irq;", True),
    ("invariant no_handler_with_irqs_off: !(in_irq[0] && irqs_off[0]);", False),
    ("final nothing_in_flight: !pending_ipi[0] && !pending_ipi[1] && !pending_dev && !armed_t;", False),
    ("invariant kept_while_disabled: worker.preempt_count == 1 -> curr[worker.cpu] == 1;", False),
    ("invariant never_preempted: preemptions == 0;", True),
    ("invariant dev_never_pending_with_preemption_on: pending_dev -> worker.preempt_count == 1;", True),
    ("property ipi_taken: always eventually (!pending_ipi[1] && ipi[1]@end_irq);", False),
])
def test_properties_over_context_state_get_their_verdicts(prop, violated):
    cm = compiled(STATE + prop + "\n")
    name = prop.split()[1].rstrip(":")
    ex = explore(cm, graph=prop.startswith("property"))
    assert ex.stats.complete
    if prop.startswith("property"):
        assert (liveness.check(cm, ex)[0][name].verdict is Verdict.VIOLATED) is violated
        return
    assert (name in ex.counterexamples) is violated


@pytest.mark.parametrize("text, words", [
    (STATE.replace("  preempt_enable();", "  if (pending_dev) { x = 0; }\n  preempt_enable();"),
     "'pending_dev' is execution-context state: properties read it, code does not"),
    (STATE + "invariant a: worker.asleep;", "'worker.asleep': thread 'worker' never calls schedule()"),
    (STATE + "invariant a: worker.in_region;", "thread 'worker' has no `preemptible { ... }` region"),
    (STATE + "invariant a: pending_t2;", "unknown name 'pending_t2'"),
    (STATE + "invariant a: dev@end_ir;", "end_irq"),
])
def test_context_state_read_where_it_does_not_exist_is_an_error(text, words):
    with pytest.raises(SpecError) as e:
        compiled(text)
    assert words in f"{e.value} {e.value.hint}"


# ---- contexts under x86-TSO: against the same accesses without contexts

def _outcomes(text: str, names: tuple[str, ...]) -> set[tuple[int, ...]]:
    """The values of `names` in the final states an exhaustive search reaches."""
    cm = compiled(text + "final settled: true;\n")  # a `final` makes the final-state test
    ex = explore(cm, Limits(check_deadlock=False), graph=True)
    assert ex.stats.complete and ex.model_error is None
    slot = {sl.name: k for k, sl in enumerate(cm.program.layout.slots)}
    return {tuple(s[slot[n]] for n in names) for s in ex.graph.states if cm.final_state(s)}


VARS = "var x: 0..1 = 0; var y: 0..1 = 0; var z: 0..1 = 0; var w: 0..1 = 0;\n" \
       "var r: 0..1 = 0; var a: 0..1 = 0; var b: 0..1 = 0; var c: 0..1 = 0;\n"
OTHER_CPU = "process q on cpu 1 { y = 1; a = x; b = z; c = w; }\n"

HANDLER_TSO = "model h;\ncpus 2;\nmemory tso;\n" + VARS + """
interrupt h on cpu 0 { r = y; w = 1; }
process p on cpu 0 { x = 1; raise_irq(h); z = 1; }
""" + OTHER_CPU

# the handler's accesses where the thread takes the interrupt, with the drains x86 does
# there: the IPI is sent after a fence, entry drains the buffer, IRET is serializing
INLINED_TSO = "model h;\ncpus 2;\nmemory tso;\n" + VARS + """
process p on cpu 0 { x = 1; smp_mb(); r = y; w = 1; smp_mb(); z = 1; }
""" + OTHER_CPU


def test_a_handler_under_tso_gives_the_outcomes_of_its_accesses_inlined():
    names = ("x", "y", "z", "w", "r", "a", "b", "c")
    with_handler = _outcomes(HANDLER_TSO, names)
    assert with_handler == _outcomes(INLINED_TSO, names)
    assert (1, 1, 1, 1, 0, 0, 0, 0) in with_handler  # store buffering: r = a = 0 stays possible
    assert not any(b == 1 and c == 0 for *_, b, c in with_handler)  # w is visible before z


MIGRATES_TSO = "model mig;\ncpus 2;\nmemory tso;\npreemptions 2;\n" + VARS + """
preemptible process p on cpu 0 { x = 1; y = 1; z = 1; }
process q { a = z; b = y; c = x; }
"""


def test_migration_under_tso_adds_no_outcome_that_program_order_forbids():
    """The thread may move between its stores: the reader still never sees a later store
    without the earlier ones (kernel/sched/core.c: a migrated task keeps program order)."""
    names = ("a", "b", "c")
    moved = _outcomes(MIGRATES_TSO, names)
    pinned = _outcomes(MIGRATES_TSO.replace("preemptible process p on cpu 0", "process p")
                       .replace("cpus 2;\n", "").replace("preemptions 2;\n", ""), names)
    assert moved <= pinned and (1, 1, 1) in moved and (0, 0, 0) in moved
    assert (1, 0, 0) not in moved and (1, 1, 0) not in moved


@pytest.mark.parametrize("text", [HANDLER_TSO, MIGRATES_TSO, STATE.replace("cpus 2;", "cpus 2;\nmemory tso;"),
                                  "CANCEL", "UNPINNED"], ids=["handler", "migration", "state", "cancel", "unpinned"])
def test_spin_agrees_on_contexts_under_tso(text, tmp_path):
    """The Promela twin of a context model under tso (the same lowering, its own back
    end): pan's state count and verdicts are ours."""
    from test_promela import agreement, needs_spin
    needs_spin()
    if text == "CANCEL":  # defined below
        text = CANCEL + "variant restart { RESTART = true; }\nvariant restart_tso { RESTART = true; memory tso; }\n"
    if text == "UNPINNED":
        text = UNPINNED.replace("MEMORY", "") + "variant tso { memory tso; }\n"
    spec = tmp_path / "m.spec"
    spec.write_text(text)
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [] and all(not d for d in differences.values()), differences


@pytest.mark.parametrize("path, variant", [(p, v) for p in CONTEXT_MODELS for v in ("base_tso", "fixed_tso")
                                           if v != "fixed_tso" or "kick" not in p]
                         + [("models/vcpu_preempted_kick.spec", "entry_mb_tso")])
def test_context_models_under_tso_por_agrees(path, variant):
    """Partial-order reduction sees the drains, entries and switches as the visible
    steps they are: the same violations, with the same shortest traces."""
    from checker.engines.reduce import plan
    cm = compiled((ROOT / path).read_text(), variant, path)
    reduced, full = explore(cm, reduction=plan(cm)), explore(cm)
    assert reduced.stats.complete and full.stats.complete
    assert {k: c.trace.length for k, c in reduced.counterexamples.items()} == \
        {k: c.trace.length for k, c in full.counterexamples.items()}


@pytest.mark.parametrize("text", [HANDLER_TSO, MIGRATES_TSO], ids=["handler", "migration"])
def test_oracle_models_under_tso_por_keeps_the_final_states(text):
    from checker.engines.reduce import plan
    cm = compiled(text + "final settled: true;\n")
    reduced = explore(cm, Limits(check_deadlock=False), graph=True, reduction=plan(cm))
    finals = {s for s in reduced.graph.states if cm.final_state(s)}
    full = explore(cm, Limits(check_deadlock=False), graph=True)
    assert finals == {s for s in full.graph.states if cm.final_state(s)}


# ---- hrtimer_cancel() and hrtimer_try_to_cancel() as values

CANCEL = """model cancel;
cpus 2;
const RESTART = false;
var stage: 0..2 = 0;
var tried: -1..1 = 0;
var cancelled: 0..1 = 0;
hrtimer t on cpu 0 { stage = 1; mid: stage = 2; if (RESTART) hrtimer_start(t); }
process vcpu on cpu 1 {
  hrtimer_start(t);
  tried = hrtimer_try_to_cancel(t);
  cancelled = hrtimer_cancel(t);
}
reachable callback_running: tried == -1;
reachable dequeued: tried == 1;
reachable already_run: tried == 0;
invariant dequeued_never_runs: tried == 1 -> stage == 0 || RESTART;
final running_then_finished: tried == -1 -> stage == 2;
final cancel_finds_it_requeued: cancelled == 1 -> RESTART && tried == -1;
final nothing_left_queued: !armed_t && !pending_t;
"""


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
@pytest.mark.parametrize("restart", [False, True])
def test_hrtimer_cancel_values(memory, restart):
    """-1 while the callback runs, 1 for a timer still queued (its callback then never
    runs), 0 once it has run; hrtimer_cancel waits out a running callback and gives 1
    only when that callback re-armed the timer (kernel/time/hrtimer.c)."""
    text = CANCEL.replace("cpus 2;", f"cpus 2;\nmemory {memory};").replace("RESTART = false", f"RESTART = {str(restart).lower()}")
    reach = {"callback_running", "dequeued", "already_run"}
    ex = explore(compiled(text))
    assert ex.stats.complete and ex.model_error is None
    assert set(ex.counterexamples) == reach  # every `reachable` reached, nothing else violated
    requeued = compiled(text + "reachable requeued: cancelled == 1;\n")
    assert ("requeued" in explore(requeued).counterexamples) is restart


def test_hrtimer_cancel_value_only_in_an_assignment():
    with pytest.raises(SpecError) as e:
        compiled(CANCEL.replace("cancelled = hrtimer_cancel(t);", "if (hrtimer_cancel(t) == 1) cancelled = 1;"))
    assert "changes the context: call it as a statement" in str(e.value)
    assert "`r = hrtimer_cancel(...);`" in e.value.hint


# ---- unpinned hrtimers: the callback runs on the CPU the kernel queued the timer on

UNPINNED = """model unpinned;
cpus 2;
MEMORY
var ran_on: 0..2 = 0;          // 1 + the CPU the callback ran on
var busy0: bool = false;       // the vCPU thread's CPU is running its own code
var tried: -1..1 = 0;
hrtimer apic_timer[2] { ran_on = smp_processor_id() + 1; mid: skip; }
process vcpu on cpu 0 {
  hrtimer_start(apic_timer);
  local_irq_disable();
  busy0 = true;
  busy0 = false;
  local_irq_enable();
  tried = hrtimer_try_to_cancel(apic_timer);
}
reachable on_this_cpu: ran_on == 1;
reachable on_a_housekeeping_cpu: ran_on == 2;
reachable runs_while_this_cpu_is_busy: busy0 && apic_timer[1]@mid;
invariant never_inside_irqs_off_here: !(busy0 && apic_timer[0]@mid);
reachable cancelled_while_running_elsewhere: tried == -1 && ran_on == 2;
final fired_or_dequeued: (tried == 1) == (ran_on == 0) && !armed_apic_timer && !pending_apic_timer[0];
"""


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
def test_an_unpinned_hrtimer_runs_its_callback_on_either_cpu(memory):
    text = UNPINNED.replace("MEMORY", f"memory {memory};")
    ex = explore(compiled(text))
    assert ex.stats.complete and ex.model_error is None
    assert set(ex.counterexamples) == {"on_this_cpu", "on_a_housekeeping_cpu", "runs_while_this_cpu_is_busy",
                                       "cancelled_while_running_elsewhere"}
    pinned = text.replace("hrtimer apic_timer[2]", "hrtimer apic_timer on cpu 0").replace("apic_timer[1]@", "apic_timer@") \
        .replace("apic_timer[0]@", "apic_timer@").replace("pending_apic_timer[0]", "pending_apic_timer")
    ex = explore(compiled(pinned))
    assert set(ex.counterexamples) == {"on_this_cpu"}  # pinned to the vCPU's CPU: never elsewhere, never in irqs-off


@pytest.mark.parametrize("text", ["CANCEL", "UNPINNED"])
def test_the_new_context_constructs_agree_between_explicit_and_bmc(text):
    """Z3's bounded model checking runs the same lowering through its own encoding: the
    same violations at the same shortest depths (each `reachable P` as `invariant !(P)`,
    which bmc checks)."""
    from agreement import bmc_depths
    text = {"CANCEL": CANCEL, "UNPINNED": UNPINNED.replace("MEMORY", "")}[text]
    lines = [f"invariant not_{ln[len('reachable '):].replace(': ', ': !(', 1)[:-1]});" if ln.startswith("reachable ")
             else ln for ln in text.splitlines()]
    cm = compiled("\n".join(lines) + "\n")
    depths = {k: c.trace.length for k, c in explore(cm).counterexamples.items()}
    assert len([k for k in depths if k.startswith("not_")]) >= 3
    got, _, _ = bmc_depths(cm, max(depths.values()) + 1)
    assert got == depths


# ---- guest mode: a host interrupt is a VM exit, a posted vector is not

def _guest_model() -> str:
    """The guest-mode example of LANGUAGE.md, as the doc runs it."""
    return language_example("guest_mode_exits")


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
def test_guest_mode_exit_and_posted_vector(memory):
    text = _guest_model().replace("cpus 2;", f"cpus 2;\nmemory {memory};")
    ex = explore(compiled(text))
    assert ex.stats.complete and set(ex.counterexamples) == {"posted_in_guest", "exited_for_the_kick"}
    ex = explore(compiled(text, "no_kick"))
    assert set(ex.counterexamples) == {"request_serviced", "posted_in_guest"}
    # the same vector not declared posted: a host interrupt like any other, it exits
    plain = text.replace("interrupt posted_intr[2] posted", "interrupt posted_intr[2]")
    ex = explore(compiled(plain))
    assert {"posted_never_exits", "exited_for_the_kick"} <= set(ex.counterexamples)


def test_a_guest_with_no_interrupt_runs_for_ever_as_a_valid_end():
    text = """model g;
cpus 1;
var entered: bool = false;
process vcpu on cpu 0 { local_irq_disable(); entered = true; guest_enter(); entered = false; }
final still_in_guest: entered && guest_mode[0] && vcpu.exit_reason == 0;
"""
    ex = explore(compiled(text))
    assert ex.stats.complete and not ex.counterexamples  # no deadlock: the guest runs on


def test_spin_and_bmc_agree_on_guest_mode(tmp_path):
    from agreement import bmc_depths
    from test_promela import agreement, needs_spin
    text = _guest_model()
    cm = compiled(text, "no_kick")
    depths = {k: c.trace.length for k, c in explore(cm).counterexamples.items() if k == "request_serviced"}
    assert depths
    needs_spin()
    spec = tmp_path / "m.spec"
    spec.write_text(text + "variant tso { memory tso; }\n")
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [] and all(not d for d in differences.values()), differences
    assert bmc_depths(compiled(text.replace("final request_serviced: serviced;", "invariant never_serviced: !serviced;")),
                      30)[0].keys() >= {"never_serviced"}
