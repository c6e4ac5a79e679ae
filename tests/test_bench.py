"""The bench models and bench/run.py, at sizes small enough for the test suite.

Timing is never asserted here (that is what bench/run.py is for). What is asserted: the
bench models check as their comments say, their state counts at small N are the ones
SPIN also stores with reductions off (pinned below, and compared live when SPIN is
installed), and the runner produces its table without installing anything.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def _load_bench(name: str):
    """bench/NAME.py as a module (bench/ is scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = mod
    spec.loader.exec_module(mod)
    return mod


run = _load_bench("run")
CHECK = run.check_command(None)

# (family, N) -> distinct states, as our checker counts them and as pan stores them with
# `spin -o3 -a` and `gcc -DNOREDUCE` (measured with SPIN 6.5.2 when these were pinned).
PINNED = {
    ("philosophers", 4): 464,
    ("philosophers", 6): 10_816,
    ("kvm_vcpus", 1): 375,
    ("kvm_vcpus", 2): 46_376,
}
FAMILY = {f.name: f for f in run.FAMILIES}


def check_json(spec: Path, tmp_path: Path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "r.json"
    r = subprocess.run(CHECK + [str(spec), "--brief", "--json", str(out), *args],
                       capture_output=True, text=True)
    return r.returncode, json.loads(out.read_text())


@pytest.mark.parametrize("family,n", sorted(PINNED))
def test_bench_model_state_counts(family, n, tmp_path):
    code, result = check_json(FAMILY[family].spec, tmp_path, "-D", f"N={n}", "--variant", "base", "--no-por",
                              "--no-symmetry")
    assert code == 0
    (base,) = result["variants"]
    assert base["stats"]["complete"]
    assert base["stats"]["states"] == PINNED[(family, n)]
    assert all(o["verdict"] == "holds" for o in base["outcomes"])


def test_kvm_model_catches_a_missing_request_check(tmp_path):
    """The bench model is not vacuous: without the re-check after `mode = IN_GUEST_MODE`
    a timer request goes unannounced (and with one vCPU, everything stops)."""
    code, result = check_json(FAMILY["kvm_vcpus"].spec, tmp_path, "-D", "N=1")
    assert code == 0  # every variant as its `expect` says
    bug = next(v for v in result["variants"] if v["name"] == "no_request_check")
    verdicts = {o["property"]: o["verdict"] for o in bug["outcomes"]}
    assert verdicts["no_lost_timer"] == "violated"


def test_promela_instance_sets_the_size_and_expands_forall():
    text = run.promela_instance(FAMILY["philosophers"].promela, "N", 3)
    head = text.splitlines()[:2]
    assert head == ["#define N 3", "#define FORALL_N(P) (P(0) && P(1) && P(2))"]
    assert "active [N] proctype phil()" in text


def test_runner_prints_a_table_without_spin(tmp_path, capsys):
    out = tmp_path / "bench.json"
    code = run.main(["--model", "kvm_vcpus=1", "--repeats", "1", "--no-spin", "--no-shipped",
                     "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "kvm_vcpus" in text and "375" in text
    data = json.loads(out.read_text())
    assert data["bench"][0]["ours_noreduce"]["states"] == 375  # the count SPIN must agree with
    assert data["bench"][0]["ours"]["states"] <= 375  # the timed run, with reductions
    assert data["bench"][0]["spin"] is None


def test_runner_rejects_an_unknown_family():
    with pytest.raises(SystemExit) as e:
        run.main(["--model", "nosuch"])
    assert e.value.code == 2


@pytest.mark.skipif((shutil.which("spin") is None or shutil.which("gcc") is None) and not os.environ.get("CI"),
                    reason="SPIN or gcc not installed (tests/install-tools.sh installs them); under CI this fails")
def test_spin_stores_the_same_states_without_reductions(tmp_path, capsys):
    sizes = [("kvm_vcpus", 1)]  # one family: each size compiles pan twice (test_promela has the shipped models)
    argv = ["--repeats", "1", "--no-shipped", "--json", str(tmp_path / "b.json")]
    for family, n in sizes:
        argv += ["--model", f"{family}={n}"]
    code = run.main(argv)
    capsys.readouterr()
    rows = json.loads((tmp_path / "b.json").read_text())["bench"]
    assert code == 0
    for (family, n), row in zip(sizes, rows):
        assert (row["family"], row["n"]) == (family, n)
        assert row["spin_noreduce"]["states"] == row["ours_noreduce"]["states"] == PINNED[(family, n)]
        assert row["counts_agree"] is True
        assert row["spin"]["errors"] == 0
        assert row["spin"]["states"] <= row["spin_noreduce"]["states"]  # POR only removes states


def test_speedup_compares_neighbouring_runs(capsys, monkeypatch):
    """The format of bench/speedup.py's lines, on canned timings (the timing itself is
    what the bench is for; a test only checks what it prints of the numbers)."""
    speedup = _load_bench("speedup")
    canned = {1: ([2.0], 2.1), 2: ([1.25], 2.4)}

    def fake(check, args, workers, at_once=1):
        if at_once > 1:
            return [2.2, 2.4], 4.6
        return canned[workers]

    monkeypatch.setattr(speedup, "search_seconds", fake)
    model = str(BENCH / "models" / "kvm_vcpus.spec")
    assert speedup.main(["--triples", "1", model, "-D", "N=1", "--variant", "base"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1 worker 2.00 s, 2 workers 1.25 s, 1 worker 2.00 s: 1.60x"
    assert lines[1] == ("medians: 1 worker 2.00 s (CPU 2.10 s), 2 workers 1.25 s (CPU 2.40 s), "
                        "speed-up 1.60x")
    # --ceiling: two one-worker searches at once after each triple, each timed
    assert speedup.main(["--triples", "1", "--ceiling", model, "-D", "N=1", "--variant", "base"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("; 2 one-worker searches at once 2.20, 2.40 s: ceiling 1.67x, efficiency 96%"), lines[0]
    assert lines[1].endswith(", ceiling 1.67x, efficiency 96%"), lines[1]


def test_fingerprint_bench_times_each_step_of_states(capsys):
    _load_bench("fingerprints").main(["3000", "--every", "1000", "--capacity", "8"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["1,000", "2,000", "3,000"]
    assert all(re.fullmatch(r" *[\d,]+ states: +\d+\.\d\d s for the last 1,000", line) for line in lines[:3]), lines
    assert re.fullmatch(r"3,000 states in \d+\.\d\d s; table of 8,192 slots, 3,000 stored", lines[3]), lines[3]


def test_startup_bench_reports_the_least_cpu_of_its_runs(capsys, tmp_path):
    """One run of `check` on its 3-state model (and of `python -c pass`); the figures
    are the bench's, the test only checks that they are there and that the run passed."""
    out = tmp_path / "startup.json"
    assert _load_bench("startup").main(["--repeats", "1", "--no-instructions", "--json", str(out),
                                        *(["--check", CHECK[0]] if len(CHECK) == 1 else [])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("start-up of ") and "on a 3-state model (.pyc " in lines[0], lines
    assert re.fullmatch(r"  CPU, least of 1: \d+\.\d{3} s   \(python -c pass: \d+\.\d{3} s\)", lines[1]), lines
    figures = json.loads(out.read_text())
    assert figures["cpu_s"] > figures["python_cpu_s"] > 0 and "instructions" not in figures


def test_coverage_bench_compares_runs_with_and_without_coverage(capsys):
    """One run each way on a small shipped variant: a row with both CPU figures and their
    ratio (the figures are the bench's; the test checks the row is made of them)."""
    assert _load_bench("coverage_cost").main(["--repeats", "1", "models/timer_migration.spec:base",
                                              *(["--check", CHECK[0]] if len(CHECK) == 1 else [])]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["target", "default", "--no-coverage", "ratio"]
    name, with_cov, without, ratio = row.split()
    assert name == "models/timer_migration.spec:base" and float(with_cov) > 0 and float(without) > 0
    assert abs(float(ratio) - float(with_cov) / float(without)) < 0.01


def test_lkmm_cost_bench_measures_each_cell_apart_with_its_memory(capsys, monkeypatch):
    """`--memory`: each cell in a process of its own, states / CPU / peak MB; the states
    are csd_wait_ipi's base under sc, x86-TSO and lkmm (the figures are the bench's)."""
    monkeypatch.setattr(sys, "argv", ["lkmm_cost.py", "--memory", "csd_wait_ipi"])
    _load_bench("lkmm_cost").main()
    row = capsys.readouterr().out.splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "`models/csd_wait_ipi.spec`"
    got = [re.fullmatch(r"([\d,]+) / \d+\.\d s / (\d+) MB", c) for c in cells[1:4]]
    assert all(got), cells
    assert [g.group(1) for g in got] == ["16", "23", "30"] and all(int(g.group(2)) > 10 for g in got)
