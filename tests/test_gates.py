"""The gates CI keeps: ruff and mypy report nothing, and mypy's baseline for the modules
that predate the type gate only shrinks (pyproject.toml, [tool.mypy])."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())


def tool(name: str) -> list[str]:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return [str(exe)]
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (the test extra has it)")
    return [found]


def test_ruff_finds_nothing():
    r = subprocess.run(tool("ruff") + ["check", "--output-format", "concise", "checker", "tests", "bench",
                                       "scripts", "models", "setup.py"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def mypy(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run(tool("mypy") + ["--config-file", str(config), "--no-error-summary", "--show-error-codes"],
                          cwd=ROOT, capture_output=True, text=True)


def baseline() -> dict[str, set[str]]:
    """Module -> the error codes the baseline lets it keep."""
    out: dict[str, set[str]] = {}
    for o in CONFIG["tool"]["mypy"].get("overrides", []):
        if "disable_error_code" in o:
            out[o["module"]] = set(o["disable_error_code"])
    return out


def config_without_baseline(path: Path) -> Path:
    """pyproject's [tool.mypy] without the baseline's overrides, as a file mypy reads."""
    mypy_cfg = CONFIG["tool"]["mypy"]

    def value(v) -> str:
        return json.dumps(v)

    lines = ["[tool.mypy]"] + [f"{k} = {value(v)}" for k, v in mypy_cfg.items() if k != "overrides"]
    for o in mypy_cfg.get("overrides", []):
        if "disable_error_code" not in o:
            lines += ["", "[[tool.mypy.overrides]]"] + [f"{k} = {value(v)}" for k, v in o.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def errors_by_module(output: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for line in output.splitlines():
        m = re.match(r"(checker/\S+?)\.py:\d+: error: .*\[([a-z-]+)\]$", line.strip())
        if m:
            out[m.group(1).replace("/", ".").removesuffix(".__init__")].add(m.group(2))
    return out


def test_mypy_finds_nothing():
    r = mypy(ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_mypy_baseline_only_shrinks(tmp_path):
    """Every code the baseline lets a module keep is one it still has: a fixed module's
    entry must go, so that the error cannot come back unseen."""
    found = errors_by_module(mypy(config_without_baseline(tmp_path / "mypy.toml")).stdout)
    stale = {mod: codes - found.get(mod, set()) for mod, codes in baseline().items()}
    stale = {mod: codes for mod, codes in stale.items() if codes}
    assert not stale, f"pyproject.toml's mypy baseline lists codes these modules no longer have: {stale}"
    assert not set(found) - set(baseline()), "a module outside the baseline has mypy errors"
