"""The litmus evaluator (litmus/axiomatic.py) reads its orderings from the primitives table
(semantics/primitives.py), the one place they are written; its own list is only of the
names litmus tests use. A change to a row therefore changes the evaluator's verdicts:
planted below, on store buffering, one column at a time. The herd7 recordings
(tests/test_lkmm_herd7.py, tests/test_litmus_c.py) check the table itself."""

from __future__ import annotations

import dataclasses

from checker.litmus import axiomatic as ax
from checker.litmus.reader import parse_litmus
from checker.semantics import primitives as prims
from checker.semantics.primitives import BUILTINS, Cls, FenceKind, Order

SB = """C SB+{name}

{{}}

P0(int *x, int *y)
{{
	int r0;
	int r1;
	{first}
	{fence}
	r0 = READ_ONCE(*y);
}}

P1(int *x, int *y)
{{
	int r0;
	int r1;
	{second}
	{fence}
	r0 = READ_ONCE(*x);
}}

exists (0:r0=0 /\\ 1:r0=0)
"""


def sb_allowed(first: str, second: str, fence: str = "") -> bool:
    """Whether store buffering's both-zero outcome is allowed under the LKMM."""
    test = parse_litmus(SB.format(name="t", first=first, second=second, fence=fence), "sb.litmus")
    return ax.evaluate(test, "lkmm").observation != "Never"


def planted(monkeypatch, name: str, **change) -> None:
    monkeypatch.setitem(BUILTINS, name, dataclasses.replace(BUILTINS[name], **change))


def test_a_relaxed_xchg_lets_store_buffering_through_and_a_fully_ordered_row_forbids_it(monkeypatch):
    relaxed = ("r1 = xchg_relaxed(x, 1);", "r1 = xchg_relaxed(y, 1);")
    assert sb_allowed(*relaxed)
    planted(monkeypatch, "xchg_relaxed", order=Order.FULL)
    assert not sb_allowed(*relaxed)


def test_the_atomic_t_form_takes_the_ordering_of_its_row(monkeypatch):
    full = ("r1 = atomic_xchg(x, 1);", "r1 = atomic_xchg(y, 1);")
    assert not sb_allowed(*full)
    planted(monkeypatch, "xchg", order=Order.RELAXED)
    assert sb_allowed(*full)


def test_smp_store_mb_is_a_full_fence_because_its_row_is_fully_ordered(monkeypatch):
    stores = ("smp_store_mb(*x, 1);", "smp_store_mb(*y, 1);")
    assert not sb_allowed(*stores)
    planted(monkeypatch, "smp_store_mb", order=Order.RELAXED)
    assert sb_allowed(*stores)


def test_a_fence_is_what_its_row_says(monkeypatch):
    stores = ("WRITE_ONCE(*x, 1);", "WRITE_ONCE(*y, 1);")
    assert sb_allowed(*stores, fence="smp_wmb();")
    planted(monkeypatch, "smp_wmb", fence=FenceKind.FULL)
    assert not sb_allowed(*stores, fence="smp_wmb();")


def test_a_suffixed_form_the_table_lacks_follows_the_tables_suffix_rule(monkeypatch):
    relaxed = ("r1 = atomic_fetch_sub_relaxed(1, x);", "r1 = atomic_fetch_sub_relaxed(1, y);")
    assert "atomic_fetch_sub_relaxed" not in BUILTINS
    assert sb_allowed(*relaxed)
    monkeypatch.setitem(prims.ORDER_SUFFIX, "_relaxed", Order.FULL)
    assert not sb_allowed(*relaxed)


def test_a_failed_cmpxchg_reads_with_its_rows_failure_ordering():
    for name in ("cmpxchg", "cmpxchg_acquire", "atomic_cmpxchg_release"):
        assert ax.failure_tag(name) == "once"  # relaxed (atomic_t.txt)


def test_every_litmus_primitive_has_its_ordering_from_the_table_or_says_why_not():
    """A name with a row (or whose atomic_t form has one) reads it; the others are RCU,
    the lock-lock barrier, spin_is_locked, or a suffixed form the table does not list."""
    rows = 0
    for name in sorted(ax.PRIMITIVES):
        row = ax._row(name)
        if name in ax.FENCES:
            assert (row is not None and row.cls is Cls.FENCE) or name in ax._OWN_FENCES, name
        elif row is None:
            assert name.startswith(("rcu_", "atomic_")) or name == "spin_is_locked", name
        else:
            assert ax.order_of(name) is row.order
            rows += 1
    assert rows >= 30
