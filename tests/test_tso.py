"""x86-TSO semantics: store buffers, forwarding, fences, flushes, the buffer bound, and
how traces show them. Litmus-level verdicts live in test_litmus.py."""

import json

import pytest

from checker import ir
from checker.cli import main
from checker.export.text import race_diagram
from checker.front.parse import parse
from checker.resolve import DEFAULT_STORE_BUFFER, resolve
from checker.ir import SlotKind
from checker.pipeline import Options, check_spec, compile_variant
from checker.results.trace import Buffered, Verdict


def run(text: str, **opts):
    spec = parse(text, "t.spec")
    return check_spec(spec, Options(use_expectations=False, progress=False, **opts))


def verdict(result, prop: str, variant: str = "base") -> Verdict:
    v = next(v for v in result.variants if v.variant == variant)
    return next(o for o in v.outcomes if o.property == prop).verdict


SB = """model sb; memory tso;
var x: 0..1; var y: 0..1;
process p0 { var r0: 0..1; x = 1; %s r0 = y; }
process p1 { var r1: 0..1; y = 1; %s r1 = x; }
final forbidden: !(p0.r0 == 0 && p1.r1 == 0);
"""


def sb(between: str = "") -> str:
    return SB % (between, between)


def test_sc_is_untouched_by_memory_declarations():
    """An sc run of a tso model compiles to exactly the code of the same model without
    `memory`: no buffer slots, no fences, the same states."""
    tso = parse(sb(), "t.spec")
    plain = parse(sb().replace("memory tso;", ""), "t.spec")
    a = compile_variant(tso, "base", Options(memory="sc"))
    b = compile_variant(plain, "base", Options())
    assert a.source == b.source
    assert not a.layout.buffers and all(sl.kind is not SlotKind.BUFFER for sl in a.layout.slots)
    assert run(sb(), memory="sc").variants[0].stats.states == run(sb().replace("memory tso;", "")).variants[0].stats.states


@pytest.mark.parametrize("between, allowed", [
    ("", True),
    ("smp_wmb();", True), ("smp_rmb();", True), ("smp_mb__before_atomic();", True), ("barrier();", True),
    ("smp_mb();", False), ("smp_mb__after_srcu_read_unlock();", False),
])
def test_which_barriers_order_a_store_before_a_load(between, allowed):
    assert verdict(run(sb(between)), "forbidden") is (Verdict.VIOLATED if allowed else Verdict.HOLDS)


@pytest.mark.parametrize("store, allowed", [
    ("WRITE_ONCE(x, 1);", True), ("atomic_set(x, 1);", True), ("smp_store_release(x, 1);", True),
    ("smp_store_mb(x, 1);", False), ("xchg(x, 1);", False), ("atomic_inc(x);", False),
    ("cmpxchg(x, 0, 1);", False), ("atomic { x = 1; }", False),
])
def test_plain_stores_are_buffered_and_locked_ones_are_not(store, allowed):
    text = sb().replace("x = 1;", store).replace("y = 1;", store.replace("(x", "(y").replace("{ x", "{ y"))
    assert verdict(run(text), "forbidden") is (Verdict.VIOLATED if allowed else Verdict.HOLDS)


def test_an_atomic_block_that_only_loads_is_no_fence():
    text = sb().replace("r0 = y;", "atomic { r0 = y; }").replace("r1 = x;", "atomic { r1 = x; }")
    assert verdict(run(text), "forbidden") is Verdict.VIOLATED


def test_a_cpu_reads_its_own_buffered_store():
    """Store-to-load forwarding, also through a dynamic index: the reader can never
    see the old value of a location it has just written."""
    text = """model fwd; memory tso;
var a[2]: 0..2; var i: 0..1 = 1;
process p { var r: 0..2; var s: 0..2; a[i] = 2; r = a[1]; s = a[i]; }
process q { a[1] = 1; }
final own_store_seen: p.r != 0 && p.s != 0;
invariant no_mixing: p@end -> p.r == p.s || a[1] == 1;
"""
    result = run(text)
    assert verdict(result, "own_store_seen") is Verdict.HOLDS
    assert verdict(result, "no_mixing") is Verdict.HOLDS
    # (r, s, a[1]): q's store lands first (2,2,2), or after p's flush and before,
    # between or after p's loads: (1,1,1), (2,1,1), (2,2,1)
    assert result.variants[0].stats.final_states == 4


def test_locals_are_registers_and_never_buffered():
    program = ir.build(resolve(parse("""model r; memory tso; var x: 0..1;
process p { var r: 0..1; r = 1; r = x; }
process q { x = 1; }""", "t.spec")))
    assert [b.cpu for b in program.layout.buffers] == ["q"]


def test_fences_marked_in_the_ir():
    program = ir.build(resolve(parse("""model f; memory tso; var x: 0..3; var b: bitset(2); waitqueue wq;
process p {
  x = 1; smp_mb(); smp_wmb(); set_bit(0, b); x = x + 1; atomic { x = 2; } atomic { await x == 2; }
  prepare_to_wait(wq); schedule(); finish_wait(wq);
}
process q { wake_up(wq); }""", "t.spec")))
    p, q = program.processes
    assert [(st.text, st.fence) for st in p.steps] == [
        ("x = 1;", False), ("smp_mb();", True), ("smp_wmb();", False), ("set_bit(0, b);", True),
        ("x = x + 1;", False), ("atomic { x = 2; }", True), ("atomic { await x == 2; }", False),
        ("prepare_to_wait(wq);", True), ("schedule();", True), ("finish_wait(wq);", True)]
    assert [st.fence for st in q.steps] == [True]


def test_the_store_buffer_bound_is_reported_and_honest():
    """Two stores before the load: the outcome needs two buffered stores per CPU. With
    room for one the checker cannot see it, and says that its verdict is bounded."""
    text = sb().replace("x = 1;", "x = 1; z = 1;").replace("y = 1;", "y = 1; w = 1;")
    text = text.replace("var x: 0..1;", "var x: 0..1; var z: 0..1; var w: 0..1;")
    one = run(text, store_buffer=1)
    assert verdict(one, "forbidden") is Verdict.HOLDS
    assert one.variants[0].stats.buffer_full_states > 0
    from checker.export.text import format_run
    assert "what holds there holds for store buffers of at most 1 stores" in " ".join(format_run(one).split())
    two = run(text)
    assert two.variants[0].store_buffer == DEFAULT_STORE_BUFFER
    assert verdict(two, "forbidden") is Verdict.VIOLATED
    assert two.variants[0].stats.buffer_full_states == 0
    assert "hold for store buffers of any size" in " ".join(format_run(two).split())


def test_memory_declarations_and_overrides():
    spec = parse("""model m; memory tso(3); var x: bool; process p { x = true; }
variant sc { memory sc; } variant four { memory tso(4); } variant plain { }""", "t.spec")
    assert (resolve(spec).memory, resolve(spec).store_buffer) == ("tso", 3)
    assert (resolve(spec, "sc").memory, resolve(spec, "sc").store_buffer) == ("sc", None)
    assert resolve(spec, "four").store_buffer == 4
    assert resolve(spec, "plain").store_buffer == 3
    assert resolve(spec, "sc", memory="tso").store_buffer == 3  # the command line wins
    assert resolve(spec, "four", store_buffer=1).store_buffer == 1
    assert resolve(spec, "four", memory="sc").memory == "sc"


@pytest.mark.parametrize("text, message", [
    ("memory sc(2);", "only tso and lkmm are bounded"),
    ("memory tso(9);", "a store buffer holds 1 to 8 stores"),
    ("memory arm;", "unknown memory model 'arm'"),
    ("variant v { memory tso; memory sc; }", "declares `memory` twice"),
    ("invariant i: p.nope;", "process 'p' has no local variable 'nope'"),
    ("invariant i: q.r;", "unknown process 'q'"),
])
def test_bad_memory_and_local_references(tmp_path, capsys, text, message):
    f = tmp_path / "bad.spec"
    f.write_text(f"model b; var x: bool; process p {{ var r: bool; x = true; }} {text}\n")
    assert main([str(f)]) == 2
    assert message in capsys.readouterr().err


def test_trace_shows_buffered_stores_and_flushes():
    result = run(sb())
    cx = next(o for o in result.variants[0].outcomes if o.property == "forbidden").counterexample
    kinds = [(a.process, a.kind) for a in cx.trace.actions]
    assert ("memory", "flush") in kinds
    first = cx.trace.actions[0]
    assert first.process == "p0" and dict(first.changes) == {"sb(p0)": Buffered([("x", 1)])}
    diagram = race_diagram(cx.trace)
    assert diagram.splitlines()[0].split() == ["p0", "|", "p1", "|", "memory"]
    assert "x=1 (buffered)" in diagram and "flush p0: x = 1" in diagram


def test_json_encodes_store_buffers():
    from checker.export.json import to_dict

    data = to_dict(run(sb()))
    actions = data["variants"][0]["outcomes"][0]["counterexample"]["trace"]["actions"]
    assert actions[0]["changes"]["sb(p0)"] == {"buffer": [{"location": "x", "value": 1}]}
    json.dumps(data)


def test_a_trace_that_ends_with_stores_still_buffered_says_so():
    text = """model late; memory tso; var x: 0..1;
process p { x = 1; }
process q { var r: 0..1; r = x; }
invariant caught: !(p@end && q@end && q.r == 0);"""
    cx = next(o for o in run(text).variants[0].outcomes if o.property == "caught").counterexample
    assert "still buffered, not yet visible:" in race_diagram(cx.trace)
    assert "  p: x = 1" in race_diagram(cx.trace)


def test_final_conditions_wait_for_drained_buffers_and_report_vacuity():
    # x is only 1 in memory once p's buffer drains: a final state never sees x == 0
    result = run("model d; memory tso; var x: 0..1; process p { x = 1; } final drained: x == 1;")
    assert verdict(result, "drained") is Verdict.HOLDS
    assert result.variants[0].stats.final_states == 1
    never = run("model n; var x: 0..1; process p { loop { x = 1 - x; } } final f: x == 0;")
    outcome = next(o for o in never.variants[0].outcomes if o.property == "f")
    assert outcome.verdict is Verdict.HOLDS and "vacuously" in outcome.note


def test_a_value_out_of_range_is_caught_before_it_is_buffered():
    result = run("model e; memory tso; var x: 0..1; process p { var r: 0..2 = 2; x = r; }")
    assert result.variants[0].model_error is not None
    assert "outside the range of x" in result.variants[0].model_error.message


def test_dump_python_shows_buffers_and_flushes(capsys, tmp_path):
    f = tmp_path / "sb.spec"
    f.write_text(sb())
    assert main([str(f), "--dump-python"]) == 0
    src = capsys.readouterr().out
    assert "# Memory model x86-TSO" in src and "def p0_flush(s):" in src
    assert "goes into sb(p0)" in src and "_store_buffer_full()" in src


def test_state_graph_records_flushes_as_their_own_actors():
    """The liveness engine reads the explored graph: a flush edge is taken by the
    buffer's own actor id, after the process instances', never by its CPU."""
    from checker.engines.explicit import explore

    cm = compile_variant(parse(sb(), "t.spec"), "base", Options())
    g = explore(cm, graph=True).graph
    n = len(cm.layout.instance_names)
    assert sorted(f.gid for f in cm.flushes) == [n, n + 1]
    flush_edges = [(i, cs) for i in range(g.expanded) for _, cs in g.edges(i) if cs in cm.flushes]
    assert flush_edges and all(g.enabled[i] >> cs.gid & 1 for i, cs in flush_edges)
