"""The same model and flags give byte-identical files: no clock, no hash order. Two runs
in separate processes with different hash seeds must agree byte for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from helpers import ALL_FLAGS, MODELS, produced_files


def run(folder, model, seed):
    (folder / "models").mkdir(parents=True)
    shutil.copy(MODELS / f"{model}.spec", folder / "models")
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    flags = [f.format(m=model) for f in ALL_FLAGS]
    done = subprocess.run([sys.executable, "-m", "checker", f"models/{model}.spec", *flags], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return produced_files(folder)


def test_two_runs_with_different_hash_seeds_write_the_same_bytes(tmp_path):
    for model in ("four", "wakeup"):
        a = run(tmp_path / f"{model}-a", model, 1)
        b = run(tmp_path / f"{model}-b", model, 2)
        assert a.keys() == b.keys() and len(a) >= 8
        for name in a:
            assert a[name] == b[name], f"{model}: {name} differs between runs"
