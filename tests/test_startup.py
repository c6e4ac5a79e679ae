"""What a small model's check imports (issue 30, start-up): Z3, networkx, the file
exporters, the C back end, the workers, the liveness and replay engines are imported
only by the runs that use them, so `check` on a small model starts quickly. This tests
what is imported, never how long it takes (the time lives in bench/)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

TINY = """model tiny;
var x: 0..2 = 0;
process p { x = 1; x = 2; }
invariant small: x <= 2;
"""

LIVE = """model tiny_live;
var x: 0..1 = 0;
process p { x = 1; }
property eventually_one: always eventually x == 1;
"""

#: imported by no run of a safety-only model with no output files
LAZY = ("z3", "networkx", "checker.engines.smt", "checker.backends.c", "checker.backends.promela",
        "checker.engines.explicit.native", "checker.engines.explicit.parallel", "checker.engines.liveness",
        "checker.engines.replay", "checker.litmus", "checker.export.json", "checker.export.html",
        "checker.export.dot", "checker.export.itf", "checker.export.junit", "checker.export.sarif",
        "checker.export.markdown", "checker.export.mermaid")

_RUN = """
import json, sys
from checker.cli import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)
"""


def _modules(tmp_path, text: str, *args: str) -> tuple[int, set[str]]:
    spec = tmp_path / "m.spec"
    spec.write_text(text)
    done = subprocess.run([sys.executable, "-c", _RUN, str(spec), *args], capture_output=True, text=True,
                          timeout=120)
    code, modules = json.loads(done.stderr.strip().splitlines()[-1])
    return code, set(modules)


def _loaded(modules: set[str], root: str) -> bool:
    return any(m == root or m.startswith(root + ".") for m in modules)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[int, set[str]]:
    return _modules(tmp_path_factory.mktemp("tiny"), TINY)


def test_the_tiny_model_checks(tiny):
    code, modules = tiny
    assert code == 0
    assert "checker.engines.explicit.search" in modules  # (the run did search)


@pytest.mark.parametrize("root", LAZY)
def test_a_small_check_leaves_it_unimported(tiny, root):
    assert not _loaded(tiny[1], root)


def test_liveness_imports_its_engine_and_still_no_z3(tmp_path):
    code, modules = _modules(tmp_path, LIVE)
    assert code == 0
    assert "checker.engines.liveness" in modules
    assert not _loaded(modules, "z3") and not _loaded(modules, "networkx")


def test_an_output_file_imports_its_exporter(tmp_path):
    code, modules = _modules(tmp_path, TINY, "--json", str(tmp_path / "out.json"))
    assert code == 0
    assert "checker.export.json" in modules
    assert not _loaded(modules, "z3")
