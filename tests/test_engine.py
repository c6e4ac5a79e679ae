"""The explicit engine on tiny models whose state counts and shortest traces are known.

Counts are worked out by hand in the comments, and the mutual-exclusion model is also
enumerated by an independent, hand-written transition function, so that a bug in the
pipeline cannot make both sides agree by accident.
"""

from collections import deque

import pytest

from checker import ir
from checker.backends.python import compile_program
from checker.engines.explicit import Limits, explore
from checker.front.parse import parse
from checker.resolve import resolve
from conftest import COUNTER


def run(text, variant="base", limits=Limits(), defines=None):
    cm = compile_program(ir.build(resolve(parse(text, "t.spec"), variant, defines or {})))
    return cm, explore(cm, limits)


def test_nonatomic_increment_loses_an_update():
    # States (pc0, pc1, r0, r1, x), pcs 0 = before `r = x`, 1 = before `x = r + 1`, 2 = done:
    # (0,0,0,0,0) (1,0,0,0,0) (0,1,0,0,0) (2,0,0,0,1) (1,1,0,0,0) (0,2,0,0,1) (2,1,0,1,1)
    # (2,1,0,0,1) (1,2,0,0,1) (1,2,1,0,1) and the final (2,2,0,1,2) (2,2,0,0,1) (2,2,1,0,2).
    cm, ex = run(COUNTER)
    assert ex.stats.states == 13
    assert ex.stats.depth == 4
    assert ex.stats.complete
    cx = ex.counterexamples["both_counted"]
    # shortest: both read 0, both write 1
    assert [a.text for a in cx.trace.actions] == ["r = x;", "r = x;", "x = r + 1;", "x = r + 1;"]
    assert cx.trace.states[-1].get("x") == 1
    assert "deadlock" not in ex.counterexamples  # terminated processes are valid ends


def test_atomic_increment_keeps_both_updates():
    # (pc0, pc1, x): (0,0,0) (1,0,1) (0,1,1) (1,1,2)
    cm, ex = run(COUNTER, defines={"ATOMIC": "true"})
    assert ex.stats.states == 4
    assert ex.counterexamples == {}


PETERSON = """
model peterson;
var flag[2]: bool = false;
var turn: 0..1 = 0;
process p[2] {
  loop {
    flag[self] = true;
    turn = 1 - self;
    await !flag[1 - self] || turn == self;
    cs: skip;
    flag[self] = false;
  }
}
invariant mutex: !(p[0]@cs && p[1]@cs);
"""


def _peterson_by_hand():
    """Peterson's algorithm written directly as a transition function (pcs 0..4)."""
    def succ(st):
        pc, flag, turn = list(st[0]), list(st[1]), st[2]
        for i in (0, 1):
            j = 1 - i
            p, f, t = pc[:], flag[:], turn
            if pc[i] == 0:
                f[i], p[i] = True, 1
            elif pc[i] == 1:
                t, p[i] = j, 2
            elif pc[i] == 2:
                if flag[j] and turn != i:
                    continue
                p[i] = 3
            elif pc[i] == 3:
                p[i] = 4
            else:
                f[i], p[i] = False, 0
            yield (tuple(p), tuple(f), t)

    init = ((0, 0), (False, False), 0)
    seen, queue = {init}, deque([init])
    while queue:
        for n in succ(queue.popleft()):
            if n not in seen:
                seen.add(n)
                queue.append(n)
    return seen


def test_peterson_state_count_matches_an_independent_enumeration():
    by_hand = _peterson_by_hand()
    assert not any(s[0] == (3, 3) for s in by_hand)
    cm, ex = run(PETERSON)
    assert ex.stats.states == len(by_hand)
    assert ex.counterexamples == {}  # mutual exclusion holds, no deadlock
    # flag[i] is implied by pc[i], so states are (pc0, pc1, turn) minus the unreachable ones
    assert len(by_hand) < 5 * 5 * 2


def test_peterson_without_turn_check_breaks_mutual_exclusion():
    broken = PETERSON.replace("await !flag[1 - self] || turn == self;", "await true;")
    cm, ex = run(broken)
    cx = ex.counterexamples["mutex"]
    # p0: flag, turn, enter; p1: flag, turn, enter = 6 steps
    assert cx.trace.length == 6


DEADLOCK = """
model locks;
var l1: bool = false;
var l2: bool = false;
process a {
  atomic { await !l1; l1 = true; }
  atomic { await !l2; l2 = true; }
  l2 = false; l1 = false;
}
process b {
  atomic { await !l2; l2 = true; }
  atomic { await !l1; l1 = true; }
  l1 = false; l2 = false;
}
"""


def test_lock_order_inversion_deadlocks_in_two_steps():
    cm, ex = run(DEADLOCK)
    cx = ex.counterexamples["deadlock"]
    assert cx.trace.length == 2
    assert {a.process for a in cx.trace.actions} == {"a", "b"}
    assert "not at a valid end: a at line7, b at line12" in cx.message


def test_end_label_makes_blocking_valid():
    text = "model m; var go: bool = false; process p { end_wait: await go; }"
    cm, ex = run(text)
    assert ex.counterexamples == {} and ex.stats.states == 1
    cm, ex = run(text.replace("end_wait:", "waiting:"))
    assert "deadlock" in ex.counterexamples


def test_assertion_failure_has_the_failing_step():
    cm, ex = run("model m; var x: 0..3 = 0; process p { x = 2; assert small: x < 2; }")
    cx = ex.counterexamples["small"]
    assert cx.trace.length == 1
    assert cx.trace.failure is not None and cx.trace.failure.text == "assert small: x < 2;"


def test_value_out_of_range_is_a_model_error_with_trace():
    cm, ex = run("model m; var x: 0..1 = 0; process p[2] { x = x + 1; }")
    assert ex.model_error is not None
    assert "value 2 is outside the range of x (0..1)" in ex.model_error.message
    assert ex.model_error.trace.length == 1 and ex.model_error.trace.failure is not None
    assert not ex.stats.complete


def test_dynamic_index_out_of_bounds_is_a_model_error():
    cm, ex = run("model m; var a[2]: bool; var i: 0..3 = 0; process p { i = 2; a[i] = true; }")
    assert "index 2 is outside a (0..1)" in ex.model_error.message


def test_choose_and_await():
    # choose: two branches; the await branch is disabled until x == 1
    text = """model m; var x: 0..2 = 0;
    process p { choose { x = 1; } or { await x == 1; x = 2; } }
    process q { x = 1; }"""
    cm, ex = run(text)
    # (pc_p, pc_q, x): start (0,0,0); p takes x=1 -> (E,0,1); q -> (0,E,1);
    # (E,0,1) q -> (E,E,1); (0,E,1): p takes x=1 -> (E,E,1), or await -> (mid,E,1) -> (E,E,2)
    assert ex.stats.states == 6
    assert ex.counterexamples == {}


def test_while_break_continue_and_goto():
    text = """model m; var n: 0..3 = 0; var done: bool = false;
    process p {
      while (true) {
        n = n + 1;
        if (n < 3) continue;
        break;
      }
      goto finish;
      n = 0;
      finish: done = true;
    }
    invariant finished_at_three: done -> n == 3;"""
    cm, ex = run(text)
    assert ex.counterexamples == {}
    # n=1, test, n=2, test, n=3, test, done: a single path of 7 steps
    assert ex.stats.states == 8 and ex.stats.depth == 7


def test_inline_return_and_parameters():
    text = """model m; var a: 0..2 = 0; var b: 0..2 = 0;
    inline bump(v, limit) { if (v >= limit) return; v = v + 1; }
    process p { bump(a, 1); bump(a, 1); bump(b, 2); }
    invariant capped: a <= 1;"""
    cm, ex = run(text)
    assert ex.counterexamples == {}


def test_waitqueue_lost_wakeup_without_final_check():
    text = """model m; const CHECK = true; var cond: bool = false; waitqueue wq;
    process sleeper {
      prepare_to_wait(wq);
      if (CHECK) { if (!cond) schedule(); } else { schedule(); }
      finish_wait(wq);
    }
    process waker { cond = true; smp_mb(); if (waitqueue_active(wq)) wake_up(wq); }"""
    cm, ex = run(text)
    assert "deadlock" not in ex.counterexamples
    cm, ex = run(text, defines={"CHECK": "false"})
    cx = ex.counterexamples["deadlock"]
    # the waker runs first (nobody is waiting yet), then the sleeper sleeps forever
    assert [a.process for a in cx.trace.actions] == ["waker"] * 3 + ["sleeper"]
    assert cx.trace.states[-1].get("sleeper.state") == "INTERRUPTIBLE"


def test_kernel_atomics():
    text = """model m; enum R { PENDING, EVENT } var req: bitset(R) = {};
    var cnt: 0..3 = 0; var old: 0..3 = 0; var seen: bool = false;
    process p {
      set_bit(EVENT, req);
      seen = test_and_set_bit(PENDING, req);
      atomic_inc(cnt);
      old = cmpxchg(cnt, 1, 3);
      old = xchg(cnt, 2);
      assert ok: old == 3 && test_bit(EVENT, req) && !seen;
      old = atomic_inc_return(cnt);
      assert incremented: old == 3 && cnt == 3;
    }"""
    cm, ex = run(text)
    assert ex.counterexamples == {} and ex.model_error is None


def test_limits_make_the_search_incomplete():
    cm, ex = run(PETERSON, limits=Limits(max_states=5))
    assert not ex.stats.complete and ex.stats.limit == "max-states"
    cm, ex = run(PETERSON, limits=Limits(max_depth=2))
    assert not ex.stats.complete and ex.stats.limit == "max-depth"
    assert ex.stats.depth == 2


def test_violation_found_within_depth_limit_is_still_reported():
    cm, ex = run(COUNTER, limits=Limits(max_depth=4))
    assert "both_counted" in ex.counterexamples


def test_any_gives_one_initial_state_per_value():
    cm, ex = run("model m; var x: 0..3 = any; var b: bool = any; process p { skip; }")
    assert len(cm.program.initial_states) == 8
    assert ex.stats.states == 16


@pytest.mark.parametrize("text", [COUNTER, PETERSON, DEADLOCK])
def test_same_input_same_states_and_traces(text):
    a = run(text)[1]
    b = run(text)[1]
    assert a.stats.states == b.stats.states and a.stats.transitions == b.stats.transitions
    assert {k: v.trace for k, v in a.counterexamples.items()} == {k: v.trace for k, v in b.counterexamples.items()}
