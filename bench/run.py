#!/usr/bin/env python3
"""Benchmark timerace against SPIN on the same models, side by side, in one run.

For every bench model family (bench/models/*.spec, with a Promela twin in bench/promela/)
and every size N it runs:

  ours  `check FILE -D N=n --variant base --brief --json OUT`, end to end (Python start-up,
        parse, compile, search), single worker; and with `--workers` once `check` has it.
  SPIN  end to end with default settings: `spin -a`, `gcc -O2 -o pan pan.c`, `./pan`;
        and once with reductions off (`spin -o3 -a`, `gcc -O2 -DNOREDUCE`) to compare
        state counts, which must agree exactly with ours.

It then checks every shipped model (models/*.spec, all variants, `check --brief`) and
prints one table per part. It installs nothing: SPIN and gcc are used if they are on PATH,
and the SPIN columns say "not installed" otherwise. Times are medians of --repeats runs;
peak memory is the child's ru_maxrss (os.wait4), the same measure for both tools.

Usage: python bench/run.py [--sizes quick|default|large] [--model NAME=N,N ...]
                           [--repeats K] [--no-spin] [--no-shipped] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

# pan's default depth limit is 10,000 steps; deeper searches are retried with this
# many times more until pan stops reporting "max search depth too small".
PAN_DEFAULT_DEPTH = 10_000
PAN_DEPTH_STEP = 10
PAN_MAX_DEPTH = 100_000_000


@dataclass(frozen=True, slots=True)
class Family:
    """A model that scales with one constant, written in both languages."""

    name: str
    spec: Path
    promela: Path
    param: str
    sizes: dict[str, tuple[int, ...]]  # size preset -> values of the constant
    what: str


FAMILIES = (
    Family("philosophers", BENCH / "models/philosophers.spec", BENCH / "promela/philosophers.pml", "N",
           {"quick": (4, 6), "default": (6, 7, 8, 9), "large": (6, 7, 8, 9, 10)},
           "dining philosophers, resource-ordered forks"),
    Family("kvm_vcpus", BENCH / "models/kvm_vcpus.spec", BENCH / "promela/kvm_vcpus.pml", "N",
           {"quick": (1, 2), "default": (2, 3), "large": (2, 3)},
           "N vCPUs: mode, request bit, cmpxchg kick, one hrtimer each"),
)


# ---- running a child and measuring it -------------------------------------------


@dataclass(frozen=True, slots=True)
class Proc:
    """One finished child process: exit code, wall time, peak memory, output."""

    returncode: int
    seconds: float
    cpu_seconds: float  # user + system: less sensitive than wall time to a busy machine
    maxrss_kb: int
    stdout: str
    stderr: str


def run_measured(argv: list[str], cwd: Path | None = None) -> Proc:
    """Run a command; wall time and ru_maxrss come from this child alone (os.wait4)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Proc(p.returncode, seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
                    out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


# ---- ours ----------------------------------------------------------------------


@dataclass
class OursResult:
    ok: bool  # exit 0: every property as expected, search complete
    states: int | None  # of the base variant (bench) or summed over variants (shipped)
    seconds: float | None  # median wall time, end to end
    cpu_seconds: float | None  # median CPU time, end to end
    search_seconds: float | None  # median engine time reported in the JSON
    maxrss_kb: int | None
    variants: list[dict] = field(default_factory=list)
    note: str = ""


def check_command(explicit: str | None) -> list[str]:
    """The `check` to benchmark: --check, else the one next to this Python, else PATH."""
    if explicit:
        return [explicit]
    beside = Path(sys.executable).parent / "check"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("check")
    if found:
        return [found]
    return [sys.executable, "-m", "checker"]


def workers_flag(check: list[str]) -> bool:
    """Whether this `check` can search with several worker processes yet."""
    r = run_measured(check + ["--help"])
    return "--workers" in r.stdout


def run_ours(check: list[str], spec: Path, defines: dict[str, int], repeats: int, work: Path,
             base_only: bool, extra: list[str] = ()) -> OursResult:
    walls, cpus, searches, rss = [], [], [], []
    last: dict | None = None
    for k in range(repeats):
        out = work / f"ours-{spec.stem}-{k}.json"
        argv = check + [str(spec), "--brief", "--json", str(out)] + list(extra)
        for name, value in defines.items():
            argv += ["-D", f"{name}={value}"]
        if base_only:
            argv += ["--variant", "base"]
        r = run_measured(argv)
        if r.returncode != 0 or not out.exists():
            tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
            return OursResult(False, None, r.seconds, r.cpu_seconds, None, r.maxrss_kb,
                              note=f"exit {r.returncode}: " + " | ".join(tail))
        last = json.loads(out.read_text())
        walls.append(r.seconds)
        cpus.append(r.cpu_seconds)
        rss.append(r.maxrss_kb)
        searches.append(sum(v["stats"]["seconds"] for v in last["variants"]))
    variants = [{"name": v["name"], "states": v["stats"]["states"], "complete": v["stats"]["complete"],
                 "verdicts": {o["property"]: o["verdict"] for o in v["outcomes"]}}
                for v in last["variants"]]
    return OursResult(True, sum(v["states"] for v in variants), median(walls), median(cpus), median(searches),
                      int(median(rss)), variants)


# ---- SPIN ----------------------------------------------------------------------


@dataclass
class SpinRun:
    ok: bool
    states: int | None  # pan's "states, stored"
    errors: int | None
    depth: int | None
    pan_depth_limit: int  # the -m that let the search finish
    seconds: float | None  # median wall time of spin -a + gcc + pan
    cpu_seconds: float | None  # median CPU time of the same
    pan_seconds: float | None  # median wall time of pan alone
    maxrss_kb: int | None  # median peak memory of pan
    pan_memory_mb: float | None  # pan's own "total actual memory usage"
    note: str = ""


_STORED = re.compile(r"^\s*(\d+) states, stored", re.M)
_ERRORS = re.compile(r"errors: (\d+)")
_DEPTH = re.compile(r"depth reached (\d+)")
_MEMORY = re.compile(r"^\s*([\d.]+)\s+total actual memory usage", re.M)


def promela_instance(template: Path, param: str, n: int) -> str:
    """The Promela twin for one size: the constant and its FORALL_N expansion in front.

    Promela has no quantifier, so invariants over all N processes are written with
    FORALL_N(P), which this expands to P(0) && ... && P(n-1)."""
    conj = " && ".join(f"P({i})" for i in range(n))
    return f"#define {param} {n}\n#define FORALL_N(P) ({conj})\n" + template.read_text()


def pan_depth_args(limit: int) -> list[str]:
    return [] if limit == PAN_DEFAULT_DEPTH else [f"-m{limit}"]


def _round_up(x: int) -> int:
    """x rounded up to two significant digits (a readable -m value)."""
    unit = 10 ** max(len(str(x)) - 2, 0)
    return -(-x // unit) * unit


def run_spin(pml: Path, work: Path, repeats: int, reduce: bool) -> SpinRun:
    """spin -a, gcc -O2, ./pan; `reduce=False` turns off statement merging and POR."""
    tag = "por" if reduce else "noreduce"
    d = work / f"{pml.stem}-{tag}"
    d.mkdir(exist_ok=True)
    src = d / pml.name
    shutil.copy(pml, src)
    spin_argv = ["spin", "-a", src.name] if reduce else ["spin", "-o3", "-a", src.name]
    gcc_argv = ["gcc", "-O2", "-o", "pan", "pan.c"] if reduce else ["gcc", "-O2", "-DNOREDUCE", "-o", "pan", "pan.c"]

    def build() -> tuple[Proc, Proc | None, str | None]:
        s = run_measured(spin_argv, cwd=d)
        if s.returncode != 0:
            return s, None, "spin -a failed: " + (s.stdout + s.stderr).strip()[-300:]
        g = run_measured(gcc_argv, cwd=d)
        if g.returncode != 0:
            return s, g, "gcc failed: " + g.stderr.strip()[-300:]
        return s, g, None

    # Find the depth limit that lets pan finish (not timed): pan stops at -m and says so.
    # Then give the timed runs a stack just deeper than the search (pan's depth-first
    # order is deterministic), so that SPIN is not charged for an oversized stack.
    *_, failure = build()
    if failure:
        return SpinRun(False, None, None, None, 0, None, None, None, None, None, failure)
    limit = PAN_DEFAULT_DEPTH
    while True:
        p = run_measured(["./pan"] + pan_depth_args(limit), cwd=d)
        if "max search depth too small" not in p.stdout or limit >= PAN_MAX_DEPTH:
            break
        limit *= PAN_DEPTH_STEP
    depth = _DEPTH.search(p.stdout)
    if limit > PAN_DEFAULT_DEPTH and depth:
        limit = min(limit, _round_up(int(depth.group(1)) * 11 // 10))
    pan_args = pan_depth_args(limit)
    totals, cpus, pans, rss = [], [], [p.seconds], [p.maxrss_kb]
    if reduce:  # timed runs, end to end; without reductions only the count matters
        pans, rss = [], []
    for k in range(repeats if reduce else 0):
        s, g, failure = build()
        if failure:
            return SpinRun(False, None, None, None, limit, None, None, None, None, None, failure)
        p = run_measured(["./pan"] + pan_args, cwd=d)
        if "max search depth too small" in p.stdout:
            break  # reported below as incomplete
        totals.append(s.seconds + g.seconds + p.seconds)
        cpus.append(s.cpu_seconds + g.cpu_seconds + p.cpu_seconds)
        pans.append(p.seconds)
        rss.append(p.maxrss_kb)
    out = p.stdout
    stored = _STORED.search(out)
    errors = _ERRORS.search(out)
    depth = _DEPTH.search(out)
    mem = _MEMORY.search(out)
    complete = "max search depth too small" not in out
    ok = bool(stored and errors and complete and int(errors.group(1)) == 0)
    note = "" if complete else f"incomplete even with -m{limit}"
    if errors and int(errors.group(1)):
        note = "pan reports errors: " + "; ".join(l.strip() for l in out.splitlines() if "pan:" in l)[:300]
    return SpinRun(ok, int(stored.group(1)) if stored else None, int(errors.group(1)) if errors else None,
                   int(depth.group(1)) if depth else None, limit, median(totals), median(cpus), median(pans),
                   int(median(rss)), float(mem.group(1)) if mem else None, note)


# ---- one row of the bench table -------------------------------------------------


@dataclass
class Row:
    family: str
    n: int
    ours: OursResult
    workers: OursResult | None
    spin: SpinRun | None  # default settings, timed
    spin_noreduce: SpinRun | None  # reductions off, for the state count
    counts_agree: bool | None


def bench_row(fam: Family, n: int, args, check: list[str], has_workers: bool, spin_ok: bool,
              work: Path) -> Row:
    defines = {fam.param: n}
    ours = run_ours(check, fam.spec, defines, args.repeats, work, base_only=True)
    multi = None
    if has_workers:
        multi = run_ours(check, fam.spec, defines, args.repeats, work, base_only=True,
                         extra=["--workers", str(args.workers)])
    spin = noreduce = None
    agree = None
    if spin_ok:
        d = work / f"{fam.name}-{n}"
        d.mkdir()
        pml = d / fam.promela.name
        pml.write_text(promela_instance(fam.promela, fam.param, n))
        noreduce = run_spin(pml, d, 1, reduce=False)
        spin = run_spin(pml, d, args.repeats, reduce=True)
        if ours.states is not None and noreduce.states is not None:
            agree = ours.states == noreduce.states
    return Row(fam.name, n, ours, multi, spin, noreduce, agree)


# ---- formatting ----------------------------------------------------------------


def _n(x: int | None) -> str:
    return "-" if x is None else f"{x:,}"


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _mb(kb: int | None) -> str:
    return "-" if kb is None else f"{kb / 1024:.0f}"


def _rate(states: int | None, seconds: float | None) -> str:
    if states is None or not seconds or seconds < 0.01:  # below the clocks' resolution
        return "-"
    return f"{states / seconds:,.0f}"


def table(headers: list[str], rows: list[list[str]], left: frozenset[int] = frozenset({0})) -> str:
    """A plain-text table; numbers right-aligned, the columns in `left` left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    right = [i not in left for i in range(len(headers))]

    def line(cells):
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def bench_table(rows: list[Row], has_workers: bool, spin_note: str, workers: int) -> str:
    headers = ["model", "N", "states", "SPIN states", "SPIN POR", "agree", "time", "SPIN time", "ratio",
               "cpu ratio", "pan time", "states/s", "SPIN st/s", "MB", "SPIN MB", f"time {workers}w"]
    out = []
    for r in rows:
        o, s, z = r.ours, r.spin, r.spin_noreduce
        spin_states = _n(z.states) if z else spin_note
        agree = {True: "yes", False: "NO", None: "-"}[r.counts_agree]
        ratio = cpu_ratio = "-"
        if o.seconds and s and s.seconds:
            ratio = f"{o.seconds / s.seconds:.2f}"
        if o.cpu_seconds and s and s.cpu_seconds:
            cpu_ratio = f"{o.cpu_seconds / s.cpu_seconds:.2f}"
        if not has_workers:
            multi = "n/a"
        elif r.workers and r.workers.ok:
            multi = _s(r.workers.seconds)
        else:
            multi = "failed"
        out.append([r.family, str(r.n), _n(o.states) if o.ok else "FAILED", spin_states,
                    _n(s.states) if s else "-", agree, _s(o.seconds), _s(s.seconds) if s else "-", ratio,
                    cpu_ratio, _s(s.pan_seconds) if s else "-",
                    _rate(o.states, o.search_seconds), _rate(s.states, s.pan_seconds) if s else "-",
                    _mb(o.maxrss_kb), _mb(s.maxrss_kb) if s else "-", multi])
    return table(headers, out)


def shipped_table(results: list[tuple[Path, OursResult]]) -> str:
    headers = ["model", "variant", "states", "verdicts", "time", "MB"]
    out = []
    for path, r in results:
        if not r.ok:
            out.append([path.name, "-", "FAILED", r.note[:60], _s(r.seconds), _mb(r.maxrss_kb)])
            continue
        for k, v in enumerate(r.variants):
            verdicts = ", ".join(f"{p} {x}" for p, x in v["verdicts"].items())
            first = k == 0
            out.append([path.name if first else "", v["name"], _n(v["states"]), verdicts,
                        _s(r.seconds) if first else "", _mb(r.maxrss_kb) if first else ""])
    return table(headers, out, left=frozenset({0, 1, 3}))


# ---- main ----------------------------------------------------------------------


def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", choices=("quick", "default", "large"), default="default",
                   help="size preset for every family (default: %(default)s)")
    p.add_argument("--model", action="append", default=[], metavar="NAME[=N,N...]",
                   help="bench only this family, optionally at these sizes (repeatable)")
    p.add_argument("--repeats", type=int, default=3, metavar="K",
                   help="timed runs per tool and size; medians are quoted (default: %(default)s)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2, metavar="W",
                   help="workers for the multi-worker column, once `check` has --workers")
    p.add_argument("--check", metavar="PATH", help="the `check` executable to benchmark")
    p.add_argument("--no-spin", action="store_true", help="do not run SPIN even if it is installed")
    p.add_argument("--no-shipped", action="store_true", help="skip the shipped models in models/")
    p.add_argument("--json", metavar="OUT", help="also write every measurement as JSON")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    known = {f.name: f for f in FAMILIES}
    plan: list[tuple[Family, tuple[int, ...]]] = []
    for item in args.model:
        name, _, sizes = item.partition("=")
        if name not in known:
            p.error(f"unknown model {name!r}; the families are: {', '.join(known)}")
        try:
            ns = tuple(int(x) for x in sizes.split(",")) if sizes else known[name].sizes[args.sizes]
        except ValueError:
            p.error(f"--model {item}: sizes must be integers, e.g. {name}=4,6")
        plan.append((known[name], ns))
    if not args.model:
        plan = [(f, f.sizes[args.sizes]) for f in FAMILIES]
    args.plan = plan
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # keep the table after the progress lines
    check = check_command(args.check)
    has_workers = workers_flag(check)
    missing = [t for t in ("spin", "gcc") if shutil.which(t) is None]
    spin_ok = not args.no_spin and not missing
    spin_note = "off" if args.no_spin else ("not installed" if missing else "")
    load = os.getloadavg()
    print(f"timerace bench: {os.cpu_count()} cores, load {load[0]:.2f}; medians of {args.repeats} run(s); "
          f"check = {' '.join(check)}")
    if missing and not args.no_spin:
        print(f"SPIN columns empty: {', '.join(missing)} not on PATH (this script installs nothing)")
    if not has_workers:
        print("multi-worker column n/a: this `check` has no --workers option yet")
    print(flush=True)
    rows: list[Row] = []
    shipped: list[tuple[Path, OursResult]] = []
    with tempfile.TemporaryDirectory(prefix="timerace-bench-") as tmp:
        work = Path(tmp)
        for fam, sizes in args.plan:
            for n in sizes:
                print(f"  {fam.name} N={n} ...", file=sys.stderr, flush=True)
                rows.append(bench_row(fam, n, args, check, has_workers, spin_ok, work))
        if not args.no_shipped:
            for spec in sorted((ROOT / "models").glob("*.spec")):
                print(f"  models/{spec.name} ...", file=sys.stderr, flush=True)
                shipped.append((spec, run_ours(check, spec, {}, args.repeats, work, base_only=False)))
    print(f"Bench models (base variant; time = median wall time to verdict, end to end; "
          f"load average now {os.getloadavg()[0]:.2f})")
    print(bench_table(rows, has_workers, spin_note, args.workers))
    problems = []
    for r in rows:
        if not r.ours.ok:
            problems.append(f"{r.family} N={r.n}: ours failed: {r.ours.note}")
        for label, s in (("SPIN", r.spin), ("SPIN -DNOREDUCE", r.spin_noreduce)):
            if s is not None and not s.ok:
                problems.append(f"{r.family} N={r.n}: {label}: {s.note or 'no verdict'}")
        if r.counts_agree is False:
            problems.append(f"{r.family} N={r.n}: state counts differ: ours {_n(r.ours.states)}, "
                            f"SPIN without reductions {_n(r.spin_noreduce.states)}")
    depths = [f"{r.family} N={r.n} -m{r.spin.pan_depth_limit}" for r in rows
              if r.spin and r.spin.pan_depth_limit != PAN_DEFAULT_DEPTH]
    print()
    print("states: ours; SPIN states: pan's 'states, stored' with reductions off (spin -o3 -a, "
          "gcc -DNOREDUCE); SPIN POR: with its default reductions.")
    print("time: ours `check` wall time; SPIN time: spin -a + gcc -O2 + ./pan wall time, default "
          "settings; ratio = ours / SPIN (target <= 1.0).")
    print("pan time: pan alone, with the default hash table (-w24) and a DFS stack (-m) just deeper than the search.")
    print("states/s: over the search alone (our engine's own clock; pan's wall time). "
          "MB: peak resident memory of `check` / of pan.")
    if depths:
        print("pan's default -m10000 is too shallow for: " + ", ".join(depths) +
              " (found by untimed calibration runs)")
    if shipped or not args.no_shipped:
        print()
        print("Shipped models (models/*.spec, every variant, `check --brief`; no Promela twins yet, "
              "so no SPIN column)")
        if shipped:
            print(shipped_table(shipped))
        else:
            print("(no models/*.spec in this checkout)")
        for path, r in shipped:
            if not r.ok:
                problems.append(f"models/{path.name}: {r.note}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "cores": os.cpu_count(), "load": load, "repeats": args.repeats, "check": check,
            "workers_supported": has_workers,
            "bench": [asdict(r) for r in rows],
            "shipped": [{"model": str(p.relative_to(ROOT)), **asdict(r)} for p, r in shipped],
        }, indent=2) + "\n")
    if problems:
        print()
        for msg in problems:
            print("PROBLEM: " + msg)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
