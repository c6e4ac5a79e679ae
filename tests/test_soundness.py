"""A false property must never pass: capture-free `fn` and inline substitution, no
proof from an undecided base case, no "checker bug" from an interrupted solver.

The substitution tests compare the checker with tests/reference_eval.py, which gives
expressions their meaning on the syntax tree without the resolver: a resolver bug is
shared by every engine and the Promela twin, so only an independent semantics sees it.
"""

from __future__ import annotations

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.front import ast
from checker.cli import main
from checker.engines.smt import bmc as bmc_module
from checker.engines.smt import induction as induction_module
from checker.engines.smt.bmc import Unrolling, bmc
from checker.engines.explicit import explore
from checker.engines.smt.lemmas import check_lemma
from checker.front.parse import parse
from checker.resolve import resolve
from checker.pipeline import Options, check_spec
from checker.results.trace import Verdict

from agreement import compiled
from reference_eval import Reference, RefModelError, subst

FN_CAPTURE = """model fn_capture_quant;
fn plus_one({p}) = {p} + 1;
process p {{ skip; }}
var arr[4]: 0..7 = {{1, 2, 3, 4}};
invariant q_capture: forall i in 0..2: (arr[plus_one(i + 1) - 1] == i + 2);
invariant q_capture_false: forall i in 0..2: (plus_one(i + 1) == i + 1);
"""

LEMMA_SHORT = """model lemma_short_probe;
const GUARDED = true;
const EXPIRED_DELTA = 0;
fn delta_tsc(deadline: u64, guest_tsc: u64): u64 = max(deadline, guest_tsc) - guest_tsc;
fn hv_delta(deadline: u64, guest_tsc: u64, advance: u64): u64 =
    GUARDED ? (delta_tsc(deadline, guest_tsc) > advance
                   ? delta_tsc(deadline, guest_tsc) - advance : EXPIRED_DELTA)
            : delta_tsc(deadline, guest_tsc) - advance;
fn wait_end(tsc: u64, deadline: u64, advance: u64): u64 =
    tsc < deadline ? tsc + min(deadline - tsc, advance) : tsc;
lemma mut_busy_wait_short: forall (deadline: u64, guest_tsc: u64, advance: u64, elapsed: u64)
    deadline >= guest_tsc && elapsed >= hv_delta(deadline, guest_tsc, advance)
        && elapsed <= deadline - guest_tsc
        -> wait_end(guest_tsc + elapsed, deadline, advance - 1) >= deadline;
lemma inst_short: forall (x: u64)
    10 >= 0 && 7 >= hv_delta(10, 0, 3) && 7 <= 10 - 0 -> wait_end(0 + 7, 10, 3 - 1) >= 10;
"""


def _run(tmp_path, text, *args):
    f = tmp_path / "m.spec"
    f.write_text(text)
    return main([str(f), "--no-expect", *args])


def _verdicts(text, engine="explicit"):
    spec = parse(text, "m.spec")
    r = check_spec(spec, Options(use_expectations=False, engine=engine, depth=2))
    return {o.property: o.verdict for o in r.variants[0].outcomes}


# ---- 1. substitution is capture-avoiding -------------------------------------------


def test_fn_parameter_captured_by_a_quantifier_variable():
    """`fn plus_one(i)` called under `forall i` read the quantifier's i for its own."""
    for param in ("i", "j"):  # the repro and its control must agree
        text = FN_CAPTURE.format(p=param)
        ref = Reference(parse(text))
        assert ref.invariant("q_capture") is True and ref.invariant("q_capture_false") is False
        for engine in ("explicit", "bmc", "induction"):
            v = _verdicts(text, engine)
            assert v["q_capture"] in (Verdict.HOLDS, Verdict.PROVED), (param, engine, v)
            assert v["q_capture_false"] is Verdict.VIOLATED, (param, engine, v)


def test_fn_parameter_captured_by_a_lemma_parameter():
    """A lemma calling a fn whose parameters share the lemma's names dropped the `- 1`
    of `wait_end(..., advance - 1)`: a busy wait one cycle short was proved."""
    v = _verdicts(LEMMA_SHORT)
    assert v["mut_busy_wait_short"] is Verdict.VIOLATED
    assert v["inst_short"] is Verdict.VIOLATED


def test_fn_parameter_captured_by_a_callers_fn_parameter():
    """A fn called inside a fn: the inner body's free name is the global, not the outer
    fn's parameter of the same name."""
    text = """model m; var x: 0..9 = 5; fn inner(v) = x + v; fn outer(x) = inner(1);
    process p { skip; } invariant six: outer(2) == 6;"""
    assert Reference(parse(text)).invariant("six") is True
    assert _verdicts(text)["six"] is Verdict.HOLDS


def test_inline_parameter_captured_by_a_callers_inline_parameter():
    """An inline called from an inline: a global the callee reads is not the caller's
    parameter of the same name."""
    text = """model m; var x: 0..9 = 5; var out: 0..9 = 0;
    inline put(v) { out = x + v; }
    inline outer(x) { put(1); }
    process p { outer(2); }
    invariant six: p@end -> out == 6;"""
    assert _verdicts(text)["six"] is Verdict.HOLDS


def test_array_argument_captured_by_a_global_of_the_same_name():
    """An array parameter passed on to another fn or inline: `outer(a)` called with b
    hands b on, even though a global array is named a too."""
    fn = """model m; var a[2]: 0..3 = {1, 1}; var b[2]: 0..3 = {2, 2};
    fn first(q) = q[0]; fn outer(a) = first(a);
    process p { skip; } invariant reads_b: outer(b) == 2;"""
    assert Reference(parse(fn)).invariant("reads_b") is True
    assert _verdicts(fn)["reads_b"] is Verdict.HOLDS
    inline = """model m; var a[2]: bool = {false, false}; var b[2]: bool = {false, false};
    inline put(q) { q[0] = true; }
    inline outer(a) { put(a); }
    process p { outer(b); }
    invariant wrote_b: p@end -> b[0] && !a[0];"""
    assert _verdicts(inline)["wrote_b"] is Verdict.HOLDS


# Generated specs: constants, variables, fns whose parameters and quantifiers reuse the
# names i, j, k (so every kind of shadowing and name clash occurs, fn parameters named
# like the caller's quantifier variable above all), and an invariant over them, checked
# in the initial state (the only values there are: the process skips).

BOUND = ("i", "j", "k")
GLOBALS = ("C0", "C1", "v0", "v1")


@st.composite
def _int(draw, scope, fns, depth, names=GLOBALS):
    atoms = [st.integers(-4, 6).map(str), st.sampled_from(names)]
    if scope:
        atoms.append(st.sampled_from(sorted(scope)))
    if depth <= 0:
        return draw(st.one_of(*atoms))
    choice = draw(st.integers(0, 8))
    if choice <= 1:
        return draw(st.one_of(*atoms))
    if choice <= 3:
        op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
        a = draw(_int(scope, fns, depth - 1, names))
        if op in "/%":
            return f"({a} {op} {draw(st.sampled_from(['2', '3', '-2']))})"
        return f"({a} {op} {draw(_int(scope, fns, depth - 1, names))})"
    if choice == 4:
        return f"({draw(_bool(scope, fns, depth - 1, names))} ? {draw(_int(scope, fns, depth - 1, names))} " \
               f": {draw(_int(scope, fns, depth - 1, names))})"
    if choice == 5:
        f = draw(st.sampled_from(["min", "max"]))
        return f"{f}({draw(_int(scope, fns, depth - 1, names))}, {draw(_int(scope, fns, depth - 1, names))})"
    callable_ = [f for f in fns if f[2] == "int"]
    if not callable_:
        return f"(-{draw(_int(scope, fns, depth - 1, names))})"
    name, arity, _ = draw(st.sampled_from(callable_))
    return f"{name}({', '.join(draw(_int(scope, fns, depth - 1, names)) for _ in range(arity))})"


@st.composite
def _bool(draw, scope, fns, depth, names=GLOBALS):
    choice = draw(st.integers(0, 6 if depth > 0 else 0))
    if choice == 0:
        op = draw(st.sampled_from(["<", "<=", "==", "!=", ">"]))
        return f"({draw(_int(scope, fns, depth - 1, names))} {op} {draw(_int(scope, fns, depth - 1, names))})"
    if choice == 1:
        op = draw(st.sampled_from(["&&", "||", "->", "=="]))
        return f"({draw(_bool(scope, fns, depth - 1, names))} {op} {draw(_bool(scope, fns, depth - 1, names))})"
    if choice == 2:
        return f"(!{draw(_bool(scope, fns, depth - 1, names))})"
    if choice <= 4:  # quantifiers, often over a name already bound or a parameter
        var = draw(st.sampled_from(BOUND))
        kind = draw(st.sampled_from(["forall", "exists"]))
        lo = draw(st.integers(-1, 1))
        hi = lo + draw(st.integers(0, 2))
        return f"({kind} {var} in {lo}..{hi}: ({draw(_bool(scope | {var}, fns, depth - 1, names))}))"
    callable_ = [f for f in fns if f[2] == "bool"]
    if not callable_:
        return f"({draw(_int(scope, fns, depth - 1, names))} >= 0)"
    name, arity, _ = draw(st.sampled_from(callable_))
    return f"{name}({', '.join(draw(_int(scope, fns, depth - 1, names)) for _ in range(arity))})"


@st.composite
def _specs(draw):
    fns: list[tuple[str, int, str]] = []
    lines = ["model gen;", "const C0 = 2;", "const C1 = -3;", "var v0: -9..9 = 4;", "var v1: -9..9 = -1;"]
    for n in range(draw(st.integers(1, 3))):
        params = draw(st.lists(st.sampled_from(BOUND), min_size=1, max_size=3, unique=True))
        result = draw(st.sampled_from(["int", "bool"]))
        gen = _int if result == "int" else _bool
        body = draw(gen(set(params), fns, 3))
        lines.append(f"fn f{n}({', '.join(params)}) = {body};")
        fns.append((f"f{n}", len(params), result))
    lines.append("process p { skip; }")
    # the expression sits under a quantifier that binds one of the fns' parameter names
    var = draw(st.sampled_from(BOUND))
    if draw(st.integers(0, 3)):  # mostly a call right under the quantifier
        name, arity, _ = draw(st.sampled_from(fns))
        arg = st.one_of(_int({var}, fns, 2), st.integers(1, 3).map(lambda c: f"({var} + {c})"))
        body = f"{name}({', '.join(draw(arg) for _ in range(arity))})"
    else:
        body = draw(_int({var}, fns, 3)) if draw(st.booleans()) else draw(_bool({var}, fns, 3))
    lines.append(f"invariant inv: forall {var} in 0..{draw(st.integers(0, 2))}: ({body});")
    return "\n".join(lines) + "\n"


def _literal(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_specs())
def test_reference_evaluator_agrees_with_the_compiled_code(text):
    """The compiled code computes the reference's value of a generated expression, for
    each value of the quantifier around it: the invariant compares the expression with
    a table of the reference's values (literals only, nothing to capture), so it holds
    in the initial state exactly when the two agree."""
    spec = parse(text)
    ref = Reference(spec)
    q = ref.invariants["inv"]
    values = []
    try:
        for k in range(q.lo.value, q.hi.value + 1):
            values.append(ref.eval(subst(q.body, {q.var: ast.Number(q.span, k)})))
    except RefModelError as e:  # then the compiled code fails too, in the initial state
        ex = explore(compiled(text))
        assert ex.model_error is not None and ex.model_error.trace.length == 0, (text, e)
        return
    table = _literal(values[-1])
    for k in range(len(values) - 2, -1, -1):
        table = f"({q.var} == {k} ? {_literal(values[k])} : {table})"
    head, _, _ = text.rpartition("invariant inv:")
    body = text[text.index(": (", text.index("invariant inv:")) + 3:text.rindex(");")]
    checked = head + f"invariant inv: forall {q.var} in 0..{len(values) - 1}: (({body}) == {table});\n"
    ex = explore(compiled(checked))
    assert ex.model_error is None, (checked, ex.model_error.message)
    assert "inv" not in ex.counterexamples, f"the reference's values {values} differ from the checker's for:\n{checked}"


@st.composite
def _lemma_specs(draw):
    """Constants and fns that read no state, and one lemma parameter named like a fn
    parameter, an expression over it (checked against the reference's table below)."""
    fns: list[tuple[str, int, str]] = []
    lines = ["model gen;", "const C0 = 2;", "const C1 = -3;"]
    for n in range(draw(st.integers(1, 3))):
        params = draw(st.lists(st.sampled_from(BOUND), min_size=1, max_size=3, unique=True))
        result = draw(st.sampled_from(["int", "bool"]))
        gen = _int if result == "int" else _bool
        lines.append(f"fn f{n}({', '.join(params)}) = {draw(gen(set(params), fns, 2, GLOBALS[:2]))};")
        fns.append((f"f{n}", len(params), result))
    var = draw(st.sampled_from(BOUND))
    name, arity, _ = draw(st.sampled_from(fns))
    arg = st.one_of(_int({var}, fns, 1, GLOBALS[:2]), st.integers(1, 3).map(lambda c: f"({var} + {c})"))
    return "\n".join(lines) + "\n", var, f"{name}({', '.join(draw(arg) for _ in range(arity))})"


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_lemma_specs())
def test_reference_evaluator_agrees_with_the_lemma_engine(case):
    """Lemma parameters are bound names too: Z3 proves `E == table` for every value of
    the parameter exactly when the table holds the reference's values of E."""
    head, var, body = case
    # the expression's syntax tree, parsed as the body of an invariant
    ref = Reference(parse(head + f"invariant inv: forall {var} in 0..3: ({body} == {body});\n"))
    q = ref.invariants["inv"]
    expr = q.body.left
    values = [ref.eval(subst(expr, {var: ast.Number(q.span, k)})) for k in range(4)]
    table = _literal(values[3])
    for k in (2, 1, 0):
        table = f"({var} == {k} ? {_literal(values[k])} : {table})"
    text = head + f"lemma agree: forall ({var}: 0..3) ({body}) == {table};\n"
    model = resolve(parse(text, "m.spec"))
    finding = check_lemma(model, model.lemmas[0])
    assert finding.verdict is Verdict.PROVED, f"the reference's values {values}, Z3: {finding.verdict.value}, for:\n{text}"


# ---- 2. a base case the solver could not decide is no proof ------------------------

STUCK = """model stuck; var a: 0..3 = any; process p { skip; }
invariant small: a < 3;   // false in the initial state a = 3
"""


class _BaseUnknown(Unrolling):
    """An unrolling whose base-case queries (from the initial states) all run out of
    time, as a hard base case does under a small --timeout."""

    def check(self, *formulas):
        if self.from_initial:
            return z3.unknown, None, "the solver timed out (raise --timeout)"
        return super().check(*formulas)


def test_induction_proves_with_an_unknown_base_case(tmp_path, monkeypatch):
    monkeypatch.setattr(induction_module, "Unrolling", _BaseUnknown)
    r = induction_module.induction(compiled(STUCK), 3)
    assert r.findings["small"].verdict is Verdict.UNKNOWN, r.findings["small"]
    assert "base case at depth 0" in r.findings["small"].note
    assert not r.stats.complete
    assert _run(tmp_path, STUCK, "--engine", "induction") == 3


def test_induction_unknown_base_case_is_not_assumed_for_others(monkeypatch):
    """Houdini proves a set of properties together only if each one's base case holds:
    a property whose base case is unknown cannot help prove another."""
    text = """model m; var a: 0..3 = any; var b: 0..3 = 0; process p { skip; b = a; }
    invariant a_small: a < 3;
    invariant b_small: b < 3;   // false at depth 2; inductive at k = 0 only with a_small
    """
    real = Unrolling.check

    def check(self, *formulas):  # only a_small's base-case queries (about `a`) are unknown
        if self.from_initial and ":a)" in str(formulas[0]):
            return z3.unknown, None, "the solver timed out (raise --timeout)"
        return real(self, *formulas)
    monkeypatch.setattr(Unrolling, "check", check)
    r = induction_module.induction(compiled(text), 1)
    assert r.findings["a_small"].verdict is Verdict.UNKNOWN
    assert r.findings["b_small"].verdict is Verdict.INCOMPLETE, r.findings["b_small"]


# ---- 3. an interrupted solver's model is unknown, not a checker bug ----------------

COUNTER = """model counter; var x: 0..2 = 0;
process inc[2] { var r: 0..2 = 0; r = x; x = r + 1; }
invariant both_counted: (inc[0]@end && inc[1]@end) -> x == 2;
"""


class _Interrupted:
    """A solver that answers sat with a model of the last query alone, as Z3 does when
    --timeout interrupts it while it builds the model: the model satisfies the query
    but not the unrolling under it."""

    def __init__(self, real: z3.Solver):
        self.real, self.recent = real, []

    def push(self):
        self.real.push()
        self.recent = []

    def add(self, *formulas):
        self.real.add(*formulas)
        self.recent.extend(formulas)

    def model(self):
        s = z3.Solver(ctx=self.real.ctx)
        s.add(*self.recent)
        assert s.check() == z3.sat
        return s.model()

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_interrupted_solver_reports_checker_bug(tmp_path, monkeypatch):
    real = bmc_module.new_solver
    monkeypatch.setattr(bmc_module, "new_solver", lambda *a, **k: _Interrupted(real(*a, **k)))
    for engine in (bmc, induction_module.induction):
        r = engine(compiled(COUNTER), 6)
        assert not r.checker_bugs, r.checker_bugs
        assert r.findings["both_counted"].verdict in (Verdict.INCOMPLETE, Verdict.UNKNOWN)
        assert "interrupted" in r.findings["both_counted"].note or "interrupted" in (r.stats.limit or "")
    assert _run(tmp_path, COUNTER, "--engine", "bmc", "--depth", "6") == 3
    assert _run(tmp_path, COUNTER, "--engine", "induction", "--depth", "6") == 3


def test_complete_model_that_replay_contradicts_is_still_a_checker_bug(monkeypatch):
    """The other side of the line: a model that satisfies every assertion and does not
    replay is the checker's fault, and says so."""
    from checker.engines.smt import encode
    real = encode.Evaluator.raw

    def off_by_one(self, v, t, slot):  # a deliberately wrong encoding of stores
        r = real(self, v, t, slot)
        return r + 1 if self.enc.layout.slots[slot].name == "x" else r
    monkeypatch.setattr(encode.Evaluator, "raw", off_by_one)
    r = induction_module.induction(compiled(COUNTER), 6)
    assert r.checker_bugs and "does not replay" in r.checker_bugs[0]
