"""x86-TSO in the Z3 engines (engines/smt/encode.py): per-CPU FIFO store buffers of the
bound `memory tso(N)`, loads that read their own CPU's newest buffered store, fences and
locked operations that wait for an empty buffer, and a flush as a step of its own:
the explicit engine's steps, so a bmc counterexample replays through the compiled
steps. Checked against the explicit engine on generated specs, and on two mutations of
the encoding that the agreement check must catch."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from checker.engines.smt import encode
from checker.engines.smt.bmc import bmc
from checker.engines.smt.induction import induction
from checker.results.trace import Verdict

from agreement import assert_engines_agree, assert_pdr_agrees, compiled

SB = """model sb;
memory tso({bound});
var x: 0..1 = 0;
var y: 0..1 = 0;
process p0 {{ var r: 0..1 = 1; x = 1; {fence}r = y; done: skip; }}
process p1 {{ var r: 0..1 = 1; y = 1; {fence}r = x; done: skip; }}
invariant not_both_zero: (p0@done && p1@done) -> (p0.r == 1 || p1.r == 1);
"""

OWN = """model own;
memory tso(1);
var x: 0..2 = 0;
process p { var r: 0..2 = 0; x = 2; r = x; done: skip; }
process q { var s: 0..2 = 0; s = x; }
invariant reads_its_own_store: p@done -> p.r == 2;
"""


@pytest.fixture(scope="module")
def store_buffering():
    return compiled(SB.format(bound=1, fence=""))


def test_store_buffering_is_found_by_bmc_at_the_explicit_depth_and_replays(store_buffering):
    exp, got = assert_engines_agree(store_buffering, 6)
    assert exp == got == {"not_both_zero": 4}  # two stores buffered, two stale loads
    cx = bmc(store_buffering, 6).findings["not_both_zero"].counterexample
    assert cx is not None and cx.engine == "bmc"


def test_rounds_find_store_buffering_and_its_steps_replay(store_buffering):
    r = bmc(store_buffering, 4, rounds=True)
    assert not r.checker_bugs
    assert r.findings["not_both_zero"].verdict is Verdict.VIOLATED
    # two steps a turn: a CPU stores and loads in one turn, so one round is enough
    r = bmc(store_buffering, 1, rounds=2)
    assert not r.checker_bugs
    f = r.findings["not_both_zero"]
    assert f.verdict is Verdict.VIOLATED and f.note.startswith("found at depth 1 (1 rounds, ")


def test_smp_mb_forbids_store_buffering_and_pdr_proves_it():
    cm = compiled(SB.format(bound=1, fence="smp_mb(); "))
    assert assert_pdr_agrees(cm)["not_both_zero"] == "proved"
    assert assert_pdr_agrees(compiled(SB.format(bound=1, fence="")))["not_both_zero"] == "violated"


def test_induction_finds_store_buffering_and_strengthened_proves_the_fenced_one():
    assert induction(compiled(SB.format(bound=1, fence="")), 6).findings["not_both_zero"].verdict is Verdict.VIOLATED
    fenced = compiled(SB.format(bound=1, fence="smp_mb(); "))
    plain = induction(fenced, 6).findings["not_both_zero"]
    assert plain.verdict is Verdict.INCOMPLETE, plain  # a buffered state no run reaches breaks the step
    r = induction(fenced, 2, strengthen=10_000)
    assert not r.checker_bugs and r.findings["not_both_zero"].verdict is Verdict.PROVED


def test_a_store_that_finds_its_buffer_full_waits_for_a_flush():
    text = """model full; memory tso(1); var x: 0..3 = 0; var y: 0..3 = 0;
    process p { x = 1; y = 2; x = 3; done: skip; }
    invariant order: y == 2 -> x >= 1;"""
    exp, got = assert_engines_agree(compiled(text), 8)
    assert exp == got == {}  # FIFO: y reaches memory only after x


# -- mutations: the agreement check fails on an encoding that is not the explicit engine's

def test_an_eager_flush_loses_store_buffering_and_the_agreement_check_says_so(monkeypatch, store_buffering):
    monkeypatch.setattr(encode.Evaluator, "buffered", lambda self, target: None)  # stores go to memory
    with pytest.raises(AssertionError):
        assert_engines_agree(compiled(SB.format(bound=1, fence="")), 6)


def test_a_load_that_skips_its_own_buffer_does_not_replay(monkeypatch):
    assert_engines_agree(compiled(OWN), 6)
    real = encode.Evaluator.load
    monkeypatch.setattr(encode.Evaluator, "load", lambda self, slot, t, buf=None: real(self, slot, t))
    with pytest.raises(AssertionError, match="does not replay"):
        assert_engines_agree(compiled(OWN), 6)


# -- generated specs: 2 processes, 2-3 shared variables, buffers of 1-2 stores

VARS = "xyz"


@st.composite
def tso_specs(draw) -> str:
    nvars = draw(st.integers(2, 3))
    names = VARS[:nvars]
    bound = draw(st.integers(1, 2))

    def statement() -> st.SearchStrategy[str]:
        v = st.sampled_from(names)
        c = st.integers(1, 3)
        reg = st.sampled_from("rs")
        return st.one_of(
            st.builds(lambda a, k: f"{a} = {k};", v, c),
            st.builds(lambda r, a: f"{r} = {a};", reg, v),
            st.builds(lambda r, a, k: f"{r} = xchg({a}, {k});", reg, v, c),
            st.just("smp_mb();"),
        )

    bodies = [" ".join(draw(st.lists(statement(), min_size=1, max_size=4))) for _ in range(2)]
    a, b = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    u, w = draw(st.sampled_from(names)), draw(st.sampled_from(names))
    k = draw(st.integers(1, 5))
    decls = "\n".join(f"var {n}: 0..3 = 0;" for n in names)
    procs = "\n".join(f"process p{i} {{ var r: 0..3 = 0; var s: 0..3 = 0; {body} done: skip; }}"
                      for i, body in enumerate(bodies))
    return (f"model g;\nmemory tso({bound});\n{decls}\n{procs}\n"
            f"invariant regs: (p0@done && p1@done) -> !(p0.r == {a} && p1.r == {b});\n"
            f"invariant mem: {u} + {w} <= {k};\n")


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(tso_specs())
def test_bmc_agrees_with_the_explicit_engine_on_generated_tso_specs(text):
    assert_engines_agree(compiled(text), 10)
