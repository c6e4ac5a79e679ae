"""Constant folding computes what the generated code computes when the step runs.

The resolver, the back ends' folding (checker/semantics/fold.py) and partial-order reduction's
footprints all fold integer operators with `model.fold_binop`; the generated Python
evaluates them with compile.py's `_PY_BINOP` and its runtime helpers. A folded value
that differs from the run-time one would make the search, the Promela twin and the
footprints disagree about the same model.
"""

import pytest
from hypothesis import given, settings, strategies as st

from checker import model as m
from checker.backends.python import _PY_BINOP, _RUNTIME, ModelError

ARITHMETIC = ["+", "-", "*", "/", "%", "&", "|", "^", "==", "!=", "<", "<=", ">", ">="]
SHIFTS = ["<<", ">>"]
LOGICAL = ["&&", "||", "->"]  # on booleans: operands are 0 or 1


def run_time(op: str, a: int, b: int):
    """The value the generated code computes, or the ModelError it raises."""
    code = _PY_BINOP.get(op, "({a} " + op + " {b})").format(a=f"({a})", b=f"({b})")
    try:
        return int(eval(code, dict(_RUNTIME)))
    except ModelError as err:
        return err


def agrees(op: str, a: int, b: int) -> None:
    folded, ran = m.fold_binop(op, a, b), run_time(op, a, b)
    if folded is None:  # left to run time: only where running it fails
        assert isinstance(ran, ModelError), (op, a, b, ran)
    else:
        assert folded == ran, (op, a, b, folded, ran)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ARITHMETIC), st.integers(-70, 70), st.integers(-70, 70))
def test_arithmetic_folds_to_the_run_time_value(op, a, b):
    agrees(op, a, b)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SHIFTS), st.integers(-70, 70), st.integers(-3, 5000))
def test_shifts_fold_to_the_run_time_value_or_are_left_to_fail_there(op, a, b):
    agrees(op, a, b)


@pytest.mark.parametrize("op", LOGICAL)
@pytest.mark.parametrize("a", [0, 1])
@pytest.mark.parametrize("b", [0, 1])
def test_logical_operators_fold_to_the_run_time_value(op, a, b):
    agrees(op, a, b)


@pytest.mark.parametrize("op, a, b", [("/", 7, 0), ("%", -7, 0), ("<<", 1, -1), (">>", 8, -2), ("<<", 1, 4097)])
def test_what_fails_at_run_time_is_not_folded(op, a, b):
    assert m.fold_binop(op, a, b) is None
    assert isinstance(run_time(op, a, b), ModelError)


def test_division_truncates_toward_zero_as_in_c():
    assert [m.fold_binop("/", a, b) for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2))] == [3, -3, -3, 3]
    assert [m.fold_binop("%", a, b) for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2))] == [1, -1, 1, -1]
