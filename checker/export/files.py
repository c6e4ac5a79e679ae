"""What the exporters share: which counterexamples a run has, what their files are
called, and how files are written so that the same run gives the same bytes.

Determinism is a contract of every exporter: output depends only on the result
objects (never on the clock, hash order or the machine), files are UTF-8 with `\\n`
line ends, and wall-clock times appear only when asked for (`--with-timing`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile

from ..results.trace import Counterexample, RunResult, Trace, VariantResult


def counterexamples(result: RunResult) -> list[tuple[VariantResult, Counterexample]]:
    """Every counterexample of a run, in report order: variants as checked, properties in
    declaration order, a variant's model error last."""
    out = []
    for v in result.variants:
        for o in v.outcomes:
            if o.counterexample is not None:
                out.append((v, o.counterexample))
        if v.model_error is not None:
            out.append((v, v.model_error))
    return out


def safe_name(name: str) -> str:
    """A name made safe for a file name (spec names already are, except `model error`)."""
    return re.sub(r"[^A-Za-z0-9_\-]+", "_", name).strip("_") or "_"


def variant_stem(result: RunResult, variant: str) -> str:
    return f"{safe_name(result.model)}.{safe_name(variant)}"


def file_stem(result: RunResult, variant: str, prop: str) -> str:
    """`<model>.<variant>.<property>`: one file per counterexample and format."""
    return f"{variant_stem(result, variant)}.{safe_name(prop)}"


def write_text(path: str, text: str) -> None:
    """Write UTF-8 with `\\n` line ends on every platform, creating the folder.

    Atomically: the text goes to a temporary file in the same folder, which then
    replaces `path`, so a full disk or an interrupt leaves the file of an earlier run
    whole instead of truncated. An OSError names `path`. A device or a pipe (`/dev/null`,
    `/dev/stdout`) is written in place: it cannot be replaced."""
    data = text.encode("utf-8")
    try:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(path, "wb") as f:
                f.write(data)
            return
        target = os.path.realpath(path)  # write through a symbolic link, as open() does
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())  # a full disk must show here, not after the old file is gone
            os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as e:
        if e.filename == path:
            raise
        raise OSError(e.errno, e.strerror or str(e), path) from e


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_output_paths(files: list[tuple[str, str]], folders: list[tuple[str, str]],
                       inputs: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with the places a run will write, before it starts: (flag, path) for
    each output file and each output folder. Two outputs to one file would lose one; a
    file that is a folder, a folder that is a file, or a folder that cannot be created
    or written in would fail only after the search. Folders may be shared (each format
    names its files with its own extension). No output may overwrite one of `inputs`."""
    problems = []
    seen: dict[str, str] = {}
    read = {os.path.realpath(p) for p in inputs}
    for flag, path in files:
        key = os.path.realpath(path)
        if key in read:
            problems.append(f"{flag} {path} would overwrite an input of this run")
            continue
        if key in seen:
            problems.append(f"{seen[key]} and {flag} both write {path}: give each its own file")
            continue
        seen[key] = flag
        if os.path.isdir(path):
            problems.append(f"cannot write {flag} {path}: it is a folder; give a file name")
        elif os.path.exists(path) and not os.path.isfile(path):  # a device or a pipe: written in place
            if not os.access(path, os.W_OK):
                problems.append(f"cannot write {flag} {path}: permission denied")
        else:
            problems += _writable_folder(flag, path, os.path.dirname(path))
    for flag, path in folders:  # folders may be shared: each format has its own file names
        key = os.path.realpath(path)
        if key in seen:
            problems.append(f"{seen[key]} writes the file {path} and {flag} a folder of that name")
            continue
        if os.path.exists(path) and not os.path.isdir(path):
            problems.append(f"cannot write {flag} {path}: it is a file, not a folder")
        else:
            problems += _writable_folder(flag, path, path)
    return problems


def _writable_folder(flag: str, path: str, folder: str) -> list[str]:
    """The nearest existing folder on the way to `folder` must be one we may write in
    (the missing ones are created)."""
    here = os.path.abspath(folder or ".")
    while not os.path.exists(here):
        here = os.path.dirname(here)
    if not os.path.isdir(here):
        return [f"cannot write {flag} {path}: {here} is a file, so no folder can be made in it"]
    if not os.access(here, os.W_OK | os.X_OK):
        return [f"cannot write {flag} {path}: no permission to write in {here}"]
    return []


def dump_json(doc, width: int = 100) -> str:
    """JSON with two-space indents, but any value that fits on its line stays on one
    line (`{"#bigint": "0"}`, short lists), so that traces stay readable in review."""
    return _dump(doc, 0, width) + "\n"


def _dump(x, indent: int, width: int, used: int = 0) -> str:
    """`x` at nesting `indent`, on a line of which `used` columns are already taken."""
    flat = json.dumps(x, ensure_ascii=False)
    if used + len(flat) <= width or not isinstance(x, (dict, list)) or not x:
        return flat
    pad = " " * (indent + 2)
    if isinstance(x, dict):
        items = []
        for k, v in x.items():
            head = f"{pad}{json.dumps(k, ensure_ascii=False)}: "
            items.append(head + _dump(v, indent + 2, width, len(head)))
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _dump(v, indent + 2, width, len(pad)) for v in x]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def race_key(cx: Counterexample) -> tuple:
    """What makes two counterexamples the same race (their steps), so that a view shows
    it once and names the others; a lemma's (its values are the point) or a violation in
    the initial state is never the same as another."""
    if not cx.trace.actions:
        return (id(cx),)
    return tuple((a.process, a.span, a.text, a.changes) for a in cx.trace.actions)


def steps_word(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def loop_back(t: Trace) -> str:
    """Where a lasso's loop goes back to, as every view numbers it: the step it repeats
    from (state N is the state after step N, so step N + 1 starts in it)."""
    start = t.length if t.loop_start is None else t.loop_start
    return f"back to step {start + 1}"


def shape(t: Trace) -> str:
    """How long a trace is, counted as the table counts it (`Trace.steps`), and for a
    lasso which steps loop: `32 steps, the last one a loop back to step 32, repeated
    for ever`."""
    if t.loop_start is None:
        return steps_word(t.steps) + (", the last one fails" if t.failure is not None else "")
    if t.loop_start == t.length:
        return f"{steps_word(t.length)}, then the run stays in its last state for ever"
    k = t.length - t.loop_start
    last = "the last one" if k == 1 else f"the last {k}"
    return f"{steps_word(t.length)}, {last} a loop {loop_back(t)}, repeated for ever"


def describe(cx: Counterexample) -> str:
    """`invariant both_counted`, `assert seen`, `deadlock`, `model error`."""
    return cx.kind if cx.property == cx.kind else f"{cx.kind} {cx.property}"
