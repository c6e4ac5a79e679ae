"""A thread's `exit_reason` forgotten where it is dead (ir.forget_dead) against the same
search without forgetting: every state the full search reaches, with the exit reason left
out, is reached, the same counterexamples are found, and no more states are stored.
A property that reads the reason keeps it everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker import ir
from checker.backends.python import compile_program
from checker.engines.explicit import explore
from checker.front.parse import parse
from checker.resolve import resolve

ROOT = Path(__file__).resolve().parent.parent


def _search(text: str, variant: str, memory: str | None, forget: bool, monkeypatch):
    with monkeypatch.context() as mp:
        if not forget:
            mp.setattr(ir, "forget_dead", lambda proc, sym: proc)
        program = ir.build(resolve(parse(text, "m.spec"), variant, memory=memory))
    cm = compile_program(program)
    ex = explore(cm, graph=True)
    assert ex.stats.complete
    kept = [k for k, sl in enumerate(cm.program.layout.slots) if not sl.name.endswith(".exit_reason")]
    return ({tuple(s[k] for k in kept) for s in ex.graph.states}, set(ex.counterexamples),
            len(ex.graph.states))


CASES = [("models/pi_timer.spec", "base", None), ("models/pi_timer.spec", "hlt_exits", None),
         ("models/pi_timer.spec", "unpinned_no_kick", None),
         ("models/pi_timer.spec", "base_tso", "tso"),
         ("models/halt_poll.spec", "base", None), ("models/ipi_fastpath.spec", "base", None),
         ("models/vcpu_requests.spec", "base", None), ("models/apic_timer_migrate.spec", "base", None)]


@pytest.mark.parametrize("path,variant,memory", CASES, ids=[f"{Path(p).stem}-{v}" for p, v, _ in CASES])
def test_forgetting_a_dead_exit_reason_loses_no_state_and_no_violation(path, variant, memory, monkeypatch):
    text = (ROOT / path).read_text()
    full, full_cx, full_n = _search(text, variant, memory, False, monkeypatch)
    kept, kept_cx, kept_n = _search(text, variant, memory, True, monkeypatch)
    assert kept == full
    assert kept_cx == full_cx
    assert kept_n <= full_n


def test_the_exit_dispatch_of_the_pi_timer_twin_forgets_its_reason(monkeypatch):
    text = (ROOT / "models/pi_timer.spec").read_text()
    *_, full_n = _search(text, "base", None, False, monkeypatch)
    *_, kept_n = _search(text, "base", None, True, monkeypatch)
    assert kept_n < full_n * 0.8  # between the dispatch and the next exit the reason is gone


MODEL = """model g;
cpus 2;
var kicks: 0..2 = 0;
var halted: bool = false;
interrupt reschedule[2] { skip; }
guest os of vcpu { loop { vmexit(HLT); } }
process vcpu on cpu 0 {
  loop {
    local_irq_disable();
    guest_enter();
    local_irq_enable();
    halted = vm_exit_by(HLT);
    halted = false;
  }
}
process kicker on cpu 1 { while (kicks < 2) { kicks = kicks + 1; send_IPI(0, reschedule); } }
"""


def test_a_property_that_reads_the_reason_keeps_it(monkeypatch):
    reading = MODEL + "invariant reason_in_range: vcpu.exit_reason <= 2;\n"
    _, _, without = _search(MODEL, "base", None, True, monkeypatch)
    _, _, full = _search(reading, "base", None, False, monkeypatch)
    _, _, kept = _search(reading, "base", None, True, monkeypatch)
    assert kept == full > without


def test_forgetting_resets_only_on_the_way_into_a_dead_pc():
    program = ir.build(resolve(parse(MODEL, "m.spec"), "base"))
    vcpu = next(p for p in program.processes if p.name == "vcpu")
    resets = [st.text for st in vcpu.steps
              if any(isinstance(op, ir.OAssign) and getattr(op.target, "sym", None) is not None
                     and op.target.sym.name == "exit_reason" and isinstance(op.value, ir.m.Const)
                     for op in ir.walk_ops(st.body))]
    assert resets and all("vm_exit_by" in t for t in resets)
