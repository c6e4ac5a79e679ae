"""The coverage the search records, decided independently: a breadth-first pass over
the *unreduced* graph of a variant's compiled steps (no merged steps, no ample sets, no
symmetry), trying every step in every state. It was the product's coverage pass until
the search recorded coverage itself (issue 30); the tests keep it as the oracle."""

from __future__ import annotations

from checker.backends.python import AssertionViolation, CompiledModel, ModelError, StoreBufferFull
from checker.engines import coverage
from checker.ir import StepKind
from checker.results.findings import Coverage


def analyse(cm: CompiledModel, max_states: int = 400_000) -> Coverage | None:
    """Coverage of compiled variant cm over every reachable state, or None past max_states."""
    model = cm.program.model
    questions = coverage._triggers(model)
    premise = {p.property.name: p.packed for p in cm.premises}
    probe_fns = [premise[name] for name, _, _ in questions]
    pk = cm.packing
    actors = []
    for inst in cm.instances:
        shift, mask = pk.field(inst.pc_slot)
        actors.append((shift, mask, inst.steps_at, inst.gid))
    flushes = [(pk.field(f.slot)[0], pk.field(f.slot)[1], f.steps_at) for f in cm.flushes]
    ran: set[tuple[int, int]] = set()
    went: set[tuple[int, int, int]] = set()
    held = [False] * len(probe_fns)
    seen = {cm.pack(s) for s in cm.program.initial_states}
    level = list(seen)
    while level:
        nxt = []
        for s in level:
            for k, fn in enumerate(probe_fns):
                try:
                    if not held[k] and fn(s):
                        held[k] = True
                except ModelError:
                    pass
            succ = []
            for shift, mask, table, gid in actors:
                for cs in table[s >> shift & mask]:
                    try:
                        t = cs.packed(s)
                    except (AssertionViolation, ModelError):
                        ran.add((gid, cs.step.uid))
                        continue
                    except StoreBufferFull:
                        continue
                    if t is None:
                        continue
                    ran.add((gid, cs.step.uid))
                    if cs.step.kind is StepKind.BRANCH:
                        went.add((gid, cs.step.uid, t >> shift & mask))
                    succ.append(t)
            for shift, mask, table in flushes:
                for fl in table[s >> shift & mask]:
                    try:
                        t = fl.packed(s)
                    except ModelError:
                        continue
                    if t is not None:
                        succ.append(t)
            for t in succ:
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
            if len(seen) > max_states:
                return None
        level = nxt
    return coverage._summarise(cm, ran, went, questions, held, len(seen), 0, "")
