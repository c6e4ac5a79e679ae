"""StateDecoder.decode reads every slot through a plan made once (a converter a slot);
what each slot means is `StateDecoder.value`'s rule. These tests decode reachable
states of models with every kind of slot (booleans, enums, bit sets, wait queues,
task states, arrays, signed and unsigned fixed-width integers, store buffers, lkmm
views) both ways and want the same TraceState."""

from __future__ import annotations

from pathlib import Path

from checker import ir
from checker.backends.python import compile_program
from checker.engines.explicit import decoder_for, explore
from checker.engines.explicit.search import Limits
from checker.front.parse import parse
from checker.ir import SlotKind
from checker.resolve import resolve
from checker.results.trace import StateDecoder, TraceState

ROOT = Path(__file__).parent.parent

SIGNED = """
model signed;
var a: s8 = -3;
var b: u8 = 250;
var c: s64 = -1;
var d: bool = false;
process p {
  a = a - 126;
  b = b + 10;
  c = c * 2;
  d = true;
}
"""


def by_rule(d: StateDecoder, state: tuple[int, ...]) -> TraceState:
    """The state decoded slot by slot with `value`, as decode did before its plan."""
    values: list = []
    for name, slots in d.groups:
        sl = d.layout.slots[slots[0]]
        if sl.kind is SlotKind.BUFFER:
            values.append((name, d.buffered(slots, state)))
        elif sl.element is None:
            values.append((name, d.value(slots[0], state[slots[0]])))
        else:
            values.append((name, tuple(d.value(i, state[i]) for i in slots)))
    values += d.stale(state)
    return TraceState(tuple(values), tuple((proc, d.pc_names[proc][state[i]]) for proc, i in d.pc_slots))


def compiled(text: str, path: str, variant: str | None = None):
    spec = parse(text, path)
    return compile_program(ir.build(resolve(spec) if variant is None else resolve(spec, variant)))


def states_of(cm, at_most: int = 400) -> list[tuple[int, ...]]:
    g = explore(cm, Limits(max_states=at_most), graph=True).graph
    assert g is not None
    return [g.states[u] for u in range(len(g.states))]


def agree(cm) -> int:
    d = decoder_for(cm)
    states = states_of(cm)
    for s in states:
        assert d.decode(s) == by_rule(d, s), s
    return len(states)


def test_the_plan_decodes_as_the_rule_on_the_kinds_of_slot_of_shipped_models():
    cases = [("tests/models/four.spec", None),  # enums, bit sets, wait queues
             ("models/pi_two_posters.spec", None),  # bit sets, task states, arrays
             ("models/csd_wait_ipi.spec", "base_tso"),  # store buffers
             ("models/csd_wait_ipi.spec", "base_lkmm")]  # views
    for path, variant in cases:
        text = (ROOT / path).read_text(encoding="utf-8")
        assert agree(compiled(text, str(ROOT / path), variant)) > 1, (path, variant)


def test_the_plan_decodes_signed_patterns_as_their_values():
    cm = compiled(SIGNED, "signed.spec")
    assert agree(cm) > 1
    last = decoder_for(cm).decode(states_of(cm)[-1])
    assert (last.get("a"), last.get("b"), last.get("c"), last.get("d")) == (127, 4, -2, True)
