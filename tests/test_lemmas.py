"""Lemmas over bit-vectors, checked by Z3: proved, a counterexample, or unknown."""

import pytest

from checker.cli import main
from checker.engines.smt.lemmas import check_lemma
from checker.base.errors import SpecError
from checker.front.parse import parse
from checker.resolve import resolve
from checker.results.trace import Verdict

HV = """
model hv;
const GUARDED = true;
fn delta_tsc(deadline: u64, now: u64): u64 = max(deadline, now) - now;
fn hv_delta(deadline: u64, now: u64, advance: u64): u64 =
    GUARDED ? (delta_tsc(deadline, now) > advance ? delta_tsc(deadline, now) - advance : 0)
            : delta_tsc(deadline, now) - advance;
lemma not_after_deadline: forall (deadline: u64, now: u64, advance: u64)
    deadline >= now -> hv_delta(deadline, now, advance) <= deadline - now;
variant unguarded { GUARDED = false; } expect violated not_after_deadline;
"""


def _lemma(text, name, variant="base", timeout=60):
    model = resolve(parse(text, "m.spec"), variant)
    lemma = next(lm for lm in model.lemmas if lm.name == name)
    return check_lemma(model, lemma, timeout)


def test_guarded_delta_is_proved_and_unguarded_wraps():
    assert _lemma(HV, "not_after_deadline").verdict is Verdict.PROVED
    f = _lemma(HV, "not_after_deadline", "unguarded")
    assert f.verdict is Verdict.VIOLATED
    values = dict(f.counterexample.trace.states[0].values)
    d, now, adv = values["deadline"], values["now"], values["advance"]
    assert d >= now and adv > d - now  # the guard would have been needed
    assert values["hv_delta(deadline, now, advance)"] == (d - now - adv) % 2 ** 64 > 2 ** 63


def test_lemma_counterexample_printed_in_decimal_and_hex(tmp_path, capsys):
    f = tmp_path / "m.spec"
    f.write_text(HV)
    assert main([str(f)]) == 0
    out = capsys.readouterr().out
    assert "not_after_deadline  proved" in out
    assert "Counterexample: variant unguarded, lemma not_after_deadline" in out
    assert "(0xffffffffffffff" in out


def test_false_lemma_over_u8():
    f = _lemma("model m; lemma inc: forall (x: u8) x + 1 > x;", "inc")
    assert f.verdict is Verdict.VIOLATED
    assert dict(f.counterexample.trace.states[0].values) == {"x": 255, "x + 1": 0}


def test_division_by_zero_makes_a_lemma_fail_unless_guarded():
    text = "model m; lemma a: forall (x: u64, y: u64) x / y <= x;\nlemma b: forall (x: u64, y: u64) y != 0 -> x / y <= x;"
    f = _lemma(text, "a")
    assert f.verdict is Verdict.VIOLATED and "division by zero" in f.counterexample.message
    assert _lemma(text, "b").verdict is Verdict.PROVED


def test_range_and_bool_parameters():
    text = "model m; lemma r: forall (x: 0..10, y: 0..10, b: bool) (b ? x * y : x - y) <= 100 && x - y >= -10;"
    assert _lemma(text, "r").verdict is Verdict.PROVED


def test_timeout_is_unknown_never_proved(tmp_path, capsys):
    # 64-bit multiplication and division: far too hard to bit-blast in a millisecond
    text = "model m; lemma hard: forall (x: u64, y: u64) (x * y) / y == x || y == 0 || x * y / x != y;"
    f = _lemma(text, "hard", timeout=0.001)
    assert f.verdict is Verdict.UNKNOWN
    spec = tmp_path / "m.spec"
    spec.write_text(text)
    assert main([str(spec), "--timeout", "0.001"]) == 3
    out = capsys.readouterr().out
    assert "unknown" in out and "UNKNOWN" in out and "proved" not in out


@pytest.mark.parametrize("text, message", [
    ("model m; var s: u8 = 0; process p { skip; } lemma l: forall (x: u8) x != s;", "reads the state"),
    ("model m; lemma l: forall (x) x == x;", "needs a type"),
    ("model m; lemma l: forall (x: u8, x: u8) x == x;", "duplicate lemma parameter"),
    ("model m; lemma l: forall (x: u8) x + 1;", "must be a bool"),
    ("model m; lemma l: forall (x: u8) true; invariant l: true; process p { skip; }", "duplicate property name"),
])
def test_lemma_errors(text, message):
    with pytest.raises(SpecError) as e:
        resolve(parse(text, "m.spec"))
    assert message in e.value.message


def test_expect_violated_names_a_lemma(tmp_path, capsys):
    f = tmp_path / "m.spec"
    f.write_text(HV.replace("expect violated not_after_deadline;", ""))
    assert main([str(f), "--brief"]) == 1
    assert "unguarded  not_after_deadline  violated  holds     UNEXPECTED" in capsys.readouterr().out


def test_a_wrap_inside_an_fn_under_a_shift_is_shown(tmp_path, capsys):
    """The comparison's operand (`twice(a) >> 1`) shows no wrap by itself; the `+` inside
    the fn that wrapped is listed too, with its wrapped value."""
    from checker.cli import main
    f = tmp_path / "w.spec"
    f.write_text("model w;\nfn twice(x: u8): u8 = x + x;\nlemma halves: forall (a: u8) (twice(a) >> 1) == a;\n"
                 "process p { skip; }\n")
    assert main([str(f)]) == 1
    out = capsys.readouterr().out
    assert "twice(a) (wrapped) = 0 (0x0)" in out
    assert "a                  = 128 (0x80)" in out
