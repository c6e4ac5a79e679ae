"""Promela twins (`check --promela`, checker/backends/promela.py).

The point of a twin is exactness: with SPIN's reductions off, pan stores exactly the
states our unreduced search counts and finds exactly the violations we find. That is
checked against pan for every sc and tso variant of every shipped model, and for one
small model that uses the rest of the language. pan's answer on a twin's exact text is
recorded (tests/oracle.py, tests/pan_recordings/): a twin whose text has a recording is
compared with it, any other runs pan live (SPIN and gcc are installed by
tests/install-tools.sh; missing, a live check skips locally and fails under CI), and
`test_recordings_are_what_pan_says` runs pan live on recorded twins every time.
`TIMERACE_SPIN=record` re-records after a change to the Promela back end.
What cannot be translated faithfully must be refused, never emitted. `memory tso` is
translated (store buffers as in our layout) and compared like the rest, on the shipped
tso variants, three litmus tests and a small model whose one-entry buffer fills up; u64
variables live in C state (hv_timer_advance).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import oracle
from checker.export.json import to_dict
from shared_runs import checked
from test_bench import CHECK, run as bench
from tools import require

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "models").glob("*.spec"))

# Uses what the shipped models do not: a failing assert inside an atomic block after a
# write (the twin must undo the write), while/continue/break inside atomic, an inline
# `return`, both wake-ups, a process array with locals, an array with a lower bound of
# 1 and per-element initial values, `any`, u8 wrap-around, bitsets of an enum, a `final`
# condition and a deadlock.
RICH = """model rich;
const N = 2;
const BUG = false;
enum Mode { IDLE, BUSY, DONE }
enum Flag { F0, F1, F2 }
var mode[N]: Mode = IDLE;
var cnt: 0..6 = 0;
var start[N]: 0..1 = any;
var flags: bitset(Flag);
var small: u8 = 250;
var tok: 0..3 = 0;
var arr[1..3]: 0..3 = {1, 2, 3};
waitqueue wq;

inline bump(k) {
  if (cnt >= 5) return;
  cnt = cnt + k;
}

process worker[N] {
  var mine: 0..3 = 0;
  loop {
    choose {
      atomic { await mode[self] == IDLE; mode[self] = BUSY; bump(1); }
    } or {
      atomic { await start[self] > 0; start[self] = start[self] - 1; mine = min(mine + 1, 3); }
    }
    here: if (test_and_set_bit(F1, flags)) { clear_bit(F1, flags); }
    atomic {
      while (tok < 3) { tok = tok + 1; if (tok == 2) continue; if (tok == 3) break; }
      tok = 0;
    }
    if (cmpxchg(mode[self], BUSY, DONE) == BUSY) small = small + 3;
    xchg(arr[1 + self], self + 1);
    if (mode[self] == DONE) break;
  }
  prepare_to_wait(wq);
  if (cnt < 9) schedule();
  finish_wait(wq);
  atomic { cnt = cnt + 1; assert ok: cnt != 4 || !BUG; }
}

process waker {
  loop {
    await waitqueue_active(wq);
    choose { swake_up_one(wq); } or { wake_up(wq); }
    if (cnt >= 6) break;
  }
}

invariant bounded: forall i in 0..N-1: (worker[i].mine <= 3 && (worker[i]@here -> small >= 250 || small < 10));
invariant few: cnt < 4;
final all_done: cnt >= 1;
property progress: always eventually cnt >= 2;
expect violated deadlock, few;
variant bug { BUG = true; } expect violated ok;
"""


def check(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(CHECK + [str(a) for a in args], capture_output=True, text=True, cwd=cwd)


def ours_unreduced(spec: Path, tmp_path: Path) -> dict:
    """`check SPEC --no-por --no-symmetry --json`'s document, from the unreduced search the
    model's other tests share (a shipped model's, in its xdist group)."""
    return to_dict(checked(spec, por=False, symmetry="off"))


def needs_spin():
    require(shutil.which("spin") is not None and shutil.which("gcc") is not None,
            "SPIN or gcc is not installed")


def agreement(spec: Path, tmp_path: Path) -> tuple[dict, list[str], dict[str, list[str]]]:
    """Our unreduced run, the variants not translated, and per translated variant what
    pan sees differently (empty lists when it agrees)."""
    ours = ours_unreduced(spec, tmp_path)
    twins = tmp_path / "twins"
    twins.mkdir()
    r = check(spec, "--promela", twins)
    untranslated, jobs = [], {}
    with ThreadPoolExecutor(2) as pool:  # the work is in spin, gcc and pan: two at a time
        for v in ours["variants"]:
            pml = twins / f"{ours['model']}.{v['name']}.pml"
            if not pml.exists():
                untranslated.append(v["name"])
                continue
            jobs[v["name"]] = (v, pool.submit(oracle.twin_check, pml, tmp_path, "-O0"))
        differences = {name: bench.twin_disagreements(v, job.result()) for name, (v, job) in jobs.items()}
    assert r.returncode == (2 if untranslated else 0), r.stderr
    return ours, untranslated, differences


@pytest.mark.parametrize("spec", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_pan_agrees_with_us_on_every_variant(spec, tmp_path):
    """State counts (reductions off on both sides) and every verdict: invariants,
    deadlock, liveness under weak fairness; sc and tso."""
    ours, untranslated, differences = agreement(spec, tmp_path)
    # the twin refuses lkmm, and a `fair` action with a liveness property (SPIN's -f is
    # weak fairness per process only: models/hv_sw_switch.spec's preemption-timer exit)
    lkmm = [v["name"] for v in ours["variants"]
            if v["memory_model"] == "lkmm" or any(f.startswith("and for the action") for f in v["fairness"])]
    assert untranslated == lkmm
    assert {k: d for k, d in differences.items() if d} == {}
    assert set(differences) == {v["name"] for v in ours["variants"]} - set(lkmm)


def test_recordings_are_what_pan_says(tmp_path):
    """pan, run live on two recorded twins (the smallest shipped model's, RICH's), says
    what its recordings say: the recordings are this SPIN's answers, not stale ones."""
    needs_spin()
    rich = tmp_path / "rich.spec"
    rich.write_text(RICH)
    for spec in (ROOT / "models" / "hv_timer_preempt.spec", rich):
        twins = tmp_path / f"{spec.stem}-twins"
        twins.mkdir()
        check(spec, "--promela", twins)
        for pml in sorted(twins.glob("*.pml"))[:2]:
            rec = oracle.pan_recording_of(pml.read_text())
            assert rec.exists(), f"{pml.name} has no recording (TIMERACE_SPIN=record)"
            recorded = json.loads(rec.read_text())
            live = bench.twin_check(pml, tmp_path, "-O0")
            assert live.failure is None, live.failure
            assert (live.states, sorted(live.violated), live.cycles) == \
                (recorded["states"], recorded["violated"], recorded["cycles"]), pml.name


def test_pan_agrees_on_a_model_using_the_rest_of_the_language(tmp_path):
    spec = tmp_path / "rich.spec"
    spec.write_text(RICH)
    assert check(spec, "--brief").returncode == 0  # the model's own expectations
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == []
    assert differences == {"base": [], "bug": []}
    bug = next(v for v in ours["variants"] if v["name"] == "bug")
    assert {o["property"]: o["verdict"] for o in bug["outcomes"]}["ok"] == "violated"


def _twin(tmp_path, name: str, source: str, variant: str) -> tuple[str, str]:
    """Write one variant's twin with `check --promela`: (the twin, what check printed)."""
    spec = tmp_path / f"{name}.spec"
    spec.write_text(source)
    out = tmp_path / f"{name}.pml"
    r = check(spec, "--variant", variant, "--promela", out)
    assert r.returncode == 0, r.stderr
    assert f"wrote 1 file: {out}" in " ".join(r.stderr.split())  # wrapped between names at the width
    return out.read_text(), r.stderr


def test_twin_text(tmp_path):
    text, _ = _twin(tmp_path, "rich", RICH, "bug")
    head = text.split("*/", 1)[0]
    assert "model rich, variant bug" in head
    assert "BUG = true" in head and "N = 2" in head
    assert "spin -o3 -a rich.bug.pml && gcc -O2 -DNOREDUCE -DNOCLAIM" in head
    assert "./pan -m100000 -a -f -A -N progress" in head
    assert "one more state than timerace" in head  # `any`: the chooser's state
    assert "active proctype worker_0()" in text and "active proctype worker_1()" in text
    assert "pc_worker_0 == 0 && (mode[0] == IDLE) ->" in text  # `self` folded per instance
    assert "byte invariant_few = 0;" in text and "byte deadlock = 0;" in text  # not hidden: -DBFS builds
    assert "assert(assert_ok)" in text and "goto tr_failed" in text
    assert "ltl progress { [] <> (cnt >= 2) }" in text
    assert "#define BUSY 1" in text


def test_several_variants_go_to_a_folder(tmp_path):
    spec = ROOT / "models" / "halt_poll.spec"
    # every variant but `lkmm`, which the twin refuses (exit 2, test_lkmm_operational.py)
    others = [a for v in ("base", "no_poll", "posted", "no_wake_on_expiry") for a in ("--variant", v)]
    r = check(spec, "--promela", tmp_path / "out", *others)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "halt_poll.base.pml" in files and "halt_poll.no_wake_on_expiry.pml" in files
    assert f"wrote {len(files)} files" in r.stderr


TSO_MIX = """model tsomix;
memory tso(1);
const CLEAR = true;
var data[2]: 0..1 = 0;
var flag: bool = false;
var turn: 0..1 = 0;
var seen: 0..1 = 0;
process writer {
  var i: 0..1 = 0;
  loop {
    data[i] = 1 - data[i];
    flag = true;
    i = 1 - i;
    xchg(turn, i);
    await !flag;
  }
}
process reader {
  loop {
    await flag;
    seen = READ_ONCE(data[turn]);
    if (CLEAR) WRITE_ONCE(flag, false);
    smp_mb();
  }
}
invariant small: seen <= 1;
property sees: always eventually flag;
property leads: always (flag -> eventually !flag);
variant big { memory tso(2); }
variant lazy { CLEAR = false; } expect violated leads;
"""


@pytest.mark.parametrize("name", ["sb", "mp", "iriw", "tsomix"])
def test_pan_agrees_under_tso(name, tmp_path):
    """Litmus tests (`final` conditions: the forbidden outcomes) and a model whose
    one-entry store buffer fills up, with liveness under the flushes' fairness."""
    spec = ROOT / "tests" / "litmus" / f"{name}.spec"
    if name == "tsomix":
        spec = tmp_path / "tsomix.spec"
        spec.write_text(TSO_MIX)
    ours, untranslated, differences = agreement(spec, tmp_path)
    assert untranslated == [v["name"] for v in ours["variants"] if v["memory_model"] == "lkmm"]
    assert {k: d for k, d in differences.items() if d} == {}
    assert any(v["memory_model"] == "tso" for v in ours["variants"])
    if name == "tsomix":  # the full buffer was reached, and a fair lasso was found
        base = next(v for v in ours["variants"] if v["name"] == "base")
        assert base["stats"]["buffer_full_states"] > 0
        lazy = next(v for v in ours["variants"] if v["name"] == "lazy")
        assert {o["property"]: o["verdict"] for o in lazy["outcomes"]}["leads"] == "violated"


def test_tso_twin_text(tmp_path):
    text, _ = _twin(tmp_path, "tsomix", TSO_MIX, "base")
    assert "memory model tso, store buffers of 1 stores" in text
    assert "active proctype flush_writer()" in text and "sb_writer_a[0] != 0 ->" in text
    # the writer reads data[i] through its own buffer: its entry for that address, else memory
    assert "(sb_writer_a[0] == (1 + writer_i) -> sb_writer_v[0] : data[writer_i])" in text
    assert "pc_writer == 3 && sb_writer_a[0] == 0 ->" in text  # xchg is a fence
    assert "goto tr_failed" in text  # a full buffer: the step is undone


def test_u64_lives_in_c(tmp_path):
    out = tmp_path / "hv.pml"
    r = check(ROOT / "models" / "hv_timer_advance.spec", "--variant", "unguarded", "--promela", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert 'c_state "uint64_t guest_tsc" "Global" "0"' in text
    assert "c_code { now.guest_tsc = (uint64_t)(((uint64_t)(now.guest_tsc + 1))); }" in text
    assert "c_expr { now.tr_chosen && now.pc_vcpu == 3 && " in text  # an await on u64 values
    assert "Not translated: lemmas expiry_not_after_deadline" in text


WIDE = """model wide;
var t: u64 = 0;
process p { while (t < 3) { t = t + 1; } }
property grows: always eventually t >= 1;
variant other { }
"""


def test_u64_in_an_ltl_claim_is_refused(tmp_path):
    spec = tmp_path / "wide.spec"
    spec.write_text(WIDE)
    r = check(spec, "--variant", "base", "--promela", tmp_path / "x.pml")
    assert r.returncode == 2
    assert "liveness property grows reads u32/u64 values" in r.stderr and "wide.spec:4:" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.pml").exists()


def test_bench_compares_a_model_with_spin(tmp_path):
    """bench/run.py's shipped-models table, on a one-variant tso model: SPIN on the twin,
    counts and verdicts agree (one timed repeat; no time is asserted)."""
    needs_spin()
    spec = tmp_path / "late.spec"
    spec.write_text("model late; memory tso; var x: 0..1; var r: 0..1;\n"
                    "process p { x = 1; } process q { r = x; }\nfinal seen: r == 1;\nexpect violated seen;\n")
    sm = bench.shipped_model(spec, argparse.Namespace(repeats=1), CHECK, True, tmp_path)
    assert sm.untranslated == {}
    assert sm.disagreements == {"base": []}
    assert sm.spin_states == sm.unreduced
    assert sm.ours_twinned is sm.ours and sm.ours.ok
    assert sm.spin_seconds is not None and sm.spin_seconds > 0
    text = bench.shipped_table([sm], "")
    assert "violated: seen" in text and "NO" not in text


def test_bench_lists_the_variants_that_do_not_translate(tmp_path):
    spec = tmp_path / "wide.spec"
    spec.write_text(WIDE)
    sm = bench.shipped_model(spec, argparse.Namespace(repeats=1), CHECK, True, tmp_path)
    assert set(sm.untranslated) == {"base", "other"} == set(sm.unreduced)
    assert all(why.startswith("liveness property grows reads u32/u64 values") for why in sm.untranslated.values())
    assert sm.spin_seconds is None and sm.ours_twinned is None
    text = bench.shipped_table([sm], "")
    assert text.count("not translated: liveness property grows") == 2


def test_shift_beyond_int_is_refused(tmp_path):
    spec = tmp_path / "shift.spec"
    spec.write_text("model shift; var k: 0..40 = 0; var x: 0..1 = 0;\n"
                    "process p { k = 35; x = (1 << k) > 0 ? 1 : 0; }\n")
    r = check(spec, "--promela", tmp_path / "shift.pml")
    assert r.returncode == 2
    assert "shift whose count may exceed 30" in r.stderr and "shift.spec:2:" in r.stderr


def test_promela_takes_no_other_outputs(tmp_path):
    r = check(ROOT / "models" / "halt_poll.spec", "--promela", tmp_path / "x", "--json", tmp_path / "r.json")
    assert r.returncode == 2 and "--promela writes Promela twins and checks nothing" in r.stderr
