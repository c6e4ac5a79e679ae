"""Mermaid: the real Mermaid parser (npm `mermaid`, run by Node) accepts every sequence
diagram we write, and rejects a broken one (so this test can fail)."""

from __future__ import annotations

import subprocess

from checker.export.mermaid import escape
from helpers import GOLDEN
from tools import MERMAID_DIR, node


def parse(files) -> subprocess.CompletedProcess:
    return subprocess.run([node(), str(MERMAID_DIR / "parse.mjs"), *map(str, files)],
                          capture_output=True, text=True, timeout=300)


def test_the_mermaid_parser_accepts_every_diagram(exported, tmp_path):
    files = sorted(GOLDEN.rglob("*.mmd"))
    for folder, _, _ in exported.values():
        files += sorted((folder / "out" / "mermaid").glob("*.mmd"))
    tricky = tmp_path / "tricky.mmd"
    from checker.export.mermaid import sequence_diagram
    from helpers import lasso_counterexample

    tricky.write_text(sequence_diagram(lasso_counterexample().trace, "a; b # c <d> 100% end",
                                       "loop end; note over: alt # <br> %% x"))
    files.append(tricky)
    assert len(files) >= 12
    done = parse(files)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(files) and all(line.startswith("ok ") and line.endswith(" sequence") for line in lines)


def test_the_parser_rejects_a_broken_diagram(tmp_path):
    bad = tmp_path / "bad.mmd"
    bad.write_text("sequenceDiagram\n    participant P0 as vcpu\n    P0->>mem: x = 1; y = 2\n    P0-->>>: ???\n")
    done = parse([bad])
    assert done.returncode == 1 and done.stdout.startswith("rejected ")


def test_escaping_keeps_mermaid_syntax_out_of_statements():
    assert escape("if (a < b) x = 1; # 50%") == "if (a #60; b) x = 1#59; #35; 50#37;"
