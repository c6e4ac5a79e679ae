"""engines/smt/encode.py against the compiled steps it mirrors: on small models the Z3
transition relation allows, from every reachable state, exactly the successors the
generated Python computes, and its initial-state predicate holds of exactly the
explicit initial states."""

from __future__ import annotations

import z3

from checker import ir
from checker.backends.python import compile_program
from checker.engines.smt.encode import Encoding
from checker.front.parse import parse
from checker.resolve import resolve

MODELS = {
    "counter": """model counter;
var x: 0..2 = 0;
process inc[2] { var r: 0..2 = 0; r = x; x = r + 1; }
""",
    "guards": """model guards;
var flag: bool = false;
var n: 0..3 = 0;
process a { flag = true; await n == 1; n = 2; }
process b { await flag; if (n == 0) { n = 1; } else { n = 3; } }
""",
    "choice": """model choice;
var v: 0..3 = any;
process p { if (v > 1) { v = v - 1; } }
""",
}


def compiled(text: str):
    return compile_program(ir.build(resolve(parse(text, "t.spec"), "base", {})))


def successors(cm, s: tuple) -> set[tuple]:
    out = set()
    for inst in cm.instances:
        pc = s[inst.pc_slot]
        for st in inst.steps_at[pc] if pc < len(inst.steps_at) else ():
            t = st.fn(s)
            if t is not None:
                out.add(tuple(t))
    return out


def models_of(formula, terms, ctx) -> set[tuple]:
    """Every assignment of `terms` that satisfies `formula` (blocking each one found)."""
    solver = z3.Solver(ctx=ctx)
    solver.add(formula)
    found = set()
    while solver.check() == z3.sat:
        mdl = solver.model()
        values = tuple(mdl.eval(t, model_completion=True).as_long() for t in terms)
        found.add(values)
        solver.add(z3.Or([t != v for t, v in zip(terms, values)]))
    return found


def reachable(cm) -> set[tuple]:
    seen = set(cm.program.initial_states)
    todo = list(seen)
    while todo:
        for t in successors(cm, todo.pop()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_the_initial_predicate_is_the_explicit_initial_states():
    for name, text in MODELS.items():
        cm = compiled(text)
        enc = Encoding(cm)
        assert models_of(enc.init, enc.cur, enc.ctx) == set(cm.program.initial_states), name


def test_the_transition_relation_is_the_compiled_steps():
    for name, text in MODELS.items():
        cm = compiled(text)
        enc = Encoding(cm)
        for s in sorted(reachable(cm)):
            at_s = z3.And([c == v for c, v in zip(enc.cur, s)] + [enc.trans])
            z3_next = models_of(at_s, enc.nxt, enc.ctx)
            explicit = successors(cm, s)
            if not explicit:  # a state where nothing moves: the encoding may stutter or stop, never go elsewhere
                assert z3_next <= {s}, (name, s, z3_next)
            else:
                assert z3_next - {s} == explicit - {s}, (name, s, z3_next, explicit)
