"""The Markdown review report (`--report OUT.md`): what a reviewer pastes into a pull
request or attaches to a review thread.

It holds the model and its header comment, the variant x property matrix with each
outcome against its expectation, the assumptions the verdicts rest on (memory model,
fairness, each variant's settings), the search statistics, every counterexample as a
race diagram and a Mermaid diagram (with the step-by-step trace folded away), and the
command that reproduces the run. Built from the result objects only.
"""

from __future__ import annotations

from ..safe_text import printable
from ..trace import RunResult, VariantResult, Verdict, show_value
from .files import counterexamples, write_text
from .mermaid import diagram_for
from .text import format_trace, race_diagram

MEMORY_NAMES = {"sc": "sequential consistency", "tso": "x86-TSO (per-CPU store buffers)"}
ENGINE_NAMES = {"explicit": "explicit-state breadth-first search (every counterexample is a shortest one)"}


def _code(text: str) -> str:
    """`text` as one inline code span, whatever it holds: its controls and line breaks
    escaped, fenced by more backticks than it has in a row (CommonMark), so that a file
    name cannot close the span and write Markdown of its own."""
    text = printable(text)
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_cell(c) for c in rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows[1:]]
    return out


def _outcome_cell(o, use_expectations: bool) -> str:
    expected = "violated" if o.expected_violation else "holds"
    if o.verdict is Verdict.INCOMPLETE and o.note.startswith("not checked: "):  # run.NOT_CHECKED
        return f"**not checked** ({o.note[len('not checked: '):]})"
    if o.verdict is Verdict.INCOMPLETE:
        return f"incomplete ({o.note})" if o.note else "incomplete"
    if o.as_expected:
        return f"{o.verdict.value} (as expected)" if use_expectations else o.verdict.value
    return f"**{o.verdict.value}: UNEXPECTED** (expected {expected})"


def _summary(result: RunResult) -> str:
    bad = [(v.variant, o.property) for v in result.variants for o in v.outcomes
           if not o.as_expected and o.verdict is not Verdict.INCOMPLETE]
    errors = [v.variant for v in result.variants if v.model_error is not None]
    incomplete = [(v.variant, o.property) for v in result.variants for o in v.outcomes
                  if o.verdict is Verdict.INCOMPLETE]
    parts = []
    if bad:
        parts.append(f"**{len(bad)} outcome(s) differ from expectations**: "
                     + ", ".join(f"`{v}`/`{p}`" for v, p in bad))
    if errors:
        parts.append("**model error** in " + ", ".join(f"`{v}`" for v in errors))
    if incomplete:
        parts.append(f"{len(incomplete)} verdict(s) incomplete (not verified): "
                     + ", ".join(f"`{v}`/`{p}`" for v, p in incomplete))
    if not parts:
        parts.append("every outcome is as expected" if result.use_expectations else "every property holds")
    return "; ".join(parts)


def _matrix(result: RunResult) -> list[str]:
    props: list[str] = []
    for v in result.variants:
        for o in v.outcomes:
            if o.property not in props:
                props.append(o.property)
    rows = [["variant"] + [f"`{p}`" for p in props]]
    for v in result.variants:
        by = {o.property: o for o in v.outcomes}
        row = [f"`{v.variant}`"] + [_outcome_cell(by[p], result.use_expectations) if p in by else "-"
                                    for p in props]
        if v.model_error is not None:
            row[0] += " (**model error**)"
        rows.append(row)
    kinds = {o.property: o.kind for v in result.variants for o in v.outcomes}
    lines = _table(rows)
    lines += ["", "Kinds: " + ", ".join(f"`{p}` {kinds[p]}" for p in props) + "."]
    return lines


def _assumptions(result: RunResult) -> list[str]:
    lines = []
    mems = {v.memory for v in result.variants}
    if len(mems) == 1:
        mem = MEMORY_NAMES.get(next(iter(mems)), next(iter(mems)))
        lines.append(f"- **Memory model**: {mem}.")
    else:
        lines.append("- **Memory model**: " + "; ".join(
            f"`{v.variant}` {MEMORY_NAMES.get(v.memory, v.memory)}" for v in result.variants) + ".")
    lines.append("- **Interleaving**: every interleaving of the processes' atomic steps (one statement,"
                 " or one `atomic` block, is one step); nothing is assumed about relative speed.")
    live = any(o.kind == "liveness" for v in result.variants for o in v.outcomes)
    fair = sorted({f for v in result.variants for f in v.fairness})
    if live:
        lines.append("- **Fairness** (liveness verdicts rest on it): " + ("; ".join(fair) or "none") + ".")
    else:
        lines.append("- **Fairness**: no liveness property is checked, so no fairness is assumed"
                     + (f" (the model declares: {'; '.join(fair)})." if fair else "."))
    base = result.variants[0].constants if result.variants else ()
    base_map = dict(base)
    if base:
        lines.append(f"- **Constants** (`{result.variants[0].variant}`): "
                     + ", ".join(f"`{k} = {show_value(v)}`" for k, v in base) + ".")
    for v in result.variants[1:]:
        diff = [(k, c) for k, c in v.constants if base_map.get(k) != c]
        lines.append(f"- **Variant `{v.variant}`** changes: "
                     + (", ".join(f"`{k} = {show_value(c)}`" for k, c in diff) if diff else "nothing") + ".")
    return lines


def _stats(result: RunResult, timing: bool) -> list[str]:
    head = ["variant", "engine", "states", "transitions", "depth", "complete"] + (["seconds"] if timing else [])
    rows = [head]
    for v in result.variants:
        s = v.stats
        row = [f"`{v.variant}`", s.engine, f"{s.states:,}", f"{s.transitions:,}", str(s.depth),
               "yes" if s.complete else f"**no** ({s.limit})"]
        if timing:
            row.append(f"{s.seconds:.2f}")
        rows.append(row)
    return _table(rows)


def _fence(text: str, lang: str) -> list[str]:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return [ticks + lang, text.rstrip("\n"), ticks]


def _counterexample(result: RunResult, v: VariantResult, cx) -> list[str]:
    t = cx.trace
    steps = f"{t.length} step{'s' if t.length != 1 else ''}"
    if t.loop_start is not None:
        steps += f", then a loop back to state {t.loop_start} that repeats forever"
    what = cx.kind if cx.kind == cx.property else f"{cx.kind} `{cx.property}`"
    out = [f"### `{v.variant}`: {what}", "",
           f"{cx.message} ({steps}; found by the {cx.engine} engine).", "",
           "Race diagram (one column per process, time going down):", ""]
    out += _fence(race_diagram(t), "text")
    out += ["", "Sequence diagram:", ""]
    out += _fence(diagram_for(result, v.variant, cx), "mermaid")
    out += ["", "<details><summary>Step-by-step trace with the spec lines and every change</summary>", ""]
    out += _fence(format_trace(t), "text")
    out += ["", "</details>", ""]
    out += [f"Only this variant: {_code(f'check {result.file} --variant {v.variant}')}", ""]
    return out


def review_report(result: RunResult, timing: bool = False) -> str:
    lines = [f"# timerace review: model `{result.model}`", "",
             f"- **Spec**: {_code(result.file)}",
             f"- **Result**: {_summary(result)}",
             "- **Engine**: " + "; ".join(ENGINE_NAMES.get(e, e) for e in
                                          dict.fromkeys(v.stats.engine for v in result.variants)),
             f"- **Reproduce**: {_code(result.command or 'check ' + result.file)}",
             ""]
    if result.header:
        lines += ["## The model", ""]
        lines += _fence(result.header, "text")
        lines.append("")
    lines += ["## Outcomes (variant x property)", ""]
    lines += _matrix(result)
    lines += ["", "## Assumptions", ""]
    lines += _assumptions(result)
    lines += ["", "## Search statistics", ""]
    lines += _stats(result, timing)
    incomplete = [v for v in result.variants if not v.stats.complete]
    for v in incomplete:
        if v.stats.limit == "not checked":  # run.NOT_CHECKED
            lines += ["", f"`{v.variant}`: **not checked**: the run was cut short before this variant."]
        else:
            lines += ["", f"`{v.variant}`: the search was cut short ({v.stats.limit}); properties without a "
                      "counterexample are **not verified**."]
    cxs = counterexamples(result)
    lines += ["", "## Counterexamples", ""]
    if not cxs and incomplete:  # never "no property is violated" for a run that did not see everything
        lines += ["None found, but the run is incomplete (see above): properties without a counterexample "
                  "are **not verified**.", ""]
    elif not cxs:
        lines += ["None: no property is violated in any variant.", ""]
    for v, cx in cxs:
        lines += _counterexample(result, v, cx)
    lines += ["## Reproduce", ""]
    lines += _fence(printable(result.command or f"check {result.file}"), "sh")
    return printable("\n".join(lines).rstrip("\n"), multiline=True) + "\n"  # the header comment's controls


def write_report(result: RunResult, path: str, timing: bool = False) -> None:
    write_text(path, review_report(result, timing))
