"""The liveness engine: `always (P -> eventually Q)` and `always eventually Q` under
weak fairness, decided on the state graph the explicit engine keeps (`graph=True`).

Semantics, stated once because every verdict rests on it:

* A run is infinite. It may *stutter* (stay in a state): a run that reaches a state
  where nothing can move stays there forever, and so may a run in which only processes
  without fairness (`unfair process`) could move, since they may stall for ever.
* Under tso, every store buffer's flush is a weakly fair actor of its own: a buffered
  store becomes visible eventually, whether or not its CPU moves.
* Weak fairness per process instance (the default): a run in which an instance is
  enabled continuously from some point on must contain infinitely many of its steps.
  An instance is enabled in a state when one of its steps can run there (a sleeping
  task in `schedule()`, an unsatisfied `await` and a terminated process are disabled).
  Weak fairness of the process covers timers: an hrtimer process whose `await armed`
  stays true eventually fires.
* Fairness per action (`fair S`, `strongly fair S`): S's first step, per instance, is
  an action of its own. Weak: a run in which it is enabled continuously from some point
  on takes it infinitely often. Strong: a run in which it is enabled infinitely often
  takes it infinitely often. Its enabledness is evaluated on the state itself, whatever
  else the process could do there. A `stutter` step changes nothing: a process that
  takes it for ever satisfies its process's weak fairness, not a `fair` action's.
* `always (P -> eventually Q)` fails on a run with a state where P holds and from which
  Q never holds again (that state included); `always eventually Q` is the case P = true.

The check: keep the states reachable from a `P && !Q` state through `!Q` states only
(R), split R into strongly connected components, and keep the fair ones. A component C
is fair iff every fair instance either moves on an edge inside C or is disabled in some
state of C. This is exact for *weak* fairness: if C passes, the run that goes round all
of C's edges for ever (stuttering in between, which is allowed) is fair, since every
fair instance moves infinitely often or is infinitely often disabled; conversely the
states a fair run visits infinitely often lie inside one component, and the moves and
disabled states that make that run fair lie inside it too. Fair actions count like
instances. A strongly fair action that is enabled somewhere in C but taken nowhere in C
rules out every run that visits those states infinitely often: they are removed and
what is left is split into components again (the Streett refinement); weak fairness
needs no split. A single state with no edge inside R is a component too: it passes iff no fair instance can move there, which is
the stutter case above, including a deadlock or a terminated model.

A counterexample is a lasso: the shortest stem from an initial state through a
`P && !Q` state to a fair component (a 0-1 breadth-first search over "before P" and
"after P" copies of the graph), then a loop inside the component that takes a move of,
or visits a disabled state of, every fair instance, and returns to where it entered.
A stutter counterexample has an empty loop: the trace ends in the state the run keeps.

Where the native loop kept the graph, the marks, the components and the stem are
computed in C (backends/c.py's `_LIVENESS`, which follows `components`,
`fair_components` and `stem` step for step, for weak fairness of the actors; `fair`
actions, strong fairness and a goal or trigger that bails in C are judged here); the
loop and the trace are always built here. tests/test_native.py compares both.

Soundness: only states whose steps were all tried are used. When the search was cut
short, a lasso found among them is still a real run, so it is reported; finding none
proves nothing, and the verdict is "incomplete".
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterator, Sequence

from .. import model as m
from ..backends.python import (AssertionViolation, CompiledFlush, CompiledInstance, CompiledModel, CompiledStep,
                               ModelError, StoreBufferFull)
from ..base.errors import source_text
from ..ir import FairAction, StepKind
from ..results.trace import Counterexample, Stats, Verdict
from .explicit import Exploration, FairCycles, StateGraph, TraceBuilder, UnpackedStates
from ..base.record import record


def _after(n: int) -> str:
    """State n of a lasso in the trace's words: the state after step n."""
    return "in the initial state" if n == 0 else f"after step {n}"


@record
class LivenessOutcome:
    verdict: Verdict
    counterexample: Counterexample | None
    note: str
    relies_on: tuple[str, ...] = ()  # fair instances whose fairness a "holds" needs


def fair_mask(cm: CompiledModel) -> int:
    """Bit gid set for every fair actor: each instance of a process declared without
    `unfair`, and under tso each store buffer's flush (the memory system drains every
    buffer eventually, whatever its CPU does)."""
    mask = 0
    for inst in cm.instances:
        if not inst.process.unfair:
            mask |= 1 << inst.gid
    for f in cm.flushes:
        mask |= 1 << f.gid
    return mask


def fair_actions(cm: CompiledModel) -> list[tuple[CompiledInstance, FairAction]]:
    """(instance, FairAction) for every `fair` statement of every instance; in the
    liveness masks, action j is bit (number of actors + j)."""
    return [(inst, fa) for inst in cm.instances for fa in inst.process.fair_actions]


def actor_names(cm: CompiledModel) -> dict[int, str]:
    """gid -> how traces name the actor: the instance, or `memory (cpu)` for a flush."""
    names = {inst.gid: inst.name for inst in cm.instances}
    for f in cm.flushes:  # (under lkmm, one per CPU and location: named after both)
        names[f.gid] = f"memory ({f.buffer.cpu})" if cm.views is None else f.buffer.name
    return names


def check(cm: CompiledModel, exploration: Exploration) -> tuple[dict[str, LivenessOutcome], float]:
    """Every liveness property of the model, and the seconds spent on them."""
    start = time.monotonic()
    g = exploration.graph
    if g is None:
        raise ValueError("the liveness engine needs the explicit engine's graph (explore(graph=True))")
    complete = exploration.stats.complete
    analysis = _Graph(cm, g, exploration.native)
    out = {}
    for p, (prop, trigger, goal) in enumerate(cm.liveness_packed):  # on the graph's packed states
        out[prop.name] = analysis.check(p, prop, trigger, goal, complete, exploration.stats.limit)
    return out, time.monotonic() - start


class _Graph:
    """One variant's state graph, with what every property's check shares."""

    def __init__(self, cm: CompiledModel, g: StateGraph, native: FairCycles | None = None):
        self.cm = cm
        self.g = g
        self.n = g.expanded
        self.fair = fair_mask(cm)
        self.names = actor_names(cm)
        self._builder: TraceBuilder | None = None
        # fair actions: bits above the actors'; an edge sets its actor's bit and its action's
        base = len(cm.instances) + len(cm.flushes)
        self.actions = fair_actions(cm)
        self.strong = 0
        by_step: dict[tuple[int, int], int] = {}
        for j, (inst, fa) in enumerate(self.actions):
            bit = 1 << (base + j)
            self.fair |= bit
            if fa.strong:
                self.strong |= bit
            self.names[base + j] = f"{fa.describe()} ({inst.name})"
            for uid in fa.uids:
                by_step[(inst.gid, uid)] = by_step.get((inst.gid, uid), 0) | bit
        views = cm.views
        if views is not None and views.lazy:  # a lazy propagation is strongly fair (lkmm_machine.Machine.propagate)
            for f in cm.flushes:
                self.strong |= 1 << f.gid
        self.step_bits = [1 << cs.gid | by_step.get((cs.gid, getattr(getattr(cs, "step", None), "uid", -1)), 0)
                          for cs in g.steps]
        self._action_enabled: dict[int, int] = {}
        # the native loop's library, when it ran: the same check in C (backends/c.py's
        # _LIVENESS), for weak fairness of the actors; `fair` actions and strong fairness
        # are checked here
        self.native = native if native is not None and native.liveness == len(cm.liveness) and not self.actions \
            and not self.strong and self.fair >> 64 == 0 and _native_arrays(g) else None
        self.stepbits = array("Q", self.step_bits) if self.native is not None else array("Q")

    @property
    def builder(self) -> TraceBuilder:
        """Made for the first trace: a property that holds needs none."""
        if self._builder is None:
            self._builder = TraceBuilder(self.cm)
        return self._builder

    def en(self, u: int) -> int:
        """The actors and fair actions that could move in state u."""
        mask = self.g.enabled[u]
        if not self.actions:
            return mask
        got = self._action_enabled.get(u)
        if got is None:
            got = 0
            s = self.g.states[u]
            base = len(self.cm.instances) + len(self.cm.flushes)
            for j, (inst, fa) in enumerate(self.actions):
                if not mask >> inst.gid & 1:
                    continue  # none of its steps is enabled
                for cs in inst.steps_at[s[inst.pc_slot]]:
                    if cs.step.uid in fa.uids and runs(cs, s):
                        got |= 1 << (base + j)
                        break
            self._action_enabled[u] = got
        return mask | got

    def out(self, u: int) -> range:
        return range(self.g.first[u], self.g.first[u + 1])

    # -- one property
    def check(self, p: int, prop: m.Property, trigger, goal, complete: bool, limit: str | None) -> LivenessOutcome:
        """Property p (`cm.liveness_packed[p]`); in C where the library can, else here."""
        g, n, native = self.g, self.n, self.native
        packed = g.states.packed
        marks = native.live_marks(p, packed, n) if native is not None and isinstance(packed, array) else None
        if marks is None:
            return self.check_here(prop, trigger, goal, complete, limit)
        assert native is not None
        bad, seeds = marks
        if not seeds:  # P && !Q holds nowhere: no component to look for, no fairness needed
            return self.holds(0, complete, limit)
        comp, starved_by, fairs = native.fair_components(n, g.first, g.dst, g.step, g.enabled, self.stepbits,
                                                         self.fair, bad, seeds)
        if not fairs:
            return self.holds(starved_by, complete, limit)

        found, parent, edge = native.stem(n, g.initial, g.first, g.dst, seeds, comp)
        cx = self.lasso(prop, seeds, bad, found, parent, edge, lambda u: _Members(comp, comp[u]))
        return self.violated(cx, complete, limit)

    def check_here(self, prop: m.Property, trigger, goal, complete: bool, limit: str | None) -> LivenessOutcome:
        g, n = self.g, self.n
        states = g.states.packed
        bad = bytearray(n)
        seeds = []
        for u in range(n):
            try:
                bad[u] = not goal(states[u])
                if bad[u] and (trigger is None or trigger(states[u])):
                    seeds.append(u)
            except ModelError as e:
                msg = f"evaluating property {prop.name} went wrong: {e}"
                path_states, path_steps = self.path_to(u)
                trace = self.builder.trace([g.states[k] for k in path_states], path_steps)
                return LivenessOutcome(Verdict.ERROR, Counterexample(prop.name, "model error", msg, trace,
                                                                     engine="liveness"), msg)
        # R: reachable from a P && !Q state through !Q states (whose steps were all tried),
        # found by the component search itself, which starts from those states
        if not seeds:  # (as fair_components would find: no component, no fairness needed)
            return self.holds(0, complete, limit)
        comps, comp_of, starved_by, in_r = self.fair_components(seeds, bad)
        if all(c is None for c in comps):
            return self.holds(starved_by, complete, limit)
        found, parent, edge = self.stem(seeds, in_r, comp_of, comps)
        return self.violated(self.lasso(prop, seeds, bad, found, parent, edge, lambda u: comps[comp_of[u]]),
                             complete, limit)

    def holds(self, starved_by: int, complete: bool, limit: str | None) -> LivenessOutcome:
        """No fair component: the property holds, or nothing is proved when the search
        was cut short; `starved_by`: the fairness that made the components unfair."""
        names = self.instance_names(starved_by)
        if not complete:
            return LivenessOutcome(Verdict.INCOMPLETE, None,
                                   f"search cut short ({limit}): no fair cycle among the states explored", names)
        if starved_by:
            note = "holds under " + self.describe(starved_by)
        else:
            note = "holds without any fairness assumption"
        return LivenessOutcome(Verdict.HOLDS, None, note, names)

    @staticmethod
    def violated(cx: Counterexample, complete: bool, limit: str | None) -> LivenessOutcome:
        assert cx.trace.loop_start is not None  # a lasso
        note = (f"fair lasso: stem {cx.trace.loop_start} step(s), "
                f"loop {cx.trace.length - cx.trace.loop_start} step(s)")
        if not complete:
            note += f"; found before the search was cut short ({limit}), the stem may not be the shortest"
        return LivenessOutcome(Verdict.VIOLATED, cx, note)

    def fair_components(self, seeds: list[int], bad: bytearray):
        """SCCs of the graph restricted to R (the states reachable from `seeds` through
        `bad` states); the fair ones, who made the others unfair, and R as a mask.

        The components are found on the explicit engine's own arrays (`components`, an
        iterative Tarjan), with no copy of the graph. A search from the seeds through bad
        states visits R and nothing else, and a component of the bad states' graph that
        meets R lies inside it, so these are R's components.
        """
        n, dst, step, bits, fair, strong = self.n, self.g.dst, self.g.step, self.step_bits, self.fair, self.strong
        first = self.g.first
        comps: list[frozenset | None] = [None]  # 0: the states no fair run stays among
        comp_of: dict[int, int] = {}
        starved_by = 0
        todo = components(seeds, bad, first, dst, n)
        in_r = bytearray(n)
        for comp in todo:
            for u in comp:
                in_r[u] = 1
                comp_of[u] = 0
        en_of = self.en if self.actions else self.g.enabled.__getitem__
        inside = bytearray(n)  # the component at hand, as a mask
        while todo:
            comp = todo.pop()
            moved = disabled = somewhere = 0
            for u in comp:
                inside[u] = 1
            for u in comp:
                en = en_of(u)
                disabled |= fair & ~en
                somewhere |= en
                for k in range(first[u], first[u + 1]):
                    v = dst[k]
                    if v < n and inside[v]:
                        moved |= bits[step[k]]
            for u in comp:
                inside[u] = 0
            unmet = strong & somewhere & ~moved
            if unmet:  # a strongly fair action enabled here and never taken: drop where it is enabled
                starved_by |= unmet
                rest = [u for u in comp if not self.en(u) & unmet]
                todo.extend(components(rest, mask_of(rest, n), first, dst, n))
                continue
            starved = fair & ~strong & ~moved & ~disabled
            if starved:
                starved_by |= starved
            else:
                for u in comp:
                    comp_of[u] = len(comps)
                comps.append(frozenset(comp))
        return comps, comp_of, starved_by, in_r

    def describe(self, mask: int) -> str:
        """The fairness assumptions in `mask`, e.g. "weak fairness of vcpu and of the
        action at line 9 (vcpu); strong fairness of the action at line 12 (timer)"."""
        weak, strong = self.instance_names(mask & ~self.strong), self.instance_names(mask & self.strong)
        parts = []
        if weak:
            parts.append("weak fairness of " + ", ".join(weak))
        if strong:
            parts.append("strong fairness of " + ", ".join(strong))
        return "; ".join(parts)

    def instance_names(self, mask: int) -> tuple[str, ...]:
        return tuple(self.names[gid] for gid in sorted(self.names) if mask >> gid & 1)

    # -- the counterexample
    def lasso(self, prop: m.Property, seeds: Sequence[int], bad: Sequence[int], found: int, parent: array,
              edge: array, component: Callable[[int], Collection[int]]) -> Counterexample:
        """The lasso through the stem `stem` found (`found`, `parent`, `edge`) into the
        fair component `component(entry)`."""
        stem_states, stem_steps, trigger_at = self.stem_path(found, parent, edge)
        # name the earliest P-state of the stem after which Q never holds
        first_bad = trigger_at
        while first_bad > 0 and bad[stem_states[first_bad - 1]]:
            first_bad -= 1
        trigger_at = next(i for i in range(first_bad, trigger_at + 1) if _has(seeds, stem_states[i]))
        entry = stem_states[-1]
        loop_states, loop_steps = self.loop(entry, component(entry))
        states = [self.g.states[u] for u in stem_states + loop_states[1:]]
        steps = stem_steps + loop_steps
        loop_start = len(stem_steps)
        trace = self.builder.trace(states, steps, loop_start)
        return Counterexample(prop.name, m.PropertyKind.LIVENESS.value,
                              self.message(prop, trigger_at, loop_start, loop_states, loop_steps),
                              trace, engine="liveness")

    def stem(self, seeds, in_r, comp_of, comps) -> tuple[int, array, array]:
        """Shortest path: initial state ->* a P && !Q state ->* (through !Q) a fair component.

        Nodes are (state, phase): phase 0 before P held, phase 1 after, where only !Q
        states may be visited. Moving from phase 0 to 1 at a seed costs nothing, so a
        0-1 BFS (deque; free moves go to the front) gives the shortest stem.
        """
        n, dst, first = self.n, self.g.dst, self.g.first
        # node 2u + phase, on flat arrays: parent node (-1: a start, -2: not reached) and
        # the edge that led there (-1: none, or the free move at a seed)
        parent = array("q", [-2]) * (2 * n)
        edge = array("q", [-1]) * (2 * n)
        seed = bytearray(n)
        for u in seeds:
            seed[u] = 1
        fair_at = bytearray(n)
        for u, c in comp_of.items():
            fair_at[u] = comps[c] is not None
        q: deque[int] = deque()
        for u in range(min(self.g.initial, n)):
            if parent[2 * u] == -2:
                parent[2 * u] = -1
                q.append(2 * u)
        done = bytearray(2 * n)
        found = -1
        while q:
            node = q.popleft()
            if done[node]:
                continue
            done[node] = 1
            u, phase = node >> 1, node & 1
            if phase and fair_at[u]:
                found = node
                break
            if not phase and seed[u] and not done[node + 1]:
                parent[node + 1] = node
                edge[node + 1] = -1
                q.appendleft(node + 1)
            for k in range(first[u], first[u + 1]):
                v = dst[k]
                if v >= n or (phase and not in_r[v]):
                    continue
                nxt = 2 * v + phase
                if parent[nxt] == -2:
                    parent[nxt] = node
                    edge[nxt] = k
                    q.append(nxt)
        return found, parent, edge

    def stem_path(self, found: int, parent: array, edge: array) -> tuple[list[int], list[CompiledStep], int]:
        """The stem `stem` found, as states, steps and the index of the state where P held."""
        steps, step = self.g.steps, self.g.step
        assert found >= 0, "a fair component in R is reachable from a seed"
        chain = []  # (node, the edge that led to it; -1 for the start and the free move)
        at = found
        while at != -1:
            chain.append((at, edge[at]))
            at = parent[at]
        chain.reverse()
        path_states: list[int] = [chain[0][0] >> 1]
        path_steps: list[CompiledStep] = []
        trigger_at = 0
        for node, k in chain[1:]:
            if k < 0:  # P held here: the phase changes, the state does not
                trigger_at = len(path_states) - 1
            else:
                path_states.append(node >> 1)
                path_steps.append(steps[step[k]])
        return path_states, path_steps, trigger_at

    def path_to(self, target: int) -> tuple[list[int], list[CompiledStep]]:
        """A shortest path from an initial state to `target`."""
        n, dst, step, steps = self.n, self.g.dst, self.g.step, self.g.steps
        parent: dict[int, tuple[int, CompiledStep] | None] = {u: None for u in range(min(self.g.initial, n))}
        q = deque(parent)
        while q and target not in parent:
            u = q.popleft()
            for k in self.out(u):
                v = dst[k]
                if v < n and v not in parent:
                    parent[v] = (u, steps[step[k]])
                    q.append(v)
        path_states, path_steps = [target], []
        while (link := parent[path_states[-1]]) is not None:
            u, cs = link
            path_states.append(u)
            path_steps.append(cs)
        return path_states[::-1], path_steps[::-1]

    def loop(self, entry: int, comp: Collection[int]) -> tuple[list[int], list[CompiledStep]]:
        """A cycle from `entry` inside `comp` that satisfies every fair instance.

        If no fair instance can move at the entry, the loop is empty: the run stutters
        there. Otherwise, greedily: go to the nearest place that satisfies a still
        unsatisfied instance (a state where it is disabled, or one of its moves inside
        the component), until none is left, then take the shortest way back.
        """
        dst, step, steps, bits, en = self.g.dst, self.g.step, self.g.steps, self.step_bits, self.en
        strong = self.strong and self.strong & self._taken_in(comp)  # (the others are disabled all over comp)
        need = self.fair & en(entry) | strong
        states = [entry]
        moves: list[CompiledStep] = []
        if not need:
            return states, moves

        def inside(u):
            return [(dst[k], k) for k in self.out(u) if dst[k] in comp]

        while need:
            path = _bfs(states[-1], inside,  # the lambdas run within this iteration, on this `need`
                        stop_state=lambda u: bool(need & ~strong & ~en(u)),  # noqa: B023
                        stop_edge=lambda u, k: bool(need & bits[step[k]]))  # noqa: B023
            for v, k in path:
                need &= ~bits[step[k]] & (en(v) | strong)
                states.append(v)
                moves.append(steps[step[k]])
        if states[-1] != entry:
            for v, k in _bfs(states[-1], inside, stop_state=lambda u: u == entry):
                states.append(v)
                moves.append(steps[step[k]])
        return states, moves

    def _taken_in(self, comp: Collection[int]) -> int:
        """The fair actions some edge inside comp takes."""
        dst, step, bits, out = self.g.dst, self.g.step, self.step_bits, 0
        for u in comp:
            for k in self.out(u):
                if dst[k] in comp:
                    out |= bits[step[k]]
        return out

    def message(self, prop: m.Property, trigger_at: int, loop_start: int, loop_states, loop_steps) -> str:
        src = self.cm.program.model.source
        assert prop.goal is not None  # a liveness property
        goal = source_text(src, prop.goal.span)
        if prop.trigger is not None:
            head = (f"`{source_text(src, prop.trigger.span)}` holds {_after(trigger_at)}, "
                    f"and `{goal}` never holds from then on")
        else:
            head = f"`{goal}` never holds" + (f" after step {trigger_at}" if trigger_at else "")
        enabled = self.g.enabled
        if not loop_steps:
            u = loop_states[0]
            could = enabled[u]
            if not could:
                why = "no process can move there"
            else:
                why = ("only " + ", ".join(self.instance_names(could))
                       + " could move there, and without fairness it may stall for ever")
            return f"{head}: the run stays {_after(loop_start)} for ever ({why})"
        moved = 0
        for k in self._loop_edges(loop_states, loop_steps):
            moved |= self.step_bits[self.g.step[k]]
        base = len(self.cm.instances) + len(self.cm.flushes)
        actors = (1 << base) - 1
        parts = []
        if moved & self.fair & actors:
            parts.append("moving in it: " + ", ".join(self.instance_names(moved & self.fair & actors)))
        if moved & self.fair & ~actors:
            parts.append("taken in it: " + ", ".join(self.instance_names(moved & self.fair & ~actors)))
        idle = self.fair & ~moved
        for gid in sorted(self.names):
            if idle >> gid & 1:
                k = next(i for i, u in enumerate(loop_states) if not self.en(u) >> gid & 1)
                parts.append(f"{self.names[gid]} {'cannot move' if gid < base else 'is not enabled'} "
                             f"{_after(loop_start + k)}")
        unfair = 0
        for inst in self.cm.instances:
            if inst.process.unfair:
                unfair |= 1 << inst.gid
        if unfair:
            parts.append("no fairness assumed for " + ", ".join(self.instance_names(unfair)))
        steps = f"step {loop_start + 1}" if len(loop_steps) == 1 else \
            f"steps {loop_start + 1}-{loop_start + len(loop_steps)}"
        return (f"{head}: the loop of {steps} repeats for ever, and it is fair ("
                + "; ".join(parts) + ")" + self.per_process_hint(loop_states, loop_steps))

    def _loop_edges(self, loop_states, loop_steps) -> list[int]:
        """The graph's edge index of each step of the loop."""
        out = []
        for u, v, cs in zip(loop_states, loop_states[1:], loop_steps):
            out.append(next(k for k in self.out(u) if self.g.dst[k] == v and self.g.steps[self.g.step[k]] is cs))
        return out

    def per_process_hint(self, loop_states, loop_steps) -> str:
        """The per-branch-fairness trap: a process keeps moving in the loop by one step
        while another of its steps (another branch of a `choose`) stays enabled all
        round the loop and is never taken. Weak fairness is per process, so that run is
        fair; if the step must happen, it needs fairness of its own."""
        taken = {(cs.gid, cs.step.uid) for cs in loop_steps if hasattr(cs, "step")}
        fair = {(inst.gid, uid) for inst, fa in self.actions for uid in fa.uids}
        for inst in self.cm.instances:
            mine = [cs for cs in loop_steps if cs.gid == inst.gid]
            if inst.process.unfair or not mine or all(cs.step.kind is StepKind.STUTTER for cs in mine):
                continue  # (stuttering for ever is what a `stutter` branch says the process may do)
            states = [self.g.states[u] for u in loop_states]
            for cs in inst.steps_at[states[0][inst.pc_slot]]:
                key = (inst.gid, cs.step.uid)
                if key in taken or key in fair or cs.step.kind is StepKind.STUTTER:
                    continue
                if all(any(c.step.uid == cs.step.uid and runs(c, s) for c in inst.steps_at[s[inst.pc_slot]])
                       for s in states):
                    return (f". Hint: fairness is per process: {inst.name} keeps moving while its step "
                            f"`{_short(cs.step.text)}` (line {cs.step.span.line}) stays enabled and is never taken; "
                            "if it must happen, mark it `fair` (`or fair { ... }` on its `choose` branch)")
        return ""


def judge(cm: CompiledModel, path: list[tuple], prop: str, found_by: str) -> LivenessOutcome:
    """Property `prop` judged by this engine on the states of a path another engine
    found (a Z3 lasso): the graph of those states, with every step between two of them
    and each one's enabled actors as the compiled steps give them. A fair lasso in it is
    a fair run of the model; the outcome is VIOLATED with the lasso this engine finds
    there (printed as every liveness counterexample is), and INCOMPLETE when there is
    none, i.e. the other engine's claim did not replay."""
    ids: dict[tuple, int] = {}
    for s in path:
        ids.setdefault(tuple(s), len(ids))
    order = list(ids)
    steps: list[CompiledStep | CompiledFlush] = []
    index: dict[int, int] = {}
    first, dst, step, enabled = array("q", [0]), array("q"), array("q"), array("q")
    for s in order:
        can_move = 0
        # the actors as the search walks them: each instance at its pc, each buffer's flush (tso)
        tables = [(inst.gid, inst.steps_at[s[inst.pc_slot]]) for inst in cm.instances]
        tables += [(f.gid, f.steps_at[s[f.slot]]) for f in cm.flushes]
        for gid, table in tables:
            for cs in table:
                if runs(cs, s):
                    can_move |= 1 << gid
                try:
                    t = cs.fn(s)
                except (AssertionViolation, ModelError, StoreBufferFull):
                    continue
                if t is not None and tuple(t) in ids:
                    if id(cs) not in index:
                        index[id(cs)] = len(steps)
                        steps.append(cs)
                    dst.append(ids[tuple(t)])
                    step.append(index[id(cs)])
        first.append(len(dst))
        enabled.append(can_move)
    assert cm.pack is not None and cm.unpack is not None
    graph = StateGraph(UnpackedStates([cm.pack(s) for s in order], cm.unpack), 1, len(order), first, dst, step,
                       tuple(steps), enabled)
    out, _ = check(cm, Exploration(Stats(complete=False, limit=found_by, engine="liveness"), graph=graph))
    return out[prop]


class _Members(Collection[int]):
    """The states of fair component c as the C check numbers them (`comp[u] == c`),
    with no set built: the loop asks for membership, rarely for the members."""

    def __init__(self, comp: array, c: int):
        self.comp, self.c = comp, c

    def __contains__(self, u: object) -> bool:
        return isinstance(u, int) and self.comp[u] == self.c

    def __iter__(self) -> Iterator[int]:
        return (u for u, c in enumerate(self.comp) if c == self.c)

    def __len__(self) -> int:
        return self.comp.count(self.c)


def _has(ordered: Sequence[int], u: int) -> bool:
    """Whether u is in the ascending sequence `ordered`."""
    i = bisect_left(ordered, u)
    return i < len(ordered) and ordered[i] == u


def _native_arrays(g: StateGraph) -> bool:
    """Whether the graph's columns are the flat arrays the C check reads."""
    return (isinstance(g.states.packed, array) and g.states.packed.typecode == "Q"
            and all(isinstance(a, array) and a.itemsize == size
                    for a, size in ((g.first, 8), (g.dst, 8), (g.step, 4), (g.enabled, 8))))


def mask_of(nodes: list[int], n: int) -> bytearray:
    """`nodes` as a membership mask over the n expanded states (what `components` reads)."""
    inside = bytearray(n)
    for u in nodes:
        inside[u] = 1
    return inside


def components(nodes: list[int], inside: bytearray, first, dst, n: int) -> list[frozenset[int]]:
    """The strongly connected components of the graph restricted to the states marked in
    `inside` (`mask_of(nodes)`, visited in the order of `nodes`), whose edges out of state u are dst[first[u]:first[u + 1]]
    (targets >= n were never expanded and are left out): Tarjan's algorithm with an
    explicit stack, so no recursion limit, and no copy of the graph."""
    index = array("q", [-1]) * n  # -1: not visited yet
    low = array("q", [0]) * n
    on_stack = bytearray(n)
    stack: list[int] = []
    out: list[frozenset[int]] = []
    count = 0
    for root in nodes:
        if index[root] >= 0:
            continue
        index[root] = low[root] = count
        count += 1
        stack.append(root)
        on_stack[root] = 1
        work = [(root, first[root])]  # (state, its next edge to look at)
        while work:
            u, k = work[-1]
            end = first[u + 1]
            while k < end:
                v = dst[k]
                k += 1
                if v >= n or not inside[v]:
                    continue
                if index[v] < 0:  # descend; u resumes at edge k
                    work[-1] = (u, k)
                    index[v] = low[v] = count
                    count += 1
                    stack.append(v)
                    on_stack[v] = 1
                    work.append((v, first[v]))
                    break
                if on_stack[v] and index[v] < low[u]:
                    low[u] = index[v]
            else:  # every edge of u done
                work.pop()
                if work and low[u] < low[work[-1][0]]:
                    low[work[-1][0]] = low[u]
                if low[u] == index[u]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = 0
                        comp.append(w)
                        if w == u:
                            break
                    out.append(frozenset(comp))
    return out


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 48 else text[:45] + "..."


def runs(cs: CompiledStep | CompiledFlush, s: tuple) -> bool:
    """Whether step cs is enabled in state s (failing an assertion or raising a model
    error counts: the search reports those, as it counts them as moves)."""
    try:
        return cs.fn(s) is not None
    except StoreBufferFull:
        return False
    except (AssertionViolation, ModelError):
        return True


def _bfs(start, succ, stop_state, stop_edge=None) -> list:
    """The shortest non-empty list of (state, step) from `start` that ends with a stop
    edge or in a stop state; `succ(u)` gives the (state, step) pairs out of u."""
    parent: dict[int, tuple[int, int, object] | None] = {start: None}  # state -> (previous, state, step)
    q = deque([start])
    while q:
        u = q.popleft()
        for v, cs in succ(u):
            if (stop_edge is not None and stop_edge(u, cs)) or stop_state(v):
                return _unwind(parent, u) + [(v, cs)]
            if v not in parent:
                parent[v] = (u, v, cs)
                q.append(v)
    raise AssertionError("the component is strongly connected, so the target is reachable")


def _unwind(parent, u) -> list:
    out = []
    while parent[u] is not None:
        prev, v, cs = parent[u]
        out.append((v, cs))
        u = prev
    return out[::-1]
