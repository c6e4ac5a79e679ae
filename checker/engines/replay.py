"""Replay: re-execute a saved counterexample against a (possibly edited) model, with the
compiled step functions, and say whether it still reaches the violation or at which
step and why it no longer applies. This is how a reviewer checks that a new version of
a patch closes the race found in the old one.

Matching is by what the trace records, so that an edited model still lines up (and a
step is shown at its statement's line in the edited file, not the recorded one):
- a state matches when every variable present in both the trace and the model has
  the recorded value, and every process recorded at a named label (not an unnamed
  `lineN` place, whose name moves with the text) is at that label;
- a recorded step of process P is matched by one step of P that reaches a matching
  state, possibly after up to MAX_EXTRA steps of P that change no recorded variable
  (a barrier or branch the patch added);
- a recorded step that changed no recorded variable and has no counterpart is skipped.
Several model states can match one recorded state (variables the trace does not know);
all are followed, up to MAX_FRONTIER, beyond which the replay says it cannot decide.

At the end the violation itself is re-checked on the model: the invariant is false, the
assert fails, no process can move, the model error recurs, or (for a lasso) the loop
closes, is fair, and the goal never holds in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import model as m
from ..backends.python import (AssertionViolation, CompiledFlush, CompiledInstance, CompiledModel, CompiledStep,
                               ModelError, StoreBufferFull)
from ..base.errors import Span, SpecError
from ..ir import TASK_STATES, SlotKind, StepKind
from ..results.trace import (MEMORY, Action, Buffered, Counterexample, Members, ReplayResult, ReplayStatus, ReplayStep,
                             Trace, TraceState, Value, show_value)
from .explicit import TraceBuilder

MAX_EXTRA = 8
MAX_FRONTIER = 1000
MAX_NESTING = 16  # arrays of arrays in a recorded value; deeper is no trace of ours
_UNNAMED = re.compile(r"line\d+(_\d+)?|end_\d+")


def _norm(v: Value):
    if isinstance(v, Members):
        return frozenset(_norm(x) for x in v)
    if isinstance(v, tuple):
        return tuple(_norm(x) for x in v)
    return v


@dataclass(frozen=True)
class _Memory:
    """Under tso, the `memory` actor of a trace: its steps are the store-buffer flushes."""

    name: str
    flushes: tuple[CompiledFlush, ...]


def _what(cs) -> tuple[str, int | None]:
    """A step's statement and line (a flush has no line of its own)."""
    if isinstance(cs, CompiledFlush):
        return f"flush {cs.buffer.cpu}", None
    return cs.step.text, cs.step.span.line


def _where(cs) -> str:
    text, line = _what(cs)
    return f"`{text}`" + (f" (line {line})" if line else "")


# ---- what a trace file may hold --------------------------------------------------


class TraceShapeError(ValueError):
    """A trace read from a file holds something no trace of ours does (a statement that
    is a number, a process that is a record, too few states for its steps)."""


def malformed(cx: Counterexample) -> None:
    """Raises TraceShapeError unless `cx`, read from a file, has the shape of a trace this
    checker writes, so that replaying it can fail only on the model."""
    for name in ("property", "kind", "message", "engine"):
        _want(isinstance(getattr(cx, name), str), f"the counterexample's {name} is not text")
    t = cx.trace
    _want(isinstance(t, Trace) and isinstance(t.states, tuple) and isinstance(t.actions, tuple), "no trace")
    _want(len(t.states) >= 1, "the trace has no state")
    _want(len(t.states) == len(t.actions) + 1,
          f"the trace has {len(t.states)} states for {len(t.actions)} steps (one more state than steps)")
    _want(t.loop_start is None or (_is_int(t.loop_start) and 0 <= t.loop_start <= len(t.actions)),
          f"its loop start {t.loop_start!r} is no state of the trace")
    for i, st in enumerate(t.states):
        for k, v in _pairs(st.values, f"state {i}'s variables"):
            _value(v, f"state {i}: {k}", 0)
        for k, v in _pairs(st.pcs, f"state {i}'s program counters"):
            _want(isinstance(v, str), f"state {i}: the label of {k} is not text")
    for i, a in enumerate(t.actions, 1):
        _action(a, f"step {i}")
    if t.failure is not None:
        _action(t.failure, "the failing step")


def _want(ok: bool, problem: str) -> None:
    if not ok:
        raise TraceShapeError(problem)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _pairs(items, what: str):
    _want(isinstance(items, tuple) and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str)
                                           for p in items), f"{what} are not a record of names")
    return items


def _value(v, where: str, depth: int) -> None:
    _want(depth <= MAX_NESTING, f"{where}: the value nests more than {MAX_NESTING} deep")
    if isinstance(v, (bool, int, str)):
        return
    if isinstance(v, Buffered):
        for p in v:
            _want(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str),
                  f"{where}: a store-buffer entry is not (location, value)")
            _value(p[1], where, depth + 1)
        return
    _want(isinstance(v, tuple), f"{where}: {type(v).__name__} is not a value of a model variable")
    for x in v:
        _value(x, where, depth + 1)


def _action(a, where: str) -> None:
    _want(isinstance(a, Action), f"{where} is not a step")
    for name, said in (("process", "process"), ("text", "statement"), ("pc_from", "label"),
                       ("pc_to", "next label"), ("kind", "kind")):
        _want(isinstance(getattr(a, name), str), f"{where}: its {said} is not text")
    _want(a.inline is None or isinstance(a.inline, str), f"{where}: its inline is not text")
    if a.span is not None:
        sp = a.span
        _want(isinstance(sp.file, str) and all(_is_int(x) or x is None
                                               for x in (sp.line, sp.col, sp.end_line, sp.end_col)),
              f"{where}: its file and line are not a name and numbers")
    for k, v in _pairs(a.changes, f"{where}'s changes"):
        _value(v, f"{where}: {k}", 0)


def _fits(v, sl, names: tuple[str, ...]) -> str | None:
    """Why `v` is no value of the slot `sl`, or None."""
    t = sl.type
    if sl.kind is SlotKind.TASK:
        return None if isinstance(v, str) and v in TASK_STATES else "a task state: " + ", ".join(TASK_STATES)
    if isinstance(t, m.BoolT):
        return None if isinstance(v, bool) else "bool"
    if isinstance(t, m.EnumT):
        return None if isinstance(v, str) and v in t.members else f"{t.name}: " + ", ".join(t.members)
    if isinstance(t, m.BitsetT):
        members = t.elem.members if t.elem else range(t.size)
        ok = isinstance(v, Members) and all((isinstance(x, str) if t.elem else _is_int(x)) and x in members
                                            for x in v)
        return None if ok else t.describe()
    if isinstance(t, m.WaitQueueT):
        return None if isinstance(v, Members) and all(isinstance(x, str) and x in names for x in v) \
            else "a wait queue of " + ", ".join(names)
    if isinstance(t, m.IntT):
        if not _is_int(v):
            return t.describe()
        return None if t.lo is None or t.lo <= v <= t.hi else t.describe()
    if isinstance(t, m.BitVecT):
        lo = -t.half if t.signed else 0
        return None if _is_int(v) and lo <= v < lo + (1 << t.width) else t.describe()
    return None


def misfit(cm: CompiledModel, cx: Counterexample) -> str | None:
    """The first recorded value that no state of this model can hold (`mode = false` for
    an enum, 7 for a 0..2): such a trace is not one of this model, whatever it shows."""
    layout = cm.program.layout
    names = layout.instance_names
    groups = dict(TraceBuilder(cm).decoder.groups)
    for i, st in enumerate(cx.trace.states):
        for k, v in st.values:
            slots = groups.get(k)
            if slots is None:
                continue
            first = layout.slots[slots[0]]
            if first.kind is SlotKind.BUFFER:
                ok = isinstance(v, tuple) and not isinstance(v, Members) and len(v) <= len(slots) // 2 and \
                    all(isinstance(p, tuple) and len(p) == 2 for p in v)  # ITF reads an empty buffer as []
                why = None if ok else f"a store buffer of at most {len(slots) // 2} stores"
            elif first.element is None:
                why = _fits(v, first, names)
            elif not isinstance(v, tuple) or isinstance(v, Members) or len(v) != len(slots):
                why = f"an array of {len(slots)}"
            else:
                why = next((w for x, j in zip(v, slots) if (w := _fits(x, layout.slots[j], names))), None)
                why = why and f"an array of {why}"
            if why is not None:
                shown = show_value(v)
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                return f"state {i}: {k} = {shown}, but {k} here is {why}"
    return None


@dataclass
class _Path:
    state: tuple  # the model state now
    history: tuple[tuple, ...]  # the model state matched to each recorded state so far


class Replayer:
    def __init__(self, cm: CompiledModel, cx: Counterexample):
        self.cm = cm
        self.cx = cx
        self.builder = TraceBuilder(cm)
        self.decoder = self.builder.decoder
        self.by_name: dict = {inst.name: inst for inst in cm.instances}
        if cm.flushes:
            self.by_name[MEMORY] = _Memory(MEMORY, tuple(cm.flushes))
        recorded = cx.trace.states[0]
        model_vars = [name for name, _ in self.decoder.groups]
        rec_vars = [k for k, _ in recorded.values]
        self.common = [k for k in rec_vars if k in model_vars]
        self.notes: list[str] = []
        only_trace = [k for k in rec_vars if k not in model_vars]
        only_model = [k for k in model_vars if k not in rec_vars]
        if only_trace:
            self.notes.append("not in this model, so not compared: " + ", ".join(only_trace))
        if only_model:
            self.notes.append("new in this model, free to take any value: " + ", ".join(only_model))

    def undeclared(self) -> tuple[str, int, Action] | None:
        """The first variable a recorded step sets that this model does not have, with
        the step: such a trace cannot be followed (the step's effect is lost), and
        reading it as reproducing would hide a rename. A store-buffer column is not a
        variable (a trace recorded under tso replays under sc)."""
        model_vars = {name for name, _ in self.decoder.groups}
        for n, a in enumerate(self.cx.trace.actions, 1):
            for k, v in a.changes:
                if k not in model_vars and not isinstance(v, Buffered):
                    return k, n, a
        return None

    def line_now(self, a: Action) -> int | None:
        """The line of a recorded statement in this model, found by what it is (its
        process and text, at its label when it had a named one), not by the recorded
        line: None when the model has no such statement or several."""
        inst = self.by_name.get(a.process)
        if not isinstance(inst, CompiledInstance):
            return None
        steps = [(pc, cs) for pc, table in enumerate(inst.steps_at) for cs in table
                 if cs.step.text == a.text and cs.step.span]
        at = None if _UNNAMED.fullmatch(a.pc_from) else inst.process.label_pcs.get(a.pc_from)
        if at is not None:
            steps = [(pc, cs) for pc, cs in steps if pc in at] or steps
        lines = {cs.step.span.line for _, cs in steps}
        return lines.pop() if len(lines) == 1 else None

    # -- matching
    def view(self, st: TraceState) -> dict:
        values = dict(st.values)
        return {k: _norm(values[k]) for k in self.common if k in values}

    def labels_ok(self, state: tuple, rec: TraceState) -> bool:
        for inst_name, label in rec.pcs:
            inst = self.by_name.get(inst_name)
            if not isinstance(inst, CompiledInstance) or _UNNAMED.fullmatch(label):
                continue
            pcs = inst.process.label_pcs.get(label)
            if pcs is not None and state[inst.pc_slot] not in pcs:
                return False
        return True

    def matches(self, state: tuple, rec: TraceState) -> bool:
        return self.view(self.decoder.decode(state)) == self.view(rec) and self.labels_ok(state, rec)

    def same_recorded(self, a: tuple, b: tuple) -> bool:
        return self.view(self.decoder.decode(a)) == self.view(self.decoder.decode(b))

    # -- running one process
    def steps_of(self, inst, state: tuple) -> tuple:
        if isinstance(inst, _Memory):
            return tuple(f for cf in inst.flushes for f in cf.steps_at[state[cf.slot]])
        return inst.steps_at[state[inst.pc_slot]]

    def actors(self) -> list:
        return list(self.by_name.values())

    def advance(self, inst: CompiledInstance, state: tuple, target: TraceState):
        """Runs of `inst` from `state` reaching `target`: (new state, extra steps, step),
        with the fewest extra steps first."""
        level: list[tuple[tuple, tuple]] = [(state, ())]  # (state, the extra steps that led there)
        seen = {state}
        for _ in range(MAX_EXTRA + 1):
            found, nxt = [], []
            for s, extra in level:
                for cs in self.steps_of(inst, s):
                    try:
                        r = cs.fn(s)
                    except (AssertionViolation, ModelError):
                        continue
                    except StoreBufferFull:  # tso / lkmm: the step waits for room; disabled here
                        continue
                    if r is None:
                        continue
                    r = tuple(r)
                    if self.matches(r, target):
                        found.append((r, extra + ((s, cs),), cs))
                    elif r not in seen and self.same_recorded(s, r):
                        seen.add(r)
                        nxt.append((r, extra + ((s, cs),)))
            if found:
                return found
            level = nxt
            if not level:
                break
        return []

    def failing_run(self, inst: CompiledInstance, state: tuple, want):
        """A run of `inst` (extra no-op steps, then one step) whose last step raises what
        `want(exception)` accepts: (extra steps, the failing step, the exception)."""
        level: list[tuple[tuple, tuple]] = [(state, ())]  # (state, the extra steps that led there)
        seen = {state}
        for _ in range(MAX_EXTRA + 1):
            nxt = []
            for s, extra in level:
                for cs in self.steps_of(inst, s):
                    try:
                        r = cs.fn(s)
                    except StoreBufferFull:
                        continue
                    except (AssertionViolation, ModelError) as e:
                        if want(e):
                            return extra, (s, cs), e
                        continue
                    if r is None:
                        continue
                    r = tuple(r)
                    if r not in seen and self.same_recorded(s, r):
                        seen.add(r)
                        nxt.append((r, extra + ((s, cs),)))
            level = nxt
            if not level:
                break
        return None

    def action(self, before: tuple, cs: CompiledStep) -> Action:
        try:
            after = cs.fn(before)
        except (AssertionViolation, ModelError):
            after = None
        return self.builder.action(cs, before, tuple(after) if after is not None else None)

    # -- explaining a divergence
    def explain(self, n: int, a: Action, state: tuple, target: TraceState) -> str:
        now = self.line_now(a)
        where = f" at line {now}" if now else (f" (line {a.span.line} when recorded)" if a.span else "")
        head = f"step {n}: {a.process}{where} `{a.text}`: "
        inst = self.by_name.get(a.process)
        if inst is None:
            return head + f"this model has no process {a.process}"
        steps = self.steps_of(inst, state)
        if not steps:
            if isinstance(inst, _Memory):
                return head + "no store is buffered here, so there is nothing to flush"
            return head + f"{a.process} has already finished here (at {inst.process.pc_names[state[inst.pc_slot]]})"
        wanted = ", ".join(f"{k} = {show_value(v)}" for k, v in a.changes if k in self.common)
        options = []
        for cs in steps:
            where = _where(cs)
            try:
                r = cs.fn(state)
            except AssertionViolation as e:
                options.append(f"{where} fails assert {e.property}")
                continue
            except ModelError as e:
                options.append(f"{where} stops with a model error: {e}")
                continue
            if r is None:
                asleep = isinstance(cs, CompiledStep) and cs.step.kind is StepKind.SCHEDULE
                options.append(f"{a.process} {'is asleep in' if asleep else 'waits at'} {where}, which is not enabled")
                continue
            got = self.builder.action(cs, state, tuple(r)).changes
            shown = ", ".join(f"{k} = {show_value(v)}" for k, v in got if k in self.common) or "no recorded variable"
            options.append(f"{a.process} can only run {where}, which changes {shown}")
        return (head + f"no enabled step of {a.process} leads to the recorded state"
                + (f" (the trace's step set {wanted})" if wanted else "") + "; here " + "; or ".join(options))


def replay(cm: CompiledModel, cx: Counterexample, trace_file: str, recorded_variant: str,
           expected_violation: bool) -> ReplayResult:
    problem = misfit(cm, cx)
    if problem is not None:
        raise SpecError(Span(trace_file, 0, 0, 0, 0), f"{trace_file} does not fit this model: {problem}",
                        "a trace replays against the model it was recorded on or an edited version of it; "
                        "was it written for another model, or edited by hand?")
    rp = Replayer(cm, cx)
    gone = rp.undeclared()
    if gone is not None:
        name, n, a = gone
        raise SpecError(Span(trace_file, 0, 0, 0, 0),
                        f"{trace_file} does not replay here: the trace sets `{name}`, which this model does not "
                        f"declare (step {n}, {a.process} `{a.text}`)",
                        f"a renamed variable? rename `{name}` in the trace file too, or replay it against the "
                        "model it was recorded on; a step cannot be matched without the value it wrote")
    t = cx.trace
    variant = cm.program.model.variant

    def result(reproduced: bool, reason: str, steps, at: int | None = None, inconclusive: bool = False):
        return ReplayResult(trace_file, recorded_variant, cx.property, cx.kind, t.length, variant, tuple(steps),
                            reproduced, reason, at, expected_violation, inconclusive, tuple(rp.notes))

    frontier = [_Path(s, (s,)) for s in cm.program.initial_states if rp.matches(s, t.states[0])]
    if not frontier:
        init = rp.decoder.decode(cm.program.initial_states[0])
        rec, now = rp.view(t.states[0]), rp.view(init)
        diff = [f"{k} is {show_value(rec[k])} in the trace, {show_value(now[k])} here"
                for k in rp.common if rec.get(k) != now.get(k)]
        return result(False, "the initial state differs: " + ("; ".join(diff) or "a process starts at another label"),
                      [], 0)
    return _follow(rp, cx, 1, frontier, [], result)


def _follow(rp: Replayer, cx: Counterexample, start: int, frontier: list[_Path], steps: list[ReplayStep],
            result) -> ReplayResult:
    """Replays the recorded steps from `start` on. A step that changed nothing the trace
    records and has no counterpart is tried as skipped; if the rest then does not
    reproduce, the replay diverges at that step."""
    t = cx.trace
    for n in range(start, t.length + 1):
        a = t.actions[n - 1]
        target = t.states[n]
        inst = rp.by_name.get(a.process)
        nxt: list[_Path] = []
        first_run = None
        if inst is not None:
            for p in frontier:
                for state, extra, _ in rp.advance(inst, p.state, target):
                    if first_run is None:
                        first_run = extra
                    nxt.append(_Path(state, p.history + (state,)))
        if not nxt:
            reason = rp.explain(n, a, frontier[0].state, target)
            if rp.view(t.states[n - 1]) == rp.view(target):
                skipped = [_Path(p.state, p.history + (p.state,)) for p in frontier]
                note = "no counterpart here; it changed nothing the trace records, so it is left out"
                rest = _follow(rp, cx, n + 1, skipped,
                               steps + [ReplayStep(n, a, ReplayStatus.SKIPPED, (), note, rp.line_now(a))], result)
                if rest.reproduced or rest.inconclusive:
                    return rest
            return result(False, reason, steps + [ReplayStep(n, a, ReplayStatus.DIVERGED, (), reason, rp.line_now(a))],
                          n)
        nxt = _dedupe(nxt)
        if len(nxt) > MAX_FRONTIER:
            return result(False, f"step {n}: more than {MAX_FRONTIER} model states match the trace here; "
                                 "the replay cannot follow them all", steps, n, inconclusive=True)
        assert first_run is not None  # (a path advanced: nxt is not empty)
        ran = tuple(rp.action(s, cs) for s, cs in first_run)
        line = ran[-1].span.line if ran[-1].span else None  # where the step that ran is written now
        if len(ran) == 1 and ran[0].text == a.text:
            steps = steps + [ReplayStep(n, a, ReplayStatus.OK, line=line)]
        else:
            said = []
            if len(ran) > 1:
                said.append(f"{len(ran) - 1} extra step{'s' if len(ran) > 2 else ''} of {a.process} first: "
                            + ", ".join(f"`{x.text}`" for x in ran[:-1]))
            if ran[-1].text != a.text:
                said.append(f"now `{ran[-1].text}`" + (f" (line {ran[-1].span.line})" if ran[-1].span else ""))
            steps = steps + [ReplayStep(n, a, ReplayStatus.CHANGED, ran, "; ".join(said), line)]
        frontier = nxt
    reproduced, reason = _final_check(rp, cx, frontier)
    return result(reproduced, reason, steps, None if reproduced else t.length + 1)


def _dedupe(paths: list[_Path]) -> list[_Path]:
    seen, out = set(), []
    for p in paths:
        if p.state not in seen:
            seen.add(p.state)
            out.append(p)
    return out


def _final_check(rp: Replayer, cx: Counterexample, frontier: list[_Path]) -> tuple[bool, str]:
    """Whether the replayed run still shows the violation, and what it shows."""
    cm, t, prop = rp.cm, cx.trace, cx.property
    n = t.length
    if cx.kind == "invariant":
        inv = next((c for c in cm.invariants if c.property.name == prop), None)
        if inv is None:
            return False, f"every step replays, but this model has no invariant {prop}"
        for p in frontier:
            try:
                if not inv.fn(p.state):
                    return True, f"every step replays and invariant {prop} is still violated in the last state"
            except ModelError as e:
                return True, f"every step replays and evaluating invariant {prop} now stops with a model error: {e}"
        return False, (f"every step replays, but invariant {prop} holds in the last state: "
                       "this run no longer breaks it")
    if cx.kind == "final":
        fin = next((c for c in cm.finals if c.property.name == prop), None)
        if fin is None or cm.final_state is None:
            return False, f"every step replays, but this model has no final condition {prop}"
        for p in frontier:
            if cm.final_state(p.state) and not fin.fn(p.state):
                return True, f"every step replays and final condition {prop} is still violated in the last state"
        if not any(cm.final_state(p.state) for p in frontier):
            return False, "every step replays, but the last state is not final here (a process or a store buffer " \
                          "has more to do)"
        return False, f"every step replays, but final condition {prop} holds in the last state"
    if cx.kind in ("assert", "model error"):
        a = t.failure
        if a is None:
            return False, "the trace does not record which step failed"
        inst = rp.by_name.get(a.process)
        if inst is None:
            return False, f"the failing step's process {a.process} is not in this model"
        if cx.kind == "assert":
            def want(e):
                return isinstance(e, AssertionViolation) and e.property == prop
        else:
            def want(e):
                return isinstance(e, ModelError)
        for p in frontier:
            found = rp.failing_run(inst, p.state, want)
            if found is not None:
                extra, (s, cs), error = found
                what = f"assert {prop} still fails" if cx.kind == "assert" else f"the model error recurs: {error}"
                return True, f"every step replays and step {n + 1}, {_where(cs)}, {what}"
        reason = rp.explain(n + 1, a, frontier[0].state, t.states[-1])
        if cx.kind == "assert":
            return False, f"every step replays, but assert {prop} no longer fails: " + reason.split(": ", 1)[-1]
        return False, "every step replays, but the model error no longer occurs: " + reason.split(": ", 1)[-1]
    if cx.kind == "deadlock":
        for p in frontier:
            moving = _enabled(rp, p.state)
            if not moving:
                stuck = [inst.name for inst in cm.instances if p.state[inst.pc_slot] not in inst.end_pcs]
                if stuck:
                    return True, ("every step replays and the last state is still a deadlock: "
                                  + ", ".join(stuck) + " cannot move")
        p = frontier[0]
        moving = _enabled(rp, p.state)
        if moving:
            inst, cs = moving[0]
            return False, (f"every step replays, but the last state is no deadlock any more: {inst.name} can run "
                           f"{_where(cs)}")
        return False, "every step replays, but every process is at a valid end: this is no deadlock any more"
    if cx.kind == "liveness":
        return _check_lasso(rp, cx, frontier)
    return False, f"cannot re-check a violation of kind {cx.kind!r}"


def _enabled(rp: Replayer, state: tuple) -> list[tuple[CompiledInstance, CompiledStep]]:
    out = []
    for inst in rp.actors():
        for cs in rp.steps_of(inst, state):
            try:
                if cs.fn(state) is not None:
                    out.append((inst, cs))
            except StoreBufferFull:  # waits for room: not enabled
                pass
            except (AssertionViolation, ModelError):
                out.append((inst, cs))
    return out


def _check_lasso(rp: Replayer, cx: Counterexample, frontier: list[_Path]) -> tuple[bool, str]:
    """always (trigger -> eventually goal) fails on a lasso when the trigger holds at some
    point from which the goal never holds again, and the loop is fair: every weakly fair
    process that is enabled in every loop state takes a step in the loop."""
    t, prop = cx.trace, cx.property
    if t.loop_start is None:
        return False, "the trace of a liveness property has no loop"
    live = next((x for x in rp.cm.liveness if x[0].name == prop), None)
    if live is None:
        return False, f"this model has no property {prop}"
    _, trigger, goal = live
    for p in frontier:
        loop_head = p.history[t.loop_start]
        states = list(p.history)
        if p.state != loop_head:
            back = [cs for inst in rp.actors() for cs in rp.steps_of(inst, p.state)
                    if _safe_step(cs, p.state) == loop_head]
            if not back:
                continue
        loop_states = states[t.loop_start:]
        if any(goal(s) for s in loop_states):
            continue
        # some point where the trigger holds and the goal never holds again
        if not any((trigger is None or trigger(states[k])) and not any(goal(s) for s in states[k:])
                   for k in range(len(states))):
            continue
        movers = {a.process for a in t.actions[t.loop_start:]}
        unfair = [inst.name for inst in rp.cm.instances if not inst.process.unfair and inst.name not in movers
                  and all(_has_move(rp, inst, s) for s in loop_states)]
        if unfair:
            return False, ("every step replays and the loop closes, but it is not fair: "
                           + ", ".join(unfair) + " can always move and never does")
        return True, f"every step replays, the loop closes and {prop}'s goal never holds in it"
    return False, f"every step replays, but no replayed run closes a loop that keeps {prop} from holding"


def _safe_step(cs: CompiledStep, state: tuple):
    try:
        r = cs.fn(state)
    except (AssertionViolation, ModelError, StoreBufferFull):
        return None
    return tuple(r) if r is not None else None


def _has_move(rp: Replayer, inst: CompiledInstance, state: tuple) -> bool:
    return any(_safe_step(cs, state) is not None for cs in rp.steps_of(inst, state))
