"""tests/shared_runs.py hands several test files one search: what it returns must be
what `check_spec` returns for the same file and options, and nothing in it may be
changeable by the test that reads it."""

from __future__ import annotations

import dataclasses

import pytest

from checker.pipeline import Options, check_spec, load
from helpers import MODELS
from shared_runs import MODELS as SHIPPED, checked


def without_seconds(result):
    """A result without what two runs differ in: each variant's search time and the
    memory it grew by (both measured, not computed)."""
    return dataclasses.replace(result, variants=tuple(
        dataclasses.replace(v, stats=dataclasses.replace(v.stats, seconds=0.0, bytes_per_state=None))
        for v in result.variants))


def test_a_shared_run_is_the_run_check_spec_makes(tmp_path):
    p = tmp_path / "wakeup.spec"
    p.write_text((MODELS / "wakeup.spec").read_text())
    got = checked(p, por=False, symmetry="off")
    assert checked(p, por=False, symmetry="off") is got  # searched once
    assert without_seconds(got) == without_seconds(check_spec(load(str(p)), Options(por=False, symmetry="off")))


def test_variants_picked_from_a_whole_run_are_those_of_a_run_of_them_alone(tmp_path):
    """In the order asked for, as check_spec gives them."""
    p = tmp_path / "counter.spec"
    p.write_text((MODELS / "counter.spec").read_text())
    whole = checked(p, progress=False)
    assert [v.variant for v in whole.variants] == ["base", "atomic_inc"]
    picked = checked(p, variants=("atomic_inc", "base"), progress=False)
    alone = check_spec(load(str(p)), Options(variants=("atomic_inc", "base"), progress=False))
    assert without_seconds(picked) == without_seconds(alone)
    assert picked.variants[0] is whole.variants[1]


def test_a_run_without_expectations_is_the_shared_run_read_without_them(tmp_path):
    """`use_expectations=False` is answered from the run with them (one search, not two):
    the same as check_spec gives, down to each outcome's expected_violation."""
    p = tmp_path / "counter.spec"
    p.write_text((MODELS / "counter.spec").read_text())
    without = checked(p, use_expectations=False)
    alone = check_spec(load(str(p)), Options(use_expectations=False))
    assert without_seconds(without) == without_seconds(alone)
    assert not without.use_expectations and not without.all_as_expected
    assert without.variants[0].stats is checked(p).variants[0].stats  # read from that search


def test_an_edited_file_is_searched_again(tmp_path):
    p = tmp_path / "counter.spec"
    p.write_text((MODELS / "counter.spec").read_text())
    before = checked(p)
    p.write_text((MODELS / "counter.spec").read_text().replace("0..2", "0..3"))
    after = checked(p)
    assert after is not before
    assert without_seconds(after) == without_seconds(check_spec(load(str(p)), Options()))


def test_a_shared_result_cannot_be_changed_in_place(tmp_path):
    p = tmp_path / "counter.spec"
    p.write_text((MODELS / "counter.spec").read_text())
    result = checked(p)
    hash(result)  # every part of it is immutable
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.variants[0].stats.states = 0


def test_searches_with_workers_are_not_shared(tmp_path):
    """Their notes depend on timing: each test makes its own."""
    with pytest.raises(ValueError, match="single-worker"):
        checked(MODELS / "counter.spec", workers=2)


@pytest.mark.xdist_group("csd_wait_ipi")  # reads csd_wait_ipi's shared search
def test_a_shipped_models_search_is_read_only_in_its_group(monkeypatch):
    """Under xdist, a test outside models/X's group that reads X's shared search would
    search X again on the other worker: shared_runs refuses it, before any search."""
    import shared_runs

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setattr(shared_runs, "GROUP", "timer_migration")
    with pytest.raises(AssertionError, match="outside the model's xdist group"):
        checked(SHIPPED / "csd_wait_ipi.spec")
    monkeypatch.setattr(shared_runs, "GROUP", "csd_wait_ipi")
    assert checked(SHIPPED / "csd_wait_ipi.spec").variants
