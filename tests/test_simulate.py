"""Random simulation: `check --simulate N --depth D --seed S` (engines/simulate.py)."""

from __future__ import annotations

import json
from pathlib import Path

from checker.cli import main
from checker.engines.simulate import SimulationPlan, simulate
from checker.front.parse import parse
from checker.pipeline import Options, check_spec, compile_variant, load

ROOT = Path(__file__).parent.parent
KVM = str(ROOT / "bench" / "models" / "kvm_vcpus.spec")
COUNTER = str(ROOT / "tests" / "models" / "counter.spec")


def sim(path: str, *args: str) -> list[str]:
    return [path, "--simulate", *args]


def test_simulation_finds_the_buggy_variant_of_the_bench_model(capsys):
    code = main(sim(KVM, "200", "--depth", "200", "--seed", "1", "-D", "N=2", "--variant", "no_request_check"))
    out = capsys.readouterr().out
    assert "random simulation" in out.splitlines()[0]
    assert "no_lost_timer  violated" in out and "found by random simulation (seed 1)" not in out.splitlines()[0]
    assert code == 3  # the expected violation is shown, and deadlock stays unverified: never "holds"


def test_simulation_is_reproducible_with_its_seed():
    spec = load(KVM)
    opts = Options(defines={"N": "2"})
    cm = compile_variant(spec, "no_request_check", opts)
    plan = SimulationPlan(50, 100, 7)
    a, _, sa = simulate(cm, plan)
    b, _, sb = simulate(cm, plan)
    assert a.keys() == b.keys() and a
    assert all(a[k].trace == b[k].trace for k in a)
    assert sa.states == sb.states


def test_simulation_never_says_holds(capsys):
    code = main(sim(COUNTER, "20", "--depth", "10", "--variant", "atomic_inc"))
    out = capsys.readouterr().out
    assert code == 3
    assert "not violated in 20 random runs of up to 10 steps (seed 0)" in out
    v = check_spec(load(COUNTER), Options(variants=("atomic_inc",), simulate=SimulationPlan(20, 10, 0))).variants[0]
    assert v.outcomes and all(o.verdict.value == "incomplete" for o in v.outcomes)


def test_simulation_reports_an_unexpected_violation_with_exit_1(capsys):
    code = main(sim(COUNTER, "50", "--depth", "10", "--no-expect", "--variant", "base"))
    out = capsys.readouterr().out
    assert code == 1 and "both_counted" in out and "Counterexample: variant base" in out


def test_simulation_checks_asserts_and_deadlock_not_liveness():
    spec = parse("""model s;
var x: 0..2 = 0;
process p { x = 1; assert small: x == 0; }
process q { await x == 2; }
property live: always eventually x == 1;
""", "s.spec")
    v = check_spec(spec, Options(simulate=SimulationPlan(10, 10, 3))).variants[0]
    by = {o.property: o for o in v.outcomes}
    assert by["small"].verdict.value == "violated" and by["small"].counterexample.trace.failure is not None
    assert by["deadlock"].verdict.value == "violated"
    assert by["live"].verdict.value == "incomplete" and "does not check liveness" in by["live"].note
    assert not v.stats.complete


def test_simulated_trace_replays(tmp_path, capsys):
    out = tmp_path / "r.json"
    main(sim(COUNTER, "50", "--depth", "10", "--variant", "base", "--json", str(out)))
    doc = json.loads(out.read_text())
    assert doc["variants"][0]["stats"]["engine"] == "simulate"
    capsys.readouterr()
    code = main([COUNTER, "--replay", str(out), "--replay-pick", "base/both_counted"])
    assert code == 0 and "still violated" in capsys.readouterr().out


def test_simulate_options(capsys):
    import pytest

    with pytest.raises(SystemExit) as info:
        main(sim(COUNTER, "2", "--engine", "bmc"))
    assert info.value.code == 2
    assert "--simulate" in capsys.readouterr().err
    assert main(sim(COUNTER, "2", "--depth", "3")) in (1, 3)  # --depth goes with --simulate



DIV0 = """model m;
var x: 0..1 = 0;
process p { x = 1; }
invariant i: x / 0 == 0;
"""


def test_a_property_that_divides_by_zero_is_a_model_error_not_a_traceback(tmp_path, capsys):
    """round2/repro_simulate_div0_invariant.spec: the search reports the model error; so
    must a simulation (it used to let ModelError escape)."""
    path = tmp_path / "div0.spec"
    path.write_text(DIV0)
    searched = main([str(path)])
    search_out = capsys.readouterr().out
    code = main([str(path), "--simulate", "5"])
    out, err = capsys.readouterr()
    assert code == searched == 1 and "Traceback" not in err
    assert "(model error)  error" in out and "evaluating invariant i: division by zero" in out
    assert "evaluating invariant i: division by zero" in search_out
    v = check_spec(parse(DIV0, "d.spec"), Options(simulate=SimulationPlan(5, 10, 0))).variants[0]
    assert v.model_error is not None and v.model_error.trace.length == 0 and v.model_error.trace.failure is None


LOCK = """// nine right choices in a row open the lock; either wrong one resets it
model lock;
var pos: 0..9 = 0;
process p {
  loop {
    choose { pos = pos + 1; } or { pos = 0; } or { pos = 0; }
  }
}
invariant closed: pos < 9;
"""


def test_a_shallow_bug_behind_unlikely_choices_is_found():
    """A 9-step bug in a 10-state model: a uniform walk takes the one right branch of
    three nine times in a row with probability 1/3^9, and missed it in 200 runs of 30
    steps (issue 32); the walk that prefers states no run has seen finds it at once."""
    v = check_spec(parse(LOCK, "lock.spec"), Options(simulate=SimulationPlan(200, 30, 0))).variants[0]
    by = {o.property: o for o in v.outcomes}
    assert by["closed"].verdict.value == "violated" and by["closed"].counterexample.trace.length == 9
    assert v.stats.states == 10  # every state of the model, counted once


def test_a_simulation_says_how_much_it_covered(capsys):
    code = main(sim(COUNTER, "20", "--depth", "10", "--variant", "atomic_inc", "--no-por"))
    out = capsys.readouterr().out
    assert code == 3
    searched = check_spec(load(COUNTER), Options(variants=("atomic_inc",), por=False, symmetry="off")).variants[0].stats.states
    assert f"not violated in 20 random runs of up to 10 steps (seed 0), through {searched} distinct states" in out
    row = next(line for line in out.splitlines() if line.startswith("atomic_inc"))
    assert row.split()[5] == str(searched)  # the table's states column: the distinct states the runs went through
