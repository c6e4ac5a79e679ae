"""Drives the pipeline for one spec: for each variant, resolve -> IR -> compile -> engine,
then compares each property's verdict with the variant's expectations.

This is the only module that knows the whole chain; the CLI calls it and exporters read
what it returns.
"""

from __future__ import annotations

import os
from dataclasses import field, replace

from .front import ast
from . import ir, model as m
from .front.ast import Spec
from .backends.python import CompiledModel, compile_program
from .engines import coverage, reduce, simulate
from .engines.simulate import SimulationPlan
from .engines.explicit import OUT_OF_MEMORY, Exploration, Limits, explore, state_space
from .engines.reduce import SymmetryMode
from .base.errors import NOWHERE, Span, SpecError, combined, did_you_mean
from .engines.explain import explain
from .export.files import safe_name
from .front.parse import parse
from .base.progress import Progress
from .resolve import BASE, header_comment, resolve, variant_names
from .results.trace import (Engine, lkmm_note, Counterexample, PropertyOutcome, ReplayResult, RunResult, Stats,
                            VariantResult, Verdict)
from .base.record import record


ENGINES = tuple(e.value for e in Engine)  # the one list: results.trace.Engine
#: Stats.limit of a search that ends the whole run: the variants after it are not checked
CUT_SHORT = ("interrupted", OUT_OF_MEMORY)
#: Stats.limit of a variant the run never reached
NOT_CHECKED = "not checked"
MAX_SPEC_CHARS = 16 << 20  # a spec (the largest flat models are a few MB); /dev/zero is not one
MAX_TRACE_CHARS = 64 << 20  # a --replay file


@record
class Options:
    defines: dict[str, str] = field(default_factory=dict)
    variants: tuple[str, ...] = ()  # empty: base and every variant
    use_expectations: bool = True
    limits: Limits = Limits()
    memory: str | None = None
    store_buffer: int | None = None  # tso: overrides `memory tso(N)`
    preemptions: int | str | None = None  # overrides `preemptions K;` ("unbounded": no bound)
    progress: bool | None = None
    command: str = ""
    graph_limit: int | None = None  # hand exporters the state graph of variants with at most this many states
    workers: int = 1  # processes sharing the explicit search (engines/explicit/parallel.py)
    workers_asked: bool = False  # --workers was given: say why a search ran in fewer processes
    hash_compact: bool = False  # store 64-bit fingerprints instead of states
    engine: Engine = Engine.EXPLICIT  # for invariants, asserts, deadlock; lemmas always go to Z3
    depth: int = 10  # bmc: the bound; induction: the largest k (pdr has no bound)
    timeout: float | None = None  # seconds per Z3 query (None: engines/solver.py's default)
    strengthen: int | None = None  # induction: mine candidate invariants from this many explicit states
    rounds: int = 0  # bmc: N > 0, a frame is a round of up to N steps of every instance (engines/smt/bmc.py)
    stride: int = 1  # bmc --rounds: look for violations at every D-th round and the last
    por: bool = True  # partial-order reduction (engines/reduce/)
    symmetry: str = SymmetryMode.AUTO  # symmetry reduction: "auto", "on" (and say why not), "off"
    coverage: bool = True  # recorded by the search: dead statements, vacuity (engines/coverage.py)
    simulate: SimulationPlan | None = None  # random runs instead of a search
    loop: str = ""  # the explicit level loop: python, native (C, engines/explicit/native.py), auto; "": python, unsaid


WORKERS_PER_CORE = 4  # workers beyond this many per core only add processes that wait (and open files)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def free_cores(n: int, load: float) -> int:
    """Of n cores with a run queue of `load` processes (the last minute's load average),
    those no other process is using: a worker on a busy core only takes turns with what
    runs there, and the exchange between workers then makes two slower than one."""
    return max(1, min(n, int(n - load + 0.5)))


def default_workers() -> int:
    """The cores that are free now (`free_cores`). Small searches never start a worker
    (below engines/explicit/parallel.PARALLEL_FROM states); bench/README.md has measurements."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here: assume the machine is ours
        load = 0.0
    return free_cores(cores(), load)


def max_workers() -> int:
    """The most worker processes a search may ask for here (`--workers`, the API's `workers`)."""
    return WORKERS_PER_CORE * cores()


def too_many_workers() -> str:
    """Why more than max_workers() are refused, said the same by the CLI and the API."""
    n = cores()
    return (f"at most {max_workers()} here ({WORKERS_PER_CORE} per core, {n} core{'s' if n != 1 else ''}); "
            "more only wait for a core")


def load(path: str) -> Spec:
    return parse(read_input(path, "a spec"), path)


def load_litmus(path: str):
    """A kernel litmus C test (a litmus.reader.Litmus), read as a spec is (the same cap
    and errors)."""
    from .litmus.reader import parse_litmus  # (only for a .litmus file)

    return parse_litmus(read_input(path, "a litmus test"), path)


def read_input(path: str, what: str) -> str:
    """The text of an input file, or a SpecError saying why it has none: missing, a
    folder, not UTF-8 (where), unreadable, or more than MAX_SPEC_CHARS (a device such as
    /dev/zero or /dev/urandom, which would never end)."""
    try:
        with open(path, encoding="utf-8") as f:
            return read_capped(f, path, MAX_SPEC_CHARS, what)
    except FileNotFoundError:
        raise SpecError(_nowhere(path), f"no such file: {path}", code="TR600") from None
    except IsADirectoryError:
        raise SpecError(_nowhere(path), f"{path} is a directory, not {what} file", code="TR600") from None
    except UnicodeDecodeError as e:
        raise _not_utf8(path, e).with_code("TR600") from None
    except OSError as e:
        raise SpecError(_nowhere(path), f"cannot read {path}: {e.strerror}", code="TR600") from None


def read_for_display(path: str) -> str | None:
    """A file's text to show under an error (a bad byte shown as U+FFFD), at most what
    read_input reads: an endless device is not read to its end again."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_SPEC_CHARS + 1)
    except OSError:
        return None
    return None if len(text) > MAX_SPEC_CHARS else text


def _not_utf8(path: str, first: UnicodeDecodeError) -> SpecError:
    """Where the text stops being UTF-8, as line:col (the column counts characters, a
    bad byte as one), so an editor can jump there. Only a regular file reads the same
    twice: a device's (/dev/urandom) second read would be other bytes."""
    if not os.path.isfile(path):
        return SpecError(_nowhere(path), f"{path} is not UTF-8 text ({first.reason})")
    try:
        with open(path, "rb") as f:
            data = f.read(4 * MAX_SPEC_CHARS + 8)  # no more than load() would have read
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.reason == "unexpected end of data" and len(data) > 4 * MAX_SPEC_CHARS:  # where the read stopped
            return SpecError(_nowhere(path), f"{path} is not UTF-8 text ({first.reason})")
        start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        col = len(data[start:e.start].decode("utf-8", "replace")) + 1
        return SpecError(Span(path, line, col, line, col + 1),
                         f"{path} is not UTF-8 text: byte {data[e.start]:#04x} ({e.reason})",
                         "save the file as UTF-8")
    except OSError:
        pass
    return SpecError(_nowhere(path), f"{path} is not UTF-8 text ({first.reason})")


def read_capped(f, path: str, cap: int, what: str):
    """All of `f`, unless it holds more than `cap` characters (a device like /dev/zero, a
    pipe that never ends, a file that is no input of ours): then a SpecError, before
    memory runs out."""
    text = f.read(cap + 1)
    if len(text) > cap:
        raise SpecError(_nowhere(path), f"{path} holds more than {cap >> 20} MiB, too much for {what}",
                        "is it the right file? (a device or an endless pipe is never done)", code="TR600")
    return text


def _nowhere(path: str):
    return Span(path, 0, 0, 0, 0)


def selected_variants(spec: Spec, wanted: tuple[str, ...]) -> list[str]:
    names = variant_names(spec)
    if not wanted:
        return names
    for w in wanted:
        if w not in names:
            raise SpecError(NOWHERE, f"unknown variant '{w}'",
                            did_you_mean(w, names) or f"variants of {spec.file}: {', '.join(names)}")
    return list(dict.fromkeys(wanted))


def compile_variant(spec: Spec, variant: str, opts: Options) -> CompiledModel:
    """Resolve, lower and compile one variant (every error is a SpecError)."""
    model = resolve(spec, variant, opts.defines, opts.memory, opts.store_buffer, opts.preemptions)
    # lazy propagation under lkmm is a reduction: off with --no-por and for --dot-graph
    return compile_program(ir.build(model), lazy_propagation=opts.por and opts.graph_limit is None)


@record
class Diagnosis:
    """What is wrong with a spec's text, found without searching it: its input errors,
    each with a code and the variants it shows in (none: the text itself, before any
    variant), and the resolver's warnings, as (line, message)."""

    errors: tuple[tuple[SpecError, tuple[str, ...]], ...]
    warnings: tuple[tuple[int, str], ...] = ()
    variants: tuple[str, ...] = ()  # every variant it compiled (none when the text does not parse)


def diagnose(source: str, file: str) -> Diagnosis:
    """Every error `check` would stop at before searching: the text parsed, then each
    variant resolved, lowered and compiled (an editor's diagnostics as one types). An
    error shared by several variants is reported once, with their names."""
    try:
        spec = parse(source, file)
    except SpecError as e:
        return Diagnosis(tuple((x, ()) for x in _each(e)))
    except RecursionError:
        return Diagnosis(((SpecError(_nowhere(file), "the spec nests too deeply to check", code="TR107"), ()),))
    errors: dict[tuple, tuple[SpecError, list[str]]] = {}
    warnings: dict[tuple[int, str], None] = {}
    for v in variant_names(spec):
        try:
            cm = compile_variant(spec, v, Options())
        except SpecError as e:
            found = _each(e)
        except RecursionError:
            found = (SpecError(_nowhere(file), "the model nests too deeply to check", code="TR107"),)
        else:
            warnings.update(dict.fromkeys(cm.program.model.warnings))
            continue
        for one in found:
            errors.setdefault((one.span, one.message), (one, []))[1].append(v)
    ordered = sorted(errors.values(), key=lambda x: (x[0].span.line, x[0].span.col))
    return Diagnosis(tuple((e, tuple(vs)) for e, vs in ordered), tuple(warnings), tuple(variant_names(spec)))


def _each(e: SpecError) -> tuple[SpecError, ...]:
    """The errors one SpecError stands for (a SpecErrors holds several), each with a code."""
    return tuple(x.with_code("TR001") for x in e.errors)


def _variant_errors(spec: Spec, variant: str, opts: Options) -> tuple[SpecError, ...]:
    """The errors that keep `variant` from being compiled (none if it can be)."""
    try:
        compile_variant(spec, variant, opts)
    except SpecError as e:
        return e.errors
    return ()


def promela_twin(spec: Spec, variant: str, opts: Options) -> tuple[str, str]:
    """(`<model>.<variant>` as a file stem, the variant's Promela twin); a SpecError if the
    variant cannot be translated faithfully."""
    from .backends.promela import translate  # (only for --promela)

    model = resolve(spec, variant, opts.defines, opts.memory, opts.store_buffer, opts.preemptions)
    return f"{safe_name(model.name)}.{safe_name(variant)}", translate(ir.build(model))


def fairness_of(model: m.Model, lazy: bool = False) -> tuple[str, ...]:
    """The fairness the liveness engine assumes, e.g. ("weak fairness for vcpu[0], vcpu[1],
    hrtimer", "none for guest"): weak fairness per process instance unless `unfair`."""
    fair = [p.instance_name(i) for p in model.processes if not p.unfair for i in range(p.instances)]
    unfair = [p.instance_name(i) for p in model.processes if p.unfair for i in range(p.instances)]
    out = []
    if fair:
        out.append("weak fairness for " + ", ".join(fair))
    if unfair:
        out.append("none for " + ", ".join(unfair))
    for strong, word in ((False, "weak"), (True, "strong")):
        lines = [f"the action at line {s.span.line} ({p.name})" for p in model.processes for s in _fair_statements(p.body)
                 if s.strong is strong]
        if lines:
            out.append(("and for " if not strong and fair else f"{word} fairness for ") + ", ".join(lines))
    if model.memory == "tso":
        out.append("every store buffer drains (weak fairness of its flushes)")
    if model.memory == "lkmm":
        out.append("every store reaches every CPU that reads it (" + ("strong fairness of each propagation, which "
                   "moves only where it can matter" if lazy else "weak fairness of each propagation") + ")")
    return tuple(out)


def _fair_statements(body):
    """The `fair` statements of a resolved body, in source order, inline expansions once."""
    seen = set()
    todo = list(body)[::-1]
    while todo:
        s = todo.pop()
        if isinstance(s, m.SFair) and s.span not in seen:
            seen.add(s.span)
            yield s
        subs: list[m.RStmt] = []
        for attr in ("then", "orelse", "body"):
            sub = getattr(s, attr, None)
            if isinstance(sub, tuple):
                subs.extend(sub)
        if isinstance(s, m.SLabeled):
            subs.append(s.stmt)
        if isinstance(s, m.SChoose):
            for b in s.branches:
                subs.extend(b)
        todo.extend(reversed(subs))


def _timeout(opts: Options) -> float:
    from .engines.smt.solver import DEFAULT_TIMEOUT

    return DEFAULT_TIMEOUT if opts.timeout is None else opts.timeout


def check_variant(spec: Spec, variant: str, opts: Options, lemma_cache: dict | None = None) -> VariantResult:
    cm = compile_variant(spec, variant, opts)
    vr = _check_compiled(spec, variant, cm, opts, lemma_cache)
    model = cm.program.model
    if model.declared_memory != model.memory:  # never drop a variant's memory model silently
        note = (f"--memory-model {model.memory} overrides the variant's `memory {model.declared_memory}`: "
                f"what only {model.declared_memory} allows is not checked")
        vr = replace(vr, stats=replace(vr.stats, notes=vr.stats.notes + (note,)))
    return vr


def _check_compiled(spec: Spec, variant: str, cm: CompiledModel, opts: Options,
                    lemma_cache: dict | None) -> VariantResult:
    model = cm.program.model
    if opts.simulate is not None:
        return _check_simulated(cm, variant, opts)
    lemma_findings = {}
    if model.lemmas:
        from .engines.smt.lemmas import check_lemma

        lemma_findings = {lm.name: check_lemma(model, lm, _timeout(opts), lemma_cache) for lm in model.lemmas}
    if opts.engine != "explicit":
        if model.memory == "lkmm":
            return _explicit_only(spec, cm, opts, lemma_findings)
        return _expect_spans(spec, _check_symbolic(cm, variant, opts, lemma_findings))
    progress = Progress(opts.progress)
    progress.label = f"{variant}: "
    wants_liveness = bool(cm.liveness)
    wants_graph = opts.graph_limit is not None
    searched, merged = cm, 0  # with partial-order reduction, local steps merge into the next
    if opts.por and not wants_graph and not wants_liveness and model.memory != "lkmm":  # (a lasso is shown as the search found it)
        program, merged = reduce.merge_local_steps(cm.program)
        if merged:
            searched = compile_program(program)
    red = reduce.plan(searched, opts.por, opts.symmetry, whole_graph=wants_graph, merged=merged)
    exploration = explore(searched, opts.limits, progress, graph=wants_liveness or wants_graph,
                          reduction=red if red.active else None,
                          hash_compact=opts.hash_compact, workers=opts.workers, coverage=opts.coverage,
                          loop=opts.loop)
    stats = exploration.stats
    cov, cov_note = _coverage(cm, searched, stats, exploration, _reductions(red, merged))
    if stats.workers == 1 and not opts.workers_asked:
        stats = replace(stats, workers_note="")  # the automatic choice needs no explanation
    if opts.hash_compact and stats.collision_probability is None:
        stats = replace(stats, notes=stats.notes + ("--hash-compact not used: the liveness engine and "
                                                    "--dot-graph need the states themselves",))
    space = None
    if opts.graph_limit is not None and exploration.graph is not None \
            and len(exploration.graph.states) <= opts.graph_limit:
        space = state_space(cm, exploration.graph, stats.complete)
    live, stats = _check_liveness(searched, exploration, stats)
    if red.por is not None:
        live = {k: replace(lo, note=lo.note + "; with partial-order reduction: the stem is the shortest of "
                                              "the reduced interleavings (--no-por: of all)")
                if lo.verdict is Verdict.VIOLATED else lo for k, lo in live.items()}
    exploration.graph = None  # the graph is large; nothing after this needs it
    notes = list(red.notes)
    if red.por is not None and (exploration.counterexamples or exploration.model_error is not None) \
            and stats.limit not in CUT_SHORT:
        exploration, note, seconds = _rebuild_counterexamples(cm, exploration, red, opts)
        notes.append(note)
        stats = replace(stats, seconds=stats.seconds + seconds)
    stats = replace(stats, reductions=tuple(notes))
    left: tuple[str, ...] = ()
    findings: tuple[tuple[int, str], ...] = ()
    if model.memory is not m.MemoryModel.SC:  # (composite_findings has none under sc: the lkmm module stays unloaded)
        from .memory.lkmm import composite_findings, left_out

        left = left_out(cm.program) if cm.layout.lkmm is not None else ()
        findings = composite_findings(cm.program)
    outcomes = []
    for prop in model.properties:
        if prop.kind is m.PropertyKind.DEADLOCK and not opts.limits.check_deadlock:
            continue
        expected = prop.name in model.expected_violations and opts.use_expectations
        cx = exploration.counterexamples.get(prop.name)
        note = ""
        if prop.kind is m.PropertyKind.LIVENESS:
            lo = live[prop.name]
            verdict, cx, note = lo.verdict, lo.counterexample, lo.note
            if verdict is Verdict.INCOMPLETE and exploration.model_error is not None:
                note = "search stopped at a model error; no fair cycle among the states explored"
        elif prop.kind is m.PropertyKind.LEMMA:
            outcomes.append(_outcome(prop, expected, lemma_findings[prop.name]))
            continue
        elif prop.kind is m.PropertyKind.REACHABLE:
            verdict, note, cx = _reachable_verdict(cx, exploration, stats)
        elif cx is not None:
            verdict = Verdict.VIOLATED
        elif exploration.model_error is not None:
            verdict = Verdict.INCOMPLETE
            note = "search stopped at a model error"
        elif not stats.complete:
            verdict = Verdict.INCOMPLETE
            note = f"search cut short ({stats.limit})"
        else:
            verdict = Verdict.HOLDS
            if prop.kind is m.PropertyKind.FINAL and stats.final_states == 0:
                note = "no final state is reachable: the condition holds vacuously"
        if verdict is Verdict.HOLDS and model.memory == "lkmm":
            note = "; ".join(n for n in (note, lkmm_note(left)) if n)
        outcomes.append(PropertyOutcome(prop.name, prop.kind.value, verdict, expected, cx, prop.span, note))
    constants = tuple((k, v) for k, v in model.constants.items())
    outcomes, model_error = explain(cm, outcomes, exploration.model_error)  # each step says what it did
    return _expect_spans(spec, VariantResult(variant, constants, outcomes, stats, model.memory,
                                             fairness_of(model, cm.views is not None and cm.views.lazy),
                                             model_error, model.store_buffer, space, coverage=cov,
                                             coverage_note=cov_note, lint=model.warnings,
                                             memory_findings=findings,
                                             lkmm_left_out=left if cm.layout.lkmm is not None else None,
                                             preemptions=model.preemptions))


def _reductions(red: reduce.Plan, merged: int) -> str:
    """The reductions that shaped a search, in words ("" for none)."""
    names = [what for what, on in (("partial-order reduction", red.selects or merged), ("symmetry", red.canonicalises))
             if on]
    return " and ".join(names)


def _coverage(cm: CompiledModel, searched: CompiledModel, stats: Stats, exploration: Exploration, reduced: str):
    """(coverage, why none) of a variant, from what its search recorded
    (engines/coverage.py), only after a complete search without a model error."""
    if exploration.marks is None:
        return None, ""
    if not stats.complete or exploration.model_error is not None:
        return None, "coverage not computed: the search was not complete"
    assert exploration.digest is not None  # the search records it with the marks
    return coverage.from_search(cm, searched, exploration.marks, exploration.held, stats.states,
                                exploration.digest, reduced), ""


def _reachable_verdict(witness: Counterexample | None, exploration: Exploration, stats: Stats):
    """(verdict, note, counterexample) of `reachable P`, which the search checked as the
    invariant !P: a violation of that is P reached (holds); no violation in a complete
    search is P unreachable (violated, with no trace to show)."""
    if witness is not None:
        return Verdict.HOLDS, f"reached in {len(witness.trace.actions)} steps", None
    if exploration.model_error is not None:
        return Verdict.INCOMPLETE, "search stopped at a model error before reaching it", None
    if not stats.complete:
        return Verdict.INCOMPLETE, f"not reached before the search was cut short ({stats.limit})", None
    return Verdict.VIOLATED, "no reachable state satisfies it", None



def _expect_spans(spec: Spec, vr: VariantResult) -> VariantResult:
    """Each outcome with where its `expect` clause is (SARIF points an unmet one there)."""
    if vr.variant == BASE:
        expects = [x for x in spec.items if isinstance(x, ast.ExpectDecl)]
    else:
        expects = [x for d in spec.items if isinstance(d, ast.VariantDecl) and d.name == vr.variant
                   for x in d.expects]
    where = {name: span for x in expects for name, span in x.violated}
    return replace(vr, outcomes=tuple(replace(o, expect_span=where.get(o.property)) for o in vr.outcomes))


def unfinished(spec: Spec, variant: str, opts: Options, limit: str, note: str) -> VariantResult:
    """A variant that a run cut short left undecided (`limit`: why): each property is
    listed as not verified, with `note`."""
    try:
        model = resolve(spec, variant, opts.defines, opts.memory, opts.store_buffer, opts.preemptions)
    except SpecError:  # an error in a variant the run did not reach is not this run's to report
        return VariantResult(variant, (), (), Stats(complete=False, limit=limit, engine=opts.engine))
    outcomes = tuple(PropertyOutcome(p.name, p.kind.value, Verdict.INCOMPLETE,
                                     p.name in model.expected_violations and opts.use_expectations, None, p.span, note)
                     for p in model.properties
                     if p.kind is not m.PropertyKind.DEADLOCK or opts.limits.check_deadlock)
    return VariantResult(variant, tuple(model.constants.items()), outcomes,
                         Stats(complete=False, limit=limit, engine=opts.engine), model.memory, fairness_of(model))


def _outcome(prop: m.Property, expected: bool, finding) -> PropertyOutcome:
    return PropertyOutcome(prop.name, prop.kind.value, finding.verdict, expected, finding.counterexample,
                           prop.span, finding.note, finding.bound)


def _z3_outcomes(model: m.Model, opts: Options, lemma_findings: dict, other) -> list[PropertyOutcome]:
    """Each property's outcome under a Z3 engine: lemmas as Z3 decided them, the rest by
    `other(property, expected)`; deadlock only when it is checked."""
    outcomes = []
    for prop in model.properties:
        if prop.kind is m.PropertyKind.DEADLOCK and not opts.limits.check_deadlock:
            continue
        expected = prop.name in model.expected_violations and opts.use_expectations
        if prop.kind is m.PropertyKind.LEMMA:
            outcomes.append(_outcome(prop, expected, lemma_findings[prop.name]))
        else:
            outcomes.append(other(prop, expected))
    return outcomes


def _explicit_only(spec: Spec, cm: CompiledModel, opts: Options, lemma_findings: dict) -> VariantResult:
    """A variant under lkmm, which the Z3 engines do not encode (the LKMM machine's
    views): listed as not checked, so the rest of the file runs.
    Lemmas do not depend on the memory model and keep their Z3 verdicts."""
    model = cm.program.model
    why = (f"{NOT_CHECKED}: {model.memory} is explicit-only (--engine {opts.engine} encodes sequential "
           "consistency and x86-TSO; --engine explicit checks this variant)")
    outcomes = _z3_outcomes(model, opts, lemma_findings, lambda prop, expected: PropertyOutcome(
        prop.name, prop.kind.value, Verdict.INCOMPLETE, expected, None, prop.span, why))
    return _expect_spans(spec, VariantResult(model.variant,
                                             tuple(model.constants.items()), tuple(outcomes),
                                             Stats(complete=False, limit=why, engine=opts.engine), model.memory,
                                             fairness_of(model)))


def _check_symbolic(cm: CompiledModel, variant: str, opts: Options, lemma_findings: dict) -> VariantResult:
    """The bmc, induction or pdr engine on one variant (lemmas already checked)."""
    from .engines.smt.bmc import bmc
    from .engines.smt.induction import induction
    from .engines.smt.pdr import pdr

    model = cm.program.model
    run_engine = {"bmc": bmc, "induction": induction, "pdr": pdr}[opts.engine]
    options: dict[str, object] = {"rounds": opts.rounds} if opts.rounds else {}
    if opts.stride > 1:
        options["stride"] = opts.stride
    if opts.engine in ("induction", "pdr") and opts.strengthen:
        options["strengthen"] = opts.strengthen
    sym = run_engine(cm, opts.depth, _timeout(opts), opts.limits.check_deadlock, **options)
    stats = sym.stats
    live: dict = {}
    if cm.liveness and stats.limit != "interrupted":
        from .engines.smt.lasso import lasso_bmc, lasso_induction, lasso_pdr

        if opts.engine == "pdr":  # (with --strengthen, the mined lemmas the safety run kept)
            lasso = lasso_pdr(cm, opts.depth, _timeout(opts), opts.limits.check_deadlock,
                              lemmas=tuple(sym.invariants))
        elif opts.engine == "induction":  # (with --strengthen, the mined invariants it proved)
            lasso = lasso_induction(cm, opts.depth, _timeout(opts), opts.limits.check_deadlock,
                                    lemmas=tuple(sym.invariants))
        else:
            lasso = lasso_bmc(cm, opts.depth, _timeout(opts), opts.limits.check_deadlock)
        live = lasso.findings
        sym.checker_bugs.extend(lasso.checker_bugs)
        stats = replace(stats, seconds=stats.seconds + lasso.stats.seconds, notes=stats.notes + lasso.stats.notes)
        if lasso.stats.limit == "interrupted":
            stats = replace(stats, complete=False, limit="interrupted")

    def decided(prop: m.Property, expected: bool) -> PropertyOutcome:
        finding = (live if prop.kind is m.PropertyKind.LIVENESS else sym.findings).get(prop.name)
        if finding is None:  # the engine was interrupted before it decided this one
            return PropertyOutcome(prop.name, prop.kind.value, Verdict.INCOMPLETE, expected, None,
                                   prop.span, stats.limit or "not checked")
        if prop.kind is m.PropertyKind.REACHABLE:
            finding = _reachable_finding(finding, sym.model_error is not None)
        elif prop.kind is m.PropertyKind.LIVENESS:
            finding = _liveness_finding(finding, opts, sym.model_error is not None)
        return _outcome(prop, expected, finding)

    outcomes = _z3_outcomes(model, opts, lemma_findings, decided)
    constants = tuple((k, v) for k, v in model.constants.items())
    outcomes, model_error = explain(cm, outcomes, sym.model_error)
    return VariantResult(variant, constants, outcomes, stats, model.memory,
                                             fairness_of(model, cm.views is not None and cm.views.lazy),
                         model_error, store_buffer=model.store_buffer, checker_bugs=tuple(sym.checker_bugs))


def _reachable_finding(f, model_error: bool):
    """A Z3 engine's finding for `reachable P`, which it checked as the invariant !P (as
    the explicit engine does, `_reachable_verdict`): a violation of !P is P reached
    (holds; the witness is not shown, as the explicit engine shows none); !P proved is
    P unreachable (violated)."""
    from .engines.smt.bmc import Finding

    if f.verdict is Verdict.VIOLATED and f.counterexample is not None:
        return Finding(Verdict.HOLDS, note=f"reached in {len(f.counterexample.trace.actions)} steps")
    if f.verdict in (Verdict.HOLDS, Verdict.PROVED):
        if model_error:
            return Finding(Verdict.INCOMPLETE, note="search stopped at a model error before reaching it")
        how = f" ({f.note})" if f.note else ""
        return Finding(Verdict.VIOLATED, note=f"no reachable state satisfies it{how}")
    if f.verdict is Verdict.INCOMPLETE:
        note = f.note.replace("no violation up to", "not reached up to") if f.note else "not reached"
        return Finding(Verdict.INCOMPLETE, note=note, bound=f.bound)  # (no counterexample to induction: !P is no claim)
    return f


def _liveness_finding(f, opts: Options, model_error: bool):
    """A lasso engine's finding as the variant reports it: a proof is no proof when a
    model error is reachable (the explicit engine stops there too)."""
    from .engines.smt.bmc import Finding

    if f.verdict is Verdict.PROVED and model_error:
        return Finding(Verdict.INCOMPLETE, note="search stopped at a model error; " + f.note)
    if f.verdict is Verdict.INCOMPLETE and opts.rounds and f.bound is not None:
        return replace(f, note=f.note + "; lassos are searched step by step (--rounds is for safety)")
    return f


def _check_simulated(cm: CompiledModel, variant: str, opts: Options) -> VariantResult:
    """Random runs (engines/simulate.py): violations with their runs, nothing verified."""
    model = cm.program.model
    assert opts.simulate is not None  # (check_variant comes here only then)
    cxs, error, stats = simulate.simulate(cm, opts.simulate, opts.limits.check_deadlock)
    outcomes = simulate.outcomes(model, cxs, error, opts.simulate, opts.use_expectations,
                                 opts.limits.check_deadlock, stats.states)
    outcomes, error = explain(cm, outcomes, error)  # each step says what it did, as a search's do
    return VariantResult(variant, tuple(model.constants.items()), outcomes, stats, model.memory,
                         fairness_of(model), error, model.store_buffer)


def _check_liveness(cm: CompiledModel, exploration: Exploration, stats):
    if not cm.liveness:
        return {}, stats
    from .engines import liveness  # (imported for a model with liveness properties only)

    live: dict[str, liveness.LivenessOutcome]
    try:
        live, seconds = liveness.check(cm, exploration)
        stats = replace(stats, seconds=stats.seconds + seconds)
    except KeyboardInterrupt:
        live = {p.name: liveness.LivenessOutcome(Verdict.INCOMPLETE, None, "interrupted")
                for p, _, _ in cm.liveness}
        stats = replace(stats, complete=False, limit="interrupted")
    return live, stats


def _rebuild_counterexamples(cm: CompiledModel, reduced: Exploration, red: reduce.Plan, opts: Options):
    """The counterexamples of a search with partial-order reduction, found again by a
    search without it, so that each is a shortest one (the reduced state graph may
    only hold longer paths to a violation, and its steps may be merged ones), the same
    as --no-por gives.

    A safety violation found with the reduction is a real run, so a search without it
    finds one too, and breadth-first the shortest: it stops after the level at which it
    has every violation the reduced search found (or at its first model error, as an
    unreduced search does). Should the search without reduction find a violation the
    reduced one missed, or miss one it found, that is a bug in the reduction: the run
    stops with an internal error rather than report either.

    A liveness counterexample is not searched again (that would take the whole graph):
    the lasso the reduced graph holds is a fair run of the model (the reduced graph is
    part of the full one, and fairness was judged on full enabled sets; local steps are
    not merged in variants with liveness properties), with the shortest stem among the
    reduced interleavings; the liveness engine's note says so."""
    import time

    start = time.monotonic()
    unreduced = reduce.plan(cm, por=False, symmetry=opts.symmetry) if red.symmetry is not None else None
    out = Exploration(reduced.stats, dict(reduced.counterexamples), reduced.model_error)
    searched = []
    wanted = frozenset(reduced.counterexamples)
    if wanted or reduced.model_error is not None:
        limits = replace(opts.limits, max_depth=None, max_states=None,
                         until_found=wanted if reduced.model_error is None else frozenset())
        again = explore(cm, limits, reduction=unreduced, loop=opts.loop)
        if again.stats.limit in CUT_SHORT:
            return out, f"counterexamples not found again without partial-order reduction: {again.stats.limit}; " \
                "they are the reduced search's (runs of the model, maybe not the shortest)", time.monotonic() - start
        if (again.model_error is not None) != (reduced.model_error is not None):
            raise AssertionError("partial-order reduction " + ("missed" if again.model_error else "invented")
                                 + " a model error")
        if reduced.model_error is None and not wanted <= set(again.counterexamples):
            raise AssertionError("a violation found with partial-order reduction is not found without it")
        searched.append(f"{again.stats.states:,} states to depth {again.stats.depth}")
        if reduced.model_error is not None:
            out.model_error = again.model_error
            out.counterexamples = dict(again.counterexamples)
        else:
            missed = set(again.counterexamples) - wanted
            if missed:
                raise AssertionError(f"partial-order reduction missed {', '.join(sorted(missed))}")
            out.counterexamples.update(again.counterexamples)
    note = "shortest counterexamples found again without partial-order reduction in: " + ", ".join(searched)
    return out, note, time.monotonic() - start


def check_spec(spec: Spec, opts: Options) -> RunResult:
    results = []
    lemma_cache: dict = {}
    variants = selected_variants(spec, opts.variants)
    for k, v in enumerate(variants):
        try:
            results.append(check_variant(spec, v, opts, lemma_cache))
        except SpecError as e:  # with the errors of the other variants: all of them in one run
            later = [x for w in variants[k + 1:] for x in _variant_errors(spec, w, opts)]
            raise combined(list(e.errors) + later) from None
        except KeyboardInterrupt:  # outside a search (compiling, a lemma, the liveness graph)
            results.append(unfinished(spec, v, opts, "interrupted", "interrupted"))
        except MemoryError as e:  # str(e): why, when it is more than "no memory" (a killed worker)
            results.append(unfinished(spec, v, opts, OUT_OF_MEMORY, f"{OUT_OF_MEMORY}: {e}" if str(e) else OUT_OF_MEMORY))
        limit = results[-1].stats.limit
        if limit in CUT_SHORT:  # the rest is listed, so that no summary of the run reads as all clear
            results += [unfinished(spec, w, opts, NOT_CHECKED,
                                   f"{NOT_CHECKED}: the run was cut short ({limit}) before this variant")
                        for w in variants[k + 1:]]
            break
    return RunResult(spec.name, spec.file, header_comment(spec.source), tuple(results), opts.command,
                     opts.use_expectations)


# ---- replaying a saved trace ---------------------------------------------------


def load_trace(path: str, pick: str | None = None, variants: tuple[str, ...] = ()) -> tuple[str, Counterexample]:
    """(recorded variant, counterexample) from a `--json` result file or an `--itf` trace.
    A result file with several counterexamples needs `pick` (`VARIANT/PROPERTY` or
    `PROPERTY`), unless only one of them was recorded on the `variants` replayed."""
    import json

    where = _nowhere(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.loads(read_capped(f, path, MAX_TRACE_CHARS, "a trace"))
    except FileNotFoundError:
        raise SpecError(where, f"no such trace file: {path}") from None
    except IsADirectoryError:
        raise SpecError(where, f"{path} is a folder, not a trace file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(where, f"cannot read {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise SpecError(where, f"{path} is not JSON: {e}") from None
    except ValueError as e:  # a number of more digits than Python converts
        raise SpecError(where, f"{path} is not a trace this checker can read: {_number_problem(e)}") from None
    except RecursionError:
        raise SpecError(where, f"{path} is not a trace this checker can read: it nests too deeply") from None
    from .engines.replay import malformed  # (this and the exporters' readers: only for --replay)
    from .export.itf import TraceFormatError, read_itf
    from .export.json import read_json

    try:
        if isinstance(doc, dict) and doc.get("schema") == "timerace-result":
            found = read_json(doc)
        elif isinstance(doc, dict) and "states" in doc and "vars" in doc:
            found = [read_itf(doc)]
        else:
            raise SpecError(where, f"{path} is neither a `check --json` result nor an ITF trace")
        for _, cx in found:
            malformed(cx)
    except KeyError as e:
        raise SpecError(where, f"{path} is not a trace this checker can read: it has no {e} field") from None
    except (TraceFormatError, TypeError, ValueError, AttributeError) as e:
        raise SpecError(where, f"{path} is not a trace this checker can read: {_number_problem(e)}") from None
    except RecursionError:
        raise SpecError(where, f"{path} is not a trace this checker can read: it nests too deeply") from None
    names = [f"{v}/{cx.property}" for v, cx in found]
    if pick:
        found = [(v, cx) for v, cx in found if pick in (f"{v}/{cx.property}", cx.property)]
    elif len(found) > 1 and len(on := [(v, cx) for v, cx in found if v in variants]) == 1:
        found = on  # `--variant V` leaves one: the counterexample recorded on V
    if len(found) != 1:
        what = "no counterexample" if not found else f"{len(found)} counterexamples"
        raise SpecError(where, f"{path} has {what}" + (f" matching '{pick}'" if pick else ""),
                        ("choose one with --replay-pick VARIANT/PROPERTY: " + ", ".join(names)) if names
                        else "only a trace of a violation can be replayed")
    return found[0]


def _number_problem(e: Exception) -> str:
    """Python's refusal of a 5,000-digit number, said without its advice to programmers."""
    if "integer string conversion" in str(e):
        return "a number in it has thousands of digits, more than any value of a model"
    return str(e)


def replay_trace(spec: Spec, path: str, pick: str | None, opts: Options) -> list[ReplayResult]:
    """Replays a saved counterexample against each selected variant (default: base)."""
    from .engines.replay import replay

    recorded_variant, cx = load_trace(path, pick, opts.variants)
    results = []
    for v in selected_variants(spec, opts.variants or (BASE,)):
        cm = compile_variant(spec, v, opts)
        expected = opts.use_expectations and cx.property in cm.program.model.expected_violations
        results.append(replay(cm, cx, path, recorded_variant, expected))
    return results


__all__ = ["Options", "Diagnosis", "diagnose", "default_workers", "max_workers", "too_many_workers", "load",
           "load_litmus", "read_input", "read_for_display", "check_spec", "check_variant", "compile_variant",
           "load_trace", "replay_trace", "BASE"]
