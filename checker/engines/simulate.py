"""Random simulation (`check --simulate N --depth D --seed S`), for models too large to
search exhaustively.

N runs of at most D steps each; in every state one of the enabled steps (of every
process instance and store buffer) is chosen at random with `random.Random(seed)`, so
a seed reproduces the same runs: uniformly among the steps to a state no run has been
in yet, if there are any, else among all. A uniform walk keeps returning to the states
that most steps lead back to (a retry loop, a reset), and misses a bug a few unlikely
choices deep even in a small model; preferring new states spreads the runs over the
state space, and the runs report how many distinct states they went through. Each state is checked against the invariants, each
step's assertions, deadlock (no step enabled, not every process at a valid end) and the
`final` conditions in final states. A violation is reported with the run that found it
(not a shortest trace) through the counterexample path every exporter reads.

It never says *holds*: a property it did not see violated is "not verified" (exit 3),
and liveness, lemmas and `reachable` declarations are not checked at all (a finite
random prefix shows neither a fair cycle nor a proof nor unreachability).
"""

from __future__ import annotations

import time

from .. import model as m
from ..backends.python import AssertionViolation, CompiledFlush, CompiledModel, CompiledStep, ModelError, StoreBufferFull
from ..results.trace import Counterexample, PropertyOutcome, Stats, Verdict
from .explicit import TraceBuilder, stuck_message
from ..base.record import record


@record
class SimulationPlan:
    runs: int
    depth: int
    seed: int


UNCHECKED = (m.PropertyKind.LIVENESS, m.PropertyKind.LEMMA, m.PropertyKind.REACHABLE)


def simulate(cm: CompiledModel, plan: SimulationPlan, check_deadlock: bool = True):
    """(counterexamples by property, model error or None, Stats) of plan's random runs."""
    import random  # (only when simulating)

    rng = random.Random(plan.seed)
    initial = [cm.pack(s) for s in cm.program.initial_states]
    pk = cm.packing
    actors: list[tuple[tuple[int, int], tuple[tuple[CompiledStep | CompiledFlush, ...], ...]]] = \
        [(pk.field(inst.pc_slot), inst.steps_at) for inst in cm.instances] + \
        [(pk.field(f.slot), f.steps_at) for f in cm.flushes]
    ends = [(pk.field(inst.pc_slot), inst.end_pcs) for inst in cm.instances]
    invariants = [(c.packed, c.property.name) for c in cm.invariants
                  if c.property.kind is m.PropertyKind.INVARIANT]
    finals = [(c.packed, c.property.name) for c in cm.finals]
    # property -> (packed states, steps, the failing step or None, kind, message)
    found: dict[str, tuple[list[int], list[CompiledStep | CompiledFlush], CompiledStep | None, str, str]] = {}
    model_error: tuple[list[int], list[CompiledStep | CompiledFlush], CompiledStep | None, str] | None = None
    start, steps_taken, deepest = time.monotonic(), 0, 0
    visited: set[int] = set()  # the distinct states the runs went through: what they covered
    for _ in range(plan.runs):
        s = rng.choice(initial)
        path = [s]
        ks: list[CompiledStep | CompiledFlush] = []
        for d in range(plan.depth + 1):
            visited.add(s)
            model_error = _check_state(cm, s, path, ks, invariants, finals, found)
            if model_error is not None:
                break
            if d == plan.depth:
                break
            succ = []
            for (shift, mask), table in actors:
                for cs in table[s >> shift & mask]:
                    try:
                        t = cs.packed(s)
                    except AssertionViolation as a:
                        assert isinstance(cs, CompiledStep)  # (a flush asserts nothing)
                        if a.property not in found:
                            found[a.property] = (list(path), list(ks), cs, "assert", f"assertion {a.property} failed")
                        continue
                    except StoreBufferFull:
                        continue
                    except ModelError as e:
                        assert isinstance(cs, CompiledStep)  # (a flush only moves a stored value)
                        model_error = (list(path), list(ks), cs, str(e))
                        break
                    if t is not None:
                        succ.append((cs, t))
                if model_error is not None:
                    break
            if model_error is not None:
                break
            if not succ:
                stuck = not all((s >> sh & mk) in e for (sh, mk), e in ends)
                if stuck and check_deadlock and "deadlock" not in found:
                    found["deadlock"] = (list(path), list(ks), None, "deadlock", stuck_message(cm, cm.unpack(s)))
                break
            fresh = [x for x in succ if x[1] not in visited]
            cs, s = rng.choice(fresh or succ)
            path.append(s)
            ks.append(cs)
            steps_taken += 1
            deepest = max(deepest, len(ks))
        if model_error is not None:
            break
    builder = TraceBuilder(cm)
    cxs = {}
    for name, (states, ks, failing, kind, msg) in found.items():
        tuples = [cm.unpack(x) for x in states]
        failure = (failing, tuples[-1]) if failing is not None else None
        cxs[name] = Counterexample(name, kind, msg, builder.trace(tuples, ks, failure=failure))
    error = None
    if model_error is not None:
        states, ks, failing, msg = model_error
        tuples = [cm.unpack(x) for x in states]
        failure = (failing, tuples[-1]) if failing is not None else None  # None: evaluating a property failed
        error = Counterexample("model error", "model error", msg, builder.trace(tuples, ks, failure=failure))
    limit = f"simulation: {plan.runs} random runs of up to {plan.depth} steps, seed {plan.seed}, " \
        f"through {len(visited):,} distinct states"
    stats = Stats(len(visited), steps_taken, deepest, time.monotonic() - start, False,
                  "model error" if error is not None else limit, engine="simulate")
    return cxs, error, stats


def _check_state(cm: CompiledModel, s: int, path: list, ks: list, invariants, finals, found: dict):
    """Records the invariants and final conditions state `s` violates in `found`; a
    property whose evaluation fails (a division by zero) is the run's model error,
    returned as the search reports it: (path, steps, no failing step, message)."""
    for fn, name in invariants:
        try:
            if name not in found and not fn(s):
                found[name] = (list(path), list(ks), None, "invariant", f"invariant {name} is violated")
        except ModelError as e:
            return list(path), list(ks), None, f"evaluating invariant {name}: {e}"
    try:
        final = bool(finals) and cm.final_state_packed is not None and cm.final_state_packed(s)
    except ModelError as e:
        return list(path), list(ks), None, f"deciding whether the state is final: {e}"
    for fn, name in finals if final else ():
        try:
            if name not in found and not fn(s):
                found[name] = (list(path), list(ks), None, "final", f"final condition {name} is violated in a final state")
        except ModelError as e:
            return list(path), list(ks), None, f"evaluating final condition {name}: {e}"
    return None


def outcomes(model: m.Model, cxs: dict, error, plan: SimulationPlan, use_expectations: bool,
             check_deadlock: bool, visited: int | None = None) -> tuple[PropertyOutcome, ...]:
    """Each property's outcome: violated with the run that showed it, else not verified."""
    out = []
    for p in model.properties:
        if p.kind is m.PropertyKind.DEADLOCK and not check_deadlock:
            continue
        expected = use_expectations and p.name in model.expected_violations
        cx = cxs.get(p.name)
        if cx is not None:
            out.append(PropertyOutcome(p.name, p.kind.value, Verdict.VIOLATED, expected, cx, p.span,
                                       f"found by random simulation (seed {plan.seed}); not a shortest trace"))
        elif p.kind in UNCHECKED:
            out.append(PropertyOutcome(p.name, p.kind.value, Verdict.INCOMPLETE, expected, None, p.span,
                                       f"random simulation does not check {p.kind.value} properties"))
        else:
            why = "the simulation stopped at a model error" if error is not None else \
                f"not violated in {plan.runs} random runs of up to {plan.depth} steps (seed {plan.seed})" + \
                (f", through {visited:,} distinct states" if visited is not None else "")
            out.append(PropertyOutcome(p.name, p.kind.value, Verdict.INCOMPLETE, expected, None, p.span, why))
    return tuple(out)
