"""Graphviz DOT (`--dot DIR`): each counterexample as a graph, one
`<model>.<variant>.<property>.dot` per counterexample (states as nodes with what
changed, steps as edges), and with `--dot-graph` the whole reachable state graph of
each variant, `<model>.<variant>.state-graph.dot`, when the engine recorded it (models
under the size limit). `--svg` renders every file with Graphviz's `dot`.

The state graph comes from the engine's result (`VariantResult.graph`); this module
never searches. Counterexample paths are drawn in red on it.
"""

from __future__ import annotations

import shutil
import subprocess

from ..results.trace import Action, RunResult, StateSpace, Trace, TraceState, show_value
from .files import counterexamples, describe, file_stem, loop_back, variant_stem, write_text
from .text import wrap_cell


def quote(text: str) -> str:
    """A DOT string with left-justified lines (`\\l`)."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "\\l".join(body.split("\n")) + '\\l"'


def _plain(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_HEAD = ['  node [shape=box, fontname="monospace", fontsize=10];',
         '  edge [fontname="monospace", fontsize=9];']


def _assignments(pairs) -> str:
    return "\n".join(f"{k} = {show_value(v)}" for k, v in pairs)


def _step_label(n: int | None, a: Action) -> str:
    """The step: who, where, the statement, and what it decided (the branch taken and
    the values tested, what a cmpxchg or xchg returned), as every other format says it."""
    where = f" line {a.span.line}" if a.span else ""
    num = f"{n}. " if n is not None else ""
    said = "".join("\n" + line for line in wrap_cell(f"in {a.call}", WRAP, rest="  ")) if a.call else ""
    said += "".join("\n" + line for line in wrap_cell(a.detail, WRAP, "=> ", "   ")) if a.detail else ""
    return f"{num}{a.process}{where}\n{a.text}{said}"


WRAP = 60  # characters per line of an edge's label


def trace_graph(t: Trace, name: str, title: str, message: str) -> str:
    out = [f"digraph {_plain(name)} {{", f"  label={_plain(title)};", "  labelloc=t;", *_HEAD]
    last = len(t.states) - 1
    for i, s in enumerate(t.states):
        if i == 0:
            text = "state 0 (initial)\n" + _assignments(s.values) + "\n" + \
                ", ".join(f"{p}@{lb}" for p, lb in s.pcs)
        else:
            a = t.actions[i - 1]
            text = f"state {i}\n" + (_assignments(a.changes) or "(no variable changed)") + \
                f"\n{a.process}@{a.pc_to}"
        attrs = [f"label={quote(text)}"]
        if i == 0:
            attrs.append("peripheries=2")
        if i == last and t.failure is None and t.loop_start is None:
            attrs = [f"label={quote(text + chr(10) + message)}", "color=red", "penwidth=2"]
        out.append(f"  s{i} [{', '.join(attrs)}];")
    for i, a in enumerate(t.actions):
        out.append(f"  s{i} -> s{i + 1} [label={quote(_step_label(i + 1, a))}];")
    if t.loop_start is not None:
        out.append(f"  s{last} -> s{t.loop_start} [label={quote(f'loop: {loop_back(t)} (state {t.loop_start})')}, "
                   "style=dashed, color=red];")
        out.append(f"  s{t.loop_start} [color=red, penwidth=2];")
        out.append(f"  note [label={quote(message)}, shape=note, color=red];")
        out.append(f"  note -> s{t.loop_start} [style=dotted, arrowhead=none];")
    if t.failure is not None:
        out.append(f"  fail [label={quote(message)}, shape=octagon, color=red, penwidth=2];")
        out.append(f"  s{last} -> fail [label={quote(_step_label(t.length + 1, t.failure))}, "
                   "style=dashed, color=red];")
    out.append("}")
    return "\n".join(out) + "\n"


def state_graph(g: StateSpace, name: str, title: str, highlights: list[tuple[str, Trace]]) -> str:
    """The whole graph; each counterexample's states and steps in red, its last state
    labelled with the property."""
    index: dict[TraceState, int] = {}
    for i, s in enumerate(g.states):
        index.setdefault(s, i)
    red_nodes: dict[int, list[str]] = {}
    red_edges: set[tuple[int, int]] = set()
    for prop, t in highlights:
        path = [index.get(s) for s in t.states]
        for a, b in zip(path, path[1:]):
            if a is not None and b is not None:
                red_edges.add((a, b))
        if path and path[-1] is not None:
            red_nodes.setdefault(path[-1], []).append(prop)
    note = "" if g.complete else " (search cut short: some successors are missing)"
    out = [f"digraph {_plain(name)} {{", f"  label={_plain(title + note)};", "  labelloc=t;", *_HEAD]
    for i, s in enumerate(g.states):
        head = f"{i}" + (f"  violates {', '.join(red_nodes[i])}" if i in red_nodes else "")
        text = head + "\n" + _assignments(s.values) + "\n" + ", ".join(f"{p}@{lb}" for p, lb in s.pcs)
        attrs = [f"label={quote(text)}"]
        if i in g.initial:
            attrs.append("peripheries=2")
        if i in red_nodes:
            attrs += ["color=red", "penwidth=2"]
        out.append(f"  s{i} [{', '.join(attrs)}];")
    for a, b, act in g.edges:
        attrs = [f"label={quote(_step_label(None, act))}"]
        if (a, b) in red_edges:
            attrs += ["color=red", "penwidth=2"]
        out.append(f"  s{a} -> s{b} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def write_dot(result: RunResult, folder: str, whole_graph: bool = False) -> list[str]:
    written = []
    for v, cx in counterexamples(result):
        stem = file_stem(result, v.variant, cx.property)
        path = f"{folder}/{stem}.dot"
        title = f"{result.model}: variant {v.variant}, {describe(cx)}"
        write_text(path, trace_graph(cx.trace, stem, title, cx.message))
        written.append(path)
    if whole_graph:
        for v in result.variants:
            if v.graph is None:
                continue
            stem = f"{variant_stem(result, v.variant)}.state-graph"
            cxs = [cx for vv, cx in counterexamples(result) if vv is v]
            title = (f"{result.model}: variant {v.variant}, {len(v.graph.states)} states, "
                     f"{len(v.graph.edges)} transitions")
            path = f"{folder}/{stem}.dot"
            write_text(path, state_graph(v.graph, stem, title, [(cx.property, cx.trace) for cx in cxs]))
            written.append(path)
    return written


class GraphvizMissing(RuntimeError):
    pass


def render_svg(dot_paths: list[str]) -> list[str]:
    """Render each DOT file next to itself as SVG with Graphviz's `dot`."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissing("Graphviz's `dot` is not on the PATH")
    out = []
    for p in dot_paths:
        svg = p[: -len(".dot")] + ".svg"
        done = subprocess.run([exe, "-Tsvg", p, "-o", svg], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"dot failed on {p}: {done.stderr.strip()}")
        out.append(svg)
    return out
