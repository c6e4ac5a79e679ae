#!/usr/bin/env python3
"""Benchmark timerace against SPIN on the same models, side by side, in one run.

For every bench model family (bench/models/*.spec, with a Promela twin in bench/promela/)
and every size N it runs:

  ours  `check FILE -D N=n --variant base --workers 1 --brief --json OUT --with-timing`,
        end to end (Python start-up, parse, compile, search), with its default
        reductions; and with `--workers W`; and once, untimed, with reductions off
        (`--no-por --no-symmetry`) for the state count. Options this `check` lacks (read
        from `check --help`) are left out, and the W-worker column then says n/a.
  SPIN  end to end with default settings: `spin -a`, `gcc -O2 -o pan pan.c`, `./pan`;
        and once with reductions off (`spin -o3 -a`, `gcc -O2 -DNOREDUCE`) to compare
        state counts, which must agree exactly with ours without reductions.

It then checks every shipped model (models/*.spec, all variants, `check --brief`) and
compares it with SPIN on the Promela twins `check --promela` writes of the variants that
translate (time to verdict; counts and verdicts with reductions off, which must agree),
listing the variants that do not translate with the reason. It prints one table per part. It installs nothing: SPIN and gcc are used if they are on PATH,
and the SPIN columns say "not installed" otherwise. Times are medians of --repeats runs;
peak memory is the child's ru_maxrss (os.wait4), the same measure for both tools.

Usage: python bench/run.py [--sizes quick|default|large] [--model NAME=N,N ...]
                           [--repeats K] [--no-spin] [--no-shipped] [--json OUT]
"""

from __future__ import annotations

import argparse
import functools
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


FAMILIES = (
    Family("philosophers", BENCH / "models/philosophers.spec", BENCH / "promela/philosophers.pml", "N",
           {"quick": (4, 6), "default": (6, 7, 8, 9), "large": (6, 7, 8, 9, 10)}),
    Family("kvm_vcpus", BENCH / "models/kvm_vcpus.spec", BENCH / "promela/kvm_vcpus.pml", "N",
           {"quick": (1, 2), "default": (2, 3), "large": (2, 3)}),
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


def build_pan(steps: list[list[str]], cwd: Path) -> tuple[tuple[float, float] | None, str | None]:
    """Run the build steps (spin -a, gcc) in order: ((wall, CPU seconds), None), or
    (None, what failed) at the first that fails."""
    wall = cpu = 0.0
    for argv in steps:
        r = run_measured(argv, cwd=cwd)
        wall, cpu = wall + r.seconds, cpu + r.cpu_seconds
        if r.returncode != 0:
            return None, f"{' '.join(argv)} failed: " + (r.stdout + r.stderr).strip()[-300:]
    return (wall, cpu), None


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


@functools.cache
def check_help(check: tuple[str, ...]) -> str:
    """`check --help`: which options this `check` has (--workers, --with-timing)."""
    return run_measured(list(check) + ["--help"]).stdout


class OursBench:
    """`check` on one spec; each `once()` is one timed run, end to end."""

    def __init__(self, check: list[str], spec: Path, defines: dict[str, int], work: Path,
                 base_only: bool, extra: tuple[str, ...] = ()):
        self.argv = check + [str(spec), "--brief"] + list(extra)
        if "--with-timing" in check_help(tuple(check)):  # the JSON has seconds only when asked
            self.argv.append("--with-timing")
        for name, value in defines.items():
            self.argv += ["-D", f"{name}={value}"]
        if base_only:
            self.argv += ["--variant", "base"]
        self.out = work / f"ours-{spec.stem}-{'-'.join(extra)}.json"
        self.samples: list[tuple[Proc, float]] = []  # the run, and the engine's own seconds
        self.last: dict | None = None
        self.failure: Proc | None = None

    def once(self) -> None:
        if self.failure is not None:
            return
        self.out.unlink(missing_ok=True)
        r = run_measured(self.argv + ["--json", str(self.out)])
        if r.returncode != 0 or not self.out.exists():
            self.failure = r
            return
        self.last = json.loads(self.out.read_text())
        seconds = [v["stats"].get("seconds") for v in self.last["variants"]]
        self.samples.append((r, None if None in seconds else sum(seconds)))

    def result(self) -> OursResult:
        if self.failure is not None:
            r = self.failure
            tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
            return OursResult(False, None, r.seconds, r.cpu_seconds, None, r.maxrss_kb,
                              note=f"exit {r.returncode}: " + " | ".join(tail))
        variants = [{"name": v["name"], "states": v["stats"]["states"], "complete": v["stats"]["complete"],
                     "verdicts": {o["property"]: o["verdict"] for o in v["outcomes"]}}
                    for v in self.last["variants"]]
        runs = [r for r, _ in self.samples]
        return OursResult(True, sum(v["states"] for v in variants), median([r.seconds for r in runs]),
                          median([r.cpu_seconds for r in runs]),
                          median([t for _, t in self.samples if t is not None]),
                          int(median([r.maxrss_kb for r in runs])), variants)


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
    search_seconds: float | None  # median of pan's own "elapsed time" (the search)
    maxrss_kb: int | None  # median peak memory of pan
    pan_memory_mb: float | None  # pan's own "total actual memory usage"
    note: str = ""


_STORED = re.compile(r"^\s*(\d+) states, stored", re.M)
_ERRORS = re.compile(r"errors: (\d+)")
_DEPTH = re.compile(r"depth reached (\d+)")
_MEMORY = re.compile(r"^\s*([\d.]+)\s+total actual memory usage", re.M)
_ELAPSED = re.compile(r"pan: elapsed time ([\d.e+-]+) seconds")
_TOO_SHALLOW = "max search depth too small"


def promela_instance(template: Path, param: str, n: int) -> str:
    """The Promela twin for one size: the constant and its FORALL_N expansion in front.

    Promela has no quantifier, so invariants over all N processes are written with
    FORALL_N(P), which this expands to P(0) && ... && P(n-1)."""
    conj = " && ".join(f"P({i})" for i in range(n))
    return f"#define {param} {n}\n#define FORALL_N(P) ({conj})\n" + template.read_text()


def _elapsed(pans: list[Proc]) -> list[float]:
    return [float(m.group(1)) for m in (_ELAPSED.search(p.stdout) for p in pans) if m]


def pan_depth_args(limit: int) -> list[str]:
    """pan's -m option, left out at its default."""
    return [] if limit == PAN_DEFAULT_DEPTH else [f"-m{limit}"]


def _round_up(x: int) -> int:
    """x rounded up to two significant digits (a readable -m value)."""
    unit = 10 ** max(len(str(x)) - 2, 0)
    return -(-x // unit) * unit


class SpinBench:
    """SPIN on one Promela file: spin -a, gcc -O2, ./pan.

    `reduce=False` turns off statement merging and partial-order reduction. Building
    does an untimed calibration run first, which is all a state count needs; each
    `once()` is then one timed run, end to end."""

    def __init__(self, pml: Path, work: Path, reduce: bool):
        self.dir = work / f"{pml.stem}-{'por' if reduce else 'noreduce'}"
        self.dir.mkdir(exist_ok=True)
        shutil.copy(pml, self.dir / pml.name)
        self.spin_argv = ["spin", "-a", pml.name] if reduce else ["spin", "-o3", "-a", pml.name]
        self.gcc_argv = ["gcc", "-O2", "-o", "pan", "pan.c"]
        if not reduce:
            self.gcc_argv[2:2] = ["-DNOREDUCE"]
        self.samples: list[tuple[float, float, Proc]] = []  # wall, cpu (all three), pan
        self.failure: str | None = None
        self.limit = PAN_DEFAULT_DEPTH  # -m for the timed runs
        self.calibrated = PAN_DEFAULT_DEPTH  # -m of the calibration run
        self.last: Proc | None = None
        self.calibrate()

    def build(self) -> tuple[float, float] | None:
        """spin -a and gcc: their wall and CPU seconds, or None (and a failure) if one fails."""
        times, self.failure = build_pan([self.spin_argv, self.gcc_argv], self.dir)
        return times

    def pan(self) -> Proc:
        return run_measured(["./pan"] + pan_depth_args(self.limit), cwd=self.dir)

    def calibrate(self) -> None:
        """Find a depth limit that lets pan finish: pan stops at -m and says so. The timed
        runs then get a stack just deeper than the search (pan's depth-first order is
        deterministic), so that SPIN is not charged for an oversized stack."""
        if self.build() is None:
            return
        while True:
            self.last = self.pan()
            if _TOO_SHALLOW not in self.last.stdout or self.limit >= PAN_MAX_DEPTH:
                break
            self.limit *= PAN_DEPTH_STEP
        depth = _DEPTH.search(self.last.stdout)
        self.calibrated = self.limit
        if self.limit > PAN_DEFAULT_DEPTH and depth:
            self.limit = min(self.limit, _round_up(int(depth.group(1)) * 11 // 10))

    def once(self) -> None:
        if self.failure is not None or _TOO_SHALLOW in self.last.stdout:
            return
        built = self.build()
        if built is None:
            return
        p = self.pan()
        self.last = p
        if _TOO_SHALLOW not in p.stdout:
            self.samples.append((built[0] + p.seconds, built[1] + p.cpu_seconds, p))

    def result(self) -> SpinRun:
        if self.failure is not None or self.last is None:
            return SpinRun(False, None, None, None, self.limit, None, None, None, None, None, None,
                           self.failure or "no run")
        out = self.last.stdout
        stored, errors, depth, mem = (rx.search(out) for rx in (_STORED, _ERRORS, _DEPTH, _MEMORY))
        complete = _TOO_SHALLOW not in out
        ok = bool(stored and errors and complete and int(errors.group(1)) == 0)
        note = "" if complete else f"incomplete even with -m{self.calibrated}"
        if errors and int(errors.group(1)):
            note = "pan reports errors: " + "; ".join(ln.strip() for ln in out.splitlines() if "pan:" in ln)[:300]
        pans = [p for _, _, p in self.samples] or [self.last]
        limit = self.limit if self.samples else self.calibrated
        return SpinRun(ok, int(stored.group(1)) if stored else None, int(errors.group(1)) if errors else None,
                       int(depth.group(1)) if depth else None, limit,
                       median([w for w, _, _ in self.samples]), median([c for _, c, _ in self.samples]),
                       median([p.seconds for p in pans]), median(_elapsed(pans)),
                       int(median([p.maxrss_kb for p in pans])),
                       float(mem.group(1)) if mem else None, note)


# ---- Promela twins of the shipped models (check --promela) -------------------------

_VIOLATED = re.compile(r"assertion violated \(?([A-Za-z_]\w*)\)?")
_CLAIM = re.compile(r"^ltl (\w+)", re.M)
_CHOOSER = "active proctype tr_init()"


@dataclass
class TwinCheck:
    """pan on one twin with reductions off: its state count and what it found violated."""

    states: int | None  # "states, stored" of the safety run (-DNOREDUCE -DNOCLAIM, -c0)
    extra_states: int  # states pan stores that we do not (1: the one before a chooser picks initial values)
    violated: set[str]  # safety: invariant_X, deadlock, final_X, assert_X, model_error_...
    cycles: dict[str, bool]  # liveness property (by the claim) -> pan found a fair acceptance cycle
    depth_limit: int
    failure: str | None = None

    def verdicts(self) -> dict[str, str]:
        """By our property names (claims and invariants named as in the model)."""
        out = {}
        for name in self.violated:
            kind, _, rest = name.partition("_")
            prop = rest if kind in ("invariant", "final", "assert", "reachable") else name
            out[prop] = "holds" if kind == "reachable" else "violated"  # a reachable one was reached
        for claim, cycle in self.cycles.items():
            out[claim] = "violated" if cycle else "holds"
        return out


def claims_of(pml_text: str) -> list[str]:
    return _CLAIM.findall(pml_text)


def claim_property(pml_text: str, claim: str) -> str:
    """The model's property a claim checks (a claim is renamed where the property's name
    is not a safe Promela name; its line says `/* property NAME */`)."""
    found = re.search(rf"^ltl {re.escape(claim)} .*/\* property (\w+) \*/$", pml_text, re.M)
    return found.group(1) if found else claim


def nfair_flags(pml_text: str) -> list[str]:
    """pan's weak fairness (-f) handles fewer than 4 * NFAIR processes (the claim
    included; NFAIR defaults to 2): the gcc flag a twin with more needs."""
    procs = pml_text.count("\nactive proctype ") + 1
    nfair = max(2, (procs + 1) // 4 + 1)
    return [] if nfair == 2 else [f"-DNFAIR={nfair}"]


TWIN_HASH = "-w20"  # 8 MB: pan's default 128 MB table costs 0.1 s to set up, and the count is the same


def _pan_until_deep_enough(argv: list[str], cwd: Path, limit: int = PAN_DEFAULT_DEPTH) -> tuple[Proc, int]:
    while True:
        r = run_measured(argv + pan_depth_args(limit), cwd=cwd)
        if _TOO_SHALLOW not in r.stdout or limit >= PAN_MAX_DEPTH:
            return r, limit
        limit *= PAN_DEPTH_STEP


def twin_por_states(pml: Path, work: Path, twin: TwinCheck) -> int | None:
    """pan's state count with its default reductions (partial-order reduction, statement
    merging) on the same search as ours: safety only (-DNOCLAIM), past every violation
    (-c0); less the chooser's state, like the unreduced count. Untimed."""
    d = work / f"{pml.stem}-por"
    d.mkdir(parents=True, exist_ok=True)
    (d / pml.name).write_text(pml.read_text())
    for argv in (["spin", "-a", pml.name], ["gcc", "-O2", "-DNOCLAIM", "-o", "pan", "pan.c"]):
        if run_measured(argv, cwd=d).returncode != 0:
            return None
    r, _ = _pan_until_deep_enough(["./pan", TWIN_HASH, "-c0"], d, twin.depth_limit)
    stored = _STORED.search(r.stdout)
    return int(stored.group(1)) - twin.extra_states if stored and _TOO_SHALLOW not in r.stdout else None


def twin_check(pml: Path, work: Path, optimise: str = "-O2") -> TwinCheck:
    """Build and run pan with reductions off on a twin written by `check --promela`: one
    safety run that goes on past violations (-c0) for the state count and the violated
    assertions, and one `-a -f -A -N claim` run per liveness claim (-A: assertions are the
    safety run's business). Untimed: this is for agreement, not speed."""
    d = work / f"{pml.stem}-twin"
    d.mkdir(parents=True, exist_ok=True)
    text = pml.read_text()
    (d / pml.name).write_text(text)
    claims = claims_of(text)
    extra = 1 if _CHOOSER in text else 0

    def build(*flags: str) -> str | None:
        for argv in (["spin", "-o3", "-a", pml.name], ["gcc", optimise, "-DNOREDUCE", *flags, "-o", "pan", "pan.c"]):
            r = run_measured(argv, cwd=d)
            if r.returncode != 0:
                return f"{' '.join(argv)} failed: " + (r.stdout + r.stderr).strip()[-300:]
        return None

    failure = build("-DNOCLAIM")
    if failure:
        return TwinCheck(None, extra, set(), {}, PAN_DEFAULT_DEPTH, failure)
    safety, limit = _pan_until_deep_enough(["./pan", TWIN_HASH, "-c0"], d)
    stored = _STORED.search(safety.stdout)
    if _TOO_SHALLOW in safety.stdout or not stored:
        return TwinCheck(None, extra, set(), {}, limit, "pan did not finish: " + safety.stdout[-300:])
    violated = set(_VIOLATED.findall(safety.stdout))
    cycles = {}
    if claims:
        failure = build(*nfair_flags(text))
        if failure:
            return TwinCheck(int(stored.group(1)), extra, violated, {}, limit, failure)
        for claim in claims:
            r, _ = _pan_until_deep_enough(["./pan", TWIN_HASH, "-a", "-f", "-A", "-N", claim], d, limit)
            errors = _ERRORS.search(r.stdout)
            if errors is None or _TOO_SHALLOW in r.stdout:
                return TwinCheck(int(stored.group(1)), extra, violated, cycles, limit,
                                 f"pan -a -N {claim} did not finish: " + r.stdout[-300:])
            cycles[claim_property(text, claim)] = "acceptance cycle" in r.stdout
    return TwinCheck(int(stored.group(1)), extra, violated, cycles, limit)


def twin_disagreements(ours: dict, twin: TwinCheck) -> list[str]:
    """Where pan and our unreduced run (one variant of our JSON) differ; [] if they agree."""
    if twin.failure:
        return [twin.failure]
    out = []
    pan_error = sorted(n for n in twin.violated if n.startswith("model_error_"))
    if ours.get("model_error") is not None or pan_error:
        # our search stops at a model error (its count and verdicts are partial); pan -c0 goes on
        if ours.get("model_error") is None or not pan_error:
            out.append(f"model error: ours {'yes' if ours.get('model_error') else 'no'}, pan {pan_error or 'no'}")
        return out
    states = ours["stats"]["states"]
    if twin.states != states + twin.extra_states:
        out.append(f"states: ours {states:,}, pan {twin.states:,}"
                   + (f" (of which {twin.extra_states} before the initial choice)" if twin.extra_states else ""))
    pan = twin.verdicts()
    for o in ours["outcomes"]:
        if o["kind"] == "lemma":
            continue
        theirs = pan.get(o["property"], "violated" if o["kind"] == "reachable" else "holds")
        if o["verdict"] != theirs:
            out.append(f"{o['kind']} {o['property']}: ours {o['verdict']}, pan {theirs}")
    return out


class TwinBench:
    """SPIN's time to a verdict on one twin, default settings, end to end: `spin -a`,
    `gcc -O2` (with -DNFAIR where pan's fairness needs it), one safety run `./pan` and one
    `./pan -a -f -N claim` per liveness claim, each with a depth limit (-m) found by an
    untimed calibration run. Each `once()` is one timed run of all of it."""

    def __init__(self, pml: Path, work: Path):
        self.dir = work / f"{pml.stem}-timed"
        self.dir.mkdir(parents=True, exist_ok=True)
        text = pml.read_text()
        (self.dir / pml.name).write_text(text)
        self.build_argv = [["spin", "-a", pml.name], ["gcc", "-O2", *nfair_flags(text), "-o", "pan", "pan.c"]]
        self.runs = [["./pan"]] + [["./pan", "-a", "-f", "-N", c] for c in claims_of(text)]
        self.limits: list[int] = []
        self.samples: list[tuple[float, float]] = []  # wall, cpu
        self.failure: str | None = None
        if self.build() is None:
            return
        for argv in self.runs:  # calibration, untimed
            r, limit = _pan_until_deep_enough(argv, self.dir)
            if _TOO_SHALLOW in r.stdout:
                self.failure = f"{' '.join(argv)}: incomplete even with -m{limit}"
            depth = _DEPTH.search(r.stdout)
            if limit > PAN_DEFAULT_DEPTH and depth:
                limit = min(limit, _round_up(int(depth.group(1)) * 11 // 10))
            self.limits.append(limit)

    def build(self) -> tuple[float, float] | None:
        times, self.failure = build_pan(self.build_argv, self.dir)
        return times

    def once(self) -> None:
        if self.failure is not None:
            return
        built = self.build()
        if built is None:
            return
        wall, cpu = built
        for argv, limit in zip(self.runs, self.limits):
            r = run_measured(argv + pan_depth_args(limit), cwd=self.dir)
            wall, cpu = wall + r.seconds, cpu + r.cpu_seconds
        self.samples.append((wall, cpu))


@dataclass
class ShippedModel:
    """One models/*.spec: ours on every variant, and SPIN on the twins of those that translate."""

    model: str
    ours: OursResult  # `check FILE --brief`, every variant, timed
    untranslated: dict[str, str] = field(default_factory=dict)  # variant -> why (the refusal)
    ours_twinned: OursResult | None = None  # `check FILE --brief --variant ...`: the translated ones only
    unreduced: dict[str, int] = field(default_factory=dict)  # variant -> our states, --no-por --no-symmetry
    spin_states: dict[str, int | None] = field(default_factory=dict)  # pan, reductions off (minus a chooser's state)
    spin_por: dict[str, int | None] = field(default_factory=dict)  # pan, default reductions (minus the same)
    disagreements: dict[str, list[str]] = field(default_factory=dict)  # variant -> what pan sees differently
    spin_seconds: float | None = None  # median over repeats of the sum over translated variants
    spin_cpu_seconds: float | None = None
    pan_depths: dict[str, list[int]] = field(default_factory=dict)
    spin_failure: str | None = None


def shipped_model(spec: Path, args, check: list[str], spin_ok: bool, work: Path) -> ShippedModel:
    """Measure one shipped model; ours and SPIN take turns within each repeat."""
    twins = work / f"twins-{spec.stem}"
    twins.mkdir()
    r = run_measured(check + [str(spec), "--promela", str(twins)])
    plain_json = work / f"unreduced-{spec.stem}.json"
    run_measured(check + [str(spec), "--no-por", "--no-symmetry", "--brief", "--json", str(plain_json)])
    plain = json.loads(plain_json.read_text()) if plain_json.exists() else {"variants": [], "model": spec.stem}
    refusals = [line.split("error: ", 1)[1] for line in r.stderr.splitlines() if "error: variant" in line
                or ": error: " in line]
    ours = OursBench(check, spec, {}, work, base_only=False)
    rec = ShippedModel(spec.name, OursResult(False, None, None, None, None, None))
    twinned, spin_runs = [], []
    for v in plain["variants"]:
        rec.unreduced[v["name"]] = v["stats"]["states"]
        pml = twins / f"{plain['model']}.{v['name']}.pml"
        if not pml.exists():
            rec.untranslated[v["name"]] = "memory tso" if v["memory_model"] == "tso" else \
                "; ".join(sorted({x.split(": ")[0] for x in refusals}))[:60] or "refused"
            continue
        twinned.append(v["name"])
        if spin_ok:
            t = twin_check(pml, work)
            rec.spin_states[v["name"]] = None if t.states is None else t.states - t.extra_states
            rec.disagreements[v["name"]] = twin_disagreements(v, t)
            bench = TwinBench(pml, work)
            rec.spin_por[v["name"]] = twin_por_states(pml, work, t)
            rec.pan_depths[v["name"]] = bench.limits
            if bench.failure:
                rec.spin_failure = f"{v['name']}: {bench.failure}"
            spin_runs.append(bench)
    subset = None
    if twinned and rec.untranslated:
        extra = tuple(x for name in twinned for x in ("--variant", name))
        subset = OursBench(check, spec, {}, work, base_only=False, extra=extra)
    for _ in range(args.repeats):
        ours.once()
        if subset is not None:
            subset.once()
        for b in spin_runs:
            b.once()
    rec.ours = ours.result()
    rec.ours_twinned = subset.result() if subset is not None else (rec.ours if twinned else None)
    if spin_runs and all(len(b.samples) == args.repeats for b in spin_runs):
        rec.spin_seconds = median([sum(b.samples[k][0] for b in spin_runs) for k in range(args.repeats)])
        rec.spin_cpu_seconds = median([sum(b.samples[k][1] for b in spin_runs) for k in range(args.repeats)])
    return rec


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
    ours_noreduce: OursResult | None = None  # reductions off (--no-por --no-symmetry), for the state count


def bench_row(fam: Family, n: int, args, check: list[str], has_workers: bool, spin_ok: bool,
              work: Path) -> Row:
    """Measure one size. The tools take turns within each repeat, so that a change in the
    machine's load during the run falls on both rather than on one."""
    defines = {fam.param: n}
    single = ("--workers", "1") if has_workers else ()  # explicit, whatever the default becomes
    ours = OursBench(check, fam.spec, defines, work, base_only=True, extra=single)
    multi = None
    if has_workers:
        multi = OursBench(check, fam.spec, defines, work, base_only=True,
                          extra=("--workers", str(args.workers)))
    spin = noreduce = None
    if spin_ok:
        d = work / f"{fam.name}-{n}"
        d.mkdir()
        pml = d / fam.promela.name
        pml.write_text(promela_instance(fam.promela, fam.param, n))
        noreduce = SpinBench(pml, d, reduce=False)
        spin = SpinBench(pml, d, reduce=True)
    # our default run reduces too (partial-order, symmetry): like SPIN's, its state count is
    # compared from one untimed run with the reductions off
    plain = None
    if "--no-por" in check_help(tuple(check)):
        plain = OursBench(check, fam.spec, defines, work, base_only=True,
                          extra=single + ("--no-por", "--no-symmetry"))
        plain.once()
    for _ in range(args.repeats):
        for bench in (ours, multi, spin):
            if bench is not None:
                bench.once()
    o = ours.result()
    u = plain.result() if plain else o
    z = noreduce.result() if noreduce else None
    agree = None
    if u.states is not None and z is not None and z.states is not None:
        agree = u.states == z.states
    return Row(fam.name, n, o, multi.result() if multi else None, spin.result() if spin else None, z, agree,
               plain.result() if plain else None)


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
    headers = ["model", "N", "states", "SPIN states", "agree", "reduced", "SPIN POR", "time", "SPIN time",
               "ratio", "cpu ratio", "pan time", "states/s", "SPIN st/s", "MB", "SPIN MB", f"time {workers}w"]
    out = []
    for r in rows:
        o, s, z = r.ours, r.spin, r.spin_noreduce
        u = r.ours_noreduce or o  # a `check` without reductions counts all states in its timed run
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
        out.append([r.family, str(r.n), _n(u.states) if u.ok else "FAILED", spin_states, agree,
                    _n(o.states) if o.ok and r.ours_noreduce else "-",
                    _n(s.states) if s else "-", _s(o.seconds), _s(s.seconds) if s else "-", ratio,
                    cpu_ratio, _s(s.pan_seconds) if s else "-",
                    _rate(o.states, o.search_seconds), _rate(s.states, s.search_seconds) if s else "-",
                    _mb(o.maxrss_kb), _mb(s.maxrss_kb) if s else "-", multi])
    return table(headers, out)


def shipped_table(models: list[ShippedModel], spin_note: str) -> str:
    headers = ["model", "variant", "states", "SPIN states", "agree", "reduced", "SPIN POR", "time", "SPIN time",
               "ratio", "cpu ratio", "MB", "properties (as expected)"]
    out = []
    for sm in models:
        r = sm.ours
        if not r.ok:
            out.append([sm.model, "-", "FAILED", "-", "-", "-", "-", _s(r.seconds), "-", "-", "-", _mb(r.maxrss_kb),
                        r.note[:60]])
            continue
        timed = sm.ours_twinned
        ratio = cpu_ratio = "-"
        if timed and timed.seconds and sm.spin_seconds:
            ratio = f"{timed.seconds / sm.spin_seconds:.2f}"
        if timed and timed.cpu_seconds and sm.spin_cpu_seconds:
            cpu_ratio = f"{timed.cpu_seconds / sm.spin_cpu_seconds:.2f}"
        for k, v in enumerate(r.variants):
            name = v["name"]
            broken = [p for p, x in v["verdicts"].items() if x != "holds"]
            verdicts = f"{len(v['verdicts'])} hold" if not broken else "violated: " + ", ".join(broken)
            if name in sm.untranslated:
                spin, agree = "-", "not translated: " + sm.untranslated[name]
            elif not sm.spin_states:
                spin, agree = spin_note or "-", "-"
            else:
                spin = _n(sm.spin_states.get(name))
                agree = "yes" if not sm.disagreements.get(name) else "NO"
            first = k == 0
            out.append([sm.model if first else "", name, _n(sm.unreduced.get(name)), spin, agree,
                        _n(v["states"]), _n(sm.spin_por.get(name)) if sm.spin_por else "-",
                        _s(timed.seconds) if first and timed else "", _s(sm.spin_seconds) if first else "",
                        ratio if first else "", cpu_ratio if first else "", _mb(r.maxrss_kb) if first else "",
                        verdicts])
    return table(headers, out, left=frozenset({0, 1, 4, 12}))


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
    has_workers = "--workers" in check_help(tuple(check))
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
    shipped: list[ShippedModel] = []
    with tempfile.TemporaryDirectory(prefix="timerace-bench-") as tmp:
        work = Path(tmp)
        for fam, sizes in args.plan:
            for n in sizes:
                print(f"  {fam.name} N={n} ...", file=sys.stderr, flush=True)
                rows.append(bench_row(fam, n, args, check, has_workers, spin_ok, work))
        if not args.no_shipped:
            for spec in sorted((ROOT / "models").glob("*.spec")):
                print(f"  models/{spec.name} ...", file=sys.stderr, flush=True)
                shipped.append(shipped_model(spec, args, check, spin_ok, work))
    print(f"Bench models (base variant; time = median wall time to verdict, end to end; "
          f"load average now {os.getloadavg()[0]:.2f})")
    print(bench_table(rows, has_workers, spin_note, args.workers))
    problems = []
    for r in rows:
        if not r.ours.ok:
            problems.append(f"{r.family} N={r.n}: ours failed: {r.ours.note}")
        if r.ours_noreduce is not None and not r.ours_noreduce.ok:
            problems.append(f"{r.family} N={r.n}: ours without reductions failed: {r.ours_noreduce.note}")
        for label, s in (("SPIN", r.spin), ("SPIN -DNOREDUCE", r.spin_noreduce)):
            if s is not None and not s.ok:
                problems.append(f"{r.family} N={r.n}: {label}: {s.note or 'no verdict'}")
        if r.counts_agree is False:
            problems.append(f"{r.family} N={r.n}: state counts differ: ours {_n((r.ours_noreduce or r.ours).states)}, "
                            f"SPIN without reductions {_n(r.spin_noreduce.states)}")
    depths = [f"{r.family} N={r.n} -m{r.spin.pan_depth_limit}" for r in rows
              if r.spin and r.spin.pan_depth_limit != PAN_DEFAULT_DEPTH]
    print()
    print("states: ours with reductions off (--no-por --no-symmetry, one untimed run); SPIN states: pan's "
          "'states, stored' with reductions off (spin -o3 -a, gcc -DNOREDUCE); agree: the two are equal.")
    print("reduced: ours with its default reductions (partial-order, symmetry; the timed runs); "
          "SPIN POR: pan's with its default reductions (partial-order, statement merging).")
    print("time: ours `check` wall time; SPIN time: spin -a + gcc -O2 + ./pan wall time, default "
          "settings; ratio = ours / SPIN (target <= 1.0).")
    print("pan time: pan alone, with the default hash table (-w24) and a DFS stack (-m) just deeper than the search.")
    print("states/s: over the search alone, by each tool's own clock (ours: the JSON's seconds; pan: "
          "its 'elapsed time'). "
          "MB: peak resident memory of `check` / of pan.")
    if depths:
        print("pan's default -m10000 is too shallow for: " + ", ".join(depths) +
              " (found by untimed calibration runs)")
    if shipped or not args.no_shipped:
        print()
        print("Shipped models (models/*.spec, every variant; SPIN on the Promela twins from `check --promela`)")
        if shipped:
            print(shipped_table(shipped, spin_note))
        else:
            print("(no models/*.spec in this checkout)")
        print()
        print("states: ours with reductions off (--no-por --no-symmetry); SPIN states: pan's 'states, stored' on the "
              "twin with reductions off (spin -o3 -a, gcc -DNOREDUCE -DNOCLAIM, pan -c0), less the one state before a "
              "chooser picks `any` initial values; agree: that count and every verdict (invariants, deadlock, "
              "liveness by pan -a -f -A -N claim) are the same.")
        print("reduced: ours with the default reductions (partial-order reduction and local-step merging; the "
              "timed runs); SPIN POR: pan's 'states, stored' with its default reductions (partial-order reduction, "
              "statement merging) on the same search as ours (spin -a, gcc -DNOCLAIM, pan -c0: safety, past every "
              "violation), less the chooser's state; untimed. The timed SPIN safety run stops at the first "
              "violation, as pan does by default. With liveness properties our reduction keeps to "
              "ample sets of one process (weak fairness), while pan's safety run reduces freely.")
        print("time: `check FILE --brief`, default settings, end to end, over the variants that translate (all of "
              "them unless some are not translated, then `--variant` for each that is); SPIN time: per translated "
              "variant spin -a + gcc -O2 + ./pan (safety) + ./pan -a -f -N claim per liveness claim, summed over "
              "the variants; ratio = ours / SPIN (target <= 1.0). MB: peak memory of `check` on the whole model.")
        print("SPIN's weak fairness (-f) is per process, as ours; a process declared `unfair` has no SPIN "
              "equivalent (none in models/ today). Lemmas are checked by Z3 alone: not part of the comparison.")
        deep = [f"{sm.model} {v} -m{max(ls)}" for sm in shipped for v, ls in sm.pan_depths.items()
                if ls and max(ls) != PAN_DEFAULT_DEPTH]
        if deep:
            print("pan's default -m10000 is too shallow for: " + ", ".join(deep))
        for sm in shipped:
            if not sm.ours.ok:
                problems.append(f"models/{sm.model}: {sm.ours.note}")
            if sm.ours_twinned is not None and not sm.ours_twinned.ok:
                problems.append(f"models/{sm.model} (translated variants): {sm.ours_twinned.note}")
            if sm.spin_failure:
                problems.append(f"models/{sm.model}: SPIN: {sm.spin_failure}")
            for v, d in sm.disagreements.items():
                if d:
                    problems.append(f"models/{sm.model} {v}: pan disagrees: " + "; ".join(d))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "cores": os.cpu_count(), "load": load, "repeats": args.repeats, "check": check,
            "workers_supported": has_workers,
            "bench": [asdict(r) for r in rows],
            "shipped": [asdict(sm) for sm in shipped],
        }, indent=2) + "\n")
    if problems:
        print()
        for msg in problems:
            print("PROBLEM: " + msg)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
