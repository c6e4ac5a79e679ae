"""The native level loop (backends/c.py, engines/explicit/native.py) against the Python
loop: the same states, transitions, depth, limits, verdicts, counterexamples, coverage
marks and state digest; and each C step against its Python twin on reachable states
(the C step must give the Python successor, and bail exactly where the Python step
raises). Builds go to a cache folder of this test session."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from agreement import compiled
from test_reduce import SYMMETRIC
from test_reduce_random import _Gen
from variant_cover import covering_variants

from checker.backends.c import Unsupported
from checker.backends.python import AssertionViolation, ModelError, compile_program
from checker.base.errors import SpecError
from checker.engines import liveness, reduce
from checker.engines import explicit
from checker.engines.explicit import Limits, explore
from checker.engines.explicit import native
from checker.engines.explicit.native import cache_key, compiler, library_for, source_for
from checker.engines.explicit.search import Search, run_levels
from checker.ir import StepKind
from checker.results.trace import Verdict
from checker.cli import main
from checker.pipeline import Options, compile_variant, load, selected_variants

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@pytest.fixture(autouse=True, scope="module")
def _cache(tmp_path_factory):
    """One build cache for the module: a variant seen twice compiles once."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("CC", raising=False)
    yield
    mp.undo()


def _comparable(ex):
    st = replace(ex.stats, seconds=0.0, bytes_per_state=None, loop="", loop_from=None, notes=())
    g = ex.graph
    graph = None if g is None else (list(g.states.packed), g.initial, g.expanded, list(g.first), list(g.dst),
                                    list(g.step), list(g.enabled))
    return st, ex.counterexamples, ex.model_error, _coverage(ex.marks), ex.held, ex.digest, graph


def _coverage(marks):
    """Per step whether it ran, and for a condition the pcs it went to: what coverage
    reads (the generated Python loop marks other steps with bit 0 only)."""
    if marks is None:
        return None
    return [(bool(h), h >> 1 if cs.step.kind is StepKind.BRANCH else None) for cs, h in marks]


def _both(cm, **kw):
    """Both loops' explorations, which must agree; the native one must have run."""
    py = explore(cm, **kw)
    c = explore(cm, loop="native", **kw)
    assert c.stats.loop == "native", c.stats.notes
    assert _comparable(c) == _comparable(py)
    return c


def _por(cm):
    """Partial-order reduction alone (symmetry: test_symmetric_models_search_the_same), a fresh plan."""
    return reduce.plan(cm, por=True, symmetry="off")


def _auto(cm, py=None, **kw):
    """--loop auto against the Python loop, handing over at the first level boundary and
    at one half-way through the states (the build is in the cache, so the switch comes
    at the first boundary past NATIVE_FROM)."""
    py = explore(cm, **kw) if py is None else py
    library_for(cm, kw.get("reduction"))
    mp = pytest.MonkeyPatch()
    try:
        for start in (1, max(2, py.stats.states // 2)):
            mp.setattr(explicit, "NATIVE_FROM", start)
            got = explore(cm, loop="auto", **kw)
            if start == 1:  # the first boundary: before the initial states are expanded
                assert got.stats.loop == "native" and got.stats.loop_from == (0, got.graph.initial if
                                                                              got.graph else got.stats.loop_from[1])
            if got.stats.loop == "native":
                assert got.stats.loop_from is not None and got.stats.loop_from[1] >= start
            else:  # the search ended (or stopped) before the boundary past `start`
                assert got.stats.loop == "python" and got.stats.loop_from is None
            assert _comparable(got) == _comparable(py), start
    finally:
        mp.undo()
    return py


def _applies(cm) -> bool:
    try:
        source_for(cm)
    except Unsupported:
        return False
    return True


def _steps_agree(cm, states: int = 2000, reduction=None) -> int:
    """Every step and invariant, C against Python, in up to `states` reachable states
    (the library built for `reduction`: the steps are the same)."""
    lib = library_for(cm, reduction)
    search = Search(cm, Limits(max_states=states), generate_from=None)
    run_levels(search, search.add_initial(), 0, 0, None)
    steps = search.steps
    compared = 0
    for s in sorted(search.seen)[:states]:
        for k, cs in enumerate(steps):
            r, t = lib.step(k, s)
            try:
                want = cs.packed(s)
            except (AssertionViolation, ModelError):
                assert r == 2, (cs.name, s)
                continue
            if want is None:
                assert r == 0, (cs.name, s)
            else:
                assert (r, t) == (1, want), (cs.name, s)
            compared += 1
        for n, inv in enumerate(cm.invariants):
            got = lib.lib.tr_predicate(0, n, s)
            try:
                assert got == int(bool(inv.packed(s))), (inv.name, s)
            except ModelError:
                assert got == 2
        for n, (prop, trigger, goal) in enumerate(cm.liveness_packed):  # kind 3: the goal, 4: the trigger
            for kind, pred in ((3, goal), (4, trigger)):
                got = lib.lib.tr_predicate(kind, n, s)
                try:
                    assert got == (1 if pred is None else int(bool(pred(s)))), (prop.name, kind, s)
                except ModelError:
                    assert got == 2
    return compared


@pytest.mark.parametrize("seed", range(30))
def test_random_models_search_the_same(seed):
    """Random models with asserts, overflows (model errors), awaits, loops and arrays of
    processes (symmetric in some: reduced by symmetry both ways); the tso ones fall
    back to Python and say so."""
    try:
        cm = compiled(_Gen(seed).model(), file="rnd.spec")
    except SpecError as e:
        pytest.skip(f"generated model refused: {e.message}")
    if cm.program.model.memory != "sc":
        ex = explore(cm, loop="native")
        assert ex.stats.loop == "python" and any("tso" in n or "store buffers" in n for n in ex.stats.notes)
        return
    for kw in ({}, {"graph": True, "coverage": True}, {"hash_compact": True, "coverage": True},
               {"limits": Limits(max_states=7)}, {"limits": Limits(max_depth=3), "coverage": True}):
        _auto(cm, _both(cm, **kw), **kw)
    assert _steps_agree(cm) > 0
    if seed % 2 == 0:  # partial-order reduction (half the seeds: a build each): the ample sets in C are Python's
        for kw in ({"coverage": True}, {"limits": Limits(max_states=9)}):
            _auto(cm, _both(cm, reduction=_por(cm), **kw), reduction=_por(cm), **kw)
    sym = reduce.plan(cm, por=True, symmetry="on")
    if sym.symmetry is not None:  # (the seeds whose q[2] is symmetric): symmetry in C too
        _auto(cm, _both(cm, reduction=sym, coverage=True), reduction=sym, coverage=True)
        assert _canonical_agrees(cm, sym, list(explore(cm, Limits(max_states=3000), graph=True).graph.states.packed))


def _canonical_agrees(cm, plan, states) -> int:
    """The C representative (tr_canonical) of every one of `states` is the Python one."""
    lib = library_for(cm, plan)
    for s in states:
        assert lib.lib.tr_canonical(s) == plan.canonical(s), s
    return len(states)


@pytest.mark.parametrize("name", sorted(n for n in SYMMETRIC if n != "tso_writers"))
def test_symmetric_models_search_the_same(name):
    """Symmetry reduction in the C loop: the same representatives (C's canonical
    against Python's on every unreduced reachable state, most not representatives) and
    so the same states, transitions, verdicts and counterexamples as the Python loop,
    with partial-order reduction too (the default run), and handing over midway."""
    cm = compiled(SYMMETRIC[name])
    both = reduce.plan(cm, por=True, symmetry="on")
    assert both.symmetry is not None
    c = _auto(cm, _both(cm, reduction=both, coverage=True), reduction=both, coverage=True)
    assert c.stats.states < explore(cm).stats.states  # (it reduced)
    alone = reduce.plan(cm, por=False, symmetry="on")
    _both(cm, reduction=alone, graph=name == "choosers")
    assert _canonical_agrees(cm, alone, list(explore(cm, graph=True).graph.states.packed)) > 0


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(p.name for p in (ROOT / "models").glob("*.spec")))
def test_shipped_models_search_the_same(model):
    """Every sc variant the C back end writes of the model's covering set (variant_cover:
    between them every statement and branch outcome any variant runs), searched (with
    the graph where it has liveness properties) both ways; and its C steps against the
    Python ones. Say which variants the C loop does not take."""
    spec = load(str(ROOT / "models" / model))
    native = 0
    for variant in covering_variants(ROOT / "models" / model):
        cm = compile_variant(spec, variant, Options())
        if cm.program.model.memory != "sc" or not _applies(cm):
            continue
        # one build a variant: the graph for the liveness engine, unreduced; else reduced as
        # the default run reduces, local steps merged (no shipped model has a symmetric array)
        if cm.liveness:
            _both(cm, coverage=True, graph=True)
            red = None
        else:
            program, merged = reduce.merge_local_steps(cm.program)
            cm = compile_program(program) if merged else cm
            red = _por(cm)
            if red.ample_tables() is None:  # contexts: state-dependent ample sets are the Python loop's
                red = None
            _both(cm, coverage=True, reduction=red)
        assert _steps_agree(cm, 500, red) > 0
        native += 1
    if native == 0:
        reason = "no variant"
        for variant in selected_variants(spec, ()):
            try:
                source_for(compile_variant(spec, variant, Options()))
            except Unsupported as e:
                reason = str(e)
                break
        pytest.skip(f"the C back end writes no variant of {model}: {reason}")


#: every core operation of semantics/lower.py the C back end writes, where C spells a
#: piece its own way: a delta added and subtracted, computed bit numbers (one may fall
#: outside the set), the first of two sleepers woken, then all; the shipped models
#: have no delta and never two sleepers on one queue
EVERY_CORE = """model cores;
waitqueue wq;
var n: -4..9 = 0;
var d: 0..2 = 1;
var f: 0..7 = 1;
var bits: bitset(3);
var go: bool = false;
var seen: -20..20 = 0;
process sleeper[2] {
  prepare_to_wait(wq);
  if (!go) schedule();
  finish_wait(wq);
  atomic_add(d, n);
  if (test_and_set_bit(d, bits)) atomic_sub(d, n);
}
process waker {
  go = true;
  swake_up_one(wq);
  seen = f + atomic_fetch_add(d, n);
  f = xchg(d, 2);
  if (test_bit(d, bits)) clear_bit(d + 1, bits);
  if (cmpxchg(n, 1, 2) == 1) seen = min(seen, abs(n - 5));
  seen = atomic_dec_return(n);
  seen = max(seen, f);
  go = bitmap_empty(bits);
  wake_up(wq);
}
"""


def test_every_core_operation_steps_as_in_python():
    assert _steps_agree(compiled(EVERY_CORE)) > 0


def test_violations_and_a_model_error_come_out_the_same():
    cm = compiled("""
model m;
var x: 0..7 = 0;
var y: 0..3 = 0;
process a { x = x + 1; assert small: x < 2; x = x + 1; await x == 0; }
process b { x = x + 1; y = y + 1; y = y + 2; }
invariant y_small: y < 2;
""")
    ex = _both(cm, coverage=True)
    assert {"small", "y_small", "deadlock"} <= set(ex.counterexamples) and ex.model_error is None
    error = _both(compiled("model m;\nvar x: 0..2 = 0;\nprocess a { loop { x = x + 1; } }\n"))
    assert error.model_error is not None and "outside the range" in error.model_error.message


def test_the_counts_of_a_bench_model(tmp_path, monkeypatch, capsys):
    spec = load(str(ROOT / "bench/models/kvm_vcpus.spec"))
    cm = compile_variant(spec, "base", Options(defines={"N": "2"}))
    ex = _both(cm, coverage=True)
    assert ex.stats.states == 46_376 and ex.stats.complete
    auto = explore(cm, loop="auto", coverage=True)  # (the build is cached: it takes over past NATIVE_FROM states)
    assert auto.stats.loop == "native" and auto.stats.loop_from[1] >= explicit.NATIVE_FROM
    assert _comparable(auto) == _comparable(ex)
    # the command line says where it switched, in the text and in --json
    monkeypatch.setattr(explicit, "NATIVE_FROM", 20)
    small = str(ROOT / "models/timer_migration.spec")
    library_for(compile_variant(load(small), "base", Options()))  # in the cache: the switch is at once
    out = tmp_path / "run.json"
    assert main([small, "--variant", "base", "--no-por", "--workers", "1", "--json", str(out)]) == 0
    depth, states = json.loads(out.read_text())["variants"][0]["stats"]["loop_from"].values()
    assert f"the native level loop (C) took over at depth {depth}, after {states:,} states" in capsys.readouterr().out


def test_workers_wait_for_the_native_loop_and_start_where_it_cannot_run(monkeypatch):
    """--loop auto with two workers (the default on an idle 2-core machine): while the
    native loop may still take over no worker starts (C in one process outruns the
    Python loop on both cores), so it takes over and says why the workers did not run;
    where it cannot (no compiler), the workers start as before. Same states each way."""
    from checker.engines.explicit import parallel

    spec = load(str(ROOT / "bench/models/kvm_vcpus.spec"))
    cm = compile_variant(spec, "base", Options(defines={"N": "2"}))
    library_for(cm)  # in the cache: the switch is at once
    one = explore(cm)
    monkeypatch.setattr(parallel, "PARALLEL_FROM", 2_000)  # workers would start long before the switch
    monkeypatch.setattr(explicit, "NATIVE_FROM", 10_000)
    auto = explore(cm, loop="auto", workers=2)
    assert auto.stats.loop == "native" and auto.stats.workers == 1
    assert auto.stats.loop_from[1] >= 10_000 and "outruns 2 Python workers" in auto.stats.workers_note
    assert _comparable(replace(auto, stats=replace(auto.stats, workers_note=""))) == _comparable(one)
    monkeypatch.setenv("CC", "/nonexistent/cc")
    python = explore(cm, loop="auto", workers=2)
    assert python.stats.loop == "python" and python.stats.workers == 2, python.stats.workers_note
    assert python.stats.states == one.stats.states and "no C compiler" in python.stats.notes[-1]


def test_what_the_c_loop_does_not_take_runs_in_python_and_says_why(monkeypatch):
    cm = compiled("""
model m;
var x: 0..3 = 0;
process a { x = 1; x = 2; }
process b { x = 3; }
""")
    red = explore(cm, reduction=reduce.plan(cm, por=True, symmetry="on"), loop="native", graph=True)
    assert red.stats.loop == "python" and "reduction" in red.stats.notes[-1]
    ctx = compiled("model m;\ncpus 1;\nvar x: 0..1 = 0;\ninterrupt h on cpu 0 { x = 1; }\n"
                   "process p on cpu 0 { raise_irq(h); }\nprocess q { x = 0; }\n")
    mine = explore(ctx, reduction=reduce.plan(ctx, por=True, symmetry="off"), loop="native")
    assert mine.stats.loop == "python" and "execution contexts" in mine.stats.notes[-1]
    wide = compiled("model m;\nvar x: u64 = 0;\nprocess a { x = x + 1; }\n")
    assert "fixed-width" in explore(wide, loop="native").stats.notes[-1] or \
        "bits" in explore(wide, loop="native").stats.notes[-1]
    monkeypatch.setenv("CC", "/nonexistent/cc")
    none = explore(cm, loop="native")
    assert none.stats.loop == "python" and "no C compiler" in none.stats.notes[-1]
    assert none.stats.states == explore(cm).stats.states


def test_a_search_over_before_its_build_leaves_it_to_the_cache(tmp_path, monkeypatch):
    """--loop auto on a search that ends before the compiler does: Python all through,
    nothing said; the build finishes into the cache (a whole library, no temporary
    files), and the next search switches. A cancelled build leaves nothing behind; with
    no compiler the run is Python's, with a note once it is big enough to matter."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(explicit, "NATIVE_FROM", 1)
    cm = compiled("model m;\nvar x: 0..3 = 0;\nvar y: 0..3 = 0;\nprocess a { x = 1; x = 2; }\nprocess b { y = 3; }\n")
    folder = tmp_path / "timerace" / "native"
    first = explore(cm, loop="auto")
    assert first.stats.loop == "python" and first.stats.loop_from is None and first.stats.notes == ()
    (left,) = [b for so, b in native._DETACHED.items() if so.parent == folder]
    assert left.proc is not None and left.proc.wait() == 0
    assert [p.suffix for p in folder.iterdir()] == [".so"]
    again = explore(cm, loop="auto")
    assert again.stats.loop == "native" and again.stats.loop_from == (0, 1)
    assert _comparable(again) == _comparable(first)
    other = compiled("model m;\nvar x: 0..3 = 0;\nprocess a { x = 3; }\n")
    build = native.Build(source_for(other))
    assert build.proc is not None
    build.cancel()
    assert [p.suffix for p in folder.iterdir()] == [".so"]  # the first library only
    monkeypatch.setenv("CC", "/nonexistent/cc")
    none = explore(other, loop="auto")
    assert none.stats.loop == "python" and "no C compiler" in none.stats.notes[-1]


def test_liveness_verdicts_and_lassos_come_out_the_same():
    """The whole run (the liveness engine on the graph the C loop kept), as --json has it."""
    spec = str(ROOT / "models/halt_poll.spec")
    runs = []
    for loop in ("python", "native"):
        out = subprocess.run([sys.executable, "-m", "checker", spec, "--variant", "posted_check_ignores_pi",
                              "--variant", "waker_no_mb_sc", "--no-por", "--workers", "1", "--loop", loop,
                              "--json", "-"], capture_output=True, text=True)
        doc = json.loads(out.stdout)
        assert {v["stats"].pop("loop") for v in doc["variants"]} == {loop}
        runs.append((out.returncode, doc["variants"]))
    assert runs[0] == runs[1]
    assert any(o["kind"] == "liveness" and o["verdict"] == "violated" for v in runs[1][1] for o in v["outcomes"])


LIVE = """
model live;
var flag: bool = false;
var done: bool = false;
var x: 0..2 = 0;
var y: bool = false;
var z: bool = false;
var a[2]: bool = false;
var i: 0..3 = 0;
process waiter { while (!flag) { skip; } done = true; }
process setter { flag = true; }
process p { x = 1; x = 2; }
process spin { loop { await !z; y = !y; } }
process q { i = 1; i = 2; }
unfair process u { loop { z = true; z = false; } }
property finishes: always eventually done;
property back_to_zero: always (x == 1 -> eventually x == 0);
property trivially: always (x == 1 -> eventually x >= 0);
property toggles: always eventually y;
property stalls: always eventually !z;
property goes_wrong: always eventually a[i];
"""


@pytest.fixture(scope="module")
def live_both():
    """LIVE's liveness outcomes from the Python loop's graph (the check in Python) and
    from the native loop's (the check in C), complete and cut short."""
    cm = compiled(LIVE)
    out = []
    for limits in (Limits(), Limits(max_states=40)):
        py, c = explore(cm, limits, graph=True), explore(cm, limits, graph=True, loop="native")
        assert c.stats.loop == "native" and c.native is not None and py.native is None
        assert liveness._Graph(cm, c.graph, c.native).native is not None  # the C check runs
        out.append((liveness.check(cm, py)[0], liveness.check(cm, c)[0]))
    return out


def test_the_fair_cycle_check_in_c_gives_the_python_outcomes(live_both):
    """Verdicts, notes, fairness relied on and lassos (stem and loop, message) alike,
    over every kind of outcome: holds under fairness or without it, lassos with a
    loop, a stutter (u stops where only it could move and blocks spin), a property that goes wrong (its goal bails in C: Python judges it),
    and a search cut short."""
    (py, c), (py_cut, c_cut) = live_both
    assert c == py and c_cut == py_cut
    verdicts = {name: o.verdict for name, o in c.items()}
    assert verdicts == {"finishes": Verdict.HOLDS, "back_to_zero": Verdict.VIOLATED, "trivially": Verdict.HOLDS,
                        "toggles": Verdict.VIOLATED, "stalls": Verdict.VIOLATED, "goes_wrong": Verdict.ERROR}
    assert c["finishes"].relies_on and not c["trivially"].relies_on
    loop = c["back_to_zero"].counterexample.trace
    assert loop.loop_start is not None and loop.length > loop.loop_start
    stutter = c["stalls"].counterexample.trace
    assert stutter.length == stutter.loop_start
    assert {o.verdict for o in c_cut.values()} >= {Verdict.INCOMPLETE}


def test_fair_actions_keep_the_fair_cycle_check_in_python():
    cm = compiled("model m; var x: 0..1 = 0; var done: bool = false;\n"
                  "process p { choose { fair { done = true; } } or { x = 1 - x; } }\n"
                  "property ends: always eventually done;\n")
    py, c = explore(cm, graph=True), explore(cm, graph=True, loop="native")
    assert c.native is not None and liveness._Graph(cm, c.graph, c.native).native is None
    assert liveness.check(cm, c)[0] == liveness.check(cm, py)[0]


def test_a_build_is_cached_by_its_source(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cm = compiled("model m;\nvar x: 0..3 = 0;\nprocess a { x = 1; }\n")
    first = library_for(cm).path
    assert first.parent == tmp_path / "timerace" / "native" and first.exists()
    stamp = first.stat().st_mtime_ns
    assert library_for(cm).path == first and first.stat().st_mtime_ns == stamp
    other = compiled("model m;\nvar x: 0..3 = 0;\nprocess a { x = 2; }\n")
    assert library_for(other).path != first
    assert sorted(p.suffix for p in first.parent.iterdir()) == [".so", ".so"]  # no half-written files left
    third = compiled("model m;\nvar x: 0..3 = 0;\nprocess a { x = 3; }\n")
    damaged = first.parent / f"{cache_key(source_for(third), compiler())}.so"
    damaged.write_bytes(b"not a library")  # a damaged cache entry is built again
    assert library_for(third).path == damaged and damaged.read_bytes()[:4] == b"\x7fELF"


def test_the_command_line_says_which_loop_ran(tmp_path):
    check = [sys.executable, "-m", "checker"]
    spec = str(ROOT / "models/timer_migration.spec")
    out = subprocess.run(check + [spec, "--variant", "base", "--loop", "native", "--no-por", "--workers", "1", "--json", "-"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {v["stats"]["loop"] for v in doc["variants"]} == {"native"}
    assert "the native level loop ran" in out.stderr
    plain = subprocess.run(check + [spec, "--no-por", "--workers", "1", "--json", "-"], capture_output=True,
                           text=True)  # (auto: a small model's search is over before a build would be)
    assert all(v["stats"]["loop"] == "python" and "loop_from" not in v["stats"]
               for v in json.loads(plain.stdout)["variants"])
    assert "level loop" not in plain.stderr, plain.stderr[-3000:]
    dump = subprocess.run(check + [spec, "--dump-c", "--variant", "base"], capture_output=True, text=True)
    assert dump.returncode == 0 and "int tr_level(" in dump.stdout and "static int step0(" in dump.stdout


def test_the_bench_script_compares_both_loops(tmp_path, capsys):
    """bench/native.py on a small size, without pan: both loops, the same count."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import native as bench  # bench/native.py
    finally:
        sys.path.remove(str(ROOT / "bench"))
    out = tmp_path / "bench.json"
    assert bench.main(["--model", "philosophers=4", "--repeats", "1", "--no-spin", "--json", str(out),
                       "--loops", "python,native"]) == 0  # (auto, at this size, is the Python row again)
    rows = json.loads(out.read_text())
    assert {r["tool"] for r in rows} == {"python", "native"} and {r["states"] for r in rows} == {464}
    assert "states per CPU s" in capsys.readouterr().out
