"""How the text forms name a step: its actor (and CPU), its effects, and what a
counterexample view shows; shared by the traces, the race diagrams and the table."""

from __future__ import annotations


from ...results.trace import Buffered, show_value


DIAGRAM, TRACE, BOTH, COMPACT = "diagram", "trace", "both", "compact"  # what format_counterexample shows of a trace
CTI = "counterexample to induction"
FEW = 3  # per-variant details the default output lists before it counts them instead


def effect_text(name: str, value) -> str:
    """A change as the race diagram shows it; a store that went into a store buffer
    reads `x=1 (buffered)` rather than as the whole buffer."""
    if isinstance(value, Buffered) and name.startswith("view("):  # lkmm: what the CPU still reads stale
        cpu = name[5:-1]
        return (f"{cpu} still reads " + ", ".join(f"{loc}={show_value(x)}" for loc, x in value)) if value \
            else f"{cpu} up to date"
    if isinstance(value, Buffered):
        return f"{value[-1][0]}={show_value(value[-1][1])} (buffered)" if value else f"{name} empty"
    return f"{name}={show_value(value)}"


def who(a) -> str:
    """The process, and in a model with execution contexts the CPU it ran on."""
    return a.process if a.cpu is None else f"{a.process}@cpu{a.cpu}"


def on_cpu(a) -> str:
    return "" if a.cpu is None else f"[cpu{a.cpu}] "
