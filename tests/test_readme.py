"""The README's first example runs and prints the race diagram it shows."""

from pathlib import Path

from checker.cli import main

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def fenced_blocks(text):
    """The contents of every ``` fenced block, in order."""
    blocks, current = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_readme_example_checks_itself_and_draws_the_race(tmp_path, capsys, monkeypatch):
    blocks = fenced_blocks(README)
    spec = next(b for b in blocks if b.startswith("model lost_update;"))
    diagram = next(b for b in blocks if "inc[0]      |      inc[1]" in b)
    (tmp_path / "lost_update.spec").write_text(spec)
    monkeypatch.chdir(tmp_path)
    assert main(["lost_update.spec", "--full"]) == 0  # the base variant expects the race
    out = capsys.readouterr().out
    assert diagram.rstrip("\n") in out


def test_ci_runs_exactly_the_readmes_test_command():
    """The README opens with the two set-up commands; .ci/run's last line is the second."""
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text().strip().splitlines()[-1]
    first_block = fenced_blocks(README)[0]
    commands = [ln for ln in first_block.splitlines() if ln.startswith("python3 -m venv")]
    assert len(commands) == 2 and commands[1] == ci
    assert " -e " not in commands[0]  # the first installs the wheel, as a user gets it
