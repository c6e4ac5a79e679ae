"""Runs cut short from outside: signals (Ctrl-C, SIGTERM, SIGKILL), a memory limit, and
what such a run says about the variants it never reached (issue 15, items 4, 6, 8, 11).

The signal and memory tests run `check` as a subprocess in a session of its own, so
that its workers can be found by their process group after it died; each waits for a
condition it can see (the workers exist, Z3 is loaded, the search shows progress)
rather than for a fixed time, and every wait is bounded."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checker import pipeline as run_module
from checker.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: two variants; the base's search (unreduced) runs for seconds, long enough to be cut short
# the Python loop (its workers, its memory): --loop auto would move to the C loop once built
BIG = [str(ROOT / "bench/models/kvm_vcpus.spec"), "-D", "N=3", "--no-por", "--no-symmetry", "--loop", "python"]
WAIT = 120  # seconds: the bound of every wait (a loaded machine is slow, never this slow)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _start(folder: Path, args: list[str], **popen) -> subprocess.Popen:
    """`check ARGS` in `folder`, its output to files there (a pipe would stay open as
    long as an orphaned worker holds it), in a new session."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "out.txt", "w") as out, open(folder / "err.txt", "w") as err:
        return subprocess.Popen([sys.executable, "-m", "checker", *args], cwd=folder, stdout=out, stderr=err,
                                start_new_session=True, **popen)


def _group(leader: int) -> list[int]:
    """The live processes of `leader`'s process group other than the leader: its workers,
    whoever their parent is now."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == leader:
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == leader:
            pids.append(int(d))
    return pids


def _wait_for(p: subprocess.Popen, folder: Path, what: str, ready) -> None:
    """Poll until ready() holds; fail if the run ends first or after WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while not ready():
        if p.poll() is not None:
            pytest.fail(f"check ended (exit {p.returncode}) before {what}:\n" + (folder / "err.txt").read_text())
        if time.monotonic() > deadline:
            pytest.fail(f"no sign of {what} after {WAIT} s")
        time.sleep(0.05)


def _left_behind(leader: int, within: float = 30.0) -> list[int]:
    """The group's processes still alive `within` seconds after the leader ended (an
    empty list as soon as there are none)."""
    deadline = time.monotonic() + within
    while (pids := _group(leader)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


@pytest.fixture
def started():
    """Starts runs and, whatever the test did, kills what is left of them afterwards."""
    procs: list[subprocess.Popen] = []

    def start(folder: Path, args: list[str], **popen) -> subprocess.Popen:
        p = _start(folder, args, **popen)
        procs.append(p)
        return p

    yield start
    for p in procs:
        for pid in _group(p.pid) + ([p.pid] if p.poll() is None else []):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait(timeout=WAIT)


def _workers_running(p: subprocess.Popen):
    return lambda: len(_group(p.pid)) >= 2


# ---- item 4: workers die with the coordinator; SIGTERM is Ctrl-C ------------------------


def test_killed_parent_leaves_its_workers_running(tmp_path, started):
    """kill -9 (as the OOM killer does) of a `check --workers 2` left both workers running
    for ever, reparented, each blocked on a pipe the other held open."""
    p = started(tmp_path, [*BIG, "--workers", "2"])
    _wait_for(p, tmp_path, "the workers", _workers_running(p))
    p.kill()
    assert p.wait(timeout=WAIT) == -signal.SIGKILL
    assert _left_behind(p.pid) == []


def test_sigterm_kills_the_run_without_a_result_and_orphans_the_workers(tmp_path, started):
    """`kill PID` / Popen.terminate() on `check --workers 2` ended it with no table, no
    files and both workers left running; it must end as Ctrl-C does: the partial result,
    exit 3, the --json file written, no worker left."""
    p = started(tmp_path, [*BIG, "--workers", "2", "--json", "r.json"])
    _wait_for(p, tmp_path, "the workers", _workers_running(p))
    p.terminate()
    assert p.wait(timeout=WAIT) == 3, (tmp_path / "err.txt").read_text()
    assert _left_behind(p.pid) == []
    assert "interrupted" in (tmp_path / "err.txt").read_text()
    assert "incomplete" in (tmp_path / "out.txt").read_text()
    doc = json.loads((tmp_path / "r.json").read_text())
    base, rest = doc["variants"][0], doc["variants"][1]
    assert base["stats"]["complete"] is False and base["stats"]["limit"] == "interrupted"
    assert base["stats"]["states"] > 0
    assert {o["verdict"] for o in base["outcomes"]} == {"incomplete"}
    assert rest["name"] == "no_request_check" and rest["stats"]["limit"] == "not checked"
    assert not doc["all_as_expected"]



# ---- item 6: out of memory is a limit ------------------------------------------------------


def _address_space_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmSize:")) // 1024


#: the address space a search may grow by past the probe's measurement before it runs out
#: (with --workers 2: after two threads' stacks in each worker); a second or two of search
HEADROOM_MIB = {1: 12, 2: 28}


@pytest.mark.parametrize("workers", [1, 2])
def test_out_of_memory_in_a_search_gives_a_partial_result(tmp_path, started, workers):
    """A search that ran out of memory ended in a MemoryError traceback (with --workers, a
    worker's RuntimeError), exit 1, no table, no partial result, no JSON. It must end as a
    limit does: "out of memory after N states", exit 3, the --json file written and
    partial, the variants after it not checked."""
    env = dict(os.environ, MALLOC_ARENA_MAX="1")  # no per-thread malloc arenas: a steadier address space
    args = [*BIG, "--workers", str(workers)]
    # the limit: what the same command takes once its search is under way (workers: the
    # coordinator when it forks them), measured on a probe run, plus a little
    probe = started(tmp_path / "probe", [*args, "--progress"], env=env)
    if workers == 1:
        _wait_for(probe, tmp_path / "probe", "progress", lambda: "states" in (tmp_path / "probe/err.txt").read_text())
    else:
        _wait_for(probe, tmp_path / "probe", "the workers", _workers_running(probe))
    limit = (_address_space_mib(probe.pid) + HEADROOM_MIB[workers]) << 20
    os.killpg(probe.pid, signal.SIGKILL)

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    p = started(tmp_path, [*args, "--json", "r.json"], env=env, preexec_fn=limited)
    rc = p.wait(timeout=WAIT)
    err = (tmp_path / "err.txt").read_text()
    assert rc == 3, err
    assert "Traceback" not in err and "out of memory after" in err
    assert _left_behind(p.pid) == []
    doc = json.loads((tmp_path / "r.json").read_text())
    base, rest = doc["variants"]
    assert base["stats"]["limit"] == "out of memory" and base["stats"]["complete"] is False
    assert f"out of memory after {base['stats']['states']:,} states" in err
    assert {o["verdict"] for o in base["outcomes"]} == {"incomplete"}
    assert rest["stats"]["limit"] == "not checked"
    assert {o["verdict"] for o in rest["outcomes"]} == {"incomplete"}
    assert "incomplete" in (tmp_path / "out.txt").read_text()


# ---- item 8: one Ctrl-C ends a Z3 run ------------------------------------------------------


def _z3_loaded(p: subprocess.Popen):
    """Z3 is imported only once a variant goes to a Z3 engine, after the first variant
    compiled."""
    def ready() -> bool:
        try:
            with open(f"/proc/{p.pid}/maps") as f:
                return "libz3" in f.read()
        except OSError:
            return False
    return ready


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _solving(p: subprocess.Popen, folder: Path) -> None:
    """Wait until Z3 has been loaded and the run has since spent a second of
    CPU time: deep in the first variant's queries (its bmc takes tens of seconds), CPU
    time rather than wall time so that a loaded machine waits longer, not less."""
    _wait_for(p, folder, "Z3", _z3_loaded(p))
    loaded = _cpu_seconds(p.pid)
    _wait_for(p, folder, "Z3 queries", lambda: _cpu_seconds(p.pid) > loaded + 1.0)


def test_every_z3_query_goes_through_the_interruptible_solver():
    """Z3 catches SIGINT itself while a query runs and answers unknown: a solver not made
    by `new_solver` (the encoder's check that a `while` unrolling is unreachable was one)
    swallowed a Ctrl-C landing in its query, and the run went on with that variant's
    properties "unknown", exit 3 and no "interrupted". Every solver of the Z3 engines is
    made by engines/smt/solver.py, whose queries raise KeyboardInterrupt on Ctrl-C."""
    import re
    bare = re.compile(r"z3\.(Solver|SolverFor|SimpleSolver|Fixedpoint|Optimize)\(")
    found = [f"{path.name}:{n}" for path in sorted((ROOT / "checker/engines").rglob("*.py"))
             if path.name != "solver.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if bare.search(line)]
    assert found == []


def test_z3_leaves_sigint_to_python():
    """Z3's own SIGINT handler, installed while it solves, took a Ctrl-C away from
    Python's: when the query still answered sat or unsat the Ctrl-C was lost and the run
    went to its end (seen in CI, 1 run in 8 on a loaded machine). The solvers are made
    with it off, so every Ctrl-C reaches the watchdog."""
    import z3

    from checker.engines.smt.solver import new_fixedpoint, new_solver

    new_solver(timeout=1.0)
    new_fixedpoint(timeout=1.0)
    assert z3.get_param("ctrl_c") == "false"


@pytest.mark.parametrize("engine", ["bmc", "induction"])
def test_ctrl_c_under_z3_interrupts_one_query_and_the_run_goes_on(tmp_path, started, engine):
    """Under --engine bmc (and induction), Ctrl-C stopped only the Z3 query under way
    (Z3 catches SIGINT and answers unknown): the run went on with the next variant, one
    Ctrl-C per variant. One Ctrl-C ends the run: exit 3, the partial result, the variants
    after it not checked."""
    p = started(tmp_path, [BIG[0], "--engine", engine, "--depth", "25", "--json", "r.json"])
    _solving(p, tmp_path)
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=WAIT)
    err = (tmp_path / "err.txt").read_text()
    assert rc == 3, err
    assert "Traceback" not in err and "interrupted" in err
    doc = json.loads((tmp_path / "r.json").read_text())
    base, rest = doc["variants"]
    assert base["stats"]["limit"] == "interrupted" and base["stats"]["complete"] is False
    assert {o["verdict"] for o in base["outcomes"]} == {"incomplete"}
    assert rest["stats"]["limit"] == "not checked"  # today: checked (violated), as if nothing had happened
    assert {o["verdict"] for o in rest["outcomes"]} == {"incomplete"}


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["bmc", "pdr"])
def test_sigterm_under_z3_cuts_the_query_under_way_short(tmp_path, started, engine):
    """Python's handler cannot run while Z3 holds the main thread; the watchdog thread
    (engines/smt/solver.py) interrupts Z3 when the signal arrives. Each query may take
    WAIT * 5 seconds: without the watchdog the run would wait for the query to end."""
    p = started(tmp_path, [BIG[0], *BIG[1:], "--engine", engine, "--timeout", str(WAIT * 5), "--json", "r.json"]
                + (["--depth", "40"] if engine == "bmc" else []))
    _solving(p, tmp_path)
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=WAIT)
    err = (tmp_path / "err.txt").read_text()
    assert rc == 3, err
    assert "Traceback" not in err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["variants"][0]["stats"]["limit"] == "interrupted"


# ---- item 11: the variants an interrupted run never reached are listed, not checked ------

#: a base variant big enough for the search to show progress (1,024 states), then the
#: variant with the bug, which the interrupted run never reaches
TWO_VARIANTS = """\
model m;
const BUG = false;
var a: 0..63 = 0;
var b: 0..63 = 0;
process p { loop { a = (a + 1) % 64; } }
process q { loop { b = (b + 1) % 64; } }
invariant small: BUG -> a < 60;
variant buggy { BUG = true; }
"""


class _CtrlCAtFirstTick:
    """Progress whose first tick is Ctrl-C: the first variant's search is interrupted
    after its first 1,024 states, every time."""

    def __init__(self, *a, **k):
        self.label = ""

    def tick(self, *a, **k):
        raise KeyboardInterrupt

    def done(self):
        pass


def test_interrupted_run_reports_all_clear_for_variants_it_never_reached(tmp_path, monkeypatch, capsys):
    """Ctrl-C in the first variant: the variants after it were left out of every output,
    and the report said "no property is violated in any variant" of a run that never
    reached the variant with the bug. Each must list them as not checked."""
    monkeypatch.setattr(run_module, "Progress", _CtrlCAtFirstTick)
    spec = tmp_path / "m.spec"
    spec.write_text(TWO_VARIANTS)
    out = {k: str(tmp_path / f"r.{k}") for k in ("json", "md", "xml", "sarif")}
    assert main([str(spec), "--no-deadlock", "--json", out["json"], "--report", out["md"], "--junit", out["xml"],
                 "--sarif", out["sarif"]]) == 3
    captured = capsys.readouterr()
    assert "interrupted" in captured.err
    row = next(line for line in captured.out.splitlines() if line.startswith("buggy"))
    assert "not checked" in row
    doc = json.loads(Path(out["json"]).read_text())
    assert [v["name"] for v in doc["variants"]] == ["base", "buggy"]
    buggy = doc["variants"][1]
    assert buggy["stats"]["complete"] is False and buggy["stats"]["limit"] == "not checked"
    [small] = buggy["outcomes"]
    assert small["property"] == "small" and small["verdict"] == "incomplete"
    assert small["note"].startswith("not checked")
    assert not doc["all_as_expected"]
    report = Path(out["md"]).read_text()
    assert "no property is violated" not in report
    assert "**not checked**" in report and "`buggy`" in report
    junit = ET.parse(out["xml"]).getroot()
    case = next(c for c in junit.iter("testcase") if c.get("classname", "").endswith("buggy"))
    assert case.get("name") == "small" and "not checked" in case.find("skipped").get("message")
    sarif = json.loads(Path(out["sarif"]).read_text())
    results = sarif["runs"][0]["results"]
    assert any(r["properties"]["variant"] == "buggy" and r["level"] == "warning"
               and "not checked" in r["message"]["text"] for r in results)


def test_ctrl_c_in_a_lemma_query_only_makes_it_unknown(tmp_path, monkeypatch, capsys):
    """Ctrl-C while Z3 proves a lemma made that lemma `unknown` ("interrupted from
    keyboard") and the run went on. Here every query answers as Z3 does after Ctrl-C
    (the real signal is the bmc and induction tests' business): one is enough to end the
    run, with the variants after it not checked."""
    import z3

    monkeypatch.setattr(z3.Solver, "check", lambda self, *a: z3.unknown)
    monkeypatch.setattr(z3.Solver, "reason_unknown", lambda self: "interrupted from keyboard")
    out = tmp_path / "r.json"
    assert main([str(ROOT / "models/hv_timer_advance.spec"), "--json", str(out)]) == 3
    assert "interrupted" in capsys.readouterr().err
    doc = json.loads(out.read_text())
    first, *rest = doc["variants"]
    assert first["stats"]["limit"] == "interrupted"
    assert all(o["verdict"] == "incomplete" for o in first["outcomes"])
    assert rest and all(v["stats"]["limit"] == "not checked" for v in rest)


# ---- a worker out of memory, at each point of its level (in this process: no limit needed)


@pytest.mark.parametrize("where", ["publish", "level", "take_in"])
def test_a_worker_out_of_memory_ends_the_parallel_search_as_a_limit(monkeypatch, tmp_path, where):
    """A MemoryError in a worker was a crash: the coordinator raised RuntimeError, no
    result. Wherever in its level it happens (before it published the level, while it
    expands, after the exchange), the others must finish the level, the search end with
    the limit 'out of memory' and the variants after it be not checked."""
    from checker.engines.explicit import parallel, search
    from checker.pipeline import Options, check_spec, load
    from search_fixtures import PHILOSOPHERS

    monkeypatch.setattr(parallel, "PARALLEL_FROM", 20_000)
    calls = [0]  # per process: each worker counts its own calls

    def failing(original, worker_of):
        def call(self, *args, **kwargs):
            if worker_of(self, *args, **kwargs) == 0:
                calls[0] += 1
                if calls[0] == 3:  # worker 0's third level (or third range of states)
                    raise MemoryError
            return original(self, *args, **kwargs)
        return call

    if where == "level":
        monkeypatch.setattr(search.Search, "level", failing(
            search.Search.level, lambda self, frontier, ids, depth, progress, route=None:
            route.me if route is not None else None))
    else:
        monkeypatch.setattr(parallel._Worker, where,
                            failing(getattr(parallel._Worker, where), lambda self, *a, **k: self.w))
    path = tmp_path / "philosophers.spec"
    path.write_text(PHILOSOPHERS)
    result = check_spec(load(str(path)), Options(por=False, symmetry="off", workers=2, workers_asked=True))
    base, *rest = result.variants
    assert base.stats.limit == "out of memory" and not base.stats.complete
    assert base.stats.workers == 2 and 20_000 <= base.stats.states < 52_224
    assert all(o.verdict.value == "incomplete" for o in base.outcomes)
    assert rest and all(v.stats.limit == "not checked" for v in rest)


def test_a_killed_worker_is_reported_as_a_checker_bug(tmp_path, started):
    """A worker killed by SIGKILL (the OOM killer's signal) ended the run in a RuntimeError
    traceback, exit 1, as if the checker were wrong. It is a resource limit: exit 3, the
    reason on stderr, the --json file written with every verdict incomplete."""
    p = started(tmp_path, [*BIG, "--workers", "2", "--json", "r.json"])
    _wait_for(p, tmp_path, "the workers", _workers_running(p))
    os.kill(_group(p.pid)[0], signal.SIGKILL)
    rc = p.wait(timeout=WAIT)
    err = (tmp_path / "err.txt").read_text()
    assert rc == 3, err
    assert "Traceback" not in err and "killed by SIGKILL" in err
    assert _left_behind(p.pid) == []
    doc = json.loads((tmp_path / "r.json").read_text())
    base, rest = doc["variants"]
    assert base["stats"]["limit"] == "out of memory" and base["stats"]["complete"] is False
    assert {o["verdict"] for o in base["outcomes"]} == {"incomplete"}
    assert rest["stats"]["limit"] == "not checked"
