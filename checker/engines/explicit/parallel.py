"""The explicit search on several cores: states partitioned across worker
processes, level by level, so that counterexamples stay shortest.

How a run goes:

* The search starts in this process, exactly as with one worker (search.py).
  Most models are small: when the search finishes before `PARALLEL_FROM` states, no
  worker is started, and the statistics say so.
* Otherwise, at the next level boundary, `workers` processes are forked (under
  reductions, which make a state dearer, after `PARALLEL_FROM // REDUCED_COST`
  states). Each inherits what was found so far and owns the states s with
  owner(s) == its number, where owner(s) = owners[(s & omask) % OWNER_MOD]
  (`Partition`, chosen by `choose_partition` on a sample of that level): omask selects
  a few slots that seldom change, so that most successors belong to the worker that
  found them, or the whole state when no such slots split the states evenly. Each level, a worker expands the states it owns,
  keeps the successors it owns and sends the others to their owners in
  one batch per peer; then it takes in the batches it received (new states join its
  next level) and reports to this process, which starts the next level when every
  worker has reported. A state is stored by exactly one worker, so the counts add up
  to the one-worker counts.
* A level is seldom owned evenly (the slots' values drift from the split they were
  chosen for: 5-20% more states on one worker, measured on the bench models), and even
  an even share can take one worker longer (its states have more successors, its
  visited set is resizing, its core is slower for a while). So a worker that has
  expanded all it owns takes ranges of states from the end of a busier worker's level
  (work stealing, `_Worker.steal`): each worker publishes its level in shared memory,
  and claims ranges from the front of its own while the others claim from the back.
  Which worker expands a state then depends on timing, so nothing a run shows may
  depend on it:
  - a taker stores nothing: it routes every successor back (`Route.me` is -1), tagged
    with the range's owner and start, and each owner takes in what the ranges of its
    level produced right after the states it expanded itself, then each peer's batch
    followed by what the ranges of that peer's level produced. States are stored in
    exactly the order they would be if nobody had taken anything, so ids, parent
    links, the next level and the counts are the same in every run;
  - within a level, a worker keeps checking a property it has found violated and
    keeps the violation of least rank (owner, id): the violation shown is the same
    whoever expanded it (`Search.rank`, `Search.settled`).
* Parent links are global ids: the ids given before the start stay; worker w numbers
  its k-th state P + k * W + w (P states before the start, W workers). A trace is
  rebuilt by asking the owners for parent links back to an initial state, then
  running the steps again from there (search.Search.replay).
* The violation of a property found at the lowest level is kept, the one of least
  rank among the workers: as with one worker, its trace is a shortest one (another
  of the same length may be shown).
  A model error stops the search; to report exactly what one worker reports (which
  properties were violated before it), the search is then run again in one process.
* Stopping: Ctrl-C or SIGTERM (the CLI makes SIGTERM a Ctrl-C) asks the coordinator to
  stop after the level under way (`_StopRequest`; the workers ignore both signals), and a
  worker out of memory finishes the level's exchange empty-handed and reports the limit
  (`_Worker.out_of_memory`): either way the workers stay to answer for the parent links
  of the partial result's traces. A worker dies with the coordinator whatever kills it
  (`_die_with`: SIGKILL when its parent dies, on Linux).
* `--max-states` stops at an exact state, which only a single worker does: with that
  limit the search stays in one process. The liveness engine and `--dot-graph` need the
  whole graph in one process (`explore` runs them single-worker).

Needs the `fork` start method (Linux); elsewhere the search runs in one process.
"""

from __future__ import annotations

import errno
import functools
import mmap
import os
import queue as queue_mod
import signal
import time
import traceback
from array import array
from typing import Protocol
from collections import Counter
from collections.abc import Sequence

from ...backends.python import CompiledModel
from ...base.progress import Progress
from .fastloop import OWNER_MOD
from .search import (NO_PARENT, OUT_OF_MEMORY, WORD, Exploration, Limits, Reduction, Route, Search, StopSearch,
                     explore_one, rss_bytes, run_levels, states_sums)
from ...base.record import record

#: below this many states one process is faster: starting workers (choosing the
#: partition, forking, each writing its level loop) costs a fixed start-up. Since taking
#: states from a busier worker evens out the levels, an early partition costs little
#: (bench/README.md has the measurements); a search whose levels narrow by then starts none
PARALLEL_FROM = 50_000
#: a state costs this many times more under reductions (an ample set, a canonical form
#: per successor: kvm_vcpus N=3 took 2.4 us a state without them, 9 us with both), so
#: the workers start after this many times fewer states: the one-process prefix is
#: then as long in seconds as without reductions
REDUCED_COST = 4
#: and the level where the workers start must have something to share
LEVEL_FROM = 500


class Handover(Protocol):
    """What explore_parallel asks of --loop auto's switch (explicit.Switch)."""

    @property
    def library(self) -> object: ...

    def attach(self, search: Search) -> None: ...

    def __call__(self, level: list[int], depth: int) -> bool: ...

    def may_take_over(self) -> bool: ...

    def take_over(self, level: list[int], first_id: int, depth: int, progress: Progress | None, start: float,
                  rss: int | None) -> Exploration: ...


def explore_parallel(cm: CompiledModel, limits: Limits, progress: Progress | None, hash_compact: bool,
                     reduction: Reduction | None, workers: int, coverage: bool = False,
                     switch: Handover | None = None) -> Exploration:
    """`switch` (--loop auto, explicit.Switch): asked at each level boundary before the
    workers are; where it says so, the native loop takes over (`switch.take_over`), and
    no worker starts while it still may: the C loop in one process searches several
    times faster than the Python loop on every core (bench/README.md, "time 2w"), so
    the workers are for the searches it cannot take (tso, lkmm, ..., or a failed build)."""
    start = time.monotonic()
    rss = rss_bytes()
    search = Search(cm, limits, False, hash_compact, reduction, coverage=coverage)
    if switch is not None:
        switch.attach(search)
    note = ""
    if limits.max_states is not None:
        note = "--max-states stops at an exact state, which one process does"
    if not hasattr(os, "fork"):
        note = "no fork start method on this platform"

    reduced = reduction is not None and (reduction.selects or reduction.canonicalises)
    start_from = PARALLEL_FROM // REDUCED_COST if reduced else PARALLEL_FROM
    widest = [0]  # the widest level so far

    def big_enough(level: list[int], depth: int) -> bool:
        """Start the workers on a level past `start_from` states while the levels still
        widen: a search whose levels already narrow is mostly done."""
        growing = len(level) >= widest[0]
        widest[0] = max(widest[0], len(level))
        return not note and search.count >= start_from and len(level) >= LEVEL_FROM and growing

    def until(level: list[int], depth: int) -> bool:
        if switch is not None:
            if switch(level, depth):
                return True
            if switch.may_take_over():  # one process in C outruns the Python workers: they wait for its verdict
                return False
        return big_enough(level, depth)

    level, first_id, depth = run_levels(search, search.add_initial(), 0, 0, progress, until=until)
    if level and switch is not None and switch.library is not None:
        return switch.take_over(level, first_id, depth, progress, start, rss)
    if not level:  # finished (or stopped) before it was worth starting workers
        if progress is not None:
            progress.done()
        if not note:
            note = (f"the search ended below {start_from:,} states, where one process is faster"
                    if search.count < start_from else
                    f"past {start_from:,} states the levels only narrowed, where one process is faster")
        grown = rss_bytes()
        memory = grown - rss if rss is not None and grown is not None else None
        return search.exploration(time.monotonic() - start, memory, 1, note)
    with _StopRequest() as stop:
        import multiprocessing as mp  # (here: importing it costs as much as a small model's search)

        try:
            team = _Team(mp.get_context("fork"), search, workers, level, first_id, depth, stop, ticking=progress is not None)
        except MemoryError:  # no room for the shared memory the workers take states through
            team = None
        if team is not None:
            try:
                outcome = team.run(progress)
            except BaseException:  # a worker crashed or died: stop the others
                team.close()
                raise
            finally:
                if progress is not None:
                    progress.done()
            try:
                if outcome != "model error":
                    memory = team.memory(rss)
                    return team.exploration(time.monotonic() - start, memory,
                                            f"{workers} workers from depth {depth} ({first_id + len(level):,} "
                                            f"states), {team.partition.describe(cm)}; {team.evenness()}")
            finally:
                team.close()
    if team is None:
        run_levels(search, level, first_id, depth, progress)
        if progress is not None:
            progress.done()
        return search.exploration(time.monotonic() - start, None, 1,
                                  "no memory to start the workers; the search went on in one process")
    again = explore_one(cm, limits, progress, False, hash_compact, reduction, coverage=coverage)
    stats = again.stats
    object.__setattr__(stats, "workers_note", "a model error stopped the parallel search; "
                       "searched again in one process to report exactly what one worker finds")
    return again


@record
class Partition:
    """Which worker owns a packed state: `owners[(s & omask) % OWNER_MOD]` (the hot loop
    in search.Search.level computes exactly this). Every state has exactly one owner,
    whatever the mask: the owner is a function of the state."""

    omask: int  # -1 (all ones): the whole state
    owners: tuple[int, ...]  # OWNER_MOD entries, each a worker number
    slots: tuple[int, ...]  # the slots whose bits omask selects (empty: the whole state)
    staying: float  # measured on the sample: the share of transitions whose owner is their source's
    balance: float  # measured on the sample: the largest worker's share of states times the workers

    def owner(self, s: int) -> int:
        return self.owners[(s & self.omask) % OWNER_MOD]

    def describe(self, cm: CompiledModel) -> str:
        if not self.slots:
            return "states owned by a hash of the whole state"
        names = [cm.layout.slots[k].name for k in self.slots]
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        return (f"states owned by {len(names)} of {len(cm.layout.slots)} slots ({shown}): "
                f"{self.staying:.0%} of sampled transitions stay on their worker")


@functools.cache
def owner_table(workers: int) -> tuple[int, ...]:
    """A fixed pseudo-random assignment of the OWNER_MOD residues to workers (Fibonacci
    hashing: the high bits of r times 2^64 / golden ratio)."""
    return tuple(((r * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF) >> 32) % workers for r in range(OWNER_MOD))


#: at most this many states of the level where the workers start are expanded to choose
#: the partition (a few tens of milliseconds)
SAMPLE_STATES = 2000
#: per greedy round, only this many of the fields that change least are measured as the
#: next slot of the set (the others would route more transitions than they could save)
CANDIDATES = 8
#: the cost of one transition routed to another worker, in units of one expanded
#: transition (measured on 2 cores: routing about doubles a transition's cost)
ROUTE_COST = 1.0
#: how much a slot set with few values is expected to drift from an even split over the
#: levels to come: 1 + DRIFT / sqrt(effective number of values), fitted on kvm_vcpus
DRIFT = 0.3


def choose_partition(search: Search, level: list[int], workers: int) -> Partition:
    """The owner function for a parallel search starting at `level`: the bits of a set
    of slots that few transitions change (so that their successors stay on the worker
    that owns their source, as in Lerda & Sisto's distributed SPIN) and whose values
    split the states evenly, or the whole state when no such set does better.

    Measured on a sample of `level`: each sampled state's successors are computed, and
    per slot set S the cost of a level is estimated as (largest share of the states,
    times the workers) * (1 + ROUTE_COST * share of transitions that change S *
    (workers - 1) / workers). Slots are added greedily, the cheapest set kept.

    The share is the harder half: the slots that seldom change are the ones whose
    values drift slowly with depth, so the start level is a poor picture of the levels
    to come. It is estimated twice, and the worse estimate counts: with the owner table
    fitted to the sample (each residue seen to the least loaded worker, largest first;
    unseen ones pseudo-random), on the sampled successors; and from the
    effective number of values n (1 / sum of squared frequencies) as 1 + DRIFT /
    sqrt(n), which a set with few values cannot beat however well it splits today."""
    pk = search.cm.packing
    n = min(len(level), SAMPLE_STATES)
    sample = [level[i * len(level) // n] for i in range(n)]  # spread over the whole level
    # the slots that take more than one value in the sample (the others split nothing)
    fields = [(k, m) for k, m in ((k, pk.mask(k) << pk.shift[k]) for k in range(len(pk.width)) if pk.width[k])
              if len(set(map(m.__and__, sample))) > 1]
    pairs = [(s, t) for s in sample for t in _successors(search, s)]
    successors = [t for _, t in pairs]
    changes: Counter[int] = Counter()  # per transition: bit j set iff fields[j] changed
    for d, count in Counter(s ^ t for s, t in pairs).items():  # few distinct differences
        changes[sum(1 << j for j, (_, mask) in enumerate(fields) if d & mask)] += count
    default = owner_table(workers)
    whole = Partition(-1, default, (), 1.0 / workers, _balance(default, Counter(successors), workers))
    transitions = sum(changes.values())
    if not transitions or workers < 2:
        return whole
    successors = successors[::max(1, len(successors) // SAMPLE_STATES)]  # enough to judge a split
    spread = (workers - 1) / workers

    def cost(balance: float, changed: float) -> float:
        return balance * (1 + ROUTE_COST * changed * spread)

    best, best_cost = None, cost(1.0, 1.0)
    chosen = 0  # bit j: fields[j] is in the set
    omask = 0
    while True:
        trial = None
        candidates = []  # (share of transitions that change the set, j)
        for j in range(len(fields)):
            if not chosen >> j & 1:
                bits = chosen | 1 << j
                candidates.append((sum(c for p, c in changes.items() if p & bits) / transitions, j))
        # only the fields that change least are worth the split's cost to measure
        for changed, j in sorted(candidates)[:CANDIDATES]:
            if cost(1.0, changed) >= best_cost:  # even a perfect split would cost more
                break
            mask = fields[j][1]
            m = omask | mask
            values = Counter(map(m.__and__, sample))
            table = _fit(default, values, workers)
            spread_values = len(sample) ** 2 / sum(n * n for n in values.values())
            balance = max(_balance(table, Counter(map(m.__and__, successors)), workers),
                          1 + DRIFT / spread_values ** 0.5)
            c = cost(balance, changed)
            if trial is None or c < trial[0]:
                trial = (c, j, table)
        if trial is None:
            break
        c, j, table = trial
        chosen |= 1 << j
        omask |= fields[j][1]
        if c < best_cost:
            best_cost = c
            best = (chosen, omask, table)
    if best is None:
        return whole
    chosen, omask, table = best
    slots = tuple(k for j, (k, _) in enumerate(fields) if chosen >> j & 1)
    staying = sum(1 for s, t in pairs
                  if table[(s & omask) % OWNER_MOD] == table[(t & omask) % OWNER_MOD]) / transitions
    return Partition(omask, tuple(table), slots, staying,
                     _balance(table, Counter(map(omask.__and__, successors)), workers))


def _successors(search: Search, s: int):
    """The successors the search stores for s (ample set and canonical form included);
    steps that fail or raise are left out (the search reports those)."""
    red = search.reduction
    actors = search.actors
    if red is not None and red.selects:
        actors = red.ample(s, actors)
    canonical = red.canonical if red is not None and red.canonicalises else None
    for shift, mask, table in actors:
        for fn, _ in table[s >> shift & mask]:
            try:
                t = fn(s)
            except Exception:
                continue
            if t is not None:
                yield canonical(t) if canonical is not None else t


def _fit(default: tuple[int, ...], values: Counter, workers: int) -> list[int]:
    """The owner table for masked `values` (value -> how many states have it): the
    residues seen, most frequent first, each to the least loaded worker; the others
    as in `default`."""
    table = list(default)
    residues: Counter[int] = Counter()
    for v, n in values.items():
        residues[v % OWNER_MOD] += n
    load = [0] * workers
    for r, n in sorted(residues.items(), key=lambda rn: (-rn[1], rn[0])):
        w = min(range(workers), key=load.__getitem__)
        table[r] = w
        load[w] += n
    return table


def _balance(table, values: Counter, workers: int) -> float:
    """The largest worker's share of the states counted in `values` (masked value ->
    how many), times the workers (1.0: an even split)."""
    shares = [0] * workers
    for v, n in values.items():
        shares[table[v % OWNER_MOD]] += n
    total = sum(shares)
    return max(shares) * workers / total if total else 1.0


#: a worker claims ranges of its own level, and of a busier worker's, this fraction of
#: what is left at a time (guided scheduling: large ranges first, few claims, and small
#: ones at the end, so that the workers finish a level within a small range of each other)
CLAIM_SHARE = 0.125
#: and never fewer states than this (a claim costs a lock and a call of the level loop:
#: some microseconds, against 2-9 us for every state)
CLAIM_MIN = 128
#: the shared memory where each worker publishes its level (states, then ids) for the
#: others to take ranges from; a level too wide for it cannot be taken from. Only the
#: pages a level uses are ever touched
SHARED_BYTES = 1 << 28
#: how long a worker out of memory waits for each batch it still has to take in (and drop)
DRAIN_SECONDS = 60
#: fields per worker in `_Team.shelf`
SHELF = 6
#: tests only: each worker leaves the second half of every level to the others and waits
#: for them to take it, so that taken states occur every level whatever the timing
LEAVE_HALF = False


class WorkerKilled(MemoryError):
    """A worker was killed from outside (SIGKILL: in practice the OOM killer). A resource
    limit like running out of memory, not a checker bug: the run ends incomplete, exit 3."""


class _Team:
    """The coordinator's view of the workers: their pipes, their reports, the merge."""

    def __init__(self, ctx, search: Search, workers: int, level: list[int], first_id: int, depth: int,
                 stop: _StopRequest, ticking: bool = False):
        self.search = search
        self.ticking = ticking  # the workers count their progress (a terminal shows it)
        self.workers = workers
        self.depth = depth
        self.prefix = search.count  # states stored before the workers started (global ids 0..prefix-1)
        ids = range(first_id, first_id + len(level))
        self.partition = choose_partition(search, level, workers)
        self.inboxes = [ctx.Queue() for _ in range(workers)]
        self.reports = ctx.Queue()
        self.commands = [ctx.SimpleQueue() for _ in range(workers)]
        self.ticks = ctx.Array("q", 3 * workers, lock=False)  # per worker: states, queue, depth
        # per worker, the level it published, in shared memory: its depth, the next state
        # it will claim itself (front), the end of what is left (back: others claim below
        # it), the first state others may take (floor), and the ids of its states: the
        # first and the step of their range (step 0: an array in shared memory, as on the
        # first level); after them, the depth where a model error abandoned the search
        # (-1: none); `claims` guards them
        self.shelf = ctx.Array("q", SHELF * workers + 1, lock=False)
        for w in range(workers):
            self.shelf[SHELF * w] = -1
        self.shelf[SHELF * workers] = -1
        self.claims = ctx.Lock()
        size = max(SHARED_BYTES, mmap.PAGESIZE)
        try:
            self.shared = [(mmap.mmap(-1, size), mmap.mmap(-1, size)) for _ in range(workers)]
        except OSError as e:  # ENOMEM: address space is short (a memory limit)
            raise MemoryError(str(e)) from None
        self.procs = []
        self.coordinator = os.getpid()  # the workers die with it (_die_with)
        self.stop = stop  # Ctrl-C or SIGTERM asked to stop
        # the states expanded, and those expanded by a worker that does not own them
        self.expanded = self.taken = 0
        for w in range(workers):
            mine = [(s, i) for s, i in zip(level, ids) if self.partition.owner(s) == w]
            p = ctx.Process(target=_worker_main, args=(self, w, [s for s, _ in mine], [i for _, i in mine]),
                            name=f"timerace-worker-{w}", daemon=True)
            self.procs.append(p)
        try:
            for p in self.procs:
                p.start()
        except BaseException as e:  # no fork: no worker may be left (they ignore the SIGTERM of exit time)
            for p in self.procs:
                if p.pid is not None:
                    p.kill()
                    p.join()
            if isinstance(e, OSError) and e.errno in (errno.ENOMEM, errno.EAGAIN):
                raise MemoryError(str(e)) from None
            raise
        self.reported: list[dict] = [{} for _ in range(workers)]

    # -- the levels
    def run(self, progress: Progress | None) -> str | None:
        """Drive the levels until no worker has states left; the stop reason or None."""
        search = self.search
        depth = self.depth
        interrupted = False
        while True:
            for c in self.commands:
                c.put(("level", (depth, tuple(search.found))))
            reports: dict[int, dict] = {}  # worker -> its report of this level
            while len(reports) < self.workers:
                try:
                    r = self.reports.get(timeout=0.5)
                except queue_mod.Empty:
                    self._tick(progress)
                    self._check_alive()
                    continue
                except KeyboardInterrupt:  # (outside the main thread, where no _StopRequest catches it)
                    interrupted = True  # let the workers finish this level, then stop
                    continue
                if "crash" in r:
                    raise RuntimeError(f"worker {r['worker']} failed:\n{r['crash']}")
                reports[r["worker"]] = r
            found: dict[str, tuple] = {}  # found at this level: the least rank, as in each worker
            for w in range(self.workers):
                r = reports[w]
                self.reported[w] = r
                self.expanded += r["expanded"]
                self.taken += r["taken"]
                for name, entry in r["found"].items():
                    if name not in search.found and (name not in found or
                                                     self.rank(*entry[:2]) < self.rank(*found[name][:2])):
                        found[name] = entry
                if r["model_error"] is not None and search.model_error is None:
                    search.model_error = r["model_error"]
                if r["limit"] and search.limit is None:
                    search.limit = r["limit"]
                if search.marks is not None:  # coverage: what ran anywhere ran
                    search.marks[:] = [a | b for a, b in zip(search.marks, r["marks"])]
                    search.held[:] = [a or b for a, b in zip(search.held, r["held"])]
            search.found.update(found)
            self.depth = depth
            if search.model_error is not None:
                return "model error"
            if any(reports[w]["limit"] == OUT_OF_MEMORY for w in range(self.workers)):
                search.limit = OUT_OF_MEMORY
                return OUT_OF_MEMORY
            if interrupted or self.stop.asked:
                search.limit = "interrupted"
                return "interrupted"
            sizes = [reports[w]["queue"] for w in range(self.workers)]
            if not any(sizes):
                return None
            depth += 1
            if progress is not None:
                progress.tick(self.prefix + self.total("count"), sum(r["queue"] for r in reports.values()), depth,
                              memory=self._rss_all())

    def rank(self, i: int, s: int) -> tuple[int, int]:
        """Which of two violations of a property at one level is shown: the one whose
        state comes first in the order (owner, id), whoever expanded it. Deterministic,
        since ids are (`_Worker.absorb_level`)."""
        return self.partition.owner(s), i

    def evenness(self) -> str:
        if not self.expanded:
            return "no level was shared"
        return (f"{self.taken / self.expanded:.1%} of the states were expanded by a worker that "
                f"had run out of its own")

    def total(self, key: str) -> int:
        return sum(r.get(key, 0) for r in self.reported)

    def _tick(self, progress: Progress | None) -> None:
        if progress is None:
            return
        t = self.ticks
        states = self.prefix + sum(t[3 * w] for w in range(self.workers))
        queued = sum(t[3 * w + 1] for w in range(self.workers))
        progress.tick(states, queued, max(t[3 * w + 2] for w in range(self.workers)),
                      memory=self._rss_all())

    def _rss_all(self) -> float | None:
        """Resident memory of this process and the workers now, in MiB (Linux)."""
        total = 0
        for pid in [os.getpid()] + [p.pid for p in self.procs]:
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                return None
        return total / (1 << 20)

    def _check_alive(self) -> None:
        for w, p in enumerate(self.procs):
            if not p.is_alive() and p.exitcode == -signal.SIGKILL:
                raise WorkerKilled(f"worker {w} was killed by SIGKILL, as the kernel's out-of-memory "
                                   "killer does; its states are lost, so the search stopped")
            if not p.is_alive() and p.exitcode not in (0, None):
                raise RuntimeError(f"worker {w} died (exit code {p.exitcode})")

    # -- the result
    def memory(self, rss_before: int | None) -> int | None:
        grown = rss_bytes()
        if rss_before is None or grown is None:
            return None
        return grown - rss_before + self.total("grown")

    def exploration(self, seconds: float, memory: int | None, note: str) -> Exploration:
        search = self.search
        search.count = self.prefix + self.total("count")
        search.transitions += self.total("transitions")
        search.depth = max([search.depth] + [r.get("depth", 0) for r in self.reported])
        search.final_count += self.total("finals")
        search.buffer_full += self.total("buffer_full")
        search.ample_states += self.total("ample")
        search.remote_steps_to = self.steps_to  # parent links live in the workers
        sums = None
        if search.marks is not None:  # each worker's visited set: the prefix and the states it owns
            got = []
            for w in range(self.workers):  # one at a time: _answer drops what it is not waiting for
                self.commands[w].put(("sums", None))
                got.append(self._answer(w, "sums"))
            prefix = states_sums(search.seen)
            sums = tuple(sum(x[k] for x in got) - (self.workers - 1) * prefix[k] for k in range(3))
        result = search.exploration(seconds, memory, self.workers, note, sums)
        if search.hash_compact:  # a collision only hides a state within one worker's table
            p = sum(r["collision"] for r in self.reported)
            object.__setattr__(result.stats, "collision_probability", min(1.0, p))
        return result

    def steps_to(self, i: int) -> tuple[int, list[int]]:
        ks: list[int] = []
        search = self.search
        while True:
            if i < self.prefix:
                parent, via = search.parent[i], search.via[i]
            else:
                w = (i - self.prefix) % self.workers
                self.commands[w].put(("parent", (i - self.prefix) // self.workers))
                parent, via = self._answer(w, "parent")
            if parent == NO_PARENT:
                return i, ks[::-1]
            ks.append(via)
            i = parent

    def _answer(self, w: int, what: str):
        while True:
            r = self.reports.get(timeout=60)
            if r.get("worker") == w and what in r:
                return r[what]

    def close(self) -> None:
        for c in self.commands:
            try:
                c.put(("exit", None))
            except (OSError, ValueError):
                pass
        # a worker that died (killed from outside) leaves its peers waiting on what it
        # would have sent: they never read the exit command, so they are killed at once
        lost = any(not p.is_alive() and p.exitcode not in (0, None) for p in self.procs)
        for p in self.procs:
            p.join(timeout=0 if lost else 5)
            if p.is_alive():  # stuck: it ignores SIGTERM (_worker_main)
                p.kill()
                p.join()
        for q in self.inboxes + [self.reports]:
            q.close()
            q.join_thread()
        for states_mm, ids_mm in self.shared:
            states_mm.close()
            ids_mm.close()


class _StopRequest:
    """While the workers run, Ctrl-C and SIGTERM (which the CLI turns into Ctrl-C) only
    ask the coordinator to stop after the level under way: an exception could land
    anywhere in the exchange with the workers (between two commands, in a trace being
    rebuilt), where it would leave them waiting. Outside the main thread, or with no
    Python handler installed, signals keep their own handling."""

    def __init__(self):
        self.asked = False
        self.saved: list = []

    def __enter__(self) -> _StopRequest:
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                old = signal.getsignal(sig)
                if callable(old):
                    self.saved.append((sig, old))
                    signal.signal(sig, self._ask)
        return self

    def _ask(self, signum, frame) -> None:
        self.asked = True

    def __exit__(self, *exc) -> None:
        for sig, old in self.saved:
            signal.signal(sig, old)
        self.saved = []


class _Ticker:
    """A worker's progress: three shared counters the coordinator reads."""

    def __init__(self, ticks, w: int, prefix: int):
        self.ticks, self.w, self.prefix = ticks, w, prefix

    def tick(self, states: int, queue: int, depth: int) -> None:
        base = 3 * self.w
        self.ticks[base] = states
        self.ticks[base + 1] = queue
        self.ticks[base + 2] = depth


def _worker_main(team: _Team, w: int, level: list[int], ids: list[int]) -> None:
    """A forked worker: expand its share of each level when told, exchange, report."""
    _die_with(team.coordinator)
    for sig in (signal.SIGINT, signal.SIGTERM):  # the coordinator decides when to stop
        signal.signal(sig, signal.SIG_IGN)
    for v, c in enumerate(team.commands):  # only the coordinator writes commands; each worker reads its own
        c._writer.close()
        if v != w:
            c._reader.close()
    try:
        _Worker(team, w, level, ids).serve()
    except EOFError:  # the coordinator is gone (where no parent-death signal kills a worker)
        os._exit(0)
    except Exception:
        team.reports.put({"worker": w, "crash": traceback.format_exc()})


#: prctl(2) option: the signal a process gets when its parent dies (Linux)
PR_SET_PDEATHSIG = 1


def _die_with(coordinator: int) -> None:
    """A worker must not outlive the coordinator (killed, OOM-killed): on Linux the kernel
    sends it SIGKILL when the coordinator dies; elsewhere its read of a command fails once
    the coordinator's end of the pipe is closed (the other workers closed theirs)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        pass
    if os.getppid() != coordinator:  # it died before prctl took effect
        os._exit(0)


#: successors as they travel between workers: states, their parents' ids, the steps
Batch = tuple[Sequence[int], Sequence[int], Sequence[int]]


class _Worker:
    def __init__(self, team: _Team, w: int, level: list[int], ids: Sequence[int]):
        self.team = team
        self.w = w
        self.n = team.workers
        self.prefix = team.prefix
        s = self.search = team.search
        self.rss = rss_bytes()
        # the inherited prefix stays as it is; this worker's own states are numbered anew
        s.parent, s.via = array(WORD), array(s.via.typecode)
        s.count = s.expanded = s.transitions = s.final_count = s.buffer_full = s.ample_states = 0
        s.found, s.model_error, s.limit = {}, None, None
        self.level, self.ids = level, ids
        # progress only where it is shown: ticking costs a test per state in the level loop
        self.ticker = _Ticker(team.ticks, w, team.prefix) if team.ticking else None
        s.rank = team.rank
        self.shelf, self.claims = team.shelf, team.claims
        # bytes per state in shared memory: a 64-bit word, or as many as a wide state needs
        self.width = 8 * max(1, -(-s.cm.packing.bits // 64))
        self.own_end = 0  # where this worker stops claiming its own level (LEAVE_HALF)
        # array type codes of a batch's states, parent ids and steps as they travel
        self.codes = (WORD if s.cm.packing.bits <= 64 else "", WORD, s.via.typecode)
        # where run_level is in the exchange (out_of_memory finishes it for the others)
        self.received: dict[int, tuple[list, list]] = {}  # peer -> (its batch, the ranges taken) as wired
        self.sent, self.expanded_before, self.n_taken = -1, 0, 0

    def global_id(self, local: int) -> int:
        return self.prefix + local * self.n + self.w

    def serve(self) -> None:
        team, s = self.team, self.search
        while True:
            cmd, arg = team.commands[self.w].get()
            if cmd == "exit":
                return
            if cmd == "parent":
                team.reports.put({"worker": self.w, "parent": (s.parent[arg], s.via[arg])})
                continue
            if cmd == "sums":
                team.reports.put({"worker": self.w, "sums": states_sums(s.seen)})
                continue
            try:
                self.run_level(*arg)
            except MemoryError:
                self.out_of_memory(arg[0])

    def run_level(self, depth: int, settled: tuple[str, ...]) -> None:
        """Expand this worker's level `depth`, and ranges of the others' once its own is
        done; send each peer the successors it owns; take in theirs, in the order that
        makes the stored states independent of who expanded what."""
        s, team, n = self.search, self.team, self.n
        s.settled = set(settled)
        self.received, self.expanded_before, self.n_taken = {}, s.expanded, 0
        self.publish(depth)
        owners, omask = team.partition.owners, team.partition.omask
        route = Route(self.w, n, owners, omask)
        first_local = s.count
        level, ids = self.level, self.ids
        nxt: list[int] = []
        taken: list[tuple[int, int, list]] = []  # (owner, start, batch per worker) per range taken
        n_taken = 0
        try:
            while claim := self.claim(self.w, depth, own=True):
                nxt += s.level(level[claim[0]:claim[1]], ids[claim[0]:claim[1]], depth, self.ticker, route)
            while elsewhere := self.claim_elsewhere(depth):
                v, a, b = elsewhere
                n_taken += b - a
                self.n_taken = n_taken
                states, sids = self.taken_range(v, a, b)
                theirs = Route(-1, n, owners, omask)
                s.level(states, sids, depth, self.ticker, theirs)
                taken.append((v, a, theirs.by_owner()))
            if LEAVE_HALF:  # tests: the others take the second half of this level
                while self.left(self.w):
                    time.sleep(0.0005)
        except StopSearch:  # a model error: the level is abandoned (the search runs again in one process)
            self.abandon(depth)
        outbox = route.by_owner()
        del route
        for o in range(n):
            if o != self.w:
                team.inboxes[o].put(("batch", self.w, self.wire(outbox[o]),
                                     [(v, a, self.wire(batches[o])) for v, a, batches in taken if batches[o][0]]))
        self.sent = depth
        del outbox
        received = self.received
        inbox = team.inboxes[self.w]
        while len(received) < n - 1:
            _, src, wire, ranges = inbox.get()
            received[src] = (wire, ranges)
        self.take_in(received, taken, nxt, depth)
        del received, taken
        self.level = nxt
        self.ids = range(self.global_id(first_local), self.global_id(s.count), n)
        team.reports.put(self.report(len(nxt), s.limit))

    def report(self, queue: int, limit: str | None) -> dict:
        s = self.search
        grown = rss_bytes()
        return {
            "worker": self.w, "queue": queue, "count": s.count, "transitions": s.transitions,
            "depth": s.depth, "finals": s.final_count, "buffer_full": s.buffer_full, "ample": s.ample_states,
            "found": {k: v for k, v in s.found.items()}, "model_error": s.model_error, "limit": limit,
            "grown": grown - self.rss if grown is not None and self.rss is not None else 0,
            "collision": s.collisions() if s.hash_compact else 0.0,
            "expanded": s.expanded - self.expanded_before, "taken": self.n_taken,
            "marks": s.marks, "held": s.held,
        }

    def out_of_memory(self, depth: int) -> None:
        """A MemoryError during level `depth`: drop this worker's next level, leave
        nothing here for the others to take, send them an empty batch if this level's was
        not sent, take in (and drop) what they send, and report the limit. The others
        finish the level, the coordinator stops the search, and this worker stays to
        answer for the parent links of its states (the partial result's traces)."""
        self.level, self.ids = [], range(0)
        with self.claims:  # a level it did not publish is an empty one: the others must not wait for it
            base = SHELF * self.w
            if self.shelf[base] != depth:
                self.shelf[base:base + SHELF] = [depth, 0, 0, 0, 0, 0]
        self.abandon(depth)
        team = self.team
        if self.sent != depth:
            empty = self.wire(([], [], []))
            for o in range(self.n):
                if o != self.w:
                    team.inboxes[o].put(("batch", self.w, empty, []))
        inbox = team.inboxes[self.w]
        for _ in range(self.n - 1 - len(self.received)):
            try:  # (a batch whose reading ran out of memory may never be complete: not forever)
                inbox.get(timeout=DRAIN_SECONDS)
            except (MemoryError, queue_mod.Empty):
                pass
        self.received = {}
        team.reports.put(self.report(0, OUT_OF_MEMORY))

    def take_in(self, received: dict, taken: list, nxt: list[int], depth: int) -> None:
        """Store the successors of this level that this worker owns and did not store
        while expanding, in the order it would store them had nobody taken anything:
        what the ranges taken from its own level produced (by their start), then per
        peer in order its batch and what the ranges taken from the peer's level produced.
        `received`: peer -> (its batch, [(owner of the range, start, batch)]) as wired;
        `taken`: [(owner of the range, start, batch per worker)] this worker expanded."""
        # owner of the range -> (start, batch)
        produced: dict[int, list[tuple[int, Batch]]] = {v: [] for v in range(self.n)}
        for v, a, batches in taken:
            if batches[self.w][0]:
                produced[v].append((a, batches[self.w]))
        for src in received:
            for v, a, wire in received[src][1]:
                produced[v].append((a, self.unwire(wire)))
        at_limit = self.search.limits.max_depth is not None and depth >= self.search.limits.max_depth
        for v in [self.w] + sorted(received):
            if v != self.w:
                self.absorb(*self.unwire(received[v][0]), nxt, at_limit)
            for _, batch in sorted(produced[v], key=lambda ab: ab[0]):
                self.absorb(*batch, nxt, at_limit)

    # -- taking ranges of states from busier workers
    def publish(self, depth: int) -> None:
        """Put this worker's level where the others can take ranges of it."""
        level, n, width = self.level, len(self.level), self.width
        states_mm, ids_mm = self.team.shared[self.w]
        floor = n  # nothing can be taken from a level too wide for the shared memory
        if n * width <= SHARED_BYTES:
            if width == 8:
                states_mm[:8 * n] = array(WORD, level)
            else:
                states_mm[:width * n] = b"".join(x.to_bytes(width, "little") for x in level)
            floor = 0
        ids = self.ids
        if isinstance(ids, range):  # as every level's but the first: no need to copy them
            first, step = ids.start, ids.step
        else:
            first, step = 0, 0
            if not floor:
                ids_mm[:8 * n] = array(WORD, ids)
        self.own_end = n // 2 if LEAVE_HALF and not floor else n
        base = SHELF * self.w
        with self.claims:
            front = n if self.shelf[SHELF * self.n] == depth else 0  # abandoned: nothing to claim
            self.shelf[base:base + SHELF] = [depth, front, n, floor, first, step]

    def claim(self, v: int, depth: int, own: bool) -> tuple[int, int] | None:
        """A range of worker v's level `depth` to expand: from the front of this worker's
        own level, from the back of another's; None when nothing is left."""
        with self.claims:
            return self._claim_held(v, depth, own)

    def _claim_held(self, v: int, depth: int, own: bool) -> tuple[int, int] | None:
        """`claim`, with `claims` already held."""
        shelf, base = self.shelf, SHELF * v
        published, front, back, floor = shelf[base:base + 4]
        if published != depth:
            return None
        k = max(CLAIM_MIN, int((back - front) * CLAIM_SHARE))
        if own:
            end = min(back, self.own_end)
            if front >= end:
                return None
            shelf[base + 1] = min(front + k, end)
            return front, shelf[base + 1]
        low = max(front, floor)
        if back <= low:
            return None
        shelf[base + 2] = max(back - k, low)
        return shelf[base + 2], back

    def claim_elsewhere(self, depth: int) -> tuple[int, int, int] | None:
        """(worker, start, end): a range of the level of the worker with the most left to
        expand, once every peer has published its level; None when nothing is left.

        The shelf is read under `claims`: a peer publishing its level writes its fields
        one by one, and a shelf read meanwhile can show the new depth with the last
        level's front and back (nothing left), which must not end this worker's level
        (with LEAVE_HALF the peer would wait for it forever)."""
        shelf = self.shelf
        while True:
            with self.claims:
                waiting = False
                most, victim = 0, None
                for v in range(self.n):
                    if v == self.w:
                        continue
                    base = SHELF * v
                    if shelf[base] != depth:
                        waiting = True  # it has not published this level yet
                        continue
                    left = shelf[base + 2] - max(shelf[base + 1], shelf[base + 3])
                    if left > most:
                        most, victim = left, v
                if victim is not None:
                    claim = self._claim_held(victim, depth, own=False)
                    assert claim is not None  # it has `most` left, under the same lock
                    return victim, claim[0], claim[1]
            if not waiting:
                return None
            time.sleep(0.0002)

    def left(self, v: int) -> bool:
        """Whether some of worker v's level is neither expanded nor claimed."""
        with self.claims:
            return self.shelf[SHELF * v + 2] > self.shelf[SHELF * v + 1]

    def abandon(self, depth: int) -> None:
        """Leave nothing to claim at this level (a model error ends the search), in the
        levels published and in those a peer has yet to publish: with LEAVE_HALF, a peer
        would otherwise wait for its second half to be taken by workers that stopped."""
        with self.claims:
            for v in range(self.n):
                self.shelf[SHELF * v + 1] = self.shelf[SHELF * v + 2]
            self.shelf[SHELF * self.n] = depth

    def taken_range(self, v: int, a: int, b: int) -> tuple:
        """States a..b-1 of worker v's published level, and their ids."""
        states_mm, ids_mm = self.team.shared[v]
        width = self.width
        raw = states_mm[width * a:width * b]
        states: Sequence[int]
        if width == 8:
            states = array(WORD)
            states.frombytes(raw)
        else:
            states = [int.from_bytes(raw[k:k + width], "little") for k in range(0, len(raw), width)]
        first, step = self.shelf[SHELF * v + 4:SHELF * v + 6]
        if step:
            return states, range(first + a * step, first + b * step, step)
        ids = array(WORD)
        ids.frombytes(ids_mm[8 * a:8 * b])
        return states, ids

    # -- batches
    def wire(self, batch: tuple) -> list:
        """A batch as it travels: three byte strings of arrays instead of pickled ints
        (states wider than 64 bits stay a list)."""
        return [array(code, items).tobytes() if code else items for code, items in zip(self.codes, batch)]

    def unwire(self, wire: list) -> Batch:
        """The batch (states, parent ids, steps) that travelled as `wire`."""
        batch = []
        for code, items in zip(self.codes, wire):
            if code:
                a = array(code)
                a.frombytes(items)
                items = a
            batch.append(items)
        ts, ps, ks = batch
        return ts, ps, ks

    def absorb(self, ts, ps, ks, nxt: list[int], at_limit: bool) -> None:
        """Successors other workers found for states this one owns: the new ones join
        the next level with their parent link."""
        s = self.search
        seen = s.seen
        parent_append, via_append, nxt_append = s.parent.append, s.via.append, nxt.append
        count = s.count
        if s.hash_compact:
            seen_contains = seen.__contains__
            for t, p, k in zip(ts, ps, ks):
                if at_limit:
                    if not seen_contains(t):
                        s.limit = "max-depth"
                    continue
                if seen.add(t):
                    nxt_append(t)
                    parent_append(p)
                    via_append(k)
                    count += 1
        else:
            seen_add = seen.add
            for t, p, k in zip(ts, ps, ks):
                if t in seen:
                    continue
                if at_limit:
                    s.limit = "max-depth"
                    continue
                seen_add(t)
                nxt_append(t)
                parent_append(p)
                via_append(k)
                count += 1
        s.count = count
