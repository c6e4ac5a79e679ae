"""The per-model completeness statement of `memory lkmm` (checker/memory/lkmm.left_out):
every lkmm "holds" says either that the machine explores every LKMM outcome of the model
or which shapes of outcome it left out that may occur in it. The argument is static and
conservative; tested here against the axiomatic LKMM: wherever it says "complete", the
machine's outcomes are all the LKMM's (tests/litmus_c and generated programs), and on
small programs with each shape, it names that shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from checker import ir
from checker.backends.python import compile_program
from checker.front.parse import parse
from checker.litmus.axiomatic import TooManyCandidates
from checker.litmus.reader import parse_litmus
from checker.memory.lkmm import left_out
from checker.pipeline import Options, check_spec, load, load_litmus
from checker.resolve import resolve
from checker.results.trace import LKMM_COMPLETE, Verdict
from litmus_to_spec import Untranslatable, outcomes, to_spec
from test_lkmm_herd7 import programs
from test_lkmm_operational import FILES, UNTRANSLATED, reference

ROOT = Path(__file__).resolve().parents[1]


def shapes(text: str, variant: str = "base") -> tuple[str, ...]:
    """left_out of a spec's variant (under lkmm)."""
    return left_out(compile_program(ir.build(resolve(parse(text, "m.spec"), variant))).program)


def complete_and_equal(test) -> bool | None:
    """Whether left_out says complete for the litmus test's model (None: it cannot be
    translated or evaluated); when it does, the machine reaches every LKMM outcome."""
    try:
        text = to_spec(test)
        ref, labels, _ = reference(test)
    except (Untranslatable, TooManyCandidates):
        return None
    if shapes(text):
        return False
    got, _, full, _ = outcomes(test, labels=labels)
    assert full == 0 or got <= set(ref)
    if full == 0:
        assert got == set(ref), f"left_out says complete, the machine misses {set(ref) - got}:\n{text}"
    return True


def test_complete_litmus_tests_reach_every_lkmm_outcome():
    said = [complete_and_equal(load_litmus(str(p))) for p in FILES if p.stem not in UNTRANSLATED]
    assert said.count(True) >= 30  # a claim that is made, not only withheld


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs())
def test_complete_generated_programs_reach_every_lkmm_outcome(text):
    assume(complete_and_equal(parse_litmus(text, "gen.litmus")) is not None)


LITMUS = ROOT / "tests" / "litmus"


@pytest.mark.parametrize("name, shape", [
    ("lb", "load buffering (p0's load of x at line 10 and store to y at line 10, unordered)"),
    ("two_plus_two_w", "a store placed earlier in coherence order (x, stored by 2 CPUs)"),
    ("n6", "a store placed earlier in coherence order (x, stored by 2 CPUs)"),
    ("sb_set_bit", "a release not carried through another CPU's relaxed RMW"),
])
def test_each_shape_is_named_where_it_occurs(name, shape):
    got = shapes((LITMUS / f"{name}.spec").read_text(), "lkmm")
    assert any(s.startswith(shape) for s in got), got


FENCE_GAP = """model gap;
memory lkmm;
var x: 0..1 = 0;
var y: 0..1 = 0;
var z: 0..2 = 0;
process p { var r: 0..1 = 0; smp_mb__before_atomic(); x = 1; atomic_inc(z); r = y; }
process q { var r: 0..1 = 0; y = 1; smp_mb(); r = x; }
"""

ATOMIC_AND_INDEX = """model blocks;
memory lkmm;
var a[2]: 0..1 = {0, 0};
var i: 0..1 = 0;
process p { var r: 0..1 = 0; atomic { a[0] = 1; i = 1; } }
process q { var r: 0..1 = 0; var k: 0..1 = 0; k = i; r = a[k]; }
"""


def test_a_fence_gap_an_atomic_block_and_an_address_dependency_are_named():
    assert any(s.startswith("an access between a fence and its RMW left unordered (line 6)")
               for s in shapes(FENCE_GAP))
    got = shapes(ATOMIC_AND_INDEX)
    assert "an atomic block that stores less than fully ordered (line 5)" in got
    assert "an array load with a run-time index not ordered as smp_rmb() (line 6)" in got


def test_a_complete_model_says_so_in_every_holds(tmp_path):
    path = tmp_path / "sb_mb.spec"
    path.write_text((LITMUS / "sb_mb.spec").read_text())
    result = check_spec(load(str(path)), Options(progress=False, variants=("lkmm",)))
    v = result.variants[0]
    assert v.lkmm_left_out == ()
    held = [o for o in v.outcomes if o.verdict is Verdict.HOLDS]
    assert held and all(LKMM_COMPLETE in o.note and "complete for this model" in o.note for o in held)


@pytest.mark.parametrize("model, variant", [
    (m, line.split()[1]) for m in sorted((ROOT / "models").glob("*.spec"))
    for line in m.read_text().splitlines() if line.startswith("variant ") and "memory lkmm" in line
], ids=lambda x: getattr(x, "stem", x))
def test_every_shipped_lkmm_variant_has_a_statement(model, variant):
    """Every shipped lkmm variant gets its statement: complete (timer_migration's and
    halt_poll_grow's, one thread with nothing shared) or the shapes that may occur, each
    one of the list."""
    from checker.pipeline import compile_variant
    from checker.results.trace import LKMM_PARTIAL, lkmm_note
    cm = compile_variant(load(str(model)), variant, Options())
    got = left_out(cm.program)
    assert lkmm_note(got).startswith(LKMM_PARTIAL if got else LKMM_COMPLETE)
    assert all(s.split(" (")[0] in SHAPES for s in got)
    assert bool(got) is (model.stem not in ("timer_migration", "halt_poll_grow"))


SHAPES = {"load buffering", "a store placed earlier in coherence order",
          "a release not carried through another CPU's relaxed RMW", "an access between a fence and its RMW left unordered",
          "an atomic block that stores less than fully ordered", "an array load with a run-time index not ordered as smp_rmb()"}
