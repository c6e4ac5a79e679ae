"""Issue 27: what hrtimer_cancel() orders under `memory lkmm` (memory/lkmm.py, Signal.done)
against herd7. A cancel that finds the timer neither queued nor running returns 0 after
the callback returned, and the canceller then reads what the callback stored. The kernel
gets there two ways (kernel/time/hrtimer.c): hrtimer_try_to_cancel()'s lockless
hrtimer_active() (seqcount reads, smp_rmb, after __run_hrtimer's
raw_write_seqcount_barrier(), an smp_wmb, and `base->running = NULL`), or, for a queued
timer, the clock base's lock, which the callback's CPU re-took and released after it.
Both are litmus tests here; the machine's outcomes must be herd7's for the first (the
weaker) and contain herd7's for the second."""

from __future__ import annotations

import pytest

import oracle
from checker.memory import lkmm
from test_contexts3 import _outcomes

# the callback reads y (stored by a third CPU) and stores x; the canceller started the
# timer, cancels it, and reads x and y. `was`: hrtimer_cancel's value (0: the callback ran)
SPEC = """model cancel_read;
cpus 3;
memory lkmm;
var x: 0..1 = 0; var y: 0..1 = 0; var a: 0..1 = 0; var r: 0..1 = 0; var s: 0..1 = 0;
var was: -1..1 = 1;
hrtimer t on cpu 0 { a = y; x = 1; }
process c on cpu 1 { hrtimer_start(t); was = CANCEL(t); r = x; s = y; }
process w on cpu 2 { y = 1; }
"""

# P0 is the callback and its return, P1 the cancel that sees it returned, then the reads
LITMUS = """C hrtimer-cancel-{name}

{{}}

P0(int *x, int *y, int *done{lock_arg})
{{
\tint r0;

\tr0 = READ_ONCE(*y);
\tWRITE_ONCE(*x, 1);
{exit}}}

P1(int *x, int *y, int *done{lock_arg})
{{
\tint r1;
\tint r2;
\tint r3;

{seen}\tr2 = READ_ONCE(*x);
\tr3 = READ_ONCE(*y);
}}

P2(int *y)
{{
\tWRITE_ONCE(*y, 1);
}}

locations [0:r0; 1:r3;]
exists (1:r1=1 /\\ 1:r2=0)
"""

LOCKLESS = LITMUS.format(name="lockless", lock_arg="", exit="\tsmp_wmb();\n\tWRITE_ONCE(*done, 1);\n",
                         seen="\tr1 = READ_ONCE(*done);\n\tsmp_rmb();\n")
LOCKED = LITMUS.format(name="locked", lock_arg=", spinlock_t *l",
                       exit="\tspin_lock(l);\n\tWRITE_ONCE(*done, 1);\n\tspin_unlock(l);\n",
                       seen="\tspin_lock(l);\n\tr1 = READ_ONCE(*done);\n\tspin_unlock(l);\n")


def _herd(source: str) -> tuple[set, str]:
    """herd7's (r0, r2, r3) where the canceller saw the callback return, and its verdict."""
    states, verdict, _, _ = oracle.summary(source)
    out = set()
    for st in states:
        v = {k: int(x) for k, x in (s.split("=") for s in st)}
        if v["1:r1"] == 1:
            out.add((v["0:r0"], v["1:r2"], v["1:r3"]))
    return out, verdict


@pytest.fixture(scope="module", params=["hrtimer_cancel", "hrtimer_try_to_cancel"])
def ours(request) -> set:
    """(a, r, s) where the cancel gave 0; asserts the other outcomes on the way."""
    got = _outcomes(SPEC.replace("CANCEL", request.param), ("was", "a", "r", "s"))
    assert {(a, r) for was, a, r, _ in got if was == 1} == {(0, 0)}  # cancelled: it never ran
    # hrtimer_try_to_cancel gives -1 while the callback runs: then nothing orders its store
    assert {was for was, *_ in got} == ({-1, 0, 1} if request.param == "hrtimer_try_to_cancel" else {0, 1})
    return {(a, r, s) for was, a, r, s in got if was == 0}


def test_a_cancel_that_saw_the_callback_return_reads_its_stores(ours):
    assert ours and all(r == 1 for _, r, _ in ours)
    assert (1, 1, 0) in ours  # what the callback had read is not published: smp_wmb is not A-cumulative


def test_cancel_outcomes_are_herd7s_on_the_lockless_path(ours):
    herd, verdict = _herd(LOCKLESS)
    assert verdict == "Never" and ours == herd


def test_cancel_outcomes_contain_herd7s_on_the_locked_path(ours):
    """The clock base's lock also carries what the callback's CPU had read (a release is
    A-cumulative): the machine allows that one outcome more, the safe direction."""
    herd, verdict = _herd(LOCKED)
    assert verdict == "Never" and herd <= ours and ours - herd == {(1, 1, 0)}


def test_without_the_callbacks_return_view_the_cancel_reads_stale_stores(monkeypatch):
    """The planted fault: a cancel that joins nothing reaches herd7's forbidden outcome."""
    monkeypatch.setattr(lkmm.Machine, "timer_base", lambda self, t, c, sig, s: None)
    got = _outcomes(SPEC.replace("CANCEL", "hrtimer_cancel"), ("was", "r"))
    assert (0, 0) in got
