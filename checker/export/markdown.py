"""The Markdown review report (`--report OUT.md`): what a reviewer pastes into a pull
request or attaches to a review thread.

It holds the model and its header comment, the variant x property matrix with each
outcome against its expectation, the assumptions the verdicts rest on (memory model,
fairness, each variant's settings), the search statistics, every counterexample folded
(<details>): unexpected ones as a race diagram and a Mermaid diagram while they fit,
expected ones as their race one line per step, a trace the same as an earlier one named
instead, each whole trace in a collapsed block while it fits (so that the report stands
alone in a pull request) or linked (`--trace-url`, where CI publishes the side files),
and the command that reproduces the run, with paths relative to the repository. It stays
under GitHub's comment limit (BUDGET). Built from the result objects only.
"""

from __future__ import annotations

import functools
import os
from urllib.parse import quote

from ..base.safe_text import printable
from ..results.trace import RunResult, VariantResult, Verdict, show_value
from .files import counterexamples, describe, file_stem, race_key, shape, write_text
from .mermaid import diagram_for
from .text import columns_are_cpus, format_counterexample, race_diagram, race_lines, race_runs, violation_lines

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


def _diagram_title(t) -> str:
    return f"Race diagram (one column per {'CPU' if columns_are_cpus(t) else 'process'}, time going down):"


def _fence(text: str, lang: str) -> list[str]:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return [ticks + lang, text.rstrip("\n"), ticks]


COMMENT_LIMIT = 65_536  # GitHub's limit on a pull-request comment, in characters
BUDGET = 60_000  # what the report aims to stay under, leaving room for a reviewer's words


DETAILS = ("link", "runs", "race", "diagram", "full")  # what a counterexample shows of its race, least first


def _counterexample(result: RunResult, v: VariantResult, cx, expected: bool, link: str | None,
                    detail: str, embed: bool, same: tuple[str, str] | None = None) -> list[str]:
    """One counterexample, folded: the summary says what and how long; inside, the race
    (`detail`: "full" race diagram + Mermaid, "diagram" the race diagram, "race" one line
    per step, "runs" one line per run of a process's steps, "link" none), the violating
    state, and the whole trace (`embed`: in a collapsed block; else `link`). `same`:
    (variant, what) of an earlier counterexample with exactly these steps, named
    instead of shown again."""
    what = cx.kind if cx.kind == cx.property else f"{cx.kind} `{cx.property}`"
    mark = "expected" if expected else "**UNEXPECTED**"
    out = [f"<details{'' if expected else ' open'}><summary><code>{_html(v.variant)}</code>: {_html(what)}, "
           f"{mark}: {_html(cx.message)} ({shape(cx.trace)})</summary>", ""]
    if same is not None:
        out += [f"The same steps as `{same[0]}`: {same[1]} above.", ""]
    elif detail == "full":
        out += [_diagram_title(cx.trace), ""]
        out += _fence(race_diagram(cx.trace), "text")
        out += ["", "Sequence diagram:", ""]
        out += _fence(diagram_for(result, v.variant, cx), "mermaid")
        out += [""]
    elif detail == "diagram":
        out += [_diagram_title(cx.trace), ""]
        out += _fence(race_diagram(cx.trace), "text") + [""]
    elif detail == "race":
        out += _fence(race_lines(cx.trace), "text")
        out += [""]
    elif detail == "runs":
        out += _fence(race_runs(cx.trace), "text") + [""]
    if cx.violation:
        out += _fence("\n".join(violation_lines(cx)), "text") + [""]
    if embed and same is None:
        out += ["<details><summary>Whole trace (numbered steps and race diagram)</summary>", ""]
        out += _fence(format_counterexample(cx, v.variant), "text") + ["", "</details>", ""]
    elif link:
        out += [f"Whole trace (numbered steps and race diagram): [{_html(link)}]({quote(link, safe=':/')})", ""]
    out += [f"Only this variant: {_code(f'check {_relative(result.file)} --variant {v.variant}')}", "",
            "</details>", ""]
    return out


def _html(text: str) -> str:
    """Text for HTML inside Markdown (a <summary>): no tag or entity of its own."""
    return printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def repository_root() -> str:
    """The git work tree we are in (paths in the report are relative to it), else cwd."""
    return root_of(os.getcwd())


@functools.lru_cache(maxsize=8)
def root_of(cwd: str) -> str:
    """The git work tree `cwd` is in, else cwd itself (SARIF's URIs are relative to it)."""
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             timeout=10, check=False, cwd=cwd)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return cwd


def _relative(path: str, root: str | None = None) -> str:
    """`path` relative to the repository (or cwd), if it is inside it; never the machine's."""
    if not os.path.isabs(path):
        return path
    root = root or repository_root()
    rel = os.path.relpath(path, root)
    return rel if not rel.startswith("..") else os.path.basename(path)


def reproduce(result: RunResult) -> str:
    """The command, its absolute paths made relative to the repository."""
    import shlex

    command = result.command or f"check {result.file}"
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    root = repository_root()
    # the spec given relative to a folder below the root is named from the root, as the report names it
    spec = {result.file} if not os.path.isabs(result.file) and root != os.getcwd() else set()
    return " ".join(shlex.quote(_relative(os.path.abspath(w) if w in spec else w, root))
                    if os.path.isabs(w) or w in spec else shlex.quote(w) for w in words)


def review_report(result: RunResult, timing: bool = False, traces: str | None = None,
                  trace_url: str | None = None) -> str:
    """The report, under BUDGET. `traces`: the folder (relative to the report) its side
    files of whole traces go in (None: no side files); `trace_url`: where the caller
    publishes them (a CI artifact), linked instead of the folder.

    Each counterexample shows as much as fits, richest for unexpected ones: first every
    race one line per run, then unexpected ones as race diagrams, expected ones one line
    per step, unexpected ones with their Mermaid diagram, then each whole trace in a
    collapsed block (unexpected first) so that the report stands alone in a PR; a trace
    not embedded is linked. A counterexample with the same steps as an earlier one
    names it instead."""
    cxs = counterexamples(result)
    expected = [next((o.as_expected for o in v.outcomes if o.counterexample is cx), False) for v, cx in cxs]
    first: dict[tuple, int] = {}
    same: list[tuple[str, str] | None] = []
    for k, (_, cx) in enumerate(cxs):
        j = first.setdefault(race_key(cx), k)
        same.append(None if j == k else (cxs[j][0].variant, describe(cxs[j][1])))

    def link(k: int) -> str | None:
        v, cx = cxs[k]
        name = f"{file_stem(result, v.variant, cx.property)}.txt"
        if trace_url:
            return f"{trace_url.rstrip('/')}/{name}"
        return f"{traces}/{name}" if traces else None

    cache: dict[tuple[int, str, bool], str] = {}

    def block(k: int, detail: str, embed: bool) -> str:
        key = (k, detail, embed)
        if key not in cache:
            v, cx = cxs[k]
            cache[key] = "\n".join(_counterexample(result, v, cx, expected[k], link(k), detail, embed, same[k]))
        return cache[key]

    head, tail = _head(result, timing, bool(cxs)), _tail(result)
    details, embeds = ["link"] * len(cxs), [False] * len(cxs)
    total = len(head) + len(tail) + sum(len(block(k, "link", False)) + 1 for k in range(len(cxs)))
    alone = [k for k in range(len(cxs)) if same[k] is None]
    unexpected = [k for k in alone if not expected[k]]
    quiet = [k for k in alone if expected[k]]
    # the expected ones' races one line per run are kept room for while unexpected ones get diagrams
    reserve = sum(len(block(k, "runs", False)) - len(block(k, "link", False)) for k in quiet)
    steps = ([(k, "runs", False, 0) for k in unexpected]
             + [(k, "diagram", False, reserve) for k in unexpected]
             + [(k, "runs", False, 0) for k in quiet]
             + [(k, "race", False, 0) for k in quiet]
             + [(k, "full", False, 0) for k in unexpected]
             + [(k, None, True, 0) for k in unexpected if not trace_url]  # a link given: no copy
             + [(k, None, True, 0) for k in quiet if not trace_url])
    for k, detail, embed, keep in steps:
        new_detail = detail if detail is not None and DETAILS.index(detail) > DETAILS.index(details[k]) \
            else details[k]
        new_embed = embed or embeds[k]
        grow = len(block(k, new_detail, new_embed)) - len(block(k, details[k], embeds[k]))
        if total + grow + keep <= BUDGET:
            details[k], embeds[k], total = new_detail, new_embed, total + grow
    body = "\n".join(block(k, details[k], embeds[k]) for k in range(len(cxs)))
    left = [k for k in unexpected if details[k] not in ("diagram", "full")]
    if left:  # said, so that a reviewer knows where the rest is
        body = (f"To stay under GitHub's comment limit, {len(left)} unexpected violation(s) show their race one "
                "line per run instead of as a race diagram; each whole trace is linked or in the files beside "
                "this report (`check --html DIR` steps through them).\n\n" + body)
    text = head + ("\n" + body if cxs else "") + "\n" + tail
    return printable(text.rstrip("\n"), multiline=True) + "\n"  # the header comment's controls


def _head(result: RunResult, timing: bool, any_cx: bool) -> str:
    lines = [f"# timerace review: model `{result.model}`", "",
             f"- **Spec**: {_code(_relative(result.file))}",
             f"- **Result**: {_summary(result)}",
             "- **Engine**: " + "; ".join(ENGINE_NAMES.get(e, e) for e in
                                          dict.fromkeys(v.stats.engine for v in result.variants)),
             f"- **Reproduce**: {_code(reproduce(result))}",
             ""]
    if result.header:
        lines += ["## The model", ""]
        lines += _fence(result.header, "text")
        lines.append("")
    lines += ["## Outcomes (variant x property)", ""]
    lines += _fold(_matrix(result), "the variant x property matrix", len(result.variants) > 8)
    lines += ["", "## Assumptions", ""]
    lines += _fold(_assumptions(result), "memory model, fairness, constants per variant", len(result.variants) > 8)
    lines += ["", "## Search statistics", ""]
    lines += _fold(_stats(result, timing), "states, transitions and depth per variant", len(result.variants) > 8)
    incomplete = [v for v in result.variants if not v.stats.complete]
    for v in incomplete:
        if v.stats.limit == "not checked":  # run.NOT_CHECKED
            lines += ["", f"`{v.variant}`: **not checked**: the run was cut short before this variant."]
        else:
            lines += ["", f"`{v.variant}`: the search was cut short ({v.stats.limit}); properties without a "
                      "counterexample are **not verified**."]
    lines += ["", "## Counterexamples", ""]
    if not any_cx and incomplete:  # never "no property is violated" for a run that did not see everything
        lines += ["None found, but the run is incomplete (see above): properties without a counterexample "
                  "are **not verified**.", ""]
    elif not any_cx:
        lines += ["None: no property is violated in any variant.", ""]
    return "\n".join(lines)


def _tail(result: RunResult) -> str:
    return "\n".join(["## Reproduce", ""] + _fence(printable(reproduce(result)), "sh"))


def _fold(lines: list[str], what: str, fold: bool) -> list[str]:
    if not fold:
        return lines
    return [f"<details><summary>{_html(what)}</summary>", ""] + lines + ["", "</details>"]


def trace_files(result: RunResult) -> list[tuple[str, str]]:
    """(file name, text) of each counterexample's whole trace, for the report's side folder."""
    return [(f"{file_stem(result, v.variant, cx.property)}.txt", format_counterexample(cx, v.variant) + "\n")
            for v, cx in counterexamples(result)]


def write_report(result: RunResult, path: str, timing: bool = False, trace_url: str | None = None) -> list[str]:
    """The report, and beside it `<report>.traces/`: one file per counterexample with its
    whole trace (to publish where `trace_url` says). Returns every path written."""
    side = trace_files(result)
    folder = os.path.splitext(os.path.basename(path))[0] + ".traces"
    write_text(path, review_report(result, timing, folder if side else None, trace_url))
    written = [path]
    for name, text in side:
        target = os.path.join(os.path.dirname(path), folder, name)
        write_text(target, text)
        written.append(target)
    return written
