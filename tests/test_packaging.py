"""What users install is the wheel, not the editable tree: build it, compare its files with
the tree's, install it into a fresh venv and run the installed `check` on a shipped model,
from a folder outside the checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import checker

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(source: Path, out: Path) -> Path:
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), str(source)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return next(out.glob("timerace-*.whl"))


def tree_files(root: Path) -> set[str]:
    """What the wheel must hold, named as inside it: every module of checker/, the
    language's files (spec/ as checker/spec) and the models (models/ as checker/models)."""
    want = {str(p.relative_to(root)) for p in (root / "checker").rglob("*.py")}
    want |= {f"checker/spec/{p.name}" for p in (root / "spec").iterdir()
             if p.suffix in (".py", ".lark", ".json", ".md")}
    want |= {f"checker/models/{p.name}" for p in (root / "models").iterdir() if p.suffix in (".py", ".spec")}
    return want


def wheel_gaps(wheel: Path, root: Path) -> tuple[set[str], set[str]]:
    """(files of the tree the wheel lacks, files the wheel has that the tree does not)."""
    names = {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}
    want = tree_files(root)
    return want - names, names - want


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_exactly_the_tree(wheel):
    missing, extra = wheel_gaps(wheel, ROOT)
    assert not missing, f"the wheel lacks {sorted(missing)}: an installed check cannot start"
    assert not extra, f"the wheel has files the tree does not: {sorted(extra)}"
    meta = zipfile.ZipFile(wheel)
    entry = next(n for n in meta.namelist() if n.endswith("entry_points.txt"))
    assert "check = checker.cli:main" in meta.read(entry).decode()
    assert wheel.name.startswith(f"timerace-{checker.__version__}-")  # the version has one home


def test_a_package_left_out_of_the_build_is_caught(tmp_path):
    """The comparison above would catch a hand-written package list that misses one
    (checker.resolve was missing once): build a copy whose setup.py excludes a package."""
    copy = tmp_path / "tree"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "bench", "*.egg-info",
                                                              "build", "node_modules", "__pycache__"))
    setup = copy / "setup.py"
    setup.write_text(setup.read_text().replace('include=["checker", "checker.*"]',
                                               'include=["checker", "checker.*"], exclude=["checker.resolve"]'))
    missing, _ = wheel_gaps(build_wheel(copy, tmp_path / "out"), copy)
    assert "checker/resolve/__init__.py" in missing and "checker/resolve/types.py" in missing


def test_the_installed_check_runs_a_shipped_model(wheel, tmp_path):
    """A fresh venv with only the wheel installed (its dependencies are read from this
    venv, so the test needs no network): `check --version`, `--list-models` and a shipped
    model by name, run from an empty folder."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies (lark, networkx, z3) from this interpreter's site-packages, after the venv's own
    Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", purelib, str(wheel)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    Path(purelib, "bin").exists() and shutil.rmtree(Path(purelib, "bin"))
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def installed_check(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(py), "-m", "checker", *args], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)

    where = subprocess.run([str(py), "-c", "import checker; print(checker.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True)
    assert where.stdout.startswith(purelib), where.stdout + where.stderr  # the wheel's copy, not the tree
    version = installed_check("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"timerace {checker.__version__}"
    listing = installed_check("--list-models")
    assert listing.returncode == 0, listing.stderr
    assert re.search(r"^pi_timer\s", listing.stdout, re.M) and re.search(r"^timer_migration\s", listing.stdout, re.M)
    run = installed_check("timer_migration", "--brief")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "every outcome is as expected" in run.stdout
