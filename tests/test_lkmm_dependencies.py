"""Dependencies in lkmm's completeness statement (checker/memory/lkmm._Dependencies):
a load buffering cycle needs a load and a po-later store of one CPU that nothing orders,
and linux-kernel.cat orders a load before a store that depends on it by address, data
or control (`rwdep`), but a control dependency only inside the branch's arms and never
before a later load. Each program here is compared with herd7 (its recorded report):
where left_out says complete, the machine reaches exactly herd7's outcomes; where it
names load buffering, herd7 has an outcome the machine lacks, so the name is not idle."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
from checker.litmus.reader import parse_litmus
from litmus_to_spec import outcomes, to_spec
from test_lkmm_complete import shapes


def litmus(name: str, *threads: str, exists: str) -> str:
    """A litmus test over x, y, z whose threads are given as bodies (registers r0-r3)."""
    text = f"C {name}\n\n{{}}\n\n"
    for i, body in enumerate(threads):
        used = sorted({r for r in ("r0", "r1", "r2", "r3") if r in body})
        text += f"P{i}(int *x, int *y, int *z)\n{{\n" + "".join(f"\tint {r};\n" for r in used)
        text += "".join(f"\t{line.strip()}\n" for line in body.strip().splitlines()) + "}\n\n"
    return text + f"exists ({exists})\n"


WRITER = "r1 = READ_ONCE(*y);\nsmp_mb();\nWRITE_ONCE(*x, 1);"
LB = "0:r0=1 /\\ 1:r1=1"

#: (name, program, complete?): the claim left_out must make
CASES = [
    ("ctrl", litmus("ctrl", "r0 = READ_ONCE(*x);\nif (r0)\nWRITE_ONCE(*y, 1);", WRITER, exists=LB), True),
    ("ctrl_both_arms", litmus("ctrl_both_arms", "r0 = READ_ONCE(*x);\nif (r0)\nWRITE_ONCE(*y, 1);\n"
                              "else\nWRITE_ONCE(*y, 1);", WRITER, exists=LB), True),
    ("ctrl_after_join", litmus("ctrl_after_join", "r0 = READ_ONCE(*x);\nif (r0)\nr2 = 1;\nWRITE_ONCE(*y, 1);",
                               WRITER, exists=LB), False),
    ("ctrl_through_register", litmus("ctrl_through_register", "r0 = READ_ONCE(*x);\nr2 = r0 + 1;\n"
                                     "if (r2 == 2)\nWRITE_ONCE(*y, 1);", WRITER, exists=LB), True),
    ("ctrl_nested", litmus("ctrl_nested", "r0 = READ_ONCE(*x);\nr3 = READ_ONCE(*z);\nif (r0) {\n"
                           "if (r3)\nWRITE_ONCE(*y, 1);\nelse\nWRITE_ONCE(*y, 2);\n}", WRITER, exists=LB), True),
    ("ctrl_on_other_load", litmus("ctrl_on_other_load", "r0 = READ_ONCE(*x);\nr3 = READ_ONCE(*z);\nif (r3 == 0)\n"
                                  "WRITE_ONCE(*y, 1);", WRITER, exists=LB), False),
    ("ctrl_then_load", litmus("ctrl_then_load", "r0 = READ_ONCE(*x);\nif (r0)\nr2 = READ_ONCE(*z);\n"
                              "WRITE_ONCE(*y, r2 + 1);", WRITER, exists="0:r0=1 /\\ 1:r1=1"), False),
    ("data", litmus("data", "r0 = READ_ONCE(*x);\nWRITE_ONCE(*y, r0);", WRITER, exists=LB), True),
    ("data_chain", litmus("data_chain", "r0 = READ_ONCE(*x);\nr2 = r0 * 2;\nr3 = r2 - r0;\n"
                          "WRITE_ONCE(*y, r3 + 1);", WRITER, exists=LB), True),
    ("data_overwritten", litmus("data_overwritten", "r0 = READ_ONCE(*x);\nr2 = r0;\nr2 = 1;\nWRITE_ONCE(*y, r2);",
                                WRITER, exists=LB), False),
    ("lb_ctrl_data", litmus("lb_ctrl_data", "r0 = READ_ONCE(*x);\nif (r0)\nWRITE_ONCE(*y, 1);",
                            "r1 = READ_ONCE(*y);\nWRITE_ONCE(*x, r1);", exists=LB), True),
    ("lb_ctrl_po", litmus("lb_ctrl_po", "r0 = READ_ONCE(*x);\nif (r0)\nWRITE_ONCE(*y, 1);",
                          "r1 = READ_ONCE(*y);\nWRITE_ONCE(*x, 1);", exists=LB), False),
    ("lb3_deps", litmus("lb3_deps", "r0 = READ_ONCE(*x);\nif (r0)\nWRITE_ONCE(*y, 1);",
                        "r1 = READ_ONCE(*y);\nWRITE_ONCE(*z, r1);", "r2 = READ_ONCE(*z);\nif (r2)\nWRITE_ONCE(*x, 1);",
                        exists="0:r0=1 /\\ 1:r1=1 /\\ 2:r2=1"), True),
    ("lb3_one_po", litmus("lb3_one_po", "r0 = READ_ONCE(*x);\nif (r0)\nWRITE_ONCE(*y, 1);",
                          "r1 = READ_ONCE(*y);\nWRITE_ONCE(*z, 1);", "r2 = READ_ONCE(*z);\nif (r2)\nWRITE_ONCE(*x, 1);",
                          exists="0:r0=1 /\\ 1:r1=1 /\\ 2:r2=1"), False),
    # one statement: a load beside a relaxed RMW is not a dependency of the RMW's store
    ("load_beside_rmw", litmus("load_beside_rmw", "r0 = READ_ONCE(*x) + xchg_relaxed(y, 1);", WRITER, exists=LB),
     False),
    ("rmw_of_a_loaded_value", litmus("rmw_of_a_loaded_value", "r0 = xchg_relaxed(y, READ_ONCE(*x));", WRITER,
                                     exists="0:r0=0 /\\ 1:r1=1"), True),
    # a control dependency orders no later load: MP's reader may still see the old x
    ("mp_ctrl_load", litmus("mp_ctrl_load", "WRITE_ONCE(*x, 1);\nsmp_wmb();\nWRITE_ONCE(*y, 1);",
                            "r0 = READ_ONCE(*y);\nif (r0)\nr1 = READ_ONCE(*x);", exists="1:r0=1 /\\ 1:r1=0"), True),
]


def _states(got: set) -> set:
    return {frozenset(f"{label.strip('[]')}={value}" for label, value in row) for row in got}


def _herd7_states(text: str) -> tuple[set, list[str]]:
    states, _, _, _ = oracle.summary(text)
    norm = {frozenset(s.replace("[", "").replace("]", "") for s in row) for row in states}
    labels = sorted({s.split("=")[0] for row in norm for s in row})
    return norm, labels


@pytest.mark.parametrize("name, text, complete", CASES, ids=[c[0] for c in CASES])
def test_dependencies_in_the_completeness_statement_agree_with_herd7(name, text, complete):
    test = parse_litmus(text, f"{name}.litmus")
    said = shapes(to_spec(test))
    assert (said == ()) is complete, said
    herd, labels = _herd7_states(text)
    got, _, full, _ = outcomes(test, labels=[lb if ":" in lb else f"[{lb}]" for lb in labels])
    assert full == 0
    if complete:
        assert _states(got) == herd, f"complete, but the machine's outcomes differ from herd7's:\n{text}"
    else:
        assert _states(got) < herd  # the named load buffering is one of herd7's outcomes


LOOP = """model loop;
memory lkmm;
var x: 0..1 = 0;
var y: 0..1 = 0;
process p {{ var r: 0..1 = 0; {body} }}
process q {{ var s: 0..1 = 0; s = READ_ONCE(y); WRITE_ONCE(x, s); }}
"""


@pytest.mark.parametrize("body, complete", [
    # each iteration's store depends on its own load, not on the previous iteration's
    ("while (true) { r = READ_ONCE(x); if (r != 0) { WRITE_ONCE(y, 1); } }", False),
    ("r = READ_ONCE(x); while (true) { if (r != 0) { WRITE_ONCE(y, 1); } }", True),
    ("r = READ_ONCE(x); while (true) { WRITE_ONCE(y, r); }", True),
    ("r = READ_ONCE(x); while (true) { WRITE_ONCE(y, r); r = 0; }", False),
])
def test_a_loop_starts_a_new_instance_of_the_load(body, complete):
    said = shapes(LOOP.format(body=body))
    assert (said == ()) is complete, said


#: how one thread of a load-buffering ring orders its load of `a` before its store to `b`
ORDERINGS = (
    "r0 = READ_ONCE(*{a});\nif (r0)\nWRITE_ONCE(*{b}, 1);",  # ctrl
    "r0 = READ_ONCE(*{a});\nif (r0 == 0)\nr2 = 1;\nelse\nWRITE_ONCE(*{b}, 1);",  # ctrl, the else arm
    "r0 = READ_ONCE(*{a});\nif (r0)\nr2 = 1;\nWRITE_ONCE(*{b}, 1);",  # none: after the join
    "r0 = READ_ONCE(*{a});\nWRITE_ONCE(*{b}, r0);",  # data
    "r0 = READ_ONCE(*{a});\nr2 = r0 + 1;\nWRITE_ONCE(*{b}, r2 - 1);",  # data through a register
    "r0 = READ_ONCE(*{a});\nr2 = r0;\nr2 = 1;\nWRITE_ONCE(*{b}, r2);",  # none: overwritten
    "r0 = READ_ONCE(*{a});\nr2 = READ_ONCE(*{c});\nif (r2)\nWRITE_ONCE(*{b}, 1);",  # none: ctrl on another load
    "r0 = READ_ONCE(*{a});\nWRITE_ONCE(*{b}, 1);",  # none
    "r0 = READ_ONCE(*{a});\nsmp_mb();\nWRITE_ONCE(*{b}, 1);",  # a fence
)


@st.composite
def rings(draw):
    """A load-buffering ring of 2-3 threads, each ordering its load and store one way."""
    n = draw(st.integers(2, 3))
    locs = ["x", "y", "z"][:n]
    bodies = [draw(st.sampled_from(ORDERINGS)).format(a=locs[i], b=locs[(i + 1) % n], c=locs[(i + 2) % n])
              for i in range(n)]
    return litmus("ring", *bodies, exists=" /\\ ".join(f"{i}:r0=1" for i in range(n)))


RING_CLAIMS = {True: 0, False: 0}


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rings())
def test_generated_rings_complete_only_with_herd7s_outcomes(text):
    """Generated rings: wherever left_out says complete, the machine's outcomes are
    exactly herd7's (recorded); wherever herd7 has an outcome the machine lacks, load
    buffering is named."""
    test = parse_litmus(text, "ring.litmus")
    complete = shapes(to_spec(test)) == ()
    herd, labels = _herd7_states(text)
    got, _, full, _ = outcomes(test, labels=[lb if ":" in lb else f"[{lb}]" for lb in labels])
    assert full == 0 and _states(got) <= herd
    assert complete <= (_states(got) == herd), text
    RING_CLAIMS[complete] += 1


def test_the_rings_made_both_claims():
    """The generated rings above include complete ones and named ones (run after them)."""
    if RING_CLAIMS[True] + RING_CLAIMS[False] == 0:
        pytest.skip("the ring test did not run first")
    assert RING_CLAIMS[True] >= 3 and RING_CLAIMS[False] >= 3, RING_CLAIMS
