"""Mermaid sequence diagrams (`--mermaid DIR`, one `<model>.<variant>.<property>.mmd`
per counterexample), for pull requests and review pages that render Mermaid.

One participant per process that takes a step, plus `shared memory`. A step that
writes shared variables is a message to memory, a step that wakes another process is
a message to that process, any other step is a note over its process; each carries
its step number, statement and spec line, and what it changed. A lasso's loop is a
Mermaid `loop` block; the violation is the closing note.
"""

from __future__ import annotations

from ..results.trace import Action, Counterexample, RunResult, Trace, show_value
from .files import counterexamples, describe, file_stem, loop_back, write_text
from .text import effect_text, wrap_cell

MEMORY = "mem"
WRAP = 48  # characters per line inside a message or note
TITLE = 60  # the longest title kept whole


def escape(text: str) -> str:
    """Text made safe inside a Mermaid message: `;` and `#` are syntax, `<`/`>` HTML."""
    out = []
    for ch in text:
        if ch in "#;<>%":
            out.append(f"#{ord(ch)};")
        elif ch.isprintable():
            out.append(ch)
    return "".join(out)


def _lines(text: str, first: str = "", rest: str = "") -> list[str]:
    return wrap_cell(text, WRAP, first, rest)


def _owner(var: str, instances: list[str]) -> str | None:
    """The process a variable belongs to (`vcpu.x`, `timer[1].state`, its tso store
    buffer `sb(vcpu)`), or None if shared."""
    if var.startswith("sb(") and var.endswith(")") and var[3:-1] in instances:
        return var[3:-1]
    for inst in instances:
        if var.startswith(inst + "."):
            return inst
    return None


def sequence_diagram(t: Trace, title: str, closing: str) -> str:
    declared = [p for p, _ in t.states[0].pcs]
    acting = [a.process for a in t.actions if a.kind != "flush"] + ([t.failure.process] if t.failure else [])
    procs = [p for p in declared if p in acting] + sorted({p for p in acting if p not in declared})
    if not procs:
        procs = declared[:1] or ["-"]
    ids = {p: f"P{i}" for i, p in enumerate(procs)}
    shared_writes = any(a.kind == "flush" or _owner(k, declared) is None for a in t.actions for k, _ in a.changes)
    # a title wider than the diagram is clipped when rendered: a long one goes into the
    # first note, which wraps, and the title keeps what fits
    head = title if len(title) <= TITLE else title.rpartition(", ")[2] if ", " in title else title[:TITLE]
    out = ["sequenceDiagram", f"    title {escape(head)}"]
    for p in procs:
        out.append(f"    participant {ids[p]} as {escape(p)}")
    if shared_writes or not t.actions:
        out.append(f"    participant {MEMORY} as shared memory")
    span_all = f"{ids[procs[0]]},{MEMORY if (shared_writes or not t.actions) else ids[procs[-1]]}"
    init = ", ".join(f"{k} = {show_value(v)}" for k, v in t.states[0].values)
    said = ([] if head == title else _lines(title)) + _lines("initial state: " + init)
    out.append(f"    Note over {span_all}: " + "<br/>".join(escape(x) for x in said))
    indent = "    "
    for i, a in enumerate(t.actions):
        if t.loop_start is not None and i == t.loop_start:
            out.append(f"    loop from step {i + 1} on, forever")
            indent = "        "
        out.append(indent + _step(i + 1, a, ids, declared))
    if t.loop_start is not None:
        out.append(f"        Note over {span_all}: {loop_back(t)}")
        out.append("    end")
    if t.failure is not None:
        out.append("    " + _step(t.length + 1, t.failure, ids, declared, fails=True))
    out.append(f"    Note over {span_all}: " + "<br/>".join(escape(x) for x in _lines(closing)))
    return "\n".join(out) + "\n"


def _step(n: int, a: Action, ids: dict[str, str], declared: list[str], fails: bool = False) -> str:
    where = f"line {a.span.line}: " if a.span else ""
    on = f"[cpu{a.cpu}] " if a.cpu is not None else ""  # execution contexts: where it ran
    body = _lines(f"{n}. {on}{where}{a.text}", rest="  ")
    if a.call:
        body += _lines(f"in {a.call}", rest="  ")
    if a.detail:
        body += _lines(a.detail, first="⇒ ", rest="  ")
    effects = "" if a.kind == "flush" else ", ".join(effect_text(k, v) for k, v in a.changes)
    if effects:
        body += _lines(effects, first="→ ", rest="  ")
    if fails:
        body.append("FAILS")
    text = "<br/>".join(escape(x) for x in body)
    if a.kind == "flush":  # tso: a buffered store becomes visible
        return f"Note over {MEMORY}: {text}"
    me = ids[a.process]
    woken = [o for k, _ in a.changes if (o := _owner(k, declared)) and o != a.process and o in ids]
    if woken:
        return f"{me}->>{ids[woken[0]]}: {text}"
    if any(_owner(k, declared) is None for k, _ in a.changes):
        return f"{me}->>{MEMORY}: {text}"
    return f"Note over {me}: {text}"


def diagram_for(result: RunResult, variant: str, cx: Counterexample) -> str:
    title = f"{result.model}: variant {variant}, {describe(cx)}"
    return sequence_diagram(cx.trace, title, cx.message)


def write_mermaid(result: RunResult, folder: str) -> list[str]:
    written = []
    for v, cx in counterexamples(result):
        path = f"{folder}/{file_stem(result, v.variant, cx.property)}.mmd"
        write_text(path, diagram_for(result, v.variant, cx))
        written.append(path)
    return written
