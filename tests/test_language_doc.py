"""spec/LANGUAGE.md cannot drift from the checker.

Every ```spec block in the reference is a complete model. Each one is run through
`check` (as `example.spec`, from its own folder): the exit code must be the one named
by a `<!-- check: EXIT [ARGS...] -->` line right above the block (0 without one), and
every line of a ```text block right after it must appear in the output (run times are
masked). Every keyword of the grammar and every built-in and alias of the resolver
must appear in at least one of those runnable examples.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from checker.cli import main
from checker.front.parse import grammar_text
from checker.resolve import ALIASES, BUILTINS

DOC = Path(__file__).resolve().parent.parent / "spec" / "LANGUAGE.md"
TIME = re.compile(r"\b\d+\.\d\ds\b")


@dataclass(frozen=True)
class Example:
    line: int  # of the opening fence, 1-based
    source: str
    exit: int
    args: tuple[str, ...]
    expected: tuple[str, ...]  # lines that must appear in the output


def examples() -> list[Example]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    out: list[Example] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```spec":
            i += 1
            continue
        start = i
        code, exit_code, args = [], 0, ()
        m = re.fullmatch(r"<!-- check: (\d+)(.*?) -->", lines[i - 1].strip()) if i else None
        if m:
            exit_code, args = int(m.group(1)), tuple(shlex.split(m.group(2)))
        i += 1
        while lines[i].strip() != "```":
            code.append(lines[i])
            i += 1
        i += 1
        j = i
        while j < len(lines) and not lines[j].strip():
            j += 1
        expected: list[str] = []
        if j < len(lines) and lines[j].strip() == "```text":
            j += 1
            while lines[j].strip() != "```":
                if lines[j].strip():
                    expected.append(lines[j])
                j += 1
            i = j + 1
        out.append(Example(start + 1, "\n".join(code) + "\n", exit_code, args, tuple(expected)))
    return out


EXAMPLES = examples()


def test_the_reference_has_examples():
    assert len(EXAMPLES) >= 30


@pytest.mark.parametrize("ex", EXAMPLES, ids=[f"line{e.line}" for e in EXAMPLES])
def test_example_checks_as_documented(ex: Example, tmp_path, monkeypatch, capsys):
    assert re.search(r"^model \w+;", ex.source, re.M), "every example is a complete model"
    (tmp_path / "example.spec").write_text(ex.source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(["example.spec", *ex.args])
    cap = capsys.readouterr()
    output = TIME.sub("<time>", cap.out + cap.err)
    assert code == ex.exit, f"LANGUAGE.md:{ex.line}: exit {code}, documented {ex.exit}\n{output}"
    flat = " ".join(output.split())  # the output wraps to its width: a documented line may span two
    for want in ex.expected:
        said = " ".join(TIME.sub("<time>", want).split())
        assert said in flat, f"LANGUAGE.md:{ex.line}: missing {want!r}\n{output}"


def _words(source: str) -> set[str]:
    source = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source))


RUNNABLE = set().union(*(_words(e.source) for e in EXAMPLES))


def grammar_keywords() -> set[str]:
    return {w for w in re.findall(r'"([a-z_]+)"', grammar_text())}


@pytest.mark.parametrize("word", sorted(grammar_keywords()))
def test_every_keyword_has_a_runnable_example(word):
    assert word in RUNNABLE, f"no example in LANGUAGE.md uses `{word}`"


@pytest.mark.parametrize("name", sorted(set(BUILTINS) | set(ALIASES)))
def test_every_builtin_has_a_runnable_example(name):
    assert name in RUNNABLE, f"no example in LANGUAGE.md calls `{name}`"
