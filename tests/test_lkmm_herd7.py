"""The axiomatic LKMM against herd7 itself: the same files, and generated programs.

herd7's reports are recorded under tests/ (tests/oracle.py): our states, verdict and
execution counts must be the recorded herd7's, and herd7's own where TIMERACE_HERD7=live.
"""

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
from checker.litmus.reader import parse_litmus
from checker.pipeline import load_litmus
from checker.litmus.axiomatic import evaluate

HERD = oracle.HERD
LITMUS_C = Path(__file__).parent / "litmus_c"
FILES = sorted(LITMUS_C.glob("*.litmus"))


def herd7(path: Path) -> tuple[set, str, int, int]:
    """herd7's states (as sets of 'name=value'), verdict and positive/negative counts."""
    return oracle.summary(path.read_text(), path)


def ours(test) -> tuple[set, str, int, int]:
    res = evaluate(test)
    states = {frozenset(f"{k}={v}" for k, v in o.values) for o, _ in res.outcomes}
    return states, res.observation, res.positive, res.negative


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_same_states_verdict_and_counts_as_herd7(path):
    assert ours(load_litmus(str(path))) == herd7(path)


# ------------------------------------------------------------ generated programs

LOCS = ("x", "y", "z")
STORES = ("WRITE_ONCE(*{l}, {v});", "smp_store_release({l}, {v});", "atomic_set({l}, {v});")
LOADS = ("{r} = READ_ONCE(*{l});", "{r} = smp_load_acquire({l});")
RMWS = ("{r} = xchg({l}, {v});", "{r} = xchg_relaxed({l}, {v});", "{r} = xchg_acquire({l}, {v});",
        "{r} = xchg_release({l}, {v});", "{r} = cmpxchg({l}, 0, {v});", "{r} = cmpxchg_relaxed({l}, 1, {v});",
        "{r} = cmpxchg_acquire({l}, 0, {v});", "atomic_inc({l});", "{r} = atomic_inc_return({l});",
        "{r} = atomic_fetch_add_relaxed(2, {l});")
FENCES = ("smp_mb();", "smp_rmb();", "smp_wmb();", "smp_mb__before_atomic();", "smp_mb__after_atomic();")


@st.composite
def programs(draw):
    nthreads = draw(st.integers(2, 3))
    threads = []
    for _ in range(nthreads):
        regs, body = [], []
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.integers(0, 3)) == 0:
                body.append(draw(st.sampled_from(FENCES)))
            kind = draw(st.sampled_from(("store", "load", "rmw", "dep")))
            loc = draw(st.sampled_from(LOCS[:2 if nthreads == 2 else 3]))
            v = draw(st.integers(1, 2))
            if kind == "dep" and regs:  # a data or control dependency on the last read
                r = regs[-1]
                if draw(st.booleans()):
                    body.append(f"WRITE_ONCE(*{loc}, {r} + {v - 1});")
                else:
                    body.append(f"if ({r}) WRITE_ONCE(*{loc}, {v});")
                continue
            if kind == "dep":
                kind = "load"
            r = f"r{len(regs)}"
            tmpl = draw(st.sampled_from({"store": STORES, "load": LOADS, "rmw": RMWS}[kind]))
            if "{r}" in tmpl:
                regs.append(r)
            body.append(tmpl.format(r=r, l=loc, v=v))
        threads.append((regs, body))
    used = sorted({m for _, b in threads for line in b for m in re.findall(r"\b([xyz])\b", line)} | {"x"})
    text = "C gen\n\n{}\n\n"
    for i, (regs, body) in enumerate(threads):
        params = ", ".join(f"int *{loc}" for loc in used)
        text += f"P{i}({params})\n{{\n" + "".join(f"\tint {r};\n" for r in regs)
        text += "".join(f"\t{b}\n" for b in body) + "}\n\n"
    shown = [f"{i}:{r}" for i, (regs, _) in enumerate(threads) for r in regs] + used
    text += f"locations [{'; '.join(shown)}]\n"
    cond = [f"{s}={draw(st.integers(0, 2))}" for s in shown[:3]]
    text += "exists (" + " /\\ ".join(cond) + ")\n"
    return text


@pytest.mark.slow
@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs())
def test_generated_programs_agree_with_herd7(text):
    assert ours(parse_litmus(text, "gen.litmus")) == oracle.summary(text), text
