"""The native level loop: the plain breadth-first search in C (backends/c.py), built
with the system's C compiler as SPIN's pan is, cached, and loaded with ctypes.

The C side keeps the states in breadth-first order (so the queue is a range of ids),
their parents and steps, and the visited set. It expands every state that needs no
decision; a state that does (an invariant fails, a step bails, no step moves, a premise
of vacuity holds, a `final` condition may apply) is expanded by the Python search's own
generic loop (`Search._level_generic`), whose visited set, parents and steps are then
the C ones (`_Seen`, `_Parents`, `_Steps`), so that it stores what it finds in the same
order the Python loop would. Verdicts, counterexamples (rebuilt in Python from the
parent links with the Python steps, as always) and state counts are therefore the
Python loop's; tests/test_native.py checks that on the shipped models and on generated
specs.

The build is cached under $XDG_CACHE_HOME/timerace/native (default ~/.cache), keyed by
the hash of the generated C (a function of the IR) and the compiler command, so a model
pays the compile once. Where there is no compiler, or the model uses what the C back end
does not write (tso, lkmm, fixed-width integers, ...), or the search needs what the C
loop does not do (partial-order reduction with the whole graph kept), the Python loop runs and the run
says why (`Stats.loop`, `Stats.notes`). The native loop runs in one process. Symmetry
reduction's representatives are computed in C from the symmetry's own field tables
(`Reduction.symmetry_fields`), partial-order reduction's ample sets from its tables.

A library written for a model with liveness properties also holds the liveness
engine's fair-cycle check (backends/c.py's _LIVENESS; `Library.live_marks`,
`fair_components`, `stem`), which the engine runs on the graph the C loop kept
(`Exploration.native`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import signal
import subprocess
import tempfile
import time
from array import array
from pathlib import Path
from typing import IO

from ...backends.c import Actor, CSource, StepRef, Unsupported, c_source, compiler
from ...backends.python import CompiledModel
from ...base.progress import Progress
from .fastloop import actor_tables
from .search import (OUT_OF_MEMORY, STEP, WORD, Exploration, Fingerprints, Limits, Reduction, Search, StopSearch,
                     rss_bytes)

#: tr_level's answers (backends/c.py's enum)
DONE, GENERIC, FULL, CHUNKED, NOMEM = range(5)
CFLAGS = ("-O2", "-shared", "-fPIC", "-w")
#: a compile that takes longer is given up (the Python loop runs instead)
COMPILE_SECONDS = 300
_u64, _u32, _ptr = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "timerace" / "native"


def source_for(cm: CompiledModel, reduction: Reduction | None = None) -> CSource:
    """The C of one compiled variant, its steps numbered as the search numbers them
    (fastloop.actor_tables), choosing ample sets as `reduction` does; raises
    Unsupported (also for a reduction the C loop does not do)."""
    if cm.flushes:
        raise Unsupported("store buffers or lkmm views")
    ample = None
    symmetry: tuple[tuple[tuple[tuple[int, int], ...], ...], ...] = ()
    if reduction is not None:
        if reduction.canonicalises:
            symmetry = reduction.symmetry_fields()
            if not symmetry:
                raise Unsupported("this symmetry reduction is the Python loop's (--no-symmetry)")
        if reduction.selects:
            ample = reduction.ample_tables()
            if ample is None:
                raise Unsupported("this partial-order reduction is the Python loop's: with execution contexts its "
                                  "ample sets depend on more than the pcs (--no-por)")
    steps, actors = actor_tables(cm)
    by_gid = {inst.gid: inst for inst in cm.instances}
    refs = []
    for cs in steps:
        refs.append(StepRef(by_gid[cs.gid].process, cs.instance, cs.step))
    rows = [Actor(shift, mask, tuple(tuple(k for _, k in at) for at in table)) for shift, mask, table in actors]
    pk = cm.packing
    assert pk is not None
    return c_source(cm.program, pk.shift, pk.width, pk.lo, pk.hi, pk.bits, refs, rows,
                    [inv.property for inv in cm.invariants], [p.property for p in cm.premises], bool(cm.finals),
                    ample, [prop for prop, _, _ in cm.liveness], symmetry)


#: the liveness engine's functions, in a model with liveness properties
_LIVE = (("tr_live_marks", ctypes.c_int, (ctypes.c_int, _u64, _ptr, _ptr, _ptr, ctypes.POINTER(_u64))),
         ("tr_fair_sccs", ctypes.c_int64, (_u64, _ptr, _ptr, _ptr, _ptr, _ptr, _u64, _ptr, _ptr, _u64, _ptr,
                                           ctypes.POINTER(_u64))),
         ("tr_stem", ctypes.c_int64, (_u64, _u64, _ptr, _ptr, _ptr, _u64, _ptr, _ptr, _ptr)))


class Library:
    """One built variant, loaded: the C functions with their signatures."""

    def __init__(self, path: Path, source: CSource):
        self.path = path
        self.source = source
        lib = ctypes.CDLL(str(path))
        for name, res, args in (
                ("tr_new", _ptr, (ctypes.c_int,)), ("tr_free", None, (_ptr,)), ("tr_add", ctypes.c_int, (_ptr, _u64)),
                ("tr_lookup", ctypes.c_int64, (_ptr, _u64)), ("tr_edge", ctypes.c_int, (_ptr, _u64, _u32)),
                ("tr_first", ctypes.c_int, (_ptr, _u64)), ("tr_enabled", ctypes.c_int, (_ptr, ctypes.c_int64)),
                ("tr_ndst", _u64, (_ptr,)), ("tr_nfirst", _u64, (_ptr,)), ("tr_nenabled", _u64, (_ptr,)),
                ("tr_first_at", _u64, (_ptr, _u64)), ("tr_cut_edges", None, (_ptr, _u64)),
                ("tr_cut_first", None, (_ptr, _u64)), ("tr_first_ptr", _ptr, (_ptr,)), ("tr_dst_ptr", _ptr, (_ptr,)),
                ("tr_step_ptr", _ptr, (_ptr,)), ("tr_enabled_ptr", _ptr, (_ptr,)),
                ("tr_contains", ctypes.c_int, (_ptr, _u64)), ("tr_record", ctypes.c_int, (_ptr, _u64, _u32)),
                ("tr_count", _u64, (_ptr,)), ("tr_records", _u64, (_ptr,)), ("tr_state", _u64, (_ptr, _u64)),
                ("tr_parent", _u64, (_ptr, _u64)), ("tr_via", _u32, (_ptr, _u64)),
                ("tr_states", ctypes.POINTER(_u64), (_ptr,)), ("tr_marks", ctypes.POINTER(_u64), (_ptr,)),
                ("tr_sums", None, (_ptr, ctypes.POINTER(_u64))),
                ("tr_transitions", _u64, (_ptr,)), ("tr_ample_states", _u64, (_ptr,)), ("tr_truncate", None, (_ptr, _u64)),
                ("tr_load", ctypes.c_int, (_ptr, _u64, _ptr, _ptr, _ptr)),
                ("tr_load_graph", ctypes.c_int, (_ptr, _u64, _ptr, _u64, _ptr, _ptr, _u64, _ptr)),
                ("tr_step", ctypes.c_int, (ctypes.c_int, _u64, ctypes.POINTER(_u64))),
                ("tr_canonical", _u64, (_u64,)),
                ("tr_predicate", ctypes.c_int, (ctypes.c_int, ctypes.c_int, _u64)),
                ("tr_level", ctypes.c_int, (_ptr, _u64, ctypes.POINTER(_u64), ctypes.POINTER(_u64), _u64, _u64,
                                            _u64, ctypes.c_int))) + _LIVE * bool(source.liveness):
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        self.lib = lib

    def step(self, k: int, s: int) -> tuple[int, int]:
        """(0 disabled | 1 moved | 2 bailed, successor) of step k in packed state s."""
        out = _u64(0)
        r = self.lib.tr_step(k, s, ctypes.byref(out))
        return r, out.value


    # -- the liveness engine's fair-cycle check (backends/c.py's _LIVENESS), on the graph:
    # search.FairCycles
    @property
    def liveness(self) -> int:
        return self.source.liveness

    def live_marks(self, p: int, states: array, n: int) -> tuple[array, array] | None:
        """Liveness property p's marks on the first n `states` (packed, "Q"): whether the
        goal fails in each, and the seeds (where the trigger holds too) in id order;
        None when a predicate bailed (the Python check judges the property)."""
        bad, seeds, count = _zeros("B", n), _zeros("Q", n), _u64(0)
        if self.lib.tr_live_marks(p, n, _address(states), _address(bad), _address(seeds), ctypes.byref(count)):
            return None
        del seeds[count.value:]
        return bad, seeds

    def fair_components(self, n: int, first: array, dst: array, step: array, enabled: array, stepbits: array,
                        fair: int, bad: array, seeds: array) -> tuple[array, int, int]:
        """(per state: -1 outside R, 0 in an unfair component, c > 0 in fair component c;
        the fair actors that starved the unfair ones; how many are fair)."""
        comp, starved = _zeros("i", n), _u64(0)
        fairs = self.lib.tr_fair_sccs(n, _address(first), _address(dst), _address(step), _address(enabled),
                                      _address(stepbits), fair, _address(bad), _address(seeds), len(seeds),
                                      _address(comp), ctypes.byref(starved))
        if fairs < 0:
            raise MemoryError
        return comp, starved.value, fairs

    def stem(self, n: int, initial: int, first: array, dst: array, seeds: array,
             comp: array) -> tuple[int, array, array]:
        """The 0-1 breadth-first search of the shortest stem: (the node found, 2u + phase,
        or -1; each node's parent node and the edge that led there)."""
        parent, edge = _zeros("q", 2 * n), _zeros("q", 2 * n)
        found = self.lib.tr_stem(n, initial, _address(first), _address(dst), _address(seeds), len(seeds),
                                 _address(comp), _address(parent), _address(edge))
        if found < -1:
            raise MemoryError
        return found, parent, edge


def _zeros(typecode: str, n: int) -> array:
    """n zero items for a C function to fill: a repeat, with no bytes object of the same
    size made and copied first (array(typecode, bytes(...)) was a good part of a stem's
    time on 50,000 states)."""
    return array(typecode, [0]) * n


def cache_key(source: CSource, cc: str) -> str:
    """The build's name in the cache: the C's hash, the compiler and its flags."""
    return hashlib.sha256((source.digest + "\0" + cc + "\0" + " ".join(CFLAGS)).encode()).hexdigest()[:32]


def build(source: CSource) -> Library:
    """Compile (or find in the cache) and load, waiting for the compiler; raises
    Unsupported with the reason when there is no compiler or it fails."""
    return Build(source).wait()


def _cache_folder() -> Path:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # no cache to write: a folder of this user's in the temporary directory
        folder = Path(tempfile.gettempdir()) / f"timerace-native-{os.getuid() if hasattr(os, 'getuid') else 0}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise Unsupported(f"no folder to build in: {e}") from None
    return folder


#: builds left to finish after their search ended (`Build.detach`), by library: the
#: next build of the same library takes its compiler over instead of starting another
_DETACHED: dict[Path, Build] = {}

#: the compile, run by a shell so that the library is renamed into the cache when whole
#: whether or not the process that started it is still there: $1 the compiler, $2 the C,
#: $3 the temporary library, $4 the cached one, then the flags
_COMPILE = 'cc=$1 c=$2 tmp=$3 so=$4; shift 4; "$cc" "$@" -o "$tmp" "$c" && mv -f "$tmp" "$so"; ' \
    'code=$?; rm -f "$c" "$tmp"; exit $code'


class Build:
    """One variant's library: loaded from the cache at once, or compiled by a child
    process that runs while the caller goes on (`ready` polls it, `wait` waits, `cancel`
    stops it, `detach` lets it finish into the cache for the next run). The compiler
    writes a temporary file that is renamed into the cache when whole, so two processes
    building the same key (xdist workers) never see half a library, and a cancelled
    build leaves nothing behind."""

    tmp_c: str
    tmp_so: str
    errors: IO[bytes]
    started: float

    def __init__(self, source: CSource):
        self.source = source
        self.library: Library | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        for so, left in list(_DETACHED.items()):
            if left.proc is None or left.proc.poll() is not None:
                del _DETACHED[so]
                left.proc = None
                left._clean()
        cc = compiler()
        if cc is None:
            raise Unsupported("no C compiler (cc, or $CC) on PATH")
        self.so = _cache_folder() / f"{cache_key(source, cc)}.so"
        running = _DETACHED.pop(self.so, None)
        if running is not None:  # this process's compiler of the same library still runs: wait for that one
            self.proc, self.tmp_c, self.tmp_so, self.errors = running.proc, running.tmp_c, running.tmp_so, running.errors
            self.started = running.started
            return
        if self.so.exists():
            try:
                self.library = Library(self.so, source)
                return
            except OSError:  # not a library this process can load (a damaged cache entry): build it again
                self.so.unlink(missing_ok=True)
        try:
            fd, self.tmp_c = tempfile.mkstemp(suffix=".c", dir=self.so.parent)
        except OSError as e:
            raise Unsupported(f"cannot write the C into {self.so.parent}: {e}") from None
        self.tmp_so = self.tmp_c[:-2] + ".so"
        self.errors = tempfile.TemporaryFile()
        try:
            with os.fdopen(fd, "w") as f:
                f.write(source.text)
            # its own session: a Ctrl-C stops the search, and `cancel` the compiler
            self.proc = subprocess.Popen(["/bin/sh", "-c", _COMPILE, "sh", cc, self.tmp_c, self.tmp_so, str(self.so),
                                          *CFLAGS], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.errors, start_new_session=True)
        except OSError as e:
            self._clean()
            raise Unsupported(f"the C compiler did not run: {e}") from None
        self.started = time.monotonic()

    def ready(self) -> Library | None:
        """The library once built, None while the compiler still runs; raises
        Unsupported when it failed."""
        if self.library is not None or self.proc is None:
            return self.library
        if self.proc.poll() is None:
            if time.monotonic() - self.started > COMPILE_SECONDS:
                self.cancel()
                raise Unsupported(f"the C compiler took more than {COMPILE_SECONDS} s")
            return None
        return self._finish()

    def wait(self) -> Library:
        if self.library is not None:
            return self.library
        assert self.proc is not None
        try:
            self.proc.wait(timeout=max(1.0, COMPILE_SECONDS - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            self.cancel()
            raise Unsupported(f"the C compiler took more than {COMPILE_SECONDS} s") from None
        except BaseException:  # Ctrl-C: no compiler left running
            self.cancel()
            raise
        library = self._finish()
        assert library is not None
        return library

    def _finish(self) -> Library | None:
        assert self.proc is not None
        code, self.proc = self.proc.returncode, None
        try:
            if code != 0 or not self.so.exists():
                self.errors.seek(0)
                text = self.errors.read().decode(errors="replace")
                first = (text.strip().splitlines() or ["(no message)"])[0]
                raise Unsupported(f"the C compiler failed: {first[:200]}")
        finally:
            self._clean()
        try:
            self.library = Library(self.so, self.source)
        except OSError as e:
            raise Unsupported(f"the built library does not load: {e}") from None
        return self.library

    def cancel(self) -> None:
        """Stop the compiler, if it runs, and remove what it wrote."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:  # already gone
                pass
            self.proc.wait()
            self.proc = None
            self._clean()

    def detach(self) -> None:
        """Leave the compiler running: its library lands in the cache when whole, for
        the next search of the same variant (nothing waits for it)."""
        if self.proc is not None:
            _DETACHED[self.so] = self

    def _clean(self) -> None:
        self.errors.close()
        for leftover in (self.tmp_c, self.tmp_so):
            try:
                os.unlink(leftover)
            except OSError:
                pass


def library_for(cm: CompiledModel, reduction: Reduction | None = None) -> Library:
    return build(source_for(cm, reduction))


# ---- the C stores as the Python search's visited set, parents and steps ----------


class _Seen:
    """The C visited set, as `Search` uses its set (`in`, `add`) or its Fingerprints
    (`contains`, `add` saying whether the state was new): `add` also queues the state."""

    def __init__(self, lib, t):
        self.lib, self.t = lib, t

    def __contains__(self, s: int) -> bool:
        return bool(self.lib.tr_contains(self.t, s))

    contains = __contains__

    def add(self, s: int) -> bool:
        r = self.lib.tr_add(self.t, s)
        if r < 0:
            raise MemoryError
        return bool(r)

    def collision_probability(self) -> float:
        return 0.0  # every state (at most 63 bits) is its own fingerprint


class _Parents:
    """The parent column: an append waits for the step (`_Steps.append`) to record both."""

    def __init__(self, lib, t):
        self.lib, self.t = lib, t
        self.pending = 0

    def append(self, parent: int) -> None:
        self.pending = parent

    def __getitem__(self, i: int) -> int:
        return int(self.lib.tr_parent(self.t, i))

    def __delitem__(self, cut: slice) -> None:
        self.lib.tr_truncate(self.t, cut.start)


class _Steps:
    def __init__(self, lib, t, parents: _Parents):
        self.lib, self.t, self.parents = lib, t, parents

    def append(self, k: int) -> None:
        if self.lib.tr_record(self.t, self.parents.pending, k) < 0:
            raise MemoryError

    def __getitem__(self, i: int) -> int:
        return int(self.lib.tr_via(self.t, i))

    def __delitem__(self, cut: slice) -> None:
        self.lib.tr_truncate(self.t, cut.start)


class _Index:
    """Graph mode: the C table as `Search.index` (state -> id); setting an id stores the
    state (its id is the next, as the Python search's `self.count`)."""

    def __init__(self, lib, t):
        self.lib, self.t = lib, t

    def get(self, s: int) -> int | None:
        i = self.lib.tr_lookup(self.t, s)
        return None if i < 0 else int(i)

    def __contains__(self, s: int) -> bool:
        return self.lib.tr_lookup(self.t, s) >= 0

    def __setitem__(self, s: int, i: int) -> None:
        if self.lib.tr_add(self.t, s) < 0:
            raise MemoryError


class _Stored:
    """Graph mode: `Search.states`, which `_Index` already appended to."""

    def append(self, s: int) -> None:
        pass


class _Edges:
    """Graph mode: `Search.dst` (an append waits for the step) and `Search.step`."""

    def __init__(self, lib, t, pending: _Edges | None = None):
        self.lib, self.t, self.pending = lib, t, pending
        self.value = 0

    def append(self, x: int) -> None:
        if self.pending is None:
            self.value = x
        elif self.lib.tr_edge(self.t, self.pending.value, x) < 0:
            raise MemoryError

    def __len__(self) -> int:
        return int(self.lib.tr_ndst(self.t))

    def __delitem__(self, cut: slice) -> None:
        self.lib.tr_cut_edges(self.t, cut.start)


class _First:
    def __init__(self, lib, t):
        self.lib, self.t = lib, t

    def append(self, x: int) -> None:
        if self.lib.tr_first(self.t, x) < 0:
            raise MemoryError

    def __getitem__(self, i: int) -> int:
        return int(self.lib.tr_first_at(self.t, i))

    def __delitem__(self, cut: slice) -> None:
        self.lib.tr_cut_first(self.t, cut.start)


class _Enabled:
    def __init__(self, lib, t):
        self.lib, self.t = lib, t

    def append(self, mask: int) -> None:
        if self.lib.tr_enabled(self.t, mask) < 0:
            raise MemoryError

    def __len__(self) -> int:
        return int(self.lib.tr_nenabled(self.t))


def _column(typecode: str, pointer, n: int, itemsize: int) -> array:
    """n items of a C array as a Python array: one copy, read in place (string_at would
    make a bytes object first, a second copy of every column of the graph)."""
    out = array(typecode)
    if n:
        address = pointer if isinstance(pointer, int) else ctypes.cast(pointer, ctypes.c_void_p).value
        assert address, "a C column of n > 0 items has an address"
        out.frombytes((ctypes.c_char * (itemsize * n)).from_address(address))
    return out


def explore_native(cm: CompiledModel, limits: Limits, progress: Progress | None, hash_compact: bool,
                   coverage: bool, library: Library, graph: bool = False,
                   reduction: Reduction | None = None) -> Exploration:
    """The search of one variant with the native level loop (see the module's doc);
    `reduction`: the one `library` was written for (`source_for`)."""
    start = time.monotonic()
    rss = rss_bytes()
    search = Search(cm, limits, graph, hash_compact, reduction, generate_from=None, coverage=coverage)
    lib = library.lib
    t = lib.tr_new(int(graph))
    if not t:
        raise MemoryError
    try:
        _attach(search, lib, t)
        search.add_initial()
        _run(search, lib, t, progress)
        found = _finish(search, lib, t, progress, start, rss)
        found.native = library
        return found
    finally:
        lib.tr_free(t)


def take_over(search: Search, level: list[int], first_id: int, depth: int, library: Library,
              progress: Progress | None, start: float, rss: int | None) -> Exploration:
    """Go on natively with a search the Python loop began (`run_levels` stopped before
    expanding `level`, the states first_id.. at `depth`): its states, parents and steps
    (graph mode: its edges) move into the C stores, the frontier last and in its order,
    so that the C loop expands the same states in the same order as the Python loop
    would have. The rest of the search (what it found, its counts and marks) stays in
    `search`, whose generic loop still judges every state that needs a decision."""
    lib = library.lib
    graph = search.graph
    t = lib.tr_new(int(graph))
    if not t:
        raise MemoryError
    try:
        if graph:
            states = array("Q", search.states)
        else:  # the visited set has no order: only the frontier's ids matter (parents point at ids)
            seen = search.seen
            stored = (x - 1 for x in seen.table if x) if isinstance(seen, Fingerprints) else seen
            old = set(stored).difference(level)
            states = array("Q", old)
            states.extend(level)
        n = len(states)
        if n != search.count or n != first_id + len(level):
            raise AssertionError("internal error: the Python search's stores do not match its count")
        loaded = lib.tr_load(t, n, _address(states), _address(search.parent), _address(search.via))
        if loaded == -1:
            raise MemoryError
        if loaded < 0:
            raise AssertionError("internal error: a state stored twice by the Python search")
        if graph and lib.tr_load_graph(t, len(search.first), _address(search.first), len(search.dst),
                                       _address(search.dst), _address(search.step), len(search.enabled),
                                       _address(search.enabled)) < 0:
            raise MemoryError
        del states
        search.loops = None  # the generated Python loop: the C loop does its work now
        _attach(search, lib, t)
        _run(search, lib, t, progress, first_id, depth)
        found = _finish(search, lib, t, progress, start, rss)
        found.native = library
        return found
    finally:
        lib.tr_free(t)


def _address(column: array) -> int:
    """Where an array's items are (for a C function that copies them)."""
    return column.buffer_info()[0] if len(column) else 0


def _attach(search: Search, lib, t) -> None:
    """Make the C stores the search's visited set, parents and steps (and graph)."""
    parents = _Parents(lib, t)
    search.seen = _Seen(lib, t)  # type: ignore[assignment]
    search.parent = parents  # type: ignore[assignment]
    search.via = _Steps(lib, t, parents)  # type: ignore[assignment]
    if search.graph:
        dst = _Edges(lib, t)
        search.index, search.states = _Index(lib, t), _Stored()  # type: ignore[assignment]
        search.dst, search.step = dst, _Edges(lib, t, dst)  # type: ignore[assignment]
        search.first, search.enabled = _First(lib, t), _Enabled(lib, t)  # type: ignore[assignment]


def _finish(search: Search, lib, t, progress: Progress | None, start: float, rss: int | None) -> Exploration:
    """The exploration, its graph and digest read back from the C stores."""
    graph, coverage, hash_compact = search.graph, search.marks is not None, search.hash_compact
    if graph:  # the graph as the Python search keeps it, for the liveness engine
        n, edges = int(lib.tr_count(t)), int(lib.tr_ndst(t))
        search.states = _column("Q", lib.tr_states(t), n, 8)  # type: ignore[assignment]
        search.first = _column(WORD, lib.tr_first_ptr(t), int(lib.tr_nfirst(t)), 8)
        search.dst = _column(WORD, lib.tr_dst_ptr(t), edges, 8)
        search.step = _column(STEP, lib.tr_step_ptr(t), edges, 4)
        search.enabled = _column("q", lib.tr_enabled_ptr(t), int(lib.tr_nenabled(t)), 8)
    search.transitions += lib.tr_transitions(t)
    search.ample_states += lib.tr_ample_states(t)
    if search.marks is not None:
        marks = lib.tr_marks(t)
        for k in range(len(search.marks)):
            search.marks[k] |= marks[k]
    if progress is not None:
        progress.done()
    seconds = time.monotonic() - start
    grown = rss_bytes()
    memory = grown - rss if rss is not None and grown is not None else None
    sums = None
    if coverage and not graph:  # the digest of the stored states, as states_sums gives it for Python's
        n = int(lib.tr_count(t))
        out = (_u64 * 2)()
        lib.tr_sums(t, out)  # modulo 2^64, as the digest reads them
        total, squares = out[0], out[1]
        # Fingerprints sums its fingerprints, state + 1
        sums = (n, total + n, squares + 2 * total + n) if hash_compact else (n, total, squares)
    return search.exploration(seconds, memory, 1, "", sums)


def _run(search: Search, lib, t, progress: Progress | None, lo: int = 0, depth: int = 0) -> None:
    """`run_levels` over the C queue: level after level, each a range of ids, from the
    level whose first id is `lo` (the rest of the queue) at `depth`."""
    limits = search.limits
    hi = int(lib.tr_count(t))
    try:
        while lo < hi:
            if limits.max_depth is not None and depth >= limits.max_depth:
                frontier = [int(lib.tr_state(t, i)) for i in range(lo, hi)]
                search.level(frontier, range(lo, hi), depth, progress)
            else:
                _level(search, lib, t, lo, hi, depth, progress)
            lo, hi = hi, int(lib.tr_count(t))
            depth += 1
            if limits.until_found and limits.until_found <= search.found.keys():
                search.limit = "found what was asked for"
                break
    except StopSearch:
        pass
    except KeyboardInterrupt:
        search.limit = "interrupted"
    except MemoryError:
        search.limit = OUT_OF_MEMORY


def _level(search: Search, lib, t, lo: int, hi: int, depth: int, progress: Progress | None) -> None:
    search.depth = max(search.depth, depth)
    max_states = search.limits.max_states if search.limits.max_states is not None else 1 << 62
    j, expanded = _u64(lo), _u64(search.expanded)
    while True:
        settled = search.settled
        inv_on = sum(1 << n for n, (_, name) in enumerate(search.invariants) if name not in settled)
        prem_on = sum(1 << n for _, n in search.premises)
        deadlock = search.limits.check_deadlock and "deadlock" not in settled
        expanded.value = search.expanded
        status = lib.tr_level(t, hi, ctypes.byref(j), ctypes.byref(expanded), max_states, inv_on, prem_on,
                              int(deadlock))
        search.count, search.expanded = int(lib.tr_count(t)), int(expanded.value)
        if status == DONE:
            return
        if status == CHUNKED:
            if progress is not None:
                progress.tick(search.count, search.count - search.expanded, depth)
            continue
        if status == FULL:
            search.limit = "max-states"
            raise StopSearch
        if status == NOMEM:
            raise MemoryError
        i = int(j.value)  # GENERIC: the Python loop expands (and judges) this one state
        search.level([int(lib.tr_state(t, i))], [i], depth, progress)
        j.value = i + 1
        if i + 1 >= hi:
            return
