"""Output files, stdout and replay inputs (issue 15, items 6, 9, 10, 12 and 14): what a
run writes is whole or not at all, goes where it was asked and nowhere else, cannot be
made to say what the run did not say, and no input file makes `check` crash."""

from __future__ import annotations

import contextlib
import copy
import errno
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from checker.cli import main
from helpers import MODELS, run_check, workdir


def _python_check(*args: str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "checker", *args], cwd=cwd, capture_output=True, **kw)


# ---- item 6: inputs and pipes that crashed --------------------------------------------


def _memory_cap():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_spec_file_that_never_ends_is_refused(tmp_path):
    """`check /dev/zero` read until memory ran out (a traceback, exit 1)."""
    r = _python_check("/dev/zero", cwd=tmp_path, timeout=120, preexec_fn=_memory_cap, text=True)
    assert r.returncode == 2, r.stderr[-500:]
    assert "/dev/zero" in r.stderr and "MiB" in r.stderr and "Traceback" not in r.stderr


def test_workers_without_an_upper_bound(capsys):
    """`--workers 1000` started a thousand processes (EMFILE on a big search)."""
    with pytest.raises(SystemExit) as e:
        main([str(MODELS / "counter.spec"), "--workers", "1000"])
    assert e.value.code == 2
    assert "--workers 1000: at most" in capsys.readouterr().err


def _into_a_closed_pipe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`check ARGS | head` where head has already gone: nobody reads stdout."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "checker", *args], cwd=tmp_path, stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


def test_dump_python_into_a_closed_pipe_broke(tmp_path):
    """`check ... --dump-python | head` ended in a BrokenPipeError traceback, exit 1."""
    shutil.copy(MODELS / "counter.spec", tmp_path)
    r = _into_a_closed_pipe(tmp_path, "counter.spec", "--dump-python")
    assert r.stderr == "" and r.returncode == 0  # what --dump-python returns; the reader left early


def test_replay_into_a_closed_pipe_broke(tmp_path):
    """`check ... --replay T | head` ended in a BrokenPipeError traceback."""
    shutil.copy(MODELS / "counter.spec", tmp_path)
    assert _python_check("counter.spec", "--json", "c.json", cwd=tmp_path).returncode == 0
    r = _into_a_closed_pipe(tmp_path, "counter.spec", "--replay", "c.json")
    assert r.stderr == "" and r.returncode == 0  # the replay's own verdict: it reproduces, as expected


def test_json_to_a_closed_pipe_is_quiet(tmp_path):
    shutil.copy(MODELS / "counter.spec", tmp_path)
    r = _into_a_closed_pipe(tmp_path, "counter.spec", "--json", "-")
    assert "Traceback" not in r.stderr and r.returncode == 0


@pytest.fixture
def traces(tmp_path):
    """A `--json` result and an ITF file of counter.spec's lost update, as documents."""
    rc, _, _ = run_check(tmp_path, "counter", "--json", "c.json", "--itf", "itf")
    assert rc == 0
    doc = json.loads((tmp_path / "c.json").read_text())
    itf = json.loads((tmp_path / "itf" / "counter.base.both_counted.itf.json").read_text())
    return doc, itf


def _replay(tmp_path: Path, text: str, model: str = "counter", *extra: str) -> tuple[int, str, str]:
    (tmp_path / "t.json").write_text(text)
    return run_check(tmp_path, model, "--replay", "t.json", *extra)


def _cx(doc: dict) -> dict:
    return doc["variants"][0]["outcomes"][0]["counterexample"]


def _refused(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    assert err.startswith("t.json: error: ") and "Traceback" not in err
    for w in words:
        assert w in err, err


def test_replay_of_a_statement_that_is_a_number(tmp_path, traces):
    """A step whose statement text was 5 raised TypeError (exit 1)."""
    doc, itf = traces
    _cx(doc)["trace"]["actions"][0]["text"] = 5
    _refused(*_replay(tmp_path, json.dumps(doc))[::2], "step 1", "statement is not text")
    itf["states"][1]["#meta"]["step"]["statement"] = 5
    _refused(*_replay(tmp_path, json.dumps(itf))[::2], "step 1", "statement is not text")


def test_replay_of_a_process_given_as_a_bigint(tmp_path, traces):
    """A process recorded as `{"#bigint": "1"}` raised TypeError: unhashable type (exit 1)."""
    doc, itf = traces
    itf["states"][2]["#meta"]["step"]["process"] = {"#bigint": "1"}
    _refused(*_replay(tmp_path, json.dumps(itf))[::2], "step 2", "process is not text")
    _cx(doc)["trace"]["actions"][0]["process"] = {"#bigint": "1"}
    _refused(*_replay(tmp_path, json.dumps(doc))[::2], "step 1", "process is not text")


def test_replay_of_a_number_of_5000_digits(tmp_path, traces):
    """A 5,000-digit number in a result file raised ValueError from json (exit 1)."""
    doc, itf = traces
    text = json.dumps(doc).replace('"x": 0', '"x": ' + "9" * 5000, 1)
    _refused(*_replay(tmp_path, text)[::2], "thousands of digits")
    itf["states"][0]["x"] = {"#bigint": "9" * 5000}
    _refused(*_replay(tmp_path, json.dumps(itf))[::2], "thousands of digits")


def test_replay_of_deep_nesting(tmp_path, traces):
    """Deep nesting raised RecursionError, reported as "the spec nests too deeply"."""
    doc, _ = traces
    _refused(*_replay(tmp_path, "[" * 100_000 + "]" * 100_000)[::2], "nests too deeply")
    deep = json.dumps(doc).replace('"x": 0', '"x": ' + "[" * 3000 + "]" * 3000, 1)
    _refused(*_replay(tmp_path, deep)[::2], "nests")


def test_replay_of_more_steps_than_states(tmp_path, traces):
    doc, _ = traces
    del _cx(doc)["trace"]["states"][-1]
    _refused(*_replay(tmp_path, json.dumps(doc))[::2], "4 states for 4 steps")


# ---- item 14: a trace whose values do not fit the model -------------------------------


def test_replay_of_values_that_do_not_fit_the_model_closes_the_race(tmp_path):
    """`"mode": false` for an enum said "this version closes the race it shows", exit 0."""
    rc, _, _ = run_check(tmp_path, "four", "--json", "f.json")
    doc = json.loads((tmp_path / "f.json").read_text())
    for o in doc["variants"][0]["outcomes"]:
        if o["property"] == "seen":
            for s in o["counterexample"]["trace"]["states"]:
                s["vars"]["mode"] = False
    rc, out, err = _replay(tmp_path, json.dumps(doc), "four", "--replay-pick", "seen")
    _refused(rc, err, "state 0: mode = false", "Mode: OUTSIDE_GUEST_MODE")
    assert "closes the race" not in out


@pytest.mark.parametrize("name, value, why", [
    ("x", True, "0..2"),
    ("x", 3, "0..2"),
    ("x", "two", "0..2"),
    ("inc[0].r", [0, 1], "0..2"),
])
def test_replay_of_each_kind_of_misfit(tmp_path, traces, name, value, why):
    doc, _ = traces
    _cx(doc)["trace"]["states"][0]["vars"][name] = value
    _refused(*_replay(tmp_path, json.dumps(doc))[::2], f"state 0: {name} = ", why)


def test_a_trace_that_fits_still_replays(tmp_path, traces):
    doc, itf = traces
    for text in (json.dumps(doc), json.dumps(itf)):
        rc, out, err = _replay(tmp_path, text)
        assert rc == 0 and "the violation still reproduces (as expected" in out, err


# ---- evidence: mutated replay inputs never crash --------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                     max_leaves=8)
_ODD = st.one_of(
    _JSON,
    st.just({"#bigint": "9" * 5000}), st.just({"#bigint": "x"}), st.just({"#set": [{"#bigint": "1"}]}),
    st.just({"set": [[1]]}), st.just({"buffer": [{"location": 1, "value": 2}]}), st.just({"#tup": [1, True]}),
    st.integers(min_value=-(10 ** 80), max_value=10 ** 80),
    st.builds(lambda n: [[[[[[[[[[[[[[[[[[[[n]]]]]]]]]]]]]]]]]]]], st.integers()),
)


def _paths(x, here=()):
    """Every place in a JSON document: (path of keys and indexes)."""
    yield here
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, here + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _paths(v, here + (i,))


def _mutate(doc, path, how: str, new):
    doc = copy.deepcopy(doc)
    if not path:
        return new
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "replace":
        parent[last] = new
    elif how == "wrap":  # one more level of nesting
        parent[last] = [parent[last]]
    return doc


@st.composite
def _mutations(draw, docs):
    doc = draw(st.sampled_from(docs))
    places = list(_paths(doc))
    out = doc
    for _ in range(draw(st.integers(1, 3))):
        places = list(_paths(out))
        path = draw(st.sampled_from(places))
        how = draw(st.sampled_from(("delete", "replace", "replace", "wrap") if path else ("replace",)))
        out = _mutate(out, path, how, draw(_ODD))
    return out


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_replay_inputs_give_an_exit_code_and_no_traceback(tmp_path, traces, data):
    """JSON and ITF traces with keys deleted, values replaced by wrong types, huge numbers
    and deep nesting: `check --replay` answers 0-3, never with an exception."""
    doc, itf = traces
    mutated = data.draw(_mutations([doc, itf]))
    rc, out, err = _replay(tmp_path, json.dumps(mutated))
    assert rc in (0, 1, 2, 3)
    assert "Traceback" not in err
    if rc == 2:
        assert err.startswith("t.json: error: "), err


# ---- item 9: output files ---------------------------------------------------------------


def _fsize_cap(limit: int):
    def cap():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writing past the cap fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return cap


def test_a_full_disk_truncates_the_earlier_sarif(tmp_path):
    """A write that fails part way (here: past RLIMIT_FSIZE, as on a full disk) left a
    truncated SARIF in place of the valid one of the earlier run, and the message said
    "an output file" instead of its name."""
    shutil.copy(MODELS / "four.spec", tmp_path)
    assert _python_check("four.spec", "--sarif", "r.sarif", "--brief", cwd=tmp_path).returncode == 1
    before = (tmp_path / "r.sarif").read_bytes()
    assert len(before) > 1024
    r = _python_check("four.spec", "--sarif", "r.sarif", "--brief", "--no-expect", cwd=tmp_path, text=True,
                      preexec_fn=_fsize_cap(1024))
    assert r.returncode == 2
    assert "cannot write r.sarif: File too large" in r.stderr
    assert (tmp_path / "r.sarif").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["four.spec", "r.sarif"]  # no temporary file left


class _FullDisk:
    """A file on a disk that fills up after its first 10 bytes."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        self.f.write(data[:10])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def __getattr__(self, name):
        return getattr(self.f, name)


def test_a_failed_write_names_the_file(tmp_path, monkeypatch):
    """ENOSPC part way through a file: the earlier file was left truncated, and the
    message said "an output file" instead of naming it."""
    rc, _, _ = run_check(tmp_path, "counter", "--junit", "out/r.xml", "--json", "out/r.json")
    assert rc == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    real_open, real_fdopen = open, os.fdopen
    out = str(tmp_path / "out")

    def full_open(file, mode="r", *args, **kw):
        f = real_open(file, mode, *args, **kw)
        return _FullDisk(f) if "w" in mode and os.path.abspath(str(file)).startswith(out) else f

    def full_fdopen(fd, mode="r", *args, **kw):
        where = os.readlink(f"/proc/self/fd/{fd}")
        f = real_fdopen(fd, mode, *args, **kw)
        return _FullDisk(f) if "w" in mode and where.startswith(out) else f

    monkeypatch.setattr("builtins.open", full_open)
    monkeypatch.setattr(os, "fdopen", full_fdopen)
    rc, _, err = run_check(tmp_path, "counter", "--junit", "out/r.xml", "--json", "out/r.json", "--no-expect")
    monkeypatch.undo()
    assert rc == 2
    assert err == "check: error: cannot write out/r.json: No space left on device\n"
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_atomic_files_keep_the_usual_permissions(tmp_path):
    rc, _, _ = run_check(tmp_path, "counter", "--report", "r.md")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "r.md").stat().st_mode & 0o777 == 0o666 & ~mask
    os.chmod(tmp_path / "r.md", 0o600)
    run_check(tmp_path, "counter", "--report", "r.md")
    assert (tmp_path / "r.md").stat().st_mode & 0o777 == 0o600  # a rewritten file keeps its mode


def test_output_to_a_device_is_written_in_place(tmp_path):
    rc, _, err = run_check(tmp_path, "counter", "--json", "/dev/null")
    assert rc == 0 and os.path.exists("/dev/null") and not Path("/dev/null").is_file()


def test_two_formats_to_one_path_lose_the_json(tmp_path):
    """`--json X --report X` exited 0 and X held only the report."""
    rc, out, err = run_check(tmp_path, "counter", "--json", "X", "--report", "./X")
    assert rc == 2 and err == "check: error: --json and --report both write ./X: give each its own file\n"
    assert out == "" and not (tmp_path / "X").exists()  # refused before the search


@pytest.mark.parametrize("flags, problem", [
    (("--sarif", "adir"), "cannot write --sarif adir: it is a folder; give a file name"),
    (("--itf", "afile"), "cannot write --itf afile: it is a file, not a folder"),
    (("--junit", "afile/r.xml"), "afile is a file, so no folder can be made in it"),
    (("--mermaid", "afile/sub/dir"), "afile is a file, so no folder can be made in it"),
    (("--json", "j", "--dot", "j"), "--json writes the file j and --dot a folder of that name"),
    (("--report", "models/counter.spec"), "--report models/counter.spec would overwrite an input of this run"),
    (("--promela", "models/counter.spec", "--variant", "base"), "would overwrite an input"),
])
def test_output_paths_that_cannot_be_written_fail_after_the_search(tmp_path, flags, problem):
    """A folder given as a file, a file as a folder, a folder under a file: refused before
    the search (today some fail after it, and some write nothing silently)."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    rc, out, err = run_check(tmp_path, "counter", *flags)
    assert rc == 2 and problem in err and out == ""


def test_output_folders_may_be_shared(tmp_path):
    rc, _, err = run_check(tmp_path, "counter", "--itf", "o", "--mermaid", "o", "--dot", "o", "--json", "o/r.json")
    assert rc == 0 and "wrote 4 files" in err


def test_promela_pml_for_several_variants_makes_a_folder(tmp_path):
    """`--promela y.pml` with several variants silently made a folder named y.pml."""
    rc, _, err = run_check(tmp_path, "counter", "--promela", "y.pml")
    assert rc == 2 and "--promela y.pml names a .pml file, but 2 variants need a folder" in err
    assert not (tmp_path / "y.pml").exists()
    (tmp_path / "y").write_text("")
    rc, _, err = run_check(tmp_path, "counter", "--promela", "y")
    assert rc == 2 and "--promela y is a file, but 2 variants need a folder" in err
    rc, _, err = run_check(tmp_path, "counter", "--promela", "y.pml", "--variant", "base")
    assert rc == 0 and (tmp_path / "y.pml").is_file()


# ---- item 10: `--json -` ---------------------------------------------------------------


def test_json_to_stdout_is_mixed_with_the_text(tmp_path):
    """`check ... --json -` printed the table and traces before the JSON, so `| jq .` failed."""
    rc, out, err = run_check(tmp_path, "counter", "--json", "-")
    assert rc == 0
    assert json.loads(out)["schema"] == "timerace-result"
    assert "every outcome is as expected" in err and "Counterexample" in err  # the text is still shown


# ---- item 12: escaping outside text ------------------------------------------------------

FAKE = "x`\n- **Result**: every outcome is as expected\n`.spec"


def test_a_spec_path_injects_markdown_into_the_report(tmp_path):
    """A file name with a backtick and line breaks closed the code span and added a fake
    "every outcome is as expected" line to a report of a failing run."""
    text = (MODELS / "four.spec").read_text()
    (tmp_path / FAKE).write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with workdir(tmp_path), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([FAKE, "--report", "r.md"])
    assert rc == 1
    report = (tmp_path / "r.md").read_text()
    results = [line for line in report.splitlines() if line.startswith("- **Result**")]
    assert len(results) == 1 and "differ from expectations" in results[0]
    assert "- **Spec**: ``x`\\n- **Result**: every outcome is as expected\\n`.spec``" in report
    assert "\nevery outcome is as expected" not in out.getvalue()  # nor a fake line on the terminal


ESCAPES = "\x1b]0;owned\x07\x1b[2J\u202e"  # an OSC title, a screen clear, a bidi override
CONTROLS = "\x1b\x07\r\u202e"


def _clean(text: str) -> bool:
    return not any(c in text for c in CONTROLS)


def test_control_characters_of_comments_pass_into_the_report(tmp_path):
    """ESC, BEL, an OSC title sequence and a bidi override in the header comment went
    into the report as raw bytes."""
    text = (MODELS / "counter.spec").read_text().replace("// Two", f"// {ESCAPES} Two", 1)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "counter.spec").write_text(text)
    rc, _, _ = run_check(tmp_path, "counter", "--report", "r.md", "--junit", "r.xml")
    report = (tmp_path / "r.md").read_text()
    assert rc == 0 and _clean(report) and _clean((tmp_path / "r.xml").read_text())
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202e Two processes" in report


def test_control_characters_of_comments_pass_to_the_terminal(tmp_path):
    """A bad line echoed under its error, with ESC sequences in its comment, drove the
    terminal; so did a replayed trace's statement text."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "counter.spec").write_text(f"model m; var x: bool = 3; // {ESCAPES}\n")
    rc, out, err = run_check(tmp_path, "counter")
    # the echoed line shows each control character as one space (errors.display_line),
    # so that the caret under it still points at the column the parser gave
    lines = err.splitlines()  # "declares no process" comes first (line 1, column 1), then this
    at = next(i for i, ln in enumerate(lines) if "type mismatch" in ln)
    line, caret = lines[at + 1:at + 3]
    assert rc == 2 and line.startswith("  model m; var x: bool = 3; //") and "]0;owned" in line
    assert caret.index("^") == line.index("3;")
    assert _clean(err + out)


def test_control_characters_of_a_trace_pass_to_the_terminal(tmp_path, traces):
    doc, _ = traces
    _cx(doc)["trace"]["actions"][0]["text"] = f"r = x;\r{ESCAPES}"
    rc, out, err = _replay(tmp_path, json.dumps(doc))
    assert rc == 0 and "r = x;\\x0d\\x1b]0;owned\\x07" in out
    assert _clean(err + out)
