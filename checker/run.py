"""Drives the pipeline for one spec: for each variant, resolve -> IR -> compile -> engine,
then compares each property's verdict with the variant's expectations.

This is the only module that knows the whole chain; the CLI calls it and exporters read
what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import ir, model as m
from .ast import Spec
from .compile import CompiledModel, compile_program
from .engines import liveness
from .engines.explicit import Limits, explore
from .errors import SpecError
from .parse import parse
from .progress import Progress
from .resolve import BASE, resolve, variant_names
from .trace import PropertyOutcome, RunResult, VariantResult, Verdict


@dataclass(frozen=True, slots=True)
class Options:
    defines: dict[str, str] = field(default_factory=dict)
    variants: tuple[str, ...] = ()  # empty: base and every variant
    use_expectations: bool = True
    limits: Limits = Limits()
    memory: str | None = None
    store_buffer: int | None = None  # tso: overrides `memory tso(N)`
    progress: bool | None = None
    command: str = ""


def load(path: str) -> Spec:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise SpecError(_nowhere(path), f"no such file: {path}") from None
    except IsADirectoryError:
        raise SpecError(_nowhere(path), f"{path} is a directory, not a spec file") from None
    except UnicodeDecodeError as e:
        raise SpecError(_nowhere(path), f"{path} is not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise SpecError(_nowhere(path), f"cannot read {path}: {e.strerror}") from None
    return parse(text, path)


def _nowhere(path: str):
    from .errors import Span

    return Span(path, 0, 0, 0, 0)


def selected_variants(spec: Spec, wanted: tuple[str, ...]) -> list[str]:
    names = variant_names(spec)
    if not wanted:
        return names
    for w in wanted:
        if w not in names:
            from .errors import NOWHERE, did_you_mean

            raise SpecError(NOWHERE, f"unknown variant '{w}'",
                            did_you_mean(w, names) or f"variants of {spec.file}: {', '.join(names)}")
    return list(dict.fromkeys(wanted))


def compile_variant(spec: Spec, variant: str, opts: Options) -> CompiledModel:
    """Resolve, lower and compile one variant (every error is a SpecError)."""
    model = resolve(spec, variant, opts.defines, opts.memory, opts.store_buffer)
    return compile_program(ir.build(model))


def fairness_of(model: m.Model) -> tuple[str, ...]:
    """The fairness the liveness engine assumes, e.g. ("weak fairness for vcpu[0], vcpu[1],
    hrtimer", "none for guest"): weak fairness per process instance unless `unfair`."""
    fair = [p.instance_name(i) for p in model.processes if not p.unfair for i in range(p.instances)]
    unfair = [p.instance_name(i) for p in model.processes if p.unfair for i in range(p.instances)]
    out = []
    if fair:
        out.append("weak fairness for " + ", ".join(fair))
    if unfair:
        out.append("none for " + ", ".join(unfair))
    if model.memory == "tso":
        out.append("every store buffer drains (weak fairness of its flushes)")
    return tuple(out)


def check_variant(spec: Spec, variant: str, opts: Options) -> VariantResult:
    cm = compile_variant(spec, variant, opts)
    model = cm.program.model
    progress = Progress(opts.progress)
    progress.label = f"{variant}: "
    wants_liveness = bool(cm.liveness)
    exploration = explore(cm, opts.limits, progress, graph=wants_liveness)
    stats = exploration.stats
    live: dict[str, liveness.LivenessOutcome] = {}
    if wants_liveness:
        try:
            live, seconds = liveness.check(cm, exploration)
            stats = replace(stats, seconds=stats.seconds + seconds)
        except KeyboardInterrupt:
            live = {p.name: liveness.LivenessOutcome(Verdict.INCOMPLETE, None, "interrupted")
                    for p, _, _ in cm.liveness}
            stats = replace(stats, complete=False, limit="interrupted")
        exploration.graph = None  # the graph is large; nothing after this needs it
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
        outcomes.append(PropertyOutcome(prop.name, prop.kind.value, verdict, expected, cx, prop.span, note))
    constants = tuple((k, v) for k, v in model.constants.items())
    return VariantResult(variant, constants, tuple(outcomes), stats, model.memory, fairness_of(model),
                         exploration.model_error, model.store_buffer)


def check_spec(spec: Spec, opts: Options) -> RunResult:
    from .resolve import header_comment

    results = []
    for v in selected_variants(spec, opts.variants):
        results.append(check_variant(spec, v, opts))
        if results[-1].stats.limit == "interrupted":
            break
    return RunResult(spec.name, spec.file, header_comment(spec.source), tuple(results), opts.command,
                     opts.use_expectations)


__all__ = ["Options", "load", "check_spec", "check_variant", "compile_variant", "BASE"]
