"""The wheel carries the grammar: an installed `check` must work outside the checkout."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_the_language_files(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                        "-q", "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    wheel = next(tmp_path.glob("timerace-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "checker/spec/grammar.lark" in names
    assert "checker/spec/trace-schema.json" in names  # the --json format, for readers of the files
    assert "checker/export/itf.py" in names and "checker/engines/replay.py" in names
    assert "checker/cli.py" in names and "checker/engines/explicit/search.py" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "check = checker.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
