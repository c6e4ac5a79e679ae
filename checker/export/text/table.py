"""The summary table (variant x property), the header line above it and the notes
and footer below it."""

from __future__ import annotations

from collections.abc import Sequence

from ...base.safe_text import printable
from ...results.trace import LKMM_NAME, RunResult, Verdict, VariantResult, lkmm_note
from ...results.findings import explained_warnings, run_warnings
from .trace import liveness_summary
from .words import CTI, FEW
from .wrap import wrap_cell


MEMORY_NAMES = {"sc": "sequential consistency", "tso": "x86-TSO", "lkmm": "lkmm (operational)"}


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
        if o.note.startswith("no violation"):  # "up to depth K", or "up to K rounds" (bmc --rounds)
            return o.note
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


def summary_table(result: RunResult, fold: bool = False, width: int | None = None) -> str:
    """Variant x property: verdict, expectation, the counterexample's length, the search's
    size. `fold`, when the table would not fit a screen (FOLD_ROWS): a variant whose every
    outcome is as expected is one row, which names the properties it violates, as expected.
    `width`: the table is laid out to fit it (fit_table)."""
    mixed = _mixed_memory(result)
    fold = fold and sum(max(len(v.outcomes), 1) for v in result.variants) > FOLD_ROWS
    rows: list[tuple[str, ...]] = [("variant", "property", "verdict", "expected", "", "steps", "states", "depth", "time",
                                    "engine")]
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
    right = {5, 6, 7, 8} if lengths else {5, 6, 7}
    if mixed:
        right = {i + 1 for i in right}
    lines = fit_table(rows, right, notes, width, 2 if mixed else 1)
    if (lengths or any(notes)) and any(v.stats.engine == "explicit" for v in result.variants):
        lines += wrap_cell("steps: the counterexample's length, its failing step included; depth: how deep the "
                           "search went" + (" (K for bmc)" if any(v.stats.engine == "bmc" for v in result.variants)
                                            else ""), width or 10**6, rest="  ")
    return "\n".join(lines)


#: the columns a table too wide for its width leaves out, least needed first
SPARE_COLUMNS = ("time", "engine", "depth")


def _render(rows: Sequence, right: set[int], notes: list[str], width: int | None) -> list[str]:
    """Rows as aligned columns; a str in `rows` is a line of its own (a variant's name
    above its rows). A row's note follows it, or goes below it when it would not fit."""
    cells_of = [r for r in rows if not isinstance(r, str)]
    widths = [max(len(r[i]) for r in cells_of) for i in range(len(cells_of[0]))]
    lines = []
    for k, (r, note) in enumerate(zip(rows, notes)):
        if isinstance(r, str):
            lines.append(r)
            continue
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        line = "  ".join(cells).rstrip()
        if note and width is not None and len(line) + len(note) > width:
            lines.append(line)
            lines += wrap_cell(note.strip(), width, "    ", "      ")
        else:
            lines.append((line + note).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def fit_table(rows: Sequence[tuple[str, ...]], right: set[int], notes: list[str], width: int | None,
              lead: int) -> list[str]:
    """The summary table within `width` columns: as it is if it fits; else each
    variant's name (and memory model: the `lead` first columns) on a line of its own
    above its rows; then, while it is still too wide, the SPARE_COLUMNS left out, and a
    line says which."""
    lines = _render(rows, right, notes, width)
    if width is None or max(map(len, lines)) <= width:
        return lines
    stacked: list = [("property",) + rows[0][lead + 1:]]
    stacked_notes = [notes[0]]
    for r, note in zip(rows[1:], notes[1:]):
        if r[0]:
            stacked.append(r[0] + (f" ({r[1]})" if lead == 2 else ""))
            stacked_notes.append("")
        stacked.append(("  " + r[lead],) + r[lead + 1:])
        stacked_notes.append(note)
    right = {i - lead for i in right}
    dropped: list[str] = []
    lines = _render(stacked, right, stacked_notes, width)
    for name in SPARE_COLUMNS:
        if max(map(len, lines)) <= width:
            break
        k = stacked[0].index(name)
        stacked = [r if isinstance(r, str) else r[:k] + r[k + 1:] for r in stacked]
        right = {i - (i > k) for i in right if i != k}
        dropped.append(name)
        lines = _render(stacked, right, stacked_notes, width)
    if dropped:
        lines += wrap_cell(f"(to fit {width} columns the table leaves out: {', '.join(dropped)}; a wider terminal "
                           "or --json shows them)", width, rest="  ")
    return lines


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


Z3_ENGINES = ("bmc", "induction", "pdr")  # they do not count the states where a store buffer was full


def store_buffer_notes(result: RunResult) -> list[str]:
    """What a tso verdict rests on: the store-buffer bound, and whether it ever bit."""
    lines = []
    symbolic = [v for v in result.variants if v.memory == "tso" and v.stats.engine in Z3_ENGINES]
    for cap in sorted({v.store_buffer or 0 for v in symbolic}):
        said = ", ".join(v.variant for v in symbolic if (v.store_buffer or 0) == cap)
        lines.append(f"x86-TSO under --engine {symbolic[0].stats.engine} ({said}): store buffers of at most {cap} "
                     "stores, a store that finds its buffer full waits for a flush, and whether one ever did is "
                     f"not counted: what holds there holds for store buffers of at most {cap} stores (a violation "
                     "stands for any size)")
    tso = [v for v in result.variants if v.memory == "tso" and v.stats.complete and v.stats.engine not in Z3_ENGINES]
    free = [v.variant for v in tso if v.stats.buffer_full_states == 0]
    if free:
        most = max(v.store_buffer or 0 for v in tso if v.variant in free)
        lines.append(f"x86-TSO: no store ever found its store buffer full (at most {most} stores) in "
                     + ", ".join(free) + ": those verdicts hold for store buffers of any size")
    for bound, said in _full(tso).items():
        lines.append(f"x86-TSO: a store waited for a full store buffer in {said}: what holds there holds for "
                     f"store buffers of at most {bound} stores (a violation stands for any size; raise the bound "
                     "with --store-buffer N or `memory tso(N)`)")
    return lines + composite_notes(result) + history_notes(result)


def composite_notes(result: RunResult) -> list[str]:
    """The atomic blocks over several shared locations of the tso variants, in one note:
    each is one locked instruction there, which the kernel has no instruction for
    (--json lists each; under lkmm the LKMM statement names them)."""
    where = sorted({line for v in result.variants if v.memory == "tso" for line, _ in v.memory_findings})
    if not where:
        return []
    many = len(where) != 1
    return [f"x86-TSO: {len(where)} atomic block{'s' if many else ''} over several shared locations "
            f"(line{'s' if many else ''} {', '.join(str(n) for n in where)}) {'are' if many else 'is'} one locked "
            f"instruction of all {'their' if many else 'its'} accesses here, an instruction the kernel does not "
            "have: a verdict may rest on that ordering (write the kernel's statements one by one where it is in "
            "question; --json lists each block)"]


def _full(variants: list[VariantResult]) -> dict[int | None, str]:
    """The variants in which a store waited for a full buffer (history), by bound: one
    note per bound names them all, with how many states each."""
    by: dict[int | None, list[str]] = {}
    for v in variants:
        if v.stats.buffer_full_states:
            by.setdefault(v.store_buffer, []).append(
                f"{v.variant} ({v.stats.buffer_full_states:,} state{'s' if v.stats.buffer_full_states != 1 else ''})")
    return {bound: ", ".join(names) for bound, names in by.items()}


def history_notes(result: RunResult) -> list[str]:
    """What an lkmm verdict rests on: what the machine does not explore, the history
    bound, and whether it ever bit (as store_buffer_notes says for tso)."""
    lines = []  # (lkmm's atomic blocks: the statement below names them; --json lists each)
    lk = [v for v in result.variants if v.memory == "lkmm"]
    held: dict[tuple[str, ...], list[str]] = {}  # by what the model may leave out (memory/lkmm.left_out)
    for v in lk:
        if any(o.verdict is Verdict.HOLDS for o in v.outcomes):
            held.setdefault(v.lkmm_left_out or (), []).append(v.variant)
    for left, names in held.items():  # (the model's name said once where several notes follow)
        note = lkmm_note(left) if len(held) == 1 else lkmm_note(left).replace(f" ({LKMM_NAME})", "", 1)
        lines.append("LKMM: what holds in " + ", ".join(names) + " " + note)
    if len(held) > 1:
        lines.insert(len(lines) - len(held), f"LKMM: what follows is measured against {LKMM_NAME}")
    done = [v for v in lk if v.stats.complete]
    free = [v.variant for v in done if v.stats.buffer_full_states == 0]
    if free:
        most = max(v.store_buffer or 0 for v in done if v.variant in free)
        lines.append(f"LKMM: no store ever waited for a full history (at most {most} stores kept per location) "
                     "in " + ", ".join(free) + ": those verdicts hold for histories of any length")
    for bound, said in _full(done).items():
        lines.append(f"LKMM: a store waited for a full history (a CPU still read the oldest store kept) in {said}: "
                     f"what holds there holds for histories of at most {bound} stores per location (a violation "
                     "stands for any length; raise the bound with --store-buffer N or `memory lkmm(N)`)")
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
    were asked for), memory per state on big searches that grew it, --hash-compact's odds, and the
    level loop when --loop chose one."""
    lines = []
    for v in result.variants:
        st = v.stats
        if st.workers > 1:
            lines.append(f"{v.variant}: {st.workers_note or f'{st.workers} workers'}")
        elif st.workers_note:
            lines.append(f"{v.variant}: one worker: {st.workers_note}")
        # a search that reused memory an earlier variant's freed grew by nothing: no figure
        if st.bytes_per_state is not None and st.bytes_per_state > 0 and st.states >= 10_000:
            lines.append(f"{v.variant}: memory {st.bytes_per_state:,.0f} bytes per stored state "
                         f"(resident memory the search grew by, over {st.states:,} states)")
        if st.collision_probability is not None:
            p = st.collision_probability
            how = ("every state fits in its 64-bit fingerprint, so none can collide" if p == 0 else
                   f"estimated n^2/2^64 for n = {st.states:,} fingerprints")
            what = "" if all(o.verdict is not Verdict.VIOLATED for o in v.outcomes) else "each property that "
            lines.append(f"{v.variant}: --hash-compact: {what}holds with collision probability <= {p:.2g} ({how})")
        if st.loop == "native" and st.loop_from is not None:  # (a Python loop says why in its notes, if it matters)
            depth, states = st.loop_from
            lines.append(f"{v.variant}: the native level loop (C) took over at depth {depth}, after "
                         f"{states:,} states in the Python loop")
        elif st.loop == "native":
            lines.append(f"{v.variant}: the native level loop ran (C, --loop)")
        lines += [f"{v.variant}: {n}" for n in st.notes]
    return lines


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
                     f"{sum(v.stats.ample_states or 0 for v in por):,}/{sum(v.stats.states for v in por):,} "
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
            names = ", ".join(v for v, _ in said) if full or len(said) <= FEW else \
                f"{len(said)} variants; --full: each"
            lines.append(f"{what}: {said[0][1]} ({names})" if said[0][1] else f"{what} ({names})")
        elif full or len(said) <= FEW:
            lines.append(f"{what}: " + ", ".join(f"{v} {d}" for v, d in said))
        else:
            lines.append(f"{what}: {len(said)} variants (--full: each)")
        if what == MERGED:
            lines.append("  (the search takes a merged chain as one step, so its states and depth count fewer "
                         "than a trace's steps; the traces show every step)")
    return lines


def footer(result: RunResult, full: bool = True, traces_shown: bool = True) -> str:
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
        lines.append("model error in " + ", ".join(errors) + (": see the trace above" if traces_shown else
                                                                ": run without --brief for its trace"))
    unknown = [(v.variant, o.property, o.note) for v in result.variants for o in v.outcomes
               if o.verdict in (Verdict.INCOMPLETE, Verdict.UNKNOWN)]
    if unknown:
        lines.append(f"{len(unknown)} verdict(s) incomplete, not verified: "
                     + ", ".join(f"{v}/{p}" + (f" ({n})" if n else "") for v, p, n in unknown[:8])
                     + (" ..." if len(unknown) > 8 else ""))
    return "\n".join(lines)


MAX_WARNING_LINES = 40


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
