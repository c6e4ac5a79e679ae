"""The exporters and replay under x86-TSO: store buffers in every format
(models/vcpu_requests.spec without the vCPU's smp_mb(), a store still buffered at the end)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import itf_py
import jsonschema

from checker.export.json import schema
from checker.export.itf import read_itf
from helpers import run_check
from tools import MERMAID_DIR, node

MODEL = Path(__file__).resolve().parent.parent / "models" / "vcpu_requests.spec"
STEM = "vcpu_requests.no_vcpu_mb.request_not_stranded"


def test_store_buffers_in_every_format_and_a_replay(tmp_path):
    (tmp_path / "models").mkdir()
    shutil.copy(MODEL, tmp_path / "models" / "vcpu_requests.spec")
    rc, out, err = run_check(tmp_path, "vcpu_requests", "--variant", "no_vcpu_mb", "--json", "out/r.json",
                             "--itf", "out", "--mermaid", "out", "--report", "out/r.md")
    assert rc == 0, err
    assert "still buffered, not yet visible:" in out and "vcpu: mode = IN_GUEST_MODE" in out
    doc = json.loads((tmp_path / "out/r.json").read_text())
    jsonschema.Draft202012Validator(schema()).validate(doc)
    assert doc["variants"][0]["memory_model"] == "tso"
    itf = json.loads((tmp_path / f"out/{STEM}.itf.json").read_text())
    last = itf_py.trace_from_json(itf).states[-1].values
    assert [tuple(r) for r in last["sb(vcpu)"]] == [("mode", "IN_GUEST_MODE")]  # a record per store
    assert read_itf(itf)[1].trace.states[-1].get("sb(vcpu)") == (("mode", "IN_GUEST_MODE"),)
    done = subprocess.run([node(), str(MERMAID_DIR / "parse.mjs"), str(tmp_path / f"out/{STEM}.mmd")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    rc, out, _ = run_check(tmp_path, "vcpu_requests", "--variant", "no_vcpu_mb", "--replay",
                           f"out/{STEM}.itf.json", "--no-expect")
    assert rc == 1 and "still violated" in out
    rc, out, _ = run_check(tmp_path, "vcpu_requests", "--replay", f"out/{STEM}.itf.json")  # base has the mb
    assert rc == 0 and "[DIVERGES]" in out


def test_the_store_buffering_litmus_trace_replays_with_its_flushes_and_a_barrier_closes_it(tmp_path):
    litmus = Path(__file__).resolve().parent / "litmus"
    (tmp_path / "models").mkdir()
    shutil.copy(litmus / "sb.spec", tmp_path / "models" / "sb.spec")
    run_check(tmp_path, "sb", "--no-expect", "--itf", "out")
    trace = "out/sb.base.forbidden.itf.json"
    assert '"kind": "flush"' in (tmp_path / trace).read_text()
    rc, out, _ = run_check(tmp_path, "sb", "--no-expect", "--replay", trace)
    assert rc == 1 and "final condition forbidden is still violated" in out and "flush p" in out
    shutil.copy(litmus / "sb_mb.spec", tmp_path / "models" / "sb_mb.spec")
    rc, out, _ = run_check(tmp_path, "sb_mb", "--no-expect", "--replay", trace)
    assert rc == 0 and "[DIVERGES]" in out and "smp_mb();" in out
