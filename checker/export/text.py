"""Plain-text output: the summary table, numbered traces, and race diagrams drawn the
way kernel commit messages draw races (one column per CPU, time going down).

Everything here formats result objects; nothing re-runs a model.
"""

from __future__ import annotations

import os
import textwrap

from ..base.safe_text import printable
from .files import counterexamples, describe
from ..results.trace import (
    LKMM_HOLDS_NOTE,
    MEMORY,
    Buffered,
    Counterexample,
    ReplayResult,
    ReplayStatus,
    RunResult,
    Trace,
    Verdict,
    VariantResult,
    show_number,
    show_value,
)
from ..results.findings import explained_warnings, run_warnings

MEMORY_NAMES = {"sc": "sequential consistency", "tso": "x86-TSO", "lkmm": "lkmm (operational)"}


CTI = "counterexample to induction"
MERGED = "local steps merged into the step that follows them"  # engines/reduce/'s note
ENGINE_WORDS = {"bmc": "bounded model checking (Z3)", "induction": "k-induction (Z3)",
                "pdr": "PDR/IC3 (Z3 Spacer; invariants certified by one-step induction)",
                "simulate": "random simulation (finds violations, verifies nothing)"}


def verdict_word(o) -> str:
    if o.verdict is Verdict.INCOMPLETE and o.note.startswith("not checked"):  # run.NOT_CHECKED
        return "not checked"
    if o.verdict is Verdict.INCOMPLETE and o.bound is not None:
        if o.counterexample is not None and o.counterexample.kind == CTI:
            return f"not proved (k <= {o.bound})"
        if o.note.startswith("no violation"):
            return f"no violation up to depth {o.bound}"
    return o.verdict.value


def _mark(o) -> str:
    if o.verdict is Verdict.INCOMPLETE:
        return "INCOMPLETE"
    if o.verdict is Verdict.UNKNOWN:
        return "UNKNOWN"
    if o.verdict is Verdict.CHECKER_BUG:
        return "CHECKER BUG"
    return "ok" if o.as_expected else "UNEXPECTED"


def _mixed_memory(result: RunResult) -> bool:
    return len({v.memory for v in result.variants}) > 1


def _engine_of(o, v) -> str:
    """Which engine decided this row: lemmas are Z3's; liveness verdicts come from the
    fair-cycle search over the graph the explicit engine built."""
    if o.kind == "lemma":
        return "z3"
    if o.kind == "liveness" and v.stats.engine == "explicit":
        return "liveness"
    return v.stats.engine


def _foldable(v: VariantResult) -> bool:
    """A variant whose every property was decided as expected, by a complete search:
    the default table gives it one row (its violations are listed after the table)."""
    return (len(v.outcomes) > 1 and v.model_error is None and not v.checker_bugs and v.stats.complete
            and all(o.as_expected and o.verdict in (Verdict.HOLDS, Verdict.PROVED, Verdict.VIOLATED)
                    for o in v.outcomes))


FOLD_ROWS = 24  # a table of more rows than this (a screen) folds the variants that are as expected


def summary_table(result: RunResult, fold: bool = False) -> str:
    """Variant x property: verdict, expectation, the counterexample's length, the search's
    size. `fold`, when the table would not fit a screen (FOLD_ROWS): a variant whose every
    outcome is as expected is one row, which names the properties it violates, as expected."""
    mixed = _mixed_memory(result)
    fold = fold and sum(max(len(v.outcomes), 1) for v in result.variants) > FOLD_ROWS
    rows = [("variant", "property", "verdict", "expected", "", "steps", "states", "depth", "time", "engine")]
    memory, notes = ["memory"], [""]  # per row: the variant's memory model; text after the row
    for v in result.variants:
        first = True
        # Z3 counts no states; a simulation counts the distinct states its runs went through
        states = f"{v.stats.states:,}" if v.stats.engine in ("explicit", "simulate") else "-"
        if fold and _foldable(v):
            bad = [o for o in v.outcomes if o.verdict is Verdict.VIOLATED]
            n, k = len(v.outcomes), len(bad)
            verdict = "all hold" if not k else "all violated" if k == n else f"{n - k} hold, {k} violated"
            rows.append((v.variant, f"{n} properties", verdict, "as expected", "ok", "", states,
                         str(v.stats.depth), f"{v.stats.seconds:.2f}s", v.stats.engine))
            memory.append(v.memory)
            notes.append("  violated: " + ", ".join(
                o.property + (f" ({o.counterexample.trace.steps})" if o.counterexample is not None
                              and o.counterexample.kind != "lemma" else "") for o in bad) if bad else "")
            continue
        for o in v.outcomes:
            exp = ("violated" if o.expected_violation else "holds") if result.use_expectations else "holds"
            cx = o.counterexample
            rows.append((v.variant if first else "", o.property, verdict_word(o), exp, _mark(o),
                         str(cx.trace.steps) if cx is not None and cx.kind != "lemma" else "",
                         states if first else "", str(v.stats.depth) if first else "",
                         f"{v.stats.seconds:.2f}s" if first else "",
                         _engine_of(o, v)))
            memory.append(v.memory if first else "")
            notes.append("")
            first = False
        if not v.outcomes and v.model_error is None:
            done = "explored" if v.stats.complete else "incomplete"
            rows.append((v.variant, "(no properties)", done, "-", "", "", states,
                         str(v.stats.depth), f"{v.stats.seconds:.2f}s", v.stats.engine))
            memory.append(v.memory)
            notes.append("")
        if v.model_error is not None:
            rows.append((v.variant if first else "", "(model error)", "error", "-", "UNEXPECTED",
                         str(v.model_error.trace.steps), states if first else "", "", "", v.stats.engine))
            memory.append(v.memory if first else "")
            notes.append("")
            first = False
        for _ in v.checker_bugs:
            rows.append(("", "(checker bug)", "checker bug", "-", "CHECKER BUG", "", "", "", "", v.stats.engine))
            memory.append("")
            notes.append("")
    lengths = any(r[5] for r in rows[1:])
    if not lengths:  # no counterexample: no column of blanks
        rows = [r[:5] + r[6:] for r in rows]
    if mixed:  # say which memory model each variant ran under
        rows = [r[:1] + (mem,) + r[1:] for r, mem in zip(rows, memory)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {5, 6, 7, 8} if lengths else {5, 6, 7}
    if mixed:
        right = {i + 1 for i in right}
    lines = []
    for k, (r, note) in enumerate(zip(rows, notes)):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append(("  ".join(cells).rstrip() + note).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    if (lengths or any(notes)) and any(v.stats.engine == "explicit" for v in result.variants):
        lines.append("steps: the counterexample's length, its failing step included; depth: how deep the "
                     "search went" + (" (K for bmc)" if any(v.stats.engine == "bmc" for v in result.variants)
                                      else ""))
    return "\n".join(lines)


def header(result: RunResult) -> str:
    n = len(result.variants)
    if _mixed_memory(result):
        mem = "memory model per variant (see the table)"
    elif result.variants:
        v0 = result.variants[0]
        mem = "memory model " + MEMORY_NAMES.get(v0.memory, v0.memory)
        bounds = sorted({v.store_buffer for v in result.variants if v.store_buffer})
        if bounds and v0.memory == "lkmm":
            mem += f" (at most {'/'.join(map(str, bounds))} stores kept per location)"
        elif bounds:
            mem += f" (store buffers of at most {'/'.join(map(str, bounds))} stores)"
    else:
        mem = "memory model ?"
    live = any(o.kind == "liveness" for v in result.variants for o in v.outcomes)
    lemmas = ", lemmas by Z3" if any(o.kind == "lemma" for v in result.variants for o in v.outcomes) else ""
    engine = result.variants[0].stats.engine if result.variants else "explicit"
    if engine in ENGINE_WORDS:
        how = ENGINE_WORDS[engine]
    else:
        how = f"explicit-state breadth-first search{' and fair-cycle search for liveness' if live else ''}"
    return f"{result.model} ({printable(result.file)}): {n} variant{'s' if n != 1 else ''}, {how}{lemmas}, {mem}"


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
    return lines + history_notes(result)


def history_notes(result: RunResult) -> list[str]:
    """What an lkmm verdict rests on: what the machine does not explore, the history
    bound, and whether it ever bit (as store_buffer_notes says for tso)."""
    lines = []
    lk = [v for v in result.variants if v.memory == "lkmm"]
    held = [v.variant for v in lk if any(o.verdict is Verdict.HOLDS for o in v.outcomes)]
    if held:
        lines.append("LKMM: what holds in " + ", ".join(held) + " " + LKMM_HOLDS_NOTE)
    done = [v for v in lk if v.stats.complete]
    free = [v.variant for v in done if v.stats.buffer_full_states == 0]
    if free:
        bound = max(v.store_buffer or 0 for v in done if v.variant in free)
        lines.append(f"LKMM: no store ever waited for a full history (at most {bound} stores kept per location) "
                     "in " + ", ".join(free) + ": those verdicts hold for histories of any length")
    for v in done:
        if v.stats.buffer_full_states:
            lines.append(f"LKMM: in {v.variant} a store waited for a full history in "
                         f"{v.stats.buffer_full_states:,} states (a CPU still read the oldest store kept): what "
                         f"holds there holds for histories of at most {v.store_buffer} stores per location (a "
                         "violation stands for any length; raise the bound with --store-buffer N or "
                         "`memory lkmm(N)`)")
    return lines


def preemption_notes(result: RunResult) -> list[str]:
    """What a verdict under a preemption bound rests on (context bounding, as CHESS does)."""
    lines = []
    for bound in sorted({v.preemptions for v in result.variants if v.preemptions is not None}):
        names = [v.variant for v in result.variants if v.preemptions == bound]
        lines.append(f"preemption bound: what holds in {', '.join(names)} holds for runs with at most {bound} "
                     f"preemption{'s' if bound != 1 else ''} (a violation stands; raise the bound with "
                     "--preemptions N or `preemptions N;`)")
    return lines


def final_state_notes(result: RunResult) -> list[str]:
    counted = [v for v in result.variants if v.stats.final_states is not None]
    if not counted:
        return []
    return ["distinct final states (no process can move, every process at a valid end, store buffers empty): "
            + ", ".join(f"{v.variant} {v.stats.final_states:,}" for v in counted)]


def search_notes(result: RunResult) -> list[str]:
    """How the search ran, where that is news: several workers (or why not, when they
    were asked for), memory per state on big searches, and --hash-compact's odds."""
    lines = []
    for v in result.variants:
        st = v.stats
        if st.workers > 1:
            lines.append(f"{v.variant}: {st.workers_note or f'{st.workers} workers'}")
        elif st.workers_note:
            lines.append(f"{v.variant}: one worker: {st.workers_note}")
        if st.bytes_per_state is not None and st.states >= 10_000:
            lines.append(f"{v.variant}: memory {max(st.bytes_per_state, 0):,.0f} bytes per stored state "
                         f"(resident memory the search grew by, over {st.states:,} states)")
        if st.collision_probability is not None:
            p = st.collision_probability
            how = ("every state fits in its 64-bit fingerprint, so none can collide" if p == 0 else
                   f"estimated n^2/2^64 for n = {st.states:,} fingerprints")
            what = "" if all(o.verdict is not Verdict.VIOLATED for o in v.outcomes) else "each property that "
            lines.append(f"{v.variant}: --hash-compact: {what}holds with collision probability <= {p:.2g} ({how})")
        lines += [f"{v.variant}: {n}" for n in st.notes]
    return lines


FEW = 3  # per-variant details the default output lists before it counts them instead


def reduction_notes(result: RunResult, full: bool = True) -> list[str]:
    """What each variant's search reduced. Notes read "what: detail"; one line per
    "what", with the detail once if every variant says the same, else per variant (not
    `full`: for more than a few variants, how many)."""
    lines = []
    por = [v for v in result.variants if v.stats.ample_states is not None]
    if por and (full or len(por) <= FEW):
        lines.append("partial-order reduction (--no-por turns it off), states expanded with an ample set: "
                     + ", ".join(f"{v.variant} {v.stats.ample_states:,}/{v.stats.states:,}" for v in por))
    elif por:
        lines.append(f"partial-order reduction (--no-por turns it off), states expanded with an ample set: "
                     f"{sum(v.stats.ample_states for v in por):,}/{sum(v.stats.states for v in por):,} "
                     f"in {len(por)} variants (--full: per variant)")
    groups: dict[str, list[tuple[str, str]]] = {}
    for v in result.variants:
        for note in v.stats.reductions:
            what, _, detail = note.partition(": ")
            groups.setdefault(what, []).append((v.variant, detail))
    for what, said in groups.items():
        details = {d for _, d in said}
        if len(details) == 1 and (len(said) == len(result.variants) or len(result.variants) == 1):
            lines.append(f"{what}: {said[0][1]}" if said[0][1] else what)
        elif len(details) == 1:
            lines.append(f"{what}: {said[0][1]} ({', '.join(v for v, _ in said)})" if said[0][1]
                         else f"{what} ({', '.join(v for v, _ in said)})")
        elif full or len(said) <= FEW:
            lines.append(f"{what}: " + ", ".join(f"{v} {d}" for v, d in said))
        else:
            lines.append(f"{what}: {len(said)} variants (--full: each)")
        if what == MERGED:
            lines.append("  (the search takes a merged chain as one step, so its states and depth count fewer "
                         "than a trace's steps; the traces show every step)")
    return lines


def footer(result: RunResult, full: bool = True) -> str:
    lines = [f"CHECKER BUG in variant {v.variant}: {bug}" for v in result.variants for bug in v.checker_bugs]
    lines += reduction_notes(result, full) + final_state_notes(result) + store_buffer_notes(result) \
        + preemption_notes(result) + search_notes(result)
    incomplete = [v for v in result.variants if not v.stats.complete]
    for v in incomplete:
        if v.stats.limit == "not checked":  # run.NOT_CHECKED
            lines.append(f"{v.variant}: not checked: the run was cut short before this variant")
        elif (v.stats.limit or "").startswith("not checked: "):
            lines.append(f"{v.variant}: {v.stats.limit}")
        elif v.stats.engine == "explicit":
            lines.append(f"{v.variant}: search incomplete ({v.stats.limit}) after {v.stats.states:,} states; "
                         "properties without a counterexample are not verified")
        else:
            lines.append(f"{v.variant}: {v.stats.engine} incomplete ({v.stats.limit}); "
                         "properties without a counterexample or a proof are not verified")
    lines += liveness_summary(result, full)
    lines += coverage_lines(result)
    explained = explained_warnings(result)
    if explained:
        lines.append(f"coverage: {len(explained)} finding(s) explained in the model by `// coverage:` comments "
                     "(--coverage lists each statement)")
    bad = [(v.variant, o.property) for v in result.variants for o in v.outcomes
           if not o.as_expected and o.verdict not in (Verdict.INCOMPLETE, Verdict.UNKNOWN)]
    if result.all_as_expected:
        lines.append("every outcome is as expected" if result.use_expectations else "every property holds")
    elif bad:
        lines.append(f"{len(bad)} outcome(s) differ from expectations: "
                     + ", ".join(f"{v}/{p}" for v, p in bad[:8]) + (" ..." if len(bad) > 8 else ""))
    errors = [v.variant for v in result.variants if v.model_error is not None]
    if errors:
        lines.append("model error in " + ", ".join(errors) + ": see the trace above")
    unknown = [(v.variant, o.property, o.note) for v in result.variants for o in v.outcomes
               if o.verdict in (Verdict.INCOMPLETE, Verdict.UNKNOWN)]
    if unknown:
        lines.append(f"{len(unknown)} verdict(s) incomplete, not verified: "
                     + ", ".join(f"{v}/{p}" + (f" ({n})" if n else "") for v, p, n in unknown[:8])
                     + (" ..." if len(unknown) > 8 else ""))
    return "\n".join(lines)


DIAGRAM, TRACE, BOTH, COMPACT = "diagram", "trace", "both", "compact"  # what format_counterexample shows of a trace


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
    lines = [title, "=" * min(len(title), width)]
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
    if t.loop_start is None:
        how = f"{t.steps} step{'s' if t.steps != 1 else ''}"
    elif t.loop_start == t.length:
        how = f"{t.length} steps, then stays for ever"
    else:
        how = f"{t.loop_start} steps, then a {t.length - t.loop_start}-step loop for ever"
    stuck = cx.message.partition("not at a valid end: ")[2] if cx.kind == "deadlock" else ""
    title = named + f": {how}" + (f"; stuck: {stuck}" if stuck else "")
    lines = textwrap.wrap(title, width, subsequent_indent="    ") + [race_runs(t, width)]
    sides: list[str] = []  # each invariant's or final condition's operands, in the state that breaks it
    for c in (cx,) + tuple(c for _, c in same):
        sides += [f"{k} = {v}" for k, v in c.violation if not k.endswith("@") and f"{k} = {v}" not in sides]
    if sides:
        lines.append(clip("  violating state: " + ", ".join(sides), width))
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


def shape(t: Trace) -> str:
    """How long a trace is, and for a lasso where its loop starts."""
    def steps(n: int) -> str:
        return f"{n} step{'s' if n != 1 else ''}"

    if t.loop_start is None:
        return steps(t.steps) + (" (the last one fails)" if t.failure is not None else "")
    if t.loop_start == t.length:
        return f"{steps(t.length)} to state {t.loop_start}, where the run stays for ever"
    return (f"{steps(t.loop_start)} to state {t.loop_start}, then a loop of "
            f"{steps(t.length - t.loop_start)} back to state {t.loop_start}, repeated for ever")


POR_STEM = "; with partial-order reduction: the stem is the shortest of the reduced interleavings (--no-por: of all)"


def liveness_summary(result: RunResult, full: bool = True) -> list[str]:
    """Per liveness verdict, the fairness it rests on (grouped by the assumption made).
    Not `full`, for more than a few verdicts: those that say the usual are counted."""
    groups: dict[tuple[str, ...], list[tuple[str, object]]] = {}
    for v in result.variants:
        for o in v.outcomes:
            if o.kind == "liveness":
                groups.setdefault(v.fairness, []).append((f"{v.variant}/{o.property}", o))
    lines, por = [], False
    for fairness, said in groups.items():
        assumed = "; ".join(fairness) if fairness else "no processes"
        lines.append(f"liveness verdicts assume {assumed}; a run may stop only where no fair process can move:")
        if full or len(said) <= FEW:
            lines += [f"  {name}: {o.verdict.value}" + (f"; {o.note}" if o.note else "") for name, o in said]
            continue
        usual = [o for _, o in said if o.verdict is Verdict.HOLDS or (
            o.verdict is Verdict.VIOLATED and o.counterexample is not None and "cut short" not in o.note)]
        lines[-1] = lines[-1].rstrip(":") + ": " + ", ".join(
            f"{n} {word}" for n, word in ((sum(o.verdict is Verdict.HOLDS for o in usual), "hold"),
                                         (sum(o.verdict is Verdict.VIOLATED for o in usual), "violated")) if n) \
            + " (--full: each, with the processes whose fairness it needed)"
        por |= any(o.note.endswith(POR_STEM) for o in usual)
        lines += [f"  {name}: {o.verdict.value}" + (f"; {o.note}" if o.note else "")
                  for name, o in said if not any(o is u for u in usual)]
    if por:
        lines.append("  with partial-order reduction: each violation's stem is the shortest of the reduced "
                     "interleavings (--no-por: of all)")
    return lines


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
    for i, a in enumerate(t.actions, 1):
        if t.loop_start is not None and i - 1 == t.loop_start:
            lines.append(f"  {'-' * 8} loop starts here (state {t.loop_start}); the steps below repeat forever {'-' * 8}")
        lines.append(_action_line(i, numw, a, width))
        lines += _explained(a, numw, width)
        for chunk in _wrap_assignments(list(a.changes), width - 8 - numw):
            lines.append(" " * (6 + numw) + chunk)
    if t.loop_start is not None and t.loop_start == t.length:
        lines.append(f"  {'-' * 8} the run stays in state {t.loop_start} for ever {'-' * 8}")
    elif t.loop_start is not None:
        lines.append(f"  {'-' * 8} back to state {t.loop_start} {'-' * 8}")
    if t.failure is not None:
        a = t.failure
        lines.append(_action_line(t.length + 1, numw, a, width) + "   <-- fails here")
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


def _action_line(i: int, numw: int, a, width: int) -> str:
    """`  3. vcpu  pi_timer.spec:120 [inline]  statement`, the statement wrapped at token
    boundaries (never cut) under itself, however long the spec's path is."""
    where = f"{printable(os.path.basename(a.span.file))}:{a.span.line}" if a.span else ""
    ctx = f" [{a.inline}]" if a.inline else ""
    head = f"  {str(i).rjust(numw)}. {_who(a):<10} " + (f"{where}{ctx}  " if where or ctx else "")
    if len(head) > width // 2:  # a long process name or path: the statement goes below
        return head.rstrip() + "\n" + "\n".join(wrap_cell(a.text, width, " " * (6 + numw), " " * (8 + numw)))
    return "\n".join(wrap_cell(a.text, width, head, " " * (len(head) + 2)))


def _who(a) -> str:
    """The process, and in a model with execution contexts the CPU it ran on."""
    return a.process if a.cpu is None else f"{a.process}@cpu{a.cpu}"


def _on(a) -> str:
    return "" if a.cpu is None else f"[cpu{a.cpu}] "


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


def race_diagram(t: Trace, width: int = 100, compact: bool = False) -> str:
    """One column per process that takes a step, time going down; each step shows the
    statement and, below it, what it changed. Stores made visible by a TSO flush sit in
    `memory`. Long statements wrap inside their column (at spaces, else after
    punctuation), so the diagram stays within `width` for up to four processes."""
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
        procs, idle = declared or ["-"], []
    last = t.length + (1 if t.failure else 0)
    numw = len(str(max(last, 1)))
    ncol = len(procs)
    sep = " | "
    steps = list(t.actions) + ([t.failure] if t.failure else [])
    wants = [max([len(p)] + [max(len(_on(a) + a.text), 5 + len(_effects(a))) for a in steps if a.process == p]
                 + ([len(x) + 2 for x in pending_lines] if p == MEMORY else [])) for p in procs]
    colws = _share(wants, width - numw - 1 - len(sep) * (ncol - 1), 16)
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
        colw = colws[procs.index(a.process)]
        if compact:
            body = [clip(_on(a) + " ".join(a.text.split()) + (f" -> {_effects(a)}" if _effects(a) else "")
                         + (f" => {a.detail}" if a.detail else ""), colw)]
        else:
            body = wrap_cell(_on(a) + a.text, colw, rest="  ") + _said(a, colw)
            if _effects(a):
                body += wrap_cell(_effects(a), colw, first="  -> ", rest="     ")
        lines += row(f"{i + 1}", procs.index(a.process), body)
    if t.failure is not None:
        a = t.failure
        colw = colws[procs.index(a.process)]
        body = wrap_cell(a.text, colw, rest="  ") + _said(a, colw) + ["  ** FAILS **"]
        if compact:
            body = [clip(" ".join(a.text.split()), colw - 7) + " FAILS"]
        lines += row(f"{t.length + 1}", procs.index(a.process), body)
    if t.loop_start is not None and t.loop_start == t.length:
        lines.append(banner("~~~ the run stays here for ever ~~~"))
    elif t.loop_start is not None:
        lines.append(banner(f"~~~ back to step {t.loop_start + 1} ~~~"))
    if pending_lines and t.loop_start is None:
        colw = colws[procs.index(MEMORY)]
        body = [pending_lines[0]] + [x for pl in pending_lines[1:] for x in wrap_cell(pl, colw, "  ", "    ")]
        lines += row("", procs.index(MEMORY), body)
    if idle:
        lines.append(f"{lead}(no step taken by: {', '.join(idle)})")
    return "\n".join(lines)


def race_lines(t: Trace, width: int = 100) -> str:
    """The race in one line per step: who moved, what it ran, what changed and what it
    decided, clipped at a token boundary (the default for an expected violation)."""
    steps = list(t.actions) + ([t.failure] if t.failure else [])
    numw = len(str(max(len(steps), 1)))
    procw = min(max((len(_who(a)) for a in steps), default=1), 16)
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
        lines.append(clip(f"{str(i).rjust(numw)} {_who(a).ljust(procw)} {text}", width))
    if t.loop_start is not None:
        lines.append(" " * (numw + 1) + (f"~~~ back to step {t.loop_start + 1} ~~~" if t.loop_start < t.length
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
        if runs and _who(steps[runs[-1][0]]) == _who(a) and not starts_loop:  # one process on one CPU
            runs[-1][1] = i
        else:
            runs.append([i, i])
    labels = [("loop " if t.loop_start is not None and i >= t.loop_start else "")
              + (f"{i + 1}" if i == j else f"{i + 1}-{j + 1}") for i, j in runs]
    numw = max((len(x) for x in labels), default=1)
    procw = min(max((len(_who(steps[i])) for i, _ in runs), default=1), 16)
    wheres = [_lines_of(steps[i:j + 1]) for i, j in runs]
    wherew = max((len(x) for x in wheres), default=0)
    lines = []
    for (i, j), label, where in zip(runs, labels, wheres):
        body = _run_effects(t, i, min(j, t.length - 1)) if i < t.length else ""
        run = steps[i:j + 1]
        head = f"  {label.rjust(numw)} {_who(steps[i]).ljust(procw)} {where.ljust(wherew)} "
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
        lines.append(clip(head + body, width))
    pending = [(k, v) for k, v in t.states[-1].values if isinstance(v, Buffered) and v]
    if pending and t.loop_start is None:  # tso/lkmm: stores some CPU cannot see yet
        said = pending_text(pending)  # a heading, then its entries: one line for each heading
        while said:
            k = next((i for i in range(1, len(said)) if said[i].endswith(":")), len(said))
            lines.append(clip(f"  {said[0]} " + ", ".join(said[1:k]), width))
            said = said[k:]
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
    shown = []
    flushes = all(a.kind == "flush" for a in t.actions[first:last + 1])
    for k in names:
        if flushes and k.startswith("sb("):  # a flush: the stores it made visible say it
            continue
        if k in after and after[k] != before.get(k):
            v = after[k]
            if isinstance(v, Buffered) and k.startswith("sb("):
                shown.append(effect_text(k, v) if v else f"{k[3:-1]}'s store buffer empty")
            else:
                shown.append(effect_text(k, v))
    return ", ".join(shown)


def clip(text: str, width: int) -> str:
    """One line of at most `width` columns, cut at a token boundary (then `..`)."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - 2)
    if cut <= width // 3:
        cut = _cut(text[:width - 2], width - 2) or width - 2
    return text[:cut].rstrip() + " .."


def _said(a, colw: int) -> list[str]:
    """A step's call site and outcome in its diagram column."""
    out = wrap_cell(f"[{a.call}]", colw, "  ", "   ") if a.call else []
    return out + (wrap_cell(a.detail, colw, "  => ", "     ") if a.detail else [])


def _effects(a) -> str:
    """What a step changed, as the race diagram shows it (a flush's text says it all)."""
    if a.kind == "flush":
        return ""
    return ", ".join(effect_text(k, v) for k, v in a.changes)


def _share(wants: list[int], room: int, least: int) -> list[int]:
    """Column widths: each column gets what its longest text wants, if the room allows;
    otherwise narrow columns keep their width and the wide ones share the rest evenly."""
    wants = [max(least, w) for w in wants]
    widths = [0] * len(wants)
    left = room
    order = sorted(range(len(wants)), key=lambda i: wants[i])
    for k, i in enumerate(order):
        widths[i] = max(least, min(wants[i], left // (len(wants) - k)))
        left -= widths[i]
    return widths


_SOFT_BREAKS = ",;.([{=&|"  # break after these inside a long token ...
_LAST_RESORT = "_>"  # ... or inside a name (`lapic_timer_` / `->mode`) before cutting letters


def _cut(word: str, room: int, names: bool = True) -> int:
    """Where to break a long token to fit `room`: after punctuation, else (`names`)
    after `_` inside a name."""
    cut = max(word.rfind(ch, 0, room) + 1 for ch in _SOFT_BREAKS)
    if cut <= 3 and names:  # between C tokens where there is a place; inside a name only if not
        cut = max([cut] + [word.rfind(ch, 0, room) + 1 for ch in _LAST_RESORT])
    return cut


def wrap_cell(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """Wrap text to `width` columns: at spaces where possible, inside a long token after
    punctuation (`.`, `,`, `(` ...), then after `_`, and only as a last resort in the
    middle of a name."""
    out: list[str] = []
    line = first
    prefix_len = len(first)
    for word in text.split():
        while True:
            room = width - len(line) - (1 if len(line) > prefix_len else 0)
            if len(word) <= room:
                line = f"{line} {word}" if len(line) > prefix_len else line + word
                break
            too_long = len(word) > width - len(rest)  # it fits on no line: a name may be split
            cut = _cut(word, room, names=too_long)
            if len(line) > prefix_len:
                # a word too long for any line, or one that would leave this line nearly
                # empty, is split here if it breaks well (between C tokens, never inside a
                # name that fits on a line of its own); else it starts a new line
                if (too_long or len(line.strip()) <= width // 4) and cut > 3:
                    out.append(f"{line} {word[:cut]}")
                    line, prefix_len = rest, len(rest)
                    word = word[cut:]
                    continue
                out.append(line)
                line, prefix_len = rest, len(rest)
                continue
            if cut <= 0:
                cut = max(room, 1)
            out.append(line + word[:cut])
            line, prefix_len = rest, len(rest)
            word = word[cut:]
    if len(line) > prefix_len or not out:
        out.append(line)
    return out


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


def coverage_lines(result: RunResult) -> list[str]:
    """Coverage and vacuity warnings (engines/coverage.py), one line each."""
    grouped: dict[tuple, list[str]] = {}  # the same warning in several variants is one line
    for w in run_warnings(result):
        key = (w.line, w.message) if not w.message.startswith(w.variant + ":") else (0, w.message)
        grouped.setdefault(key, []).append(w.variant)
    lines = []
    for (line, msg), variants in grouped.items():
        where = f"line {line}: " if line else ""
        if msg.startswith(variants[0] + ":"):
            lines.append(f"warning: {msg}")
        elif len(variants) == 1:
            lines.append(f"warning: {variants[0]}: {where}{msg}")
        else:
            shown = ", ".join(variants[:6]) + (f" and {len(variants) - 6} more" if len(variants) > 6 else "")
            lines.append(f"warning: {where}{msg} (in {shown})")
    if len(lines) > MAX_WARNING_LINES:
        rest = len(lines) - MAX_WARNING_LINES
        lines = lines[:MAX_WARNING_LINES] + [f"warning: ... and {rest} more: --coverage lists every statement, "
                                             "--json and --sarif hold every warning"]
    return lines


#: coverage warnings shown in the text output; the rest are counted (all are in JSON and SARIF)
MAX_WARNING_LINES = 40


def format_run(result: RunResult, show_traces: bool = True, width: int = 100, full: bool = False) -> str:
    """The run as `check` prints it, sized to read in a terminal: a variant whose every
    outcome is as expected is one row of the table, an expected violation shows its race
    one line per run of steps (a race already shown, in this variant or another, is
    named, not shown again), and an unexpected one (or a model error) shows the
    numbered trace and the race diagram. `full`: every row and every counterexample in
    both forms."""
    parts = [header(result), "", summary_table(result, fold=not full)]
    if show_traces:
        expected = {(v.variant, o.property): o.as_expected for v in result.variants for o in v.outcomes}
        def race(cx: Counterexample) -> tuple:
            if not cx.trace.actions:  # a lemma (shown whole: its values are the point) or a bad initial state
                return (id(cx),)
            return tuple((a.process, a.span, a.text, a.changes) for a in cx.trace.actions)

        quiet = [(v, cx) for v, cx in counterexamples(result)
                 if not full and expected.get((v.variant, cx.property), False)]
        races: dict[tuple, list[tuple[str, Counterexample]]] = {}  # expected violations with the same race
        for v, cx in quiet:
            races.setdefault(race(cx), []).append((v.variant, cx))
        intro, in_full = False, False  # the compact block's one-line legend; was the last one in full?
        for v, cx in counterexamples(result):
            if not any(cx is c for _, c in quiet):
                parts += ["", format_counterexample(cx, v.variant, width, BOTH)]
                in_full = True
                continue
            group = races[race(cx)]
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
    foot = footer(result, full=full)
    if foot:
        parts += ["", foot]
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
    for st, where in zip(r.steps, wheres):
        a = st.recorded
        head = f"  {str(st.number).rjust(numw)}. {a.process:<10} {where:<{wherew}} "
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
