"""`check FILE.litmus`: the kernel's litmus C format under the axiomatic LKMM.

The Result lines of tests/litmus_c/*.litmus are herd7's (test_lkmm_herd7.py re-checks
them against herd7 where it is installed); here our verdict must equal them, the
outcomes must nest sc <= tso <= lkmm, and what the reader cannot take is exit 2 with a
position and a caret.
"""

import re
from pathlib import Path

import pytest

from checker.cli import main
from checker.litmus.reader import parse_litmus
from checker.pipeline import load_litmus
from checker.litmus.axiomatic import PRIMITIVES, TooManyCandidates, evaluate, judge_result

LITMUS_C = Path(__file__).parent / "litmus_c"
FILES = sorted(LITMUS_C.glob("*.litmus"))


def test_the_suite_covers_the_shapes():
    names = {p.stem.split("+")[0] for p in FILES}
    assert {"SB", "MP", "LB", "WRC", "IRIW", "ISA2", "R", "S", "2", "Z6.0"} <= names
    assert len(FILES) >= 50


def test_every_supported_primitive_family_is_used():
    """Each primitive the reader takes, up to its ordering suffix, appears in some file."""
    text = "\n".join(p.read_text() for p in FILES)
    used = set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\(", text))

    def family(name):
        return re.sub(r"_(relaxed|acquire|release)$", "", name)

    missing = sorted({family(p) for p in PRIMITIVES} - {family(u) for u in used})
    assert missing == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_verdict_equals_the_result_line(path):
    test = load_litmus(str(path))
    assert test.expected in ("Never", "Sometimes", "Always", "DEADLOCK")
    assert judge_result(test, evaluate(test, "lkmm")) == (True, True)  # the data-race flag as predicted too


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_outcomes_nest_sc_tso_lkmm(path):
    """The kernel's x86 mapping is sound for the LKMM, and SC is a TSO: every outcome
    (and every allowed execution count) under sc is one under tso, and so on to lkmm."""
    test = load_litmus(str(path))
    if "synchronize_rcu" in test.source:  # a grace period is the LKMM's alone: refused under sc/tso
        pytest.skip("RCU grace periods are checked under lkmm only")
    outs = {m: {o for o, _ in evaluate(test, m).outcomes} for m in ("sc", "tso", "lkmm")}
    assert (outs["sc"] or test.expected == "DEADLOCK") and outs["sc"] <= outs["tso"] <= outs["lkmm"]


@pytest.mark.parametrize("name, sc, tso, lkmm", [
    ("SB+poonceonces", "Never", "Sometimes", "Sometimes"),
    ("MP+poonceonces", "Never", "Never", "Sometimes"),
    ("LB+poonceonces", "Never", "Never", "Sometimes"),
    ("IRIW+poonceonces+OnceOnce", "Never", "Never", "Sometimes"),
    ("SB+atomicinc", "Never", "Never", "Sometimes"),
    ("SB+cmpxchgfail", "Never", "Never", "Sometimes"),
    ("SB+mbonceonces", "Never", "Never", "Never"),
])
def test_known_verdicts_under_each_model(name, sc, tso, lkmm):
    """The published x86-TSO verdicts (SB allowed, MP/LB/IRIW forbidden) and the LKMM's."""
    test = load_litmus(str(LITMUS_C / f"{name}.litmus"))
    assert [evaluate(test, m).observation for m in ("sc", "tso", "lkmm")] == [sc, tso, lkmm]


def test_sb_outcomes_and_counts_match_herd7s_output():
    """herd7 prints 4 states and `Observation SB+poonceonces Sometimes 1 3` for SB."""
    res = evaluate(load_litmus(str(LITMUS_C / "SB+poonceonces.litmus")))
    assert [str(o) for o, _ in res.outcomes] == ["0:r0=0; 1:r0=0;", "0:r0=0; 1:r0=1;", "0:r0=1; 1:r0=0;",
                                                 "0:r0=1; 1:r0=1;"]
    assert (res.observation, res.positive, res.negative) == ("Sometimes", 1, 3)


def test_cli_exit_0_when_the_result_line_matches(capsys):
    assert main([str(LITMUS_C / "MP+wmbonceonce+rmbonceonce.litmus")]) == 0
    out = capsys.readouterr().out
    assert "Observation MP+wmbonceonce+rmbonceonce Never 0 3" in out


def test_cli_exit_1_when_the_result_line_differs(tmp_path, capsys):
    src = (LITMUS_C / "SB+poonceonces.litmus").read_text().replace("Result: Sometimes", "Result: Never")
    p = tmp_path / "sb.litmus"
    p.write_text(src)
    assert main([str(p)]) == 1
    assert "but the file says 'Result: Never'" in capsys.readouterr().out


def test_cli_memory_model_sc_and_tso(capsys):
    sb = str(LITMUS_C / "SB+poonceonces.litmus")
    assert main([sb, "--memory-model", "sc"]) == 1  # the Result line is the LKMM's: Sometimes
    assert "Observation SB+poonceonces Never 0 3" in capsys.readouterr().out
    assert main([sb, "--memory-model", "tso"]) == 0


def test_cli_exit_3_beyond_the_candidate_limit(capsys):
    assert main([str(LITMUS_C / "IRIW+poonceonces+OnceOnce.litmus"), "--max-candidates", "3"]) == 3
    assert "cannot decide" in capsys.readouterr().err
    with pytest.raises(TooManyCandidates):
        evaluate(load_litmus(str(LITMUS_C / "IRIW+poonceonces+OnceOnce.litmus")), limit=3)


HEAD = "C T\n\n{}\n\nP0(int *x, int *y)\n{\n\tint r0;\n"


@pytest.mark.parametrize("line, col, message", [
    ("\tsynchronize_srcu(x);", 2, "'synchronize_srcu': SRCU is not supported"),
    ("\tr0 = srcu_read_lock(x);", 7, "'srcu_read_lock': SRCU is not supported"),
    ("\tcall_rcu(x);", 2, "'call_rcu' is not supported"),
    ("\tfor (;;) r0 = 0;", 2, "'for' is not supported"),
    ("\tr0 = READ_ONCE(*(x + 1));", 21, "moves the pointer 'x' by 1"),
    ("\tWRITE_ONCE(*x, 1)", None, "expected ';'"),
    ("\tr0 = READ_ONCE(x);", 7, "takes '*p'"),
    ("\tr0 = smp_load_acquire(*x);", 24, "takes a pointer 'p', not '*p'"),
    ("\tset_bit(0, x);", 2, "bit operations are not in the LKMM"),
    ("\tsmp_wmbb();", 2, "did you mean 'smp_wmb'"),
    ("\tr9 = 1;", 2, "not a declared register"),
    ("\tr0 = READ_ONCE(*z);", 18, "unknown name 'z'"),
])
def test_unreadable_constructs_are_exit_2_with_a_caret(tmp_path, capsys, line, col, message):
    p = tmp_path / "bad.litmus"
    p.write_text(HEAD + line + "\n}\n\nexists (0:r0=0)\n")
    assert main([str(p)]) == 2
    err = capsys.readouterr().err
    assert message in err
    first = err.splitlines()[0]
    m = re.match(rf"{re.escape(str(p))}:(\d+):(\d+): error:", first)
    assert m, first
    if col is not None:
        assert (int(m.group(1)), int(m.group(2))) == (8, col)
    assert "^" in err and "Traceback" not in err


@pytest.mark.parametrize("cond, message", [
    ("exists (0:r7=0)", "thread 0 has no register 'r7'"),
    ("exists (q=0)", "'q' is not a location"),
    ("exists (0:r0=0", "expected ')'"),
    ("", "expected the final condition"),
])
def test_bad_conditions_are_exit_2(tmp_path, capsys, cond, message):
    p = tmp_path / "bad.litmus"
    p.write_text(HEAD + "\tr0 = READ_ONCE(*x);\n}\n\n" + cond + "\n")
    assert main([str(p)]) == 2
    assert message in capsys.readouterr().err


def test_comments_results_and_paren_star_in_code():
    """`(*` opens a comment outside code and is `( *` inside it (`READ_ONCE(*x)`)."""
    src = ("C X\n(* Result: Never *)\n{ x=1; }\nP0(int *x)\n{\n\tint r0;\n\tr0 = READ_ONCE((*x)); // c\n"
           "\t/* c */\n}\nexists (0:r0=0)\n")
    test = parse_litmus(src, "x.litmus")
    assert test.expected == "Never"
    assert evaluate(test).observation == "Never"


def test_filter_and_locations():
    test = load_litmus(str(LITMUS_C / "MP+filter-locations.litmus"))
    res = evaluate(test)
    labels = {k for o, _ in res.outcomes for k, _ in o.values}
    assert labels == {"1:r1", "[x]", "[y]"}  # as herd7: the filter's names are not shown
    assert res.positive + res.negative == 1  # filter (1:r0=1) leaves one execution of 3
    assert res.observation == "Never"
