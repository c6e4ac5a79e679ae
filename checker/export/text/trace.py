"""Counterexamples as numbered traces: each step, what it decided, the violating
state, lassos and lemma counterexamples."""

from __future__ import annotations

import os
import textwrap

from ...base.safe_text import printable
from ..files import describe, loop_back, shape
from ...results.trace import (LKMM_COMPLETE, LKMM_PARTIAL, Counterexample, PropertyOutcome, RunResult, Trace, Verdict,
                              show_number, show_value)
from .race import race_diagram, race_lines, race_runs
from .words import BOTH, COMPACT, CTI, DIAGRAM, FEW, TRACE, who
from .wrap import KEEP, wrap_cell


def format_counterexample(cx: Counterexample, variant: str, width: int = 100, show: str = BOTH) -> str:
    """A counterexample: its title, message and length, then the numbered trace and/or
    the race diagram (`show`), then the violating state."""
    t = cx.trace
    if cx.kind == "lemma":
        return format_lemma_counterexample(cx, variant, width)
    if cx.kind == CTI:
        title = f"Counterexample to induction: variant {variant}, {cx.property}"
    else:
        title = f"Counterexample: variant {variant}, {describe(cx)}"
    lines = wrap_cell(title, width, rest="  ")
    lines += ["=" * min(max(map(len, lines)), width)]
    lines += textwrap.wrap(cx.message, width) or [""]
    if cx.engine != "explicit":
        lines.append(f"found by {cx.engine}; replayed through the compiled steps")
    lines += [shape(t), ""]
    if show in (TRACE, BOTH):
        lines += [format_trace(t, width), ""]
    if show in (DIAGRAM, BOTH):
        lines += [race_diagram(t, width), ""]
    elif show == COMPACT:
        lines += [race_lines(t, width), ""]
    lines += violation_lines(cx, width)
    return "\n".join(lines).rstrip("\n")


def compact_counterexample(cx: Counterexample, variant: str, width: int = 100,
                           same: tuple[tuple[str, Counterexample], ...] = ()) -> str:
    """An expected violation as the default output shows it: one title line (`variant:
    property`, how long the trace is) and its race, one line per run of steps by one
    process: the steps, the line it stopped at, what it left changed.
    `same`: other (variant, counterexample) pairs with exactly this race, named in the
    title rather than shown again. A lemma's counterexample (its values are the point)
    and a violation in the initial state (no race) are shown whole."""
    also = ", ".join((c.property if c.kind == cx.kind else describe(c)) if w == variant
                     else f"in {w}" if describe(c) == describe(cx) else f"{w}/{describe(c)}" for w, c in same)
    named = f"{variant}: {describe(cx)}" + (f" (and {also})" if also else "")
    if not (cx.trace.actions or cx.trace.failure):
        return format_counterexample(cx, variant, width, COMPACT)
    t = cx.trace
    how = shape(t)
    stuck = cx.message.partition("not at a valid end: ")[2] if cx.kind == "deadlock" else ""
    title = named + f": {how}" + (f"; stuck: {stuck}" if stuck else "")
    lines = textwrap.wrap(title, width, subsequent_indent="    ") + [race_runs(t, width)]
    sides: list[str] = []  # each invariant's or final condition's operands, in the state that breaks it
    for c in (cx,) + tuple(c for _, c in same):
        sides += [f"{k} = {v}" for k, v in c.violation if not k.endswith("@") and f"{k} = {v}" not in sides]
    if sides:
        lines += [x.replace(KEEP, " ") for x in  # never cut, and an operand never split from its value
                  wrap_cell("violating state: " + ", ".join(x.replace(" ", KEEP) for x in sides), width, "  ", "      ")]
    return "\n".join(lines)


def format_lemma_counterexample(cx: Counterexample, variant: str, width: int = 100) -> str:
    """A lemma's counterexample: its parameters, then each side of its comparisons,
    in decimal and in hex (a wrapped u64 shows as 0xffff...)."""
    title = f"Counterexample: variant {variant}, lemma {cx.property}"
    lines = [title, "=" * min(len(title), width)]
    lines += textwrap.wrap(cx.message, width) or [""]
    values = [(k, show_number(v)) for k, v in cx.trace.states[0].values]
    if cx.violation:  # every side of every comparison, evaluated at these parameters
        values = [(k, show_number(int(v)) if v.lstrip("-").isdigit() else v) for k, v in cx.violation]
    namew = min(max((len(k) for k, _ in values), default=0), 50)
    for k, v in values:
        lines.append(f"    {k.ljust(namew)} = {v}")
    return "\n".join(lines)


POR_STEM = "; with partial-order reduction: the stem is the shortest of the reduced interleavings (--no-por: of all)"


def liveness_summary(result: RunResult, full: bool = True) -> list[str]:
    """Per liveness verdict, the fairness it rests on (grouped by the assumption made).
    Not `full`, for more than a few verdicts: those that say the usual are counted."""
    groups: dict[tuple[str, ...], list[tuple[str, PropertyOutcome]]] = {}
    for v in result.variants:
        for o in v.outcomes:
            if o.kind == "liveness":
                groups.setdefault(v.fairness, []).append((f"{v.variant}/{o.property}", o))
    lines, por = [], False
    for fairness, said in groups.items():
        assumed = "; ".join(fairness) if fairness else "no processes"
        lines.append(f"liveness verdicts assume {assumed}; a run may stop only where no fair process can move:")
        if full or len(said) <= FEW:
            lines += [f"  {name}: {o.verdict.value}" + (f"; {_short(o.note)}" if o.note else "") for name, o in said]
            continue
        usual = [o for _, o in said if o.verdict is Verdict.HOLDS or (
            o.verdict is Verdict.VIOLATED and o.counterexample is not None and "cut short" not in o.note)]
        lines[-1] = lines[-1].rstrip(":") + ": " + ", ".join(
            f"{n} {word}" for n, word in ((sum(o.verdict is Verdict.HOLDS for o in usual), "hold"),
                                         (sum(o.verdict is Verdict.VIOLATED for o in usual), "violated")) if n) \
            + " (--full: each, with the processes whose fairness it needed)"
        por |= any(o.note.endswith(POR_STEM) for o in usual)
        lines += [f"  {name}: {o.verdict.value}" + (f"; {_short(o.note)}" if o.note else "")
                  for name, o in said if not any(o is u for u in usual)]
    if por:
        lines.append("  with partial-order reduction: each violation's stem is the shortest of the reduced "
                     "interleavings (--no-por: of all)")
    return lines


LKMM_SHORT = "holds for the LKMM outcomes this semantics explores (the LKMM note says what it leaves out)"
LKMM_COMPLETE_SHORT = "holds for every LKMM outcome of this model (the LKMM note says why)"


def _short(note: str) -> str:
    """A verdict's note with the LKMM statement, which the footer says once, named only
    (it is the note's last part)."""
    for long, short in ((LKMM_PARTIAL, LKMM_SHORT), (LKMM_COMPLETE, LKMM_COMPLETE_SHORT)):
        at = note.find(long)
        if at >= 0:
            return note[:at] + short
    return note


def format_trace(t: Trace, width: int = 100) -> str:
    lines = ["Trace:"]
    init = t.states[0]
    lines.append("  initial state:")
    for chunk in _wrap_assignments([(k, v) for k, v in init.values], width - 6):
        lines.append("      " + chunk)
    pcs = ", ".join(f"{p}@{label}" for p, label in init.pcs)
    for chunk in textwrap.wrap(pcs, width - 6) or [""]:
        lines.append("      " + chunk)
    numw = len(str(max(t.length, 1)))
    # the process column fits the longest name that moves (a generated expiry or delivery)
    procw = min(max([10] + [len(who(a)) for a in t.actions + ((t.failure,) if t.failure else ())]), 20)
    for i, a in enumerate(t.actions, 1):
        if t.loop_start is not None and i - 1 == t.loop_start:
            lines.append(f"  {'-' * 8} loop starts here; the steps below repeat forever {'-' * 8}")
        lines.append(_action_line(i, numw, a, width, procw))
        lines += _explained(a, numw, width)
        for chunk in _wrap_assignments(list(a.changes), width - 8 - numw):
            lines.append(" " * (6 + numw) + chunk)
    if t.loop_start is not None and t.loop_start == t.length:
        lines.append(f"  {'-' * 8} the run stays here for ever {'-' * 8}")
    elif t.loop_start is not None:
        lines.append(f"  {'-' * 8} {loop_back(t)} {'-' * 8}")
    if t.failure is not None:
        a = t.failure
        lines.append(_action_line(t.length + 1, numw, a, width, procw) + "   <-- fails here")
        lines += _explained(a, numw, width)
    return "\n".join(lines)


def _explained(a, numw: int, width: int) -> list[str]:
    """The lines under a step that say what it did: the inline call it belongs to, and
    the branch it took or what its primitives returned."""
    out = []
    pad = " " * (6 + numw)
    if a.call:
        out += wrap_cell(f"in {a.call}", width, pad, pad + "  ")
    if a.detail:
        out += wrap_cell(f"=> {a.detail}", width, pad, pad + "   ")
    return out


def violation_lines(cx: Counterexample, width: int = 100) -> list[str]:
    """The violating state: each operand of the property, then where every process is."""
    if not cx.violation:
        return []
    sides = [(k, v) for k, v in cx.violation if not k.endswith("@")]
    where = [f"{k}{v}" for k, v in cx.violation if k.endswith("@")]
    lines = ["Violating state:" if cx.kind != "lemma" else "Values:"]
    namew = min(max((len(k) for k, _ in sides), default=0), 40)
    lines += [f"    {k.ljust(namew)} = {v}" for k, v in sides]
    if where:
        lines += wrap_cell("processes at: " + ", ".join(where), width, "    ", "      ")
    return lines


def _action_line(i: int, numw: int, a, width: int, procw: int = 10) -> str:
    """`  3. vcpu  pi_timer.spec:120 [inline]  statement`, the statement wrapped at token
    boundaries (never cut) under itself, however long the spec's path is."""
    where = f"{printable(os.path.basename(a.span.file))}:{a.span.line}" if a.span else ""
    ctx = f" [{a.inline}]" if a.inline else ""
    head = f"  {str(i).rjust(numw)}. {who(a):<{procw}} " + (f"{where}{ctx}  " if where or ctx else "")
    if len(head) > width // 2:  # a long process name or path: the statement goes below
        return head.rstrip() + "\n" + "\n".join(wrap_cell(a.text, width, " " * (6 + numw), " " * (8 + numw)))
    return "\n".join(wrap_cell(a.text, width, head, " " * (len(head) + 2)))


def _wrap_assignments(pairs, width: int) -> list[str]:
    parts = [f"{k} = {show_value(v)}" for k, v in pairs]
    out, line = [], ""
    for p in parts:
        if line and len(line) + 2 + len(p) > width:
            out.append(line)
            line = p
        else:
            line = f"{line}, {p}" if line else p
        if len(line) > width:  # one value wider than the line (a long store history): it wraps
            *done, line = wrap_cell(line, width, rest="  ")
            out += done
    if line:
        out.append(line)
    return out


