"""Text -> syntax tree: the lark grammar (shipped as checker.spec) and a transformer.

Lark's exceptions never escape this module: they become `SpecError`s that say what was
expected, in words a kernel developer reads, at the spot where the text went wrong.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pkgutil
import re

import lark
from lark import Lark, Token, Transformer, v_args

from . import ast
from ..base.errors import Span, SpecError, combined, source_lines
from ..base.limits import MAX_LITERAL, MAX_NESTING, MAX_SYNTAX_ERRORS, RECOVERY_BUDGET
from ..base.record import record

_TOKEN_WORDS = {
    "SEMICOLON": "';'", "RBRACE": "'}'", "LBRACE": "'{'", "RPAR": "')'", "LPAR": "'('",
    "RSQB": "']'", "LSQB": "'['", "COLON": "':'", "COMMA": "','", "EQUAL": "'='",
    "NAME": "a name", "NUMBER": "a number", "ARROW": "'->'", "DOTDOT": "'..'", "DOT": "'.'",
    "OR_KW": "'or'", "ADDOP": "'+' or '-'", "MULOP": "'*', '/' or '%'", "UNOP": "'!' or '~'",
    "EQOP": "'==' or '!='", "RELOP": "a comparison", "SHIFTOP": "'<<' or '>>'",
}


@functools.lru_cache(maxsize=1)
def grammar_text() -> str:
    # pkgutil (which lark imports anyway) rather than importlib.resources, whose pathlib
    # and zipfile cost a small run more than the read itself
    data = pkgutil.get_data("checker.spec", "grammar.lark")
    assert data is not None, "checker.spec is a regular package, its loader reads files"
    return data.decode("utf-8")


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    """The LALR parser. Building its tables takes about a quarter of a second, as long
    as checking a small model, so lark keeps them in the user's cache directory
    (`$XDG_CACHE_HOME/timerace`, else `~/.cache/timerace`), a file per grammar; lark
    checks the grammar's hash on loading, rebuilds when it differs, and carries on
    without the cache when the directory cannot be written."""
    # not strict=True: the grammar resolves two shift/reduce conflicts by shifting on
    # purpose (the dangling `else` binds to the nearest `if`; an `expect` after a variant
    # belongs to it), and lark's strict mode refuses every such conflict
    return Lark(grammar_text(), parser="lalr", propagate_positions=True, maybe_placeholders=True,
                cache=_cache_file())


def _cache_file() -> str | bool:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "timerace")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    # one file per grammar: checkouts of different versions (branches, a venv per project)
    # would otherwise overwrite each other's tables, and each would rebuild them in turn
    digest = hashlib.sha256(grammar_text().encode()).hexdigest()[:16]
    return os.path.join(folder, f"grammar-lark-{lark.__version__}-{digest}.cache")


def parse(source: str, file: str = "<spec>") -> ast.Spec:
    """Parse a whole spec; raise SpecError with a position on any syntax error."""
    source = source.removeprefix("\ufeff")  # a UTF-8 byte order mark, as some editors write
    try:
        tree = _parser().parse(source)
    except lark.exceptions.UnexpectedInput as e:
        raise combined(_syntax_errors(e, source, file)) from None
    try:
        _check_nesting(tree, file)
        items = _Builder(file).transform(tree)
    except SpecError as e:
        raise e.with_code("TR100") from None
    except lark.exceptions.VisitError as e:
        if isinstance(e.orig_exc, SpecError):
            raise e.orig_exc.with_code("TR100") from None
        raise
    return ast.Spec(file=file, source=source, items=items)


# after these the rest of the file is not code as written: no error after them is sure
_LAST = ("TR102", "TR103", "TR105")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_BOUNDARY = re.compile(_COMMENT.pattern + r"|[;{}]", re.S)
_GOES_ON = re.compile(r"\s*(?:else|or)\b")  # a statement that goes on after its block
_MAX_CLOSED = 3  # the most `}` tried for a block left open


def _syntax_errors(first: lark.exceptions.UnexpectedInput, source: str, file: str) -> list[SpecError]:
    """The first syntax error and those after it that do not depend on it. Lark stops at
    the first; to go on, the text is mended and parsed again, every line and column kept:

    * a line that parses once the blocks above it are closed (`process` inside a process
      whose `}` is missing) gets the missing `}`s at the end of the line before it;
    * else the statement around the error (from the `;`, `{` or `}` before it to the `;`
      or block that ends it) is blanked out; for a missing `;`, only what comes before the
      token that should have followed it, which starts a statement; between declarations
      (statements left outside a block whose `{` is missing), everything up to the next
      line that starts a declaration.

    One error per line: a second on the line of the last is mostly the first seen again.
    At most MAX_SYNTAX_ERRORS, and RECOVERY_BUDGET characters parsed again in all."""
    errors: list[SpecError] = []
    e: lark.exceptions.UnexpectedInput | None = first
    text, mended_to, last_at, budget = source, -1, -1, RECOVERY_BUDGET
    quiet_line = 0  # the line of the last error, unless `}`s were added before it
    while e is not None:
        at = _error_offset(e, text)
        if at < mended_to:  # it follows from the mending, not from the text
            break
        tok = getattr(e, "token", None)
        width = max(1, len(str(tok))) if tok is not None else 1
        err = None
        if at != last_at and quiet_line != text.count("\n", 0, at) + 1:
            err = _syntax_error(e, source, file).with_code("TR100")
            errors.append(err)
            quiet_line = err.span.line
            if err.code in _LAST or _stops(err, len(errors), budget < len(text) * (_MAX_CLOSED + 1)):
                break
        budget -= len(text) * (_MAX_CLOSED + 1)
        last_at = at
        closed = _close_blocks(text, e, width) if err is not None and err.code == "TR100" else None
        if closed is not None and err is not None:  # (closed only after an error here)
            n, text, mended_to, e = closed
            errors[-1] = _unclosed(err, n, source)
            last_at = quiet_line = -1
            continue
        start, mended_to = _statement_around(text, at, width, err is not None and err.code == "TR101")
        text = text[:start] + re.sub(r"[^\n]", " ", text[start:mended_to]) + text[mended_to:]
        e = _parse_error(text)
    return errors


def _parse_error(text: str) -> lark.exceptions.UnexpectedInput | None:
    try:
        _parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        return e
    return None


def _stops(err: SpecError, count: int, out_of_budget: bool) -> bool:
    """Whether the parser looks no further after `err`; if so its hint says so."""
    if count < MAX_SYNTAX_ERRORS and not out_of_budget:
        return False
    why = f"after {MAX_SYNTAX_ERRORS} errors" if count >= MAX_SYNTAX_ERRORS else f"after {count} in a text this long"
    err.hint = (err.hint + "; " if err.hint else "") + f"the parser stops {why}: there may be more after this line"
    return True


def _close_blocks(text: str, e: lark.exceptions.UnexpectedInput, width: int):
    """(how many `}`, the text with them at the end of the last line before the error's
    that does not end in a comment, where the mended text starts to count, the next
    error or None) if that many `}` (1 to _MAX_CLOSED) let the parser past the token;
    None if none does."""
    at = _error_offset(e, text)
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        return None
    comments = [(k.start(), k.end()) for k in _COMMENT.finditer(text, 0, at)]
    line_start = text.rfind("\n", 0, at)  # the end of a line before, outside its comments
    while line_start >= 0 and any(a < line_start <= b for a, b in comments):
        line_start = text.rfind("\n", 0, line_start)
    if line_start < 0:
        return None
    for n in range(1, _MAX_CLOSED + 1):
        mended = text[:line_start] + "}" * n + text[line_start:]
        again = _parse_error(mended)
        if again is None or _error_offset(again, mended) >= at + n + width:
            return n, mended, at + n, again
        if _error_offset(again, mended) < line_start + n:  # a `}` too many
            return None
    return None


def _unclosed(err: SpecError, n: int, source: str) -> SpecError:
    """The error of a line that needs `n` more `}` before it, at the line's first token
    (the parser may have read a keyword there as a name, and stopped at the next)."""
    line = err.span.line
    text = source_lines(source)[line - 1]
    col = len(text) - len(text.lstrip()) + 1
    name = re.match(r"\w+", text[col - 1:])
    word = name.group() if name else text[col - 1:col] or " "
    return SpecError(Span(err.span.file, line, col, line, col + len(word)), f"unexpected {word!r}",
                     "a '{' above is never closed: " + ("add the missing '}' before this line" if n == 1
                                                        else f"{n} '}}' are missing before this line"), "TR100")


_DECLARATION = re.compile(r"^[ \t]*(?:model|memory|const|enum|var|waitqueue|process|cpus|preemptions|percpu|ghost|"
                          r"interrupt|hrtimer|guest|inline|fn|invariant|final|reachable|sometimes|property|variant|"
                          r"expect|lemma|preemptible|unfair)\b", re.M)


def _next_declaration(text: str, at: int) -> int:
    """The offset of the next line after `at`'s that starts with a declaration's keyword
    (outside comments), or the end of the text (or the start of a comment that does not
    end)."""
    line_end = text.find("\n", at)
    if line_end < 0:
        return len(text)
    comments = [(k.start(), k.end()) for k in _COMMENT.finditer(text, line_end)]
    unclosed = next((a for a, b in comments if text.startswith("/*", a) and not text.endswith("*/", a + 2, b)),
                    len(text))
    for k in _DECLARATION.finditer(text, line_end + 1, unclosed):
        if not any(a <= k.end() - 1 < b for a, b in comments):
            return k.start()
    return unclosed  # not into a comment that never ends: that is an error of its own


def _statement_around(text: str, at: int, width: int, before_token: bool) -> tuple[int, int]:
    """(start, end) offsets of what to blank for the error at `at`: from after the last
    `;`, `{` or `}` before it (comments skipped) to the `;` that ends its statement, the
    `}` of a block it opened (and of an `else` or `or` part after that), or the `}` that
    closes the block around it (kept); between declarations, to the next one.
    `before_token`: up to `at` only."""
    marks = [(k.start(), k.group()) for k in _BOUNDARY.finditer(text) if k.group() in ";{}"]
    start = max((k + 1 for k, _ in marks if k < at), default=0)
    if before_token:
        return start, max(at, start)
    if sum(1 if ch == "{" else -1 for k, ch in marks if k < start and ch != ";") <= 0:
        return start, max(_next_declaration(text, at), at + width)
    depth, end = 0, len(text)
    for k, ch in marks:
        if k < at:
            continue
        if ch == "{":
            depth += 1
        elif ch == ";" and depth == 0:
            end = k + 1
            if not _GOES_ON.match(text, k + 1):
                break
        elif ch == "}":
            if depth == 0:
                end = k
                break
            depth -= 1
            if depth == 0 and not _GOES_ON.match(text, k + 1):
                end = k + 1
                break
    return start, max(end, at + width)


def _check_nesting(tree: lark.Tree, file: str) -> None:
    """Refuses a tree deeper than MAX_NESTING (walked with a stack: the tree may be far
    deeper than Python's recursion limit), pointing at the first construct that passes
    the limit, with the depth of the whole tree."""
    stack = [(tree, 1, tree.meta)]
    deepest, first = 0, None
    while stack:
        node, depth, where = stack.pop()
        if not node.meta.empty:
            where = node.meta
        if depth > deepest:
            deepest = depth
        if depth == MAX_NESTING + 1 and first is None:
            first = where
        stack.extend((c, depth + 1, where) for c in reversed(node.children) if isinstance(c, lark.Tree))
    if first is not None:
        span = Span(file, first.line, first.column, first.line, first.column + 1) if not first.empty \
            else Span(file, 1, 1, 1, 1)
        raise SpecError(span, f"the spec nests too deeply: {deepest} levels; the limit is {MAX_NESTING}",
                        "each statement inside another, and each operator, call or index of an "
                        "expression, is a level; split a long chain (`a + b + ...`, `c ? x : ...`, "
                        "`if` ... `if`) over several constants, `fn`s, statements or properties", "TR107")


def _syntax_error(e: lark.exceptions.UnexpectedInput, source: str, file: str) -> SpecError:
    unclosed = _unclosed_comment(source)
    if unclosed is not None and unclosed <= _error_offset(e, source):
        line = source.count("\n", 0, unclosed) + 1
        col = unclosed - (source.rfind("\n", 0, unclosed) + 1) + 1
        return SpecError(Span(file, line, col, line, col + 2), "unclosed comment",
                         "a `/*` comment ends at the next `*/`, and this one has none", "TR102")
    nested = _nested_comment(source, _error_offset(e, source))
    expected = sorted(_accepted(e))
    words = sorted({_TOKEN_WORDS.get(t, _describe_terminal(t)) for t in expected})
    if isinstance(e, lark.exceptions.UnexpectedEOF) or (
        isinstance(e, lark.exceptions.UnexpectedToken) and e.token.type == "$END"
    ):
        line = source.count("\n") + 1
        col = len(source.rsplit("\n", 1)[-1]) + 1
        if source.endswith("\n"):
            line, col = line - 1, len(source.rstrip("\n").rsplit("\n", 1)[-1]) + 1
        span = Span(file, max(line, 1), max(col, 1), max(line, 1), max(col, 1))
        hint: str | None = "a block or declaration is not closed" + (
            f"; expected {_join(words)}" if words else "")
        if "'}'" in words:
            hint = "a '{' is never closed: add the missing '}'"
        return SpecError(span, "unexpected end of file", hint, "TR105")
    line, col = getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        pos = _error_offset(e, source)
        ch = source[pos] if pos < len(source) else "?"
        span = Span(file, line, col, line, col + 1)
        return SpecError(span, f"unexpected character {ch!r}",
                         "names are letters, digits and '_'; comments are // or /* */", "TR104")
    assert isinstance(e, lark.exceptions.UnexpectedToken), e  # lark's third kind (EOF and characters: above)
    tok = e.token
    width = max(1, len(str(tok)))
    span = Span(file, line, col, line, col + width)
    if nested is not None:
        opened, inner = (_line_col(source, k) for k in nested)
        return SpecError(span, f"unexpected {str(tok)!r} after a comment that ended early",
                         f"comments do not nest: the `/*` at {inner} is plain text inside the comment opened "
                         f"at {opened}, which ended at its first `*/`; use `//` for the inner one", "TR103")
    hint = f"expected {_join(words)}" if words else None
    lines = source_lines(source)
    line_text = lines[line - 1] if 0 < line <= len(lines) else ""
    first_on_line = line_text[: col - 1].strip() == ""
    shown = str(tok)
    if "SEMICOLON" in expected:  # the one token that ends what came before: say it, not the list
        hint = "missing ';' at the end of the previous line?" if first_on_line else \
            "a declaration or simple statement ends with ';'"
        return SpecError(span, f"expected ';' before {shown!r}" if shown else "expected ';'", hint, "TR101")
    if getattr(tok, "type", "") == "PINNED" and line_text.lstrip().startswith("hrtimer"):
        return SpecError(span, "a `pinned` hrtimer has one callback per CPU",
                         "write `hrtimer NAME[N] pinned { ... }` (N the model's CPUs): it is queued on the CPU "
                         "that starts it; `hrtimer NAME on cpu C` is queued on CPU C only")
    if str(tok) == "eventually" and line_text[: col - 1].rstrip().endswith(":"):
        return SpecError(span, "`eventually P` alone is not a property",
                         "write `always eventually P` (P keeps coming back), `always (Q -> eventually P)`, "
                         "or `reachable NAME: P;` (P holds in some reachable state)", "TR108")
    return SpecError(span, f"unexpected {shown!r}" if shown else "unexpected input", hint)


def _accepted(e: lark.exceptions.UnexpectedInput) -> set[str]:
    """The terminals the parser would take where it stopped. LALR's `expected` set of a
    state may hold lookaheads merged from other contexts (a ';' inside parentheses);
    the interactive parser tries each one, so the hint names only real continuations."""
    ip = getattr(e, "interactive_parser", None)
    if ip is not None:
        try:
            return set(ip.accepts()) - {"$END"} | ({"$END"} & set(getattr(e, "expected", ()) or ()))
        except Exception:
            pass
    return set(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])


def _line_col(source: str, offset: int) -> str:
    line = source.count("\n", 0, offset) + 1
    return f"{line}:{offset - (source.rfind(chr(10), 0, offset) + 1) + 1}"


def _nested_comment(source: str, before: int) -> tuple[int, int] | None:
    """(where it opened, where the inner `/*` is) of the last `/* */` comment before
    offset `before` that holds another `/*`: the likely cause of a syntax error after it."""
    found, i = None, 0
    while True:
        i = min((k for k in (source.find("//", i), source.find("/*", i)) if k >= 0), default=-1)
        if i < 0 or i >= before:
            return found
        if source.startswith("//", i):
            nl = source.find("\n", i)
            if nl < 0:
                return found
            i = nl + 1
            continue
        end = source.find("*/", i + 2)
        if end < 0:
            return found
        inner = source.find("/*", i + 2, end)
        stray = source.find("*/", end + 2)  # where the writer meant the comment to end
        if inner >= 0 and stray >= 0 and before <= stray + 2:
            found = (i, inner)
        i = end + 2


def _unclosed_comment(source: str) -> int | None:
    """The offset of a `/*` that no `*/` closes, if any (the language has no strings, so
    `//` and `/*` always start comments)."""
    i = 0
    while True:
        i = min((k for k in (source.find("//", i), source.find("/*", i)) if k >= 0), default=-1)
        if i < 0:
            return None
        if source.startswith("//", i):
            nl = source.find("\n", i)
            if nl < 0:
                return None
            i = nl + 1
        else:
            end = source.find("*/", i + 2)
            if end < 0:
                return i
            i = end + 2


def _error_offset(e: lark.exceptions.UnexpectedInput, source: str) -> int:
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        assert e.pos_in_stream is not None  # the lexer sets it (lark types it on the base class, as Optional)
        return e.pos_in_stream
    tok = getattr(e, "token", None)
    pos = getattr(tok, "start_pos", None)
    return pos if isinstance(pos, int) else len(source)


def _describe_terminal(name: str) -> str:
    pattern = _parser().get_terminal(name).pattern if name in _terminal_names() else None
    if pattern is not None and pattern.type == "str":
        return repr(pattern.value)
    return name.lower()


@functools.lru_cache(maxsize=1)
def _terminal_names() -> frozenset[str]:
    return frozenset(t.name for t in _parser().terminals)


def _join(words: list[str]) -> str:
    if len(words) > 8:
        words = words[:8] + ["..."]
    return ", ".join(words)


def literal_value(text: str, span: Span) -> int:
    """The value of an integer literal (decimal or 0x hex) at most MAX_LITERAL; the length
    is checked first, as Python refuses to convert decimal text of more than 4300 digits."""
    hexa = text[:2] in ("0x", "0X")
    digits = text[2:] if hexa else text
    if not hexa and text.startswith("0") and text.strip("0"):  # Python's int(text, 0) refuses it
        raise SpecError(span, f"integer literal {_shorten(text)} starts with 0",
                        f"C would read it as octal, and this language has no octal: write "
                        f"{_shorten(text.lstrip('0'))} or a 0x literal")
    if len(digits.lstrip("0")) > (16 if hexa else 20) or int(text, 0) > MAX_LITERAL:
        raise SpecError(span, f"integer literal {_shorten(text)} is larger than {MAX_LITERAL} (2^64 - 1)",
                        "no type holds a larger value (u64 is the widest)")
    return int(text, 0)


def _shorten(text: str) -> str:
    return text if len(text) <= 30 else f"{text[:12]}...{text[-6:]} ({len(text)} characters)"


def _span(file: str, meta) -> Span:
    return Span(file, meta.line, meta.column, meta.end_line, meta.end_column)


def _tok_span(file: str, tok: Token) -> Span:
    line, col = tok.line, tok.column
    assert line is not None and col is not None, tok  # the lexer positions every token it makes
    return Span(file, line, col, tok.end_line or line, tok.end_column or col + len(tok))


@record
class _Clock:
    """An hrtimer's `clock NAME` clause, until hrtimer_decl folds it into the declaration."""

    name: str
    span: Span


@v_args(meta=True)
class _Builder(Transformer):
    """Builds ast nodes bottom-up; one method per named grammar rule."""

    def __default__(self, data, children, meta):
        # a rule the grammar gained without a method here would reach the resolver as a
        # lark Tree; say so where it is made
        raise AssertionError(f"internal error: the parser has no builder for grammar rule '{data}'")

    def start(self, m, c):
        return tuple(c)

    def __init__(self, file: str):
        super().__init__()
        self.file = file

    def sp(self, meta) -> Span:
        return _span(self.file, meta)

    def ts(self, tok) -> Span:
        return _tok_span(self.file, tok)

    # -- declarations
    def model_decl(self, m, c):
        return ast.ModelDecl(self.sp(m), str(c[0]))

    def memory_decl(self, m, c):
        return ast.MemoryDecl(self.sp(m), str(c[0]), c[1] if len(c) > 1 else None)

    def const_decl(self, m, c):
        return ast.ConstDecl(self.sp(m), str(c[0]), c[1])

    def enum_decl(self, m, c):
        return ast.EnumDecl(self.sp(m), str(c[0]), tuple((str(t), self.ts(t)) for t in c[1:]))

    def var_decl(self, m, c):
        name, rest = c[0], c[1:]
        dim = rest.pop(0) if rest and isinstance(rest[0], ast.Dim) else None
        typ = rest.pop(0)
        init = rest.pop(0) if rest else None
        return ast.VarDecl(self.ts(name), str(name), dim, typ, init)

    local_decl = var_decl

    def ghost_decl(self, m, c):
        return dataclasses.replace(self.var_decl(m, c), ghost=True)

    def waitqueue_decl(self, m, c):
        return ast.WaitQueueDecl(self.ts(c[0]), str(c[0]), c[1] if len(c) > 1 else None)

    def dims(self, m, c):
        d = c[0]
        if isinstance(d, tuple):
            return ast.Dim(self.sp(m), None, d[0], d[1])
        return ast.Dim(self.sp(m), d, None, None)

    def range(self, m, c):
        return (c[0], c[1])

    def bool_type(self, m, c):
        return ast.BoolType(self.sp(m))

    def named_type(self, m, c):
        return ast.NamedType(self.sp(m), str(c[0]))

    def range_type(self, m, c):
        lo, hi = c[0]
        return ast.RangeType(self.sp(m), lo, hi)

    def bitset_type(self, m, c):
        d = c[0]
        if isinstance(d, tuple):
            return ast.BitsetType(self.sp(m), None, d[0], d[1])
        return ast.BitsetType(self.sp(m), d, None, None)

    def list_init(self, m, c):
        return ast.ListInit(self.sp(m), tuple(x for x in c if x is not None))

    def any_init(self, m, c):
        return ast.AnyInit(self.sp(m))

    def process_decl(self, m, c, interrupt: bool = False):
        c = list(c)
        unfair = preemptible = False
        while c and (c[0] is None or (isinstance(c[0], Token) and c[0].type in ("PREEMPTIBLE", "UNFAIR"))):
            tok = c.pop(0)
            preemptible |= tok is not None and tok.type == "PREEMPTIBLE"
            unfair |= tok is not None and tok.type == "UNFAIR"
        name = c.pop(0)
        dim = c.pop(0) if c and (isinstance(c[0], ast.Dim) or c[0] is None) else None
        cpu = cpu_span = None
        if c and (c[0] is None or isinstance(c[0], tuple)):
            on = c.pop(0)
            if on is not None:
                cpu_span, cpu = on
        locals_ = tuple(x for x in c if isinstance(x, ast.VarDecl))
        notifiers = tuple(x for x in c if isinstance(x, ast.Notifier))
        body = tuple(x for x in c if isinstance(x, ast.Stmt))
        end = Span(self.file, m.end_line, max(1, m.end_column - 1), m.end_line, m.end_column)
        return ast.ProcessDecl(self.ts(name), str(name), unfair, dim, locals_, body, end, cpu, cpu_span,
                               interrupt, preemptible, notifiers)

    def interrupt_decl(self, m, c):
        c = list(c)
        posted = any(isinstance(x, Token) and x.type == "POSTED" for x in c)
        c = [x for x in c if not (isinstance(x, Token) and x.type == "POSTED")]  # its placeholder None is ignored
        return dataclasses.replace(self.process_decl(m, c, interrupt=True), posted=posted)

    def hrtimer_decl(self, m, c):
        c = list(c)
        pinned = any(isinstance(x, Token) and x.type == "PINNED" for x in c)
        clock = next((x for x in c if isinstance(x, _Clock)), None)
        c = [x for x in c if not (isinstance(x, Token) and x.type == "PINNED") and not isinstance(x, _Clock)]
        return dataclasses.replace(self.process_decl(m, c, interrupt=True), hrtimer=True, pinned=pinned,
                                   clock=None if clock is None else clock.name,
                                   clock_span=None if clock is None else clock.span)

    def timer_clock(self, m, c):
        return _Clock(str(c[0]), self.ts(c[0]))

    def guest_decl(self, m, c):
        c = list(c)
        thread = c.pop(1)
        return dataclasses.replace(self.process_decl(m, c), guest_of=str(thread), guest_of_span=self.ts(thread))

    def on_cpu(self, m, c):
        if str(c[0]) != "cpu":
            raise SpecError(self.ts(c[0]), f"expected `on cpu N`, not `on {c[0]}`",
                            "a thread names its first CPU: `process vcpu on cpu 0 { ... }`")
        return (self.sp(m), c[1])

    def notifier(self, m, c):
        on, name = c[0], c[1]
        if str(on) != "on" or str(name) not in ("sched_out", "sched_in"):
            bad = name if str(on) == "on" else on
            raise SpecError(self.ts(bad), f"unknown notifier `{on} {name}`",
                            "a thread's preempt notifiers are `on sched_out { ... }` and `on sched_in { ... }`")
        return ast.Notifier(self.ts(name), str(name), c[2])

    def cpus_decl(self, m, c):
        return ast.CpusDecl(self.sp(m), "cpus", c[0])

    def preemptions_decl(self, m, c):
        return ast.PreemptionsDecl(self.sp(m), "preemptions", c[0])

    def percpu_decl(self, m, c):
        name, rest = c[0], list(c[1:])
        typ = rest.pop(0)
        init = rest.pop(0) if rest else None
        return ast.VarDecl(self.ts(name), str(name), None, typ, init, percpu=True)

    def inline_decl(self, m, c):
        params = tuple(str(p) for p in c[1:-1] if p is not None)
        return ast.InlineDecl(self.ts(c[0]), str(c[0]), params, c[-1])

    def fn_decl(self, m, c):
        name, rest = c[0], list(c[1:])
        body = rest.pop()
        result = rest.pop() if rest and isinstance(rest[-1], ast.TypeExpr) or (rest and rest[-1] is None) else None
        params = tuple(p for p in rest if isinstance(p, ast.Param))
        return ast.FnDecl(self.ts(name), str(name), params, result, body)

    def param(self, m, c):
        return ast.Param(self.sp(m), str(c[0]), c[1] if len(c) > 1 else None)

    def invariant_decl(self, m, c):
        return ast.InvariantDecl(self.ts(c[0]), str(c[0]), c[1])

    def reachable_decl(self, m, c):
        return ast.ReachableDecl(self.ts(c[0]), str(c[0]), c[1])

    def final_decl(self, m, c):
        return ast.FinalDecl(self.ts(c[0]), str(c[0]), c[1])

    def property_decl(self, m, c):
        trigger, goal = c[1]
        return ast.PropertyDecl(self.ts(c[0]), str(c[0]), trigger, goal)

    def leads_to(self, m, c):
        return (c[0], c[1])

    def always_eventually(self, m, c):
        return (None, c[0])

    def variant_decl(self, m, c):
        overrides = tuple(x for x in c[1:] if isinstance(x, ast.Override))
        expects = tuple(x for x in c[1:] if isinstance(x, ast.ExpectDecl))
        memory = tuple(x for x in c[1:] if isinstance(x, ast.MemoryDecl))
        return ast.VariantDecl(self.ts(c[0]), str(c[0]), overrides, expects, memory)

    def override(self, m, c):
        return ast.Override(self.ts(c[0]), str(c[0]), c[1])

    def expect_decl(self, m, c):
        return ast.ExpectDecl(self.sp(m), tuple((str(t), self.ts(t)) for t in c))

    def lemma_decl(self, m, c):
        params = tuple(x for x in c[1:-1] if isinstance(x, ast.Param))
        return ast.LemmaDecl(self.ts(c[0]), str(c[0]), params, c[-1])

    # -- statements
    def block(self, m, c):
        return ast.Block(self.sp(m), tuple(c))

    def lvalue(self, m, c):
        return ast.LValue(self.sp(m), str(c[0]), c[1] if len(c) > 1 else None)

    def set_value(self, m, c):
        return ast.ListInit(self.sp(m), tuple(x for x in c if x is not None))

    def assign_stmt(self, m, c):
        return ast.Assign(self.sp(m), c[0], c[1])

    def if_stmt(self, m, c):
        return ast.If(self.sp(m), c[0], c[1], c[2] if len(c) > 2 else None)

    def while_stmt(self, m, c):
        return ast.While(self.sp(m), c[0], c[1])

    def loop_stmt(self, m, c):
        return ast.Loop(self.sp(m), c[0])

    def break_stmt(self, m, c):
        return ast.Break(self.sp(m))

    def continue_stmt(self, m, c):
        return ast.Continue(self.sp(m))

    def labeled_stmt(self, m, c):
        return ast.Labeled(self.sp(m), str(c[0]), self.ts(c[0]), c[1])

    def goto_stmt(self, m, c):
        return ast.Goto(self.sp(m), str(c[0]))

    def await_stmt(self, m, c):
        return ast.Await(self.sp(m), c[0])

    def atomic_stmt(self, m, c):
        return ast.Atomic(self.sp(m), c[0])

    def preemptible_stmt(self, m, c):
        return ast.Preemptible(self.sp(m), c[-1])

    def choose_stmt(self, m, c):
        # `or fair { B }` is the branch `{ fair { B } }`: the branch's first step is the action
        return ast.Choose(self.sp(m), tuple(b if isinstance(b, ast.Block) else ast.Block(b.span, (b,)) for b in c))

    def fair_stmt(self, m, c):
        strong = isinstance(c[0], Token) and c[0].type == "STRONGLY"
        return ast.Fair(self.sp(m), strong, c[-1])

    def stutter_stmt(self, m, c):
        return ast.Stutter(self.sp(m))

    def assert_stmt(self, m, c):
        if len(c) == 2:
            return ast.Assert(self.sp(m), str(c[0]) if c[0] is not None else None, c[1])
        return ast.Assert(self.sp(m), None, c[0])

    def skip_stmt(self, m, c):
        return ast.Skip(self.sp(m))

    def return_stmt(self, m, c):
        return ast.Return(self.sp(m))

    def call_stmt(self, m, c):
        return ast.CallStmt(self.sp(m), c[0])

    # -- expressions
    def implies_expr(self, m, c):
        return ast.Binary(self.sp(m), "->", c[0], c[1])

    def cond_expr(self, m, c):
        return ast.Conditional(self.sp(m), c[0], c[1], c[2])

    def binop(self, m, c):
        return ast.Binary(self.sp(m), str(c[1]), c[0], c[2])

    def unop(self, m, c):
        return ast.Unary(self.sp(m), str(c[0]), c[1])

    def index(self, m, c):
        return ast.Index(self.sp(m), str(c[0]), self.ts(c[0]), c[1])

    def at_label(self, m, c):
        name, idx = c[0]
        return ast.AtLabel(self.sp(m), str(name), self.ts(name), idx, str(c[1]), self.ts(c[1]))

    def local_ref(self, m, c):
        name, idx = c[0]
        return ast.LocalRef(self.sp(m), str(name), self.ts(name), idx, str(c[1]), self.ts(c[1]))

    def proc_ref(self, m, c):
        return (c[0], c[1] if len(c) > 1 else None)

    def call(self, m, c):
        args = tuple(a for a in c[1:] if a is not None)
        return ast.Call(self.sp(m), str(c[0]), self.ts(c[0]), args)

    def number(self, m, c):
        return ast.Number(self.sp(m), literal_value(str(c[0]), self.sp(m)))

    def true(self, m, c):
        return ast.BoolLit(self.sp(m), True)

    def false(self, m, c):
        return ast.BoolLit(self.sp(m), False)

    def self_ref(self, m, c):
        return ast.SelfRef(self.sp(m))

    def name(self, m, c):
        return ast.Name(self.sp(m), str(c[0]))

    def quant(self, m, c):
        return ast.Quantifier(self.sp(m), str(c[0]), str(c[1]), c[2], c[3], c[4])
