"""Golden files for every exporter: the tiny models under tests/models, checked with
every output flag, must give exactly the files under tests/golden/<model>/.

A change to an output format shows up here as a diff to review. To accept it:
    TIMERACE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
and read `git diff tests/golden` before committing.
"""

from __future__ import annotations

import difflib
import os
import shutil

import pytest

from checker.export.files import counterexamples, file_stem
from checker.export.outputs import OutputRequest, write_outputs
from checker.export.text import format_counterexample
from checker.pipeline import Options, check_spec, load
from helpers import EXPORT_MODELS, GOLDEN, export_all, lasso_result, produced_files, workdir

UPDATE = os.environ.get("TIMERACE_UPDATE_GOLDEN") == "1"


def text_outputs(result) -> dict[str, bytes]:
    """The text exporter: each counterexample's numbered trace and race diagram."""
    return {f"text/{file_stem(result, v.variant, cx.property)}.txt":
            (format_counterexample(cx, v.variant) + "\n").encode() for v, cx in counterexamples(result)}


def compare(name: str, files: dict[str, bytes]) -> None:
    folder = GOLDEN / name
    if UPDATE:
        shutil.rmtree(folder, ignore_errors=True)
        for rel, data in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        return
    assert folder.is_dir(), f"no golden files for {name}: run with TIMERACE_UPDATE_GOLDEN=1"
    golden = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert sorted(files) == sorted(golden), "a different set of files than tests/golden/" + name
    for rel, data in files.items():
        if data != golden[rel]:
            diff = "\n".join(difflib.unified_diff(golden[rel].decode().splitlines(), data.decode().splitlines(),
                                                  f"golden/{name}/{rel}", "now", lineterm="", n=2))
            pytest.fail(f"{rel} differs from its golden file:\n{diff[:4000]}")


@pytest.mark.parametrize("model", EXPORT_MODELS)
def test_every_exporter_matches_its_golden_files(model, tmp_path):
    export_all(tmp_path, model)
    files = produced_files(tmp_path)
    with workdir(tmp_path):
        result = check_spec(load(f"models/{model}.spec"), Options())
    files.update(text_outputs(result))
    assert any(k.endswith(".itf.json") for k in files), "every test model has a counterexample"
    compare(model, files)


def test_a_lasso_in_every_format_matches_its_golden_files(tmp_path):
    result = lasso_result(tmp_path)
    req = OutputRequest(json="out/spin.json", itf="out/itf", mermaid="out/mermaid", dot="out/dot",
                        report="out/spin.md", sarif="out/spin.sarif", junit="out/spin.xml")
    with workdir(tmp_path):
        write_outputs(result, req)
    files = produced_files(tmp_path)
    files.update(text_outputs(result))
    compare("spin-lasso", files)
