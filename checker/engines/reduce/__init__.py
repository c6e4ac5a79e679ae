"""Reductions for the explicit engine: partial-order reduction, symmetry and step merging.

footprint.py (what steps read and write), por.py, symmetry.py and merge.py hold the three;
this module decides what applies to a run (`plan`).

Both are decided here from the IR before the search. The engine (engines/explicit) calls
them through its `Reduction` hooks: `ample(s, actors)`, the actors whose steps to
expand in state s, and `canonical(t)`, the representative stored for successor t;
`movable` and `concretise` serve the liveness graph and the traces. run.py decides
what applies to a variant (`plan`) and rebuilds counterexamples (see there).

Partial-order reduction (ample sets, as in SPIN; Peled, Holzmann)
------------------------------------------------------------------
Every step has a footprint: the resources it reads and writes. A resource is a slot of
the state vector (a variable or array element, a task state, a store-buffer slot) or
a place proposition `P@label` (which another process or a property reads; a step
writes it when it can move its process into or out of the label's pcs). Side effects
count wherever they sit (`if (xchg(...))`), and so do the wait-queue primitives' task
states. Under tso the flush of each store buffer is an actor of its own, which reads
and writes that buffer and writes every location the buffer holds, so a CPU's plain
stores, its loads of what it may have buffered and its fences depend on its flush.
Under lkmm (memory/lkmm.py) each propagation of one location to one CPU is an actor
that reads and writes that CPU's view of it, and a step the machine runs adds the
machine's slots (Views.footprint): its CPU's views, the history of what it loads, the
SC view when it may fence, every view of a location it stores (a store shifts them
all). The lazy propagations are enabled by their CPU's and the storers' pcs; that read
is left out, since only a step the machine leaves alone can be ample on its own and
it moves its instance from a pc where nothing consults or stores, so it only enables.
The machine's canonical forms (normalise, dead views) change no behaviour and are
not counted.
Two steps of different actors conflict when one writes what the other reads or writes.

In a state, a *cluster* is a set of actors C such that no step of C's instances at
their current pcs (A, the ample set) conflicts with any step, at any pc, of an actor
outside C; and every step in A is
- invisible: it writes nothing an invariant, a `final` condition or a liveness
  property reads (with a `final` condition, moving into or out of a valid end counts);
- no back edge of its process's control flow (a depth-first search from the entry):
  the static cycle proviso;
and some step in A has a successor in the state: it is enabled and does not fail
(known statically for a step with no guard, no sleep, no store buffer to wait for and
nothing that can fail, else tried). A step that only fails an assertion or raises a
model error ends the search there, so it does not count. The engine expands A, for
the smallest cluster found from each instance, or every step when there is none.
Assertions and deadlocks need no visibility; an ample set is never empty where
something can move.

Why the verdicts are those of the full search: take a state s expanded with A, and a
run w of the full model from s to a violation (a state that breaks an invariant, a
step that fails an assertion, raises a model error or finds its buffer full, or a
deadlock).
- If an instance of C moves in w, its first move a is a step of A (C's instances move
  only through A), enabled in s (the steps before it, all outside C, write nothing a
  reads): a commutes to the front, giving a run one step shorter from a(s) to the
  same violation.
- Otherwise every step of w commutes with A. For an enabled a in A, w runs from a(s)
  to a(end), which breaks the same invariant (a is invisible), fails the same step, or
  is no deadlock after all (a is still enabled there). (This is why a must have a
  successor: a failing step leaves nothing to go on from.) This case cannot repeat for
  ever: the states would go round a cycle of the reduced graph; some process moving in
  a cycle goes round a loop of its control flow, so takes a back edge, which no
  reduced ample set contains.
By induction on the length of w, the reduced search reaches a violation of the same
property. Nothing depends on the order of the search, so hash-partitioned workers may
use the same ample sets.

State-dependent footprints (a model with execution contexts, not under lkmm: the
context machinery's flags make most steps wait on another actor). A *literal* is a
conjunct of a step's guard that compares one slot outside every store buffer with a
constant (`in_flight_H[c]`, `!irqs_off[c]`, `curr[c] == 2`, `preemptions < 1`), reached
without a conjunct that may fail: where it is false the step is disabled. In a state s
the cluster grows as above, with three differences. A step of a member that a false
literal disables is not in A and adds no conflicts; an actor all of whose steps at its
pc are disabled so is *dormant*: needed by the cluster, it joins neither C nor A. A
conjunct `lit || e` makes e's reads only where lit is false, so a conflict through them
counts only there (a thread's `irqs_off[c] || !pending_H[c]`). Each literal relied on
so (false for a disabled step, true for a dropped read) must keep its value on every
run of actors outside C: every actor that may still write its slot, from its pc on in
its control flow, joins as C or as dormant. Then no dormant actor moves on such a run
(the first to move would need a relied slot written first, by an actor of C, which does
not move, a dormant one, which is not first, or one that can no longer write it), and
no relied literal changes, so the argument above goes through: the first move of C is a
step of A enabled in s, and the rest commute with A. The cycle proviso keeps the back
edges, except one: a step that loops to its own pc and makes a literal of its guard
false (a delivery's `in_flight_H = false`, an expiry's `armed_T = false`), whose actor
writes that slot nowhere else; on a cycle of states through it another actor writes the
slot back by a step that is no sched-in, so goes round a loop of its own control flow
and takes a back edge of its own, which counts (its writers must have no such step).
Under liveness the cluster is the seed alone, and a dormant actor must be one that no
actor but a dormant one, the seed included, may still wake: it never moves again.
scripts/por_why.py says, state by state, what keeps ample sets out of a variant.

Liveness (weak fairness, engines/liveness.py): clusters are single instances P whose
steps at the pc conflict with no other actor at all. On a fair infinite run from s
the second case needs P enabled forever and never moving, so it arises only for an
`unfair` P; moving P's invisible steps, which no other actor reads, earlier or in
between changes neither what any other instance can do nor the properties'
propositions, so the reordered run is a fair, reduced run that violates the property
too. The graph records, in reduced states too, every actor that could move
(`movable`), so fairness is judged on full enabled sets; and every fair lasso of the
reduced graph is one of the model.

Symmetry is described in symmetry.py, at `Symmetry`.
"""

from __future__ import annotations

import enum

from ...backends.python import CompiledModel
from ..explicit import Reduction
from .footprint import Analysis, Footprint, analyse
from .merge import merge_local_steps
from .por import PartialOrder
from .symmetry import Domain, Symmetry, symmetry_domains

#: the package's face: what the pipeline and the tests use
__all__ = ["Analysis", "Domain", "Footprint", "PartialOrder", "Plan", "Symmetry", "SymmetryMode", "analyse",
           "merge_local_steps", "plan", "symmetry_domains"]

# ---- what a run applies ---------------------------------------------------------------


class SymmetryMode(str, enum.Enum):
    """How --symmetry is set: AUTO applies it where the analysis proves the model
    symmetric, ON does the same and says why wherever it cannot, OFF never. A str enum:
    the command line's word is the member's value."""

    AUTO, ON, OFF = "auto", "on", "off"

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__  # equal to its word, so hashed as it


class Plan(Reduction):
    """The reductions one variant's search applies (the engine's hooks), and in words
    what was applied or left out and why (printed with the results)."""

    def __init__(self, por: PartialOrder | None = None, symmetry: Symmetry | None = None,
                 notes: tuple[str, ...] = ()):
        super().__init__()
        self.por = por
        self.symmetry = symmetry
        self.notes = notes
        self.selects = por is not None
        self.canonicalises = symmetry is not None
        if por is not None:
            self.ample = por.ample
            self.ample_mask = por.ample_mask
            self.movable = por.movable
            self.ample_tables = por.ample_tables
        if symmetry is not None:
            self.canonical = symmetry.canonical
            self.concretise = symmetry.concretise
            self.symmetry_fields = symmetry.tables

    @property
    def active(self) -> bool:
        return self.selects or self.canonicalises


def plan(cm: CompiledModel, por: bool = True, symmetry: str = SymmetryMode.AUTO,
         whole_graph: bool = False, merged: int = 0) -> Plan:
    """Decide the reductions for one compiled variant. `whole_graph`: the caller draws
    the whole state graph (--dot-graph), which no reduction may thin out. `merged`: how
    many local steps `merge_local_steps` merged away in `cm` (for the notes)."""
    notes: list[str] = []
    liveness = bool(cm.liveness)
    if whole_graph:
        if por or symmetry != SymmetryMode.OFF:
            notes.append("no reductions: --dot-graph draws the whole state graph")
        return Plan(notes=tuple(notes))
    order = None
    lkmm = cm.program.model.memory == "lkmm"
    if lkmm:
        if cm.views is None or not cm.views.lazy:
            if por or symmetry == SymmetryMode.ON:
                notes.append("no reductions under lkmm: the search is over every interleaving")
            return Plan(notes=tuple(notes))
        notes.append("under lkmm a store propagates to a CPU only where that CPU next reads, fences or holds "
                     "up a store, and views no step reads again are kept canonical (--no-por: neither)")
        why = ("the variant has liveness properties" if liveness else
               "execution contexts share a CPU's views among its thread and handlers"
               if cm.program.model.cpus is not None else "")
        if por and why:
            notes.append(f"no partial-order reduction under lkmm: {why}")
        elif por and cm.instances:
            order = PartialOrder(cm, analyse(cm.program), singletons=False)
            notes.append("partial-order reduction under lkmm: a step the machine leaves alone (no shared "
                         "location, no fence) commutes with every other CPU's steps and every propagation")
        por = False  # (decided)
    fair_lines = sorted({fa.span.line for p in cm.program.processes for fa in p.fair_actions})
    if por and liveness and fair_lines:  # the ample-set argument above is made for fairness per process
        notes.append("no partial-order reduction: the variant has liveness properties and `fair` actions (line "
                     + ", ".join(map(str, fair_lines)) + ")")
        por = False
    if por and cm.instances:  # (a model of lemmas alone has nothing to interleave)
        order = PartialOrder(cm, analyse(cm.program), singletons=liveness)
        if merged:
            notes.append(f"local steps merged into the step that follows them: {merged}")
        if liveness:
            notes.append("liveness: ample sets of one process whose steps no other process can see, "
                         "which keeps weak fairness")
    sym = None
    if symmetry != SymmetryMode.OFF:
        domains, reasons = symmetry_domains(cm.program)
        if domains and liveness:
            if symmetry == SymmetryMode.ON:
                notes.append("symmetry not applied: the variant has liveness properties, and fairness is "
                             "per instance")
        elif domains:
            sym = Symmetry(cm, domains)
            notes.append("symmetry: states counted up to permutations of " +
                         "; ".join(d.describe() for d in domains))
        if symmetry == SymmetryMode.ON:
            if reasons:
                notes.extend("not symmetric: " + r for r in reasons)
            elif not domains and not any(p.count for p in cm.program.processes):
                notes.append("symmetry not applied: the model has no process arrays")
    return Plan(order, sym, tuple(notes))
