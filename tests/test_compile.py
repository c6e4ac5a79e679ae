"""backends/python.py: each step compiles to a readable Python function of the state
(packed into one int, with a tuple wrapper), which returns the successor (None when the
step is disabled)."""

from __future__ import annotations

from checker import ir
from checker.backends.python import compile_program
from checker.front.parse import parse
from checker.resolve import resolve


def compiled(text: str):
    return compile_program(ir.build(resolve(parse(text, "t.spec"), "base", {})))


INC = """model inc;
var x: 0..3 = 1;
process p {
  await x > 0;
  x = x + 1;
}
"""


def test_the_generated_source_names_each_step_and_its_statement():
    cm = compiled(INC)
    fns = [st.name for inst in cm.instances for at in inst.steps_at for st in at]
    assert len(fns) == 2 and all(f"def {name}(" in cm.source for name in fns)
    assert "x = x + 1;" in cm.source and "# p: t.spec:5" in cm.source  # the statement and its line
    compile(cm.source, "<generated>", "exec")  # and it is Python


def test_a_step_computes_its_successor_and_moves_the_pc():
    cm = compiled(INC)
    (s0,) = cm.program.initial_states
    (inst,) = cm.instances
    x = next(k for k, sl in enumerate(cm.layout.slots) if sl.name == "x")
    (await_step,) = inst.steps_at[0]
    s1 = tuple(await_step.fn(s0))
    assert s1[inst.pc_slot] == 1 and s1[x] == 1  # await moves the pc only
    (inc_step,) = inst.steps_at[1]
    s2 = tuple(inc_step.fn(s1))
    assert s2[x] == 2 and s2[inst.pc_slot] in inst.end_pcs


def test_a_guarded_step_is_disabled_where_its_guard_is_false():
    cm = compiled(INC.replace("var x: 0..3 = 1;", "var x: 0..3 = 0;"))
    (s0,) = cm.program.initial_states
    (await_step,) = cm.instances[0].steps_at[0]
    assert not await_step.fn(s0)


def test_packing_round_trips_every_reachable_state():
    cm = compiled(INC)
    (s0,) = cm.program.initial_states
    states, todo = {s0}, [s0]
    while todo:
        s = todo.pop()
        for inst in cm.instances:
            for st in inst.steps_at[s[inst.pc_slot]] if s[inst.pc_slot] < len(inst.steps_at) else ():
                t = st.fn(s)
                if t is not None:
                    t = tuple(t)
                    if t not in states:
                        states.add(t)
                        todo.append(t)
    assert len(states) == 3
    assert all(cm.unpack(cm.pack(s)) == s for s in states)
