"""The exporters and replay on the real model: models/pi_timer.spec's stale-deadline
bug (expired_tscdeadline recorded after the posted branch, as in v5.2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import itf_py
import jsonschema
from junitparser import Failure, JUnitXml

from checker.export.json import schema
from helpers import run_check

MODEL = Path(__file__).resolve().parent.parent / "models" / "pi_timer.spec"
STALE = "stale_expired_deadline"
ITF = f"out/pi_timer.{STALE}.no_early_timer_irq.itf.json"


def test_the_stale_deadline_bug_in_every_format_and_its_replay_against_the_fix(tmp_path):
    (tmp_path / "models").mkdir()
    shutil.copy(MODEL, tmp_path / "models" / "pi_timer.spec")
    rc, _, err = run_check(tmp_path, "pi_timer", "--variant", STALE, "--variant", "base", "--no-expect",
                           "--json", "out/pi.json", "--itf", "out", "--mermaid", "out", "--report", "out/pi.md",
                           "--sarif", "out/pi.sarif", "--junit", "out/pi.xml")
    assert rc == 1, err  # --no-expect: the bug is an unexpected violation
    jsonschema.Draft202012Validator(schema()).validate(json.loads((tmp_path / "out/pi.json").read_text()))
    trace = itf_py.trace_from_json(json.loads((tmp_path / ITF).read_text()))
    last = trace.states[-1].values
    assert last["pc"].os == "timer_irq" and last["guest_tsc"] < last["programmed_deadline"]  # early (the guest's handler)
    assert last["expired_tscdeadline"] == 0  # what the entry's busy-wait (V2) read: not yet recorded
    xml = JUnitXml.fromfile(str(tmp_path / "out/pi.xml"))
    failed = {(s.name, c.name) for s in xml for c in s if any(isinstance(r, Failure) for r in c.result)}
    assert (f"pi_timer.{STALE}", "no_early_timer_irq") in failed
    assert not any(name == "pi_timer.base" for name, _ in failed)
    sarif = json.loads((tmp_path / "out/pi.sarif").read_text())
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"no_early_timer_irq"}
    md = (tmp_path / "out/pi.md").read_text()
    assert "```mermaid\nsequenceDiagram" in md and "pi_timer: the exitless timer" in md

    rc, out, _ = run_check(tmp_path, "pi_timer", "--replay", ITF)  # against the fixed base design
    assert rc == 0, out
    flat = " ".join(out.split())
    assert "[DIVERGES]" in out and "no enabled step of apic_timer leads to the recorded state" in flat
    assert "expired_tscdeadline = tscdeadline;" in flat and "this trace no longer applies" in flat
    rc, out, _ = run_check(tmp_path, "pi_timer", "--replay", ITF, "--variant", STALE, "--no-expect")
    assert rc == 1 and "invariant no_early_timer_irq is still violated" in out
