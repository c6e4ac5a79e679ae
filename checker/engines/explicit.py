"""The explicit engine: breadth-first search over the product of all processes.

States are tuples of small ints, stored once in insertion order; because the search is
breadth-first, that order is the queue, and the parent links give a shortest trace to
every state. All invariants, assertions and the deadlock check are evaluated in one
pass; each property keeps the first (hence shortest) counterexample found for it.

On request (`graph=True`) the search also keeps every transition with the process
instance that took it, and which instances could move in each state: the liveness
engine (engines/liveness.py) works on that graph instead of searching a second time.

Under tso, store-buffer flushes are steps like any other: their table is indexed by the
buffer's oldest address slot instead of a pc. `final` conditions are checked in final
states (every process at a valid end, every buffer empty), which are also counted.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field

from .. import model as m
from ..compile import AssertionViolation, CompiledFlush, CompiledModel, CompiledStep, ModelError, StoreBufferFull
from ..progress import Progress
from ..trace import (MEMORY, Action, Counterexample, StateDecoder, StateSpace, Stats, Trace, changes,
                     show_value)


@dataclass(frozen=True, slots=True)
class Limits:
    max_states: int | None = None
    max_depth: int | None = None
    check_deadlock: bool = True


@dataclass(frozen=True, slots=True)
class StateGraph:
    """The explored state graph, in compact arrays (states are numbered in BFS order).

    Only states[:expanded] had every step tried: their `enabled` masks are exact and
    their edges complete, except that a state at the depth limit has no edges to the
    new states it would have reached. Edges of state i are dst/step[first[i]:first[i+1]].
    """

    states: list[tuple]
    initial: int  # states[:initial] are the initial states
    expanded: int
    first: array  # len expanded + 1
    dst: array  # target state of each edge
    step: array  # index into `steps` of each edge
    steps: tuple[CompiledStep, ...]
    enabled: array  # per expanded state: bit `gid` set iff that instance has an enabled step

    def edges(self, i: int):
        """(target, CompiledStep) for each transition out of expanded state i."""
        dst, step, steps = self.dst, self.step, self.steps
        return [(dst[k], steps[step[k]]) for k in range(self.first[i], self.first[i + 1])]


@dataclass
class Exploration:
    """What a search found: statistics, and per property the shortest counterexample."""

    stats: Stats
    counterexamples: dict[str, Counterexample] = field(default_factory=dict)
    model_error: Counterexample | None = None
    graph: StateGraph | None = None


def decoder_for(cm: CompiledModel) -> StateDecoder:
    return StateDecoder(cm.layout, {inst.name: inst.process.pc_names for inst in cm.instances})


class TraceBuilder:
    """Rebuilds decoded traces from state tuples and the compiled steps between them."""

    def __init__(self, cm: CompiledModel):
        self.cm = cm
        self.decoder = decoder_for(cm)
        self.by_gid = {inst.gid: inst for inst in cm.instances}

    def action(self, step: CompiledStep | CompiledFlush, before, after, kind: str = "step") -> Action:
        if isinstance(step, CompiledFlush):
            return self.flush_action(step, before, after)
        inst = self.by_gid[step.gid]
        pcs = inst.process.pc_names
        b = self.decoder.decode(before)
        pc_to = pcs[after[inst.pc_slot]] if after is not None else pcs[before[inst.pc_slot]]
        ch = changes(b, self.decoder.decode(after)) if after is not None else ()
        return Action(inst.name, step.step.span, step.step.text, pcs[before[inst.pc_slot]], pc_to,
                      ch, kind, step.step.inline)

    def flush_action(self, flush: CompiledFlush, before, after) -> Action:
        """A flush is shown as the `memory` moving: which CPU's store became visible."""
        b = self.decoder.decode(before)
        location, value = b.get(flush.buffer.name)[0]
        ch = changes(b, self.decoder.decode(after))
        text = f"flush {flush.buffer.cpu}: {location} = {show_value(value)}"
        return Action(MEMORY, None, text, "", "", ch, "flush", None)

    def trace(self, states: list[tuple], steps: list[CompiledStep], loop_start: int | None = None,
              failure: tuple[CompiledStep, tuple] | None = None) -> Trace:
        decoded = tuple(self.decoder.decode(s) for s in states)
        actions = tuple(self.action(st, states[i], states[i + 1]) for i, st in enumerate(steps))
        fail = self.action(failure[0], failure[1], None, "failed") if failure else None
        return Trace(decoded, actions, loop_start, fail)


def state_space(cm: CompiledModel, graph: StateGraph, complete: bool = True) -> StateSpace:
    """The kept graph decoded for exporters (DOT's whole-graph drawing): every state and
    every transition with the step that took it. `complete`: the search was not cut short."""
    builder = TraceBuilder(cm)
    edges = tuple((i, j, builder.action(cs, graph.states[i], graph.states[j]))
                  for i in range(graph.expanded) for j, cs in graph.edges(i))
    return StateSpace(tuple(builder.decoder.decode(st) for st in graph.states), tuple(range(graph.initial)),
                      edges, complete and graph.expanded == len(graph.states))


def explore(cm: CompiledModel, limits: Limits = Limits(), progress: Progress | None = None,
            graph: bool = False) -> Exploration:
    start = time.monotonic()
    instances = cm.instances
    invariants = list(cm.invariants)
    active = list(invariants)
    states: list[tuple] = []
    index: dict[tuple, int] = {}
    parent: list[int] = []
    via: list[CompiledStep | None] = []
    depth: list[int] = []
    found: dict[str, tuple[int, CompiledStep | None, str, str]] = {}
    model_error: tuple[int, CompiledStep, str] | None = None
    for s in cm.program.initial_states:
        if s not in index:
            index[s] = len(states)
            states.append(s)
            parent.append(-1)
            via.append(None)
            depth.append(0)
    transitions = 0
    limit: str | None = None
    max_depth_seen = 0
    deadlock_wanted = limits.check_deadlock
    end_sets = [(inst.pc_slot, inst.end_pcs) for inst in instances]
    tables = [(inst.pc_slot, inst.steps_at) for inst in instances]
    # the graph, when kept: edges grouped by source state, in the order states are expanded
    # a flush is its own actor for fairness: its gid follows the instances' (CompiledFlush)
    all_steps = tuple({id(cs): cs for inst in instances for at in inst.steps_at for cs in at}.values()) \
        + tuple(cm.flushes)
    step_no = {id(cs): k for k, cs in enumerate(all_steps)}
    first, dst, step, enabled = array("l", [0]), array("l"), array("l"), array("q")
    n_initial = len(states)
    tables += [(f.slot, f.steps_at) for f in cm.flushes]
    final_state = cm.final_state
    finals = list(cm.finals)
    final_count = 0
    buffer_full = 0  # states in which a store waited for a full store buffer
    i = 0
    try:
        while i < len(states):
            s = states[i]
            d = depth[i]
            if d > max_depth_seen:
                max_depth_seen = d
            for inv in list(active):
                try:
                    ok = inv.fn(s)
                except ModelError as e:
                    model_error = (i, None, f"evaluating invariant {inv.property.name}: {e}")
                    raise _Stop from None
                if not ok:
                    found[inv.property.name] = (i, None, m.PropertyKind.INVARIANT.value,
                                                f"invariant {inv.property.name} is violated")
                    active.remove(inv)
            if final_state is not None and final_state(s):
                final_count += 1
                for fin in list(finals):
                    try:
                        ok = fin.fn(s)
                    except ModelError as e:
                        model_error = (i, None, f"evaluating final condition {fin.property.name}: {e}")
                        raise _Stop from None
                    if not ok:
                        found[fin.property.name] = (i, None, m.PropertyKind.FINAL.value,
                                                    f"final condition {fin.property.name} is violated in a final state")
                        finals.remove(fin)
            at_limit = limits.max_depth is not None and d >= limits.max_depth
            moved = False
            can_move = 0
            full = False
            for pc_slot, steps_at in tables:
                for cs in steps_at[s[pc_slot]]:
                    try:
                        r = cs.fn(s)
                    except AssertionViolation as a:
                        moved = True
                        can_move |= 1 << cs.gid
                        if a.property not in found:
                            found[a.property] = (i, cs, m.PropertyKind.ASSERT.value,
                                                 f"assertion {a.property} failed")
                        continue
                    except StoreBufferFull:
                        full = True  # disabled until a flush makes room
                        continue
                    except ModelError as e:
                        model_error = (i, cs, str(e))
                        raise _Stop from None
                    if r is None:
                        continue
                    moved = True
                    can_move |= 1 << cs.gid
                    transitions += 1
                    t = tuple(r)
                    j = index.get(t)
                    if j is None:
                        if at_limit:
                            limit = "max-depth"
                            continue
                        j = index[t] = len(states)
                        states.append(t)
                        parent.append(i)
                        via.append(cs)
                        depth.append(d + 1)
                    if graph:
                        dst.append(j)
                        step.append(step_no[id(cs)])
            if full:
                buffer_full += 1
            if not moved and deadlock_wanted and "deadlock" not in found:
                if not all(s[slot] in ends for slot, ends in end_sets):
                    found["deadlock"] = (i, None, m.PropertyKind.DEADLOCK.value, _stuck_message(cm, s))
            if graph:
                first.append(len(dst))
                enabled.append(can_move)
            i += 1
            if progress is not None and i & 1023 == 0:
                progress.tick(len(states), len(states) - i, d)
            if limits.max_states is not None and len(states) >= limits.max_states and i < len(states):
                limit = "max-states"
                break
    except _Stop:
        limit = "model error"
    except KeyboardInterrupt:
        limit = "interrupted"
    if progress is not None:
        progress.done()
    seconds = time.monotonic() - start
    builder = TraceBuilder(cm)

    def path(k: int) -> tuple[list[tuple], list[CompiledStep]]:
        ss, st = [], []
        while k >= 0:
            ss.append(states[k])
            if via[k] is not None:
                st.append(via[k])
            k = parent[k]
        return ss[::-1], st[::-1]

    result = Exploration(Stats(len(states), transitions, max_depth_seen, seconds, limit is None, limit,
                               final_states=final_count if final_state is not None else None,
                               buffer_full_states=buffer_full))
    if graph:
        # a search stopped inside state i (model error, interrupt) left it half expanded
        expanded = len(enabled)
        del dst[first[expanded]:], step[first[expanded]:]
        result.graph = StateGraph(states, n_initial, expanded, first, dst, step, all_steps, enabled)
    for name, (k, cs, kind, msg) in found.items():
        ss, st = path(k)
        failure = (cs, states[k]) if cs is not None else None
        result.counterexamples[name] = Counterexample(name, kind, msg, builder.trace(ss, st, failure=failure))
    if model_error is not None:
        k, cs, msg = model_error
        ss, st = path(k)
        failure = (cs, states[k]) if cs is not None else None
        result.model_error = Counterexample("model error", "model error", msg,
                                            builder.trace(ss, st, failure=failure))
    return result


class _Stop(Exception):
    pass


def _stuck_message(cm: CompiledModel, s: tuple) -> str:
    stuck = [f"{inst.name} at {inst.process.pc_names[s[inst.pc_slot]]}"
             for inst in cm.instances if s[inst.pc_slot] not in inst.end_pcs]
    return "deadlock: no process can move; not at a valid end: " + ", ".join(stuck)
