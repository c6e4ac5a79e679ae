"""Issue 27: execution contexts under `memory lkmm` (checker/memory/lkmm.py, views that
attach to CPUs) against independent oracles: the same accesses inlined in the thread
(program order), the same program without migration, and herd7 on litmus tests with the
handler inlined at each point it may interrupt (tests/oracle.py's recordings)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
from agreement import compiled
from checker.engines import liveness
from checker.engines.explicit import Limits, explore
from checker.results.trace import Verdict
from test_contexts3 import VARS, _outcomes

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("x", "y", "z", "w", "r", "a", "b", "c")
OTHER_CPU = "process q on cpu 1 { y = 1; a = x; b = z; c = w; }\n"

HANDLER = "model h;\ncpus 2;\nmemory lkmm;\n" + VARS + """
interrupt h on cpu 0 { r = y; w = 1; }
process p on cpu 0 { x = 1; raise_irq(h); z = 1; }
""" + OTHER_CPU

# the handler's accesses where the thread takes the interrupt: raising is a full barrier
# (an IPI's llist_add), entry and exit are none (exception entry and return order no
# memory access): the handler shares its CPU's view, in program order with the thread
INLINED = "model h;\ncpus 2;\nmemory lkmm;\n" + VARS + """
process p on cpu 0 { x = 1; smp_mb(); r = y; w = 1; z = 1; }
""" + OTHER_CPU


def test_a_handler_under_lkmm_gives_the_outcomes_of_its_accesses_inlined():
    with_handler = _outcomes(HANDLER, NAMES)
    assert with_handler == _outcomes(INLINED, NAMES)
    assert (1, 1, 1, 1, 0, 0, 0, 0) in with_handler  # store buffering: r = a = 0 stays possible
    # no barrier at the handler's exit: another CPU may see z before the handler's w (x86
    # forbids that: test_contexts3's tso oracle)
    assert any(b == 1 and c == 0 for *_, b, c in with_handler)
    # ... and with the same smp_rmb() in the reader, the inlined program's answer again
    rmb = lambda t: t.replace("b = z; c = w;", "b = z; smp_rmb(); c = w;")  # noqa: E731
    assert _outcomes(rmb(HANDLER), NAMES) == _outcomes(rmb(INLINED), NAMES)


# INLINED as a litmus test: herd7's outcomes of the handler's CPU inlined program
INLINED_LITMUS = """C handler-inlined

{}

P0(int *x, int *y, int *z, int *w)
{
\tint r;

\tWRITE_ONCE(*x, 1);
\tsmp_mb();
\tr = READ_ONCE(*y);
\tWRITE_ONCE(*w, 1);
\tWRITE_ONCE(*z, 1);
}

P1(int *x, int *y, int *z, int *w)
{
\tint a;
\tint b;
\tint c;

\tWRITE_ONCE(*y, 1);
\ta = READ_ONCE(*x);
\tb = READ_ONCE(*z);
\tc = READ_ONCE(*w);
}

exists (0:r=0 /\\ 1:a=0 /\\ 1:b=1 /\\ 1:c=0)
"""


def test_a_handler_under_lkmm_gives_herd7s_outcomes_of_its_accesses_inlined():
    states, _, _, _ = oracle.summary(INLINED_LITMUS)
    herd = {tuple(int(dict(s.split("=") for s in st)[r]) for r in ("0:r", "1:a", "1:b", "1:c")) for st in states}
    ours = {(r, a, b, c) for _, _, _, _, r, a, b, c in _outcomes(HANDLER, NAMES)}
    assert ours == herd and (0, 0, 1, 0) in ours


MIGRATES = "model mig;\ncpus 2;\nmemory lkmm;\npreemptions 2;\n" + VARS + """
preemptible process p on cpu 0 { x = 1; smp_wmb(); y = 1; smp_wmb(); z = 1; r = x; }
process q { a = z; smp_rmb(); b = y; smp_rmb(); c = x; }
"""


def test_migration_under_lkmm_adds_no_outcome_that_program_order_forbids():
    """The thread may move between any two of its accesses; its views stay behind on the
    old CPU, and the context switch's full barriers (kernel/sched/core.c) carry its
    program order to the new one: no outcome the pinned program forbids."""
    names = ("a", "b", "c", "r")
    moved = _outcomes(MIGRATES, names)
    pinned = _outcomes(MIGRATES.replace("preemptible process p on cpu 0", "process p")
                       .replace("cpus 2;\n", "").replace("preemptions 2;\n", ""), names)
    assert moved <= pinned and (1, 1, 1, 1) in moved and (0, 0, 0, 1) in moved
    assert all(r == 1 for *_, r in moved)  # it reads its own store wherever it runs now
    assert (1, 0, 0, 1) not in moved and (1, 1, 0, 1) not in moved
    # without the barriers the pinned program allows the reorderings, and so does the moved one
    loose = MIGRATES.replace(" smp_wmb();", "").replace(" smp_rmb();", "")
    assert (1, 0, 0, 1) in _outcomes(loose, names)


def test_a_migration_alone_orders_like_the_barriers_it_stands_for():
    """A store, a migration, a store: the switch's smp_mb() on each CPU orders them, as a
    full barrier between them would. Each store writes 1 + the CPU it ran on."""
    text = """model mig;
cpus 2;
memory lkmm;
preemptions 1;
var x: 0..2 = 0; var y: 0..2 = 0; var a: 0..2 = 0; var b: 0..2 = 0;
preemptible process p on cpu 0 { x = smp_processor_id() + 1; y = smp_processor_id() + 1; }
process q { a = y; smp_rmb(); b = x; }
"""
    got = _outcomes(text, ("x", "y", "a", "b"))
    moved = {(a, b) for x, y, a, b in got if (x, y) == (1, 2)}  # it moved between the stores
    assert (2, 1) in moved and (0, 0) in moved and (2, 0) not in moved
    stayed = {(a, b) for x, y, a, b in got if x == y}
    assert (1, 0) in stayed and (2, 0) in stayed  # message passing, unordered where nothing moved


# ---- herd7: an IPI and its handler, inlined at each point of the thread it interrupts

IPI_SPEC = """model ipi;
cpus 3;
memory lkmm;
var x: 0..1 = 0; var y: 0..1 = 0; var z: 0..1 = 0;
var r1: 0..1 = 0; var r2: 0..1 = 0; var r3: 0..1 = 0; var r4: 0..1 = 0;
interrupt h[3] { r1 = x; z = 1; }
process sender on cpu 0 { x = 1; send_IPI(1, h); }
process t on cpu 1 { y = 1; r2 = z; }
process obs on cpu 2 { r3 = z; OBS_FENCE r4 = y; }
"""
# the handler (r0: it ran, after the IPI's message) at points 0, 1, 2 of the thread
HANDLER_AT = "\tr0 = smp_load_acquire(pend);\n\tr1 = READ_ONCE(*x);\n\tWRITE_ONCE(*z, 1);\n"
THREAD = ["\tWRITE_ONCE(*y, 1);\n", "\tr2 = READ_ONCE(*z);\n"]


def _ipi_litmus(k: int, fence: str) -> str:
    body = "".join(THREAD[:k]) + HANDLER_AT + "".join(THREAD[k:])
    return f"""C ipi-handler-at-{k}

{{}}

P0(int *x, int *pend)
{{
\tWRITE_ONCE(*x, 1);
\tsmp_mb();
\tsmp_store_release(pend, 1);
}}

P1(int *x, int *y, int *z, int *pend)
{{
\tint r0;
\tint r1;
\tint r2;

{body}}}

P2(int *y, int *z)
{{
\tint r3;
\tint r4;

\tr3 = READ_ONCE(*z);
{fence}\tr4 = READ_ONCE(*y);
}}

exists (1:r0=1 /\\ 1:r1=0 /\\ 1:r2=0 /\\ 2:r3=1 /\\ 2:r4=0)
"""


@pytest.mark.parametrize("fence", ["", "smp_rmb();"], ids=["plain", "rmb"])
def test_ipi_handler_outcomes_are_herd7s_with_the_handler_inlined(fence):
    """The IPI is sent after a full barrier and its handler's entry reads what it
    published (herd7: smp_mb; smp_store_release to `pend`, and the handler inlined as an
    smp_load_acquire of it reading 1); the handler is in program order with the thread
    it interrupts, at any of its points. Our outcomes are the union of herd7's."""
    spec = IPI_SPEC.replace("OBS_FENCE", fence)
    ours = _outcomes(spec, ("r1", "r2", "r3", "r4"))
    herd: set = set()
    for k in range(len(THREAD) + 1):
        states, _, _, _ = oracle.summary(_ipi_litmus(k, f"\t{fence}\n" if fence else ""))
        for row in states:
            vals = dict(s.split("=") for s in row)
            if vals["1:r0"] == "1":
                herd.add(tuple(int(vals[r]) for r in ("1:r1", "1:r2", "2:r3", "2:r4")))
    assert ours == herd
    assert all(r1 == 1 for r1, *_ in ours)  # the handler sees what the sender stored before the IPI
    # the handler ran before the thread's read of z (which then sees it: same CPU) or after it
    assert {r2 for _, r2, _, _ in ours} == {0, 1}


# ---- liveness, and the models

def test_liveness_under_lkmm_with_an_interrupt():
    """A caller spinning for the IPI handler's unlock: returns under weak fairness (the
    propagation of the unlock is fair); without the IPI the spin never ends (a lasso)."""
    text = (ROOT / "models" / "csd_wait_ipi.spec").read_text()
    cm = compiled(text, "base_lkmm")
    ex = explore(cm, graph=True)
    assert ex.stats.complete and not ex.counterexamples
    assert liveness.check(cm, ex)[0]["caller_returns"].verdict is Verdict.HOLDS
    lost = compiled(text.replace("send_IPI(1, call_function);", "skip;"), "base_lkmm")
    ex = explore(lost, Limits(check_deadlock=False), graph=True)
    assert liveness.check(lost, ex)[0]["caller_returns"].verdict is Verdict.VIOLATED


@pytest.mark.parametrize("path, variant, violated", [
    # (a `reachable` property reached is among the counterexamples: its witness)
    ("models/vcpu_preempted_kick.spec", "base_lkmm",
     {"request_seen_before_guest", "lost_while_preempted", "kick_while_preempted"}),
    ("models/vcpu_preempted_kick.spec", "entry_mb_lkmm", {"kick_while_preempted"}),
    ("models/csd_wait_ipi.spec", "no_release_lkmm", {"result_seen"}),
    ("models/csd_wait_ipi.spec", "no_release_tso", set()),
    ("models/csd_wait_ipi.spec", "mb_unlock_lkmm", set()),
])
def test_context_models_under_lkmm_no_por_agrees(path, variant, violated):
    """Lazy propagation (views move only where some step on that CPU needs them) keeps
    every verdict and shortest trace of the eager machine (--no-por)."""
    from checker.backends.python import compile_program
    from checker import ir
    from checker.front.parse import parse
    from checker.resolve import resolve
    text = (ROOT / path).read_text()
    lazy = compiled(text, variant, path)
    eager = compile_program(ir.build(resolve(parse(text, path), variant)), lazy_propagation=False)
    a, b = explore(lazy), explore(eager)
    assert a.stats.complete and b.stats.complete
    assert set(a.counterexamples) == set(b.counterexamples) == violated
    assert {k: c.trace.length for k, c in a.counterexamples.items()} == \
        {k: c.trace.length for k, c in b.counterexamples.items()}


def test_no_context_refusal_is_left_for_lkmm():
    for memory, kind in itertools.product(["lkmm"], ["handler", "migration"]):
        cm = compiled({"handler": HANDLER, "migration": MIGRATES}[kind].replace("memory lkmm;", f"memory {memory};"))
        assert cm.layout.lkmm is not None and any(c.name == "cpu0" for c in cm.layout.lkmm.cpus)


def test_the_other_engines_refuse_a_context_model_under_lkmm_by_variant(tmp_path, capsys):
    """Z3 lists the lkmm variant "not checked" and checks the rest; the Promela twin
    refuses the lkmm variant by name and translates the others."""
    from checker.cli import main
    f = tmp_path / "m.spec"
    f.write_text(HANDLER.replace("memory lkmm;\n", "") + "variant on_lkmm { memory lkmm; }\n")
    assert main([str(f), "--engine", "bmc", "--depth", "4", "--brief"]) == 3
    out = capsys.readouterr().out
    assert "not checked: lkmm is explicit-only" in out and "no violation up to depth 4" in out
    assert main([str(f), "--promela", str(tmp_path / "twins")]) != 0
    err = capsys.readouterr().err
    assert "the Promela twin has no `memory lkmm`" in err and "1 of 2 variants not translated" in err


@pytest.mark.parametrize("text, names", [(HANDLER, NAMES), (MIGRATES, ("a", "b", "c", "r")),
                                         (IPI_SPEC.replace("OBS_FENCE", ""), ("r1", "r2", "r3", "r4"))],
                         ids=["handler", "migration", "ipi"])
def test_lazy_propagation_keeps_the_final_states_with_contexts(text, names):
    """A CPU's view is shared by several processes: it moves lazily where any of them
    may next need it, and reaches every final state the eager machine does."""
    from checker import ir
    from checker.backends.python import compile_program
    from checker.front.parse import parse
    from checker.resolve import resolve
    text += "final settled: true;\n"
    eager = compile_program(ir.build(resolve(parse(text, "m.spec"), "base")), lazy_propagation=False)
    ex = explore(eager, Limits(check_deadlock=False), graph=True)
    slot = {sl.name: k for k, sl in enumerate(eager.program.layout.slots)}
    assert _outcomes(text.replace("final settled: true;\n", ""), names) == \
        {tuple(s[slot[n]] for n in names) for s in ex.graph.states if eager.final_state(s)}


LOCKS_SPEC = """model locks;
cpus 2;
memory lkmm;
var x: 0..1 = 0; var y: 0..1 = 0; var r0: 0..1 = 0; var r1: 0..1 = 0;
var l: bool = false;
preemptible process p on cpu 0 {
  var flags: bool = false;
  x = 1;
  LOCK
  r0 = y;
}
process q on cpu 1 { y = 1; smp_mb(); r1 = x; }
"""
LOCKS_LITMUS = """C SB+lock-unlock+mb

{}

P0(int *x, int *y, spinlock_t *l)
{
\tint r0;

\tWRITE_ONCE(*x, 1);
\tspin_lock(l);
\tspin_unlock(l);
\tr0 = READ_ONCE(*y);
}

P1(int *x, int *y)
{
\tint r1;

\tWRITE_ONCE(*y, 1);
\tsmp_mb();
\tr1 = READ_ONCE(*x);
}

exists (0:r0=0 /\\ 1:r1=0)
"""


@pytest.mark.parametrize("lock", ["spin_lock(l); spin_unlock(l);",
                                  "spin_lock_irqsave(l, flags); spin_unlock_irqrestore(l, flags);"],
                         ids=["preemptible", "irqsave"])
def test_a_spin_lock_in_a_context_orders_as_the_lock_alone(lock):
    """A preemptible thread's spin lock (which disables preemption) and
    spin_lock_irqsave are the lock's own steps (preempt_disable(); spin_lock(), as
    include/linux/spinlock_api_smp.h has them), not one atomic block: the same outcomes
    as the plain spin_lock/spin_unlock in a process without contexts, all of them herd7's.
    (The machine runs spin_lock as one fully ordered step, so herd7's store-buffering
    outcome around a lock and unlock, 0:r0=0 /\\ 1:r1=0, is not explored, contexts or not.)"""
    ours = _outcomes(LOCKS_SPEC.replace("LOCK", lock), ("r0", "r1"))
    plain = _outcomes(LOCKS_SPEC.replace("LOCK", "spin_lock(l); spin_unlock(l);").replace("cpus 2;\n", "")
                      .replace("preemptible process p on cpu 0", "process p").replace("process q on cpu 1", "process q"),
                      ("r0", "r1"))
    states, verdict, _, _ = oracle.summary(LOCKS_LITMUS)
    herd = {tuple(int(dict(s.split("=") for s in st)[r]) for r in ("0:r0", "1:r1")) for st in states}
    assert ours == plain and ours <= herd and verdict == "Sometimes"
    assert herd - ours <= {(0, 0)}


# ---- random programs: a handler is its accesses inlined where it interrupts

_LOCS = ("x", "y", "z")
_FENCES = ("smp_mb();", "smp_wmb();", "smp_rmb();")


@st.composite
def _accesses(draw, regs: list, n: tuple[int, int]):
    out = []
    for _ in range(draw(st.integers(*n))):
        kind = draw(st.integers(0, 5))
        loc = draw(st.sampled_from(_LOCS))
        if kind == 0:
            out.append(draw(st.sampled_from(_FENCES)))
        elif kind in (1, 2):
            out.append(f"{loc} = 1;" if kind == 1 else f"smp_store_release({loc}, 1);")
        else:
            reg = f"r{len(regs)}"
            regs.append(reg)
            out.append(f"{reg} = {loc};" if kind != 5 else f"{reg} = smp_load_acquire({loc});")
    return out


@st.composite
def _handler_programs(draw):
    """A store before the interrupt, the handler, the rest of the thread, and another
    CPU that stores and loads: shapes (SB, MP, their mixes) where ordering shows."""
    regs: list = []
    store = lambda: draw(st.sampled_from(["{l} = 1;", "smp_store_release({l}, 1);"])).format(  # noqa: E731
        l=draw(st.sampled_from(_LOCS)))
    before = [store()] + draw(_accesses(regs, (0, 1)))
    handler = draw(_accesses(regs, (1, 2)))
    after = draw(_accesses(regs, (0, 2)))
    other = [store(), draw(st.sampled_from(["smp_mb();", "smp_rmb();", "r9 = x;"])),
             f"r{len(regs)} = {draw(st.sampled_from(_LOCS))};"]
    regs.append(f"r{len(regs)}")
    head = "model h;\ncpus 2;\nmemory lkmm;\nvar x: 0..1 = 0; var y: 0..1 = 0; var z: 0..1 = 0;\n" + \
        "".join(f"var {r}: 0..1 = 0;\n" for r in regs + ["r9"]) + f"process q on cpu 1 {{ {' '.join(other)} }}\n"
    with_irq = head + f"interrupt h on cpu 0 {{ {' '.join(handler)} }}\n" + \
        f"process p on cpu 0 {{ {' '.join(before)} raise_irq(h); {' '.join(after)} }}\n"
    inlined = head + f"process p on cpu 0 {{ {' '.join(before)} smp_mb(); {' '.join(handler + after)} }}\n"
    return with_irq, inlined, ("x", "y", "z", "r9") + tuple(regs)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_handler_programs())
def test_random_handlers_give_the_outcomes_of_their_accesses_inlined(program):
    with_irq, inlined, names = program
    assert _outcomes(with_irq, names) == _outcomes(inlined, names), with_irq


def test_an_hrtimer_callback_sees_what_was_stored_before_hrtimer_start():
    """hrtimer_start publishes the arming CPU's view through the clock base's lock, and
    the callback, on either CPU (an unpinned timer), reads it; a plain flag set after
    the arming is not ordered before the callback's read."""
    text = """model t;
cpus 2;
memory lkmm;
var data: 0..1 = 0; var late: 0..1 = 0; var got: 0..2 = 0; var saw_late: 0..2 = 0;
hrtimer t[2] { got = data + 1; saw_late = late + 1; }
process p on cpu 0 { data = 1; hrtimer_start(t); late = 1; }
process q on cpu 1 { skip; }
"""
    got = _outcomes(text, ("got", "saw_late"))
    assert {g for g, _ in got} == {2}  # the callback ran and read data = 1
    assert {s for _, s in got} == {1, 2}  # `late`, stored after the arming: either
