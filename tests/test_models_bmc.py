"""BMC on the shipped models: on each model's covering set of variants it must find
every known violation at the depth the explicit engine finds it, and nothing else on
the way; and the models check themselves (`check` exits 0)."""

import glob
import os

import pytest

from checker.cli import main

from agreement import assert_engines_agree, compiled, explicit_depths, run_depths
from shared_runs import checked
from variant_cover import covering_variants

# named as the other tests name them (shared_runs keys a search by the path it was given,
# which its traces' spans carry)
MODELS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "models")
MODELS = sorted(glob.glob(os.path.join(MODELS_DIR, "*.spec")))
BASE_DEPTH = 6  # a modest bound for variants whose properties hold (or fail only deeper)
MAX_DEPTH = 20  # known violations up to here are reached; beyond it (pi_timer's at 29-38
                # steps take Z3 minutes each) the engines are compared up to BASE_DEPTH


@pytest.mark.slow
@pytest.mark.parametrize("model", [os.path.basename(p) for p in MODELS])
def test_bmc_finds_the_known_violations_at_the_explicit_depth(model):
    """Each sc and x86-TSO variant of the model's covering set (tests/variant_cover.py:
    between them they run every statement and branch outcome that any variant runs, as
    the loop cross-checks take them): BMC to the depth of its known violations finds
    each at the depth the explicit engine finds it, and nothing else on the way. What
    this compares is the encoding of each step against the compiled step; a variant
    whose every step another one runs adds Z3 time, no step to compare. (The verdicts
    of every variant are test_models'.)"""
    path = os.path.join(MODELS_DIR, model)
    text = open(path, encoding="utf-8").read()
    cover = covering_variants(path)
    # the explicit side: the unreduced search the verdict tests share (test_run_depths_are_the_explicit_depths)
    unreduced = {v.variant: v for v in checked(path, por=False, symmetry="off").variants}
    compared = 0
    for variant in cover:
        cm = compiled(text, variant, path)
        if cm.program.model.memory == "lkmm":
            continue  # the Z3 engines encode sc and x86-TSO
        explicit = run_depths(unreduced[variant])
        depths, err, _ = explicit
        known = [d for d in list(depths.values()) + ([err] if err is not None else []) if d <= MAX_DEPTH]
        depth = max(known, default=BASE_DEPTH)
        exp, got = assert_engines_agree(cm, depth, explicit)  # those depths, not a search of its own
        assert {k: v for k, v in exp.items() if v <= depth} == got, variant
        compared += 1
    assert compared > 0


@pytest.mark.parametrize("model", ["vcpu_preempted_kick.spec", "timer_migration.spec"])
def test_run_depths_are_the_explicit_depths(model):
    """What the test above relies on: the depths read off the shared unreduced run are the
    explicit engine's own (violations, deadlocks, `reachable` witnesses)."""
    path = os.path.join(MODELS_DIR, model)
    text = open(path, encoding="utf-8").read()
    for v in checked(path, por=False, symmetry="off").variants:
        assert run_depths(v) == explicit_depths(compiled(text, v.variant, path)), v.variant


HV = os.path.join(MODELS_DIR, "hv_timer_advance.spec")


def test_hv_timer_advance_lemmas_and_the_wrap_around(capsys):
    assert main([HV, "--full"]) == 0  # every row (the default folds a long table's expected variants)
    out = capsys.readouterr().out
    for lemma in ("expiry_not_after_deadline", "expiry_not_before_advance", "expired_iff_within_advance",
                  "expired_iff_exact", "busy_wait_covers_advance"):
        row = next(line.split() for line in out.splitlines() if lemma in line.split())  # base's row
        assert row[row.index(lemma) + 1:row.index(lemma) + 3] == ["proved", "holds"], row
    wrap = out[out.index("Counterexample: variant unguarded, lemma expiry_not_after_deadline"):]
    delta = next(line for line in wrap.splitlines() if line.strip().startswith("hv_delta("))
    value = int(delta.split("=")[1].split()[0])
    assert value > 2 ** 63  # wrapped around: about 2**64


@pytest.mark.slow
def test_hv_timer_advance_is_proved_for_every_run_length(capsys):
    assert main([HV, "--engine", "induction", "--depth", "2", "--variant", "base", "--brief"]) == 0
    out = capsys.readouterr().out
    assert "no_early_timer_irq          proved" in out and "deadlock                    proved" in out
