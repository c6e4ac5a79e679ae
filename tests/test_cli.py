"""The `check` command: exit codes, output, --json, --dump-python, interrupts, determinism."""

import json
import os
import subprocess
import sys


from checker import pipeline as run_module
from checker.cli import main

from conftest import COUNTER  # noqa: F401  (the `counter` fixture writes it)

def test_exit_0_when_every_expectation_is_met(counter, capsys):
    assert main([counter]) == 0
    out = capsys.readouterr().out
    assert "every outcome is as expected" in out
    lines = [ln for ln in out.splitlines() if ln.startswith(("base", "atomic_inc"))]
    assert lines[0].split()[:4] == ["base", "both_counted", "violated", "violated"]
    assert lines[1].split()[:4] == ["atomic_inc", "both_counted", "holds", "holds"]


def test_exit_1_with_no_expect_prints_trace_and_race_diagram(counter, capsys):
    assert main([counter, "--variant", "base", "--no-expect"]) == 1
    out = capsys.readouterr().out
    assert "Counterexample: variant base, invariant both_counted" in out
    assert "1. inc[0]" in out and "counter.spec:8" in out
    assert "inc[0]" in out.split("Trace:")[1] and " | " in out  # the race diagram's columns
    assert "UNEXPECTED" in out


def test_exit_1_when_an_expected_violation_does_not_happen(counter, capsys):
    assert main([counter, "--variant", "atomic_inc", "-D", "ATOMIC=true"]) == 0
    assert main([counter, "--variant", "base", "-D", "ATOMIC=true"]) == 1
    assert "differ from expectations" in capsys.readouterr().out


def test_exit_2_on_bad_input(tmp_path, capsys):
    p = tmp_path / "bad.spec"
    p.write_text("model m;\nprocess p { x = ; }\n")
    assert main([str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad.spec:2:17: error: unexpected ';'" in err and "Traceback" not in err


def test_exit_3_when_a_limit_cuts_the_search(counter, capsys):
    assert main([counter, "--variant", "atomic_inc", "--max-states", "2"]) == 3
    out = capsys.readouterr().out
    assert "incomplete" in out and "not verified" in out
    row = next(ln for ln in out.splitlines() if ln.startswith("atomic_inc"))
    assert row.split()[2] == "incomplete"  # never "holds" after a cut-short search


def test_exit_1_beats_incomplete(counter, capsys):
    # a violation found before the limit still decides the outcome
    assert main([counter, "--no-expect", "--max-depth", "4"]) == 1


def test_ctrl_c_prints_partial_results_and_exits_3(counter, capsys, monkeypatch):
    class Interrupting:
        def __init__(self, *a, **k):
            self.label = ""

        def tick(self, *a):
            raise KeyboardInterrupt

        def done(self):
            pass

    monkeypatch.setattr(run_module, "Progress", Interrupting)
    # progress ticks every 1024 states; use a model big enough to reach one
    p = os.path.join(os.path.dirname(counter), "big.spec")
    with open(p, "w") as f:
        f.write("model m; var a: 0..63 = 0; var b: 0..63 = 0;\n"
                "process p { loop { a = (a + 1) % 64; } }\nprocess q { loop { b = (b + 1) % 64; } }\n")
    assert main([p, "--no-deadlock"]) == 3
    captured = capsys.readouterr()
    assert "interrupted" in captured.err
    assert "incomplete" in captured.out


def test_json_output(counter, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main([counter, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["model"] == "counter" and data["version"] == 3
    base = data["variants"][0]
    # the default search reduces by symmetry (13 states without); the JSON says so
    assert base["name"] == "base" and base["stats"]["states"] == 8 and base["stats"]["ample_states"] == 0
    assert "symmetry: states counted up to permutations of inc[2]" in base["stats"]["reductions"]
    o = next(o for o in base["outcomes"] if o["property"] == "both_counted")
    assert o["verdict"] == "violated" and o["as_expected"]
    actions = o["counterexample"]["trace"]["actions"]
    assert actions[0]["process"] == "inc[0]" and actions[0]["line"] == 8
    assert actions[2]["changes"] == {"x": 1}


def test_dump_python_prints_the_step_functions(counter, capsys):
    assert main([counter, "--dump-python", "--variant", "base"]) == 0
    code = capsys.readouterr().out
    assert "def inc0_step0(s):" in code and "# inc[0]:" in code
    compile(code, "dump", "exec")  # it is valid Python


def _run_check(args, seed):
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    r = subprocess.run([sys.executable, "-m", "checker", *args], capture_output=True, text=True, env=env)
    return r.returncode, r.stdout


def test_same_results_under_different_hash_seeds(counter, tmp_path):
    outs = []
    for seed in (1, 2, 3):
        j = tmp_path / f"r{seed}.json"
        code, text = _run_check([counter, "--json", str(j)], seed)
        assert code == 0
        data = json.loads(j.read_text())
        data.pop("command")
        for v in data["variants"]:
            assert "seconds" not in v["stats"]  # no wall-clock time in files unless --with-timing
        outs.append((data, "\n".join(ln for ln in text.splitlines() if "s  " not in ln)))
    assert outs[0] == outs[1] == outs[2]


def test_python_dash_m_and_version():
    r = subprocess.run([sys.executable, "-m", "checker", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("timerace ")


def test_workers_default_to_the_free_cores():
    """--workers defaults to the cores no other process keeps busy (issue 30): a worker
    sharing a core only takes turns, and two such workers lose to one."""
    from checker.pipeline import free_cores

    assert free_cores(2, 0.0) == 2
    assert free_cores(2, 0.4) == 2  # a little background work leaves both
    assert free_cores(2, 1.0) == 1
    assert free_cores(2, 9.5) == 1  # a busy machine: one, never none
    assert free_cores(8, 3.2) == 5
    assert free_cores(4, -1.0) == 4  # never more than there are


def test_a_file_argument_is_a_path_or_a_shipped_models_name(tmp_path):
    """`check ARG` and the bench scripts read the same file (base.shipped.model_file)."""
    from checker.base.shipped import model_file, shipped_model

    here = tmp_path / "pi_timer.spec"
    here.write_text("model x;\n")
    assert model_file(str(here)) == str(here)  # an existing path, unchanged
    assert model_file("pi_timer") == str(shipped_model("pi_timer")) and model_file("pi_timer").endswith(".spec")
    assert model_file("no_such_model") == "no_such_model"  # reading it reports it missing
