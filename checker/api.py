"""The Python API, for scripts and notebooks: check a spec and get back the result
objects the exporters read (checker.results.trace), with keyword arguments for the options the
command line has.

Bad input raises `SpecError` (with the span of the offending text, a message and a
hint) instead of printing it and exiting: the caller decides what to do with it.
Nothing here imports Z3; the bmc and induction engines and lemmas import it when used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .engines.explicit import Limits
from .base.errors import NOWHERE, SpecError
from .front.parse import parse
from .resolve import MEMORY_MODELS
from .base.limits import STRENGTHEN_STATES
from .pipeline import ENGINES, Options, check_spec, diagnose, load, max_workers, too_many_workers
from .results.trace import Engine, RunResult

Define = bool | int | str


def check_file(path: str, *, variants: str | Iterable[str] = (), defines: Mapping[str, Define] | None = None,
               memory_model: str | None = None, store_buffer: int | None = None, engine: str = "explicit",
               max_states: int | None = None, max_depth: int | None = None, depth: int | None = None,
               deadlock: bool = True, expectations: bool = True, timeout: float | None = None,
               workers: int = 1, por: bool = True, symmetry: str = "auto",
               progress: bool = False, rounds: bool | int = False, stride: int = 1,
               strengthen: bool | int | None = None) -> RunResult:
    """Check the spec in `path`, as `check` does, and return the whole run.

    variants: a name or names to check (default: base and every variant); defines:
    constants to override, as `-D NAME=VALUE` does (`{"POLL_ROUNDS": 1}`); memory_model:
    "sc" or "tso" for every variant (`--memory-model`); engine: "explicit" (breadth-first
    search, limited by max_states and max_depth), "bmc" or "induction" (Z3, up to depth,
    default 10; rounds=True: bmc's depth counts rounds, `--rounds`; rounds=N: rounds of up
    to N steps per process, `--rounds N`; stride=D: with rounds, look at every D-th
    round and the last, `--stride D`), or "pdr"; strengthen (induction, pdr):
    True, or a number of explicit states to mine candidate invariants from, as
    `--strengthen [STATES]` does; expectations=False
    ignores `expect violated` (`--no-expect`). workers is
    1 unless asked for: a notebook's kernel should not start processes unasked."""
    opts = _options(variants=variants, defines=defines, memory_model=memory_model, store_buffer=store_buffer,
                    engine=engine, max_states=max_states, max_depth=max_depth, depth=depth, deadlock=deadlock,
                    expectations=expectations, timeout=timeout, workers=workers, por=por, symmetry=symmetry,
                    progress=progress, rounds=rounds, stride=stride, strengthen=strengthen)
    return check_spec(load(path), opts)


def check_source(text: str, file: str = "<spec>", **options) -> RunResult:
    """Check a spec given as text (`file` names it in spans and results); the keyword
    arguments are check_file's (another is a TypeError)."""
    opts = _options(**{**(check_file.__kwdefaults__ or {}), **options})
    return check_spec(parse(text, file), opts)


def diagnostics(text: str, file: str = "<spec>") -> list[SpecError]:
    """Every error of a spec given as text, in file order, without checking it: its
    syntax errors, or, when it parses, the errors of every variant (each once; the
    language server's `diagnose` says which variants). Each has a `span`, a `message`, a
    `hint` and a `code` (`check --explain CODE`); [] means every variant can be checked.
    It raises nothing for bad input, and explores nothing."""
    return [e for e, _ in diagnose(text, file).errors]


def _options(*, variants, defines, memory_model, store_buffer, engine, max_states, max_depth, depth, deadlock,
             expectations, timeout, workers, por, symmetry, progress, rounds, stride, strengthen) -> Options:
    """Options as the command line builds them, refusing what it refuses."""
    if engine not in ENGINES:
        raise SpecError(NOWHERE, f"unknown engine {engine!r}", f"engines: {', '.join(ENGINES)}")
    if memory_model is not None and memory_model not in MEMORY_MODELS:
        raise SpecError(NOWHERE, f"unknown memory model {memory_model!r}", f"memory models: {', '.join(MEMORY_MODELS)}")
    if depth is not None and engine == "explicit":
        raise SpecError(NOWHERE, "depth is for engine='bmc' or 'induction'; the explicit engine takes max_depth")
    if depth is not None and engine == "pdr":
        raise SpecError(NOWHERE, "engine='pdr' has no bound: it takes no depth")
    if (max_states is not None or max_depth is not None) and engine != "explicit":
        raise SpecError(NOWHERE, f"max_states and max_depth are for the explicit engine; {engine} takes depth")
    for name, value, least in (("max_states", max_states, 1), ("max_depth", max_depth, 0), ("depth", depth, 0),
                               ("store_buffer", store_buffer, 1), ("workers", workers, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
            raise SpecError(NOWHERE, f"{name} must be a whole number >= {least}, not {value!r}")
    if workers > max_workers():  # the CLI's bound: each worker is a process
        raise SpecError(NOWHERE, f"workers={workers}: {too_many_workers()}",
                        f"workers={max_workers()} or fewer; a small search runs in one process whatever is asked")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise SpecError(NOWHERE, f"timeout must be a positive number of seconds, not {timeout!r}")
    if not isinstance(rounds, int) or rounds < 0:
        raise SpecError(NOWHERE, f"rounds must be True, False or a whole number >= 1, not {rounds!r}")
    if rounds and engine != "bmc":
        raise SpecError(NOWHERE, f"rounds is for engine='bmc', not {engine!r}")
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
        raise SpecError(NOWHERE, f"stride must be a whole number >= 1, not {stride!r}")
    if stride > 1 and not rounds:
        raise SpecError(NOWHERE, "stride is for engine='bmc' with rounds: without rounds a depth does not "
                                 "cover the ones before it")
    if strengthen is True:
        strengthen = STRENGTHEN_STATES
    if strengthen is False:
        strengthen = None
    if strengthen is not None and (not isinstance(strengthen, int) or strengthen < 1):
        raise SpecError(NOWHERE, f"strengthen must be True or a whole number of states >= 1, not {strengthen!r}")
    if strengthen is not None and engine not in ("induction", "pdr"):
        raise SpecError(NOWHERE, f"strengthen is for engine='induction' or 'pdr', not {engine!r}")
    if symmetry not in ("auto", "on", "off"):
        raise SpecError(NOWHERE, f"symmetry must be 'auto', 'on' or 'off', not {symmetry!r}")
    return Options(defines=_defines({} if defines is None else defines), variants=(variants,) if isinstance(variants, str) else tuple(variants),
                   use_expectations=expectations, limits=Limits(max_states, max_depth, deadlock),
                   memory=memory_model, store_buffer=store_buffer, progress=progress,
                   engine=Engine(engine), depth=10 if depth is None else depth, timeout=timeout,
                   workers=workers, workers_asked=workers != 1, por=por, symmetry=symmetry, rounds=int(rounds), stride=stride,
                   strengthen=strengthen)


def _defines(defines: Mapping[str, Define]) -> dict[str, str]:
    """{"NAME": value} as the text `-D NAME=VALUE` would give: true/false for a bool."""
    if not isinstance(defines, Mapping):
        raise SpecError(NOWHERE, f"defines must be a mapping of constant names to values, not "
                        f"{type(defines).__name__}", 'e.g. defines={"POLL_ROUNDS": 1}')
    out = {}
    for name, value in defines.items():
        if not isinstance(name, str):
            raise SpecError(NOWHERE, f"defines: a constant's name is a str, not {type(name).__name__} {name!r}")
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, (int, str)):
            out[name] = str(value)
        else:
            raise SpecError(NOWHERE, f"-D {name}: expected a bool, an int or a str, got {type(value).__name__}")
    return out


__all__ = ["check_file", "check_source", "diagnostics"]
