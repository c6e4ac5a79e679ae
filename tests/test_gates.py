"""The gates CI keeps: ruff and mypy report nothing, and mypy hides nothing: no module
disables an error code (pyproject.toml, [tool.mypy]; the baseline the modules that
predate the type gate once had is gone), and every `# type: ignore` names its code."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
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


def test_mypy_finds_nothing():
    r = mypy(ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_hides_nothing():
    """Zero errors means zero: no override turns an error code off, no module is skipped,
    and an ignore comment names the code it silences (so that no other error hides under it)."""
    for o in CONFIG["tool"]["mypy"].get("overrides", []):
        assert not {"disable_error_code", "ignore_errors"} & set(o), o
    bare = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "checker").rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"#\s*type:\s*ignore(?!\[)", line)]
    assert bare == []
