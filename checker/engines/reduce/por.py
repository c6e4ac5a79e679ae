"""Partial-order reduction at run time: the ample sets of the package docstring's argument."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...backends.python import AssertionViolation, CompiledModel, ModelError, StoreBufferFull
from .footprint import Analysis, holds

if TYPE_CHECKING:
    from ...backends.c import AmpleTables


#: after this many pc vectors, the ample-set cache stays only if it was hit at least as often
CACHE_TRIAL = 1 << 14


class PartialOrder:
    """The ample-set hook. In a state, a *cluster* is a set of actors closed under
    conflict at their current pcs: none of their steps there conflicts with an actor
    outside it, none is visible and none closes a loop. `ample(s, actors)` returns the
    smallest cluster, found from each instance in turn, that has a step with a
    successor in s (statically known when one of its steps is always enabled and
    cannot fail, otherwise tried), or every actor. `singletons`: only clusters of one
    instance whose steps there conflict with nobody, the form the liveness argument
    needs (module docstring). Clusters depend only on the instances' pcs, which are
    neighbouring bit fields of the packed state, so they are cached by those bits
    (unless nearly every state has a pc vector of its own, as in dining philosophers,
    where the cache would only cost memory)."""

    def __init__(self, cm: CompiledModel, an: Analysis, singletons: bool):
        self.cm = cm
        self.an = an
        self.singletons = singletons
        self.n_inst = len(cm.instances)
        self.n_actors = self.n_inst + len(cm.flushes)
        pcs = [inst.pc_slot for inst in cm.instances]
        assert pcs == list(range(pcs[0], pcs[0] + len(pcs))), "instances' pcs are contiguous"
        pk = cm.packing
        assert pk is not None  # compile_program packs every model
        # the pcs are neighbouring bit fields of the packed state: one shift and mask give them all
        self.shift = pk.shift[pcs[0]]
        self.mask = (1 << (pk.shift[pcs[-1]] + pk.width[pcs[-1]] - self.shift)) - 1
        self.fields = [(pk.shift[k] - self.shift, pk.mask(k), pk.lo[k]) for k in pcs]
        self.actor_fields = [pk.field(inst.pc_slot) for inst in cm.instances] + [pk.field(f.slot) for f in cm.flushes]
        self.cache: dict = {}
        self.caching, self.lookups = True, 0
        self.chosen: dict[int, list] = {}  # gid mask -> those rows of the search's actors
        self.flush_conflicts = [an.conflicts[(g, 0)] for g in range(self.n_inst, self.n_actors)]
        self.all_mask = (1 << self.n_actors) - 1
        self.last: tuple | None = None  # (state, mask of the actors chosen)
        # per instance and pc, what the clusters are built from, as lists (no dict lookups):
        # (has a step, is a candidate, conflict mask, a step surely has a successor)
        self.at = [[(bool(an.footprints.get((g, pc))), an.candidate(g, pc), an.conflicts.get((g, pc), 0),
                     an.proceeds.get((g, pc), False)) for pc in range(len(inst.process.steps_at))]
                   for g, inst in enumerate(cm.instances)]
        self.flush_visible = [an.visible[(g, 0)] for g in range(self.n_inst, self.n_actors)]
        self.flush_proceeds = [an.proceeds[(g, 0)] for g in range(self.n_inst, self.n_actors)]
        self.dynamic = an.dynamic
        if self.dynamic:
            # per instance and pc, per step: (literals, visible or a back edge, always-conflict
            # mask, conditional conflicts); the ample sets depend on the pcs and the literals'
            # slots, which one mask of the packed state keeps for the cache
            self.steps_d = [[tuple((fp.lits, bad, need, cond) for fp, bad, (need, cond) in
                                   zip(an.footprints.get((g, pc), ()), an.step_bad.get((g, pc), ()),
                                       an.step_needs.get((g, pc), ())))
                             for pc in range(len(inst.process.steps_at))] for g, inst in enumerate(cm.instances)]
            self.reach = [[an.reach.get((g, pc), frozenset()) for pc in range(len(inst.process.steps_at))]
                          for g, inst in enumerate(cm.instances)]
            self.writers = an.writers
            self.slot_field = {k: (pk.shift[k], pk.mask(k), pk.lo[k]) for k in an.lit_slots}
            keep = self.mask << self.shift
            for sh, mk, _ in self.slot_field.values():
                keep |= mk << sh
            self.keep = keep

    def ample_tables(self) -> AmpleTables | None:
        """The rows `_options` builds its clusters from, for the native loop, which
        computes the same choice in C; None with store-buffer flushes or state-dependent
        footprints (not tabled)."""
        from ...backends.c import AmpleTables  # (the C back end, only for a native search)

        if self.n_actors != self.n_inst or any(lo for _, _, lo in self.fields) or self.dynamic:
            return None
        return AmpleTables(tuple(tuple(row) for row in self.at), self.singletons)

    def ample(self, s: int, actors: list) -> list:
        mask = self.ample_mask(s, actors)
        return actors if mask == self.all_mask else self.chosen[mask]

    def ample_mask(self, s: int, actors: list) -> int:
        """`ample` as a gid mask (the generated level loop tests one bit per actor)."""
        key = s & self.keep if self.dynamic else s >> self.shift & self.mask
        options = self.cache.get(key)
        if options is None:
            if self.dynamic:
                options = self._options_dynamic(s, actors)
            else:
                options = self._options(tuple((key >> sh & mk) + lo for sh, mk, lo in self.fields), actors)
            if self.caching:
                self.cache[key] = options
                if len(self.cache) == CACHE_TRIAL:  # nearly every state its own pc vector: stop caching
                    self.caching = self.lookups > 2 * CACHE_TRIAL
                    if not self.caching:
                        self.cache.clear()
        self.lookups += 1
        for mask, unsure in options:
            if unsure is None or self._can_move(s, unsure):
                self.last = (s, mask)
                return mask
        self.last = (s, self.all_mask)
        return self.all_mask

    def _cluster(self, seed: int, here: list) -> int | None:
        """The smallest cluster containing instance `seed`, as a gid mask, or None;
        `here[g]`: instance g's row of `at` at its current pc."""
        _, candidate, need, _ = here[seed]
        if not candidate:
            return None
        mask = 1 << seed
        if self.singletons:
            return mask if not need else None
        n_inst = self.n_inst
        while need & ~mask:
            new = need & ~mask
            mask |= new
            g = 0
            while new:
                if new & 1:
                    if g < n_inst:
                        has_step, candidate, conflicts, _ = here[g]
                        if has_step and not candidate:
                            return None
                        need |= conflicts
                    else:
                        if self.flush_visible[g - n_inst]:
                            return None
                        need |= self.flush_conflicts[g - n_inst]
                new >>= 1
                g += 1
        return mask

    def _options(self, pcs: tuple, actors: list) -> tuple:
        """The clusters at this pc vector, smallest first: (gid mask, None if one of its
        steps is always enabled, else the instances to try); `chosen` gets their actors."""
        here = [rows[pc] for rows, pc in zip(self.at, pcs)]
        movers = self.all_mask & ~((1 << self.n_inst) - 1)  # a flush may always have a step
        for g, row in enumerate(here):
            if row[0]:
                movers |= 1 << g
        clusters = {c for g in range(self.n_inst) if (c := self._cluster(g, here)) is not None and movers & ~c}
        out = []
        for c in sorted(clusters, key=lambda c: (bin(c).count("1"), c)):
            members = [g for g in range(self.n_actors) if c >> g & 1]
            sure = any(here[g][3] if g < self.n_inst else self.flush_proceeds[g - self.n_inst] for g in members)
            self.chosen.setdefault(c, [actors[g] for g in members])
            out.append((c, None if sure else tuple(members)))
            if sure:
                break  # a cluster that surely moves: no later one is ever tried
        return tuple(out)

    def _dormant(self, s: int) -> tuple[tuple, list, list]:
        """In packed state s: the instances' pcs; per instance and step at its pc, the
        slots of the literals of its guard that are false (the step is disabled while one
        of them keeps its value), or None; per instance, those when every step there has
        some (it cannot move: dormant), else None."""
        key = s >> self.shift & self.mask
        pcs = tuple((key >> sh & mk) + lo for sh, mk, lo in self.fields)
        vals = {k: (s >> sh & mk) + lo for k, (sh, mk, lo) in self.slot_field.items()}
        per_step, blocked = [], []
        for g, pc in enumerate(pcs):
            row = []
            for lits, _, _, _ in self.steps_d[g][pc]:
                row.append(tuple(x[0] for x in lits if not holds(x, vals[x[0]])) or None)
            per_step.append(row)
            blocked.append(tuple(row) if None not in row else None)
        return pcs, per_step, blocked

    def _options_dynamic(self, s: int, actors: list) -> tuple:
        """`_options` with the state-dependent footprints of a model with execution
        contexts (`_dynamic_cluster`)."""
        pcs, per_step, blocked = self._dormant(s)
        vals = {k: (s >> sh & mk) + lo for k, (sh, mk, lo) in self.slot_field.items()}
        movers = self.all_mask & ~((1 << self.n_inst) - 1)
        for g, b in enumerate(blocked):
            if b is None:
                movers |= 1 << g
        clusters = {c for g in range(self.n_inst)
                    if (c := self._dynamic_cluster(g, pcs, vals, per_step, blocked)) is not None and movers & ~c}
        out = []
        for c in sorted(clusters, key=lambda c: (bin(c).count("1"), c)):
            members = [g for g in range(self.n_actors) if c >> g & 1]
            sure = any(self.at[g][pcs[g]][3] if g < self.n_inst else self.flush_proceeds[g - self.n_inst]
                       for g in members)
            self.chosen.setdefault(c, [actors[g] for g in members])
            out.append((c, None if sure else tuple(members)))
            if sure:
                break
        return tuple(out)

    def _dynamic_cluster(self, seed: int, pcs: tuple, vals: dict, per_step: list, blocked: list,
                         why: list | None = None) -> int | None:
        """The smallest cluster from instance `seed` in a state (its pcs, the literals'
        slots' values, `_dormant`'s answers), as a gid mask, or None (with the reason
        in `why`, when given). As `_cluster`, but a step disabled by a false literal of
        its guard, and an actor all of whose steps are, count for nothing as long as the
        literal's slot keeps its value; a conflict through reads that a guard makes only
        where a literal does not hold counts only where it does not. Each slot relied on
        so must keep its value on every run of actors outside the cluster: every actor
        that may still write it (from its pc on) joins the cluster, unless it is dormant
        too (package docstring). `singletons` (liveness): the cluster is the seed alone,
        and the actors it leaves out as dormant must stay so whatever the seed does."""
        n_inst, strict = self.n_inst, self.singletons
        names = self.cm.program.layout.instance_names

        def no(reason: str) -> None:
            if why is not None:
                why.append(reason)


        if blocked[seed] is not None:
            no("it cannot move here")
            return None
        members, dormant, need = 1 << seed, 0, 0
        todo: list[int] = [seed]
        relied: list[tuple[int, bool]] = []  # (slot, the seed may write it)
        seen: dict[int, bool] = {}
        while True:
            if todo:
                g = todo.pop()
                if g >= n_inst:
                    if self.flush_visible[g - n_inst]:
                        no("needs a store buffer's flush, which changes what a property reads")
                        return None
                    need |= self.flush_conflicts[g - n_inst]
                    continue
                for j, ((_, bad, mask, cond), off) in enumerate(zip(self.steps_d[g][pcs[g]], per_step[g])):
                    if off is not None:
                        relied.append((self._easiest(off, members | dormant, pcs), g == seed))
                        continue
                    if bad:
                        text = self.cm.instances[g].process.steps_at[pcs[g]][j].text
                        no(("" if g == seed else f"needs {names[g]}, whose ") + f"step `{text}` {bad}")
                        return None
                    need |= mask
                    for g2, lits in cond:
                        if not need >> g2 & 1:
                            if all(holds(x, vals[x[0]]) for x in lits):
                                relied.extend((x[0], False) for x in lits)
                            else:
                                need |= 1 << g2
                continue
            if relied:
                k, seed_ok = relied.pop()
                if k in seen and (not seen[k] or seed_ok):
                    continue
                seen[k] = seed_ok and seen.get(k, True)
                for w in self.writers.get(k, ()):
                    if w < n_inst and k not in self.reach[w][pcs[w]]:
                        continue
                    if w == seed and strict and not seed_ok:
                        no(f"it may write {self.cm.program.layout.slots[k].name}, which keeps an actor it "
                           "leaves out dormant (liveness)")
                        return None
                    if not (members | dormant) >> w & 1:
                        need |= 1 << w
                continue
            new = need & ~(members | dormant)
            if not new:
                return members
            for g2 in range(self.n_actors):
                if new >> g2 & 1:
                    b = blocked[g2] if g2 < n_inst else None
                    if b is not None:
                        dormant |= 1 << g2
                        relied.extend((self._easiest(off, members | dormant, pcs), False) for off in b)
                    elif strict:
                        no(f"it conflicts with {names[g2] if g2 < n_inst else 'a flush'} (liveness: only a seed "
                           "that conflicts with nobody)")
                        return None
                    else:
                        members |= 1 << g2
                        todo.append(g2)

    def _easiest(self, slots: tuple, inside: int, pcs: tuple) -> int:
        """Of the slots whose literals keep a step disabled, the one fewest actors outside
        `inside` may still write (which would have to join the cluster)."""
        if len(slots) == 1:
            return slots[0]

        def outside(k: int) -> int:
            return sum(1 for w in self.writers.get(k, ()) if not inside >> w & 1
                       and (w >= self.n_inst or k in self.reach[w][pcs[w]]))

        return min(slots, key=outside)

    def blockers(self, s: int) -> dict[str, str]:
        """Why no cluster grows from each instance in packed state s, by instance name
        (an instance with a cluster is left out): the debugging aid of scripts/por_why.py."""
        names = self.cm.program.layout.instance_names
        out = {}
        if not self.dynamic:
            pcs = tuple(((s >> self.shift & self.mask) >> sh & mk) + lo for sh, mk, lo in self.fields)
            for g, pc in enumerate(pcs):
                if self.at[g][pc][0] and self._cluster(g, [rows[p] for rows, p in zip(self.at, pcs)]) is None:
                    out[names[g]] = self.an.why[(g, pc)] or "a conflicting actor cannot join the cluster"
            return out
        pcs, per_step, blocked = self._dormant(s)
        vals = {k: (s >> sh & mk) + lo for k, (sh, mk, lo) in self.slot_field.items()}
        for g in range(self.n_inst):
            why: list[str] = []
            if blocked[g] is None and self._dynamic_cluster(g, pcs, vals, per_step, blocked, why) is None:
                out[names[g]] = why[0]
        return out

    def _can_move(self, s: int, members) -> bool:
        """Some step of the members has a successor in packed state s (one that only
        fails an assertion or raises a model error has none: an ample set of such steps
        would end the search there)."""
        for g in members:
            shift, fmask = self.actor_fields[g]
            table = self.cm.instances[g].steps_at if g < self.n_inst else self.cm.flushes[g - self.n_inst].steps_at
            for cs in table[s >> shift & fmask]:
                try:
                    if cs.packed(s) is not None:
                        return True
                except (AssertionViolation, ModelError, StoreBufferFull):
                    pass
        return False

    def _movable(self, s: int, gids) -> int:
        """The actors among `gids` with a step enabled in packed state s (one that
        moves, or fails)."""
        mask = 0
        for g in gids:
            shift, fmask = self.actor_fields[g]
            table = self.cm.instances[g].steps_at if g < self.n_inst else self.cm.flushes[g - self.n_inst].steps_at
            for cs in table[s >> shift & fmask]:
                try:
                    if cs.packed(s) is not None:
                        mask |= 1 << g
                        break
                except (AssertionViolation, ModelError):
                    mask |= 1 << g  # it moves, into a failure the search reports
                    break
                except StoreBufferFull:
                    pass
        return mask

    def movable(self, s: int) -> int:
        """The actors the last ample set in s left out that could move there."""
        if self.last is None or self.last[0] != s:
            raise AssertionError("movable(s) follows ample(s, ...)")
        left = self.all_mask & ~self.last[1]
        return self._movable(s, [g for g in range(self.n_actors) if left >> g & 1])


