"""Wrapping at token boundaries: cells, table columns and whole lines fit a width
without cutting the value a reader needs."""

from __future__ import annotations


KEEP = "\x00"  # a space wrap_cell must not break at (it is put back after wrapping)


def clip(text: str, width: int) -> str:
    """One line of at most `width` columns, cut at a token boundary (then `..`)."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - 2)
    if cut <= width // 3:
        cut = _cut(text[:width - 2], width - 2) or width - 2
    return text[:cut].rstrip() + " .."


def share_columns(wants: list[int], room: int, least: int) -> list[int]:
    """Column widths: each column gets what its longest text wants, if the room allows;
    otherwise narrow columns keep their width and the wide ones share the rest evenly."""
    wants = [max(least, w) for w in wants]
    widths = [0] * len(wants)
    left = room
    order = sorted(range(len(wants)), key=lambda i: wants[i])
    for k, i in enumerate(order):
        widths[i] = max(least, min(wants[i], left // (len(wants) - k)))
        left -= widths[i]
    return widths


_SOFT_BREAKS = ",;.([{=&|"  # break after these inside a long token ...
_LAST_RESORT = "_>"  # ... or inside a name (`lapic_timer_` / `->mode`) before cutting letters


def _cut(word: str, room: int, names: bool = True) -> int:
    """Where to break a long token to fit `room`: after punctuation, else (`names`)
    after `_` inside a name."""
    cut = max(word.rfind(ch, 0, room) + 1 for ch in _SOFT_BREAKS)
    if cut <= 3 and names:  # between C tokens where there is a place; inside a name only if not
        cut = max([cut] + [word.rfind(ch, 0, room) + 1 for ch in _LAST_RESORT])
    return cut


def wrap_cell(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """Wrap text to `width` columns: at spaces where possible, inside a long token after
    punctuation (`.`, `,`, `(` ...), then after `_`, and only as a last resort in the
    middle of a name."""
    out: list[str] = []
    line = first
    prefix_len = len(first)
    for word in text.split():
        while True:
            room = width - len(line) - (1 if len(line) > prefix_len else 0)
            if len(word) <= room:
                line = f"{line} {word}" if len(line) > prefix_len else line + word
                break
            too_long = len(word) > width - len(rest)  # it fits on no line: a name may be split
            cut = _cut(word, room, names=too_long) if room > 0 else 0  # a full line: nothing fits after it
            if len(line) > prefix_len:
                # a word too long for any line, or one that would leave this line nearly
                # empty, is split here if it breaks well (between C tokens, never inside a
                # name that fits on a line of its own); else it starts a new line
                if (too_long or len(line.strip()) <= width // 4) and cut > 3:
                    out.append(f"{line} {word[:cut]}")
                    line, prefix_len = rest, len(rest)
                    word = word[cut:]
                    continue
                out.append(line)
                line, prefix_len = rest, len(rest)
                continue
            if cut <= 0:
                cut = max(room, 1)
            out.append(line + word[:cut])
            line, prefix_len = rest, len(rest)
            word = word[cut:]
    if len(line) > prefix_len or not out:
        out.append(line)
    return out


def wrapped(text: str, width: int) -> list[str]:
    """Each line within `width` columns, wrapped at token boundaries, its continuation
    lines indented two columns more than it."""
    out = []
    for line in text.splitlines():
        pad = " " * (len(line) - len(line.lstrip(" ")))
        out += wrap_cell(line.strip(), width, pad, pad + "  ") if len(line) > width else [line]
    return out


