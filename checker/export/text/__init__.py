"""Plain-text output: the summary table, numbered traces, and race diagrams drawn the
way kernel commit messages draw races (one column per CPU, time going down).

Everything here formats result objects; nothing re-runs a model. The parts: table.py
(the summary table, header, notes, footer), trace.py (numbered traces), race.py (race
diagrams), wrap.py (wrapping at token boundaries); this module puts a run together.
"""

from __future__ import annotations

import textwrap

from ...base.safe_text import printable
from ..files import counterexamples, race_key
from ...results.trace import Counterexample, ReplayResult, ReplayStatus, RunResult
from .race import columns_are_cpus, race_diagram, race_lines, race_runs
from .table import MAX_WARNING_LINES, coverage_lines, footer, header, history_notes, summary_table, verdict_word
from .trace import compact_counterexample, format_counterexample, format_trace, violation_lines
from .words import BOTH, COMPACT, DIAGRAM, TRACE, effect_text
from .wrap import wrap_cell, wrapped

#: the package's face: what the other exporters, the command line and the tests use
__all__ = ["BOTH", "COMPACT", "DIAGRAM", "MAX_WARNING_LINES", "TRACE", "columns_are_cpus", "compact_counterexample",
           "coverage_lines", "effect_text", "footer", "format_counterexample", "format_replay", "format_run",
           "format_trace", "header", "history_notes", "race_diagram", "race_lines", "race_runs", "summary_table", "verdict_word",
           "violation_lines", "wrap_cell", "wrapped"]


def format_run(result: RunResult, show_traces: bool = True, width: int = 100, full: bool = False) -> str:
    """The run as `check` prints it, sized to read in a terminal: a variant whose every
    outcome is as expected is one row of the table, an expected violation shows its race
    one line per run of steps (a race already shown, in this variant or another, is
    named, not shown again), and an unexpected one (or a model error) shows the
    numbered trace and the race diagram. `full`: every row and every counterexample in
    both forms."""
    parts = ["\n".join(wrap_cell(header(result), width, rest="  ")), "",
             summary_table(result, fold=not full, width=width)]
    if show_traces:
        expected = {(v.variant, o.property): o.as_expected for v in result.variants for o in v.outcomes}
        quiet = [(v, cx) for v, cx in counterexamples(result)
                 if not full and expected.get((v.variant, cx.property), False)]
        races: dict[tuple, list[tuple[str, Counterexample]]] = {}  # expected violations with the same race
        for v, cx in quiet:
            races.setdefault(race_key(cx), []).append((v.variant, cx))
        intro, in_full = False, False  # the compact block's one-line legend; was the last one in full?
        for v, cx in counterexamples(result):
            if not any(cx is c for _, c in quiet):
                parts += ["", format_counterexample(cx, v.variant, width, BOTH)]
                in_full = True
                continue
            group = races[race_key(cx)]
            if group[0][1] is not cx:
                continue  # named in the title of the first with its race
            if in_full or not intro:
                parts += [""]
            if not intro:
                parts += textwrap.wrap("Counterexamples of expected violations (variant: property), one line "
                                       "per run of a process's steps: the steps, the line it stopped at, what "
                                       "it left changed (--full: every step):", width)
                intro = True
            parts += [compact_counterexample(cx, v.variant, width, tuple(group[1:]))]
            in_full = False
    foot = footer(result, full=full, traces_shown=show_traces)
    if foot:
        parts += ["", "\n".join(wrapped(foot, width))]
    return "\n".join(parts)


def format_replay(r: ReplayResult, spec_file: str, width: int = 100) -> str:
    """A replay, step by step, then where it diverges or what it still shows."""
    lines = [f"Replay of {printable(r.trace_file)}: {printable(r.kind)} {printable(r.property)}, recorded on variant "
             f"{printable(r.recorded_variant)} ({r.recorded_steps} step{'s' if r.recorded_steps != 1 else ''})",
             f"against {printable(spec_file)}, variant {r.variant}", ""]
    numw = len(str(max(r.recorded_steps, 1)))
    longest = max((len(st.recorded.text) for st in r.steps), default=0)
    marks = {ReplayStatus.OK: "ok", ReplayStatus.CHANGED: "ok, changed", ReplayStatus.SKIPPED: "skipped",
             ReplayStatus.DIVERGED: "DIVERGES"}
    # the edited file's line; a statement it no longer has shows the recorded one, marked
    wheres = [f"line {st.line}" if st.line else (f"was line {st.recorded.span.line}" if st.recorded.span else "")
              for st in r.steps]
    wherew = max(map(len, wheres), default=0)
    procw = max([10] + [len(st.recorded.process) for st in r.steps])
    for st, where in zip(r.steps, wheres):
        a = st.recorded
        head = f"  {str(st.number).rjust(numw)}. {a.process:<{procw}} {where:<{wherew}} "
        mark = f"  [{marks[st.status]}]"
        room = max(20, width - len(head) - len(mark))
        text = a.text if len(a.text) <= room else a.text[: room - 3] + "..."
        lines.append(head + text.ljust(min(room, longest)) + mark)
        if st.note and st.status is not ReplayStatus.DIVERGED:
            for chunk in wrap_cell(st.note, width - 8 - numw):
                lines.append(" " * (6 + numw) + chunk)
    for note in r.notes:
        lines.append(f"  note: {note}")
    lines.append("")
    lines += textwrap.wrap(r.reason, width)
    lines.append("")
    if r.inconclusive:
        lines.append("Result: inconclusive; the replay cannot decide whether this trace still applies.")
    elif r.reproduced:
        verdict = ("as expected: the variant expects this violation" if r.expected_violation
                   else "unexpected: the race is still there")
        lines.append(f"Result: the violation still reproduces ({verdict}).")
    else:
        where = "the initial state" if r.diverged_at == 0 else (
            f"step {r.diverged_at}" if r.diverged_at and r.diverged_at <= r.recorded_steps else "the last state")
        lines += textwrap.wrap(f"Result: this trace no longer applies (from {where} on): this version closes the "
                               "race it shows. Other interleavings may still break "
                               f"{r.property}: `check {spec_file} --variant {r.variant}` searches them all.", width)
    return "\n".join(lines)
