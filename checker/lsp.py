"""The language server, `timerace-lsp`: the checker's errors, hover, go-to-definition and
completion in an editor, over the Language Server Protocol on stdio (pygls).

It adds no stage of its own: diagnostics are what `pipeline.diagnose` reports (the
errors `check` prints, with their codes and hints, and the resolver's warnings); a
built-in's hover is its row of the one primitives table; a declaration's hover and
definition are read off the parsed tree. Names are looked up in the enclosing process,
inline or fn first, then among the top-level declarations, as the language scopes them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from enum import Enum

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import __version__
from .base.errors import Span, SpecError, display_line, source_lines
from .front import ast
from .front.parse import parse
from .pipeline import diagnose
from .semantics.primitives import ALIASES, BUILTINS, ordering, signature
from .base.record import record

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Kind(Enum):
    """What a declared name is, as a hover says it."""

    CONSTANT = "constant"
    ENUM = "enum"
    MEMBER = "enum member"
    VARIABLE = "variable"
    WAIT_QUEUE = "wait queue"
    PROCESS = "process"
    INLINE = "inline"
    FN = "fn"
    PROPERTY = "property"
    VARIANT = "variant"
    LEMMA = "lemma"
    LABEL = "label"
    LOCAL = "local variable"
    PARAM = "parameter"
    NOTIFIER = "notifier"


_KINDS = ((ast.ConstDecl, Kind.CONSTANT), (ast.EnumDecl, Kind.ENUM), (ast.VarDecl, Kind.VARIABLE),
          (ast.WaitQueueDecl, Kind.WAIT_QUEUE), (ast.ProcessDecl, Kind.PROCESS), (ast.InlineDecl, Kind.INLINE),
          (ast.FnDecl, Kind.FN), (ast.InvariantDecl, Kind.PROPERTY), (ast.ReachableDecl, Kind.PROPERTY),
          (ast.FinalDecl, Kind.PROPERTY), (ast.PropertyDecl, Kind.PROPERTY), (ast.VariantDecl, Kind.VARIANT),
          (ast.LemmaDecl, Kind.LEMMA))  # not the model's name: nothing refers to it, a process may share it


@record
class Symbol:
    name: str
    kind: Kind
    span: Span  # the name where it is declared
    decl: Span  # the whole declaration: a process, inline or fn to its closing brace
    scope: Span | None = None  # the process, inline or fn it belongs to (its decl); None: top level


def symbols(spec: ast.Spec) -> list[Symbol]:
    """Every name the spec declares, with where."""
    lines = source_lines(spec.source)
    out = []
    for d in spec.items:
        kind = next((k for t, k in _KINDS if isinstance(d, t)), None)
        if kind is None or not isinstance(d, ast.Decl):
            continue
        out.append(Symbol(d.name, kind, _name_span(lines, d.span, d.name), _extent(d)))
        if isinstance(d, ast.EnumDecl):
            out += [Symbol(name, Kind.MEMBER, span, d.span) for name, span in d.members]
        if isinstance(d, (ast.ProcessDecl, ast.InlineDecl, ast.FnDecl, ast.LemmaDecl)):
            out += _scoped(d, lines)
    return out


def _extent(d: ast.Decl) -> Span:
    """A declaration from its name to its end (a declaration's span is its name's)."""
    end = d.end_span if isinstance(d, ast.ProcessDecl) else getattr(d, "body", None)
    end = end.span if isinstance(end, (ast.Stmt, ast.Expr)) else end
    if end is None:
        return d.span
    return Span(d.span.file, d.span.line, d.span.col, end.end_line, end.end_col)


def _scoped(d: ast.Decl, lines) -> list[Symbol]:
    """The labels, locals, parameters and notifiers of a process, inline or fn."""
    out = []
    extent = _extent(d)
    if isinstance(d, ast.ProcessDecl):
        out += [Symbol(v.name, Kind.LOCAL, _name_span(lines, v.span, v.name), v.span, extent) for v in d.locals]
        out += [Symbol(n.name, Kind.NOTIFIER, _name_span(lines, n.span, n.name), n.span, extent)
                for n in d.notifiers]
    if isinstance(d, ast.InlineDecl):  # parameters are names only: the first after the inline's own
        after = _name_span(lines, d.span, d.name)
        for p in d.params:
            span = _name_span(lines, Span(after.file, after.end_line, after.end_col, extent.end_line,
                                          extent.end_col), p)
            out.append(Symbol(p, Kind.PARAM, span, span, extent))
            after = span
    if isinstance(d, (ast.FnDecl, ast.LemmaDecl)):
        out += [Symbol(p.name, Kind.PARAM, _name_span(lines, p.span, p.name), p.span, extent) for p in d.params]
    out += [Symbol(s.label, Kind.LABEL, s.label_span, s.span, extent) for s in _statements(d)
            if isinstance(s, ast.Labeled)]
    return out


def _statements(node):
    """Every statement under `node`, in source order."""
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        for x in value if isinstance(value, tuple) else (value,):
            if isinstance(x, (ast.Stmt, ast.Notifier)):
                if isinstance(x, ast.Stmt):
                    yield x
                yield from _statements(x)


def _name_span(lines, within: Span, name: str) -> Span:
    """Where `name` is first written as a whole word from the start of `within`."""
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
    for n in range(within.line, min(within.end_line, len(lines)) + 1):
        start = within.col - 1 if n == within.line else 0
        m = word.search(lines[n - 1], start)
        if m:
            return Span(within.file, n, m.start() + 1, n, m.end() + 1)
    return within


# ---- what is under the cursor ----------------------------------------------------


def word_at(source: str, line: int, col: int) -> tuple[str, Span] | None:
    """The name at 1-based (line, col), with its span."""
    lines = source_lines(source)
    if not 1 <= line <= len(lines):
        return None
    for m in _WORD.finditer(lines[line - 1]):
        if m.start() < col <= m.end() + 1 and m.start() + 1 <= col:
            return m.group(), Span("", line, m.start() + 1, line, m.end() + 1)
    return None


def _inside(span: Span, line: int, col: int) -> bool:
    return (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col)


def definition(spec: ast.Spec, source: str, line: int, col: int) -> Symbol | None:
    """The declaration of the name at (line, col): a label, local or parameter of the
    enclosing process (or of the process named before `@` / `.`), else a top-level name."""
    found = word_at(source, line, col)
    if found is None:
        return None
    name, at = found
    table = symbols(spec)
    scope = next((s.decl for s in table if s.scope is None and s.kind in (Kind.PROCESS, Kind.INLINE, Kind.FN,
                                                                           Kind.LEMMA)
                  and _inside(s.decl, line, col)), None)
    before = source_lines(source)[line - 1][:at.col - 1].rstrip()
    owner = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[[^\]]*\])?\s*[@.]$", before)
    if owner:  # `vcpu@label`, `vcpu[1].local`
        proc = next((s for s in table if s.scope is None and s.kind is Kind.PROCESS and s.name == owner.group(1)),
                    None)
        if proc is not None:
            scope = proc.decl
    for s in table:
        if s.name == name and s.scope is not None and s.scope == scope:
            return s
    return next((s for s in table if s.name == name and s.scope is None), None)


def hover_text(spec: ast.Spec | None, source: str, line: int, col: int) -> str | None:
    """Markdown for the name at (line, col): a built-in's row, or a declaration."""
    found = word_at(source, line, col)
    if found is None:
        return None
    name = found[0]
    sym = definition(spec, source, line, col) if spec is not None else None
    if sym is None or spec is None:
        return builtin_text(name)
    lines = source_lines(spec.source)
    said = display_line(lines[sym.span.line - 1]).strip() if 0 < sym.span.line <= len(lines) else sym.name
    above: list[str] = []  # the comment lines right above a top-level declaration say what it models
    n = sym.span.line - 1
    while sym.scope is None and n >= 1 and lines[n - 1].lstrip().startswith("//") and len(above) < 12:
        above.insert(0, lines[n - 1].strip())
        n -= 1
    code = "\n".join(above + [said])
    return f"{sym.kind.value} `{sym.name}` (line {sym.span.line})\n\n```timerace\n{code}\n```"


def builtin_text(name: str) -> str | None:
    """A built-in's signature, what it does, the kernel's ordering and what x86 runs."""
    p = BUILTINS.get(ALIASES.get(name, name))
    if p is None:
        return None
    alias = f" (the kernel's `{name}`, here `{p.name}`)" if name != p.name else ""
    return (f"```timerace\n{signature(p)}\n```\n{p.doc}{alias}\n\n"
            f"kernel ordering: {ordering(p)}; x86: {p.x86.value}; class: {p.cls.value}")


# ---- the server ------------------------------------------------------------------


def _range(span: Span) -> types.Range:
    """An LSP range (0-based) for a span; a span with no line (a whole file) is its start."""
    if span.line <= 0:
        return types.Range(types.Position(0, 0), types.Position(0, 0))
    end_line, end_col = (span.end_line, span.end_col) if span.end_line >= span.line else (span.line, span.col + 1)
    if (end_line, end_col) <= (span.line, span.col):
        end_line, end_col = span.line, span.col + 1
    return types.Range(types.Position(span.line - 1, max(span.col - 1, 0)),
                       types.Position(end_line - 1, max(end_col - 1, 0)))


def _only_in(variants: tuple[str, ...], every: tuple[str, ...]) -> str:
    """Which variants an error shows in, when not in all of them (a knob's other value)."""
    if not variants or set(variants) == set(every):
        return ""
    return f" (in variant{'s' if len(variants) > 1 else ''} {', '.join(variants)})"


def diagnostics(source: str, path: str) -> list[types.Diagnostic]:
    """The errors and warnings `check` would report for this text, as LSP diagnostics."""
    found = diagnose(source, path)
    out = []
    for e, variants in found.errors:
        span = e.span if e.span.file == path else Span(path, 0, 0, 0, 0)
        message = e.message + _only_in(variants, found.variants) + (f"\nhint: {e.hint}" if e.hint else "")
        out.append(types.Diagnostic(_range(span), message, severity=types.DiagnosticSeverity.Error,
                                    code=e.code or "TR001", source="timerace",
                                    data={"hint": e.hint} if e.hint else None))
    lines = source_lines(source)
    for line, message in found.warnings:  # the whole line: a warning names a declaration or statement
        width = len(lines[line - 1]) if 0 < line <= len(lines) else 0
        out.append(types.Diagnostic(_range(Span(path, line, 1, line, width + 1)), message,
                                    severity=types.DiagnosticSeverity.Warning, source="timerace"))
    return out


TYPING_PAUSE = 0.25  # seconds without an edit before a changed text is diagnosed


def _diagnose(source: str, path: str) -> tuple[ast.Spec | None, list[types.Diagnostic]]:
    """(the parsed text, for hover and definition; None if it does not parse, its
    diagnostics)."""
    try:
        spec: ast.Spec | None = parse(source, path)
    except (SpecError, RecursionError):
        spec = None
    return spec, diagnostics(source, path)


def server() -> LanguageServer:
    """The pygls server with the checker's features, not yet started."""
    ls = LanguageServer("timerace-lsp", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    parsed: dict[str, ast.Spec] = {}  # per document, its last text that parsed (hover still works mid-typo)

    def path_of(uri: str) -> str:
        return to_fs_path(uri) or uri

    latest: dict[str, int] = {}  # per document, the number of its newest edit

    async def refresh(uri: str, version: int | None, wait: float = 0.0) -> None:
        """Diagnoses the document's text as it is now, off the event loop (all variants of
        a large model take seconds), so that hover and definition answer meanwhile; an
        edit made while waiting or diagnosing supersedes this one, which then publishes
        nothing."""
        edit = latest[uri] = latest.get(uri, 0) + 1
        if wait:
            await asyncio.sleep(wait)  # typing: wait for a pause
        if latest.get(uri) != edit:
            return
        source, path = ls.workspace.get_text_document(uri).source, path_of(uri)
        loop = asyncio.get_running_loop()
        spec, found = await loop.run_in_executor(None, _diagnose, source, path)
        if latest.get(uri) != edit:
            return
        if spec is not None:
            parsed[uri] = spec
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=found,
                                                                            version=version))

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: types.DidOpenTextDocumentParams):
        await refresh(params.text_document.uri, params.text_document.version)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(params: types.DidChangeTextDocumentParams):
        await refresh(params.text_document.uri, params.text_document.version, TYPING_PAUSE)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(params: types.DidSaveTextDocumentParams):
        await refresh(params.text_document.uri, None)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams):
        parsed.pop(params.text_document.uri, None)
        latest[params.text_document.uri] = latest.get(params.text_document.uri, 0) + 1  # drop a pending one
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams):
        uri, pos = params.text_document.uri, params.position
        text = hover_text(parsed.get(uri), ls.workspace.get_text_document(uri).source, pos.line + 1,
                          pos.character + 1)
        if text is None:
            return None
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))

    @ls.feature(types.TEXT_DOCUMENT_DEFINITION)
    def goto(params: types.DefinitionParams):
        uri, pos = params.text_document.uri, params.position
        spec = parsed.get(uri)
        if spec is None:
            return None
        sym = definition(spec, ls.workspace.get_text_document(uri).source, pos.line + 1, pos.character + 1)
        if sym is None:
            return None
        return types.Location(uri, _range(sym.span))

    @ls.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["_"]))
    def complete(params: types.CompletionParams):
        items = [types.CompletionItem(name, kind=types.CompletionItemKind.Function,
                                      detail=signature(BUILTINS[ALIASES.get(name, name)]),
                                      documentation=types.MarkupContent(types.MarkupKind.Markdown,
                                                                        builtin_text(name) or ""))
                 for name in sorted({*BUILTINS, *ALIASES})]
        spec = parsed.get(params.text_document.uri)
        if spec is not None:
            seen = set()
            for s in symbols(spec):
                if s.scope is None and s.name not in seen:
                    seen.add(s.name)
                    items.append(types.CompletionItem(s.name, kind=types.CompletionItemKind.Variable,
                                                      detail=s.kind.value))
        return types.CompletionList(is_incomplete=False, items=items)

    return ls


def main() -> None:  # pragma: no cover - the tests run it as a process
    server().start_io()


if __name__ == "__main__":  # pragma: no cover
    main()
