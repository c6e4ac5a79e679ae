"""The trace explorer (`--html DIR`): one self-contained HTML page per run,
`<model>.html`, to open from a file or a CI artifact (no server, no network: the
style, the script and the run's data are all inside the page).

The page shows the variant x property table and, per counterexample, a step-through
view: one column per process (per CPU), each step's statement and spec line, every
variable's value at the selected step with what changed highlighted, the tso store
buffers and lkmm views apart from the variables, a lasso's loop marked; a second pane
shows another trace beside the first. The data is built from the result objects only
(`page_data`, which tests/golden pins); values are shown as the text output shows
them. The script writes the data into the page with `textContent`, never as markup.
"""

from __future__ import annotations

import json

from .. import __version__
from ..results.trace import MEMORY, Buffered, Counterexample, RunResult, Trace, VariantResult, Verdict, show_value
from .files import counterexamples, describe, dump_json, safe_name, shape, write_text
from .text import verdict_word

DATA_VERSION = 1


def _is_memory(name: str) -> bool:
    """A tso store buffer `sb(cpu)` or an lkmm view `view(cpu)`: shown apart."""
    return name.startswith(("sb(", "view(")) and name.endswith(")")


def _shown(v) -> str:
    if isinstance(v, Buffered) and not v:
        return "[] (empty)"
    return show_value(v)


def _columns(t: Trace) -> list[str]:
    """One column per process that takes a step, in declaration order; tso flushes and
    lkmm propagation sit in `memory`."""
    steps = list(t.actions) + ([t.failure] if t.failure else [])
    declared = [p for p, _ in t.states[0].pcs]
    acting = {a.process for a in steps}
    cols = [p for p in declared if p in acting]
    cols += sorted(p for p in acting if p not in declared and p != MEMORY)
    if MEMORY in acting:
        cols.append(MEMORY)
    return cols or declared[:1]


def _step(n: int, a, cols: list[str], failure: bool = False) -> dict:
    return {"n": n, "process": a.process, "column": cols.index(a.process) if a.process in cols else 0,
            "cpu": a.cpu, "kind": "failed" if failure else a.kind,
            "file": a.span.file if a.span else None, "line": a.span.line if a.span else None,
            "text": " ".join(a.text.split()), "inline": a.inline or "", "call": a.call, "detail": a.detail,
            "changes": [f"{k} = {_shown(v)}" for k, v in a.changes]}


def trace_data(v: VariantResult, cx: Counterexample, expected: bool) -> dict:
    t = cx.trace
    names = [k for k, _ in t.states[0].values]
    cols = _columns(t)
    steps = [_step(i + 1, a, cols) for i, a in enumerate(t.actions)]
    if t.failure is not None:
        steps.append(_step(t.length + 1, t.failure, cols, failure=True))
    return {
        "variant": v.variant,
        "property": cx.property,
        "kind": cx.kind,
        "title": f"{v.variant}: {describe(cx)}",
        "message": cx.message,
        "expected": expected,
        "memory": v.memory,
        "engine": cx.engine,
        "shape": shape(t),
        "columns": cols,
        "variables": [k for k in names if not _is_memory(k)],
        "buffers": [k for k in names if _is_memory(k)],
        # states[i]: the values after step i (0: the initial state), in the order of
        # `variables` then `buffers`; the failing step has no state after it
        "states": [[_shown(s.get(k)) for k in names if not _is_memory(k)]
                   + [_shown(s.get(k)) for k in names if _is_memory(k)] for s in t.states],
        "pcs": [[lb for _, lb in s.pcs] for s in t.states],
        "processes": [p for p, _ in t.states[0].pcs],
        "steps": steps,
        "loop_start": t.loop_start,
        "violation": [[k, val] for k, val in cx.violation],
    }


def page_data(result: RunResult) -> dict:
    """Everything the page shows, as plain data (tests/golden/html pins it)."""
    # a lemma's counterexample is values, not steps: the table names it, no pane shows it
    cxs = [(v, cx) for v, cx in counterexamples(result) if cx.kind != "lemma"]
    expected = {(v.variant, o.property): o.as_expected for v in result.variants for o in v.outcomes}
    index = {id(cx): k for k, (_, cx) in enumerate(cxs)}
    rows = []
    for v in result.variants:
        for o in v.outcomes:
            cx = o.counterexample
            rows.append({"variant": v.variant, "memory": v.memory, "property": o.property, "kind": o.kind,
                         "verdict": verdict_word(o),
                         "expected": ("violated" if o.expected_violation else "holds")
                         if result.use_expectations else "-",
                         "as_expected": o.as_expected, "note": o.note,
                         "steps": cx.trace.steps if cx is not None and cx.kind != "lemma" else None,
                         "trace": index.get(id(cx)) if cx is not None else None})
        if v.model_error is not None:
            rows.append({"variant": v.variant, "memory": v.memory, "property": "(model error)",
                         "kind": "model error", "verdict": "error", "expected": "-", "as_expected": False,
                         "note": "", "steps": v.model_error.trace.steps, "trace": index.get(id(v.model_error))})
        if not v.stats.complete:
            rows.append({"variant": v.variant, "memory": v.memory, "property": "(search)", "kind": "",
                         "verdict": "incomplete", "expected": "-", "as_expected": False,
                         "note": f"cut short ({v.stats.limit}): properties without a counterexample are not "
                                 "verified", "steps": None, "trace": None})
    return {
        "schema": "timerace-explorer",
        "version": DATA_VERSION,
        "tool": f"timerace {__version__}",
        "model": result.model,
        "file": result.file,
        "command": result.command,
        "all_as_expected": result.all_as_expected,
        "unexpected": sum(1 for v in result.variants for o in v.outcomes
                          if not o.as_expected and o.verdict is not Verdict.INCOMPLETE),
        "table": rows,
        "traces": [trace_data(v, cx, expected.get((v.variant, cx.property), False)) for v, cx in cxs],
    }


def _script_json(doc: dict) -> str:
    """The data as JSON that cannot end its <script> element or open a comment."""
    return (json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            .replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def page(result: RunResult) -> str:
    doc = page_data(result)
    title = _escape(f"timerace: {result.model}")
    return (PAGE.replace("@TITLE@", title).replace("@STYLE@", STYLE).replace("@SCRIPT@", SCRIPT)
            .replace("@DATA@", _script_json(doc)))


def write_html(result: RunResult, folder: str) -> list[str]:
    path = f"{folder}/{safe_name(result.model)}.html"
    write_text(path, page(result))
    return [path]


def data_json(result: RunResult) -> str:
    """page_data as the golden file holds it."""
    return dump_json(page_data(result))


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>@TITLE@</title>
<style>
@STYLE@
</style>
</head>
<body>
<header><h1 id="title"></h1><p id="summary"></p></header>
<details id="variants" open><summary>Variants and properties</summary><div class="scroll"><table id="table"></table></div>
<ol id="notes"></ol></details>
<section id="panes">
<div class="pane" id="left"></div>
<div class="pane" id="right"></div>
</section>
<script type="application/json" id="data">@DATA@</script>
<script>
@SCRIPT@
</script>
</body>
</html>
"""

STYLE = """body { font-family: system-ui, sans-serif; margin: 1em; color: #222; }
h1 { font-size: 1.3em; margin: 0; } h2 { font-size: 1.1em; } h3 { font-size: 1em; margin: .3em 0; }
code, .mono, td.step, .vars td { font-family: ui-monospace, monospace; font-size: 12px; }
table { border-collapse: collapse; }
#table td, #table th { border: 1px solid #ccc; padding: 2px 6px; font-size: 13px; text-align: left; }
#variants .scroll { max-height: 40vh; overflow: auto; }
#variants summary { font-weight: bold; margin: .5em 0; cursor: pointer; }
#notes { font-size: 12px; color: #555; }
#table tr.unexpected td { background: #fde2e2; }
#table button { font-size: 11px; }
#panes { display: flex; gap: 1em; align-items: flex-start; }
.pane { flex: 1 1 0; min-width: 0; border: 1px solid #bbb; padding: .5em; }
.pane.empty { flex: 0 0 auto; }
.controls { display: flex; gap: .4em; align-items: center; flex-wrap: wrap; margin: .3em 0; }
.controls input[type=range] { flex: 1 1 8em; }
.body { display: flex; gap: .6em; align-items: flex-start; }
.steps { flex: 3 1 0; overflow: auto; max-height: 75vh; }
.state { flex: 2 1 0; overflow: auto; max-height: 75vh; }
table.race { width: 100%; }
table.race th { position: sticky; top: 0; background: #eee; font-size: 12px; }
table.race td { border-bottom: 1px solid #eee; vertical-align: top; padding: 1px 4px; }
table.race td.num { color: #777; text-align: right; font-family: ui-monospace, monospace; font-size: 12px; }
table.race tr { cursor: pointer; }
table.race tr.selected td { background: #fff3b0; }
table.race tr.loop td.num { border-left: 4px solid #c33; }
table.race tr.banner td { color: #c33; text-align: center; font-size: 12px; cursor: default; }
table.race tr.failed td.step { color: #b00; font-weight: bold; }
.where { color: #555; } .detail { color: #06c; } .changes { color: #070; }
.vars td { padding: 0 4px; border-bottom: 1px solid #f2f2f2; }
.vars tr.changed td { background: #d8f5d0; font-weight: bold; }
.message { color: #b00; } .note { color: #555; font-size: 12px; }
"""

SCRIPT = r"""'use strict';
const DATA = JSON.parse(document.getElementById('data').textContent);
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}
const panes = {};

function header() {
  document.title = 'timerace: ' + DATA.model;
  document.getElementById('title').textContent = 'timerace: model ' + DATA.model + ' (' + DATA.file + ')';
  const s = DATA.all_as_expected ? 'every outcome is as expected'
    : DATA.unexpected + ' outcome(s) differ from expectations or are not verified';
  document.getElementById('summary').textContent = s + '; ' + DATA.traces.length + ' counterexample(s)'
    + (DATA.command ? '; command: ' + DATA.command : '');
  const t = document.getElementById('table');
  t.append(el('tr', {}, ...['variant', 'memory', 'property', 'verdict', 'expected', '', 'steps', 'trace']
    .map(h => el('th', {}, h))));
  const notes = [];
  DATA.table.forEach(r => {
    let ref = '';
    if (r.note) {
      if (!notes.includes(r.note)) notes.push(r.note);
      ref = ' [' + (notes.indexOf(r.note) + 1) + ']';
    }
    const mark = r.as_expected ? 'ok' : 'UNEXPECTED';
    const open = r.trace === null ? '' : el('span', {},
      el('button', {class: 'show-left', onclick: () => panes.left.show(r.trace)}, 'show'), ' ',
      el('button', {class: 'show-right', onclick: () => panes.right.show(r.trace)}, 'compare'));
    t.append(el('tr', {class: r.as_expected ? 'ok' : 'unexpected', 'data-trace': r.trace === null ? '' : r.trace},
      el('td', {}, r.variant), el('td', {}, r.memory), el('td', {}, r.property),
      el('td', {}, r.verdict + ref), el('td', {}, r.expected), el('td', {}, mark),
      el('td', {}, r.steps === null ? '' : String(r.steps)), el('td', {}, open)));
  });
  const ol = document.getElementById('notes');
  notes.forEach(n => ol.append(el('li', {}, n)));
}

class Pane {
  constructor(root, name) { this.root = root; this.name = name; this.trace = null; this.at = 0; }
  show(k) {
    this.trace = (k === null || k === '' || k === undefined) ? null : DATA.traces[Number(k)];
    this.at = 0;
    this.render();
  }
  chooser() {
    const sel = el('select', {class: 'choose', onchange: e => this.show(e.target.value)});
    sel.append(el('option', {value: ''}, this.name === 'left' ? '(choose a counterexample)' : '(compare with ...)'));
    DATA.traces.forEach((t, k) => {
      const o = el('option', {value: String(k)}, t.title + (t.expected ? '' : ' (UNEXPECTED)'));
      if (this.trace === t) o.selected = true;
      sel.append(o);
    });
    return sel;
  }
  last() { return this.trace.steps.length; }
  go(n) {
    if (!this.trace) return;
    this.at = Math.max(0, Math.min(this.last(), n));
    this.update();
  }
  render() {
    const r = this.root;
    r.replaceChildren();
    r.classList.toggle('empty', !this.trace);
    r.append(this.chooser());
    const t = this.trace;
    if (!t) return;
    r.append(el('h3', {class: 'trace-title'}, t.title + (t.expected ? ' (expected)' : ' (UNEXPECTED)')),
      el('div', {class: 'message'}, t.message),
      el('div', {class: 'note'}, t.shape + '; memory model ' + t.memory + (t.engine !== 'explicit' ? '; found by ' + t.engine : '')));
    this.range = el('input', {type: 'range', min: '0', max: String(this.last()), value: '0', class: 'slider',
                              oninput: e => this.go(Number(e.target.value))});
    this.label = el('span', {class: 'at'});
    r.append(el('div', {class: 'controls'},
      el('button', {class: 'first', onclick: () => this.go(0)}, '|<'),
      el('button', {class: 'prev', onclick: () => this.go(this.at - 1)}, '<'),
      el('button', {class: 'next', onclick: () => this.go(this.at + 1)}, '>'),
      el('button', {class: 'end', onclick: () => this.go(this.last())}, '>|'),
      this.range, this.label));
    const race = el('table', {class: 'race'});
    race.append(el('tr', {}, el('th', {}, '#'), ...t.columns.map(c => el('th', {}, c))));
    this.rows = [];
    const init = el('tr', {class: 'step-row', 'data-step': '0', onclick: () => this.go(0)},
      el('td', {class: 'num'}, '0'), el('td', {class: 'step', colspan: String(t.columns.length)}, 'initial state'));
    race.append(init);
    this.rows.push(init);
    t.steps.forEach((s, i) => {
      if (t.loop_start !== null && i === t.loop_start && i < t.steps.length)
        race.append(el('tr', {class: 'banner'}, el('td', {colspan: String(t.columns.length + 1)},
          'loop: steps ' + (t.loop_start + 1) + '-' + t.steps.length + ' repeat forever')));
      const cells = t.columns.map(() => el('td', {class: 'step'}));
      const c = cells[s.column];
      c.append(el('div', {class: 'where'}, (s.cpu !== null ? '[cpu' + s.cpu + '] ' : '')
        + (s.line !== null ? 'line ' + s.line : '') + (s.inline ? ' [' + s.inline + ']' : '')),
        el('div', {class: 'text'}, s.text));
      if (s.call) c.append(el('div', {class: 'call where'}, 'in ' + s.call));
      if (s.detail) c.append(el('div', {class: 'detail'}, '=> ' + s.detail));
      if (s.kind === 'failed') c.append(el('div', {class: 'message'}, 'FAILS'));
      else if (s.changes.length) c.append(el('div', {class: 'changes'}, '-> ' + s.changes.join(', ')));
      const inLoop = t.loop_start !== null && i >= t.loop_start;
      const row = el('tr', {class: 'step-row' + (inLoop ? ' loop' : '') + (s.kind === 'failed' ? ' failed' : ''),
                            'data-step': String(i + 1), onclick: () => this.go(i + 1)},
        el('td', {class: 'num'}, String(s.n)), ...cells);
      race.append(row);
      this.rows.push(row);
    });
    if (t.loop_start !== null)
      race.append(el('tr', {class: 'banner'}, el('td', {colspan: String(t.columns.length + 1)},
        t.loop_start === t.steps.length ? 'the run stays in this state forever'
          : 'back to step ' + (t.loop_start + 1) + ' (the state after step ' + t.loop_start + ')')));
    this.state = el('div', {class: 'state'});
    r.append(el('div', {class: 'body'}, el('div', {class: 'steps'}, race), this.state));
    if (t.violation.length)
      r.append(el('div', {class: 'violation note'}, 'violating state: '
        + t.violation.map(([k, v]) => k.endsWith('@') ? k + v : k + ' = ' + v).join(', ')));
    this.update();
  }
  stateIndex(n) {  // the failing step leaves no state: show the one it failed in
    return Math.min(n, this.trace.states.length - 1);
  }
  update() {
    const t = this.trace, n = this.at;
    this.range.value = String(n);
    const s = n === 0 ? null : t.steps[n - 1];
    this.label.textContent = n === 0 ? 'initial state (step 0 of ' + this.last() + ')'
      : 'step ' + n + ' of ' + this.last() + ': ' + s.process + (s.kind === 'failed' ? ' (fails)' : '')
        + (t.loop_start !== null && n - 1 >= t.loop_start ? ' (in the loop)' : '');
    this.rows.forEach((row, k) => row.classList.toggle('selected', k === n));
    if (this.rows[n].scrollIntoView) this.rows[n].scrollIntoView({block: 'nearest'});
    const k = this.stateIndex(n), now = t.states[k], before = n > 0 ? t.states[this.stateIndex(n - 1)] : now;
    const table = (names, offset, cls) => {
      const tb = el('table', {class: 'vars ' + cls});
      names.forEach((name, j) => {
        const changed = n > 0 && s.kind !== 'failed' && now[offset + j] !== before[offset + j];
        tb.append(el('tr', {class: changed ? 'changed' : '', 'data-name': name},
          el('td', {}, name), el('td', {class: 'value'}, now[offset + j])));
      });
      return tb;
    };
    this.state.replaceChildren(el('h3', {}, n === 0 ? 'Initial state' : 'After step ' + n),
      table(t.variables, 0, 'variables'));
    if (t.buffers.length)
      this.state.append(el('h3', {}, t.memory === 'lkmm' ? 'LKMM views (stale reads per CPU)' : 'Store buffers'),
        table(t.buffers, t.variables.length, 'buffers'));
    const pcs = el('table', {class: 'vars pcs'});
    t.processes.forEach((p, j) => {
      const changed = n > 0 && t.pcs[k][j] !== t.pcs[this.stateIndex(n - 1)][j];
      pcs.append(el('tr', {class: changed ? 'changed' : ''}, el('td', {}, p), el('td', {class: 'value'}, t.pcs[k][j])));
    });
    this.state.append(el('h3', {}, 'Where each process is'), pcs);
    if (t.loop_start !== null && n === this.last() && t.loop_start < t.steps.length)
      this.state.append(el('div', {class: 'note'}, 'this is the state after step ' + t.loop_start
        + ': the loop closes'));
  }
}

header();
panes.left = new Pane(document.getElementById('left'), 'left');
panes.right = new Pane(document.getElementById('right'), 'right');
const first = DATA.traces.findIndex(t => !t.expected);
panes.left.show(DATA.traces.length ? (first >= 0 ? first : 0) : null);
panes.right.show(null);
document.addEventListener('keydown', e => {
  if (e.target.tagName === 'INPUT' || e.target.tagName === 'SELECT') return;
  const p = e.shiftKey ? panes.right : panes.left;
  if (e.key === 'ArrowRight' || e.key === 'j') p.go(p.at + 1);
  else if (e.key === 'ArrowLeft' || e.key === 'k') p.go(p.at - 1);
});
"""
