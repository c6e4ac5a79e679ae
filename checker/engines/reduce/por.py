"""Partial-order reduction at run time: the ample sets of the package docstring's argument."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...backends.python import AssertionViolation, CompiledModel, ModelError, StoreBufferFull
from .footprint import Analysis

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

    def ample_tables(self) -> AmpleTables | None:
        """The rows `_options` builds its clusters from, for the native loop, which
        computes the same choice in C; None with store-buffer flushes (not tabled)."""
        from ...backends.c import AmpleTables  # (the C back end, only for a native search)

        if self.n_actors != self.n_inst or any(lo for _, _, lo in self.fields):
            return None
        return AmpleTables(tuple(tuple(row) for row in self.at), self.singletons)

    def ample(self, s: int, actors: list) -> list:
        mask = self.ample_mask(s, actors)
        return actors if mask == self.all_mask else self.chosen[mask]

    def ample_mask(self, s: int, actors: list) -> int:
        """`ample` as a gid mask (the generated level loop tests one bit per actor)."""
        key = s >> self.shift & self.mask
        options = self.cache.get(key)
        if options is None:
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


