"""Random small models (fixed seeds, so the suite stays deterministic) checked with and
without each reduction: every verdict must agree.

The generator mixes what the reductions must get right: globals and locals, steps a
property reads, labels other processes and properties read, awaits, branches whose
conditions have side effects, atomic blocks, loops (the cycle proviso), assertions and
values that overflow (model errors), x86-TSO store buffers, liveness properties (weak
fairness), and arrays of identical processes with arrays indexed by `self`.
"""

from __future__ import annotations

import random

import pytest

from checker.front.parse import parse
from checker.pipeline import Options, check_spec

SEEDS = range(80)
CONFIGS = {"none": dict(por=False, symmetry="off"), "por": dict(por=True, symmetry="off"),
           "symmetry": dict(por=False, symmetry="on"), "both": dict(por=True, symmetry="on")}


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.labels: list[tuple[str, str]] = []  # (process, label)
        self.n_labels = 0

    def value(self, where: str) -> str:
        r = self.r
        atoms = ["0", "1", "2", "g0", "g1"] + (["l"] if where != "prop" else ["p0.l", "p1.l"])
        if where == "q":
            atoms.append("a[self]")
        a = r.choice(atoms)
        if r.random() < 0.4:
            a = f"({a} + {r.choice(atoms)}) % 3"
        return a

    def cond(self, where: str) -> str:
        r = self.r
        c = f"{self.value(where)} {r.choice(['==', '!=', '<', '>='])} {self.value(where)}"
        if where == "prop" and self.labels and r.random() < 0.4:
            p, lab = r.choice(self.labels)
            c = f"({c} || {p}@{lab})" if r.random() < 0.5 else f"!{p}@{lab}"
        return c

    def stmt(self, where: str, depth: int = 0) -> str:
        r = self.r
        target = r.choice(["g0", "g1", "l"] + (["a[self]"] if where == "q" else []))
        k = r.random()
        if k < 0.35:
            return f"{target} = {self.value(where)};"
        if k < 0.45:
            return f"await {self.cond(where)};"
        if k < 0.55 and depth < 2:
            return f"if ({self.cond(where)}) {{ {self.stmt(where, depth + 1)} }} else {{ {self.stmt(where, depth + 1)} }}"
        if k < 0.62:
            return f"atomic {{ {self.stmt('atomic' if where != 'q' else 'q', 2)} {target} = {self.value(where)}; }}" \
                .replace("atomic { await", "atomic { await") if True else ""
        if k < 0.68:
            return f"if (xchg({r.choice(['g0', 'g1'])}, {r.choice(['0', '1', '2'])}) == {r.choice(['0', '1'])}) l = 1;"
        if k < 0.74:
            return f"assert a{self.r.randrange(1000)}: {self.cond(where)};"
        if k < 0.80:
            return f"{target} = {self.value(where)} + 1;"  # may overflow: a model error
        if k < 0.88 and depth == 0:
            body = " ".join(self.stmt(where, 2) for _ in range(r.randint(1, 2)))
            return f"loop {{ {body} if ({self.cond(where)}) break; }}"
        return "skip;"

    def body(self, proc: str, where: str) -> str:
        r = self.r
        out = []
        for _ in range(r.randint(2, 4)):
            s = self.stmt(where)
            if r.random() < 0.3 and not s.startswith("loop"):
                self.n_labels += 1
                lab = f"L{self.n_labels}"
                if where != "q":
                    self.labels.append((proc, lab))
                s = f"{lab}: {s}"
            out.append(s)
        return " ".join(out)

    def model(self) -> str:
        r = self.r
        parts = ["model rnd;"]
        if r.random() < 0.25:
            parts.append("memory tso;")
        parts += ["var g0: 0..2 = 0;", "var g1: 0..2 = 0;"]
        arrays = r.random() < 0.5
        if arrays:
            parts.append("var a[q]: 0..2 = 0;")
        for p in ("p0", "p1"):
            parts.append(f"process {p} {{ var l: 0..2 = 0; {self.body(p, p)} }}")
        if arrays:
            parts.append(f"process q[2] {{ var l: 0..2 = 0; {self.body('q', 'q')} }}")
        parts.append(f"invariant inv: {self.cond('prop')};")
        if r.random() < 0.25:
            parts.append(f"property live: always eventually {self.cond('prop')};")
        return "\n".join(parts)


def _summary(result):
    v = result.variants[0]
    out = {o.property: o.verdict.value for o in v.outcomes}
    out["model error"] = v.model_error is not None
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_random_model_verdicts_agree(seed):
    text = _Gen(seed).model()
    try:
        spec = parse(text, "rnd.spec")
        results = {name: check_spec(spec, Options(use_expectations=False, **opts)) for name, opts in CONFIGS.items()}
    except Exception as e:
        from checker.base.errors import SpecError

        if isinstance(e, SpecError):
            pytest.skip(f"generated model refused: {e.message}")
        raise
    full = _summary(results["none"])
    for name, res in results.items():
        assert _summary(res) == full, (name, text)
        assert res.variants[0].stats.states <= results["none"].variants[0].stats.states, (name, text)
