"""Merging local steps: runs of steps no other process can observe become one step
before the search."""

from __future__ import annotations

from dataclasses import replace

from ... import ir, model as m
from .footprint import Collector, Footprint, analyse, cannot_fail


def merge_local_steps(program: ir.Program) -> tuple[ir.Program, int]:
    """The program with chains of local steps merged into the step that follows them
    (SPIN's statement merging), for the search with partial-order reduction only.

    A step t merges into the next when, in every instance of its process, t is the only
    step at its pc, always enabled, invisible, no back edge, and conflicts with no other
    actor; and it has one target. The merged step runs the chain, then the first step
    u that is not such a step (unless u sits at a choice): atomically, which changes no
    verdict, since the chain commutes with everything any other actor does and no
    property sees it, so running it just before u is as good as running it earlier.
    u must be always enabled too, or wait only on a guard that reads nothing the chain
    writes, in front of a chain that cannot fail (an assertion or a model error must
    not hide behind a wait); the pc of u must be a valid end exactly when the chain's
    first pc is, so that a process stuck before the merged step is stuck where it
    would have been. Returns the program and the number of steps merged away."""
    an = analyse(program, dynamic=False)
    layout = program.layout
    procs = []
    merged_count = 0
    for p in program.processes:
        gids = [layout.gid_base[p.name] + i for i in range(p.instances)]
        targets = {}
        for pc, steps in enumerate(p.steps_at):
            if len(steps) == 1:
                gotos = {op.pc for op in ir.walk_ops(steps[0].body) if isinstance(op, ir.OGoto)}
                if len(gotos) == 1 and all(an.independent(g, pc) and an.always_enabled[(g, pc)] for g in gids):
                    targets[pc] = gotos.pop()
        # a chain starts where the process can arrive other than through a merged step
        arrive = {0}
        for pc, steps in enumerate(p.steps_at):
            for st in steps:
                for op in ir.walk_ops(st.body):
                    if isinstance(op, ir.OGoto) and targets.get(pc) != op.pc:
                        arrive.add(op.pc)
        uid = max((st.uid for st in p.steps), default=-1) + 1
        steps_at = list(p.steps_at)
        new_steps = list(p.steps)
        gone: set = set()  # pcs whose step now runs inside a merged one
        for start in sorted(set(targets) & arrive):
            chain = [start]
            while targets.get(chain[-1]) is not None and targets[chain[-1]] not in chain \
                    and targets[chain[-1]] in targets:
                chain.append(targets[chain[-1]])
            after = targets[chain[-1]]
            written: set = set()
            for pc in chain:
                for g in gids:
                    for fp in an.footprints[(g, pc)]:
                        written |= fp.writes
            ops: list = []
            for pc in chain:
                ops.extend(op for op in p.steps_at[pc][0].body if not isinstance(op, ir.OGoto))
            first = p.steps_at[start][0]
            nxt = p.steps_at[after]
            end = (start in p.end_pcs) == (after in p.end_pcs)
            # u may take part only if it cannot be disabled where the chain could still run
            # (and fail: an assertion, a value out of range); a guard that reads nothing the
            # chain writes may wait in front of a chain that cannot fail
            sure = all(an.always_enabled[(g, after)] for g in gids)
            hoist = len(nxt) == 1 and nxt[0].kind is not ir.StepKind.SCHEDULE and not nxt[0].fence \
                and not any(_buffered(layout, fp) for g in gids for fp in an.footprints[(g, after)]) \
                and all(not (_reads_of(program, p, g, nxt[0].guard) & written) for g in gids) \
                and cannot_fail(ops)
            if len(nxt) == 1 and (sure or hoist) and end and after not in chain \
                    and nxt[0].kind is not ir.StepKind.STUTTER:  # (a stutter stays a step that changes nothing)
                u = nxt[0]
                step = replace(first, uid=uid, kind=u.kind, guard=u.guard, body=tuple(ops) + u.body,
                               text="; ".join([p.steps_at[pc][0].text for pc in chain] + [u.text]), fence=u.fence,
                               parts=_parts(p, chain) + _parts(p, [after]))
                gone.update(chain)
            elif len(chain) >= 2:
                step = replace(first, uid=uid, guard=None, body=tuple(ops) + (ir.OGoto(after),),
                               text="; ".join(p.steps_at[pc][0].text for pc in chain),
                               fence=p.steps_at[chain[-1]][0].fence, parts=_parts(p, chain))
                gone.update(chain[:-1])
            else:
                continue
            uid += 1
            steps_at[start] = (step,)
            new_steps.append(step)
        merged_count += len(gone) * p.instances
        procs.append(replace(p, steps_at=tuple(steps_at), steps=tuple(new_steps)))
    return replace(program, processes=tuple(procs)), merged_count


def _parts(p: ir.ProcessIR, pcs) -> tuple[int, ...]:
    """The uids of the steps at pcs (coverage counts each as run when the merged step runs)."""
    return tuple(uid for pc in pcs for st in p.steps_at[pc][:1] for uid in (st.parts or (st.uid,)))


def _buffered(layout: ir.StateLayout, fp: Footprint) -> bool:
    """The step goes through a store buffer (it may wait for room in it)."""
    return any(isinstance(x, int) and layout.slots[x].kind is ir.SlotKind.BUFFER for x in fp.reads | fp.writes)


def _reads_of(program: ir.Program, p: ir.ProcessIR, gid: int, guard: m.TExpr | None) -> set:
    col = Collector(program)
    col.proc = p.name
    col.reads, col.writes = set(), set()
    col.expr(guard, gid - program.layout.gid_base[p.name])
    return col.reads


