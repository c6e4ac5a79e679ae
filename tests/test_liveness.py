"""Liveness under weak fairness, on tiny models whose answers are worked out by hand.

Every counterexample the engine returns is also checked here, independently of the
engine's own graph search: the trace is replayed through the compiled steps, the loop
must close, P must hold where the lasso says and Q nowhere after it, and every fair
process must move in the loop or be unable to move in one of its states (enabledness
recomputed by running the step functions).
"""

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checker import ir
from checker.cli import main
from checker.backends.python import AssertionViolation, StoreBufferFull, compile_program
from checker.engines import liveness
from checker.engines.explicit import Limits, decoder_for, explore
from checker.front.parse import parse
from checker.resolve import resolve
from checker.results.trace import Verdict


def check(text, variant="base", limits=Limits(), defines=None):
    cm = compile_program(ir.build(resolve(parse(text, "t.spec"), variant, defines or {})))
    ex = explore(cm, limits, graph=True)
    out, _ = liveness.check(cm, ex)
    for prop, trig, goal in cm.liveness:
        if out[prop.name].verdict is Verdict.VIOLATED:
            validate_lasso(cm, ex, out[prop.name].counterexample, trig, goal)
    return cm, ex, out


def validate_lasso(cm, ex, cx, trig, goal):
    """An engine-independent check that a lasso is a fair run violating the property."""
    t = cx.trace
    decoder = decoder_for(cm)
    raw = {decoder.decode(s): s for s in ex.graph.states}
    states = [raw[s] for s in t.states]
    assert t.loop_start is not None and 0 <= t.loop_start <= t.length
    # every step is a real transition of the process (or store buffer) it names
    def steps_of(a, s):
        if a.kind == "flush":
            f = next(f for f in cm.flushes if a.text.startswith(f"flush {f.buffer.cpu}:"))
            return f.steps_at[s[f.slot]]
        inst = next(x for x in cm.instances if x.name == a.process)
        return inst.steps_at[s[inst.pc_slot]]

    for i, a in enumerate(t.actions):
        succs = [tuple(r) for st in steps_of(a, states[i]) for r in [st.fn(states[i])] if r]
        assert states[i + 1] in succs, f"step {i + 1} is not a transition of {a.process}"
    assert states[-1] == states[t.loop_start], "the loop closes"
    # P held somewhere, and Q never holds from there on (the loop included)
    loop_avoids_q = not any(goal(x) for x in states[t.loop_start:])
    assert loop_avoids_q and any((trig is None or trig(states[i])) and not any(goal(x) for x in states[i:])
                                 for i in range(len(states)))

    def enabled(steps_at, slot, s):
        for step in steps_at[s[slot]]:
            try:
                if step.fn(s) is not None:
                    return True
            except AssertionViolation:
                return True
            except StoreBufferFull:  # waits for a flush: not enabled
                continue
        return False

    loop = states[t.loop_start:]
    loop_actions = t.actions[t.loop_start:]
    movers = {a.process for a in loop_actions if a.kind != "flush"}
    for inst in cm.instances:
        if inst.process.unfair:
            continue
        assert inst.name in movers or any(not enabled(inst.steps_at, inst.pc_slot, s) for s in loop), \
            f"{inst.name} is enabled throughout the loop and never moves: not a fair run"
    for f in cm.flushes:  # every store buffer drains
        flushed = any(a.kind == "flush" and a.text.startswith(f"flush {f.buffer.cpu}:") for a in loop_actions)
        assert flushed or any(not enabled(f.steps_at, f.slot, s) for s in loop), \
            f"{f.buffer.cpu}'s store buffer never drains in the loop: not a fair run"


SPIN = """
model spin;
var flag: bool = false;
var done: bool = false;
process waiter {
  while (!flag) { skip; }
  done = true;
}
process setter {
  flag = true;
}
property finishes: always eventually done;
"""


def test_spinning_waiter_finishes_under_fairness():
    # the only cycle (waiter spinning while flag is false) starves setter, which is
    # enabled in both of its states: weak fairness rules it out
    cm, ex, out = check(SPIN)
    assert out["finishes"].verdict is Verdict.HOLDS
    assert out["finishes"].relies_on == ("waiter", "setter")


def test_spinning_waiter_may_spin_forever_when_setter_is_unfair():
    cm, ex, out = check(SPIN.replace("process setter", "unfair process setter"))
    o = out["finishes"]
    assert o.verdict is Verdict.VIOLATED
    t = o.counterexample.trace
    # stem: none (done is false at the start); loop: `while (!flag)`, `skip;`
    assert t.loop_start == 0
    assert [a.text for a in t.actions] == ["while (!flag)", "skip;"]
    assert all(a.process == "waiter" for a in t.actions)
    assert "no fairness assumed for setter" in o.counterexample.message


STARVATION = """
model starve;
var lock: bool = false;
var got: bool = false;
process hog {
  loop {
    atomic { await !lock; lock = true; }
    lock = false;
  }
}
process victim {
  atomic { await !lock; lock = true; }
  got = true;
  lock = false;
}
property victim_gets_lock: always eventually got;
"""


def test_weak_fairness_allows_starvation_of_a_process_that_is_not_always_enabled():
    # The hog takes and drops the lock forever. The victim can move only while the lock
    # is free, and the hog holds it in every other state: the victim is not continuously
    # enabled, so weak fairness does not force it to run (strong fairness would).
    cm, ex, out = check(STARVATION)
    o = out["victim_gets_lock"]
    assert o.verdict is Verdict.VIOLATED
    t = o.counterexample.trace
    assert t.loop_start == 0 and t.length == 2
    assert [a.process for a in t.actions] == ["hog", "hog"]
    assert "victim cannot move after step 1" in o.counterexample.message


def test_starvation_disappears_when_the_hog_keeps_the_victim_enabled():
    # with a lock that the hog never holds across a state, the victim is always
    # enabled, so a fair run lets it in
    text = STARVATION.replace("atomic { await !lock; lock = true; }\n    lock = false;",
                              "atomic { await !lock; lock = true; lock = false; }")
    cm, ex, out = check(text)
    assert out["victim_gets_lock"].verdict is Verdict.HOLDS


LASSO = """
model lasso;
var x: 0..3 = 0;
var y: bool = false;
process p {
  x = 1; x = 2; x = 3;
  loop { y = true; y = false; }
}
property back_to_zero: always (x == 2 -> eventually x == 0);
"""


def test_lasso_with_known_stem_and_loop():
    cm, ex, out = check(LASSO)
    o = out["back_to_zero"]
    assert o.verdict is Verdict.VIOLATED
    t = o.counterexample.trace
    # stem x=1, x=2, x=3 (3 steps, to the loop head); loop y=true, y=false (2 steps)
    assert t.loop_start == 3 and t.length == 5
    assert [a.text for a in t.actions] == ["x = 1;", "x = 2;", "x = 3;", "y = true;", "y = false;"]
    assert t.states[3] == t.states[5]
    assert "`x == 2` holds after step 2" in o.counterexample.message
    assert o.note == "fair lasso: stem 3 step(s), loop 2 step(s)"


def test_the_stem_is_the_shortest():
    text = """model m; var a: 0..3 = 0;
    process p {
      choose { a = 3; } or { a = 1; a = 2; a = 3; }
      loop { skip; }
    }
    property zero_again: always eventually a == 0;"""
    cm, ex, out = check(text)
    t = out["zero_again"].counterexample.trace
    # the short branch (1 step), then the `skip` self-loop (1 step)
    assert t.loop_start == 1 and t.length == 2
    assert [a.text for a in t.actions] == ["a = 3;", "skip;"]


TOGGLE = """
model toggle;
var a: 0..1 = 0;
process p { loop { a = 1; a = 0; } }
property sees_one: always eventually a == 1;
property sees_zero: always eventually a == 0;
"""


def test_always_eventually_holds_for_a_toggle_and_fails_when_it_stops():
    cm, ex, out = check(TOGGLE)
    assert out["sees_one"].verdict is Verdict.HOLDS
    assert out["sees_zero"].verdict is Verdict.HOLDS
    # unfair: the toggler may stall for ever in a state with a == 0
    cm, ex, out = check(TOGGLE.replace("process p", "unfair process p"))
    o = out["sees_one"]
    assert o.verdict is Verdict.VIOLATED
    assert o.counterexample.trace.length == 0 and o.counterexample.trace.loop_start == 0
    assert "only p could move there" in o.counterexample.message
    t = out["sees_zero"].counterexample.trace
    assert t.length == 1 and t.loop_start == 1  # a = 1, then p stalls


def test_a_run_that_terminates_stays_in_its_last_state():
    # after x = 1 the process ends: no successor, and x never becomes 2
    cm, ex, out = check("model m; var x: 0..2 = 0; process p { x = 1; }\n"
                        "property two: always (x == 1 -> eventually x == 2);")
    o = out["two"]
    assert o.verdict is Verdict.VIOLATED
    t = o.counterexample.trace
    assert t.length == 1 and t.loop_start == 1
    assert "no process can move there" in o.counterexample.message


def test_a_deadlock_after_the_request_violates_leads_to():
    text = """model m;
    var req: bool = false; var l1: bool = false; var l2: bool = false; var served: bool = false;
    process a { req = true; atomic { await !l1; l1 = true; } atomic { await !l2; l2 = true; } served = true; }
    process b { atomic { await !l2; l2 = true; } atomic { await !l1; l1 = true; } l1 = false; l2 = false; }
    property request_served: always (req -> eventually served);"""
    cm, ex, out = check(text)
    o = out["request_served"]
    assert o.verdict is Verdict.VIOLATED
    t = o.counterexample.trace
    assert t.loop_start == t.length == 3  # req, a takes l1, b takes l2: stuck
    assert "deadlock" in ex.counterexamples


def test_a_fair_process_spinning_beside_a_finished_one_is_a_violation():
    # the only thing left is a fair spinner: the run is infinite and fair, and x stays 1
    text = """model m; var x: 0..2 = 0; var y: bool = false;
    process p { x = 1; }
    process spin { loop { y = !y; } }
    property two: always (x == 1 -> eventually x == 2);"""
    cm, ex, out = check(text)
    t = out["two"].counterexample.trace
    assert t.length - t.loop_start == 2 and {a.process for a in t.actions[t.loop_start:]} == {"spin"}


def test_trivially_true_goal_needs_no_fairness():
    cm, ex, out = check("model m; var x: 0..1 = 0; process p { x = 1; }\n"
                        "property t: always (x == 1 -> eventually x >= 0);")
    assert out["t"].verdict is Verdict.HOLDS
    assert out["t"].note == "holds without any fairness assumption"


def test_weak_fairness_is_per_instance():
    # two spinners wait for their own flag; one setter sets only flag[0]. Fairness of
    # the array's instances is separate: spinner 1 still spins for ever, fairly.
    text = """model m; var flag[2]: bool = false; var done[2]: bool = false;
    process w[2] { while (!flag[self]) { skip; } done[self] = true; }
    process s { flag[0] = true; }
    property zero_done: always eventually done[0];
    property one_done: always eventually done[1];"""
    cm, ex, out = check(text)
    assert out["zero_done"].verdict is Verdict.HOLDS
    assert out["one_done"].verdict is Verdict.VIOLATED


def test_a_property_that_goes_wrong_is_a_model_error_with_the_trace_there():
    cm, ex, out = check("model m; var a[2]: bool = false; var i: 0..3 = 0; process p { i = 1; i = 2; }\n"
                        "property bad: always eventually a[i];")
    o = out["bad"]
    assert o.verdict is Verdict.ERROR
    assert "index 2 is outside a (0..1)" in o.note
    assert [a.text for a in o.counterexample.trace.actions] == ["i = 1;", "i = 2;"]


def test_incomplete_search_gives_no_holds():
    cm, ex, out = check(TOGGLE, limits=Limits(max_states=2))
    assert not ex.stats.complete
    assert out["sees_one"].verdict is Verdict.INCOMPLETE
    assert "search cut short (max-states)" in out["sees_one"].note


def test_a_real_lasso_is_reported_even_when_the_search_is_cut_short():
    cm, ex, out = check(SPIN.replace("process setter", "unfair process setter"), limits=Limits(max_depth=1))
    assert not ex.stats.complete
    o = out["finishes"]
    assert o.verdict is Verdict.VIOLATED and "cut short" in o.note


LEADS_TO_SPEC = """// Fairness decides this model's verdict.
model spin;
var flag: bool = false;
var done: bool = false;
process waiter {
  while (!flag) { skip; }
  done = true;
}
process setter {
  flag = true;
}
property finishes: always eventually done;
"""


def test_cli_marks_the_loop_in_trace_diagram_and_json(tmp_path, capsys):
    p = tmp_path / "spin.spec"
    p.write_text(LEADS_TO_SPEC.replace("process setter", "unfair process setter")
                 + "expect violated finishes;\n")
    out_json = tmp_path / "r.json"
    assert main([str(p), "--json", str(out_json), "--full"]) == 0  # an expected violation, in full (issue 20)
    out = capsys.readouterr().out
    assert "Counterexample: variant base, liveness finishes" in out
    assert "2 steps, the last 2 a loop back to step 1, repeated for ever" in out
    assert "loop starts here; the steps below repeat forever" in out  # the numbered trace
    assert "-------- back to step 1 --------" in out and "~~~ back to step 1 ~~~" in out  # one numbering
    assert "~~~ loop: the steps below repeat forever ~~~" in out  # the race diagram
    assert "liveness verdicts assume weak fairness for waiter; none for setter" in out
    data = json.loads(out_json.read_text())
    v = data["variants"][0]
    assert v["fairness"] == ["weak fairness for waiter", "none for setter"]
    o = next(o for o in v["outcomes"] if o["property"] == "finishes")
    assert o["verdict"] == "violated" and o["counterexample"]["trace"]["loop_start"] == 0
    assert o["counterexample"]["engine"] == "liveness"


def test_cli_holds_with_fairness_and_exit_codes(tmp_path, capsys):
    p = tmp_path / "spin.spec"
    p.write_text(LEADS_TO_SPEC)
    assert main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "base/finishes: holds; holds under weak fairness of waiter, setter" in out
    assert main([str(p), "--max-states", "2"]) == 3  # cut short: no verdict


def test_the_lasso_validator_rejects_an_unfair_loop():
    # hand-made: the waiter spins while the (fair) setter stays enabled and never moves
    fair_cm, fair_ex, _ = check(SPIN)
    unfair_cm, unfair_ex, out = check(SPIN.replace("process setter", "unfair process setter"))
    cx = out["finishes"].counterexample
    trig, goal = fair_cm.liveness[0][1], fair_cm.liveness[0][2]
    with pytest.raises(AssertionError, match="setter is enabled throughout the loop"):
        validate_lasso(fair_cm, fair_ex, cx, trig, goal)


@pytest.mark.parametrize("unfair", [False, True])
def test_liveness_engine_does_not_change_the_safety_results(unfair):
    text = SPIN.replace("process setter", "unfair process setter") if unfair else SPIN
    cm = compile_program(ir.build(resolve(parse(text, "t.spec"))))
    plain = explore(cm)
    with_graph = explore(cm, graph=True)
    assert plain.stats.states == with_graph.stats.states
    assert plain.stats.transitions == with_graph.stats.transitions == len(with_graph.graph.dst)
    assert with_graph.graph.expanded == plain.stats.states


# ---- the models that need liveness: pinned state counts, and every lasso validated ----

MODELS_DIR = os.path.join(os.path.dirname(__file__), "..", "models")

# variant -> (states, liveness verdict); a changed count is a reviewable event
HALT_POLL = {
    "base": (3585, Verdict.HOLDS),
    "no_poll": (1795, Verdict.HOLDS),
    "poll_for_timer": (2298, Verdict.HOLDS),
    "posted": (2602, Verdict.HOLDS),
    "posted_poll_ignores_pi": (1720, Verdict.HOLDS),
    "posted_check_ignores_pi": (625, Verdict.VIOLATED),
    "final_check_ignores_timer": (3570, Verdict.VIOLATED),
    "check_before_prepare": (3552, Verdict.VIOLATED),
    "no_wake_on_expiry": (2951, Verdict.VIOLATED),
}
IPI_FASTPATH = {
    "base": (1154, Verdict.HOLDS),
    "v5_kick": (6811, Verdict.HOLDS),
    "legacy_apic": (1556, Verdict.HOLDS),
    "no_notification": (175, Verdict.VIOLATED),
    "no_wakeup": (861, Verdict.VIOLATED),
    "sync_before_mode": (1154, Verdict.VIOLATED),
    "base_tso": (1494, Verdict.HOLDS),
    "no_entry_mb_tso": (1557, Verdict.VIOLATED),
    "no_entry_mb": (1135, Verdict.HOLDS),
}


@pytest.mark.parametrize("model,prop,variant,expected", [
    ("halt_poll", "timer_wakes_vcpu", v, e) for v, e in HALT_POLL.items()] + [
    ("ipi_fastpath", "ipi_taken", v, e) for v, e in IPI_FASTPATH.items()])
def test_model_variants(model, prop, variant, expected):
    with open(f"{MODELS_DIR}/{model}.spec") as f:
        text = f.read()
    cm, ex, out = check(text, variant)  # validates every lasso
    states, verdict = expected
    assert ex.stats.states == states
    assert out[prop].verdict is verdict
    if verdict is Verdict.VIOLATED:
        assert not any(x.startswith("deadlock") for x in ex.counterexamples), \
            "a lost wake-up here is an infinite run, not a stuck state"


def test_ipi_lost_to_a_missing_notification_keeps_the_target_in_the_guest():
    with open(f"{MODELS_DIR}/ipi_fastpath.spec") as f:
        text = f.read()
    cm, ex, out = check(text, "no_notification")
    t = out["ipi_taken"].counterexample.trace
    loop = t.states[t.loop_start:]
    assert all(s.get("guest_mode") == (False, True) and s.get("pir") and s.get("on") for s in loop)
    assert {a.process for a in t.actions[t.loop_start:]} == {"sender", "target_guest"}  # the guest runs on


def test_halt_poll_lost_wakeup_leaves_the_vcpu_asleep_while_the_timer_keeps_firing():
    with open(f"{MODELS_DIR}/halt_poll.spec") as f:
        text = f.read()
    cm, ex, out = check(text, "check_before_prepare")
    t = out["timer_wakes_vcpu"].counterexample.trace
    loop = t.states[t.loop_start:]
    assert all(s.get("vcpu.state") == "INTERRUPTIBLE" and s.get("pending") == 1 for s in loop)
    # the timer keeps expiring (its generated expiry step) and its callback keeps returning at T1
    assert {a.process for a in t.actions[t.loop_start:]} == {"apic_timer", "apic_timer_expiry"}


@pytest.mark.parametrize("variant", ["unpinned_no_kick", "no_kick_hlt_exits", "no_kick_no_wake",
                                     "post_any_mode_timer_fn_hlt_exits_no_p3_kick"])
def test_pi_timer_lassos_are_fair_runs(variant):
    with open(f"{MODELS_DIR}/pi_timer.spec") as f:
        text = f.read()
    cm, ex, out = check(text, variant)  # validates the lasso independently of the engine
    assert out["timer_wakes_vcpu"].verdict is Verdict.VIOLATED


TSO_STORE = """
model tso_live;
memory tso;
var x: bool = false;
var seen: bool = false;
process w { x = true; loop { skip; } }
process r { await x; seen = true; }
property seen_eventually: always eventually seen;
"""


def test_under_tso_a_buffered_store_becomes_visible_eventually():
    # w spins after its store, which may sit in w's store buffer; the buffer's flush is
    # a fair actor of its own, so r sees x eventually
    cm, ex, out = check(TSO_STORE)
    o = out["seen_eventually"]
    assert o.verdict is Verdict.HOLDS
    assert "memory (w)" in o.relies_on  # the verdict needs the buffer to drain


def test_under_tso_a_lasso_drains_every_buffer_or_leaves_it_empty():
    # r never sets `seen` (its await is on a variable nobody writes): the lasso's loop
    # must still be fair to the store buffers
    cm, ex, out = check(TSO_STORE.replace("await x;", "await x && !x;"))
    o = out["seen_eventually"]
    assert o.verdict is Verdict.VIOLATED  # validated by check(), flushes included
    t = o.counterexample.trace
    assert all(s.get("x") is True for s in t.states[t.loop_start:])  # w's store became visible


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n + 2), max_size=4), min_size=n, max_size=n),
    st.sets(st.integers(0, n - 1)))))
def test_components_are_networkx_strongly_connected_components(graph):
    """The liveness engine's iterative Tarjan on its compact arrays (targets >= n were
    never expanded, and are left out as the engine leaves them) finds the components
    networkx finds on a copy of the graph restricted to the same states."""
    import networkx as nx

    n, succ, drop = graph
    first, dst = [0], []
    for targets in succ:
        dst += targets
        first.append(len(dst))
    nodes = [u for u in range(n) if u not in drop]
    got = liveness.components(nodes, liveness.mask_of(nodes, n), first, dst, n)
    dg = nx.DiGraph()
    dg.add_nodes_from(nodes)
    dg.add_edges_from((u, v) for u in nodes for v in succ[u] if v < n and v not in drop)
    assert sorted(map(sorted, got)) == sorted(map(sorted, nx.strongly_connected_components(dg)))
