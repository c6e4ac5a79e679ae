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
loop does not do (partial-order reduction, symmetry), the Python loop runs and the run
says why (`Stats.loop`, `Stats.notes`). The native loop runs in one process.
"""

from __future__ import annotations

import ctypes
import hashlib
import operator
import os
import shutil
import subprocess
import tempfile
import time
from array import array
from pathlib import Path

from ...backends.c import Actor, CSource, StepRef, Unsupported, c_source
from ...backends.python import CompiledModel
from ...base.progress import Progress
from .fastloop import actor_tables
from .search import OUT_OF_MEMORY, STEP, WORD, Exploration, Limits, Search, StopSearch, rss_bytes

#: the loops `--loop` chooses between; auto: native where it applies, else Python
LOOPS = ("python", "native", "auto")
#: tr_level's answers (backends/c.py's enum)
DONE, GENERIC, FULL, CHUNKED, NOMEM = range(5)
CFLAGS = ("-O2", "-shared", "-fPIC", "-w")
#: a compile that takes longer is given up (the Python loop runs instead)
COMPILE_SECONDS = 300
_u64, _u32, _ptr = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p


def compiler() -> str | None:
    """The C compiler: $CC, else cc, as found on PATH."""
    return shutil.which(os.environ.get("CC") or "cc")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "timerace" / "native"


def source_for(cm: CompiledModel) -> CSource:
    """The C of one compiled variant, its steps numbered as the search numbers them
    (fastloop.actor_tables); raises Unsupported."""
    if cm.flushes:
        raise Unsupported("store buffers or lkmm views")
    steps, actors = actor_tables(cm)
    by_gid = {inst.gid: inst for inst in cm.instances}
    refs = []
    for cs in steps:
        refs.append(StepRef(by_gid[cs.gid].process, cs.instance, cs.step))
    rows = [Actor(shift, mask, tuple(tuple(k for _, k in at) for at in table)) for shift, mask, table in actors]
    pk = cm.packing
    assert pk is not None
    return c_source(cm.program, pk.shift, pk.width, pk.lo, pk.hi, pk.bits, refs, rows,
                    [inv.property for inv in cm.invariants], [p.property for p in cm.premises], bool(cm.finals))


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
                ("tr_transitions", _u64, (_ptr,)), ("tr_truncate", None, (_ptr, _u64)),
                ("tr_step", ctypes.c_int, (ctypes.c_int, _u64, ctypes.POINTER(_u64))),
                ("tr_predicate", ctypes.c_int, (ctypes.c_int, ctypes.c_int, _u64)),
                ("tr_level", ctypes.c_int, (_ptr, _u64, ctypes.POINTER(_u64), ctypes.POINTER(_u64), _u64, _u64,
                                            _u64, ctypes.c_int))):
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        self.lib = lib

    def step(self, k: int, s: int) -> tuple[int, int]:
        """(0 disabled | 1 moved | 2 bailed, successor) of step k in packed state s."""
        out = _u64(0)
        r = self.lib.tr_step(k, s, ctypes.byref(out))
        return r, out.value


def cache_key(source: CSource, cc: str) -> str:
    """The build's name in the cache: the C's hash, the compiler and its flags."""
    return hashlib.sha256((source.digest + "\0" + cc + "\0" + " ".join(CFLAGS)).encode()).hexdigest()[:32]


def build(source: CSource) -> Library:
    """Compile (or find in the cache) and load; raises Unsupported with the reason when
    there is no compiler or it fails."""
    cc = compiler()
    if cc is None:
        raise Unsupported("no C compiler (cc, or $CC) on PATH")
    key = cache_key(source, cc)
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # no cache to write: a folder of this user's in the temporary directory
        folder = Path(tempfile.gettempdir()) / f"timerace-native-{os.getuid() if hasattr(os, 'getuid') else 0}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise Unsupported(f"no folder to build in: {e}") from None
    so = folder / f"{key}.so"
    if so.exists():
        try:
            return Library(so, source)
        except OSError:  # not a library this process can load (a damaged cache entry): build it again
            so.unlink(missing_ok=True)
    _compile(cc, source, so)
    try:
        return Library(so, source)
    except OSError as e:
        raise Unsupported(f"the built library does not load: {e}") from None


def _compile(cc: str, source: CSource, so: Path) -> None:
    folder = so.parent
    if not so.exists():
        try:
            fd, tmp_c = tempfile.mkstemp(suffix=".c", dir=folder)
        except OSError as e:
            raise Unsupported(f"cannot write the C into {folder}: {e}") from None
        tmp_so = tmp_c[:-2] + ".so"
        try:
            with os.fdopen(fd, "w") as f:
                f.write(source.text)
            try:
                done = subprocess.run([cc, *CFLAGS, "-o", tmp_so, tmp_c], capture_output=True, text=True,
                                      timeout=COMPILE_SECONDS)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise Unsupported(f"the C compiler did not run: {e}") from None
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
                raise Unsupported(f"the C compiler failed: {first[:200]}")
            os.replace(tmp_so, so)  # whole or not at all: a reader never sees half a library
        finally:
            for leftover in (tmp_c, tmp_so):
                try:
                    os.unlink(leftover)
                except OSError:
                    pass


def library_for(cm: CompiledModel) -> Library:
    return build(source_for(cm))


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
    out = array(typecode)
    if n:
        out.frombytes(ctypes.string_at(pointer, itemsize * n))
    return out


def explore_native(cm: CompiledModel, limits: Limits, progress: Progress | None, hash_compact: bool,
                   coverage: bool, library: Library, graph: bool = False) -> Exploration:
    """The search of one variant with the native level loop (see the module's doc)."""
    start = time.monotonic()
    rss = rss_bytes()
    search = Search(cm, limits, graph, hash_compact, None, generate_from=None, coverage=coverage)
    lib = library.lib
    t = lib.tr_new(int(graph))
    if not t:
        raise MemoryError
    try:
        parents = _Parents(lib, t)
        search.seen = _Seen(lib, t)  # type: ignore[assignment]
        search.parent = parents  # type: ignore[assignment]
        search.via = _Steps(lib, t, parents)  # type: ignore[assignment]
        if graph:
            dst = _Edges(lib, t)
            search.index, search.states = _Index(lib, t), _Stored()  # type: ignore[assignment]
            search.dst, search.step = dst, _Edges(lib, t, dst)  # type: ignore[assignment]
            search.first, search.enabled = _First(lib, t), _Enabled(lib, t)  # type: ignore[assignment]
        search.add_initial()
        _run(search, lib, t, progress)
        if graph:  # the graph as the Python search keeps it, for the liveness engine
            n, edges = int(lib.tr_count(t)), int(lib.tr_ndst(t))
            search.states = _column("Q", lib.tr_states(t), n, 8)  # type: ignore[assignment]
            search.first = _column(WORD, lib.tr_first_ptr(t), int(lib.tr_nfirst(t)), 8)
            search.dst = _column(WORD, lib.tr_dst_ptr(t), edges, 8)
            search.step = _column(STEP, lib.tr_step_ptr(t), edges, 4)
            search.enabled = _column("q", lib.tr_enabled_ptr(t), int(lib.tr_nenabled(t)), 8)
        search.transitions += lib.tr_transitions(t)
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
            states = array("Q", ctypes.string_at(lib.tr_states(t), 8 * n)) if n else array("Q")
            total, squares = sum(states), sum(map(operator.mul, states, states))
            # Fingerprints sums its fingerprints, state + 1
            sums = (n, total + n, squares + 2 * total + n) if hash_compact else (n, total, squares)
        return search.exploration(seconds, memory, 1, "", sums)
    finally:
        lib.tr_free(t)


def _run(search: Search, lib, t, progress: Progress | None) -> None:
    """`run_levels` over the C queue: level after level, each a range of ids."""
    limits = search.limits
    lo, hi, depth = 0, int(lib.tr_count(t)), 0
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
