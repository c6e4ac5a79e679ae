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
