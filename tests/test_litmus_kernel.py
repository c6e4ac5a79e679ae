"""The kernel's litmus tests and the LKMM features they use, against herd7.

Three sources of programs: the kernel's own corpus (tools/memory-model/litmus-tests in
the Linux tree), tests/litmus_c/ (ours, one file per construct and the classic shapes),
and generated programs. The kernel's files are GPL-2.0 and are not vendored here: the
corpus is read from $TIMERACE_KERNEL_LITMUS, or tests/litmus_kernel/, or a
`notes/kernel-litmus` folder beside the clone; the tests on it skip when none exists.
herd7 (../shared/tools/herd7) is optional too: the herd7 comparisons skip without it.

`python tests/test_litmus_kernel.py` prints the agreement table (file, Result, herd7, ours).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checker.cli import main  # noqa: E402
from checker.base.errors import SpecError  # noqa: E402
from checker.litmus.reader import parse_litmus  # noqa: E402
from checker.pipeline import load_litmus  # noqa: E402
from checker.litmus.axiomatic import PRIMITIVES, evaluate, format_result  # noqa: E402

import oracle  # noqa: E402

LITMUS_C = Path(__file__).parent / "litmus_c"


def _kernel_dir() -> Path | None:
    candidates = [Path(os.environ["TIMERACE_KERNEL_LITMUS"])] if os.environ.get("TIMERACE_KERNEL_LITMUS") else []
    candidates += [Path(__file__).parent / "litmus_kernel"] + [d / "notes" / "kernel-litmus" for d in ROOT.parents]
    return next((d for d in candidates if d.is_dir() and any(d.glob("*.litmus"))), None)


KERNEL = _kernel_dir()
KERNEL_FILES = sorted(KERNEL.glob("*.litmus")) if KERNEL else []
needs_kernel = pytest.mark.skipif(KERNEL is None, reason="the kernel's litmus tests are not here "
                                  "(set TIMERACE_KERNEL_LITMUS to tools/memory-model/litmus-tests)")


def herd7_report(source: str, path: Path | None = None) -> str:
    """herd7's report for `source` (recorded, tests/oracle.py), without its Time and Hash lines."""
    return oracle.report(source, path)


def our_report(test) -> str:
    return format_result(test, evaluate(test))


def _observation(report: str) -> str:
    m = re.search(r"^Observation \S+ (\w+ \d+ \d+)", report, re.M)
    return m.group(1) if m else "-"


# ------------------------------------------------------------ the kernel's corpus

@needs_kernel
def test_every_kernel_test_is_read():
    """All of the corpus is read: none is refused (exit 2) any more."""
    assert len(KERNEL_FILES) >= 43
    refused = []
    for p in KERNEL_FILES:
        try:
            load_litmus(str(p))
        except SpecError as e:
            refused.append((p.name, e.message))
    assert refused == []


@needs_kernel
@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: p.stem)
def test_kernel_test_verdict_equals_its_result_line(path):
    test = load_litmus(str(path))
    if test.expected is None:
        pytest.skip("no Result line")
    assert evaluate(test).observation == test.expected


@needs_kernel
@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: p.stem)
def test_kernel_test_report_is_herd7s(path):
    """States, Ok/No, witnesses, flags, condition and Observation, line for line (the
    kernel's files are not vendored: their recordings are keyed by their text)."""
    test = load_litmus(str(path))
    assert our_report(test) == herd7_report(test.source)


# ------------------------------------------------------------ tests/litmus_c

@pytest.mark.parametrize("path", sorted(LITMUS_C.glob("*.litmus")), ids=lambda p: p.stem)
def test_litmus_c_report_is_herd7s(path):
    """The whole report, flags included (test_lkmm_herd7.py compares states and counts)."""
    test = load_litmus(str(path))
    assert our_report(test) == herd7_report(test.source, path)


# ------------------------------------------------------------ regressions: what main refused or got wrong

def _run(src: str, tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    p = tmp_path / "t.litmus"
    p.write_text(src)
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(p), *extra])
    return code, out.getvalue(), err.getvalue()


DEP_PLAIN = """C dep+plain
(* Result: Never *)
{}
P0(int *x, int *y, int *z1, int *z2)
{
	int a = READ_ONCE(*x);
	*z1 = a;
	*z2 = *z1;
	if (*z2 == 1)
		WRITE_ONCE(*y, 1);
}
P1(int *x, int *y)
{
	int r = smp_load_acquire(y);
	smp_store_release(x, r);
}
exists (x=1 /\\ y=1)
"""


def test_plain_c_accesses_are_read(tmp_path):
    """The kernel's dep+plain: plain accesses carry dependencies (bell:80-83), so the
    control dependency through `*z2` orders the write; main exited 2 on `*z1 = a`."""
    code, out, err = _run(DEP_PLAIN, tmp_path)
    assert (code, err) == (0, "")
    assert "Observation dep+plain Never 0 2" in out and "Flag" not in out


RACE = """C race
(* Result: Sometimes DATARACE *)
{}
P0(int *x, int *y)
{
	*x = 1;
	WRITE_ONCE(*y, 1);
}
P1(int *x, int *y)
{
	int r0;
	int r1;
	r0 = READ_ONCE(*y);
	r1 = *x;
}
exists (1:r0=1 /\\ 1:r1=0)
"""


def test_the_data_race_flag_is_reported(tmp_path):
    """herd7 prints `Flag data-race` after the witnesses when an allowed execution races."""
    code, out, _ = _run(RACE, tmp_path)
    assert code == 0
    assert "Positive: 1 Negative: 3\nFlag data-race\nCondition" in out
    ordered = RACE.replace("WRITE_ONCE(*y, 1)", "smp_store_release(y, 1)").replace(
        "READ_ONCE(*y)", "smp_load_acquire(y)").replace("\tr1 = *x;", "\tif (r0)\n\t\tr1 = *x;").replace(
        "Sometimes DATARACE", "Never")
    code, out, _ = _run(ordered, tmp_path)
    assert code == 0 and "Flag" not in out  # release/acquire and a read only after it: no race


def test_plain_coherence_is_an_axiom(tmp_path):
    """A plain read may not read a write its own thread overwrote (plain-coherence)."""
    src = ("C p\n{}\nP0(int *x)\n{\n\tint r0;\n\t*x = 1;\n\t*x = 2;\n\tr0 = *x;\n}\n"
           "exists (0:r0=1)\n")
    res = evaluate(parse_litmus(src, "p.litmus"))
    assert (res.observation, res.positive, res.negative, res.flags) == ("Never", 0, 1, ())


SILSIL = """C MP+polockonce+poacquiresilsil
(* Result: Sometimes *)
{
	spinlock_t lo;
	int x;
}
P0(spinlock_t *lo, int *x)
{
	spin_lock(lo);
	WRITE_ONCE(*x, 1);
	spin_unlock(lo);
}
P1(spinlock_t *lo, int *x)
{
	int r1;
	int r2;
	int r3;
	r1 = smp_load_acquire(x);
	r2 = spin_is_locked(lo);
	r3 = spin_is_locked(lo);
}
exists (1:r1=1 /\\ 1:r2=0 /\\ 1:r3=1)
"""


def test_spin_is_locked_is_read(tmp_path):
    """The kernel's MP+polockonce+poacquiresilsil (herd7: Sometimes 1 11); with
    smp_mb__after_spinlock() in P0 it is Never (MP+polockmbonce+poacquiresilsil)."""
    code, out, err = _run(SILSIL, tmp_path)
    assert (code, err) == (0, "") and "Observation MP+polockonce+poacquiresilsil Sometimes 1 11" in out
    mb = SILSIL.replace("\tspin_lock(lo);\n", "\tspin_lock(lo);\n\tsmp_mb__after_spinlock();\n", 1)
    code, out, _ = _run(mb.replace("Sometimes", "Never"), tmp_path)
    assert code == 0 and "Never 0 9" in out


def test_lock_reads_follow_lock_cat(tmp_path):
    """READ_ONCE of a spinlock reads no lock write (lock.cat builds lock rf apart) and
    is flagged mixed-lock-accesses, as herd7 does; main counted a second execution."""
    res = evaluate(load_litmus(str(LITMUS_C / "lock-mixed-access.litmus")))
    assert (res.observation, res.positive, res.negative, res.flags) == ("Never", 0, 1, ("mixed-lock-accesses",))


def test_synchronize_rcu_is_read():
    """The RCU guarantee (linux-kernel.cat:111-148): a grace period orders a read-side
    section whole; without the section, or with one grace period for two sections, no."""
    verdicts = {name: evaluate(load_litmus(str(LITMUS_C / f"{name}.litmus"))).observation
                for name in ("RCU+MP+sync", "RCU+MP+nolock", "RCU+SB+sync", "RCU+2readers+1gp",
                             "RCU+2readers+2gps", "RCU+nested")}
    assert verdicts == {"RCU+MP+sync": "Never", "RCU+MP+nolock": "Sometimes", "RCU+SB+sync": "Never",
                        "RCU+2readers+1gp": "Sometimes", "RCU+2readers+2gps": "Never", "RCU+nested": "Never"}


def test_unbalanced_rcu_lock_is_flagged():
    res = evaluate(load_litmus(str(LITMUS_C / "RCU+unbalanced.litmus")))
    assert res.flags == ("unbalanced-rcu-lock",)


def test_synchronize_rcu_is_refused_under_sc_and_tso(tmp_path):
    src = (LITMUS_C / "SB+syncs.litmus").read_text()
    for model in ("sc", "tso"):
        code, _, err = _run(src, tmp_path, "--memory-model", model)
        assert code == 2 and f"'synchronize_rcu' under memory {model} is not supported" in err
        assert re.match(r".*t\.litmus:\d+:\d+: error:", err) and "^" in err


def test_srcu_is_refused_by_name(tmp_path):
    src = ("C s\n{}\nP0(int *x, struct srcu_struct *s)\n{\n\tint r0;\n\tr0 = srcu_read_lock(s);\n"
           "\tsrcu_read_unlock(s, r0);\n}\nexists (x=0)\n")
    code, _, err = _run(src, tmp_path)
    assert code == 2
    assert "t.litmus:6:7: error: 'srcu_read_lock': SRCU is not supported" in err and "Traceback" not in err


def test_a_negated_exists_prints_its_own_verdict(tmp_path):
    """herd7: `Test NAME Forbidden` for ~exists, the witnesses counted for ~P, the
    Observation for P; the condition printed with `[x]` for a location."""
    code, out, _ = _run((LITMUS_C / "MP+filter-locations.litmus").read_text(), tmp_path)
    assert code == 0
    assert out.startswith("Test MP+filter-locations Forbidden\n")
    assert "Positive: 1 Negative: 0\nCondition ~exists (1:r1=0)\nObservation MP+filter-locations Never 0 1" in out
    code, out, _ = _run((LITMUS_C / "S+poonceonces.litmus").read_text(), tmp_path)
    assert "Condition exists ([x]=2 /\\ 1:r0=1)" in out


def test_result_lines_with_datarace_deadlock_and_maybe_are_read(tmp_path):
    """The kernel's judgelitmus.sh conventions: `Result: Sometimes DATARACE` predicts the
    data-race flag (and its absence predicts none), DEADLOCK means no execution, Maybe
    takes any verdict; main's reader dropped all three."""
    assert _run(RACE, tmp_path)[0] == 0
    code, out, _ = _run(RACE.replace("Sometimes DATARACE", "Sometimes"), tmp_path)  # the race not predicted
    assert code == 1 and "but a data race is flagged, which the file's 'Result: Sometimes' does not predict" in out
    code, out, _ = _run(DEP_PLAIN.replace("Result: Never", "Result: Never DATARACE"), tmp_path)
    assert code == 1 and "no data race is flagged" in out
    assert _run(RACE.replace("Sometimes DATARACE", "Maybe DATARACE"), tmp_path)[0] == 0
    assert _run(RACE.replace("Sometimes DATARACE", "DEADLOCK DATARACE"), tmp_path)[0] == 1
    code, out, _ = _run((LITMUS_C / "lock-deadlock.litmus").read_text(), tmp_path)
    assert code == 0 and "Observation lock-deadlock Never 0 0" in out
    code, out, _ = _run(RACE.replace("Sometimes DATARACE", "Never DATARACE"), tmp_path, "--memory-model", "sc")
    assert code == 0  # flags are the LKMM's: under sc only the verdict is compared


def test_litmus_help_names_herd7s_output_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as e:
        main(["t.litmus", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for words in ("Allowed|Forbidden|Required", "Positive: P Negative: N", "Flag", "Never|Sometimes|Always P N",
                  "exit codes:", "3  more than --max-candidates"):
        assert words in out


def test_every_primitive_and_plain_access_has_a_file():
    """Each primitive of the table by its exact name (every _relaxed/_acquire/_release
    form), and plain writes and reads, appear in tests/litmus_c (herd7 checks them all)."""
    text = "\n".join(p.read_text() for p in LITMUS_C.glob("*.litmus"))
    used = set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\(", text))
    assert sorted(PRIMITIVES - used) == []
    assert re.search(r"^\t\*\w+ = ", text, re.M) and re.search(r"= \*\w+;", text)


# ------------------------------------------------------------ generated programs

LOCS = ("x", "y")
ACCESSES = ("WRITE_ONCE(*{l}, {v});", "smp_store_release({l}, {v});", "*{l} = {v};",
            "{r} = READ_ONCE(*{l});", "{r} = smp_load_acquire({l});", "{r} = *{l};",
            "{r} = xchg_relaxed({l}, {v});", "{r} = spin_is_locked(s);")
FENCES = ("smp_mb();", "smp_wmb();", "smp_rmb();", "barrier();", "synchronize_rcu();")


@st.composite
def programs(draw):
    """Two or three threads of up to three accesses, some inside a lock's critical
    section or an RCU read-side section, with fences and dependencies between them."""
    nthreads = draw(st.integers(2, 3))
    threads = []
    for _ in range(nthreads):
        regs, body = [], []
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.integers(0, 3)) == 0:
                body.append(draw(st.sampled_from(FENCES)))
            if regs and draw(st.integers(0, 4)) == 0:  # a dependency on the last read
                r, loc = regs[-1], draw(st.sampled_from(LOCS))
                body.append(draw(st.sampled_from((f"WRITE_ONCE(*{loc}, {r});", f"if ({r}) *{loc} = 1;"))))
                continue
            r = f"r{len(regs)}"
            tmpl = draw(st.sampled_from(ACCESSES))
            if "{r}" in tmpl:
                regs.append(r)
            body.append(tmpl.format(r=r, l=draw(st.sampled_from(LOCS)), v=draw(st.integers(1, 2))))
        wrap = draw(st.sampled_from(("", "", "lock", "rcu")))
        if wrap == "lock" and not any("spin_is_locked" in b for b in body):
            body = ["spin_lock(s);"] + body + ["spin_unlock(s);"]
        elif wrap == "rcu" and not any("synchronize_rcu" in b for b in body):
            body = ["rcu_read_lock();"] + body + ["rcu_read_unlock();"]
        threads.append((regs, body))
    text = "C gen\n\n{}\n\n"
    for i, (regs, body) in enumerate(threads):
        text += f"P{i}(int *x, int *y, spinlock_t *s)\n{{\n" + "".join(f"\tint {r};\n" for r in regs)
        text += "".join(f"\t{b}\n" for b in body) + "}\n\n"
    shown = [f"{i}:{r}" for i, (regs, _) in enumerate(threads) for r in regs] + list(LOCS)
    text += "exists (" + " /\\ ".join(f"{s}={draw(st.integers(0, 2))}" for s in shown[:3]) + ")\n"
    return text


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs())
def test_generated_programs_report_as_herd7(text):
    """Plain accesses, locks, spin_is_locked, RCU and fences mixed: the same report."""
    assert our_report(parse_litmus(text, "gen.litmus")) == herd7_report(text), text


# ------------------------------------------------------------ the agreement table

def agreement_table(files: list[Path] | None = None, keyed_by_text: bool = True) -> str:
    """file, its Result line, herd7's Observation, ours, and whether the reports agree
    (refused: our reader exits 2 on it)."""
    rows = []
    for p in KERNEL_FILES if files is None else files:
        try:
            test = load_litmus(str(p))
        except SpecError:
            rows.append((p.stem, "-", "-", "refused", "refused"))
            continue
        ours = our_report(test)
        rec = oracle.recording_of(None if keyed_by_text else p, test.source)
        herd = herd7_report(test.source, None if keyed_by_text else p) \
            if rec.exists() or oracle.MODE != "recorded" else ""
        rows.append((p.stem, test.expected or "-", _observation(herd) if herd else "(no herd7)",
                     _observation(ours), "yes" if herd and herd == ours else ("-" if not herd else "NO")))
    w = max([len(r[0]) for r in rows] + [4])
    lines = [f"{'file':{w}}  {'Result':9}  {'herd7':17}  {'ours':17}  same report"]
    lines += [f"{a:{w}}  {b:9}  {c:17}  {d:17}  {e}" for a, b, c, d, e in rows]
    same = sum(r[4] == "yes" for r in rows)
    results = sum(r[1] != "-" and r[3].split()[0] == r[1] for r in rows)
    differ = sum(r[4] == "NO" for r in rows)
    lines.append(f"\n{len(rows)} files; ours = herd7 (whole report) on {same}; "
                 f"ours = Result line on {results} of {sum(r[1] != '-' for r in rows)}")
    lines.append(f"agree {same} / disagree {differ} / refused {sum(r[4] == 'refused' for r in rows)}"
                 f" / no herd7 recording {sum(r[4] == '-' for r in rows)}")
    return "\n".join(lines)


if __name__ == "__main__":
    if KERNEL_FILES:
        print(agreement_table())
    else:  # tests/litmus_c: ours, among them one of each shape the kernel's corpus names
        print("no kernel litmus tests found (TIMERACE_KERNEL_LITMUS); tests/litmus_c instead:\n")
        print(agreement_table(sorted(LITMUS_C.glob("*.litmus")), keyed_by_text=False))
