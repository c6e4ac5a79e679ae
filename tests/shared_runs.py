"""One search per (model file, options) for the whole test session.

Several test files check the same shipped model with the same options and only read
the result (the pinned counts, the README tables, the coverage findings, the default
output, the scenarios' races): they share one `check_spec` run through `checked`, so
CI does not search the same state space five times. Sharing is the same check as
running again because the search is deterministic and a RunResult is deeply frozen
(`checked` proves that with hash(), so no test can change what another one reads).

Only plain runs are shared: one worker, no simulation, nothing patched that a
one-worker search reads (the knobs of engines/explicit/parallel.py are not: one worker
never starts the parallel search). A test that patches the search must call
`check_spec` itself for the run it patches.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from checker.pipeline import CUT_SHORT, NOT_CHECKED, Options, check_spec, load, selected_variants
from checker.results.trace import RunResult

_RUNS: dict[tuple, RunResult] = {}
MODELS = Path(__file__).resolve().parent.parent / "models"
#: the xdist group of the test running now (conftest.pytest_runtest_setup)
GROUP: str | None = None


def checked(path: str | Path, **options) -> RunResult:
    """`check_spec(load(str(path)), Options(**options))`, searched at most once per
    session. `variants=(...)` picks those variants' results out of a run of the whole
    model with the same options when one was made (each variant is searched on its
    own, so a variant's result does not depend on the others checked with it), unless
    that run was cut short."""
    _in_its_group(Path(path))
    opts = Options(**options)
    if opts.workers != 1 or opts.simulate is not None:
        raise ValueError("only single-worker searches are shared (the others depend on timing or a seed)")
    if not opts.use_expectations:  # the same search as with them, read without them
        return _without_expectations(checked(path, **{**options, "use_expectations": True}))
    text = Path(path).read_bytes()  # an edited file is another model
    # progress only draws on stderr, the command is only echoed back: neither changes the search
    base = dataclasses.replace(opts, progress=False, command="")
    whole = _RUNS.get(_key(path, text, base, ()))
    if opts.variants and whole is not None and _complete(whole):
        spec = load(str(path))
        by = {v.variant: v for v in whole.variants}
        result = dataclasses.replace(whole, variants=tuple(by[v] for v in selected_variants(spec, opts.variants)))
    else:
        key = _key(path, text, base, opts.variants)
        if key not in _RUNS:
            result = check_spec(load(str(path)), dataclasses.replace(base, variants=opts.variants))
            hash(result)  # TypeError if anything in it could be changed in place
            _RUNS[key] = result
        result = _RUNS[key]
    return dataclasses.replace(result, command=opts.command) if opts.command else result


def _without_expectations(result: RunResult) -> RunResult:
    """What `use_expectations=False` makes of the same search: the pipeline reads the option
    only to mark each outcome an expected violation or not (test_shared_runs compares)."""
    return dataclasses.replace(result, use_expectations=False, variants=tuple(
        dataclasses.replace(v, outcomes=tuple(dataclasses.replace(o, expected_violation=False) for o in v.outcomes))
        for v in result.variants))


def _key(path, text: bytes, opts: Options, variants: tuple[str, ...]) -> tuple:
    return str(path), text, repr(dataclasses.replace(opts, variants=())), variants


def _complete(result: RunResult) -> bool:
    """No variant went unchecked because an earlier one was interrupted."""
    return all(v.stats.limit not in (*CUT_SHORT, NOT_CHECKED) for v in result.variants)


def _in_its_group(path: Path) -> None:
    """A shipped model's searches are shared by the tests of its xdist group, which one
    worker runs: a test outside the group searches the model again when it lands on
    the other worker (a whole model can take ten seconds), unseen. Under xdist, refuse
    every read from outside the group, whichever worker has the search already, so that
    the check does not depend on where the test ran."""
    if os.environ.get("PYTEST_XDIST_WORKER") and path.resolve().parent == MODELS and path.stem != GROUP:
        raise AssertionError(f"this test reads models/{path.name}'s shared search outside the model's xdist group "
                             f"({GROUP}): mark it @pytest.mark.xdist_group({path.stem!r}), or name the model in "
                             f"its parameters (conftest.py)")
