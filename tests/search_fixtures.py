"""Searches and helpers that several test files share, as a pytest plugin (conftest's
`pytest_plugins`), so that no test module imports fixtures from another: every shipped
model searched once by one worker, worker thresholds lowered for small models, and the
philosophers model big enough for the workers to start."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engines.explicit import parallel
from checker.results.trace import Verdict
from shared_runs import checked

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted(ROOT.glob("models/*.spec")) + sorted(ROOT.glob("tests/litmus/*.spec"))
#: the shipped models of up to a few thousand states, and the litmus models: what the
#: configuration cross-products (workers, hash-compact) run on. Their soundness argument
#: is per step and per state, not per model; every model's counts stay pinned
#: (test_scale.PINNED), where a changed count is the reviewable event.
SMALL = ("hv_timer_preempt", "timer_migration", "vcpu_requests", "csd_wait_ipi", "ipi_fastpath_reenter")
#: of the litmus models, those whose states differ in shape, each under sc, tso and lkmm:
#: two writers (sb), a writer and a reader (mp), two writes to one location (n6), four
#: processes (iriw). The others are these shapes with a barrier or a read-modify-write
#: in between, which changes the steps but not what a worker sends another: a packed state
LITMUS_SHAPES = ("sb", "mp", "n6", "iriw")
SMALL_SPECS = [p for p in SPECS if p.stem in (SMALL if p.parent.name == "models" else LITMUS_SHAPES)]
#: the variants the cross-products run of a small model with many variants, one search
#: each (with workers, a team of processes each): vcpu_requests is the only small model
#: with guest mode (`guest_enter`) and `raise_irq`, and these cover it under each memory
#: model, with a verdict of each kind between them (tso: base holds; sc: no_kick_sc
#: violated; lkmm: no_before_atomic_lkmm violated). The other variants differ in
#: constants, which the parallel search never reads; all keep pinned counts.
CROSS_VARIANTS = {"vcpu_requests": ("base", "no_kick_sc", "no_before_atomic_lkmm")}


def cross_variants(path: Path) -> tuple[str, ...]:
    """The variants a cross-product test runs of `path` (all of them: ())."""
    return CROSS_VARIANTS.get(path.stem, ()) if path.parent.name == "models" else ()


def only(summaries: dict, variants: tuple[str, ...]) -> dict:
    """Those variants' entries of a summary (every entry for ())."""
    return {v: s for v, s in summaries.items() if not variants or v in variants}


def summary(result, fingerprint: bool = True):
    """What a search found, per variant; its coverage too (the digest of the stored states
    only where `fingerprint`: --hash-compact digests fingerprints, not states)."""
    out = {}
    for v in result.variants:
        cov = v.coverage
        coverage = cov and (cov.statements, cov.never_true, cov.silent_processes, fingerprint and cov.fingerprint)
        out[v.variant] = (v.stats.states, v.stats.transitions, v.stats.depth,
                          ",".join(sorted(f"{o.property}={o.verdict.value}" for o in v.outcomes
                                          if o.verdict is not Verdict.HOLDS)),
                          {o.property: (len(o.counterexample.trace.states), o.counterexample.trace.loop_start)
                           for o in v.outcomes if o.counterexample is not None},
                          v.model_error is not None and len(v.model_error.trace.states), coverage)
    return out


class _OneWorker(dict):
    """Spec path -> the summary of its one-worker unreduced search, made on first use, so
    that a test about one model searches only that model (in its xdist group's worker)."""

    def __missing__(self, path):
        self[path] = summary(checked(path, por=False, symmetry="off", workers=1))
        return self[path]


@pytest.fixture(scope="session")
def one_worker():
    return _OneWorker()


@pytest.fixture
def eager_workers(monkeypatch):
    """Workers even for the small shipped models, so that the parallel search itself
    is what the comparison tests."""
    monkeypatch.setattr(parallel, "PARALLEL_FROM", 0)
    monkeypatch.setattr(parallel, "LEVEL_FROM", 1)


PHILOSOPHERS = """
model philosophers;
const N = 7;
const STRICT = false;
var fork[N]: 0..N = 0;
fn first(i) = i == N - 1 ? 0 : i;
fn second(i) = i == N - 1 ? i : i + 1;
process phil[N] {
  loop {
    think: skip;
    atomic { await fork[first(self)] == 0; fork[first(self)] = self + 1; }
    atomic { await fork[second(self)] == 0; fork[second(self)] = self + 1; }
    eat: assert holds_forks: fork[first(self)] == self + 1 && fork[second(self)] == self + 1;
    fork[second(self)] = 0;
    fork[first(self)] = 0;
  }
}
invariant neighbours_apart: forall i in 0..N-1: (!(phil[i]@eat && phil[(i + 1) % N]@eat));
invariant not_two_apart: STRICT -> forall i in 0..N-1: (!(phil[i]@eat && phil[(i + 3) % N]@eat));
variant strict { STRICT = true; } expect violated not_two_apart;
"""


@pytest.fixture(scope="module")
def philosophers(tmp_path_factory):
    path = tmp_path_factory.mktemp("phil") / "philosophers.spec"
    path.write_text(PHILOSOPHERS)
    return path


@pytest.fixture
def workers_from_20k(monkeypatch):
    """Workers for the 52,224-state philosophers, below the real PARALLEL_FROM, started
    where a big search would start them (a level of a few thousand states)."""
    monkeypatch.setattr(parallel, "PARALLEL_FROM", 20_000)


