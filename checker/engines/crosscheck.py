"""Cross-checks a solver's counterexample by replaying it through the compiled steps.

A Z3 engine's path is a claim about the model; the compiled steps (what the explicit
engine runs) are the model's meaning. Before a counterexample is shown, every step
of it is re-run with the real step function from the solver's state, the result must
be the solver's next state, and the violation must happen at the end. The trace that
is shown is built from the replayed states. Any disagreement is a bug in the checker
(in the encoding or in the compiler) and is reported as one, never as a verdict.
"""

from __future__ import annotations

from ..backends.python import AssertionViolation, CompiledModel, CompiledStep, ModelError
from .smt.encode import MODEL_ERROR
from .explicit import TraceBuilder, stuck_message
from ..results.trace import Trace


class ReplayMismatch(Exception):
    """The compiled steps do not do what the solver's counterexample says."""


def _show(cm: CompiledModel, state: tuple) -> dict:
    return {sl.name: v for sl, v in zip(cm.layout.slots, state)}


def _diff(cm: CompiledModel, want: tuple, got: tuple) -> str:
    out = [f"{sl.name}: solver {a}, compiled {b}"
           for sl, a, b in zip(cm.layout.slots, want, got) if a != b]
    return "; ".join(out[:6]) + (" ..." if len(out) > 6 else "")


def replay(cm: CompiledModel, states: list[tuple], steps: list[CompiledStep], prop: str, kind: str,
           from_initial: bool = True) -> tuple[Trace, str]:
    """Re-run `steps` from states[0]; check the violation of `prop` at the end.

    Returns the trace (from the replayed states) and the violation's message, or
    raises ReplayMismatch saying where the solver and the compiled code disagree."""
    replayed = replay_steps(cm, states, steps, from_initial)
    last = replayed[-1]
    failure, message = _check_violation(cm, last, prop, kind)
    trace = TraceBuilder(cm).trace(replayed, list(steps), failure=(failure, last) if failure else None)
    return trace, message


def replay_steps(cm: CompiledModel, states: list[tuple], steps: list[CompiledStep],
                 from_initial: bool = True) -> list[tuple]:
    """The states the compiled steps reach from states[0], each checked against the
    solver's (ReplayMismatch where they differ)."""
    program = cm.program
    if from_initial:
        for sl, v, allowed in zip(cm.layout.slots, states[0], program.init_choices):
            if v not in allowed:
                raise ReplayMismatch(f"the solver's initial state has {sl.name} = {v}, "
                                     "which is not an initial value")
    by_gid = {inst.gid: inst for inst in cm.instances}
    replayed = [tuple(states[0])]
    for i, cs in enumerate(steps):
        s = replayed[-1]
        inst = by_gid[cs.gid]
        where = f"step {i + 1} ({inst.name}: {cs.step.text})"
        if cs not in inst.steps_at[s[inst.pc_slot]]:
            raise ReplayMismatch(f"{where} is not a step of {inst.name} at "
                                 f"{inst.process.pc_names[s[inst.pc_slot]]}")
        try:
            r = cs.fn(s)
        except (AssertionViolation, ModelError) as e:
            raise ReplayMismatch(f"{where} fails in the compiled code ({type(e).__name__}: {e})") from None
        if r is None:
            raise ReplayMismatch(f"{where} is not enabled in the compiled code")
        if tuple(r) != tuple(states[i + 1]):
            raise ReplayMismatch(f"{where} leads elsewhere: {_diff(cm, tuple(states[i + 1]), tuple(r))}")
        replayed.append(tuple(r))
    return replayed


def _check_violation(cm: CompiledModel, s: tuple, prop: str, kind: str) -> tuple[CompiledStep | None, str]:
    if kind in ("invariant", "reachable"):  # `reachable P` is compiled as the invariant !P
        inv = next(i for i in cm.invariants if i.property.name == prop)
        try:
            ok = inv.fn(s)
        except ModelError as e:
            raise ReplayMismatch(f"{kind} {prop} raises a model error in the compiled code: {e}") from None
        if ok:
            raise ReplayMismatch(f"invariant {prop} holds in the last state, per the compiled code" if kind == "invariant"
                                 else f"{prop} does not hold in the last state, per the compiled code")
        return None, f"invariant {prop} is violated" if kind == "invariant" else f"{prop} is reached"
    if kind == "final":
        fin = next(f for f in cm.finals if f.property.name == prop)
        if cm.final_state is None or not cm.final_state(s):
            raise ReplayMismatch("the last state is not a final state, per the compiled code")
        try:
            ok = fin.fn(s)
        except ModelError as e:
            raise ReplayMismatch(f"final condition {prop} raises a model error in the compiled code: {e}") from None
        if ok:
            raise ReplayMismatch(f"final condition {prop} holds in the last state, per the compiled code")
        return None, f"final condition {prop} is violated in a final state"
    if kind == "assert":
        for inst in cm.instances:
            for cs in inst.steps_at[s[inst.pc_slot]]:
                try:
                    cs.fn(s)
                except AssertionViolation as a:
                    if a.property == prop:
                        return cs, f"assertion {prop} failed"
                except ModelError:
                    continue
        raise ReplayMismatch(f"no step fails assertion {prop} from the last state, per the compiled code")
    if kind == "deadlock":
        for inst in cm.instances:
            for cs in inst.steps_at[s[inst.pc_slot]]:
                try:
                    r = cs.fn(s)
                except (AssertionViolation, ModelError) as e:
                    raise ReplayMismatch(f"the last state is no deadlock: {inst.name} can take "
                                         f"{cs.step.text} ({type(e).__name__})") from None
                if r is not None:
                    raise ReplayMismatch(f"the last state is no deadlock: {inst.name} can take {cs.step.text}")
        if all(s[inst.pc_slot] in inst.end_pcs for inst in cm.instances):
            raise ReplayMismatch("the last state is a valid end state, not a deadlock")
        return None, stuck_message(cm, s)
    if kind == MODEL_ERROR:
        for inv in cm.invariants:
            try:
                inv.fn(s)
            except ModelError as e:
                return None, f"evaluating invariant {inv.property.name}: {e}"
        if cm.final_state is not None and cm.final_state(s):
            for fin in cm.finals:
                try:
                    fin.fn(s)
                except ModelError as e:
                    return None, f"evaluating final condition {fin.property.name}: {e}"
        for inst in cm.instances:
            for cs in inst.steps_at[s[inst.pc_slot]]:
                try:
                    cs.fn(s)
                except ModelError as e:
                    return cs, str(e)
                except AssertionViolation:
                    continue
        raise ReplayMismatch("no model error happens in the last state, per the compiled code")
    raise ValueError(kind)
