"""Source spans and the errors that point at them.

Every stage reports bad input by raising `SpecError` with the span of the offending
text; the CLI renders it as `file:line:col: error: ...`, the source line, a caret and a
hint, and exits 2. Nothing else in the checker formats input errors.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of one source file (1-based line and column)."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


NOWHERE = Span("<command line>", 0, 0, 0, 0)

class SpecError(Exception):
    """Bad input: the text, a name, a type or a command-line value is wrong."""

    def __init__(self, span: Span, message: str, hint: str | None = None):
        super().__init__(message)
        self.span = span
        self.message = message
        self.hint = hint

    def render(self, source: str | None) -> str:
        """`file:line:col: error: message`, the line, a caret, and the hint."""
        if self.span.line:
            out = [f"{self.span}: error: {self.message}"]
        elif self.span.file == NOWHERE.file:
            out = [f"check: error: {self.message}"]
        else:
            out = [f"{self.span.file}: error: {self.message}"]
        if source is not None and self.span.line > 0:
            lines = source_lines(source)
            if self.span.line <= len(lines):
                text = display_line(lines[self.span.line - 1])
                out.append(f"  {text}")
                width = 1
                if self.span.end_line == self.span.line and self.span.end_col > self.span.col:
                    width = self.span.end_col - self.span.col
                out.append("  " + " " * (self.span.col - 1) + "^" * max(1, min(width, 60)))
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)


@functools.lru_cache(maxsize=8)
def source_lines(source: str) -> tuple[str, ...]:
    """The lines of a spec as the parser numbers them: only `\\n` ends a line (a `\\r`
    before it belongs to the line ending). `str.splitlines` also breaks at form feeds,
    `\\v`, `\\x1c`-`\\x1e`, `\\x85` and U+2028, which would shift every line after one of
    them against the positions the parser gives; every display of source text goes
    through here. Cached: a trace shows many statements of the same source."""
    return tuple(line.removesuffix("\r") for line in source.split("\n"))


# comments inside a multi-line statement are not code
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def source_text(source: str, span: Span, limit: int = 200) -> str:
    """The statement as written, on one line, printable characters only."""
    lines = source_lines(source)
    if span.line < 1 or span.line > len(lines):
        return ""
    if span.end_line == span.line:
        text = lines[span.line - 1][span.col - 1:span.end_col - 1]
    else:
        part = [lines[span.line - 1][span.col - 1:]]
        part += lines[span.line:span.end_line - 1]
        part.append(lines[span.end_line - 1][:span.end_col - 1] if span.end_line <= len(lines) else "")
        text = "\n".join(part)
    text = _COMMENT.sub(" ", text)
    text = " ".join(text.split())
    text = "".join(ch for ch in text if ch.isprintable())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def display_line(text: str) -> str:
    """A source line for a terminal: every character that does not print (a tab, a form
    feed, an escape) becomes one space, so a caret under it still points at its column."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def closest(name: str, candidates) -> str | None:
    """The known name a misspelt one most likely meant, for 'did you mean' hints."""
    found = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, candidates) -> str | None:
    best = closest(name, candidates)
    return f"did you mean '{best}'?" if best else None
