"""Coverage and vacuity findings as results: what the search recorded
(engines/coverage.py) hands to the exporters, and the warnings every exporter shows.
It sits with the results (trace.py), below the exporters, so that text, JSON and SARIF
read the same warnings without importing an engine."""

from __future__ import annotations

import re
from ..base.record import record


@record
class StatementCoverage:
    """One statement (step) of one process: how many of its instances ran it, and for a
    condition which outcomes were taken (by the instances together)."""

    process: str
    line: int
    col: int
    text: str
    kind: str
    executed: int  # instances that ran it
    instances: int
    branches: tuple[tuple[str, bool], ...] = ()  # ("then"/"else" or "enter"/"exit", taken)

    @property
    def dead(self) -> bool:
        return self.executed == 0

    def missed_branches(self) -> tuple[str, ...]:
        return tuple(b for b, taken in self.branches if not taken) if self.executed else ()


@record
class Coverage:
    """What the search recorded for one variant (`note` says why it is None elsewhere)."""

    states: int
    statements: tuple[StatementCoverage, ...]
    never_true: tuple[tuple[str, str], ...]  # (property, what never holds)
    silent_processes: tuple[str, ...]  # processes none of whose instances takes a step
    fingerprint: int  # hash of the set of reachable states (with the layout's names)
    # (line, reason) of each `// coverage: reason` comment: a finding at that line is explained
    explained: tuple[tuple[int, str], ...] = ()
    # (variant, reason) of each `variant NAME ... // coverage: reason` line: it explains
    # that variant's findings of no one line (a process that never moves, the same states)
    variant_explained: tuple[tuple[str, str], ...] = ()
    # the reduction that shaped the search ("partial-order reduction", ...), "" for none:
    # what such a search never saw may happen in an interleaving it skipped
    reduced: str = ""

    def dead(self) -> tuple[StatementCoverage, ...]:
        return tuple(s for s in self.statements if s.dead)

    def warnings(self) -> list[str]:
        out = [f"{s.process}: line {s.line}: `{s.text}` is never executed" for s in self.dead()]
        out += [f"{s.process}: line {s.line}: `{s.text}` never takes its {', '.join(s.missed_branches())} branch"
                for s in self.statements if s.missed_branches()]
        out += [f"{name}: {what} never holds in a reachable state: the property holds vacuously"
                for name, what in self.never_true]
        if self.reduced:  # the search skipped interleavings: say how the finding was decided
            out = [f"{w} (in the search with {self.reduced}; --no-por --no-symmetry decides it over every state)"
                   for w in out]
        return out


def cross_variant_warnings(results: list[tuple[str, Coverage | None, tuple]]) -> list[str]:
    """Warnings that compare variants: two with the same reachable state space (a knob
    that changes nothing), and an invariant that holds in a variant in which a process
    never moves. `results`: (variant, coverage, outcomes)."""
    out = []
    by_print: dict[int, str] = {}
    for variant, cov, outcomes in results:
        if cov is None:
            continue
        first = by_print.setdefault(cov.fingerprint, variant)
        if first != variant:
            out.append(f"{variant}: the same reachable states as {first} ({cov.states:,}): "
                       "does the variant's setting change anything?")
        for proc in cov.silent_processes:
            held = [o.property for o in outcomes if o.kind == "invariant" and o.verdict.value == "holds"]
            if held:
                out.append(f"{variant}: process {proc} never takes a step, so invariants "
                           f"{', '.join(held)} hold without it")
    return out


@record
class Warning_:
    """One coverage or vacuity warning of a run, for text, JSON and SARIF alike."""

    variant: str
    message: str
    line: int  # 0: no one line (a comparison of variants)


EXPLAINED = re.compile(r"//\s*coverage:\s*(.*?)\s*$")  # `// coverage: why`, at the end of a line


def explanations(source: str) -> tuple[tuple[int, str], ...]:
    """(line, reason) of each line of a spec that ends in a `// coverage: reason`
    comment: the model's author says why what is found at that line (a statement never
    executed, a branch never taken, a property that holds vacuously) is so by design."""
    out = []
    for n, text in enumerate(source.splitlines(), 1):
        hit = EXPLAINED.search(text)
        if hit and hit.group(1):
            out.append((n, hit.group(1)))
    return tuple(out)


VARIANT_LINE = re.compile(r"^\s*variant\s+(\w+)\b")


def variant_explanations(source: str) -> tuple[tuple[str, str], ...]:
    """(variant, reason) of each `variant` declaration line that ends in a `// coverage:
    reason` comment: the findings of that variant that have no line of their own (a
    process that never takes a step, the same reachable states as another variant) are
    explained there, since no statement's line could carry them."""
    out = []
    for text in source.splitlines():
        name, hit = VARIANT_LINE.match(text), EXPLAINED.search(text)
        if name and hit and hit.group(1):
            out.append((name.group(1), hit.group(1)))
    return tuple(out)


def memory_warnings(result) -> list[Warning_]:
    """The memory-model findings of a RunResult (an `atomic { }` block over several shared
    locations under tso or lkmm), variant by variant: a question about the model's
    fidelity, which no `// coverage:` comment explains away."""
    return list(dict.fromkeys(Warning_(v.variant, msg, line) for v in result.variants
                              for line, msg in v.memory_findings))


def run_warnings(result) -> list[Warning_]:
    """Every coverage and vacuity warning of a RunResult, variant by variant, but those
    the model explains (`// coverage: why` at their line): explained_warnings has them."""
    return [w for w, why in _all_warnings(result) if why is None]


def explained_warnings(result) -> list[tuple[Warning_, str]]:
    """The warnings the model explains, with the reason its comment gives."""
    return [(w, why) for w, why in _all_warnings(result) if why is not None]


def _all_warnings(result) -> list[tuple[Warning_, str | None]]:
    why: dict[str, dict[int, str]] = {v.variant: dict(v.coverage.explained) for v in result.variants
                                      if v.coverage is not None}
    whole: dict[str, str] = {name: reason for v in result.variants if v.coverage is not None
                             for name, reason in v.coverage.variant_explained}
    return [(w, why.get(w.variant, {}).get(w.line) if w.line else whole.get(w.variant))
            for w in _warnings(result)]


def _warnings(result) -> list[Warning_]:
    out = []
    for v in result.variants:
        out += [Warning_(v.variant, msg, line) for line, msg in getattr(v, "lint", ())]
        cov = v.coverage
        if cov is None:
            continue
        for s in cov.dead():
            out.append(Warning_(v.variant, f"{s.process}: `{s.text}` is never executed", s.line))
        for s in cov.statements:
            if s.missed_branches():
                out.append(Warning_(v.variant, f"{s.process}: `{s.text}` never takes its "
                                    f"{' and '.join(s.missed_branches())} branch", s.line))
        spans = {o.property: o.span for o in v.outcomes}
        for name, what in cov.never_true:
            sp = spans.get(name)
            out.append(Warning_(v.variant, f"{name}: {what} never holds in a reachable state: it holds vacuously",
                                sp.line if sp is not None else 0))
    out += [Warning_(msg.split(":", 1)[0], msg, 0) for msg in
            cross_variant_warnings([(v.variant, v.coverage, v.outcomes) for v in result.variants])]
    return list(dict.fromkeys(out))


def coverage_table(result) -> str:
    """`--coverage`: every statement of every variant, with how many instances ran it."""
    lines = []
    for v in result.variants:
        if v.coverage is None:
            lines.append(f"{v.variant}: {v.coverage_note or 'coverage not computed'}")
            continue
        cov = v.coverage
        ran = sum(not s.dead for s in cov.statements)
        lines.append(f"coverage of {v.variant}: {ran}/{len(cov.statements)} statements executed "
                     f"({cov.states:,} states, {'with ' + cov.reduced if cov.reduced else 'without reduction'})")
        why = dict(cov.explained)
        for s in cov.statements:
            mark = "DEAD" if s.dead else f"{s.executed}/{s.instances}"
            br = "".join(f" {b}:{'yes' if t else 'NO'}" for b, t in s.branches)
            note = f"  (explained: {why[s.line]})" if s.line in why and (s.dead or s.missed_branches()) else ""
            lines.append(f"  {s.process:<12} line {s.line:>4}  {mark:>5}  {s.text}{br}{note}")
    return "\n".join(lines)
