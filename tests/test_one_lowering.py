"""A primitive's meaning has one home: semantics/lower.py lowers it and `Spelling.core`
decides what is read, checked, computed and written; the Python back end (the explicit
engine's steps) and the Z3 encoding (bmc, induction, pdr) only spell those decisions.
A change planted in the lowering, or in one decision, therefore changes both engines'
verdicts together, and they still agree (bmc's counterexample replays through the
compiled steps, or it would be reported as a checker bug)."""

from __future__ import annotations

import dataclasses

from checker.semantics import lower as lw
from checker.results.trace import Verdict

from agreement import assert_engines_agree, compiled

INCS = """model incs;
var v: 0..4 = 0;
process p[2] { atomic_inc(v); }
invariant at_most_two: v <= 2;
"""

XCHG = """model swap;
var x: 0..1 = 0;
process p { var r: 0..1 = 1; r = xchg(x, 1); assert got_old: r == 0; }
"""


def verdicts(text: str, depth: int) -> tuple[dict, dict]:
    """(explicit engine's violation depths, bmc's), asserted equal."""
    return assert_engines_agree(compiled(text), depth)


def test_a_planted_lowering_of_atomic_inc_flips_the_explicit_and_the_z3_verdicts(monkeypatch):
    assert verdicts(INCS, 3) == ({}, {})
    real = lw.lower

    def adds_two(b):
        k = real(b)
        return dataclasses.replace(k, step=2) if isinstance(k, lw.Add) and k.step == 1 else k

    monkeypatch.setattr(lw, "lower", adds_two)
    assert verdicts(INCS, 3) == ({"at_most_two": 2}, {"at_most_two": 2})


def test_a_planted_decision_of_xchg_flips_the_explicit_and_the_z3_verdicts(monkeypatch):
    assert verdicts(XCHG, 2) == ({}, {})
    real = lw.Spelling.core

    def new_value(self, k, span):  # planted: the value is read after the store, not before
        if isinstance(k, lw.Xchg):
            self.store(k.loc, k.value)
            got = self.fresh()
            self.assign(got, self.value(k.loc))
            return got
        return real(self, k, span)

    monkeypatch.setattr(lw.Spelling, "core", new_value)
    assert verdicts(XCHG, 2) == ({"got_old": 1}, {"got_old": 1})


def test_induction_reads_the_same_planted_decision(monkeypatch):
    from checker.engines.smt.induction import induction

    assert induction(compiled(INCS), 2).findings["at_most_two"].verdict is Verdict.PROVED
    real = lw.lower
    monkeypatch.setattr(lw, "lower", lambda b: dataclasses.replace(k, step=2)
                        if isinstance(k := real(b), lw.Add) and k.step == 1 else k)
    assert induction(compiled(INCS), 2).findings["at_most_two"].verdict is Verdict.VIOLATED
