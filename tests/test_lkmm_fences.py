"""The fences that order only with an RMW or a lock acquisition, exact in the machine
(checker/memory/lkmm.py) as linux-kernel.cat:37-39 has them, and lock.cat's
po-unlock-lock-po: on small programs where the fence does not stand next to its RMW
(or has none), the machine's outcomes equal the axiomatic evaluator's and herd7's."""

from __future__ import annotations

import pytest

import oracle
from checker.litmus.reader import parse_litmus
from litmus_to_spec import outcomes
from test_lkmm_operational import observation, reference

SB = """C {name}

{{}}

P0(int *x, int *y, int *z, spinlock_t *l)
{{
	int r0;
	int r1;
	{before}WRITE_ONCE(*x, 1);
	{middle}
	r0 = READ_ONCE(*y);
}}

P1(int *x, int *y)
{{
	int r0;
	WRITE_ONCE(*y, 1);
	smp_mb();
	r0 = READ_ONCE(*x);
}}

exists (0:r0=0 /\\ 1:r0=0)
"""

#: name -> (P0's statements between its store and its load, herd7's observation); P0 may
#: also begin with statements (`before`)
SB_FENCES = {
    # no RMW after it: orders nothing (the machine once took it as smp_mb())
    "SB+mbbeforeatomic-alone": ("smp_mb__before_atomic();", "Sometimes"),
    # its RMW on a location only P0 touches: the store before it and the load after it
    "SB+mbbeforeatomic-inc": ("smp_mb__before_atomic(); atomic_inc(z);", "Never"),
    # a failed cmpxchg is in herd7's RMW set
    "SB+mbbeforeatomic-cmpxchgfails": ("smp_mb__before_atomic(); r1 = cmpxchg_relaxed(z, 5, 6);", "Never"),
    # a lock acquisition is not an RMW
    "SB+mbbeforeatomic-lock": ("smp_mb__before_atomic(); spin_lock(l);", "Sometimes"),
    "SB+mbafteratomic-alone": ("smp_mb__after_atomic();", "Sometimes"),
    "SB+inc-mbafteratomic": ("atomic_inc(z); smp_mb__after_atomic();", "Never"),
    "SB+cmpxchgfails-mbafteratomic": ("r1 = cmpxchg_relaxed(z, 5, 6); smp_mb__after_atomic();", "Never"),
    # spin_lock is an acquire, not a full fence; smp_mb__after_spinlock() makes it one
    "SB+lock": ("spin_lock(l);", "Sometimes"),
    "SB+mbafterspinlock-alone": ("smp_mb__after_spinlock();", "Sometimes"),
    "SB+lock-mbafterspinlock": ("spin_lock(l); smp_mb__after_spinlock();", "Never"),
    "SB+trylock-mbafterspinlock": ("r1 = spin_trylock(l); smp_mb__after_spinlock();", "Never"),
    "SB+inc-mbafterspinlock": ("atomic_inc(z); smp_mb__after_spinlock();", "Sometimes"),
    # a fully ordered cmpxchg on a location only P0 touches: its success was once also
    # run as the unordered failure form (the failure check saw only tracked locations)
    "SB+cmpxchg-private": ("r1 = cmpxchg(z, 0, 1);", "Never"),
}

MP_UNLOCK_LOCK = """C MP+unlocklock-two-locks+rmb

{}

P0(int *x, int *y, spinlock_t *a, spinlock_t *b)
{
	spin_lock(a);
	WRITE_ONCE(*x, 1);
	spin_unlock(a);
	spin_lock(b);
	WRITE_ONCE(*y, 1);
	spin_unlock(b);
}

P1(int *x, int *y)
{
	int r0;
	int r1;
	r0 = READ_ONCE(*y);
	smp_rmb();
	r1 = READ_ONCE(*x);
}

exists (1:r0=1 /\\ 1:r1=0)
"""

PROGRAMS = {name: (SB.format(name=name, before="", middle=middle), obs) for name, (middle, obs) in SB_FENCES.items()}
PROGRAMS["MP+unlocklock-two-locks+rmb"] = (MP_UNLOCK_LOCK, "Never")  # po-unlock-lock-po has no `& loc`


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_machine_equals_the_lkmm_and_herd7(name):
    text, obs = PROGRAMS[name]
    test = parse_litmus(text, f"{name}.litmus")
    ref, labels, got_obs = reference(test)
    got, _, full, _ = outcomes(test, labels=labels)
    assert full == 0
    assert got == set(ref)
    assert got_obs == observation(got, ref) == obs
    states, verdict, _, _ = oracle.summary(text, None)
    assert {frozenset(f"{k}={v}" for k, v in row) for row in got} == states
    assert verdict == obs
