"""Issue 27: exits the guest makes itself (`guest G of T { ... vmexit(HLT); }`). The
guest's steps run only in guest mode on its thread's CPU, with no interrupt due; its
exits return the thread with the reason readable; under tso and lkmm its accesses act
as the same accesses inlined in the thread between entry and exit (with the fences the
checker puts at entry and exit under tso: LANGUAGE.md, "Exits the guest makes")."""

from __future__ import annotations

import pytest

from agreement import compiled, language_example
from checker.base.errors import SpecError
from checker.cli import main
from checker.engines.explicit import Limits, explore



def _doc_model() -> str:
    return language_example("guest_halts")


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
def test_the_guest_halts_and_a_posted_vector_reaches_it_in_guest_mode(memory):
    text = _doc_model().replace("cpus 2;", f"cpus 2;\nmemory {memory};")
    ex = explore(compiled(text))
    # a `reachable` holds where the search finds its witness (a counterexample of its
    # negation): the guest's HLT exit is seen; a posted vector never exits
    assert ex.stats.complete and ex.model_error is None
    assert set(ex.counterexamples) == {"exited_on_hlt", "taken_in_guest"}
    ex = explore(compiled(text, "hlt_in_guest"))
    assert set(ex.counterexamples) == {"taken_in_guest"}


# a vCPU that enters the guest twice, a guest that checks it runs only in guest mode, and
# a host interrupt that forces an exit; the IPI comes from CPU 1, so it is in flight
# until its delivery and the guest may still run meanwhile (`early`), as on hardware
LOOP = """model g;
cpus 2;
var inside: bool = false;    // the thread is between its guest_enter() and the exit
var sent: bool = false;      // the kick is on its way (set with the IPI, in one step)
var wrong: bool = false;     // the guest ran outside guest mode
var early: bool = false;     // the guest ran after the kick was sent, before its delivery
var hlt: 0..2 = 0;
interrupt reschedule[2] { sent = false; }
process vcpu on cpu 0 {
  var n: 0..2 = 0;
  while (n < 2) {
    local_irq_disable();
    inside = true;
    guest_enter();
    inside = false;
    if (vm_exit_by(HLT)) hlt = hlt + 1;
    local_irq_enable();
    n = n + 1;
  }
}
guest os of vcpu {
  loop {
    choose {
      atomic { if (!inside) wrong = true; if (sent) early = true; }
    } or {
      atomic { if (!inside) wrong = true; if (sent) early = true; vmexit(HLT); }
    }
  }
}
process kicker on cpu 1 { atomic { sent = true; send_IPI(0, reschedule); } }
invariant only_in_guest_mode: !wrong;
reachable kicked_out: vcpu.exit_reason == 1 && !guest_mode[0];
reachable halted_twice: hlt == 2;
reachable halted_then_kicked: vcpu@end && hlt == 1;
reachable in_guest_mode: guest_mode[0] && os@end;
reachable ran_with_kick_in_flight: early && in_flight_reschedule[0];
final both_exits_seen: vcpu@end && inside == false;
"""


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
def test_a_guest_runs_only_in_guest_mode_and_a_host_interrupt_still_exits(memory):
    ex = explore(compiled(LOOP.replace("cpus 2;", f"cpus 2;\nmemory {memory};")))
    assert ex.stats.complete and ex.model_error is None  # the invariant and the final hold, no deadlock
    assert set(ex.counterexamples) == {"kicked_out", "halted_twice", "halted_then_kicked", "in_guest_mode",
                                       "ran_with_kick_in_flight"}


def test_the_trace_prints_the_exit_the_guest_made(tmp_path, capsys):
    spec = tmp_path / "g.spec"
    spec.write_text(LOOP + "invariant never_halts: hlt == 0;\n")
    assert main([str(spec)]) == 1
    out = capsys.readouterr().out
    trace = out[out.index("Counterexample"):]
    assert "os" in trace and "vmexit(HLT)" in trace and "VM exit" in trace
    assert "vmexit_vcpu = 2" in trace and "vcpu.exit_reason = 2" in trace  # interrupts first, then HLT


# ---- under tso and lkmm: the guest's accesses as the same accesses inlined in the thread

VARS = "var x: 0..1 = 0; var y: 0..1 = 0; var z: 0..1 = 0; var w: 0..1 = 0;\n" \
       "var r: 0..1 = 0; var a: 0..1 = 0; var b: 0..1 = 0; var c: 0..1 = 0;\n"
OTHER_CPU = "process q on cpu 1 { y = 1; a = x; b = z; c = w; }\n"
GUEST = "model gx;\ncpus 2;\nMEMORY\n" + VARS + """
process p on cpu 0 { x = 1; guest_enter(); z = 1; }
guest os of p { w = 1; r = y; vmexit(HLT); }
""" + OTHER_CPU
# tso: VM entry and the guest's exit are fences; lkmm: no barrier at either
INLINED = {"tso": "model gx;\ncpus 2;\nmemory tso;\n" + VARS
           + "process p on cpu 0 { x = 1; smp_mb(); w = 1; r = y; smp_mb(); z = 1; }\n" + OTHER_CPU,
           "lkmm": "model gx;\ncpus 2;\nmemory lkmm;\n" + VARS
           + "process p on cpu 0 { x = 1; w = 1; r = y; z = 1; }\n" + OTHER_CPU}


def _outcomes(text: str, names: tuple[str, ...]) -> set[tuple[int, ...]]:
    cm = compiled(text + "final settled: true;\n")
    ex = explore(cm, Limits(check_deadlock=False), graph=True)
    assert ex.stats.complete and ex.model_error is None
    slot = {sl.name: k for k, sl in enumerate(cm.program.layout.slots)}
    return {tuple(s[slot[n]] for n in names) for s in ex.graph.states if cm.final_state(s)}


@pytest.mark.parametrize("memory", ["tso", "lkmm"])
def test_guest_accesses_give_the_outcomes_of_the_same_accesses_inlined(memory):
    names = ("x", "y", "z", "w", "r", "a", "b", "c")
    got = _outcomes(GUEST.replace("MEMORY", f"memory {memory};"), names)
    assert got == _outcomes(INLINED[memory], names)
    assert (1, 1, 1, 1, 0, 0, 0, 0) in got  # store buffering: the guest's load passes its store
    if memory == "tso":
        assert not any(b == 1 and c == 0 for *_, b, c in got)  # the exit drains: w before z
    else:
        assert any(b == 1 and c == 0 for *_, b, c in got)  # no barrier at the exit under lkmm


def test_spin_and_bmc_agree_on_guest_exits(tmp_path):
    from agreement import bmc_depths
    from test_promela import agreement, needs_spin
    text = _doc_model()
    cm = compiled(text, "hlt_in_guest")
    assert "exited_on_hlt" not in explore(cm).counterexamples
    # bmc checks `reachable P` as `invariant !(P)`: each witness at explicit's shortest depth
    inv = "\n".join(f"invariant not_{ln[len('reachable '):].replace(': ', ': !(', 1)[:-1]});"
                    if ln.startswith("reachable ") else ln for ln in text.splitlines()) + "\n"
    want = {k: c.trace.length for k, c in explore(compiled(inv)).counterexamples.items()}
    assert set(want) == {"not_exited_on_hlt", "not_taken_in_guest"}
    assert bmc_depths(compiled(inv), max(want.values()) + 1)[0] == want
    needs_spin()
    spec = tmp_path / "m.spec"
    base = text.replace("variant hlt_in_guest { HLT_EXITING = false; } expect violated exited_on_hlt;\n", "")
    spec.write_text(base + "variant tso { memory tso; }\n")  # pan's state counts and verdicts are ours
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [] and all(not d for d in differences.values()), differences


# ---- misuse: positioned errors

HEAD = """model e;
cpus 1;
interrupt ipi on cpu 0 { skip; }
process vcpu on cpu 0 { local_irq_disable(); guest_enter(); local_irq_enable(); }
"""


@pytest.mark.parametrize("tail, line, col, words", [
    ("guest g of vcpu { vmexit(ipi); }", 5, 26, "'ipi' is an interrupt"),
    ("guest g of nobody { vmexit(HLT); }", 5, 12, "which is no thread"),
    ("process other { vmexit(HLT); }", 5, 17, "'vmexit' outside a guest"),
    ("guest g of vcpu { local_irq_disable(); }", 5, 19, "VMX non-root mode"),
    ("guest g of vcpu { skip; }\nguest h of vcpu { skip; }", 6, 7, "already has a guest"),
    ("guest g of vcpu { vmexit(HLT); }\nprocess p on cpu 0 { var b: bool = false; b = vm_exit_by(HTL); }",
     6, 58, "needs an exit reason"),
    ("guest g of vcpu { atomic { vmexit(HLT); skip; } }", 5, 28, "nothing may follow it"),
    ("interrupt h2 on cpu 0 { var b: bool = false; b = in_guest_mode(); }", 5, 50, "outside a posted interrupt"),
])
def test_misused_guest_code_is_a_positioned_error(tail, line, col, words):
    with pytest.raises(SpecError) as e:
        compiled(HEAD + tail + "\n")
    assert words in str(e.value) and (e.value.span.line, e.value.span.col) == (line, col), str(e.value)


def test_a_guest_of_a_thread_that_never_enters_the_guest_is_an_error(tmp_path, capsys):
    spec = tmp_path / "e.spec"
    spec.write_text("model e;\ncpus 1;\nprocess vcpu on cpu 0 { skip; }\nguest g of vcpu { vmexit(HLT); }\n")
    assert main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert "e.spec:4:12: error: guest 'g' of 'vcpu', which never enters the guest" in err and "^" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("memory", ["sc", "tso", "lkmm"])
def test_a_guest_halted_for_ever_in_guest_mode_is_a_deadlock(memory):
    """At a `halted` label the guest is no valid end: a lost wake-up leaves the vCPU
    halted in guest mode, which `deadlock` reports (elsewhere a guest may stop)."""
    text = language_example("halted_in_guest").replace("cpus 2;", f"cpus 2;\nmemory {memory};")
    ex = explore(compiled(text, "lost_wakeup"))
    assert ex.stats.complete and "deadlock" in ex.counterexamples
    assert not explore(compiled(text)).counterexamples
    unlabelled = explore(compiled(text.replace("halted:\n", ""), "lost_wakeup"))
    assert "deadlock" not in unlabelled.counterexamples and "woken" in unlabelled.counterexamples


def test_spin_and_bmc_agree_on_the_halted_guest(tmp_path):
    from agreement import bmc_depths
    from test_promela import agreement, needs_spin
    text = language_example("halted_in_guest")
    cm = compiled(text, "lost_wakeup")
    want = {k: c.trace.length for k, c in explore(cm).counterexamples.items()}
    depths, err, _ = bmc_depths(cm, max(want.values()) + 1)
    assert err is None and depths == want
    needs_spin()
    spec = tmp_path / "h.spec"
    spec.write_text(text)
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [] and differences == {"base": [], "lost_wakeup": []}, differences


def test_a_process_whose_code_folds_away_has_a_twin_pan_accepts(tmp_path):
    """`if (WAKE) virr = true;` with WAKE false leaves the process no step: its Promela
    twin was `do od`, which spin refuses (a syntax error); it now rests at its end."""
    from test_promela import agreement, needs_spin
    needs_spin()
    spec = tmp_path / "h.spec"
    spec.write_text(language_example("halted_in_guest").replace(
        "process timer { fired = true; if (WAKE) virr = true; }", "process timer { if (WAKE) virr = true; }"))
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [] and differences == {"base": [], "lost_wakeup": []}, differences


GUEST_END = """model g;
cpus 2;
var done: bool = false;
interrupt reschedule[2] { skip; }
guest os of vcpu { vmexit(HLT); }
process vcpu on cpu 0 {
  local_irq_disable();
  guest_enter();
  local_irq_enable();
  done = true;
}
invariant hollow: done -> os@end;
invariant meant: done -> vcpu@end || !os@end;
"""


def test_a_property_on_a_guests_end_is_warned_since_a_guest_may_stop_anywhere():
    """`os@end` is true at every pc of a guest but a `halted` one, its first included
    (LANGUAGE.md): a property on it says nothing about how far the guest got."""
    from checker.front.parse import parse
    from checker.resolve import resolve
    model = resolve(parse(GUEST_END, "g.spec"), "base")
    hits = [(line, msg) for line, msg in model.warnings if "@end' holds wherever" in msg]
    assert [line for line, _ in hits] == [12, 13]
    assert all("'os@end'" in msg and "os@LABEL" in msg for _, msg in hits)
    thread_only = GUEST_END.replace("invariant hollow: done -> os@end;\n", "").replace(" || !os@end", "")
    assert not [m for _, m in resolve(parse(thread_only, "g.spec"), "base").warnings if "holds wherever" in m]
