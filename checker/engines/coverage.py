"""Coverage and vacuity of one variant, from what its search recorded as it ran.

The search (engines/explicit) marks, per step number, that the step ran and, for an
`if`/`while`, which pc it went to (a local set in the generated level loop, a bit in a
list in the generic one), and evaluates each question of vacuity (`CompiledModel.premises`:
the trigger of `always (P -> eventually Q)`, the left side of an invariant's `->`) until
some state satisfies it. No second search: this module only turns the marks into
statements of the spec, and the stored states into a digest that tells two variants with
the same states apart from two that merely look alike.

A reduced search (partial-order reduction, symmetry, merged local steps) explores only
some interleavings. A statement it ran, a branch it took, a premise it saw hold are so in
the model too; what it never saw may still be reachable in an interleaving it skipped.
Such findings say so (`Coverage.decided_by`), and `--no-por --no-symmetry` decides them
over every state.
"""

from __future__ import annotations

from .. import model as m
from ..backends.python import CompiledModel
from ..base.errors import source_lines
from ..ir import OGoto, OIf, StepKind
from ..results.findings import Coverage, StatementCoverage, explanations, variant_explanations


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


def from_search(cm: CompiledModel, searched: CompiledModel, marks, held: tuple[bool, ...], states: int,
                digest: int, reduced: str = "") -> Coverage:
    """Coverage of variant cm from its search of `searched` (cm itself, or cm with local
    steps merged): `marks` pairs each step the search numbered with its mark
    (`Search.marks`), `held` says per premise of `searched` whether a state satisfied it,
    `digest` is the stored states' (`states_sums`, hashed). `reduced`: which reduction
    shaped the search, "" for none."""
    ran: set[tuple[int, int]] = set()  # (gid, step uid)
    went: set[tuple[int, int, int]] = set()  # (gid, step uid, pc after)
    for cs, mark in marks:
        st = getattr(cs, "step", None)  # (a flush or an lkmm propagation is no statement)
        if not mark or st is None:
            continue
        uids = st.parts or (st.uid,)  # a merged step ran every step it is made of
        ran.update((cs.gid, uid) for uid in uids)
        if st.kind is StepKind.BRANCH:  # (the condition is the last part of a merged step)
            pcs, pc = mark >> 1, 0
            while pcs:
                if pcs & 1:
                    went.add((cs.gid, uids[-1], pc))
                pcs >>= 1
                pc += 1
    by_name = {p.property.name: h for p, h in zip(searched.premises, held)}
    questions = _triggers(cm.program.model)
    return _summarise(cm, ran, went, questions, [by_name.get(q[0], False) for q in questions], states, digest,
                      reduced)


def _summarise(cm: CompiledModel, ran, went, questions, held, states: int, digest: int, reduced: str) -> Coverage:
    stmts: list[StatementCoverage] = []
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
            branches: tuple[tuple[str, bool], ...] = ()
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
    pk = cm.packing  # the same states packed alike: the same layout, the same fields
    assert pk is not None  # compile_program packs every model
    fingerprint = hash((tuple(sl.name for sl in cm.layout.slots), pk.shift, pk.width, pk.lo, bool(reduced), digest))
    return Coverage(states, tuple(stmts), never, tuple(silent), fingerprint,
                    explanations(cm.program.model.source or ""),
                    variant_explanations(cm.program.model.source or ""), reduced)


def _targets(st) -> tuple[int, ...]:
    """The pcs a condition step goes to: (when true, when false)."""
    op = st.body[0]
    if isinstance(op, OIf):
        return tuple(o.pc for part in (op.then, op.orelse) for o in part if isinstance(o, OGoto))
    return ()
