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
* `parallel`: the same search shared among worker processes, level by level.

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

from dataclasses import replace

from ...backends.c import Unsupported
from ...backends.python import CompiledModel
from ...base.progress import Progress
from .fastloop import level_loop_source
from .native import LOOPS, explore_native, library_for, source_for as native_source
from .parallel import explore_parallel
from .search import (OUT_OF_MEMORY, Exploration, Limits, Reduction, StateGraph, TraceBuilder, UnpackedStates,
                     decoder_for, explore_one, state_space, stuck_message)

__all__ = ["LOOPS", "OUT_OF_MEMORY", "Exploration", "Limits", "Reduction", "StateGraph", "TraceBuilder", "Unsupported",
           "UnpackedStates", "decoder_for", "explore", "level_loop_source", "native_source", "state_space", "stuck_message"]


def explore(cm: CompiledModel, limits: Limits = Limits(), progress: Progress | None = None,
            graph: bool = False, hash_compact: bool = False, reduction: Reduction | None = None,
            workers: int = 1, coverage: bool = False, loop: str = "") -> Exploration:
    """Breadth-first search of one compiled variant. `graph` keeps the state graph (the
    liveness engine and --dot-graph need it); `hash_compact` stores fingerprints instead
    of states; `workers` > 1 partitions the states across processes when the model is
    big enough to pay for them (parallel.py), never with `graph`; `coverage` records
    which steps ran and which premises held (engines/coverage.py reads them); `loop`
    (LOOPS): the level loop, Python, the native one in C (native.py) or native where it
    applies (auto), said in `Stats.loop` with why not native when it could not be; ""
    (not asked): Python, unsaid."""
    if loop == "python":
        found = _explore_python(cm, limits, progress, graph, hash_compact, reduction, workers, coverage)
        found.stats = replace(found.stats, loop="python")
        return found
    if loop:
        why = "partial-order reduction and symmetry are the Python loop's (--no-por --no-symmetry)" \
            if reduction is not None else ""
        if not why:
            try:
                library = library_for(cm)
            except Unsupported as e:
                why = str(e)
        if not why:
            found = explore_native(cm, limits, progress, hash_compact, coverage, library, graph)
            note = (f"the native loop runs in one process (--workers {workers} not used)",) if workers > 1 else ()
            found.stats = replace(found.stats, loop="native", notes=found.stats.notes + note)
            return found
        found = _explore_python(cm, limits, progress, graph, hash_compact, reduction, workers, coverage)
        found.stats = replace(found.stats, loop="python",
                              notes=found.stats.notes + (f"the Python loop ran, not the native one: {why}",))
        return found
    return _explore_python(cm, limits, progress, graph, hash_compact, reduction, workers, coverage)


def _explore_python(cm: CompiledModel, limits: Limits, progress: Progress | None, graph: bool, hash_compact: bool,
                    reduction: Reduction | None, workers: int, coverage: bool) -> Exploration:
    if workers > 1 and not graph:
        return explore_parallel(cm, limits, progress, hash_compact, reduction, workers, coverage)
    note = "liveness needs the whole graph in one process" if workers > 1 else ""
    return explore_one(cm, limits, progress, graph, hash_compact, reduction, note, coverage)
