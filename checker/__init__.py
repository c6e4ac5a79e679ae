"""timerace: a model checker for the races in hypervisor timer and interrupt paths.

The pipeline, one folder per stage: front (parse -> ast) -> resolve (-> model) ->
semantics and memory (primitives, lowering, contexts, the lkmm machine) -> ir -> backends
(Python, Promela) -> engines -> results -> export; pipeline.py runs the chain, cli and api
drive it. litmus/ is the second front end, for the kernel's litmus tests.

For scripts and notebooks: `from checker import check_file` (checker/api.py). The names
below are imported on first use, so that `import checker` stays cheap (no parser, no Z3).
"""

__version__ = "0.1.0"

# name -> the module that defines it
_LAZY = {
    "check_file": "api",
    "check_source": "api",
    "diagnostics": "api",
    "SpecError": "base.errors",
    "Span": "base.errors",
    "RunResult": "results.trace",
    "VariantResult": "results.trace",
    "PropertyOutcome": "results.trace",
    "Counterexample": "results.trace",
    "Trace": "results.trace",
    "Stats": "results.trace",
    "Verdict": "results.trace",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
