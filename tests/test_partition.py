"""The parallel search's partition (engines/explicit/parallel.choose_partition): which worker owns
a state. Whatever slots it hashes, every state has exactly one owner, the workers
together store exactly the states one worker stores, and traces stay shortest.

No timing here: whether the partition pays is measured in bench/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engines.explicit import Limits
from checker.engines.explicit import parallel
from checker.engines.explicit.fastloop import OWNER_MOD
from checker.engines.explicit.search import Search, run_levels
from checker.pipeline import Options, check_spec, compile_variant, load
from shared_runs import checked
from search_fixtures import PHILOSOPHERS, SMALL_SPECS, cross_variants, only, summary

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def philosophers(tmp_path_factory):
    path = tmp_path_factory.mktemp("phil") / "philosophers.spec"
    path.write_text(PHILOSOPHERS)
    return path


def prefix(path: Path, variant: str = "base", defines=None, states: int = 20_000):
    """A search run in one process up to where the workers would start, and its level."""
    cm = compile_variant(load(str(path)), variant, Options(defines=defines or {}))
    search = Search(cm, Limits())
    level, _, _ = run_levels(search, search.add_initial(), 0, 0, None,
                             until=lambda lv, d: search.count >= states and len(lv) >= 500)
    assert level, "the model ended before the workers would start"
    return cm, search, level


def everything(cm) -> set[int]:
    search = Search(cm, Limits())
    run_levels(search, search.add_initial(), 0, 0, None)
    return search.seen


@pytest.mark.parametrize("workers", [2, 3])
def test_every_state_has_exactly_one_owner(philosophers, workers):
    cm, search, level = prefix(philosophers)
    part = parallel.choose_partition(search, level, workers)
    assert part.slots, "the philosophers' forks seldom change: a locality partition is expected"
    assert part.omask != -1 and len(part.owners) == OWNER_MOD
    shares = [0] * workers
    for s in everything(cm):
        o = part.owners[(s & part.omask) % OWNER_MOD]  # the hot loop's expression
        assert o == part.owner(s) and 0 <= o < workers
        shares[o] += 1
    # the slots are chosen for an even split: no worker is left (nearly) idle
    assert min(shares) * workers > 0.6 * sum(shares)


def test_the_owner_depends_only_on_the_chosen_slots(philosophers):
    cm, search, level = prefix(philosophers)
    part = parallel.choose_partition(search, level, 2)
    pk = cm.packing
    chosen = 0
    for k in part.slots:
        chosen |= pk.mask(k) << pk.shift[k]
    assert chosen == part.omask
    # flipping a bit outside the chosen slots never moves a state to another worker
    for s in level[:200]:
        for k in range(len(pk.width)):
            if k not in part.slots and pk.width[k]:
                assert part.owner(s ^ 1 << pk.shift[k]) == part.owner(s)


def test_most_transitions_stay_with_their_worker(philosophers):
    """What the partition is for: measured on the whole state space, far more than the
    1 / workers of a hash of the whole state stay local."""
    cm, search, level = prefix(philosophers)
    part = parallel.choose_partition(search, level, 2)
    full = Search(cm, Limits())
    lv = full.add_initial()
    stay = moves = 0
    depth = 0
    while lv:
        for s in lv:
            for t in parallel._successors(full, s):
                moves += 1
                stay += part.owner(s) == part.owner(t)
        lv = full.level(lv, range(full.count - len(lv), full.count), depth)
        depth += 1
    assert stay > 0.75 * moves
    assert part.staying > 0.75


COUNTER = """
model counter;
var x: 0..59999 = 0;
process p { loop { x = (x + 1) % 60000; } }
"""


def test_no_good_slots_means_the_whole_state(tmp_path):
    """Every transition changes x: no slot set keeps successors local, so the owner is a
    hash of the whole state, as before locality partitions."""
    path = tmp_path / "counter.spec"
    path.write_text(COUNTER)
    cm = compile_variant(load(str(path)), "base", Options())
    search = Search(cm, Limits())
    level, _, _ = run_levels(search, search.add_initial(), 0, 0, None, until=lambda lv, d: d >= 30)
    part = parallel.choose_partition(search, level, 2)
    assert part.omask == -1 and part.slots == ()
    assert "whole state" in part.describe(cm)


@pytest.mark.parametrize("workers", [2, 3])
def test_locality_partition_finds_what_one_worker_finds(philosophers, workers, workers_from_20k):
    """Same states, transitions, depth, verdicts and counterexample lengths as one worker
    (the `strict` variant's violation included), with the locality partition in use."""
    spec = load(str(philosophers))
    one = checked(philosophers, por=False, symmetry="off", workers=1)  # the patches are of the parallel search
    many = check_spec(spec, Options(por=False, symmetry="off", workers=workers, workers_asked=True))
    assert summary(many) == summary(one)
    for v in many.variants:
        assert v.stats.workers == workers
        assert "states owned by" in v.stats.workers_note and "whole state" not in v.stats.workers_note


def test_whole_state_partition_with_large_batches_still_agrees(philosophers, monkeypatch, workers_from_20k):
    """With the owner a hash of the whole state about half of all successors cross to
    the other worker, in batches far bigger than a pipe's buffer: sending them must not
    block a worker that is not yet reading its own inbox."""
    whole = parallel.Partition(-1, parallel.owner_table(2), (), 0.5, 1.0)
    monkeypatch.setattr(parallel, "choose_partition", lambda search, level, workers: whole)
    spec = load(str(philosophers))
    one = checked(philosophers, por=False, symmetry="off", workers=1, variants=("base",))
    two = check_spec(spec, Options(por=False, symmetry="off", workers=2, variants=("base",)))
    assert summary(two) == summary(one)
    assert two.variants[0].stats.workers == 2


WIDE = PHILOSOPHERS.replace("var fork[N]: 0..N = 0;", "var fork[N]: 0..N = 0;\nvar stamp: u64 = 0;")


def test_states_wider_than_64_bits_travel_too(tmp_path, workers_from_20k):
    """A u64 variable makes states wider than an array('Q') item: batches carry ints."""
    path = tmp_path / "wide.spec"
    path.write_text(WIDE)
    spec = load(str(path))
    assert compile_variant(spec, "base", Options()).packing.bits > 64
    one = check_spec(spec, Options(por=False, symmetry="off", workers=1))
    two = check_spec(spec, Options(por=False, symmetry="off", workers=2))
    assert summary(two) == summary(one)
    assert all(v.stats.workers == 2 for v in two.variants)


def test_no_workers_once_the_levels_narrow(philosophers, monkeypatch):
    """Past PARALLEL_FROM states the workers start only while the levels still widen: a
    search already narrowing is mostly done, and starting workers would cost more."""
    monkeypatch.setattr(parallel, "PARALLEL_FROM", 45_000)  # of 52,224, in the narrowing levels
    result = check_spec(load(str(philosophers)),
                        Options(por=False, symmetry="off", workers=2, workers_asked=True, variants=("base",)))
    stats = result.variants[0].stats
    assert stats.workers == 1 and stats.states == 52_224
    assert stats.workers_note == "past 45,000 states the levels only narrowed, where one process is faster"


# ---- taking states: a worker that ran out of its own expands ranges of a busier one's


@pytest.fixture
def leave_half(monkeypatch):
    """Every worker leaves the second half of each level to the others, and claims
    ranges of a single state: states are taken every level, whatever the timing."""
    monkeypatch.setattr(parallel, "LEAVE_HALF", True)
    monkeypatch.setattr(parallel, "CLAIM_MIN", 1)


@pytest.fixture
def worker_0_owns_everything(monkeypatch, workers_from_20k, leave_half):
    """The most uneven partition there is: worker 0 owns every state, so every level the
    other workers expand only what they take from worker 0, and route every successor
    back."""
    lopsided = parallel.Partition(-1, (0,) * OWNER_MOD, (), 1.0, 2.0)
    monkeypatch.setattr(parallel, "choose_partition", lambda search, level, workers: lopsided)


def taken_share(stats) -> float:
    return float(stats.workers_note.split("; ")[-1].split("%")[0])


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("reductions", [False, True])
def test_taken_states_find_what_one_worker_finds(philosophers, worker_0_owns_everything, workers, reductions):
    """States expanded by a worker that does not own them: same states, transitions,
    depth, verdicts and counterexample lengths (the `strict` variant's violation
    included), with and without partial-order and symmetry reduction."""
    spec = load(str(philosophers))
    symmetry = "auto" if reductions else "off"
    one = checked(philosophers, por=reductions, symmetry=symmetry, workers=1)
    many = check_spec(spec, Options(por=reductions, symmetry=symmetry, workers=workers, workers_asked=True))
    assert summary(many) == summary(one)
    for v in many.variants:
        assert v.stats.workers == workers, v.stats.workers_note
        assert taken_share(v.stats) >= 30, v.stats.workers_note


def test_taken_states_with_fingerprints_and_wide_states(tmp_path, worker_0_owns_everything):
    """States wider than 64 bits (several words each in shared memory) taken from a
    worker whose visited set holds fingerprints."""
    path = tmp_path / "wide.spec"
    path.write_text(WIDE)
    spec = load(str(path))
    one = check_spec(spec, Options(por=False, symmetry="off", workers=1))
    two = check_spec(spec, Options(por=False, symmetry="off", workers=2, hash_compact=True))
    assert summary(two, fingerprint=False) == summary(one, fingerprint=False)  # --hash-compact digests fingerprints
    assert all(v.stats.workers == 2 and taken_share(v.stats) >= 30 for v in two.variants)


@pytest.mark.parametrize("path", SMALL_SPECS, ids=[p.stem for p in SMALL_SPECS])
def test_every_model_agrees_when_worker_0_owns_everything(path, one_worker, eager_workers, leave_half,
                                                          monkeypatch):
    """Every shipped model and litmus test (asserts, deadlocks, `final`, model errors,
    tso store buffers) with workers from the first level and every state owned by
    worker 0: all the other worker expands it takes from worker 0."""
    lopsided = parallel.Partition(-1, (0,) * OWNER_MOD, (), 1.0, 2.0)
    monkeypatch.setattr(parallel, "choose_partition", lambda search, level, workers: lopsided)
    variants = cross_variants(path)
    result = check_spec(load(str(path)), Options(por=False, symmetry="off", workers=2, variants=variants))
    assert summary(result) == only(one_worker[path], variants)


def test_a_peer_publishing_its_level_is_not_mistaken_for_one_with_nothing_left():
    """A peer publishes its level field by field under `claims`: depth first, then front
    and back. A worker looking for states to take must not read the shelf in between,
    where the new depth stands beside the last level's front and back (equal: nothing
    left), and end its level; with LEAVE_HALF the peer then waited for it forever (seen
    in CI)."""
    import multiprocessing as mp
    import threading

    shelf = mp.Array("q", 2 * parallel.SHELF, lock=False)
    claims = mp.Lock()
    taker = object.__new__(parallel._Worker)
    taker.shelf, taker.claims, taker.n, taker.w = shelf, claims, 2, 1
    shelf[parallel.SHELF:2 * parallel.SHELF] = [3, 0, 0, 0, 0, 1]  # the taker's own level 3: empty
    shelf[0:parallel.SHELF] = [2, 40, 40, 0, 0, 1]  # the peer's level 2, all expanded
    got = []
    with claims:  # the peer, publishing level 3 (40 states), has written its depth only
        shelf[0] = 3
        thread = threading.Thread(target=lambda: got.append(taker.claim_elsewhere(3)))
        thread.start()
        thread.join(timeout=0.2)  # long enough for a taker that does not wait to give up
        shelf[1:parallel.SHELF] = [0, 40, 0, 0, 1]
    thread.join(timeout=10)
    assert got and got[0] is not None and got[0][0] == 0 and got[0][2] == 40, got


def test_a_level_published_after_a_model_error_leaves_nothing_to_wait_for(monkeypatch):
    """A worker that meets a model error abandons the level; a peer that publishes the
    level only afterwards must find nothing to expand or to wait for (with LEAVE_HALF it
    waited forever for its second half to be taken by workers that had stopped)."""
    import mmap
    import multiprocessing as mp
    from types import SimpleNamespace

    monkeypatch.setattr(parallel, "LEAVE_HALF", True)
    shelf = mp.Array("q", 2 * parallel.SHELF + 1, lock=False)
    shelf[:] = [-1] * (2 * parallel.SHELF + 1)
    team = SimpleNamespace(shared=[(mmap.mmap(-1, mmap.PAGESIZE), mmap.mmap(-1, mmap.PAGESIZE))] * 2)
    workers, claims = [], mp.Lock()
    for w in range(2):
        worker = object.__new__(parallel._Worker)
        worker.team, worker.shelf, worker.claims, worker.n, worker.w = team, shelf, claims, 2, w
        worker.width, worker.level, worker.ids = 8, [5, 6, 7, 8], range(10, 14)
        workers.append(worker)
    stopped, late = workers
    stopped.abandon(3)
    late.publish(3)
    assert late.claim(1, 3, own=True) is None
    assert not late.left(1)
    assert stopped.claim_elsewhere(3) is None


def shown(result) -> dict:
    """Everything a run shows of its variants: counts, verdicts, and every trace whole."""
    return {v.variant: (v.stats.states, v.stats.transitions, v.stats.depth,
                        [(o.property, o.verdict, o.counterexample and o.counterexample.trace) for o in v.outcomes],
                        v.model_error and v.model_error.trace)
            for v in result.variants}


@pytest.mark.parametrize("path", SMALL_SPECS, ids=[p.stem for p in SMALL_SPECS])
def test_taking_states_changes_nothing_a_run_shows(path, eager_workers, monkeypatch):
    """Which worker expands a state depends on timing; what a run shows must not. With
    the partition the search chooses, a run where no state can be taken and a run where
    half of every level is taken show the same counts, verdicts and traces, state for
    state (with several violations of a property at one level, the same one)."""
    spec, options = load(str(path)), Options(por=False, symmetry="off", workers=2, variants=cross_variants(path))
    monkeypatch.setattr(parallel, "SHARED_BYTES", 0)  # no level fits: nothing can be taken
    alone = check_spec(spec, options)
    monkeypatch.setattr(parallel, "SHARED_BYTES", 1 << 20)
    monkeypatch.setattr(parallel, "LEAVE_HALF", True)
    monkeypatch.setattr(parallel, "CLAIM_MIN", 1)
    taken = check_spec(spec, options)
    assert shown(taken) == shown(alone)
    for v in taken.variants:
        if v.stats.workers == 2 and "no level" not in v.stats.workers_note:
            assert taken_share(v.stats) > 0, v.stats.workers_note
