"""Coverage and vacuity of one variant, from a post-pass over its reachable states.

The search (explicit.py) keeps no state set it hands back, and under partial-order
reduction it skips interleavings on purpose: a statement the reduced search never ran
may still be reachable. So coverage is computed by a separate breadth-first pass over
the *unreduced* graph of the variant's compiled steps (no merged steps, no ample sets,
no symmetry): exact, at the price of a second search, which is why it is capped
(MAX_STATES) and only run after a search that was complete.

Per process instance it records which steps ran and, for an `if`/`while`, which way
the condition went; per vacuity question (the trigger of `always (P -> eventually Q)`,
the left side of an invariant's `->`) whether some reachable state satisfies it; and a
fingerprint of the reachable states, so that two variants with the same state space
can be told apart from two that merely look alike.
"""

from __future__ import annotations

from dataclasses import replace

from .. import model as m
from ..backends.python import AssertionViolation, CompiledModel, ModelError, StoreBufferFull, compile_program
from ..base.errors import source_lines
from ..ir import OGoto, OIf, StepKind
from ..results.findings import Coverage, StatementCoverage, explanations, variant_explanations

#: the most states the coverage pass explores; beyond it coverage is not reported
MAX_STATES = 200_000


def _triggers(model: m.Model) -> list[tuple[str, str, m.TExpr]]:
    """(property, description, condition) for each question of vacuity."""
    out = []
    src = model.source
    for p in model.properties:
        if p.kind is m.PropertyKind.LIVENESS and p.trigger is not None:
            out.append((p.name, f"the trigger `{_text(src, p.trigger)}`", p.trigger))
        elif p.kind is m.PropertyKind.INVARIANT and isinstance(p.cond, m.Bin) and p.cond.op == "->":
            out.append((p.name, f"the left side `{_text(src, p.cond.left)}` of its `->`", p.cond.left))
    return out


def _text(source: str, x: m.TExpr) -> str:
    sp = x.span
    lines = source_lines(source)
    if sp.line == sp.end_line and 0 < sp.line <= len(lines):
        return lines[sp.line - 1][sp.col - 1:sp.end_col - 1].strip()
    return "condition"


def analyse(cm: CompiledModel, max_states: int = MAX_STATES) -> Coverage | None:
    """Coverage of compiled variant cm (unreduced), or None when it has more than
    max_states reachable states."""
    model = cm.program.model
    questions = _triggers(model)
    # each question is compiled as a `reachable` property (the predicate of !P)
    probes = tuple(m.Property(f"__probe{k}", m.PropertyKind.REACHABLE, q[2].span, cond=q[2])
                   for k, q in enumerate(questions))
    probe_fns = []
    if probes:
        extra = compile_program(replace(cm.program, properties=tuple(cm.program.properties) + probes))
        by_name = {inv.property.name: inv.packed for inv in extra.invariants}
        probe_fns = [by_name[p.name] for p in probes]
    pk = cm.packing
    actors = []
    for inst in cm.instances:
        shift, mask = pk.field(inst.pc_slot)
        actors.append((shift, mask, inst.steps_at, inst.gid))
    flushes = [(pk.field(f.slot)[0], pk.field(f.slot)[1], f.steps_at) for f in cm.flushes]
    ran: set[tuple[int, int]] = set()  # (gid, step uid)
    went: set[tuple[int, int, int]] = set()  # (gid, step uid, pc after)
    held = [False] * len(probe_fns)
    seen = {cm.pack(s) for s in cm.program.initial_states}
    level = list(seen)
    while level:
        nxt = []
        for s in level:
            for k, fn in enumerate(probe_fns):
                try:
                    if not held[k] and not fn(s):
                        held[k] = True
                except ModelError:  # e.g. an index out of range: the search reports the property's own
                    pass
            succ = []
            for shift, mask, table, gid in actors:
                pc = s >> shift & mask
                for cs in table[pc]:
                    try:
                        t = cs.packed(s)
                    except (AssertionViolation, ModelError):
                        ran.add((gid, cs.step.uid))  # it ran, and failed: the search reports that
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
    return _summarise(cm, ran, went, questions, held, seen)


def _summarise(cm: CompiledModel, ran, went, questions, held, seen) -> Coverage:
    stmts = []
    silent = []
    for proc in cm.program.processes:
        insts = [inst for inst in cm.instances if inst.process is proc]
        moved = False
        merged: dict[tuple, StatementCoverage] = {}
        for st in proc.steps:
            n = sum((inst.gid, st.uid) in ran for inst in insts)
            moved |= n > 0
            if st.generated:  # an execution-context step (contexts.py): not a statement of the spec
                continue
            branches = ()
            if st.kind is StepKind.BRANCH:
                targets = _targets(st)
                names = ("then", "else") if st.text.startswith("if") else ("enter", "exit")
                branches = tuple((names[j], any((inst.gid, st.uid, pc) in went for inst in insts))
                                 for j, pc in enumerate(targets))
            key = (st.span.line, st.span.col, st.text)
            old = merged.get(key)
            if old is not None:  # the same statement written once, expanded from an inline twice:
                # it ran if any expansion ran, a branch was taken if any expansion took it
                branches = tuple((b, t or t2) for (b, t), (_, t2) in zip(branches, old.branches)) \
                    if branches and old.branches else branches or old.branches
                n = max(n, old.executed)
            merged[key] = StatementCoverage(proc.name, st.span.line, st.span.col, st.text, st.kind.value, n,
                                            len(insts), branches)
        stmts += merged.values()
        if not moved and any(not st.generated for st in proc.steps):
            silent.append(proc.name)
    never = tuple((name, what) for (name, what, _), h in zip(questions, held) if not h)
    names = tuple(sl.name for sl in cm.layout.slots) if hasattr(cm.layout, "slots") else ()
    fingerprint = hash((names, frozenset(cm.unpack(s) for s in seen)))
    return Coverage(len(seen), tuple(stmts), never, tuple(silent), fingerprint,
                    explanations(cm.program.model.source or ""),
                    variant_explanations(cm.program.model.source or ""))


def _targets(st) -> tuple[int, ...]:
    """The pcs a condition step goes to: (when true, when false)."""
    op = st.body[0]
    if isinstance(op, OIf):
        return tuple(o.pc for part in (op.then, op.orelse) for o in part if isinstance(o, OGoto))
    return ()
