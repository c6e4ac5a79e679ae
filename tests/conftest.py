"""Shared fixtures: the counter model as a file, and every tiny exporter test model
(tests/models) exported once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from checker.export.outputs import DEFAULT_GRAPH_LIMIT
from checker.pipeline import Options, check_spec, load
from helpers import EXPORT_MODELS, export_all, lasso_result, workdir

# pytest-xdist's workers inherit a COLUMNS of the controller's terminal, and `check` in a
# pipe obeys COLUMNS (cli.text_width): the tests expect the pipe's own width unless they
# set one (monkeypatch.setenv), so a test's output does not depend on who ran the suite.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

pytest_plugins = ["search_fixtures"]  # shared searches and fixtures (tests/search_fixtures.py)

# `--hypothesis-profile deep`: the property tests that take helpers.examples() run DEEP
# times as many examples, and those that set no count 1,000 instead of hypothesis' 100
settings.register_profile("deep", max_examples=1000)

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = frozenset(p.stem for p in (ROOT / "models").glob("*.spec"))

#: test files that drive an outside tool (SPIN's pan, herd7, Graphviz, Node.js packages):
#: the `tools` tier
TOOL_FILES = frozenset({"test_promela.py", "test_promela_names.py", "test_bench.py", "test_lkmm_herd7.py",
                        "test_litmus_kernel.py", "test_mermaid.py", "test_editors.py", "test_dot.py",
                        "test_packaging.py", "test_gates.py"})


def pytest_configure(config):
    """The checker's bytecode, written once before the workers start. An installed
    `check` has it (pip compiles what it installs); an editable tree under
    PYTHONDONTWRITEBYTECODE=1 has none, and each worker and each `check` the tests start
    compiled every module it imported again."""
    if hasattr(config, "workerinput"):  # a worker: the controller has done it
        return
    import compileall

    compileall.compile_dir(ROOT / "checker", quiet=2)  # where the tree is read-only, nothing is written


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    """The tiers (README, "Tests"): `models`, a test over a shipped model; `tools`, a test
    that runs an outside tool. A shipped model's tests share an xdist group, so that under
    `-n auto --dist loadgroup` its searches (tests/shared_runs.py) are made once, by one
    worker."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        ids = callspec.id.replace("/", "-").split("-") if callspec is not None else []
        params = [str(v) for v in callspec.params.values()] if callspec is not None else []
        # ids name a model as `pi_timer`, `pi_timer.spec` or `models/pi_timer`; a fixture
        # named after a model (test_models' `pi_timer`) is that model's search
        models = [m for m in SHIPPED if m in ids or f"{m}.spec" in ids or any(f"models/{m}.spec" in p for p in params)
                  or m in item.fixturenames]
        group = item.get_closest_marker("xdist_group")  # a test that reads a model's shared search by name
        if group is not None and group.args and group.args[0] in SHIPPED:
            models.append(group.args[0])
        if models:
            item.add_marker(pytest.mark.models)
            item.add_marker(pytest.mark.xdist_group(sorted(models)[0]))
        if item.path.name in TOOL_FILES:
            item.add_marker(pytest.mark.tools)


def pytest_runtest_setup(item):
    """shared_runs refuses a search of a shipped model outside that model's group."""
    import shared_runs

    group = item.get_closest_marker("xdist_group")
    shared_runs.GROUP = group.args[0] if group is not None and group.args else None


@pytest.hookimpl(optionalhook=True)  # an xdist hook, on the controller: absent under -p no:xdist
def pytest_xdist_node_collection_finished(node, ids):
    """Under `--dist loadgroup`, xdist names a grouped test `NODEID@GROUP` on the worker and
    schedules by that name. A pytest that ignores the rename (pytest 9 with xdist 3.8) would
    spread each model's tests over every worker and make every shared search once per
    worker, silently doubling the suite's time: refuse to run that way."""
    if node.config.getvalue("dist") == "loadgroup" and ids and not any("@" in i for i in ids):
        pytest.exit("pytest-xdist's groups did not reach the test ids: this pytest and pytest-xdist do not "
                    "work together (pyproject.toml's test extras pin them)", returncode=4)


# Two processes increment a shared counter; without `atomic` one update is lost.
COUNTER = """// Two increments; without atomic one is lost.
model counter;
const ATOMIC = false;
var x: 0..2 = 0;
process inc[2] {
  var r: 0..2 = 0;
  if (ATOMIC) { atomic { x = x + 1; } }
  else { r = x; x = r + 1; }
}
invariant both_counted: (inc[0]@end && inc[1]@end) -> x == 2;
expect violated both_counted;
variant atomic_inc { ATOMIC = true; }
"""


@pytest.fixture
def counter(tmp_path):
    p = tmp_path / "counter.spec"
    p.write_text(COUNTER)
    return str(p)


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """model -> (folder with out/, exit code, RunResult) for every model in EXPORT_MODELS,
    plus "spin-lasso" written through write_outputs."""
    out = {}
    for model in EXPORT_MODELS:
        folder = tmp_path_factory.mktemp(model)
        rc, _, _ = export_all(folder, model)
        with workdir(folder):
            # as the files were made: --dot-graph draws the whole graph, so no reductions
            result = check_spec(load(f"models/{model}.spec"), Options(graph_limit=DEFAULT_GRAPH_LIMIT))
        out[model] = (folder, rc, result)
    from checker.export.outputs import OutputRequest, write_outputs

    folder = tmp_path_factory.mktemp("spin-lasso")
    result = lasso_result(folder)
    with workdir(folder):
        write_outputs(result, OutputRequest(json="out/spin.json", itf="out/itf", mermaid="out/mermaid",
                                            dot="out/dot", report="out/spin.md", sarif="out/spin.sarif",
                                            junit="out/spin.xml"))
    out["spin-lasso"] = (folder, None, result)
    return out


def pytest_sessionfinish(session):
    """An xdist worker hands its oracle counts to the controller (pytest_testnodedown)."""
    if hasattr(session.config, "workeroutput"):
        import oracle

        session.config.workeroutput["oracle_counts"] = {"herd7": dict(oracle.COUNTS), "pan": dict(oracle.PAN_COUNTS),
                                                        "asked": sorted(oracle.ASKED)}


@pytest.hookimpl(optionalhook=True)  # an xdist hook: absent under -p no:xdist
def pytest_testnodedown(node, error):
    import oracle

    counts = getattr(node, "workeroutput", {}).get("oracle_counts", {})
    for mine, theirs in ((oracle.COUNTS, counts.get("herd7", {})), (oracle.PAN_COUNTS, counts.get("pan", {}))):
        for k, n in theirs.items():
            mine[k] += n
    oracle.ASKED.update(counts.get("asked", ()))


def pytest_terminal_summary(terminalreporter):
    """How many comparisons with herd7 and pan ran live and how many read their recorded
    answers (tests/oracle.py): without ../shared/tools/herd7 every herd7 one is from a
    recording."""
    import oracle

    c = oracle.COUNTS
    if any(c.values()):
        line = (f"herd7 oracle: {c['live']} comparison{'s' * (c['live'] != 1)} live, {c['recorded']} from recordings"
                + (f", {c['unrecorded']} skipped without a recording" if c["unrecorded"] else "")
                + f" (TIMERACE_HERD7={oracle.MODE})")
        terminalreporter.write_line(line)
    p = oracle.PAN_COUNTS
    if any(p.values()):
        terminalreporter.write_line(f"pan oracle: {p['live']} twin{'s' * (p['live'] != 1)} checked live, "
                                    f"{p['recorded']} from recordings (TIMERACE_SPIN={oracle.PAN_MODE})")
    if oracle.UNUSED_MODE == "report":  # (meaningful on a whole-suite run only: see oracle.py)
        dead = oracle.unread()
        terminalreporter.write_line(f"oracle recordings no test asked for: {len(dead)} (TIMERACE_ORACLE_UNUSED=report)")
        for path in dead:
            terminalreporter.write_line(f"unread recording: {path}")
