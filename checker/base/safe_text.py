"""Outside text made safe to echo: a file name, a comment, a name or a value read from a
trace file can hold ESC, BEL or an OSC sequence that a terminal obeys, a carriage
return that overwrites what was printed, or a bidirectional override that makes a
review show something else than the bytes. Every place that prints or writes such text
passes it through `printable`, so that it shows as visible escapes (`\\x1b`) instead.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL, line and paragraph separators, and the invisible format
# characters that reorder or hide text (bidirectional embeddings, overrides and
# isolates, zero-width characters, the byte order mark, interlinear annotations).
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
_ONE_LINE = re.compile(f"[\t\n{_UNSAFE}]")
_LINES = re.compile(f"[{_UNSAFE}]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c == 9:
        return "\\t"
    if c == 10:
        return "\\n"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str, multiline: bool = False) -> str:
    """`text` with every control or invisible character shown as an escape; line breaks
    and tabs are kept when `multiline`, else escaped too (a name, a path, a table cell)."""
    return (_LINES if multiline else _ONE_LINE).sub(_escape, text)


def python_comment(text: str) -> str:
    """Source text made safe for a one-line Python comment in generated code: one line,
    printable ASCII only, so that no name or statement text can end the comment."""
    return "".join(ch for ch in " ".join(text.split()) if ch.isprintable() and ch.isascii())
