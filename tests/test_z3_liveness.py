"""Liveness and `reachable` under the Z3 engines (engines/smt/lasso.py, issue 29).

The oracle is the explicit liveness engine (strongly connected components of the whole
state graph, with the Streett refinement for strong fairness), an algorithm unrelated to
the liveness-to-safety product the Z3 engines search: on random small models with
`unfair` processes, `fair` and `strongly fair` actions and `stutter`, pdr proves a
property exactly when the explicit engine says it holds and refutes it exactly when it
is violated, and bmc finds a lasso within K steps whenever the explicit engine's lasso
is that short, and never one the explicit engine does not have. Two mutations of the
fairness the product records show that the comparison can fail."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agreement import compiled
from test_coverage import REACH as LANGUAGE_REACH
from checker.cli import main
from checker.engines import liveness
from checker.engines.explicit import explore
from checker.engines.smt import lasso
from checker.export import json as jx
from checker.results.trace import Verdict

K = 6  # bmc's depth in the agreement test
EXAMPLES = 6


@st.composite
def conditions(draw, names, his):
    i = draw(st.integers(0, len(names) - 1))
    form = draw(st.sampled_from(["eq", "lt", "neq"]))
    if form == "eq":
        return f"{names[i]} == {draw(st.integers(0, his[i]))}"
    if form == "lt":
        return f"{names[i]} < {draw(st.integers(1, his[i]))}"
    return f"{names[i]} != {draw(st.integers(0, his[i]))}"


@st.composite
def statements(draw, names, his, depth=0):
    i = draw(st.integers(0, len(names) - 1))
    j = draw(st.integers(0, len(names) - 1))
    assign = f"{names[i]} = ({names[j]} + {draw(st.integers(1, 2))}) % {his[i] + 1};"
    kinds = ["assign", "assign", "await", "atomic", "choose", "stutter"] if depth == 0 else ["assign", "await"]
    kind = draw(st.sampled_from(kinds))
    if kind == "assign":
        return assign
    if kind == "await":
        return f"await {draw(conditions(names, his))};"
    if kind == "atomic":
        fairness = draw(st.sampled_from(["", "", "fair ", "strongly fair "]))
        return f"{fairness}atomic {{ await {draw(conditions(names, his))}; {assign} }}"
    if kind == "choose":
        fairness = draw(st.sampled_from(["", "fair ", "strongly fair "]))
        return f"choose {{ {assign} }} or {fairness}{{ {draw(statements(names, his, depth + 1))} }}"
    return "choose { stutter; } or { " + assign + " }"


@st.composite
def models(draw):
    n = draw(st.integers(1, 2))
    names = [f"v{i}" for i in range(n)]
    his = [draw(st.integers(1, 2)) for _ in names]
    lines = ["model random_live;"]
    lines += [f"var {name}: 0..{hi} = 0;" for name, hi in zip(names, his)]
    for p in range(2):
        body = " ".join(draw(st.lists(statements(names, his), min_size=1, max_size=3)))
        if draw(st.booleans()):
            body = f"loop {{ {body} }}"
        unfair = "unfair " if draw(st.integers(0, 3)) == 0 else ""
        lines.append(f"{unfair}process p{p} {{ {body} }}")
    goal = draw(conditions(names, his))
    if draw(st.booleans()):
        lines.append(f"property live: always eventually {goal};")
    else:
        lines.append(f"property live: always ({draw(conditions(names, his))} -> eventually {goal});")
    return "\n".join(lines) + "\n"


def explicit_verdicts(cm) -> dict[str, liveness.LivenessOutcome]:
    ex = explore(cm, graph=True)
    assert ex.stats.complete and ex.model_error is None
    return liveness.check(cm, ex)[0]


def assert_lasso_engines_agree(text: str, depth: int = K, with_pdr: bool = True) -> dict[str, tuple[str, str]]:
    """pdr decides every liveness property as the explicit engine does; bmc to `depth`
    finds a lasso iff the explicit engine has one of at most `depth` steps, or one
    longer that bmc happened to find at most that deep (never one it does not have);
    k-induction up to k = `depth` finds the lassos bmc finds, and proves only what holds
    (else: not k-inductive). `with_pdr=False` leaves pdr out. Returns property -> (the
    explicit verdict, induction's)."""
    cm = compiled(text)
    exp = explicit_verdicts(cm)
    runs = [lasso.lasso_bmc(cm, depth, timeout=60), lasso.lasso_induction(cm, depth, timeout=60)]
    if with_pdr:
        runs.append(lasso.lasso_pdr(cm, 0, timeout=60))
    assert not any(r.checker_bugs for r in runs), [r.checker_bugs for r in runs]
    out = {}
    for name, lo in exp.items():
        fb, fi, *fp = [r.findings[name] for r in runs]
        if lo.verdict is Verdict.HOLDS:
            assert all(f.verdict is Verdict.PROVED for f in fp), (name, "explicit: holds", fp)
            assert fb.verdict is Verdict.INCOMPLETE, (name, "explicit: holds", fb.verdict, fb.note)
            assert fi.verdict is Verdict.PROVED or "not k-inductive" in fi.note, (name, "explicit: holds", fi)
        else:
            assert lo.verdict is Verdict.VIOLATED, lo
            assert all(f.verdict is Verdict.VIOLATED for f in fp), (name, "explicit: violated", fp)
            for f in (fb, fi):  # induction's base case is bmc's search
                if lo.counterexample.trace.length <= depth:
                    assert f.verdict is Verdict.VIOLATED, (name, "explicit: lasso of "
                                                           f"{lo.counterexample.trace.length} steps", f.note)
                else:
                    assert f.verdict in (Verdict.VIOLATED, Verdict.INCOMPLETE), (name, "explicit: violated", f)
        for f in (fb, fi, *fp):
            if f.verdict is Verdict.VIOLATED:  # the lasso shown is the explicit engine's, on Z3's states
                assert f.counterexample.trace.loop_start is not None
        out[name] = (lo.verdict.value, fi.verdict.value)
    return out


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_bmc_and_pdr_agree_with_the_explicit_liveness_engine(text):
    verdicts = assert_lasso_engines_agree(text)
    event(f"explicit: {verdicts['live'][0]}, induction: {verdicts['live'][1]}")
    for word in ("unfair", "strongly fair", "fair atomic", "or fair", "stutter"):
        if word in text:
            event(f"has {word}")


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_bmc_and_induction_agree_with_the_explicit_liveness_engine_under_tso(text):
    """The same random models with one-entry store buffers (pdr is left out: Spacer may
    take a minute on a tso product, bench/README.md)."""
    verdicts = assert_lasso_engines_agree(text.replace("\n", "\nmemory tso(1);\n", 1), with_pdr=False)
    event(f"explicit: {verdicts['live'][0]}, induction: {verdicts['live'][1]}")


# the spec language's own examples (spec/LANGUAGE.md): fairness of a process, of a
# branch, strong fairness, stutter, and a process without fairness
FAIRNESS = {
    "weak": ("model w;\nvar irq: bool = false;\nvar delivered: bool = false;\nprocess timer { irq = true; }\n"
             "process guest { await irq; delivered = true; }\n"
             "property timer_delivered: always (irq -> eventually delivered);\n", "holds"),
    "unfair": ("model u;\nvar irq: bool = false;\nvar delivered: bool = false;\nprocess timer { irq = true; }\n"
               "unfair process guest { await irq; delivered = true; }\n"
               "property timer_delivered: always (irq -> eventually delivered);\n", "violated"),
    "branch": ("model b;\nvar virr: bool = false;\nvar delivered: bool = false;\nprocess device { virr = true; }\n"
               "process vcpu {\nguest:\n  choose { skip; } or fair { atomic { await virr; virr = false; "
               "delivered = true; } }\n  goto guest;\n}\n"
               "property irq_delivered: always (virr -> eventually delivered);\n", "holds"),
    "strong": ("model s;\nvar ready: bool = false;\nvar taken: bool = false;\n"
               "process producer {\nend_toggle:\n  loop { ready = !ready; }\n}\n"
               "process consumer { strongly fair atomic { await ready; taken = true; } }\n"
               "property eventually_taken: always eventually taken;\n", "holds"),
    # two strongly fair actions on one line (their monitor slots once shared a name, and
    # pdr proved what the explicit engine refutes: found by this test's generator)
    "same_line": ("model l;\nvar v0: 0..1 = 0;\nvar v1: 0..1 = 0;\nunfair process p0 { loop { choose { v0 = (v0 + 1) "
                  "% 2; } or strongly fair { v0 = (v0 + 2) % 2; } choose { v0 = (v0 + 1) % 2; } or strongly fair "
                  "{ v1 = (v0 + 1) % 2; } } }\nunfair process p1 { v0 = (v0 + 1) % 2; }\n"
                  "property live: always eventually v0 == 0;\n", "violated"),
}


@pytest.mark.parametrize("name", sorted(FAIRNESS))
def test_the_language_guide_fairness_examples(name):
    text, verdict = FAIRNESS[name]
    name = next(iter(explicit_verdicts(compiled(text))))
    assert assert_lasso_engines_agree(text)[name] == (verdict, "proved" if verdict == "holds" else verdict)


def test_dropping_weak_fairness_is_caught(monkeypatch):
    """Mutation: the product forgets weak fairness. Its lassos are unfair runs, which the
    explicit engine's judgement refuses (a checker bug), and the agreement fails."""
    weak = FAIRNESS["weak"][0]
    assert_lasso_engines_agree(weak)
    real = lasso.fair_actors
    monkeypatch.setattr(lasso, "fair_actors", lambda enc: [a for a in real(enc) if a.strong])
    with pytest.raises(AssertionError, match="does not replay|finds no fair lasso"):
        assert_lasso_engines_agree(weak)


def test_a_fair_actor_that_never_counts_as_disabled_is_caught(monkeypatch):
    """Mutation: every fair actor counts as enabled everywhere, so no run may stop and a
    loop must move every fair process. The product then misses real lassos (pdr proves
    what the explicit engine refutes); only the comparison with the oracle shows it."""
    unfair = FAIRNESS["unfair"][0]
    assert_lasso_engines_agree(unfair)
    real = lasso.fair_actors

    def always_enabled(enc):
        import z3
        return [lasso.FairActor(a.name, a.strong, z3.BoolVal(True, enc.ctx), a.moves) for a in real(enc)]

    monkeypatch.setattr(lasso, "fair_actors", always_enabled)
    with pytest.raises(AssertionError, match="explicit: violated"):
        assert_lasso_engines_agree(unfair)


# under tso, each store buffer's flush is a weakly fair actor (engines/liveness.py): the
# writer's store reaches memory eventually; a spinning toggler's stores may all be seen
# by nobody, its flushes in the loop (the explicit judge must walk flush steps too)
TSO = {
    "flag": ("model flag;\nmemory tso(1);\nvar ready: bool = false;\nvar seen: bool = false;\n"
             "process writer { ready = true; }\nprocess reader { await ready; seen = true; }\n"
             "property seen_eventually: always eventually seen;\n", "holds"),
    "toggle": ("model toggle;\nmemory tso(1);\nvar x: 0..1 = 0;\nvar got: bool = false;\n"
               "process toggler { loop { x = 1; x = 0; } }\nprocess waiter { await x == 1; got = true; }\n"
               "property got_it: always eventually got;\n", "violated"),
    "weak": (FAIRNESS["weak"][0].replace("\n", "\nmemory tso(1);\n", 1), "holds"),
}


@pytest.mark.parametrize("name", sorted(TSO))
def test_tso_liveness_agrees_with_the_explicit_engine(name):
    text, verdict = TSO[name]
    assert assert_lasso_engines_agree(text) == {next(iter(explicit_verdicts(compiled(text)))): (
        verdict, "proved" if verdict == "holds" else verdict)}


def test_dropping_the_flushes_fairness_is_caught(monkeypatch):
    """Mutation: the product forgets that buffers drain. Its lasso (the writer done, its
    store buffered for ever) is no fair run, and the explicit judge refuses it."""
    real = lasso.fair_actors
    monkeypatch.setattr(lasso, "fair_actors", lambda enc: [a for a in real(enc) if not a.name.startswith("memory")])
    with pytest.raises(AssertionError, match="finds no fair lasso"):
        assert_lasso_engines_agree(TSO["flag"][0])


def test_k_induction_assumes_only_a_certified_monitor_invariant(monkeypatch):
    """The step case assumes the monitor's rules only once one-step induction certified
    them: a planted non-invariant (the monitor never triggers) is refused, and the lasso
    is still found; assumed without the certificate, it proves a violated property, which
    the comparison with the explicit engine catches."""
    import z3
    unfair = FAIRNESS["unfair"][0]
    monkeypatch.setattr(lasso.Product, "monitor", lambda self: z3.Not(self.cur[len(self.enc.cur)]))  # !$after
    assert assert_lasso_engines_agree(unfair)["timer_delivered"] == ("violated", "violated")
    monkeypatch.setattr(lasso, "certify", lambda *a, **k: "")
    with pytest.raises(AssertionError, match="explicit: lasso of 1 steps"):
        assert_lasso_engines_agree(unfair)


def test_cli_induction_with_strengthen_proves_liveness(tmp_path, capsys):
    code, out = run(tmp_path, capsys, FAIRNESS["branch"][0], "--engine", "induction", "--strengthen")
    assert code == 0, out
    assert "proved by k-induction on the liveness-to-safety product, k = " in out
    assert "mined invariants: no fair lasso" in out


def test_a_path_that_is_no_fair_lasso_is_refused_by_the_explicit_judge():
    cm = compiled(FAIRNESS["weak"][0])
    g = explore(cm, graph=True).graph
    # the timer's step only: irq is set, the guest is enabled there and must still move
    path = [g.states[0], next(g.states[v] for v, cs in g.edges(0) if cs.step.text.startswith("irq"))]
    assert liveness.judge(cm, path, "timer_delivered", "test").verdict is Verdict.INCOMPLETE


def run(tmp_path, capsys, text, *args):
    f = tmp_path / "m.spec"
    f.write_text(text)
    code = main([str(f), *args])
    return code, capsys.readouterr().out


def test_cli_bmc_prints_the_lasso_as_the_explicit_engine_does(tmp_path, capsys):
    text = FAIRNESS["unfair"][0] + "expect violated timer_delivered;\n"
    code, out = run(tmp_path, capsys, text, "--engine", "bmc", "--json", str(tmp_path / "r.json"))
    assert code == 0, out  # every row decided: the lasso found, the rest complete (no longer loop-free path)
    assert "fair lasso: stem 1 step(s), loop 0 step(s); found by bmc at depth" in out
    cx = json.loads((tmp_path / "r.json").read_text())
    live = next(o for v in cx["variants"] for o in v["outcomes"] if o["property"] == "timer_delivered")
    assert live["verdict"] == "violated" and live["counterexample"]["trace"]["loop_start"] == 1
    assert live["counterexample"]["engine"] == "bmc"
    assert live["counterexample"]["message"] == (  # the explicit engine's words
        "`irq` holds after step 1, and `delivered` never holds from then on: the run stays after step 1 for "
        "ever (only guest could move there, and without fairness it may stall for ever)")
    code, out = run(tmp_path, capsys, FAIRNESS["weak"][0], "--engine", "bmc", "--depth", "4")
    assert code == 3 and "no fair lasso up to depth 4" in out


def test_cli_pdr_proves_liveness_and_exits_0(tmp_path, capsys):
    code, out = run(tmp_path, capsys, FAIRNESS["branch"][0], "--engine", "pdr")
    assert code == 0, out
    assert "proved by pdr: no fair lasso" in out and "certified by one-step induction" in out
    assert "pdr: inductive invariant proving irq_delivered (no fair lasso)" in out


REACH = LANGUAGE_REACH + "expect violated fires;\n"  # spec/LANGUAGE.md's example, its unreachable state expected


@pytest.mark.parametrize("engine", ["explicit", "bmc", "induction", "pdr"])
def test_reachable_under_each_engine(tmp_path, capsys, engine):
    code, out = run(tmp_path, capsys, REACH, "--engine", engine, "--json", str(tmp_path / "r.json"))
    doc = json.loads((tmp_path / "r.json").read_text())
    jsonschema.Draft202012Validator(jx.schema()).validate(doc)  # (the schema once had no `reachable` kind)
    rows = {o["property"]: o for v in doc["variants"] for o in v["outcomes"]}
    assert rows["arms"]["verdict"] == "holds" and rows["arms"]["note"] == "reached in 1 steps"
    assert rows["fires"]["verdict"] == "violated"
    assert rows["fires"]["note"].startswith("no reachable state satisfies it")
    assert code == 0, out


def test_bmc_leaves_a_deeper_reachable_state_incomplete(tmp_path, capsys):
    text = "model deep;\nvar x: 0..5 = 0;\nprocess p { loop { x = (x + 1) % 6; } }\nreachable five: x == 5;\n"
    code, out = run(tmp_path, capsys, text, "--engine", "bmc", "--depth", "3", "--json", str(tmp_path / "r.json"))
    row = next(o for v in json.loads((tmp_path / "r.json").read_text())["variants"] for o in v["outcomes"]
               if o["property"] == "five")
    assert code == 3 and row["verdict"] == "incomplete" and row["note"] == "not reached up to depth 3"
    code, out = run(tmp_path, capsys, text, "--engine", "bmc", "--depth", "5")
    assert code == 0, out


@pytest.mark.parametrize("engine", [lasso.lasso_bmc, lasso.lasso_pdr])
def test_a_property_that_goes_wrong_is_a_model_error_with_its_trace(engine):
    cm = compiled("model err;\nvar a[2]: bool = false;\nvar i: 0..2 = 0;\nprocess p { i = 1; i = 2; }\n"
                  "property x: always eventually a[i];\n")
    f = engine(cm, 4, timeout=60).findings["x"]
    assert f.verdict is Verdict.ERROR, f
    assert f.counterexample.message == "evaluating property x went wrong: index 2 is outside a (0..1)"
    assert f.counterexample.trace.length == 2  # as the explicit engine's: i = 1; i = 2
