"""Candidate invariants for k-induction, mined from the explicit engine's reachable states.

k-induction fails on a property that holds when its step case starts from a state no
run reaches (a counterexample to induction); an invariant that rules that state out
makes it provable. The explicit engine's reachable states suggest such invariants:
the values each slot takes (`x <= 3`, `vcpu@idle` never happens), the values one slot
takes whenever another has a given value (`vcpu@wait -> pending == 0`, one pc excluding
another instance's, one flag implying another), and the equalities and orderings
between variables, everywhere or at one pc (`timer@fire -> armed == deadline`).

They are only guesses: a search cut short by its state limit sees only some states,
and even a complete one is not a proof (it could have a bug the proof must not share).
engines/smt/induction.py keeps a candidate only when its own base case holds and its
step case holds assuming every candidate kept (Houdini: drop what fails, repeat to a
fixpoint), so what it assumes in the end is jointly inductive whatever the search saw.
"""

from __future__ import annotations

import enum
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import z3

from ... import model as m
from ...backends.python import CompiledModel
from ...base.errors import SpecError
from ...base.limits import STRENGTHEN_STATES
from ...ir import TASK_STATES, SlotKind
from ..explicit import Limits, explore
from .encode import Encoding, slot_interval
from .terms import conj, disj
from ...base.record import record

#: a slot with at most this many values is a premise of implications (`x == v -> ...`)
PREMISE_VALUES = 8
#: a conclusion `y in S` is written out for at most this many values (else as a range)
CONCLUSION_VALUES = 3
#: candidates beyond this many are not made (the families are made in order, cheapest first)
MAX_CANDIDATES = 6000
#: control locations (pc combinations) beyond this many: no candidates per location
MAX_CONTROL = 5000
#: valuations at all control locations together beyond this many: no exact candidates
MAX_VALUATIONS = 20_000


class Family(enum.Enum):
    """Which kind of guess a candidate is (the text output lists the readable ones)."""

    VALUES = "values"  # a constant, bounds inside the type, a pc never reached
    PAIR = "pair"  # between two slots: an implication from one's value, ==, <=
    PC_EQUAL = "pc equal"  # `proc@L -> x == y`
    LOCATION = "location"  # per control location, one slot's values
    REACHED = "reached"  # the control locations seen, and the valuations seen at each


@record(eq=False)
class Candidate:
    """A guess at an invariant: its text in the spec's names, its Z3 term over the
    encoding's current state, and the same test in Python (cheap on a solver's state)."""

    text: str
    holds: Any  # z3.BoolRef over Encoding.cur
    test: Callable[[Sequence[int]], bool]  # the same over a state tuple (the layout's values)
    family: Family


@record
class Mined:
    """What one mining search found: the candidates, how many states they were read off,
    whether the search saw every reachable state, and what cut it short (or "")."""

    candidates: tuple[Candidate, ...]
    states: int
    complete: bool
    limit: str

    def describe(self) -> str:
        if self.complete:
            return f"{len(self.candidates)} candidate invariants mined from all {self.states:,} reachable states"
        return (f"{len(self.candidates)} candidate invariants mined from {self.states:,} reachable states "
                f"(not all: {self.limit})")


def mine(cm: CompiledModel, enc: Encoding, max_states: int = STRENGTHEN_STATES,
         check_deadlock: bool = True) -> Mined:
    """The candidates read off an explicit search of at most `max_states` states."""
    try:
        ex = explore(cm, Limits(max_states=max_states, check_deadlock=check_deadlock), graph=True)
    except SpecError as e:  # e.g. `any` over u64: too many initial states to enumerate
        return Mined((), 0, False, f"the explicit engine cannot search this variant ({e.message})")
    graph = ex.graph
    assert graph is not None
    states = list(graph.states)
    complete = ex.stats.complete and ex.model_error is None
    limit = "" if complete else (ex.stats.limit or "the search stopped at a model error")
    if not states:
        return Mined((), 0, complete, limit)
    return Mined(tuple(Miner(cm, enc, states, complete).candidates()), len(states), complete, limit)


class Miner:
    """The candidate families over one set of states (each a tuple in the layout's order)."""

    def __init__(self, cm: CompiledModel, enc: Encoding, states: Sequence[tuple[int, ...]], complete: bool = False):
        self.complete = complete  # the states are every reachable state
        self.enc = enc
        self.layout = cm.layout
        self.pc_names = {inst.name: inst.process.pc_names for inst in cm.instances}
        self.columns = list(zip(*states))
        self.values = [sorted(set(c)) for c in self.columns]
        self.out: list[Candidate] = []
        self.seen: set[str] = set()
        self.family = Family.VALUES  # of the candidates being made
        self.atoms: dict[tuple[int, int], Any] = {}

    def candidates(self) -> list[Candidate]:
        n = len(self.columns)
        varying = [j for j in range(n) if len(self.values[j]) > 1]
        pcs = [j for j in varying if self.layout.slots[j].kind is SlotKind.PC]
        others = [j for j in varying if j not in pcs]
        self.family = Family.REACHED
        exact = self.seen_at_control(pcs, others)
        self.family = Family.VALUES
        for j in range(n):
            self.ranges(j)
        if exact and self.complete:
            return self.out  # every other family's true guesses follow from the states reached
        self.family = Family.PAIR
        for a in varying:
            for b in varying:
                if a < b:
                    self.pair(a, b)
        self.family = Family.PC_EQUAL
        for a in varying:
            for b in varying:
                if a < b and self.comparable(a, b) and not self.always(operator.eq, a, b):
                    self.equal_at_pcs(pcs, a, b)
        self.family = Family.LOCATION
        self.at_control(pcs, others)
        return self.out

    # -- the families
    def ranges(self, j: int) -> None:
        """The values slot j takes: a constant, bounds inside its type, pcs never reached."""
        vals = self.values[j]
        sl = self.layout.slots[j]
        dom_lo, dom_hi = self.domain(j)
        if len(vals) == 1 and dom_lo != dom_hi:
            c = vals[0]
            self.add(self.atom_text(j, c), self.atom(j, c), lambda s: s[j] == c)
            return
        if sl.kind is SlotKind.PC:
            for v in range(dom_lo, dom_hi + 1):
                if v not in vals:
                    self.add(f"!{self.atom_text(j, v)}", z3.Not(self.atom(j, v)), _differs(j, v))
        elif self.ordered(j):
            if vals[0] > dom_lo:
                lo = vals[0]
                self.add(f"{sl.name} >= {self.shown(j, lo)}", self.ge(j, lo), lambda s: s[j] >= lo)
            if vals[-1] < dom_hi:
                hi = vals[-1]
                self.add(f"{sl.name} <= {self.shown(j, hi)}", self.le(j, hi), lambda s: s[j] <= hi)

    def pair(self, a: int, b: int) -> None:
        """Between two varying slots: implications from a small slot's values, equality,
        ordering."""
        pairs = set(zip(self.columns[a], self.columns[b]))
        if self.comparable(a, b) and all(p == q for p, q in pairs):
            self.add(f"{self.layout.slots[a].name} == {self.layout.slots[b].name}", self.enc.cur[a] == self.enc.cur[b],
                     lambda s: s[a] == s[b])
            return  # (every implication between their values follows)
        for x, y in ((a, b), (b, a)):
            if len(self.values[x]) <= PREMISE_VALUES:
                by_value: dict[int, set[int]] = {}
                for p in pairs:
                    by_value.setdefault(p[0] if x == a else p[1], set()).add(p[1] if x == a else p[0])
                for v in self.values[x]:
                    self.implies(x, v, y, by_value.get(v, set()))
        if self.comparable(a, b) and self.ordered(a) and self.ordered(b):
            if all(p <= q for p, q in pairs):
                self.add(f"{self.layout.slots[a].name} <= {self.layout.slots[b].name}", self.le_slots(a, b),
                         lambda s: s[a] <= s[b])
            elif all(p >= q for p, q in pairs):
                self.add(f"{self.layout.slots[b].name} <= {self.layout.slots[a].name}", self.le_slots(b, a),
                         lambda s: s[b] <= s[a])

    def implies(self, x: int, v: int, y: int, ys: set[int]) -> None:
        """`x == v -> y in ys`, when ys is not every value y takes."""
        self.implied(self.atom_text(x, v), self.atom(x, v), lambda st: st[x] != v, y, ys)

    def implied(self, premise_text: str, premise, unless: Callable[[Sequence[int]], bool], y: int,
                ys: set[int]) -> None:
        """`premise -> y in ys`, when ys is not every value y takes (`unless` tests the
        premise false on a state tuple)."""
        if not ys or len(ys) == len(self.values[y]):
            return
        vals = sorted(ys)
        lo, hi = vals[0], vals[-1]
        if len(vals) <= CONCLUSION_VALUES:
            text = " || ".join(self.atom_text(y, w) for w in vals)
            text = f"({text})" if len(vals) > 1 else text
            concl = disj(self.enc.ctx, *[self.atom(y, w) for w in vals])
            within = frozenset(vals)
            test: Callable[[Sequence[int]], bool] = lambda st: unless(st) or st[y] in within  # noqa: E731
        elif self.ordered(y) and (lo, hi) != (self.values[y][0], self.values[y][-1]):
            name = self.layout.slots[y].name
            text = f"({self.shown(y, lo)} <= {name} && {name} <= {self.shown(y, hi)})"
            concl = conj(self.enc.ctx, self.ge(y, lo), self.le(y, hi))
            test = lambda st: unless(st) or lo <= st[y] <= hi  # noqa: E731
        else:
            return
        self.add(f"{premise_text} -> {text}", z3.Implies(premise, concl), test)

    def equal_at_pcs(self, pcs: list[int], a: int, b: int) -> None:
        """`proc@L -> x == y` for the pcs L at which x == y in every state seen."""
        same = list(map(operator.eq, self.columns[a], self.columns[b]))
        if not any(same):
            return
        eq = self.enc.cur[a] == self.enc.cur[b]
        text = f"{self.layout.slots[a].name} == {self.layout.slots[b].name}"
        for p in pcs:
            differ = {pc for pc, s in zip(self.columns[p], same) if not s}
            for v in self.values[p]:
                if v not in differ:
                    self.add(f"{self.atom_text(p, v)} -> {text}", z3.Implies(self.atom(p, v), eq),
                             _equal_unless_at(p, v, a, b))

    def seen_at_control(self, pcs: list[int], others: list[int]) -> bool:
        """Per control location, the valuations of the other varying slots seen there,
        `(a@L && b@M) -> (x, y) in {...}`: together (with the constants) exactly the
        states the search reached. When it reached them all, that set is closed under
        every step, so these candidates are inductive at k = 0 and every other true
        invariant is implied by them; when it was cut short, the locations at its
        frontier fail and the weaker families are what is left. Whether they were made
        (not with too many locations or valuations)."""
        if not pcs and not others:
            return False
        n = len(self.columns[0])
        keys = zip(*[self.columns[p] for p in pcs]) if pcs else itertools.repeat((), n)
        rows = zip(*[self.columns[y] for y in others]) if others else itertools.repeat((), n)
        at: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
        for c, w in zip(keys, rows):
            at.setdefault(c, set()).add(w)
        if len(at) > MAX_CONTROL or sum(len(v) for v in at.values()) > MAX_VALUATIONS:
            return False
        ctx = self.enc.ctx
        if pcs:
            locations = frozenset(at)
            self.add(f"the pcs are at one of the {len(at)} control locations seen",
                     disj(ctx, *[conj(ctx, *[self.atom(p, v) for p, v in zip(pcs, c)]) for c in sorted(at)]),
                     lambda st: tuple(st[p] for p in pcs) in locations)
        if not others:
            return True
        names = ", ".join(self.layout.slots[y].name for y in others)
        for c in sorted(at):
            where = " && ".join(self.atom_text(p, v) for p, v in zip(pcs, c))
            premise = conj(ctx, *[self.atom(p, v) for p, v in zip(pcs, c)])
            vals = sorted(at[c])
            concl = disj(ctx, *[self.all_of([self.atom(y, w) for y, w in zip(others, val)]) for val in vals])
            shown = ("{" + ", ".join("(" + ", ".join(self.shown(y, w) for y, w in zip(others, val)) + ")"
                                     for val in vals) + "}") if len(vals) <= 3 else f"one of {len(vals)} valuations seen"
            self.add(f"({where}) -> ({names}) in {shown}" if pcs else f"({names}) in {shown}",
                     z3.Implies(premise, concl), _within_unless_at(pcs, c, others, frozenset(vals)))
        return True

    def at_control(self, pcs: list[int], others: list[int]) -> None:
        """Per control location (the pcs of every process at once, as the search saw
        them): the values each other slot takes there, `(a@L && b@M) -> x in S`. Progress
        through two processes' code is what these models' properties are about, and a
        pair of slots cannot say it."""
        if len(pcs) < 2:
            return
        keys = list(zip(*[self.columns[p] for p in pcs]))
        control = sorted(set(keys))
        if len(control) > MAX_CONTROL:
            return
        texts = {c: " && ".join(self.atom_text(p, v) for p, v in zip(pcs, c)) for c in control}
        terms = {c: conj(self.enc.ctx, *[self.atom(p, v) for p, v in zip(pcs, c)]) for c in control}
        for y in others:
            at: dict[tuple[int, ...], set[int]] = {}
            for c, w in zip(keys, self.columns[y]):
                at.setdefault(c, set()).add(w)
            for c in control:
                self.implied(f"({texts[c]})", terms[c], _elsewhere(pcs, c), y, at[c])

    def always(self, rel, a: int, b: int) -> bool:
        return all(map(rel, self.columns[a], self.columns[b]))

    # -- slots, values, terms
    def add(self, text: str, holds, test: Callable[[Sequence[int]], bool]) -> None:
        if len(self.out) < MAX_CANDIDATES and text not in self.seen:
            self.seen.add(text)
            self.out.append(Candidate(text, holds, test, self.family))

    def domain(self, j: int) -> tuple[int, int]:
        """The values slot j's type allows (the encoding's one definition)."""
        return slot_interval(self.layout, j)

    def ordered(self, j: int) -> bool:
        """Whether `<=` on slot j's values means something (integers, unsigned bit-vectors)."""
        sl = self.layout.slots[j]
        t = sl.type
        return sl.kind is SlotKind.VAR and (isinstance(t, m.IntT) or (isinstance(t, m.BitVecT) and not t.signed))

    def comparable(self, a: int, b: int) -> bool:
        """Two variables whose equality means something: of one kind and sort."""
        sa, sb = self.layout.slots[a], self.layout.slots[b]
        if sa.kind is not SlotKind.VAR or sb.kind is not SlotKind.VAR:
            return False
        ta, tb = sa.type, sb.type
        if isinstance(ta, m.BitVecT) or isinstance(tb, m.BitVecT):
            return isinstance(ta, m.BitVecT) and isinstance(tb, m.BitVecT) and ta.width == tb.width
        if isinstance(ta, m.EnumT) or isinstance(tb, m.EnumT):
            return ta == tb
        return isinstance(ta, m.BoolT) == isinstance(tb, m.BoolT)

    def const(self, j: int, v: int):
        return z3.BitVecVal(v, self.enc.cur[j].size(), self.enc.ctx)

    def atom(self, j: int, v: int):
        """`slot j == v`, made once per slot and value (a state set's candidate repeats
        each atom for every valuation, and the Python API's term building dominates)."""
        key = (j, v)
        t = self.atoms.get(key)
        if t is None:
            t = self.atoms[key] = self.enc.cur[j] == self.const(j, v)
        return t

    def all_of(self, terms: list):
        """And of atoms (never the constants true or false) through one C call: the
        Python API's coercions cost more than Z3 over thousands of valuations."""
        if len(terms) == 1:
            return terms[0]
        ctx = self.enc.ctx
        args = (z3.Ast * len(terms))(*[t.as_ast() for t in terms])
        return z3.BoolRef(z3.Z3_mk_and(ctx.ref(), len(terms), args), ctx)

    def ge(self, j: int, v: int):
        x = self.enc.cur[j]
        return z3.UGE(x, self.const(j, v)) if isinstance(self.layout.slots[j].type, m.BitVecT) else x >= v

    def le(self, j: int, v: int):
        x = self.enc.cur[j]
        return z3.ULE(x, self.const(j, v)) if isinstance(self.layout.slots[j].type, m.BitVecT) else x <= v

    def le_slots(self, a: int, b: int):
        x, y = self.enc.cur[a], self.enc.cur[b]
        return z3.ULE(x, y) if isinstance(self.layout.slots[a].type, m.BitVecT) else x <= y

    def shown(self, j: int, v: int) -> str:
        t = self.layout.slots[j].type
        return str(m.value_of(v, t) if isinstance(t, m.BitVecT) else v)

    def atom_text(self, j: int, v: int) -> str:
        """`slot == v` as the spec writes it: `inst@label`, `flag` / `!flag`, enum members."""
        sl = self.layout.slots[j]
        t = sl.type
        if sl.kind is SlotKind.PC:
            assert sl.process is not None
            return f"{sl.process}@{self.pc_names[sl.process][v]}"
        if sl.kind is SlotKind.TASK:
            return f"{sl.name} == {TASK_STATES[v]}"
        if isinstance(t, m.BoolT):
            return sl.name if v else f"!{sl.name}"
        if isinstance(t, m.EnumT):
            return f"{sl.name} == {t.members[v]}"
        return f"{sl.name} == {self.shown(j, v)}"


# the Python tests of candidates made in loops (a closure per value, not per loop)
Test = Callable[[Sequence[int]], bool]


def _differs(j: int, v: int) -> Test:
    return lambda s: s[j] != v


def _elsewhere(pcs: list[int], c: tuple[int, ...]) -> Test:
    return lambda s: tuple(s[p] for p in pcs) != c


def _equal_unless_at(p: int, v: int, a: int, b: int) -> Test:
    return lambda s: s[p] != v or s[a] == s[b]


def _within_unless_at(pcs: list[int], c: tuple[int, ...], others: list[int], within: frozenset) -> Test:
    return lambda s: tuple(s[p] for p in pcs) != c or tuple(s[y] for y in others) in within
