"""timerace: a model checker for the races in hypervisor timer and interrupt paths.

The pipeline, one module per stage: parse -> ast -> resolve -> model -> ir -> compile
-> engines -> trace (results) -> export; cli drives it.

For scripts and notebooks: `from checker import check_file` (checker/api.py). The names
below are imported on first use, so that `import checker` stays cheap (no parser, no Z3).
"""

__version__ = "0.1.0"

# name -> the module that defines it
_LAZY = {
    "check_file": "api",
    "check_source": "api",
    "SpecError": "errors",
    "Span": "errors",
    "RunResult": "trace",
    "VariantResult": "trace",
    "PropertyOutcome": "trace",
    "Counterexample": "trace",
    "Trace": "trace",
    "Stats": "trace",
    "Verdict": "trace",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
