"""Every outcome the LKMM allows and `memory lkmm` misses is of a shape the verdict names.

tests/lkmm_missing.py classifies a missing outcome by lkmm.py's allowed executions: LB
when each has a cycle in (po | rf), CO when each has one in (po | rf | co), RW when the
others are forbidden once every load is ordered before its CPU's later stores, FENCE
when also the __atomic / __after_spinlock fences order the accesses between them and
their RMW or lock (as the machine runs them); unexplained when an
execution escapes all four, which the machine should have reached.
"""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from checker.litmus.reader import parse_litmus
from checker.litmus.axiomatic import evaluate
from lkmm_missing import Shape, missing, shape_of
from test_lkmm_fences import SB
from test_lkmm_herd7 import programs
from test_lkmm_operational import NOT_EXPLORED

LITMUS_C = Path(__file__).parent / "litmus_c"


@pytest.mark.parametrize("name", sorted(NOT_EXPLORED))
def test_not_explored_litmus_tests_are_of_their_listed_shape(name):
    """LB+poonceonces needs load buffering; 2+2W and S a store co-before an earlier one."""
    out, full = missing((LITMUS_C / f"{name}.litmus").read_text())
    assert full == 0
    assert out and set(out.values()) == {Shape.LB if name.startswith("LB") else Shape.CO}


def test_an_execution_with_a_timeline_is_not_explained():
    """SB's both-zero outcome: the machine reaches it, and its execution has a timeline."""
    test = parse_litmus((LITMUS_C / "SB+poonceonces.litmus").read_text(), "sb.litmus")
    shapes = set()
    evaluate(test, visit=lambda key, x: shapes.add(shape_of(x)))
    assert shapes == {Shape.UNEXPLAINED}
    assert missing((LITMUS_C / "SB+poonceonces.litmus").read_text()) == ({}, 0)


FAILED_CMPXCHG_RELAXED = """C R+xchgacquire+cmpxchgrelaxed

{}

P0(int *x, int *y)
{
	int r0;
	WRITE_ONCE(*y, 2);
	r0 = xchg_acquire(x, 2);
}

P1(int *x, int *y)
{
	int r0;
	WRITE_ONCE(*x, 2);
	r0 = cmpxchg_relaxed(y, 1, 2);
}

exists (0:r0=0 /\\ 1:r0=0 /\\ x=2 /\\ y=2)
"""


def test_failed_cmpxchg_relaxed_reads_a_stale_message():
    """A failed cmpxchg writes nothing, so it is a lone relaxed load that may read an
    older message; the machine made cmpxchg_relaxed's failure read the newest one (an
    RMW's atomicity), which missed this R-shaped outcome the LKMM allows."""
    out, full = missing(FAILED_CMPXCHG_RELAXED)
    assert full == 0
    assert out == {}


STORE_BEFORE_EARLIER_LOAD = """C pb-without-hb

{}

P0(int *x, int *z)
{
	int r0;
	int r1;
	r0 = smp_load_acquire(z);
	r1 = smp_load_acquire(x);
}

P1(int *x, int *z)
{
	int r0;
	atomic_inc(x);
	r0 = xchg(x, 2);
}

P2(int *x, int *z)
{
	int r0;
	r0 = READ_ONCE(*x);
	WRITE_ONCE(*z, 2);
}

exists (0:r0=2 /\\ 0:r1=0 /\\ 2:r0=2)
"""

BEFORE_ATOMIC_WITHOUT_RMW = """C mb-before-atomic-alone

{}

P0(int *y, int *z)
{
	int r0;
	r0 = atomic_inc_return(y);
	if (r0) WRITE_ONCE(*z, 1);
}

P1(int *y, int *z)
{
	int r0;
	int r1;
	r0 = READ_ONCE(*z);
	smp_mb__before_atomic();
	r1 = smp_load_acquire(y);
}

exists (0:r0=1 /\\ 1:r0=1 /\\ 1:r1=0)
"""


def test_a_store_visible_before_an_earlier_load_is_of_shape_rw():
    """P2's store to z is not hb-after its load of x (no dependency), so the LKMM's pb
    axiom lets P0 miss x after reading z; the machine's loads never wait, so P2's store
    carries what it read. (po | rf | co) is acyclic: neither LB nor CO."""
    out, full = missing(STORE_BEFORE_EARLIER_LOAD)
    assert full == 0
    assert {o for o, s in out.items() if s is Shape.RW} and set(out.values()) == {Shape.RW}


def test_mb_before_atomic_without_an_rmw_orders_nothing():
    """smp_mb__before_atomic() with no RMW after it orders nothing in the LKMM, and in
    the machine: it reaches r1=0 (it took the fence as smp_mb() once)."""
    assert missing(BEFORE_ATOMIC_WITHOUT_RMW) == ({}, 0)


BEFORE_ATOMIC_STORE_BETWEEN = SB.format(name="SB+mbbeforeatomic-store-between", before="smp_mb__before_atomic();\n\t",
                                        middle="atomic_inc(z);")


def test_an_access_between_mb_before_atomic_and_its_rmw_is_of_shape_fence():
    """The store to x stands between the fence and its RMW, so the LKMM orders it with
    nothing; the machine's fence runs just before the RMW and orders it: the one
    inexact case, which the FENCE shape (and the completeness note) names."""
    out, full = missing(BEFORE_ATOMIC_STORE_BETWEEN)
    assert full == 0
    assert out and set(out.values()) == {Shape.FENCE}


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs())
def test_generated_missing_outcomes_are_of_listed_shapes(text):
    """On generated programs every missing outcome is LB, CO, RW or FENCE (the verdict's
    "not explored" wording), and every reached one has a timeline (lkmm_missing.missing)."""
    r = missing(text)
    if r is None:
        return
    out, full = r
    if full == 0:  # a store that waited for a full history may miss anything
        assert Shape.UNEXPLAINED not in out.values(), text
