"""The language's limits (spec/LANGUAGE.md lists them), in one place: the parser and the
resolver refuse a spec past them with a position, and the stages after them (the IR's
state layout, the compiler) rely on them, so they read the same numbers from here."""

from __future__ import annotations

MAX_NESTING = 160
"""How deep the syntax tree of a spec may nest: each statement inside another, each
operator of an expression (`a + b + c` is two levels), each call or index. The stages
after the parser recurse over the tree, and the Python the steps compile to nests as
deep; a limit checked here, far above the deepest shipped model, is an error with a
position instead of Python's recursion limit somewhere later."""

MAX_EXPANSION = 32
"""How deep `inline` and `fn` calls may nest (a call inside the body of a call inside
...): each is expanded in place, so a chain of calls is as deep to the stages after
the resolver as its bodies nested in one another, past what the spec alone may nest.
A kernel call chain a model follows is a handful of calls deep."""

MAX_LITERAL = (1 << 64) - 1
"""The largest integer literal: the largest u64, so the largest value of any type."""

MAX_PROCESSES = 62  # in a whole model, instances counted (ir.py checks the total)

MAX_VALUES = 65536
"""The most values a model's state holds (variables and array elements, every process
instance's locals counted): each is a slot of the state layout, with Python objects
per slot in every stage, so an array of 10^11 elements would exhaust memory."""

MAX_STEP_LOOP = 1 << 16
"""The most iterations a `while` runs within one step (inside `atomic`, a notifier, an
inline) in the explicit engine: a loop whose state repeats is reported at once as one
that never ends; one that keeps changing its state past this many is reported too, as a
model error with its position, rather than searching on inside a single step."""

MAX_SYNTAX_ERRORS = 10
"""The most syntax errors one run reports: the parser parses the file again after
each (see front/parse.py), and past a few errors the rest are seldom independent."""

RECOVERY_BUDGET = 32 << 20
"""How many characters the parser may parse again, in all, to find the syntax errors
after the first: a spec of a few MB gets the first few errors, not a minute's wait."""

# states the explicit search behind `--strengthen` stores at most, by default
# (engines/smt/houdini.py: candidate invariants are read off them)
STRENGTHEN_STATES = 100_000
