"""Bounded model checking and k-induction in Z3, and the replay that checks them."""

import pytest
import z3

from checker.cli import main
from checker.engines.smt import encode
from checker.engines.smt.bmc import bmc
from checker.engines.smt.induction import induction
from checker.results.trace import Verdict

from agreement import assert_engines_agree, compiled

COUNTER = """
model counter;
const ATOMIC = false;
var x: 0..2 = 0;
process inc[2] {
  var r: 0..2 = 0;
  if (ATOMIC) { atomic { x = x + 1; } } else { r = x; x = r + 1; }
  end: skip;
}
invariant both_counted: (inc[0]@end && inc[1]@end) -> x == 2;
expect violated both_counted;
variant atomic_inc { ATOMIC = true; }
"""


def _run(tmp_path, text, *args):
    f = tmp_path / "m.spec"
    f.write_text(text)
    try:
        return main([str(f), *args])
    except SystemExit as e:  # usage errors
        return e.code


def test_bmc_finds_the_lost_update_at_the_explicit_depth():
    cm = compiled(COUNTER)
    exp, got = assert_engines_agree(cm, 6)
    assert exp["both_counted"] == got["both_counted"] == 4
    r = bmc(cm, 6)
    cx = r.findings["both_counted"].counterexample
    assert cx.engine == "bmc" and cx.trace.length == 4
    assert [a.text for a in cx.trace.actions].count("x = r + 1;") == 2


def test_bmc_table_names_the_engine_and_passes_expectations(tmp_path, capsys):
    assert _run(tmp_path, COUNTER, "--engine", "bmc", "--depth", "6", "--brief") == 0
    out = capsys.readouterr().out
    assert "bounded model checking (Z3)" in " ".join(out.split())  # the header wraps
    assert "both_counted  violated  violated  ok" in out and " bmc" in out


def test_bmc_without_violation_is_not_holds(tmp_path, capsys):
    text = "model m; var x: 0..9 = 0; process p { loop { if (x < 9) x = x + 1; } }\ninvariant small: x <= 9;"
    assert _run(tmp_path, text, "--engine", "bmc", "--depth", "3", "--brief") == 3
    out = capsys.readouterr().out
    assert "small     no violation up to depth 3  holds     INCOMPLETE" in out


def test_bmc_is_complete_when_no_longer_loop_free_path_exists(tmp_path, capsys):
    text = "model m; var x: 0..3 = 0; process p { loop { if (x < 3) x = x + 1; } }\ninvariant small: x <= 3;"
    assert _run(tmp_path, text, "--engine", "bmc", "--depth", "8", "--brief") == 0
    assert "small     holds" in capsys.readouterr().out


def test_bmc_treats_any_over_u64_symbolically(tmp_path, capsys):
    text = "model m;\nvar now: u64 = any;\nprocess p { now = now + 1; assert no_wrap: now != 0; }\n"
    assert _run(tmp_path, text, "--brief") == 2  # the explicit engine cannot enumerate 2**64 states
    capsys.readouterr()
    assert _run(tmp_path, text, "--engine", "bmc", "--depth", "3") == 1
    out = capsys.readouterr().out
    assert "now = 18446744073709551615" in out and "fails here" in out


def test_bmc_reports_a_model_error_with_its_trace(tmp_path, capsys):
    text = "model m; var x: 0..2 = 0; process p { loop { x = x + 1; } }"
    cm = compiled(text)
    assert_engines_agree(cm, 5)
    r = bmc(cm, 5)
    assert r.model_error is not None and r.model_error.trace.length == 2
    assert "outside the range of x" in r.model_error.message
    assert _run(tmp_path, text, "--engine", "bmc") == 1


def test_deadlock_and_wait_queues_agree():
    text = """model wq; const CHECK = true; var cond: bool = false; waitqueue wq;
    process sleeper { prepare_to_wait(wq); if (CHECK) { if (!cond) schedule(); } else { schedule(); }
                      finish_wait(wq); done: assert cond; }
    process waker { cond = true; smp_mb(); if (waitqueue_active(wq)) wake_up(wq); }
    variant nocheck { CHECK = false; } expect violated deadlock;"""
    assert_engines_agree(compiled(text), 12)
    exp, got = assert_engines_agree(compiled(text, "nocheck"), 12)
    assert exp["deadlock"] == got["deadlock"]


def test_a_replay_disagreement_is_reported_as_a_checker_bug(tmp_path, capsys, monkeypatch):
    real = encode.Evaluator.raw

    def off_by_one(self, v, t, slot):  # a deliberately wrong encoding of stores
        r = real(self, v, t, slot)
        return r + 1 if self.enc.layout.slots[slot].name == "x" else r
    monkeypatch.setattr(encode.Evaluator, "raw", off_by_one)
    r = bmc(compiled(COUNTER), 6)
    assert r.findings["both_counted"].verdict is Verdict.CHECKER_BUG or r.checker_bugs
    assert _run(tmp_path, COUNTER, "--engine", "bmc", "--depth", "6") == 1
    captured = capsys.readouterr()
    assert "CHECKER BUG" in captured.out and "CHECKER BUG" in captured.err
    assert "does not replay through the compiled steps" in captured.err


@pytest.mark.parametrize("engine", ["bmc", "induction", "pdr"])
def test_a_tso_variant_is_decided_by_every_z3_engine_and_an_lkmm_one_listed_not_checked(tmp_path, capsys, engine):
    text = ("model m; var x: 0..1 = 0; process p { x = 1; } invariant one: x <= 1;\n"
            "variant under_tso { memory tso; }\nvariant under_lkmm { memory lkmm; }\n")
    assert _run(tmp_path, text, "--engine", engine) == 3  # a variant not checked: not verified
    out = capsys.readouterr().out
    assert "under_lkmm: not checked: lkmm is explicit-only" in out and "tso is explicit-only" not in out
    assert f"x86-TSO under --engine {engine} (under_tso): store buffers of at most 2" in out
    base = next(line.split() for line in out.splitlines() if line.startswith("base"))
    assert base[3] in ("holds", "proved"), base
    tso = next(line.split() for line in out.splitlines() if line.startswith("under_tso"))
    assert tso[3] in ("holds", "proved"), tso
    lkmm = next(line.split() for line in out.splitlines() if line.startswith("under_lkmm"))
    assert lkmm[3] == "not", lkmm  # "not checked"


def test_a_memory_model_override_is_said(tmp_path, capsys):
    text = "model m; memory tso; var x: 0..1 = 0; process p { x = 1; }"
    assert _run(tmp_path, text, "--memory-model", "sc") == 0
    assert "base: --memory-model sc overrides the variant's `memory tso`: what only tso allows is not checked" \
        in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--depth", "3"], "--depth is for --engine bmc or induction"),
    (["--engine", "bmc", "--max-depth", "3"], "explicit engine"),
    (["--engine", "bmc", "--timeout", "0"], "positive number of seconds"),
    (["--engine", "smt"], "invalid choice"),
])
def test_engine_option_errors(tmp_path, capsys, args, message):
    assert _run(tmp_path, COUNTER, *args) == 2
    assert message in capsys.readouterr().err


def test_bmc_output_is_deterministic(tmp_path, capsys):
    outs = []
    for _ in range(2):
        _run(tmp_path, COUNTER, "--engine", "bmc", "--depth", "6")
        outs.append("\n".join(line for line in capsys.readouterr().out.splitlines() if "0." not in line))
    assert outs[0] == outs[1]


# ---- k-induction --------------------------------------------------------------

STAIRS = """
model stairs;
var x: 0..10 = 0;
var y: 0..10 = 0;
process p { loop { atomic { if (x < 5) { x = x + 1; y = y + 1; } } } }
invariant y_small: y <= 5;
"""


def test_induction_proves_an_inductive_invariant(tmp_path, capsys):
    assert _run(tmp_path, COUNTER, "--engine", "induction", "--depth", "4", "--variant", "atomic_inc") == 0
    out = capsys.readouterr().out
    assert "both_counted  proved" in out and "k-induction (Z3)" in out


def test_induction_reports_a_counterexample_to_induction(tmp_path, capsys):
    r = induction(compiled(STAIRS), 2)
    f = r.findings["y_small"]
    assert f.verdict is Verdict.INCOMPLETE
    cx = f.counterexample
    assert cx.kind == "counterexample to induction" and cx.trace.length == 3
    first = dict(cx.trace.states[0].values)
    assert first["x"] != first["y"]  # an unreachable state: x == y in every reachable one
    assert _run(tmp_path, STAIRS, "--engine", "induction", "--depth", "2") == 3
    out = capsys.readouterr().out
    assert "Counterexample to induction" in out and "may be unreachable" in out
    assert "not proved (k <= 2)" in out


def test_induction_succeeds_with_a_larger_k_or_a_strengthening():
    assert induction(compiled(STAIRS), 8).findings["y_small"].verdict is Verdict.PROVED
    strong = STAIRS + "invariant same: x == y;\n"
    r = induction(compiled(strong), 0)
    assert r.findings["y_small"].verdict is Verdict.PROVED and r.stats.complete


def test_induction_base_case_finds_real_violations():
    r = induction(compiled(COUNTER), 6)
    f = r.findings["both_counted"]
    assert f.verdict is Verdict.VIOLATED and f.counterexample.trace.length == 4


def test_final_conditions_and_process_locals_agree():
    """`final` conditions (checked in final states) and `p.r` reads of process locals."""
    text = """model lost; var x: 0..2 = 0;
    process inc[2] { var r: 0..2 = 0; r = x; x = r + 1; }
    final both: x == 2 && inc[0].r + inc[1].r >= 1;
    invariant locals_small: forall i in 0..1: (inc[i].r <= 1);"""
    exp, got = assert_engines_agree(compiled(text), 6)
    assert exp == got == {"both": 4}
    r = bmc(compiled(text), 6)
    assert "final condition both is violated" in r.findings["both"].counterexample.message


def test_bit_numbers_out_of_range_agree():
    text = """model bits; var b: bitset(3) = {0}; var i: 0..4 = 0;
    process p { loop { if (i < 4) i = i + 1; assert test_bit(0, b) || test_bit(i, b); if (test_bit(i, b)) skip; } }"""
    cm = compiled(text)
    assert_engines_agree(cm, 12)  # the explicit engine stops at bit 3, a model error
    assert "outside b bit" in bmc(cm, 12).model_error.message


def test_a_query_timeout_leaves_only_its_property_undecided(monkeypatch):
    """A query about `b` that runs out of time from depth 2 on leaves b_zero undecided
    there; a_small is still searched to the bound (the whole run stopped at depth 2)."""
    from checker.engines.smt import bmc as bmc_module

    text = """model m; var a: 0..3 = 0; var b: 0..3 = 0;
    process p { loop { if (a < 3) a = a + 1; } }
    invariant a_small: a <= 3;
    invariant b_zero: b == 0;
    """
    real = bmc_module.Unrolling.check

    def check(self, *formulas):
        if len(self.frames) > 2 and any(f"{len(self.frames) - 1}:b" in str(f) for f in formulas):
            return z3.unknown, None, "the solver timed out (raise --timeout)"
        return real(self, *formulas)

    monkeypatch.setattr(bmc_module.Unrolling, "check", check)
    r = bmc(compiled(text), 5)
    b = r.findings["b_zero"]
    assert b.verdict is Verdict.INCOMPLETE and b.bound == 1
    assert b.note == "the solver timed out (raise --timeout) at depth 2"
    a = r.findings["a_small"]
    assert a.verdict is Verdict.INCOMPLETE and a.bound == 5 and a.note == "no violation up to depth 5"
    assert not r.stats.complete
