"""Source spans and the errors that point at them.

Every stage reports bad input by raising `SpecError` with the span of the offending
text; the CLI renders it as `file:line:col: error: ...`, the source line, a caret and a
hint, and exits 2. Nothing else in the checker formats input errors.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from ..base.record import record


@record
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


@record
class ErrorCode:
    """One entry of the registry: a stable code, a title, and what `check --explain`
    prints about it."""

    code: str
    title: str
    explanation: str


#: Every error code, in one table. A code is never reused for another meaning; an
#: error that has no code of its own gets its stage's general one (TR100, TR200, ...).
REGISTRY: dict[str, ErrorCode] = {e.code: e for e in (
    ErrorCode("TR001", "bad input", "The input is wrong in a way no more specific code describes; the "
              "message and hint say what to change."),
    # -- the text (parse.py)
    ErrorCode("TR100", "syntax error", "The text does not follow the grammar (spec/grammar.lark) at the "
              "position shown; the hint lists what could come there."),
    ErrorCode("TR101", "missing ';'", "A declaration or simple statement ends with ';'. The error points "
              "at the token after the place where the ';' is missing, often the first token of the next "
              "line."),
    ErrorCode("TR102", "unclosed comment", "A `/*` comment runs to the next `*/`, and this one has none: "
              "everything after it, to the end of the file, is comment."),
    ErrorCode("TR103", "nested comment", "Comments do not nest: inside `/* ... */` a second `/*` is plain "
              "text and the first `*/` ends the whole comment, so the rest of the outer comment is read "
              "as code. Use `//` for the inner comment, or close the first comment before opening another."),
    ErrorCode("TR104", "unexpected character", "A character that no token of the language starts with "
              "(names are letters, digits and '_'; comments are // or /* */)."),
    ErrorCode("TR105", "unexpected end of file", "The file ends inside a declaration or block; usually a "
              "'{' is never closed."),
    ErrorCode("TR106", "bad literal", "An integer literal starts with 0 or is larger than 2^64 - 1."),
    ErrorCode("TR107", "nesting too deep", "The syntax tree nests deeper than the checker's limit, or "
              "`inline` and `fn` calls nest deeper than theirs (each call is expanded in place); split long "
              "chains of operators, statements or calls."),
    ErrorCode("TR108", "property form", "A `property` is `always (P -> eventually Q)` or `always "
              "eventually Q`. `eventually Q` alone (Q holds at some point of every run) is not a form of "
              "the language: for a condition that must keep coming back write `always eventually Q`; "
              "for one that must be reachable at all, `reachable NAME: Q;`."),
    # -- names, types and declarations (checker/resolve/)
    ErrorCode("TR200", "invalid model", "A declaration is not well-formed: a name, a type, a value or a "
              "statement is wrong for where it is used; the message says which."),
    ErrorCode("TR201", "unknown name", "The name is declared nowhere the use can see (a global, a constant, "
              "an enum member, a local of this process, a parameter); the hint suggests the closest "
              "name."),
    ErrorCode("TR202", "duplicate name", "Each top-level name (constant, enum, member, variable, process, "
              "inline, fn) and each property and variant name is declared once."),
    ErrorCode("TR203", "type mismatch", "An operand, a value or a condition has a type that its place "
              "does not take (e.g. an int where a bool condition is needed)."),
    ErrorCode("TR204", "reserved word", "The name is a reserved word of the language."),
    ErrorCode("TR205", "unknown variant", "The variant is declared nowhere in the spec."),
    ErrorCode("TR206", "not a constant", "The place needs a constant expression: literals, other constants "
              "and enum members."),
    ErrorCode("TR207", "WRITE_ONCE on a bit set", "`WRITE_ONCE`/`READ_ONCE` take a scalar variable or an "
              "array element; a bit set is changed with `set_bit`/`clear_bit` (or their atomic forms) "
              "and assigned whole with `s = {...}`."),
    # -- lowering and back ends (ir.py, compile.py, promela.py, engines)
    ErrorCode("TR300", "cannot lower", "The model is well-formed but cannot be turned into steps (a label, "
              "a goto, a choose branch, a loop without a step, too many initial states)."),
    ErrorCode("TR400", "cannot compile", "The model cannot be compiled for an engine (too deep, too "
              "large)."),
    ErrorCode("TR500", "no faithful Promela twin", "The SPIN twin cannot express this variant faithfully; "
              "the message says what."),
    ErrorCode("TR510", "cannot encode", "The Z3 engines cannot encode this model."),
    # -- files and the command line (run.py, cli.py, api.py)
    ErrorCode("TR600", "bad file or option", "A file cannot be read (missing, a folder, not UTF-8, too "
              "large) or a command-line value is wrong."),
    ErrorCode("TR601", "bad trace file", "The file given to --replay is not a `check --json` result or an "
              "ITF trace this checker can read."),
)}

#: the general code of each stage, for an error raised without one of its own
STAGE_CODES = {"parse": "TR100", "resolve": "TR200", "ir": "TR300", "compile": "TR400",
               "promela": "TR500", "encode": "TR510", "run": "TR600"}


def explain(code: str) -> str | None:
    """The text `check --explain CODE` prints, None for an unknown code."""
    e = REGISTRY.get(code.strip().upper())
    return None if e is None else f"{e.code}: {e.title}\n\n{e.explanation}"


class SpecError(Exception):
    """Bad input: the text, a name, a type or a command-line value is wrong. `code` is a
    key of REGISTRY; None until the stage that raised it gives its general code
    (`with_code`)."""

    def __init__(self, span: Span, message: str, hint: str | None = None, code: str | None = None):
        super().__init__(message)
        if code is not None and code not in REGISTRY:
            raise AssertionError(f"internal error: unregistered error code {code}")
        self.span = span
        self.message = message
        self.hint = hint
        self.code = code

    @property
    def errors(self) -> tuple[SpecError, ...]:
        """Every error this one stands for, in file order: itself (SpecErrors: all)."""
        return (self,)

    def with_code(self, code: str) -> SpecError:
        """This error, with `code` if it had none (a stage's default)."""
        if self.code is None:
            self.code = code
        return self

    def render(self, source: str | None) -> str:
        """`file:line:col: error: message [CODE]`, the line, a caret, and the hint."""
        text = f"{self.message} [{self.code or 'TR001'}]"
        if self.span.line:
            out = [f"{self.span}: error: {text}"]
        elif self.span.file == NOWHERE.file:
            out = [f"check: error: {text}"]
        else:
            out = [f"{self.span.file}: error: {text}"]
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


class SpecErrors(SpecError):
    """Several errors of one run, in file order (each error once); it stands for the
    first, so every handler of a SpecError still works, and renders all, then their
    number."""

    def __init__(self, errors: list[SpecError]):
        errors = sorted(distinct(errors), key=_position)
        first = errors[0]
        super().__init__(first.span, first.message, first.hint, first.code)
        self._errors = tuple(errors)

    @property
    def errors(self) -> tuple[SpecError, ...]:
        return self._errors

    def with_code(self, code: str) -> SpecError:
        for e in self.errors:
            e.with_code(code)
        self.code = self.errors[0].code
        return self

    def render(self, source: str | None) -> str:
        parts = [e.render(source) for e in self.errors]
        return "\n".join(parts) + f"\n{len(self.errors)} errors"


class Echo(SpecError):
    """An error that follows from one already reported: a use of a name whose
    declaration failed, or of a name already reported unknown. It stops the statement
    or declaration it is in, like any error, and is never reported itself."""


def _position(e: SpecError) -> tuple[str, int, int]:
    return (e.span.file, e.span.line, e.span.col)


def distinct(errors: Iterable[SpecError]) -> list[SpecError]:
    """Each error once: an inline procedure's body is resolved at every call, and an
    error in it is the same error at each."""
    return list({(e.span, e.message): e for e in errors}.values())


def combined(errors: list[SpecError]) -> SpecError:
    """One error for several (at least one): itself if there is one, else SpecErrors."""
    errors = distinct(errors)
    return errors[0] if len(errors) == 1 else SpecErrors(errors)


def raise_all(errors: list[SpecError]) -> None:
    """Raise the errors collected so far: nothing if none, the one, or all of them."""
    if errors:
        raise combined(errors)


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


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The known name a misspelt one most likely meant, for 'did you mean' hints."""
    import difflib  # only on an error: a run without one never loads it

    found = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    best = closest(name, candidates)
    return f"did you mean '{best}'?" if best else None
