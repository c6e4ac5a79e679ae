"""Race diagrams, drawn the way kernel commit messages draw races: one column per
CPU, time going down; and the one-line-per-run form of an expected race."""

from __future__ import annotations


from ..files import loop_back
from ...results.trace import MEMORY, Buffered, Trace, show_value
from .words import effect_text, on_cpu, who
from .wrap import clip, share_columns, wrap_cell


def race_diagram(t: Trace, width: int = 100, compact: bool = False) -> str:
    """One column per process that takes a step, time going down; each step shows the
    statement and, below it, what it changed. Stores made visible by a TSO flush sit in
    `memory`. Long statements wrap inside their column (at spaces, else after
    punctuation), so the diagram stays within `width` for up to four processes. Where
    more move in a model with execution contexts (threads, handlers, a guest, expiries
    and IPIs in flight), there is one column per CPU instead, as kernel
    commit messages draw races, each step named by its process, and one `other` column
    for the actors that run on no CPU."""
    procs, idle, pending_lines, cpus = _columns(t)
    last = t.length + (1 if t.failure else 0)
    numw = len(str(max(last, 1)))
    sep = " | "
    steps = list(t.actions) + ([t.failure] if t.failure else [])

    def lane(a) -> str:
        if not cpus:
            return a.process
        return MEMORY if a.process == MEMORY else _OTHER if a.cpu is None else f"CPU {a.cpu}"

    def head(a) -> str:
        return f"{a.process}: " if cpus else on_cpu(a)

    ncol = len(procs)
    wants = [max([len(p)] + [max(len(head(a) + a.text), 5 + len(_effects(a))) for a in steps if lane(a) == p]
                 + ([len(x) + 2 for x in pending_lines] if p == MEMORY else [])) for p in procs]
    colws = share_columns(wants, width - numw - 1 - len(sep) * (ncol - 1), _LEAST)
    lead = " " * (numw + 1)

    def row(num: str, col: int, text_lines: list[str]) -> list[str]:
        out = []
        for k, tl in enumerate(text_lines or [""]):
            cells = [""] * ncol
            cells[col] = tl
            out.append((num if k == 0 else "").rjust(numw) + " "
                       + sep.join(c.ljust(w) for c, w in zip(cells, colws)).rstrip())
        return out

    def banner(text: str) -> str:
        return (lead + text.center(sum(colws) + len(sep) * (ncol - 1))).rstrip()

    lines = [(lead + sep.join(p.center(w) for p, w in zip(procs, colws))).rstrip(),
             lead + "-+-".join("-" * w for w in colws)]
    for i, a in enumerate(t.actions):
        if t.loop_start is not None and i == t.loop_start:
            lines.append(banner("~~~ loop: the steps below repeat forever ~~~"))
        colw = colws[procs.index(lane(a))]
        if compact:
            body = [clip(head(a) + " ".join(a.text.split()) + (f" -> {_effects(a)}" if _effects(a) else "")
                         + (f" => {a.detail}" if a.detail else ""), colw)]
        else:
            body = wrap_cell(head(a) + a.text, colw, rest="  ") + _said(a, colw)
            if _effects(a):
                body += wrap_cell(_effects(a), colw, first="  -> ", rest="     ")
        lines += row(f"{i + 1}", procs.index(lane(a)), body)
    if t.failure is not None:
        a = t.failure
        colw = colws[procs.index(lane(a))]
        text = head(a) + a.text if cpus else a.text  # (by process: the column names it)
        body = wrap_cell(text, colw, rest="  ") + _said(a, colw) + ["  ** FAILS **"]
        if compact:
            body = [clip(" ".join(text.split()), colw - 7) + " FAILS"]
        lines += row(f"{t.length + 1}", procs.index(lane(a)), body)
    if t.loop_start is not None and t.loop_start == t.length:
        lines.append(banner("~~~ the run stays here for ever ~~~"))
    elif t.loop_start is not None:
        lines.append(banner(f"~~~ {loop_back(t)} ~~~"))
    if pending_lines and t.loop_start is None:
        colw = colws[procs.index(MEMORY)]
        body = [x for pl in pending_lines for x in (wrap_cell(pl, colw, rest="  ") if pl.endswith(":")
                                                     else wrap_cell(pl, colw, "  ", "    "))]
        lines += row("", procs.index(MEMORY), body)
    if idle:
        lines += wrap_cell(f"(no step taken by: {', '.join(idle)})", width, lead, lead + " ")
    return "\n".join(lines)


def _columns(t: Trace) -> tuple[list[str], list[str], list[str], bool]:
    """A diagram's columns (the processes that move, or the CPUs), the processes that
    take no step, the stores still pending at the end, and whether the columns are CPUs."""
    acting = [a.process for a in t.actions] + ([t.failure.process] if t.failure else [])
    declared = [p for p, _ in t.states[0].pcs]
    procs = [p for p in declared if p in acting]
    procs += sorted({p for p in acting if p not in declared and p != MEMORY})
    idle = [p for p in declared if p not in procs]
    # tso: flushes, and stores still buffered at the end, sit in the `memory` column
    pending = [(k, v) for k, v in t.states[-1].values if isinstance(v, Buffered) and v]
    pending_lines = [] if not pending or t.loop_start is not None else pending_text(pending)
    if MEMORY in acting or pending_lines:
        procs.append(MEMORY)
    if not procs:  # nothing moved (a violation in the initial state): show everyone
        return declared or ["-"], [], pending_lines, False
    steps = list(t.actions) + ([t.failure] if t.failure else [])
    if len(procs) <= _LANES or all(a.cpu is None for a in steps):
        return procs, idle, pending_lines, False
    on = {a.cpu for a in steps if a.process != MEMORY}
    cpus = [f"CPU {c}" for c in sorted(c for c in on if c is not None)] + ([_OTHER] if None in on else [])
    return cpus + ([MEMORY] if MEMORY in procs else []), idle, pending_lines, True


def columns_are_cpus(t: Trace) -> bool:
    """Whether `race_diagram` draws this trace with a column per CPU (else per process)."""
    return _columns(t)[3]


_LEAST = 16  # the narrowest column of a race diagram
_LANES = 4  # the most processes a diagram gives a column each (more: a column per CPU)
_OTHER = "other"  # a diagram by CPU: the column of the actors on no CPU (time, expiries, IPIs in flight)


def race_lines(t: Trace, width: int = 100) -> str:
    """The race in one line per step: who moved, what it ran, what changed and what it
    decided, clipped at a token boundary (the default for an expected violation)."""
    steps = list(t.actions) + ([t.failure] if t.failure else [])
    numw = len(str(max(len(steps), 1)))
    procw = min(max((len(who(a)) for a in steps), default=1), 16)
    lines = []
    for i, a in enumerate(steps, 1):
        if t.loop_start is not None and i - 1 == t.loop_start:
            lines.append(" " * (numw + 1) + "~~~ loop: the steps below repeat forever ~~~")
        text = " ".join(a.text.split())
        if a is t.failure and i == len(steps):
            text += "  ** FAILS **"
        else:
            text += f"  -> {_effects(a)}" if _effects(a) else ""
        text += f"  => {a.detail}" if a.detail else ""
        lines.append(clip(f"{str(i).rjust(numw)} {who(a).ljust(procw)} {text}", width))
    if t.loop_start is not None:
        lines.append(" " * (numw + 1) + (f"~~~ {loop_back(t)} ~~~" if t.loop_start < t.length
                                         else "~~~ the run stays here for ever ~~~"))
    pending = [(k, v) for k, v in t.states[-1].values if isinstance(v, Buffered) and v]
    if pending and t.loop_start is None:  # tso: stores the other CPUs cannot see yet
        lines += [line if line.endswith(":") else "  " + line for line in pending_text(pending)]
    return "\n".join(lines)


def pending_text(pending: list) -> list[str]:
    """tso: stores still in a store buffer; lkmm: CPUs that still read an older store."""
    sb = [(k, v) for k, v in pending if not k.startswith("view(")]
    views = [(k, v) for k, v in pending if k.startswith("view(")]
    out = []
    if sb:
        out.append("still buffered, not yet visible:")
        out += [f"{k[3:-1] if k.startswith('sb(') and k.endswith(')') else k}: {loc} = {show_value(x)}"
                for k, v in sb for loc, x in v]
    if views:
        out.append("not yet propagated (the CPU still reads an older store):")
        out += [f"{k[5:-1]}: {loc} = {show_value(x)}" for k, v in views for loc, x in v]
    return out


def race_runs(t: Trace, width: int = 100) -> str:
    """The race in one line per run (the steps one process takes before another moves):
    its steps, the line it stopped at, and what it left changed (a run of one step: the
    statement, and what it did), clipped at a token boundary. The runs of a lasso's loop are labelled `loop` (the title says how long it
    is). Who ran how far before whom is the race; `--full` has every step."""
    steps = list(t.actions) + ([t.failure] if t.failure else [])
    runs: list[list[int]] = []
    for i, a in enumerate(steps):
        starts_loop = t.loop_start is not None and i == t.loop_start
        if runs and who(steps[runs[-1][0]]) == who(a) and not starts_loop:  # one process on one CPU
            runs[-1][1] = i
        else:
            runs.append([i, i])
    labels = [("loop " if t.loop_start is not None and i >= t.loop_start else "")
              + (f"{i + 1}" if i == j else f"{i + 1}-{j + 1}") for i, j in runs]
    numw = max((len(x) for x in labels), default=1)
    procw = min(max((len(who(steps[i])) for i, _ in runs), default=1), 16)
    wheres = [_lines_of(steps[i:j + 1]) for i, j in runs]
    wherew = max((len(x) for x in wheres), default=0)
    lines = []
    for (i, j), label, where in zip(runs, labels, wheres):
        body = _run_effects(t, i, min(j, t.length - 1)) if i < t.length else ""
        run = steps[i:j + 1]
        head = f"  {label.rjust(numw)} {who(steps[i]).ljust(procw)} {where.ljust(wherew)} "
        if len(run) == 1 and run[0] is not t.failure:  # one step: the statement itself, and what it did
            a = run[0]
            said = (f" -> {body}" if body else "" if a.detail else ", nothing changed") \
                + (f" => {a.detail}" if a.detail and not body else "")
            room = max(width - len(head) - min(len(said), width // 2) - 2, 16)  # the change stays in sight
            body = f"`{clip(' '.join(a.text.split()), room)}`" + said
        elif t.failure is not None and run[-1] is t.failure:
            body = (body + "; " if body else "") + f"** `{' '.join(t.failure.text.split())}` FAILS **"
        elif not body:  # nothing left changed: say what it ran last (a lost store reads so)
            last = run[-1]
            body = f"ran `{' '.join(last.text.split())}`" + (f" => {last.detail}" if last.detail
                                                              else ", nothing changed")
        else:
            body = "-> " + body
        # what a run did is never cut: it wraps under itself
        lines += wrap_cell(body, width, head, " " * min(len(head), width // 3))
    pending = [(k, v) for k, v in t.states[-1].values if isinstance(v, Buffered) and v]
    if pending and t.loop_start is None:  # tso/lkmm: stores some CPU cannot see yet
        entries = pending_text(pending)  # a heading, then its entries: one line for each heading
        while entries:
            k = next((i for i in range(1, len(entries)) if entries[i].endswith(":")), len(entries))
            lines += wrap_cell(f"{entries[0]} " + ", ".join(entries[1:k]), width, "  ", "      ")
            entries = entries[k:]
    return "\n".join(lines)


def _lines_of(steps) -> str:
    """`line 30`: the line a run stopped at (where the next process cut in)."""
    nums = [a.span.line for a in steps if a.span is not None]
    return f"line {nums[-1]}" if nums else ""


def _run_effects(t: Trace, first: int, last: int) -> str:
    """What actions[first..last] left changed: each variable's value after the run, in
    the order the run first wrote it, unless the run put back the value it found."""
    before = dict(t.states[first].values)
    after = dict(t.states[last + 1].values)
    names: list[str] = []
    for a in t.actions[first:last + 1]:
        names += [k for k, _ in a.changes if k not in names]
    shown, views = [], []
    flushes = all(a.kind == "flush" for a in t.actions[first:last + 1])
    for k in names:
        if flushes and k.startswith("sb("):  # a flush: the stores it made visible say it
            continue
        if k in after and after[k] != before.get(k):
            v = after[k]
            if isinstance(v, Buffered) and k.startswith("sb("):
                old = before.get(k)
                shown.append(_buffered_by_run(k, old if isinstance(old, Buffered) else Buffered(), v))
            elif isinstance(v, Buffered) and k.startswith("view("):
                views.append(effect_text(k, v))
            else:
                shown.append(effect_text(k, v))
    # lkmm: what a CPU still reads (older stores) comes after the new values, apart
    return "; ".join(x for x in (", ".join(shown), *views) if x)


def _buffered_by_run(name: str, before: Buffered, after: Buffered) -> str:
    """tso: every store a run put into its store buffer, oldest first, so that a later
    flush of the first one reads in order (not only the newest store)."""
    if not after:
        return f"{name[3:-1]}'s store buffer empty"
    new = after[len(before):] if tuple(after[:len(before)]) == tuple(before) else after
    return ", ".join(f"{loc}={show_value(x)}" for loc, x in new) + " (buffered)"


def _said(a, colw: int) -> list[str]:
    """A step's call site and outcome in its diagram column."""
    out = wrap_cell(f"[{a.call}]", colw, "  ", "   ") if a.call else []
    return out + (wrap_cell(a.detail, colw, "  => ", "     ") if a.detail else [])


def _effects(a) -> str:
    """What a step changed, as the race diagram shows it (a flush's text says it all)."""
    if a.kind == "flush":
        return ""
    return ", ".join(effect_text(k, v) for k, v in a.changes)


