"""--engine pdr (engines/smt/pdr.py): PDR/IC3 through Z3's Spacer.

Proofs come with an invariant that an independent one-step query re-checks;
violations at any depth come with a path replayed through the compiled steps; PDR
agrees with a complete explicit search on generated specs, and a mutated encoding
(one step dropped from the transition relation) makes that agreement fail."""

import os
from dataclasses import replace

import pytest
import z3
from hypothesis import HealthCheck, event, given, settings

from agreement import assert_pdr_agrees, compiled
from checker.cli import main
from checker.engines.smt import encode
from checker.engines.smt.encode import Encoding
from checker.engines.explicit import explore
from checker.engines.smt.houdini import Candidate, Family, mine
from checker.engines.smt.induction import inductive_subset
from checker.engines.smt.lasso import lasso_pdr
from checker.engines.smt.pdr import certify, pdr
from checker.results.trace import Verdict
from test_engines_agree import models

# two processes taking turns to count: x reaches b only after 2 * b steps, far beyond
# bmc's default depth; x stops at `top`, below the top of its range
COUNTER = """model counter;
var x: 0..63 = 0;
var turn: bool = false;
process a {{ loop {{ await !turn; if (x < {top}) {{ x = x + 1; }} turn = true; }} }}
process b {{ loop {{ await turn; if (x < {top}) {{ x = x + 1; }} turn = false; }} }}
invariant below: {inv};
"""


def test_a_holding_invariant_is_proved_with_a_certified_invariant():
    cm = compiled(COUNTER.format(top=40, inv="x <= 40"))
    r = pdr(cm, 0, 240)  # a bound against a hang, not a measure: a loaded CI machine once took over 60 s
    assert not r.checker_bugs
    assert r.findings["below"].verdict is Verdict.PROVED
    assert "certified" in r.findings["below"].note
    assert r.stats.complete and r.stats.engine == "pdr"
    assert any(line.startswith("pdr: inductive invariant proving") for line in r.stats.notes)


@pytest.mark.slow
def test_a_deep_violation_is_found_and_replays():
    cm = compiled(COUNTER.format(top=40, inv="x != 6"))
    r = pdr(cm, 0, 240)  # a bound against a hang, not a measure: a loaded CI machine once took over 60 s
    assert not r.checker_bugs
    f = r.findings["below"]
    assert f.verdict is Verdict.VIOLATED
    # 6 increments of 3 steps (await, increment, turn) but the last one's turn: 17 steps
    # and more (Spacer's path need not be a shortest one)
    assert f.counterexample.trace.length >= 17
    assert f.counterexample.engine == "pdr"


def test_a_query_that_times_out_leaves_only_its_property_undecided():
    cm = compiled(COUNTER.format(top=40, inv="x != 37"))
    r = pdr(cm, 0, 1)
    f = r.findings["below"]
    assert f.verdict is Verdict.UNKNOWN
    assert f.note.startswith("pdr gave up: the solver timed out (raise --timeout), with Spacer's frames at level")
    assert r.findings["deadlock"].verdict is Verdict.PROVED
    assert not r.stats.complete


def test_the_certificate_refuses_what_is_not_an_inductive_invariant():
    enc = Encoding(compiled(COUNTER.format(top=4, inv="x != 3")))
    bad = enc.properties[0].bad
    x = next(v for v in enc.cur if str(v) == "x")
    assert certify(enc, x != 0, [bad], 10) == "an initial state falsifies it"
    assert certify(enc, x <= 1, [bad], 10) == "a step leaves it"
    assert certify(enc, enc.T, [bad], 10) == "a state it allows is bad"
    assert certify(enc, enc.T, [z3.BoolVal(False, enc.ctx)], 10) == ""


def test_a_certificate_step_query_that_times_out_is_split(monkeypatch):
    """The step query over an invariant's conjuncts times out whenever it asks more than
    one: asked one by one they still certify the mined lemmas, still refuse a lemma a
    step leaves, and a conjunct undecided alone leaves the invariant not re-checked."""
    from checker.engines.smt import pdr as engine

    cm = compiled(COUNTER.format(top=4, inv="x != 3"))
    enc = Encoding(cm)
    kept, _ = inductive_subset(enc, mine(cm, enc, 1000), 60)
    lemmas = z3.And(*[c.holds for c in kept])
    bad = z3.BoolVal(False, enc.ctx)
    real, unknowns = engine.checked, [0]
    alone: list = []

    def timing_out(s):
        last = s.assertions()[-1]
        if (z3.is_or(last) and len(last.children()) > 1) or any(last.eq(t) for t in alone):
            unknowns[0] += 1
            return z3.unknown, None, "the solver timed out (raise --timeout)"
        return real(s)

    monkeypatch.setattr(engine, "checked", timing_out)
    assert len(kept) > 1 and certify(enc, enc.T, [bad], 10, lemmas) == "" and unknowns[0] > 0
    assert certify(enc, enc.T, [bad], 10, z3.And(lemmas, x_at_most_two(enc).holds)) == "a step leaves it"
    alone.append(z3.Not(z3.substitute(kept[0].holds, *zip(enc.cur, enc.nxt))))
    assert certify(enc, enc.T, [bad], 10, lemmas) == "not re-checked: the solver timed out (raise --timeout)"


def test_a_model_error_stops_the_run_as_the_explicit_search_stops():
    text = """model err;
var x: 0..3 = 0;
process p { loop { x = x + 1; } }
invariant small: x <= 3;
"""
    r = pdr(compiled(text), 0, 60)
    assert r.model_error is not None and r.model_error.engine == "pdr"
    assert r.findings["small"].verdict is Verdict.INCOMPLETE
    assert r.findings["small"].note == "search stopped at a model error"
    assert not r.stats.complete


def test_command_line(tmp_path, capsys):
    spec = tmp_path / "counter.spec"
    spec.write_text(COUNTER.format(top=3, inv="x != 2") + "expect violated below;\n")
    assert main([str(spec), "--engine", "pdr"]) == 0
    out = capsys.readouterr().out
    assert "PDR/IC3" in out and "violated" in out
    with pytest.raises(SystemExit) as e:
        main([str(spec), "--engine", "pdr", "--depth", "3"])
    assert e.value.code == 2
    assert "pdr has no bound" in capsys.readouterr().err


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_pdr_agrees_with_the_explicit_engine(text):
    for name, verdict in sorted(assert_pdr_agrees(compiled(text)).items()):  # --hypothesis-show-statistics
        event(f"{name if name in ('inv', 'deadlock') else 'assert'} {verdict}")


def test_agreement_fails_on_a_mutated_encoding(monkeypatch):
    """Drop one step (b's increment) from the transition relation: PDR then proves, with
    an invariant its certificate accepts (it checks against the same encoding), what
    the explicit engine refutes; only the agreement with the explicit engine sees it."""
    text = COUNTER.format(top=4, inv="x != 2")
    cm = compiled(text)
    assert_pdr_agrees(cm)
    build = Encoding._build

    def mutated(self, width):
        needed = build(self, width)
        drop = next(tr.index for tr in self.transitions if tr.instance.name == "b" and tr.updates)
        self.trans = z3.And(self.trans, self.sel != drop)
        return needed

    monkeypatch.setattr(encode.Encoding, "_build", mutated)
    with pytest.raises(AssertionError, match="explicit: violated"):
        assert_pdr_agrees(cm)


def test_an_undecided_model_error_leaves_the_proofs_qualified(monkeypatch):
    from checker.engines.smt import pdr as engine

    ask = engine.Query.ask

    def undecided_errors(self, bad):
        if bad.eq(next(p.bad for p in self.enc.properties if p.name == encode.MODEL_ERROR)):
            return z3.unknown, None, "the solver timed out (raise --timeout)"
        return ask(self, bad)

    monkeypatch.setattr(engine.Query, "ask", undecided_errors)
    r = pdr(compiled(COUNTER.format(top=4, inv="x <= 4")), 0, 60)
    f = r.findings["below"]
    assert f.verdict is Verdict.PROVED
    assert f.note.endswith("it holds in every state reached without a model error, but model errors not "
                           "ruled out (pdr gave up: the solver timed out (raise --timeout))")
    assert not r.stats.complete and r.stats.limit.startswith("model errors not ruled out")


@pytest.mark.slow
@pytest.mark.parametrize("model, variant", [("hv_timer_preempt", "base"), ("hv_timer_preempt", "fixed"),
                                            ("halt_poll", "no_poll"), ("twins/halt_poll_hand", "poll_for_timer"),
                                            ("twins/ipi_fastpath_reenter_hand", "base")])
def test_shipped_variants_pdr_decides_as_the_explicit_engine(model, variant):
    """Shipped variants PDR decides within its default timeout (bench/pdr_table.py
    measures the others, and says why it gives up on them): each holding safety property
    proved, each violated one found, as the explicit engine says. ipi_fastpath's v5_kick
    left this list when its IPIs went in flight (915 states, then 8,839): pdr now times
    out on its scheduling_while_atomic at frame 18. halt_poll's poll_for_timer left it
    when the model was written with contexts (its witness 8 steps by hand, 12 with the
    arming, the expiry and the irq entry as steps): pdr gives up at level 17 in 60 s, so
    the hand encoding's poll_for_timer stands in for it; ipi_fastpath_reenter's base the
    same way (written with contexts, pdr gives up on its deadlock at level 17)."""
    here = os.path.dirname(__file__)
    path = f"{here}/{model}.spec" if model.startswith("twins/") else f"{here}/../models/{model}.spec"
    verdicts = assert_pdr_agrees(compiled(open(path, encoding="utf-8").read(), variant, path))
    assert "proved" in verdicts.values()


# y <= x holds, but plain pdr needs several seconds to find why (a's two increments and
# b's two decrements interleave); the mined lemmas (the states reached) prove it at once
PAIR = """model pair;
var x: 0..200 = 0;
var y: 0..200 = 0;
process a { loop { if (x < 20) { x = x + 1; y = y + 1; } } }
process b { loop { await x == y; if (y > 0) { y = y - 1; x = x - 1; } } }
invariant ordered: y <= x;
"""

# a request is always served: the liveness product's proof with the mined lemmas
PING = """model ping;
var req: bool = false;
var served: 0..3 = 0;
process client { loop { await !req; req = true; } }
process server { loop { await req; if (served < 3) { served = served + 1; } req = false; } }
property answered: always (req -> eventually !req);
"""


def strengthened_run(text: str):
    cm = compiled(text)
    return cm, pdr(cm, 0, 60, strengthen=1000)


@pytest.fixture(scope="module")
def strengthened():
    return strengthened_run(PAIR)


def x_at_most_two(enc: Encoding, test=lambda s: True) -> Candidate:
    """A candidate that is no invariant of COUNTER (x reaches 4)."""
    x = next(v for v in enc.cur if str(v) == "x")
    return Candidate("x <= 2", z3.ULE(x, z3.BitVecVal(2, x.size(), enc.ctx)), test, Family.VALUES)


def test_strengthened_pdr_proves_with_the_mined_lemmas(strengthened):
    cm, r = strengthened
    assert not r.checker_bugs
    f = r.findings["ordered"]
    assert f.verdict is Verdict.PROVED and "mined lemmas" in f.note and "certified" in f.note
    assert r.stats.complete
    assert "jointly inductive, given to Spacer" in r.stats.notes[0]
    assert r.invariants and all(c.test(s) for c in r.invariants for s in explore(cm, graph=True).graph.states)


def plant(monkeypatch):
    """The mutation: a `lemma` that is no invariant slipped past the Houdini pruning."""
    from checker.engines.smt import pdr as engine

    pruned = engine.inductive_subset

    def planted(enc, mined, timeout):
        kept, dropped = pruned(enc, mined, timeout)
        return [*kept, x_at_most_two(enc)], dropped

    monkeypatch.setattr(engine, "inductive_subset", planted)


def test_a_mined_lemma_that_is_no_invariant_is_caught_by_the_certificate(monkeypatch):
    """x <= 2 given to Spacer as background makes x's violation unreachable in its
    clauses, so Spacer proves it (first that no model error is reachable); the
    certificate re-checks the lemmas with Spacer's invariant and refuses: a checker
    bug, never a proof."""
    cm = compiled(COUNTER.format(top=4, inv="x != 3"))
    assert pdr(cm, 0, 60, strengthen=5).findings["below"].verdict is Verdict.VIOLATED
    plant(monkeypatch)
    r = pdr(cm, 0, 60, strengthen=5)  # (a search cut short: the lemmas are not all states, so Spacer gets them)
    assert r.findings["below"].verdict is not Verdict.PROVED and not r.stats.complete
    assert r.checker_bugs and all("does not certify (a step leaves it)" in bug for bug in r.checker_bugs)


def test_a_violation_under_complete_lemmas_is_found_and_replays():
    """The states reached, one of them bad: Spacer looks for the path without them."""
    f = pdr(compiled(COUNTER.format(top=4, inv="x != 3")), 0, 60, strengthen=1000).findings["below"]
    assert f.verdict is Verdict.VIOLATED and f.counterexample.engine == "pdr"


def test_houdini_drops_a_wrong_candidate_before_pdr_sees_it():
    cm = compiled(COUNTER.format(top=4, inv="x != 3"))
    enc = Encoding(cm)
    mined = mine(cm, enc, 1000)
    wrong = x_at_most_two(enc, lambda s: s[0] <= 2)
    kept, _ = inductive_subset(enc, replace(mined, candidates=(*mined.candidates, wrong)), 60)
    assert wrong not in kept and len(kept) == len(mined.candidates)


@pytest.fixture(scope="module")
def ping():
    return strengthened_run(PING)


def test_the_liveness_product_is_proved_with_the_mined_lemmas(ping):
    cm, safety = ping
    r = lasso_pdr(cm, 0, 60, True, lemmas=tuple(safety.invariants))
    assert not r.checker_bugs
    f = r.findings["answered"]
    assert f.verdict is Verdict.PROVED and "certified" in f.note
    assert any("and the " in line and "mined lemmas" in line for line in r.stats.notes)


def test_a_wrong_lemma_on_the_liveness_product_is_caught(ping):
    cm, safety = ping
    enc = Encoding(cm)
    req = next(v for v in enc.cur if str(v) == "req")
    wrong = Candidate("!req", req == z3.BitVecVal(0, req.size(), enc.ctx), lambda s: True, Family.VALUES)
    r = lasso_pdr(cm, 0, 60, True, lemmas=(*safety.invariants, wrong))
    assert r.findings["answered"].verdict is Verdict.CHECKER_BUG
    assert "does not certify" in r.findings["answered"].note


def test_command_line_strengthen(tmp_path, capsys):
    spec = tmp_path / "pair.spec"
    spec.write_text(PAIR)
    assert main([str(spec), "--engine", "pdr", "--strengthen"]) == 0
    assert "pdr --strengthen: " in capsys.readouterr().out


def test_the_api_takes_strengthen_for_induction_and_pdr():
    from checker.api import check_source
    from checker.base.errors import SpecError

    r = check_source(PAIR, engine="pdr", strengthen=True)
    o = next(o for o in r.variants[0].outcomes if o.property == "ordered")
    assert o.verdict is Verdict.PROVED and "mined lemmas" in o.note
    assert any(n.startswith("pdr --strengthen: ") for n in r.variants[0].stats.notes)
    # induction proves `ordered` only with the mined invariants (plain pdr takes ~45 s here)
    def ordered(**options):
        r = check_source(PAIR, engine="induction", **options)
        return next(o for o in r.variants[0].outcomes if o.property == "ordered")

    assert ordered(strengthen=1000).note == "proved by k-induction, k = 0, with 15 mined invariants"
    assert ordered().verdict is Verdict.INCOMPLETE
    for engine, bad in (("bmc", True), ("pdr", 0), ("pdr", "100")):
        with pytest.raises(SpecError, match="strengthen"):
            check_source(PAIR, engine=engine, strengthen=bad)
