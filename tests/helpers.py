"""Shared by the exporter tests: the tiny models under tests/models, running `check`
with every output flag in a scratch folder, and a hand-built lasso (the explicit engine
does not produce lassos; the liveness engine will)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
from pathlib import Path

from hypothesis import settings

from checker.cli import main
from checker.engines.explicit import TraceBuilder
from checker.pipeline import Options, check_spec, compile_variant, load
from checker.results.trace import Counterexample, RunResult, Verdict

TESTS = Path(__file__).parent
MODELS = TESTS / "models"
GOLDEN = TESTS / "golden"
EXPORT_MODELS = ("counter", "four", "wakeup", "overflow")

ALL_FLAGS = ("--json", "out/{m}.json", "--itf", "out/itf", "--mermaid", "out/mermaid", "--dot", "out/dot",
             "--dot-graph", "--report", "out/{m}.md", "--sarif", "out/{m}.sarif", "--junit", "out/{m}.xml")


@contextlib.contextmanager
def workdir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(old)


def run_check(folder: Path, model: str, *flags: str) -> tuple[int, str, str]:
    """`check models/<model>.spec FLAGS` with `folder` as the working directory (the
    model is copied there unless a test already put an edited copy there), so every
    path in the outputs is relative and stable."""
    (folder / "models").mkdir(parents=True, exist_ok=True)
    if not (folder / "models" / f"{model}.spec").exists():
        shutil.copy(MODELS / f"{model}.spec", folder / "models" / f"{model}.spec")
    out, err = io.StringIO(), io.StringIO()
    with workdir(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([f"models/{model}.spec", *flags])
    return rc, out.getvalue(), err.getvalue()


def export_all(folder: Path, model: str, *extra: str) -> tuple[int, str, str]:
    return run_check(folder, model, *(f.format(m=model) for f in ALL_FLAGS), *extra)


def lasso_counterexample(variant: str = "base") -> Counterexample:
    """spin.spec's spinner toggling `flag` forever: flag false, true, false again, so the
    last state is the first and the whole trace is the loop (the liveness engine's own
    answer for this model, rebuilt step by step)."""
    spec = load(str(MODELS / "spin.spec"))
    cm = compile_variant(spec, variant, Options())
    inst = next(i for i in cm.instances if i.name == "spinner")
    s = cm.program.initial_states[0]
    states, steps = [s], []
    for _ in range(2):
        cs = inst.steps_at[s[inst.pc_slot]][0]
        s = tuple(cs.fn(s))
        states.append(s)
        steps.append(cs)
    assert states[-1] == states[0]
    trace = TraceBuilder(cm).trace(states, steps, loop_start=0)
    return Counterexample("finishes", "liveness", "property finishes is violated: done never holds", trace)


def lasso_result(folder: Path) -> RunResult:
    """spin.spec checked from `folder`, with the hand-built lasso as the base variant's
    counterexample for `finishes`."""
    (folder / "models").mkdir(parents=True, exist_ok=True)
    shutil.copy(MODELS / "spin.spec", folder / "models" / "spin.spec")
    with workdir(folder):
        result = check_spec(load("models/spin.spec"), Options(variants=("base",)))
    cx = lasso_counterexample()
    cx = dataclasses.replace(cx, trace=_relative(cx.trace))
    v = result.variants[0]
    outcomes = tuple(dataclasses.replace(o, verdict=Verdict.VIOLATED, counterexample=cx, note="")
                     if o.property == "finishes" else o for o in v.outcomes)
    return dataclasses.replace(result, variants=(dataclasses.replace(v, outcomes=outcomes),))


def _relative(trace):
    """The lasso's spans name models/spin.spec, as if checked from the scratch folder."""
    def fix(a):
        return dataclasses.replace(a, span=dataclasses.replace(a.span, file="models/spin.spec")) if a.span else a
    return dataclasses.replace(trace, actions=tuple(fix(a) for a in trace.actions))


def produced_files(folder: Path) -> dict[str, bytes]:
    """Every file under folder/out, by path relative to it."""
    out = folder / "out"
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


#: how many times as many examples `--hypothesis-profile deep` (conftest) gives the
#: property tests that take `examples(n)`
DEEP = 10


def examples(quick: int) -> int:
    """A property test's max_examples: `quick` in the suite (derandomized, so the same
    examples every run), DEEP times as many under `--hypothesis-profile deep`, the run to
    make after changing an engine or the semantics (README, "Tests")."""
    return quick * DEEP if settings.get_current_profile_name() == "deep" else quick
