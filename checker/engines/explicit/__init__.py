"""The explicit engine: breadth-first search of every reachable state, behind one
`explore()`.

Its parts, lowest first (each imports only the ones before it; tests/test_layers.py
checks that, and that the rest of checker/ imports this package, never a part):

* `fastloop`: writes the generated level loop, one function per variant with every
  step's body pasted in place, from the actor tables it shares with the search;
* `search`: the search itself (`Search`), its visited sets, traces and limits, and the
  `Reduction` interface that engines/reduce/ implements (partial-order reduction and
  symmetry, decided from the IR before the search: a plug-in handed to `explore`, not a
  part of the search, so it stays beside the other engines);
* `parallel`: the same search shared among worker processes, level by level;
* `native`: the level loop in C (backends/c.py), built by the system's compiler and
  loaded with ctypes, which takes a search over from the Python loop at a level
  boundary (`--loop auto`, the command line's default: `Switch` below) or runs it
  from the start (`--loop native`).

The level loops sit side by side in `Search`: `_level_generic` (every case, and the
only one that decides anything: violations, model errors, deadlocks, limits),
`_level_graph` (the same, keeping every edge for liveness and --dot-graph), and
`_level_generated`, which runs the generated loop over the states that need no decision
and hands each other state to the generic loop. A worker runs the same `Search.level` on
its share, with a `Route` for the successors another worker owns. They are separate
because each is the hot path of its case: a test per state for what a case does not
need (keeping edges, a call per step) would cost every search. So a change to
what a state's expansion means is made in the generic loop and, where it applies, in
the other two; tests/test_fastloop.py checks that the generated loop stores exactly
what the generic one does.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from ...backends.python import CompiledModel
from ...base.progress import Progress
from .fastloop import level_loop_source
from .search import (LOOPS, OUT_OF_MEMORY, Exploration, FairCycles, Fingerprints, Limits, Reduction, Search, StateGraph,
                     TraceBuilder, UnpackedStates, decoder_for, explore_one, rss_bytes, run_levels, state_space,
                     stuck_message)

if TYPE_CHECKING:
    from ...backends.c import CSource
    from .native import Build, Library

# The C back end (backends/c.py), native.py (ctypes, the compiler's child process) and
# the workers (parallel.py) are imported where a search uses them, not at start-up:
# most searches are over before a build would be, and run in one process
# (tests/test_api.py checks what a small model's run imports; test_layers.py, LAZY, why)

__all__ = ["LOOPS", "OUT_OF_MEMORY", "Exploration", "FairCycles", "Limits", "Reduction", "StateGraph", "TraceBuilder",
           "UnpackedStates", "decoder_for", "explore", "level_loop_source", "native_source", "state_space", "stuck_message"]


def explore(cm: CompiledModel, limits: Limits = Limits(), progress: Progress | None = None,
            graph: bool = False, hash_compact: bool = False, reduction: Reduction | None = None,
            workers: int = 1, coverage: bool = False, loop: str = "") -> Exploration:
    """Breadth-first search of one compiled variant. `graph` keeps the state graph (the
    liveness engine and --dot-graph need it); `hash_compact` stores fingerprints instead
    of states; `workers` > 1 partitions the states across processes when the model is
    big enough to pay for them (parallel.py), never with `graph`; `coverage` records
    which steps ran and which premises held (engines/coverage.py reads them); `loop`
    (LOOPS): the level loop, Python, the native one in C from the start (native.py), or
    auto: Python at once and native from the level boundary where the build is ready
    (`_explore_auto`); said in `Stats.loop`, with why not native where it could not be;
    "" (not asked): Python, unsaid."""
    if loop == "python":
        found = _explore_python(cm, limits, progress, graph, hash_compact, reduction, workers, coverage)
        found.stats = replace(found.stats, loop="python")
        return found
    if loop == "auto":
        return _explore_auto(cm, limits, progress, graph, hash_compact, reduction, workers, coverage)
    if loop:
        why = not_native(cm, reduction, graph)
        if not why:
            from ...backends.c import Unsupported
            from .native import explore_native, library_for

            try:
                library = library_for(cm, reduction)
            except Unsupported as e:
                why = str(e)
        if not why:
            found = explore_native(cm, limits, progress, hash_compact, coverage, library, graph, reduction)
            note = (f"the native loop runs in one process (--workers {workers} not used)",) if workers > 1 else ()
            found.stats = replace(found.stats, loop="native", notes=found.stats.notes + note)
            return found
        return _python_because(_explore_python(cm, limits, progress, graph, hash_compact, reduction, workers,
                                               coverage), why)
    return _explore_python(cm, limits, progress, graph, hash_compact, reduction, workers, coverage)


def native_source(cm: CompiledModel, reduction: Reduction | None = None) -> CSource:
    """The C of the native loop for one variant (--dump-c); raises backends.c.Unsupported."""
    from .native import source_for

    return source_for(cm, reduction)


def not_native(cm: CompiledModel, reduction: Reduction | None, graph: bool) -> str:
    """Why the native loop cannot run this search, told without writing its C ("" when
    it may): what the C loop does not do, and what the C back end surely refuses."""
    return not_searched_natively(cm, reduction, graph) or not_built(cm)


def not_searched_natively(cm: CompiledModel, reduction: Reduction | None, graph: bool) -> str:
    """`not_native`'s half that the search decides, with no C back end imported."""
    if reduction is not None and reduction.selects and graph:
        return "partial-order reduction with the whole graph kept (liveness) is the Python loop's (--no-por)"
    if cm.flushes or cm.program.model.memory != "sc":
        return f"the C loop searches sc only, not memory {cm.program.model.memory}"
    return ""


def not_built(cm: CompiledModel) -> str:
    """`not_native`'s half that the C back end decides: the state's width, a compiler."""
    from ...backends.c import MAX_BITS, compiler

    if cm.packing is not None and cm.packing.bits > MAX_BITS:
        return f"a packed state of {cm.packing.bits} bits (at most {MAX_BITS})"
    if compiler() is None:
        return "no C compiler (cc, or $CC) on PATH"
    return ""


def _python_because(found: Exploration, why: str) -> Exploration:
    found.stats = replace(found.stats, loop="python",
                          notes=found.stats.notes + (f"the Python loop ran, not the native one: {why}",))
    return found


#: --loop auto starts building the native loop once the Python search has stored this
#: many states: a smaller search is over before a compiler would be
NATIVE_FROM = 20_000


class Switch:
    """--loop auto's hand-over, asked at each level boundary (`run_levels`' `until`):
    past NATIVE_FROM states, write the variant's C and start its build (or find it in
    the cache); at each boundary after that, say to hand over once the library is
    loaded; then `take_over` goes on natively. The search is the one `attach`ed (by
    `_explore_auto`, or by explore_parallel, which asks this before its workers)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.search: Search | None = None
        self.build: Build | None = None
        self.library: Library | None = None
        self.why = ""

    def attach(self, search: Search) -> None:
        self.search = search

    def __call__(self, level: list[int], depth: int) -> bool:
        search = self.search
        if search is None or self.why or search.count < NATIVE_FROM:
            return False
        if isinstance(search.seen, Fingerprints) and not search.seen.exact:
            self.why = "--hash-compact fingerprints that are not the states themselves"
            return False
        from ...backends.c import Unsupported

        try:
            if self.build is None:
                self.why = not_built(search.cm)
                if self.why:
                    return False
                from .native import Build

                self.build = Build(native_source(search.cm, search.reduction))
            self.library = self.build.ready()
        except Unsupported as e:
            self.why, self.build = str(e), None
            return False
        return self.library is not None

    def may_take_over(self) -> bool:
        """The native loop is not ruled out (yet): explore_parallel starts no worker while so."""
        return not self.why

    def take_over(self, level: list[int], first_id: int, depth: int, progress: Progress | None, start: float,
                  rss: int | None) -> Exploration:
        assert self.search is not None and self.library is not None
        from .native import take_over

        found = take_over(self.search, level, first_id, depth, self.library, progress, start, rss)
        note = f"the native loop took over at depth {depth}: C in one process outruns {self.workers} " \
            "Python workers" if self.workers > 1 else ""
        found.stats = replace(found.stats, loop="native", loop_from=(depth, first_id + len(level)), workers_note=note)
        return found

    def cancel(self) -> None:
        if self.build is not None:
            self.build.cancel()

    def detach(self) -> None:
        if self.build is not None:
            self.build.detach()


def _explore_auto(cm: CompiledModel, limits: Limits, progress: Progress | None, graph: bool, hash_compact: bool,
                  reduction: Reduction | None, workers: int, coverage: bool) -> Exploration:
    """--loop auto: the Python search starts at once; a search that grows past
    NATIVE_FROM states has its C built meanwhile by a child process, and moves to the
    native loop at the first level boundary where the library is ready (native.take_over),
    with the same states in the same order, so the same verdicts and counterexamples;
    with workers too (explore_parallel starts them only once the native loop is ruled out).
    A search over before that never waits for a compiler: its build finishes into the
    cache for the next search of the variant (Ctrl-C stops it)."""
    why = not_searched_natively(cm, reduction, graph)  # (the compiler is looked for by the switch)
    if why:
        found = _explore_python(cm, limits, progress, graph, hash_compact, reduction, workers, coverage)
        if found.stats.states >= NATIVE_FROM:
            return _python_because(found, why)
        found.stats = replace(found.stats, loop="python")
        return found
    switch = Switch(workers)
    try:
        if workers > 1 and not graph:
            from .parallel import explore_parallel

            found = explore_parallel(cm, limits, progress, hash_compact, reduction, workers, coverage, switch)
        else:
            found = _auto_one(cm, limits, progress, graph, hash_compact, reduction, coverage, switch,
                              "liveness needs the whole graph in one process" if workers > 1 else "")
    except BaseException:
        switch.cancel()
        raise
    if found.stats.loop == "native":
        return found
    if found.stats.limit == "interrupted":
        switch.cancel()
    else:
        switch.detach()
    if not switch.why and switch.build is None and found.stats.states >= NATIVE_FROM:
        switch.why = not_built(cm)  # (a search over before a level boundary past NATIVE_FROM)
    if switch.why:
        return _python_because(found, switch.why)
    found.stats = replace(found.stats, loop="python")
    return found


def _auto_one(cm: CompiledModel, limits: Limits, progress: Progress | None, graph: bool, hash_compact: bool,
              reduction: Reduction | None, coverage: bool, switch: Switch, note: str) -> Exploration:
    """`explore_one`, handing over to the native loop where `switch` says so."""
    start = time.monotonic()
    rss = rss_bytes()
    search = Search(cm, limits, graph, hash_compact, reduction, coverage=coverage)
    switch.attach(search)
    level, first_id, depth = run_levels(search, search.add_initial(), 0, 0, progress, until=switch)
    if level and switch.library is not None:
        return switch.take_over(level, first_id, depth, progress, start, rss)
    if progress is not None:
        progress.done()
    grown = rss_bytes()
    memory = grown - rss if rss is not None and grown is not None else None
    return search.exploration(time.monotonic() - start, memory, 1, note)


def _explore_python(cm: CompiledModel, limits: Limits, progress: Progress | None, graph: bool, hash_compact: bool,
                    reduction: Reduction | None, workers: int, coverage: bool) -> Exploration:
    if workers > 1 and not graph:
        from .parallel import explore_parallel

        return explore_parallel(cm, limits, progress, hash_compact, reduction, workers, coverage)
    note = "liveness needs the whole graph in one process" if workers > 1 else ""
    return explore_one(cm, limits, progress, graph, hash_compact, reduction, note, coverage)
