"""The one place Z3 solvers are made: fixed seeds, one timeout, one logic.

Every Z3 engine (bmc, induction, pdr, lemmas) gets its solvers here, so that the same
input gives the same answer and the same counterexample on every run: Z3 is
deterministic for a fixed seed and a fixed order of assertions, and the engines add
assertions in a fixed order. The timeout is wall-clock time per query (`--timeout`);
a query that runs out of it answers `unknown`, which no engine reports as a proof.
A timeout can also cut Z3 off after it answered `sat`, while it builds the model:
that model need not satisfy the query, so `checked` turns it into `unknown` too, and
only a complete answer can become a counterexample (or, when replay contradicts it, a
checker bug).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import z3

DEFAULT_TIMEOUT = 60.0  # seconds per solver query
SEED = 0

_configured = False


def _configure() -> None:
    global _configured
    if not _configured:
        for name in ("smt.random_seed", "sat.random_seed"):
            z3.set_param(name, SEED)
        # Z3's own SIGINT handler (installed while it solves) would take a Ctrl-C away
        # from Python's: a query that still answered sat or unsat then lost it, and the
        # run went on to the end. Without it every Ctrl-C reaches the watchdog below.
        z3.set_param("ctrl_c", False)
        _configured = True


def _watch(ctx: z3.Context | None) -> None:
    """Let the watchdog interrupt `ctx` (only while an engine runs under one)."""
    ctx = z3.get_ctx(ctx)
    if _watching and all(c is not ctx for c in _contexts):
        _contexts.append(ctx)


def new_solver(timeout: float | None = DEFAULT_TIMEOUT, ctx: z3.Context | None = None,
               logic: str | None = "QF_BV") -> z3.Solver:
    """A solver for `logic` (quantifier-free bit-vectors by default) with fixed seeds and
    the given timeout, in `ctx` (each engine run makes its own context, so earlier runs
    cannot change it)."""
    _configure()
    _watch(ctx)
    s = z3.SolverFor(logic, ctx=ctx) if logic else z3.Solver(ctx=ctx)
    s.__class__ = _Solver
    s.set("random_seed", SEED)
    s.set("ctrl_c", False)
    s.budget = timeout
    if timeout is not None:
        s.set("timeout", max(1, int(timeout * 1000)))
    return s


#: Z3's reason_unknown() after a Ctrl-C it caught itself: its own SIGINT handler is off
#: (`_configure`), so this is only a second line of defence
CTRL_C_REASON = "interrupted from keyboard"


_interrupt_pending = False


#: the contexts of the solvers made since the engine started: the watchdog interrupts them
_contexts: list = []
_watching = False


@contextlib.contextmanager
def interrupts_deferred():
    """While a Z3 engine runs, Ctrl-C (and SIGTERM, which the command line treats alike)
    only notes the request, and the next query raises KeyboardInterrupt before or after
    it runs. Raised at any bytecode instead, it can land inside ctypes' conversion of a
    Z3 call's arguments, which turns it into a `ctypes.ArgumentError` traceback.

    A query under way is cut short at once: Python's handler cannot run while Z3 holds
    the main thread, but the signal's wake-up byte reaches a watchdog thread, which notes
    the request and interrupts every Z3 context the engine made (Z3 then answers unknown,
    and the query raises KeyboardInterrupt, see `_Solver.check`)."""
    global _interrupt_pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def note(signum, frame):
        global _interrupt_pending
        _interrupt_pending = True

    r, w = os.pipe()
    os.set_blocking(w, False)

    def watchdog():
        global _interrupt_pending
        while True:
            data = os.read(r, 64)
            if not data or 0 in data:  # the engine is done
                return
            _interrupt_pending = True
            for ctx in list(_contexts):
                ctx.interrupt()

    global _watching
    old = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    _watching = True
    dog = threading.Thread(target=watchdog, name="z3-interrupt", daemon=True)
    dog.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        os.write(w, b"\0")
        dog.join()
        os.close(r)
        os.close(w)
        _contexts.clear()
        _watching = False
        for sig, handler in old.items():
            signal.signal(sig, handler)
        pending, _interrupt_pending = _interrupt_pending, False
        if pending:
            raise KeyboardInterrupt


def _raise_if_interrupted() -> None:
    global _interrupt_pending
    if _interrupt_pending:
        _interrupt_pending = False
        raise KeyboardInterrupt


class _Solver(z3.Solver):
    """A Z3 solver whose query, cut short by Ctrl-C, raises KeyboardInterrupt as a Python
    loop would: one Ctrl-C ends the run, not just the query under way."""

    budget: float | None = None  # the query timeout in seconds (None: none)

    def check(self, *assumptions):
        _raise_if_interrupted()
        start = time.monotonic()
        r = super().check(*assumptions)
        _raise_if_cut_short(self, r, start)
        return r


def _raise_if_cut_short(engine, r, start: float) -> None:
    """KeyboardInterrupt if Ctrl-C or SIGTERM came while `engine` answered `r`."""
    _raise_if_interrupted()
    if r == z3.unknown:
        reason = engine.reason_unknown()
        # Some of Z3's procedures report Ctrl-C as "canceled", as they report a
        # timeout; nothing else cancels a query here, so a cancellation well inside
        # the budget was Ctrl-C.
        early = engine.budget is None or time.monotonic() - start < 0.9 * engine.budget
        if reason == CTRL_C_REASON or (reason == "canceled" and early):
            raise KeyboardInterrupt


class _Fixedpoint(z3.Fixedpoint):
    """Z3's fixedpoint engine (Spacer) whose query, cut short by Ctrl-C, raises
    KeyboardInterrupt like `_Solver.check`."""

    budget: float | None = None
    cut = False  # the last query ended in Z3's "canceled" error (a timeout, or Ctrl-C)

    def reason_unknown(self) -> str:
        return "canceled" if self.cut else super().reason_unknown()

    def query(self, *formulas):
        self.cut = False
        _raise_if_interrupted()
        start = time.monotonic()
        try:
            r = super().query(*formulas)
        except z3.Z3Exception as e:  # Spacer reports a timeout as an error, not as unknown
            if "canceled" not in str(e):
                raise
            self.cut = True
            r = z3.unknown
        _raise_if_cut_short(self, r, start)
        return r


def new_fixedpoint(timeout: float | None = DEFAULT_TIMEOUT, ctx: z3.Context | None = None) -> z3.Fixedpoint:
    """A Spacer (PDR/IC3 over constrained Horn clauses) engine with a fixed seed and the
    given timeout per query. Its rule transformations stay off: they would inline and
    slice the one relation away, and with it the derivation a counterexample is read from."""
    _configure()
    _watch(ctx)
    fp = z3.Fixedpoint(ctx=ctx)
    fp.__class__ = _Fixedpoint
    fp.set("engine", "spacer")
    fp.set("spacer.random_seed", SEED)
    fp.set("ctrl_c", False)
    for name in ("xform.slice", "xform.inline_linear", "xform.inline_eager"):
        fp.set(name, False)
    fp.budget = timeout
    if timeout is not None:
        fp.set("timeout", max(1, int(timeout * 1000)))
    return fp


def why_unknown(s: z3.Solver | z3.Fixedpoint) -> str:
    reason = s.reason_unknown()
    if reason in ("timeout", "canceled"):
        return "the solver timed out (raise --timeout)"
    return f"the solver gave up ({reason})"


#: why a `sat` whose model falsifies the query is answered as unknown
CUT_OFF_MODEL = "the solver was interrupted while building its model (raise --timeout)"


def checked(s: z3.Solver):
    """`s.check()`, with a `sat` whose model falsifies an assertion (the solver was
    interrupted before the model was complete) answered as `unknown`. Returns the
    answer, the model (for sat) and why the answer is unknown (or "")."""
    r = s.check()
    if r == z3.unknown:
        return r, None, why_unknown(s)
    if r != z3.sat:
        return r, None, ""
    model = s.model()
    held = s.assertions()
    # one evaluation of their conjunction: one at a time costs a Python round trip each,
    # which dominates when Houdini holds thousands of assertions
    if not len(held) or z3.is_true(model.eval(z3.And(*held) if len(held) > 1 else held[0], model_completion=True)):
        return r, model, ""
    return z3.unknown, None, CUT_OFF_MODEL
