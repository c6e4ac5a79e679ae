"""The front end's limits (issue 15, items 5, 6, 7 and 15): line breaks as the parser
counts them, a byte order mark, non-UTF-8 text, deep nesting, long literals, huge arrays,
large flat models and small command-line slips. Every one is bad input with a position
(exit 2) or a model that checks, never a traceback or a statement shown from the wrong
line."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from checker.cli import main
from checker.base.errors import SpecError, source_lines
from checker.base.limits import MAX_EXPANSION
from checker.front.parse import MAX_LITERAL, MAX_NESTING, parse
from checker.resolve import MAX_VALUES
from checker.pipeline import Options, compile_variant, load

ROBUSTNESS = Path("/work/shared/reviews/robustness")

# Every character str.splitlines() breaks at but the parser (and C) does not.
ODD_BREAKS = ("\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def check(path: Path, *flags: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(path), *flags])
    return rc, out.getvalue(), err.getvalue()


def write(tmp_path: Path, text: str, name: str = "m.spec", encoding: str = "utf-8") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


def position(err: str) -> tuple[int, int]:
    m = re.search(r"\.spec:(\d+):(\d+): error:", err)
    assert m, err
    return int(m.group(1)), int(m.group(2))


# ---- item 5: line breaks -------------------------------------------------------


@pytest.mark.parametrize("brk", ODD_BREAKS, ids=lambda c: f"U+{ord(c):04X}")
def test_odd_line_breaks_keep_each_statement_on_its_own_line_in_traces(tmp_path, brk):
    """A form feed (or \\v, \\x1c-\\x1e, \\x85, U+2028) in a comment: the trace, the ITF
    and the Mermaid diagram show the statement, not a slice of another line."""
    spec = write(tmp_path, f"model ff; // a page break follows: {brk}\nvar x: 0..1 = 0;\n"
                           "process p {\n  x = 1;\n}\ninvariant never_one: x == 0;\nexpect violated never_one;\n")
    rc, out, err = check(spec, "--itf", str(tmp_path / "itf"), "--mermaid", str(tmp_path / "mmd"))
    assert rc == 0, err
    assert re.search(r"\bx = 1;", out) and not re.search(r"\bocess", out)
    (itf,) = (tmp_path / "itf").iterdir()
    assert re.findall(r'"statement": "([^"]*)"', itf.read_text()) == ["x = 1;"]
    (mmd,) = (tmp_path / "mmd").iterdir()
    assert "line 4: x = 1#59;" in mmd.read_text() and not re.search(r"\bocess", mmd.read_text())


@pytest.mark.parametrize("brk", ODD_BREAKS, ids=lambda c: f"U+{ord(c):04X}")
def test_odd_line_breaks_put_the_caret_under_the_right_line(tmp_path, brk):
    spec = write(tmp_path, f"model m; // page break: {brk}\nvar x: 0..1 = 0;\nprocess p {{ x = y; }}\n")
    rc, _, err = check(spec)
    assert rc == 2
    assert position(err) == (3, 17)
    lines = err.splitlines()
    assert lines[1] == "  process p { x = y; }"
    assert lines[2] == "  " + " " * 16 + "^"


def test_a_form_feed_breaks_no_trace_line_and_no_caret(tmp_path):
    if not ROBUSTNESS.is_dir():
        pytest.skip("the reviewers' reproducers are not here")
    rc, out, _ = check(ROBUSTNESS / "repro_formfeed_trace.spec")
    assert rc == 0 and re.search(r"\bx = 1;", out) and not re.search(r"\bocess", out)
    rc, _, err = check(ROBUSTNESS / "repro_formfeed_caret.spec")
    assert rc == 2 and "  process p { x = y; }" in err.splitlines()


def test_odd_line_break_one_rule_for_positions_and_lines():
    """The parser's line numbers index source_lines(); a control character on a shown
    line becomes a space, so the caret column still matches."""
    text = "model m;\f// x\x85y\u2028z\r\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n"
    spec = parse(text, "m.spec")
    var = spec.items[1]
    assert source_lines(text)[var.span.line - 1].startswith("var x")
    e = SpecError(var.span, "look")
    assert e.render(text).splitlines()[1] == "  var x: 0..1 = 0;"
    shown = SpecError(spec.items[0].span, "look").render(text).splitlines()[1]
    assert shown == "  model m; // x y z" and shown.isprintable()


def test_bom_refused_as_unexpected_character(tmp_path):
    spec = write(tmp_path, "\ufeffmodel bom;\nvar x: 0..1 = 0;\nprocess p { x = y; }\n")
    rc, _, err = check(spec)
    assert rc == 2 and "unknown name 'y'" in err
    assert position(err) == (3, 17)  # the mark is not a column
    ok = write(tmp_path, "\ufeffmodel bom;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n", "ok.spec")
    assert check(ok)[0] == 0


def test_non_utf8_error_has_no_position(tmp_path):
    spec = write(tmp_path, b"model m;\nvar x: 0..1 = 0; // caf\xe9 au lait\nprocess p { x = 1; }\n")
    rc, _, err = check(spec)
    assert rc == 2
    assert position(err) == (2, 24)
    assert "not UTF-8" in err and "0xe9" in err
    assert err.splitlines()[2] == "  " + " " * 23 + "^"
    with pytest.raises(SpecError) as e:
        load(str(spec))
    assert (e.value.span.line, e.value.span.col) == (2, 24)


# ---- item 6: tracebacks that exit 1 --------------------------------------------


DEEP = {
    "if": lambda n: "process p { " + "if (x == 0) " * n + "x = 0; }",
    "implies": lambda n: "process p { x = 1; }\ninvariant i: " + " -> ".join(["x == 0"] * n) + ";",
    "ternary": lambda n: "process p { x = " + "x == 0 ? " * n + "0" + " : 1" * n + "; }",
    "parens-not": lambda n: "process p { x = " + "!(" * n + "x == 0" + ")" * n + " ? 1 : 0; }",
    "sum": lambda n: "process p { x = (" + " + ".join(["x"] * n) + ") - " + str(n - 1) + " * x; }",
    "block": lambda n: "process p { " + "{" * n + "x = 0;" + "}" * n + " }",
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deep_nesting_is_an_input_error_with_a_position(tmp_path, kind):
    """488 chained `if`s (or ~500 nested `->`, `?:`, ...) ended in lark's VisitError
    wrapping a RecursionError, exit 1; now: exit 2 with the position where the nesting
    passes the limit, the depth and the limit."""
    spec = write(tmp_path, "model d; var x: 0..1 = 0;\n" + DEEP[kind](500) + "\n")
    rc, out, err = check(spec)
    assert rc == 2, err
    assert "Traceback" not in err
    m = re.search(r"m\.spec:[23]:(\d+): error: the spec nests too deeply: (\d+) levels; the limit is (\d+)", err)
    assert m, err
    assert int(m.group(2)) > MAX_NESTING == int(m.group(3))
    assert "hint:" in err


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deep_nesting_below_the_limit_checks(tmp_path, kind):
    """The limit is a real one: a little below it, every construct checks."""
    spec = write(tmp_path, "model d; var x: 0..1 = 0;\n" + DEEP[kind](MAX_NESTING - 12) + "\n")
    rc, _, err = check(spec, "--no-expect")
    assert rc in (0, 1), err


def test_deep_nesting_too_deep_for_python_points_at_statement(tmp_path):
    """Within the spec's limit, 25 `while`s inside one `atomic` are 25 nested Python
    loops, and Python stops at 20: the error names the statement, not a SyntaxError."""
    spec = write(tmp_path, "model d; var x: 0..1 = 0;\nprocess p { x = 1;\n  atomic { " + "while (x == 0) " * 25
                 + "x = 1; } }\n")
    rc, _, err = check(spec)
    assert rc == 2, err
    assert position(err) == (3, 3)
    assert "nests too deeply to compile: too many statically nested blocks" in err


def test_a_deeply_nested_if_is_an_input_error_at_its_line():
    if not ROBUSTNESS.is_dir():
        pytest.skip("the reviewers' reproducers are not here")
    rc, _, err = check(ROBUSTNESS / "repro_deep_if.spec")
    assert rc == 2 and "nests too deeply" in err and position(err)[0] == 1


@pytest.mark.parametrize("literal", ["9" * 4301, "0x" + "f" * 3600, "18446744073709551616", "0x10000000000000000"])
def test_a_literal_past_u64_is_an_input_error(tmp_path, literal):
    spec = write(tmp_path, f"model b;\nvar x: 0..1 = {literal};\nprocess p {{ x = 1; }}\n")
    rc, _, err = check(spec)
    assert rc == 2, err
    assert position(err) == (2, 15)
    first = err.splitlines()[0]
    assert f"larger than {MAX_LITERAL}" in err and len(first.removeprefix(str(spec))) < 160  # the path varies


def test_a_literal_with_a_leading_zero_is_an_input_error(tmp_path):
    """`07` went to int(text, 0), which refuses a leading zero: a traceback."""
    rc, _, err = check(write(tmp_path, "model b;\nvar x: 0..9 = 07;\nprocess p { x = 00; }\n"))
    assert rc == 2 and position(err) == (2, 15) and "starts with 0" in err and "octal" in err
    rc, _, err = check(write(tmp_path, "model b;\nconst N = 1;\nvar x: 0..9 = 0;\nprocess p { x = N; }\n"),
                       "-D", "N=010")
    assert rc == 2 and "starts with 0" in err


def test_long_literal_largest_u64_is_fine(tmp_path):
    spec = write(tmp_path, "model b;\nvar x: u64 = 18446744073709551615;\nprocess p { x = 0xffffffffffffffff; }\n")
    assert check(spec)[0] == 0


@pytest.mark.parametrize("value", ["9" * 5000, "-" + "9" * 5000, "0x" + "f" * 5000])
def test_a_literal_past_u64_in_a_define_is_an_input_error(tmp_path, value):
    spec = write(tmp_path, "model b;\nconst N = 1;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n")
    rc, _, err = check(spec, "-D", f"N={value}")
    assert rc == 2, err
    assert err.startswith("check: error: -D value: integer literal") and len(err) < 300


@pytest.mark.parametrize("dim", ["100000000000", "(1 << 70)", "0..100000000000", "-5..65531"])
def test_a_huge_array_is_an_input_error(tmp_path, dim):
    """`var a[100000000000]` ran out of memory, `var a[2**70]` overflowed: now exit 2 at
    the dimension, with the limit."""
    spec = write(tmp_path, f"model b;\nvar a[{dim}]: bool;\nprocess p {{ a[0] = true; }}\n")
    rc, _, err = check(spec)
    assert rc == 2, err
    assert position(err) == (2, 6)
    assert f"the limit is {MAX_VALUES:,}" in err


def test_huge_array_limit_counts_process_locals(tmp_path):
    spec = write(tmp_path, "model b;\nprocess p[40] {\n  var a[2000]: bool;\n  a[0] = true;\n}\n")
    rc, _, err = check(spec)
    assert rc == 2, err
    assert position(err) == (3, 7) and f"past {MAX_VALUES:,} values" in err


# ---- item 7: large flat models -------------------------------------------------


def test_large_flat_model_nests_too_deeply(tmp_path):
    """`var a[4000]: bool` (and 4,000 variables) were "the spec nests too deeply to
    check": the generated `pack` was one expression of 4,000 `|`."""
    arr = write(tmp_path, "model b; var a[4000]: bool;\nprocess p { a[0] = true; a[3999] = true; }\n"
                          "invariant both: a[3999] -> a[0];\n", "arr.spec")
    rc, out, err = check(arr, "--no-expect")
    assert rc == 0, err
    many = write(tmp_path, "model v;\n" + "".join(f"var v{i}: 0..1 = 0;\n" for i in range(3500))
                 + "process p { v0 = 1; v3499 = 1; }\ninvariant ok: v0 <= v3499 || p@end;\n", "many.spec")
    rc, out, err = check(many, "--no-expect")
    assert rc == 1 and "ok" in out  # v0 = 1 before v3499 = 1: a real violation, found
    cm = compile_variant(load(str(arr)), "base", Options())
    state = tuple(k % 2 for k in range(len(cm.program.layout.slots) - 1)) + (0,)
    assert cm.unpack(cm.pack(state)) == state


def test_large_flat_model_pc_names_stay_distinct(tmp_path):
    """8,000 statements on one line: pc names line1, line1_2, ... line1_8000, found in
    one pass (the old search for a free suffix restarted at 2 for every statement)."""
    spec = write(tmp_path, "model big; var x: 0..1 = 0; process p {" + " x = 1;" * 8000 + " }\n")
    cm = compile_variant(load(str(spec)), "base", Options())
    (p,) = cm.program.processes
    assert p.pc_names[:3] == ("line1", "line1_2", "line1_3")
    assert p.pc_names[7999] == "line1_8000" and len(set(p.pc_names)) == 8001


def test_large_flat_model_long_sum_has_position(tmp_path):
    """A 5,000-term sum: "the spec nests too deeply to check" with no position; now the
    position and the limit."""
    spec = write(tmp_path, "model s; var x: 0..1 = 0;\nprocess p { x = " + " + ".join(["x"] * 5000) + "; }\n")
    rc, _, err = check(spec)
    assert rc == 2 and position(err)[0] == 2 and f"the limit is {MAX_NESTING}" in err


# ---- item 15: smaller ----------------------------------------------------------


def test_repeated_define_keeps_last(tmp_path):
    spec = write(tmp_path, "model b;\nconst N = 1;\nvar x: 0..1 = N;\nprocess p { x = 1; }\n")
    rc, _, err = check(spec, "-D", "N=0", "-D", "N=1")
    assert rc == 2
    assert "-D N is given twice (N=0, then N=1)" in err
    assert check(spec, "-D", "N=0")[0] == 0


def test_unclosed_comment_says_unexpected_slash(tmp_path):
    for text, where in (("model b;\nvar x: 0..1 = 0; /* never closed\nprocess p { x = 1; }\n", (2, 18)),
                        ("model b; var x: 0..1 = 0;\nprocess p { x = 1 /* oops; }\n", (2, 19)),
                        ("model b; // a /* in a line comment is no comment\nvar x: 0..1 = 0;\n"
                         "process p { x = 1; } /* x */ /*\n", (3, 30))):
        rc, _, err = check(write(tmp_path, text))
        assert rc == 2 and "unclosed comment" in err, err
        assert position(err) == where
        assert "unexpected '/'" not in err


def test_unclosed_comment_only_when_there_is_one(tmp_path):
    rc, _, err = check(write(tmp_path, "model b; /* fine */ var x: 0..1 = 0 // */\nprocess p { x = 1; }\n"))
    assert rc == 2 and "unclosed comment" not in err and "expected ';' before 'process'" in err


def test_process_array_limit_says_64(tmp_path):
    """"a process array has 1 to 64 processes", yet 63 was refused by the total of 62."""
    rc, _, err = check(write(tmp_path, "model b; var x: 0..1 = 0;\nprocess p[63] { x = 1; }\n"))
    assert rc == 2
    assert "a process array has 1 to 62 processes, not 63" in err and position(err) == (2, 10)
    rc, _, err = check(write(tmp_path, "model b; var x: 0..1 = 0;\nprocess p[62] { x = 1; }\n"))
    assert rc == 0, err
    rc, _, err = check(write(tmp_path, "model b; var x: 0..1 = 0;\nprocess p[40] { x = 1; }\nprocess q[30] { x = 0; }\n"))
    assert rc == 2 and "70 processes in one model; the limit is 62" in err


# ---- evidence: deep and huge generated specs never end in a traceback ----------

HEAD = "model g; var x: 0..1 = 0; var u: u8 = 0; var a[4]: 0..3; var b: bitset(8);\nfn f(v) = v + 1;\n"

NESTED = {
    "if": ("process p { ", "if (x == 0) ", "x = 0;", "", " }"),
    "while": ("process p { ", "while (x == 1) ", "x = 0;", "", " }"),
    "atomic-if": ("process p { atomic { ", "if (x == 0) ", "x = 0;", "", " } }"),
    "atomic-while": ("process p { atomic { ", "while (x == 1) ", "x = 0;", "", " } }"),
    "block": ("process p { ", "{ ", "x = 0;", " }", " }"),
    "choose": ("process p { ", "choose { ", "x = 0;", " } or { x = 1; }", " }"),
    "implies": ("process p { x = 1; }\ninvariant i: ", "x == 0 -> ", "true", "", ";"),
    "ternary": ("process p { x = ", "x == 0 ? ", "0", " : 1", "; }"),
    "parens": ("process p { x = ", "(", "x", ")", "; }"),
    "not": ("process p { x = ", "!", "(x == 0)", "", " ? 1 : 0; }"),
    "minus": ("process p { u = ", "-", "u", "", "; }"),
    "index": ("process p { a[0] = ", "a[", "0", "]", "; }"),
    "bv-conv": ("process p { u = ", "u8(u + ", "1", ")", "; }"),
    "fn": ("process p { u = ", "f(", "u", ")", "; }"),
    "and": ("process p { x = 1; }\ninvariant i: ", "x <= 1 && ", "true", "", ";"),
    "sum": ("process p { u = ", "u + ", "1", "", "; }"),
    "test_bit": ("process p { x = ", "test_bit(u8(", "0", ") & 7, b) ? 1 : 0", "; }"),
}


def _nested(kind: str, n: int) -> str:
    head, open_, core, close, tail = NESTED[kind]
    return HEAD + head + open_ * n + core + close * n + tail + "\n"


@st.composite
def huge_specs(draw):
    """A deep or a huge spec: nesting around the limit or far past it, long flat
    models, long literals, big arrays."""
    what = draw(st.sampled_from(["nested", "nested", "nested", "vars", "array", "literal", "define", "dims"]))
    if what == "nested":
        n = draw(st.one_of(st.integers(1, MAX_NESTING + 8), st.integers(MAX_NESTING, 700)))
        return _nested(draw(st.sampled_from(sorted(NESTED))), n), ()
    if what == "vars":
        n = draw(st.integers(1, 3000))
        return ("model v;\n" + "".join(f"var v{i}: 0..1;\n" for i in range(n))
                + f"process p {{ v0 = 1; v{n - 1} = 1; }}\n"), ()
    if what == "array":
        n = draw(st.integers(1, 5000))
        typ = draw(st.sampled_from(["bool", "0..3", "u8", "bitset(3)"]))
        return f"model a; var a[{n}]: {typ};\nprocess p {{ a[0] = a[{n - 1}]; }}\n", ()
    digits = draw(st.integers(1, 6000))
    lit = draw(st.sampled_from(["9" * digits, "0x" + "f" * digits, "1" + "0" * digits, "0" * digits + "7"]))
    if what == "literal":
        return f"model l; var x: 0..1 = 0;\nprocess p {{ x = {lit} - {lit}; }}\n", ()
    if what == "define":
        return "model d; const N = 0; var x: 0..1 = 0;\nprocess p { x = N; }\n", ("-D", f"N={lit}", "-D", "N=0")
    return f"model a; var a[{lit}]: bool;\nprocess p {{ a[0] = true; }}\n", ()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(case=huge_specs(), engine=st.sampled_from(["explicit", "explicit", "bmc", "promela"]))
def test_deep_and_huge_specs_never_end_in_a_traceback(tmp_path, case, engine):
    """Any exception escaping `main` would be a traceback; every exit code is one the
    README defines, and every error has a position or names the command line."""
    text, flags = case
    spec = write(tmp_path, text, "g.spec")
    if engine == "bmc":
        flags = (*flags, "--engine", "bmc", "--depth", "1", "--timeout", "5")
    elif engine == "promela":
        flags = (*flags, "--promela", str(tmp_path / "g.pml"))
    rc, out, err = check(spec, "--brief", "--no-expect", *flags)
    assert rc in (0, 1, 2, 3), err
    assert "Traceback" not in err and "Traceback" not in out
    if rc == 2:
        assert re.search(r"g\.spec:\d+:\d+: error: ", err) or err.startswith("check: error: -D"), err


def test_deep_and_huge_specs_json_stays_valid(tmp_path):
    """A flat model past the old limits still writes a result file."""
    spec = write(tmp_path, "model b; var a[3000]: 0..1;\nprocess p { a[2999] = 1; }\n"
                           "invariant last: a[2999] == 0;\nexpect violated last;\n")
    rc, _, err = check(spec, "--json", str(tmp_path / "r.json"))
    assert rc == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["schema"] == "timerace-result"


def _chain(kind: str, n: int, nest: int = 0) -> str:
    """A spec whose process calls the n-th of n inlines (or fns), each calling the next,
    each call inside `nest` ifs."""
    if kind == "inline":
        decls = ["inline f0() { x = 1; }"] + [
            f"inline f{i}() {{ " + "if (x == 0) { " * nest + f"f{i - 1}();" + " }" * nest + " }" for i in range(1, n)]
        body = f"f{n - 1}();"
    else:
        decls = ["fn f0(a: 0..9): 0..9 = a;"] + [f"fn f{i}(a: 0..9): 0..9 = f{i - 1}(a);" for i in range(1, n)]
        body = f"x = f{n - 1}(0);"
    return "model chain;\nvar x: 0..9 = 0;\n" + "\n".join(decls) + f"\nprocess p {{ {body} }}\n"


@pytest.mark.parametrize("kind", ["inline", "fn"])
@pytest.mark.parametrize("n", [40, 300, 1000])
def test_long_call_chains_are_refused_at_the_call_past_the_limit(tmp_path, kind, n):
    """Chains of 300 inlines or fns were "the spec nests too deeply to check", with no
    position (issue 32): the resolver's recursion ran out. Now the call that goes past
    MAX_EXPANSION is refused, with its line, a caret and a hint."""
    rc, _, err = check(write(tmp_path, _chain(kind, n)))
    assert rc == 2 and "Traceback" not in err, err
    assert f"inline and fn calls nest {MAX_EXPANSION + 1} deep here" in err and "[TR107]" in err
    line = n + 3 - MAX_EXPANSION  # f(n-1) is on line n + 2; the call 33 deep is in f(n-1-32)'s body
    assert position(err)[0] == line and "hint: each call is expanded in place" in err


@pytest.mark.parametrize("kind", ["inline", "fn"])
def test_a_chain_at_the_limit_is_checked(tmp_path, kind):
    rc, out, err = check(write(tmp_path, _chain(kind, MAX_EXPANSION)))
    assert rc == 0, err


def test_deep_bodies_within_the_call_limit_are_refused_at_the_first_call(tmp_path):
    """30 calls, each inside 10 ifs: within MAX_EXPANSION but 300 levels once expanded."""
    rc, _, err = check(write(tmp_path, _chain("inline", 30, nest=10)))
    assert rc == 2 and "the expansion of 'f29' nests too deeply to resolve" in err and "Traceback" not in err
    assert position(err) == (33, 13) and "hint:" in err
