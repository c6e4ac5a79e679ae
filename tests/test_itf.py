"""ITF (Apalache ADR-015): every exported trace reads back with the itf-py package, the
values round-trip, and nothing is ever null."""

from __future__ import annotations

import json

import itf_py
import pytest

from checker.export.files import counterexamples, file_stem
from checker.export.itf import read_itf
from checker.results.trace import Members


def itf_files(exported):
    for name, (folder, _, result) in exported.items():
        for v, cx in counterexamples(result):
            yield name, folder / "out" / "itf" / f"{file_stem(result, v.variant, cx.property)}.itf.json", v, cx


def as_itf_py(value):
    """What itf-py gives for one of our trace values."""
    if isinstance(value, Members):
        return frozenset(as_itf_py(x) for x in value)
    if isinstance(value, tuple):
        return [as_itf_py(x) for x in value]
    return value


def no_nulls(x, where="$"):
    assert x is not None, f"null at {where}"
    if isinstance(x, dict):
        for k, v in x.items():
            no_nulls(v, f"{where}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            no_nulls(v, f"{where}[{i}]")


def test_every_trace_reads_back_with_itf_py_and_its_values_round_trip(exported):
    seen = 0
    for _, path, v, cx in itf_files(exported):
        doc = json.loads(path.read_text())
        no_nulls(doc)
        trace = itf_py.trace_from_json(doc)
        t = cx.trace
        assert len(trace.states) == len(t.states)
        assert trace.loop == t.loop_start
        assert trace.meta["variant"] == v.variant and trace.meta["property"] == cx.property
        assert trace.meta["source"].endswith(".spec") and trace.meta["engine"] == "explicit"
        for i, (got, ours) in enumerate(zip(trace.states, t.states)):
            assert got.meta["index"] == i
            assert set(got.values) == set(trace.vars), "every state sets every variable"
            for name, value in ours.values:
                assert got.values[name] == as_itf_py(value), (path.name, i, name)
            pcs = got.values["pc"]._asdict()
            flat = []
            for proc, label in pcs.items():
                flat += [(f"{proc}[{k}]", lb) for k, lb in enumerate(label)] if isinstance(label, list) \
                    else [(proc, label)]
            assert flat == list(ours.pcs)
        seen += 1
    assert seen >= 6


def test_values_use_the_adr_015_encodings(exported):
    folder = exported["four"][0]
    doc = json.loads((folder / "out/itf/four.base.seen.itf.json").read_text())
    last = doc["states"][-1]
    assert last["mode"] == "OUTSIDE_GUEST_MODE"  # an enum: a plain string
    assert last["injected"] is True  # a bool: a JSON boolean
    assert last["delivered"] == [{"#bigint": "0"}, {"#bigint": "0"}]  # an array of ints
    assert last["requests"] == {"#set": ["TIMER"]}  # a bit set
    assert last["wq"] == {"#set": []}  # a wait queue
    assert last["pc"] == {"vcpu": "end_ok", "timer": ["end", "line20"], "observer": "line27"}
    assert doc["vars"] == ["mode", "requests", "delivered", "injected", "wq", "pc"]
    assert "loop" not in doc


def test_sets_are_sorted_and_a_lasso_has_its_loop(exported):
    from checker.export.itf import value

    assert value(Members(["b", "a"])) == {"#set": ["a", "b"]}
    assert value(Members([3, 1])) == {"#set": [{"#bigint": "1"}, {"#bigint": "3"}]}
    folder = exported["spin-lasso"][0]
    doc = json.loads((folder / "out/itf/spin.base.finishes.itf.json").read_text())
    assert doc["loop"] == 0


def test_a_read_back_trace_equals_the_original(exported):
    for _, path, v, cx in itf_files(exported):
        variant, back = read_itf(json.loads(path.read_text()))
        assert variant == v.variant and back.property == cx.property and back.kind == cx.kind
        assert back.trace.states == cx.trace.states
        assert back.trace.loop_start == cx.trace.loop_start
        assert [(a.process, a.text, a.span.line, a.changes) for a in back.trace.actions] == \
            [(a.process, a.text, a.span.line, a.changes) for a in cx.trace.actions]
        assert (back.trace.failure is None) == (cx.trace.failure is None)


def test_a_variable_named_pc_does_not_clash(tmp_path):
    from checker.export.itf import pc_variable
    from checker.results.trace import TraceState

    assert pc_variable((TraceState((("pc", 1), ("pc_", 2)), ()),)) == "pc__"


@pytest.mark.parametrize("bad", [{"vars": [], "states": [{}, {}]}, {"states": [], "vars": 3}])
def test_a_foreign_itf_file_is_refused_with_a_reason(bad):
    from checker.export.itf import TraceFormatError

    with pytest.raises(TraceFormatError):
        read_itf(bad)
