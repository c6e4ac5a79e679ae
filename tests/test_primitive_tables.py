"""The litmus evaluator keeps its own reading of linux-kernel.def (litmus/axiomatic.py),
so that the axiomatic reference stays independent of the checker it checks; but where
both know a primitive, the ordering each writes down must be the one the kernel
documents, the same in both (semantics/primitives.py is the spec language's table)."""

from __future__ import annotations

from checker.litmus import axiomatic as ax
from checker.semantics.primitives import BUILTINS, Cls, FenceKind, Order

#: the litmus evaluator's order suffix (`_ORDER`) -> the ordering the table gives the RMW
SUFFIX_ORDER = {"": Order.FULL, "_relaxed": Order.RELAXED, "_acquire": Order.ACQUIRE, "_release": Order.RELEASE,
                "_noreturn": Order.RELAXED}
LOAD_ORDER = {"once": Order.RELAXED, "acquire": Order.ACQUIRE}
STORE_ORDER = {"once": Order.RELAXED, "release": Order.RELEASE}
FENCE_KIND = {"mb": FenceKind.FULL, "rmb": FenceKind.READ, "wmb": FenceKind.WRITE,
              "before-atomic": FenceKind.BEFORE_ATOMIC}


def shared(table) -> list[str]:
    return sorted(n for n in table if n in BUILTINS)


def test_both_tables_know_the_common_primitives():
    assert len(shared(ax.RMWS)) >= 8 and len(shared(ax.LOADS)) >= 2 and len(shared(ax.FENCES)) >= 3


def test_rmw_orderings_agree():
    for name in shared(ax.RMWS):
        _, returns, sfx, _, _ = ax.RMWS[name]
        row = BUILTINS[name]
        assert row.cls is Cls.RMW, name
        assert row.order is SUFFIX_ORDER[sfx], (name, row.order, sfx)
        if "cmpxchg" in name:  # a failed cmpxchg is only a relaxed load, in both
            assert row.failure_order is Order.RELAXED, name


def test_load_and_store_orderings_agree():
    for name in shared(ax.LOADS):
        assert BUILTINS[name].order is LOAD_ORDER[ax.LOADS[name][0]], name
    for name in shared(ax.STORES):
        if name == "smp_store_mb":  # a store and then a full fence: the table calls it fully ordered
            assert BUILTINS[name].order is Order.FULL
            continue
        assert BUILTINS[name].order is STORE_ORDER[ax.STORES[name][0]], name


def test_fence_kinds_agree():
    for name in shared(ax.FENCES):
        kind = FENCE_KIND.get(ax.FENCES[name])
        if kind is not None:
            assert BUILTINS[name].fence is kind, name
