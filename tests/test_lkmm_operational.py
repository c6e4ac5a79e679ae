"""`memory lkmm`, the operational machine (checker/memory/lkmm.py), against the exact
axiomatic LKMM (checker/litmus/axiomatic.py) and herd7.

Each litmus test is translated to a model (tests/litmus_to_spec.py) and explored through
the normal pipeline; the outcomes the machine reaches must be among the LKMM's (so a
violation under lkmm is an LKMM execution), and all of them except for the shapes the
machine does not explore (NOT_EXPLORED: load buffering, and stores that join coherence
order before an earlier store), which LANGUAGE.md lists.
"""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from checker.litmus.reader import parse_litmus
from checker.pipeline import load_litmus
from checker.litmus.axiomatic import TooManyCandidates, evaluate
from checker.pipeline import Options, check_spec, load
from checker.results.trace import Verdict
from litmus_to_spec import Untranslatable, outcomes
from test_lkmm_herd7 import herd7, programs
from test_litmus_kernel import KERNEL_FILES

ROOT = Path(__file__).resolve().parents[1]
LITMUS_C = Path(__file__).parent / "litmus_c"
#: ours, and the kernel's own (tools/memory-model/litmus-tests) where they are here (test_litmus_kernel)
FILES = sorted(LITMUS_C.glob("*.litmus")) + KERNEL_FILES

#: outcomes the LKMM allows that the machine does not reach, and why (LANGUAGE.md)
NOT_EXPLORED = {
    "LB+poonceonces": "load buffering: a load reads a store that is po-later on its CPU's partner",
    "2+2W+poonceonces": "a store ordered before an earlier store in coherence order",
    "2+2W+poreleaseonces": "a store ordered before an earlier store in coherence order",
    "2+2W+wmbonceonces": "a store ordered before an earlier store in coherence order",
    "S+poonceonces": "a store ordered before an earlier store in coherence order",
    "S+wmbonceonce+poonceonce": "a store ordered before an earlier store in coherence order",
    "LB+rmbonceonces": "load buffering: smp_rmb() orders no load before a store",
    "LB+wmbonceonces": "load buffering: smp_wmb() orders no load before a store",
}
#: what the translation has no spec primitive for
UNTRANSLATED = {
    "MP+onceassign+derefonce": "rcu_assign_pointer",
    "MP+wmb+addrpointer": "a pointer value",
    "SB+afterunlocklock": "smp_mb__after_unlock_lock",
    # plain C accesses (`*x = 1`): the spec language has marked accesses only, and the
    # data-race rules they bring are the axiomatic checker's alone
    **{name: "Store" for name in ("CoRR+plain-race", "LB+plain-datadeps", "MP+plain-race", "MP+plainwrite+acquire",
                                  "MP+wmb+ctrl-plain", "SB+plain-race", "plain-barrier-not-mixed", "dep+plain",
                                  "plain-mixed-accesses")},
    "MP+wmb+plainaddr": "a pointer value",
    "MP+assign+deref-rcu": "rcu_assign_pointer",
    # RCU and spin_is_locked: not primitives of the spec language
    **{name: "rcu_read_lock" for name in ("RCU+2readers+1gp", "RCU+2readers+2gps", "RCU+MP+sync", "RCU+SB+sync",
                                          "RCU+nested", "RCU+unbalanced")},
    **{name: "synchronize_rcu" for name in ("RCU+MP+nolock", "SB+syncs")},
    **{name: "spin_is_locked" for name in ("MP+lock+islocked", "islocked-own-section")},
    "lock-mixed-access": "a spinlock read as a value",
    # the kernel's own files (test_litmus_kernel.KERNEL_FILES), where their names differ from ours
    **{name: "spin_is_locked" for name in ("MP+polockmbonce+poacquiresilsil", "MP+polockonce+poacquiresilsil")},
}


def reference(test):
    ref = evaluate(test)
    labels = [k for k, _ in ref.outcomes[0][0].values] if ref.outcomes else []
    return {o.values: sat for o, sat in ref.outcomes}, labels, ref.observation


def observation(got: set, ref: dict) -> str:
    sat = [ref[o] for o in got]
    return "Never" if not any(sat) else "Always" if all(sat) else "Sometimes"


def _id(path: Path) -> str:
    return path.stem if path.parent == LITMUS_C else "kernel/" + path.stem


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_machine_outcomes_are_the_lkmms(path):
    test = load_litmus(str(path))
    ref, labels, obs = reference(test)
    if path.stem in UNTRANSLATED:
        with pytest.raises(Untranslatable, match=UNTRANSLATED[path.stem]):
            outcomes(test, labels=labels)
        return
    got, _states, full, _ = outcomes(test, labels=labels)
    assert full == 0  # no store waited for a full history: the bound changed nothing
    assert got <= set(ref), f"the machine reaches outcomes the LKMM forbids: {got - set(ref)}"
    if path.stem in NOT_EXPLORED:
        assert got != set(ref)  # still true? else the entry goes
    elif test.expected == "DEADLOCK":  # no execution at all (lock.cat), judgelitmus.sh's name for it
        assert got == set(ref) == set()
    else:
        assert got == set(ref)
        assert observation(got, ref) == obs
        assert test.expected in (obs, None)  # (older kernel files state no Result)


@pytest.mark.parametrize("path", [p for p in FILES if p.stem not in UNTRANSLATED], ids=_id)
def test_machine_outcomes_are_among_herd7s(path):
    states, verdict, _, _ = herd7(path)
    test = load_litmus(str(path))
    _, labels, _ = reference(test)
    got, _, _, _ = outcomes(test, labels=labels)
    ours = {frozenset(f"{k}={v}" for k, v in row) for row in got}
    assert ours <= states
    if path.stem not in NOT_EXPLORED:
        assert ours == states


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs())
def test_generated_programs_reach_only_lkmm_outcomes(text):
    """Soundness of `violated` under lkmm: on generated two- and three-CPU programs with
    every store, load, RMW, fence and dependency of the generator, never an outcome
    the LKMM forbids."""
    test = parse_litmus(text, "gen.litmus")
    try:
        ref, labels, _ = reference(test)
    except TooManyCandidates:
        assume(False)
    got, _, full, _ = outcomes(test, labels=labels, bound=4)
    assert got <= set(ref), text


# ------------------------------------------------------------ the machine's own regressions

ISA2_MB_CTRL_ACQ = """C ISA2+mb+ctrl+acq

{}

P0(int *x, int *y)
{
	WRITE_ONCE(*x, 1);
	smp_mb();
	WRITE_ONCE(*y, 1);
}

P1(int *y, int *z)
{
	int r0;
	r0 = READ_ONCE(*y);
	if (r0)
		WRITE_ONCE(*z, 1);
}

P2(int *x, int *z)
{
	int r1;
	int r2;
	r1 = smp_load_acquire(z);
	r2 = READ_ONCE(*x);
}

exists (1:r0=1 /\\ 2:r1=1 /\\ 2:r2=0)
"""


def test_strong_fence_reaches_through_a_relaxed_relay():
    """The LKMM's pb axiom: what P0 stored before its smp_mb() is seen by whatever is
    hb-after the fence, here through P1's relaxed load and control dependency (a machine
    whose views travel only with release stores reaches r2=0, which the LKMM forbids)."""
    test = parse_litmus(ISA2_MB_CTRL_ACQ, "isa2.litmus")
    ref, labels, obs = reference(test)
    got, _, _, _ = outcomes(test, labels=labels)
    assert obs == "Never"
    assert got == set(ref)


LITMUS_SPEC = Path(__file__).parent / "litmus"


@pytest.mark.parametrize("path", sorted(LITMUS_SPEC.glob("*.spec")), ids=lambda p: p.stem)
def test_litmus_suite_lkmm_expectations(path):
    """Each spec-format litmus test carries its lkmm expectation (variant lkmm)."""
    result = check_spec(load(str(path)), Options(variants=("lkmm",), progress=False))
    assert result.all_as_expected
    v = result.variants[0]
    assert v.memory == "lkmm" and v.stats.buffer_full_states == 0


def run_variants(path, variants):
    result = check_spec(load(str(ROOT / path)), Options(variants=tuple(variants), progress=False))
    return {v.variant: {o.property: o.verdict for o in v.outcomes} for v in result.variants}, result


def test_vcpu_requests_barriers_only_non_x86_needs():
    """Dropping smp_mb__before_atomic() before the kick's cmpxchg, smp_mb__after_atomic()
    after set_bit, or smp_wmb() between payload and request bit: violated under lkmm,
    holds under tso; the real code holds under sc, tso and lkmm."""
    got, result = run_variants("models/vcpu_requests.spec", (
        "base", "lkmm", "lkmm_sc", "no_before_atomic", "no_before_atomic_lkmm", "set_bit_plain_mode",
        "set_bit_plain_mode_lkmm", "set_bit_after_atomic_lkmm", "payload", "payload_lkmm", "payload_no_wmb",
        "payload_no_wmb_lkmm"))
    assert result.all_as_expected
    stranded = {k: v["request_not_stranded"] for k, v in got.items()}
    payload = {k: v["request_payload_seen"] for k, v in got.items()}
    for ok in ("base", "lkmm", "lkmm_sc", "no_before_atomic", "set_bit_plain_mode", "set_bit_after_atomic_lkmm"):
        assert stranded[ok] is Verdict.HOLDS, ok
    assert stranded["no_before_atomic_lkmm"] is stranded["set_bit_plain_mode_lkmm"] is Verdict.VIOLATED
    assert payload["payload"] is payload["payload_lkmm"] is payload["payload_no_wmb"] is Verdict.HOLDS
    assert payload["payload_no_wmb_lkmm"] is Verdict.VIOLATED


def test_mp_lkmm_not_expressible_is_violated_under_lkmm():
    review = next((d / "shared" / "reviews" / "language" / "mp_lkmm_not_expressible.spec" for d in ROOT.parents
                   if (d / "shared" / "reviews" / "language").exists()), None)
    if review is None:
        pytest.skip("../shared/reviews is not here")
    result = check_spec(load(str(review)), Options(memory="lkmm", progress=False))
    assert result.variants[0].outcomes[0].verdict is Verdict.VIOLATED
    tso = check_spec(load(str(review)), Options(memory="tso", progress=False))
    assert tso.variants[0].outcomes[0].verdict is Verdict.HOLDS


SPIN = """model spin;
memory lkmm;
var x: 0..1 = 0;
var done: bool = false;
process writer { WRITE_ONCE(x, 1); }
process waiter { while (READ_ONCE(x) == 0) { skip; } done = true; }
property seen: always eventually done;
"""


def test_a_spinning_load_sees_the_store_eventually(tmp_path):
    """Propagation is weakly fair: a CPU spinning on a stale value is not a lasso."""
    f = tmp_path / "spin.spec"
    f.write_text(SPIN)
    result = check_spec(load(str(f)), Options(progress=False))
    o = {o.property: o for o in result.variants[0].outcomes}["seen"]
    assert o.verdict is Verdict.HOLDS
    assert "holds for every LKMM outcome of this model" in o.note  # nothing the machine leaves out can occur
    assert any("propagation" in f_ for f_ in result.variants[0].fairness)


def test_holds_under_lkmm_says_what_is_not_explored(capsys):
    from checker.cli import main
    assert main([str(LITMUS_SPEC / "lb.spec"), "--variant", "lkmm"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the footer wraps to the width
    assert ("holds for the LKMM outcomes this semantics explores (the LKMM of linux-kernel.cat at torvalds/linux "
            "eb5cc113dd2f and lock.cat at 3867a24cc408 (herd7 7.56; before lkmmv2, without rmw-sequences)); "
            "not explored, and possible in this model: load buffering") in out
    assert "no store ever waited for a full history (at most 2 stores kept per location)" in out


def test_a_full_history_is_stated():
    result = check_spec(load(str(ROOT / "models/vcpu_requests.spec")), Options(variants=("lkmm",), progress=False))
    from checker.export.text import history_notes
    v = result.variants[0]
    assert v.stats.buffer_full_states > 0
    assert any("waited for a full history" in line and "lkmm(N)" in line for line in history_notes(result))


def test_promela_refuses_lkmm(tmp_path, capsys):
    from checker.cli import main
    f = tmp_path / "spin.spec"
    f.write_text(SPIN)
    assert main([str(f), "--promela", "-"]) == 2
    assert "memory lkmm" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["bmc", "induction", "pdr"])
def test_the_z3_engines_list_lkmm_variants_as_not_checked(tmp_path, capsys, engine):
    from checker.cli import main
    f = tmp_path / "spin.spec"
    f.write_text(SPIN)
    assert main([str(f), "--engine", engine]) == 3
    assert "not checked: lkmm is explicit-only" in capsys.readouterr().out


def test_every_primitive_has_an_lkmm_meaning():
    from checker.semantics.primitives import BUILTINS
    from checker.memory.lkmm import meaning
    for name, p in BUILTINS.items():
        assert meaning(p), name


def test_trace_shows_the_stale_read(tmp_path):
    import json
    out = tmp_path / "r.json"
    from checker.cli import main
    assert main([str(ROOT / "models/vcpu_requests.spec"), "--variant", "payload_no_wmb_lkmm", "--json", str(out)]) == 0
    text = out.read_text()
    # vcpu_requests has execution contexts: the vCPU thread reads through its CPU's view
    assert "an older store than memory's" in text and "view(cpu0)" in text
    assert "propagate" in text
    json.loads(text)


def test_memory_lkmm_takes_a_history_bound(tmp_path):
    f = tmp_path / "b.spec"
    f.write_text(SPIN.replace("memory lkmm;", "memory lkmm(3);"))
    result = check_spec(load(str(f)), Options(progress=False))
    assert result.variants[0].store_buffer == 3
    f.write_text(SPIN.replace("memory lkmm;", "memory sc(3);"))
    from checker.base.errors import SpecError
    with pytest.raises(SpecError, match="only tso and lkmm are bounded"):
        load_and_check = check_spec(load(str(f)), Options(progress=False))
        assert load_and_check.variants[0].outcomes[0].verdict is Verdict.ERROR


def test_the_machine_misses_the_rmw_sequence_outcome_and_says_so():
    """The pinned linux-kernel.cat has no rmw-sequences: an acquire that reads another
    CPU's relaxed increment of a released value does not synchronise with the release.
    The machine carries the release through the RMW, so it misses that outcome; the
    statement on this model's "holds" names the shape and the RMW."""
    from checker.memory.lkmm import left_out
    from checker.results.trace import lkmm_note

    test = load_litmus(str(ROOT / "tests" / "litmus_gaps" / "MP+releaseinc+acquire.litmus"))
    ref, labels, obs = reference(test)
    got, _, full, text = outcomes(test, labels=labels)
    assert obs == "Sometimes" and full == 0
    assert set(ref) - got == {(("2:r0", 2), ("2:r1", 0))}
    from checker import ir
    from checker.backends.python import compile_program
    from checker.front.parse import parse
    from checker.resolve import resolve
    shapes = left_out(compile_program(ir.build(resolve(parse(text, "m.spec"), "base"))).program)
    note = lkmm_note(shapes)
    assert "a release not carried through another CPU's relaxed RMW (p1's RMW of y" in note
    assert "eb5cc113dd2f" in note
