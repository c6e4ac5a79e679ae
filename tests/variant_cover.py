"""Which variants of a shipped model a per-model cross-check runs.

The cross-checks of one engine against another on the shipped models (the C loop and
the generated level loop against the generic one, the recorded coverage against a pass
over every state, BMC's depths against the explicit search's) compare code, not verdicts: what they can find wrong is a statement
or branch that one side runs differently. A variant whose every statement and branch
outcome, under its memory model, some other checked variant also runs adds states to
search but no code to compare. So a model's cross-checks run a covering set: variants
chosen, fewest states first, until the statements and branch outcomes they run between
them are every one that any variant's search runs, under each memory model the file
uses. A model with few states in all runs every variant. The verdict tests (test_models,
test_reduce, test_promela) still run every variant.
"""

from __future__ import annotations

from pathlib import Path

from shared_runs import checked

#: a model whose variants have at most this many states between them is checked whole
SMALL = 2_000


def _items(v) -> frozenset:
    """What one variant's search runs: (memory model, statement, outcome) for each
    statement that ran and each branch outcome it took."""
    out = set()
    for s in v.coverage.statements:
        if s.executed:
            out.add((v.memory, s.process, s.line, s.col, ""))
            out.update((v.memory, s.process, s.line, s.col, b) for b, taken in s.branches if taken)
    return frozenset(out)


def covering_variants(path: str | Path) -> tuple[str, ...]:
    """Variants of the model at `path`, in file order: all of them when the model is small
    or a variant's coverage is unknown (a search cut short), else a covering set (above)."""
    variants = checked(path).variants  # the default search, shared with the verdict tests
    if sum(v.stats.states for v in variants) <= SMALL or any(v.coverage is None for v in variants):
        return tuple(v.variant for v in variants)
    runs = {v.variant: _items(v) for v in variants}
    states = {v.variant: v.stats.states for v in variants}
    every = frozenset().union(*runs.values())
    need, left, chosen = every, dict(runs), []
    while need:  # greedy set cover: the most new items per state, ties by file order
        best = max(left, key=lambda n: (len(left[n] & need) / max(states[n], 1), -list(runs).index(n)))
        chosen.append(best)
        need -= left.pop(best)
    for name in reversed(list(chosen)):  # a variant a later choice made redundant goes
        if frozenset().union(*(runs[n] for n in chosen if n != name)) == every:
            chosen.remove(name)
    return tuple(v.variant for v in variants if v.variant in chosen)
