"""Plain-text output: the summary table, numbered traces, and race diagrams drawn the
way kernel commit messages draw races (one column per CPU, time going down).

Everything here formats result objects; nothing re-runs a model.
"""

from __future__ import annotations

import textwrap

from ..trace import MEMORY, Buffered, Counterexample, RunResult, Trace, Verdict, VariantResult, show_value

MEMORY_NAMES = {"sc": "sequential consistency", "tso": "x86-TSO"}


def verdict_word(o) -> str:
    return o.verdict.value


def _mixed_memory(result: RunResult) -> bool:
    return len({v.memory for v in result.variants}) > 1


def summary_table(result: RunResult) -> str:
    mixed = _mixed_memory(result)
    rows = [("variant", "property", "verdict", "expected", "", "states", "depth", "time")]
    for v in result.variants:
        first = True
        for o in v.outcomes:
            exp = ("violated" if o.expected_violation else "holds") if result.use_expectations else "holds"
            mark = "ok" if o.as_expected else "UNEXPECTED"
            if o.verdict is Verdict.INCOMPLETE:
                mark = "INCOMPLETE"
            rows.append((v.variant if first else "", o.property, verdict_word(o), exp, mark,
                         f"{v.stats.states:,}" if first else "", str(v.stats.depth) if first else "",
                         f"{v.stats.seconds:.2f}s" if first else ""))
            first = False
        if not v.outcomes and v.model_error is None:
            done = "explored" if v.stats.complete else "incomplete"
            rows.append((v.variant, "(no properties)", done, "-", "", f"{v.stats.states:,}",
                         str(v.stats.depth), f"{v.stats.seconds:.2f}s"))
        if v.model_error is not None:
            rows.append((v.variant if first else "", "(model error)", "error", "-", "UNEXPECTED",
                         f"{v.stats.states:,}" if first else "", "", ""))
    if mixed:  # say which memory model each variant ran under
        memory = ["memory"] + [v.memory if k == 0 else "" for v in result.variants
                               for k in range(len(v.outcomes) + (v.model_error is not None))]
        rows = [r[:1] + (mem,) + r[1:] for r, mem in zip(rows, memory)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {6, 7, 8} if mixed else {5, 6, 7}
    lines = []
    for k, r in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def header(result: RunResult) -> str:
    n = len(result.variants)
    if _mixed_memory(result):
        mem = "memory model per variant (see the table)"
    elif result.variants:
        v0 = result.variants[0]
        mem = "memory model " + MEMORY_NAMES.get(v0.memory, v0.memory)
        bounds = sorted({v.store_buffer for v in result.variants if v.store_buffer})
        if bounds:
            mem += f" (store buffers of at most {'/'.join(map(str, bounds))} stores)"
    else:
        mem = "memory model ?"
    live = any(o.kind == "liveness" for v in result.variants for o in v.outcomes)
    return (f"{result.model} ({result.file}): {n} variant{'s' if n != 1 else ''}, "
            f"explicit-state breadth-first search{' and fair-cycle search for liveness' if live else ''}, "
            f"{mem}")


def store_buffer_notes(result: RunResult) -> list[str]:
    """What a tso verdict rests on: the store-buffer bound, and whether it ever bit."""
    lines = []
    tso = [v for v in result.variants if v.memory == "tso" and v.stats.complete]
    free = [v.variant for v in tso if v.stats.buffer_full_states == 0]
    if free:
        bound = max(v.store_buffer or 0 for v in tso if v.variant in free)
        lines.append(f"x86-TSO: no store ever found its store buffer full (at most {bound} stores) in "
                     + ", ".join(free) + ": those verdicts hold for store buffers of any size")
    for v in tso:
        if v.stats.buffer_full_states:
            lines.append(f"x86-TSO: in {v.variant} a store waited for a full store buffer in "
                         f"{v.stats.buffer_full_states:,} states: what holds there holds for store buffers of "
                         f"at most {v.store_buffer} stores (a violation stands for any size; raise the bound "
                         "with --store-buffer N or `memory tso(N)`)")
    return lines


def final_state_notes(result: RunResult) -> list[str]:
    counted = [v for v in result.variants if v.stats.final_states is not None]
    if not counted:
        return []
    return ["distinct final states (every process at a valid end, store buffers empty): "
            + ", ".join(f"{v.variant} {v.stats.final_states:,}" for v in counted)]


def footer(result: RunResult) -> str:
    lines = final_state_notes(result) + store_buffer_notes(result)
    incomplete = [v for v in result.variants if not v.stats.complete]
    for v in incomplete:
        lines.append(f"{v.variant}: search incomplete ({v.stats.limit}) after {v.stats.states:,} states; "
                     "properties without a counterexample are not verified")
    lines += liveness_summary(result)
    bad = [(v.variant, o.property) for v in result.variants for o in v.outcomes if not o.as_expected]
    if result.all_as_expected:
        lines.append("every outcome is as expected" if result.use_expectations else "every property holds")
    elif bad:
        lines.append(f"{len(bad)} outcome(s) differ from expectations: "
                     + ", ".join(f"{v}/{p}" for v, p in bad[:8]) + (" ..." if len(bad) > 8 else ""))
    return "\n".join(lines)


def format_counterexample(cx: Counterexample, variant: str, width: int = 100) -> str:
    t = cx.trace
    title = f"Counterexample: variant {variant}, {cx.kind} {cx.property}"
    lines = [title, "=" * min(len(title), width)]
    lines += textwrap.wrap(cx.message, width) or [""]
    lines += [shape(t), ""]
    lines.append(format_trace(t, width))
    lines.append("")
    lines.append(race_diagram(t, width))
    return "\n".join(lines)


def shape(t: Trace) -> str:
    """How long a trace is, and for a lasso where its loop starts."""
    def steps(n: int) -> str:
        return f"{n} step{'s' if n != 1 else ''}"

    if t.loop_start is None:
        return steps(t.length)
    if t.loop_start == t.length:
        return f"{steps(t.length)} to state {t.loop_start}, where the run stays for ever"
    return (f"{steps(t.loop_start)} to state {t.loop_start}, then a loop of "
            f"{steps(t.length - t.loop_start)} back to state {t.loop_start}, repeated for ever")


def liveness_summary(result: RunResult) -> list[str]:
    """Per liveness verdict, the fairness it rests on (grouped by the assumption made)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for v in result.variants:
        for o in v.outcomes:
            if o.kind == "liveness":
                groups.setdefault(v.fairness, []).append(
                    f"  {v.variant}/{o.property}: {o.verdict.value}" + (f"; {o.note}" if o.note else ""))
    lines = []
    for fairness, rows in groups.items():
        assumed = "; ".join(fairness) if fairness else "no processes"
        lines.append(f"liveness verdicts assume {assumed}; a run may stop only where no fair process can move:")
        lines += rows
    return lines


def format_trace(t: Trace, width: int = 100) -> str:
    lines = ["Trace:"]
    init = t.states[0]
    lines.append("  initial state:")
    for chunk in _wrap_assignments([(k, v) for k, v in init.values], width - 6):
        lines.append("      " + chunk)
    pcs = ", ".join(f"{p}@{l}" for p, l in init.pcs)
    for chunk in textwrap.wrap(pcs, width - 6) or [""]:
        lines.append("      " + chunk)
    numw = len(str(max(t.length, 1)))
    for i, a in enumerate(t.actions, 1):
        if t.loop_start is not None and i - 1 == t.loop_start:
            lines.append(f"  {'-' * 8} loop starts here (state {t.loop_start}); the steps below repeat forever {'-' * 8}")
        lines.append(_action_line(i, numw, a, width))
        for chunk in _wrap_assignments(list(a.changes), width - 8 - numw):
            lines.append(" " * (6 + numw) + chunk)
    if t.loop_start is not None and t.loop_start == t.length:
        lines.append(f"  {'-' * 8} the run stays in state {t.loop_start} for ever {'-' * 8}")
    elif t.loop_start is not None:
        lines.append(f"  {'-' * 8} back to state {t.loop_start} {'-' * 8}")
    if t.failure is not None:
        a = t.failure
        lines.append(_action_line(t.length + 1, numw, a, width) + "   <-- fails here")
    return "\n".join(lines)


def _action_line(i: int, numw: int, a, width: int) -> str:
    where = f"{a.span.file}:{a.span.line}" if a.span else ""
    ctx = f" [{a.inline}]" if a.inline else ""
    head = f"  {str(i).rjust(numw)}. {a.process:<10} " + (f"{where}{ctx}  " if where or ctx else "")
    room = max(20, width - len(head))
    text = a.text if len(a.text) <= room else a.text[: room - 3] + "..."
    return head + text


def _wrap_assignments(pairs, width: int) -> list[str]:
    parts = [f"{k} = {show_value(v)}" for k, v in pairs]
    out, line = [], ""
    for p in parts:
        if line and len(line) + 2 + len(p) > width:
            out.append(line)
            line = p
        else:
            line = f"{line}, {p}" if line else p
    if line:
        out.append(line)
    return out


def race_diagram(t: Trace, width: int = 100) -> str:
    """One column per process, time going down; each step shows the statement and,
    below it, what it changed. Under tso a plain store shows as buffered in its CPU's
    column, and the flush that makes it visible sits in the `memory` column, so the
    delay between the two is on the page."""
    procs: list[str] = [p for p, _ in t.states[0].pcs]
    if any(a.process not in procs and a.kind != "flush" for a in t.actions):
        procs += sorted({a.process for a in t.actions if a.process not in procs and a.kind != "flush"})
    pending = [(k, v) for k, v in t.states[-1].values if isinstance(v, Buffered) and v]
    memory_col = None
    if pending or any(a.kind == "flush" for a in t.actions):
        memory_col = len(procs)
        procs = procs + [MEMORY]
    numw = len(str(max(t.length + (1 if t.failure else 0), 1))) + 1
    ncol = max(1, len(procs))
    colw = max(16, (width - numw - 3 * (ncol - 1)) // ncol)
    sep = " | "

    def row(num: str, col: int, text_lines: list[str]) -> list[str]:
        out = []
        for k, tl in enumerate(text_lines or [""]):
            cells = [""] * ncol
            cells[col] = tl
            n = num if k == 0 else ""
            out.append(n.rjust(numw) + " " + sep.join(c.ljust(colw) for c in cells).rstrip())
        return out

    lines = [" " * numw + " " + sep.join(p.center(colw) for p in procs).rstrip(),
             " " * numw + " " + "-+-".join("-" * colw for _ in procs)]
    for i, a in enumerate(t.actions):
        if t.loop_start is not None and i == t.loop_start:
            lines.append(" " * numw + " " + f"~~~ loop: the steps below repeat forever ~~~".center(colw * ncol))
        col = memory_col if a.kind == "flush" else procs.index(a.process)
        body = textwrap.wrap(a.text, colw) or [""]
        effects = "" if a.kind == "flush" else ", ".join(_effect(k, v) for k, v in a.changes)
        if effects:
            body += textwrap.wrap(f"  -> {effects}", colw, subsequent_indent="     ")
        lines += row(f"{i + 1}", col, body)
    if t.failure is not None:
        a = t.failure
        col = procs.index(a.process) if a.process in procs else 0
        body = (textwrap.wrap(a.text, colw) or [""]) + ["  ** FAILS **"]
        lines += row(f"{t.length + 1}", col, body)
    if t.loop_start is not None and t.loop_start == t.length:
        lines.append(" " * numw + " " + "~~~ the run stays here for ever ~~~".center(colw * ncol))
    elif t.loop_start is not None:
        lines.append(" " * numw + " " + f"~~~ back to step {t.loop_start + 1} ~~~".center(colw * ncol))
    if pending and t.loop_start is None:
        body = ["still buffered, not yet visible:"]
        for k, v in pending:
            cpu = k[3:-1] if k.startswith("sb(") and k.endswith(")") else k
            for loc, x in v:
                body += textwrap.wrap(f"{cpu}: {loc} = {show_value(x)}", colw, initial_indent="  ",
                                      subsequent_indent="    ")
        lines += row("", memory_col, body)
    return "\n".join(lines)


def _effect(name: str, value) -> str:
    """A change as the race diagram shows it; a store that went into a store buffer
    reads `x=1 (buffered)` rather than as the whole buffer."""
    if isinstance(value, Buffered):
        return f"{value[-1][0]}={show_value(value[-1][1])} (buffered)" if value else f"{name} empty"
    return f"{name}={show_value(value)}"


def format_run(result: RunResult, show_traces: bool = True, width: int = 100) -> str:
    parts = [header(result), "", summary_table(result)]
    if show_traces:
        for v in result.variants:
            cxs = [o.counterexample for o in v.outcomes if o.counterexample is not None]
            if v.model_error is not None:
                cxs.append(v.model_error)
            for cx in cxs:
                parts += ["", format_counterexample(cx, v.variant, width)]
    foot = footer(result)
    if foot:
        parts += ["", foot]
    return "\n".join(parts)


def variant_label(v: VariantResult) -> str:
    return v.variant
