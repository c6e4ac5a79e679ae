"""The memory-model finding on `atomic { }` blocks (checker/memory/lkmm.composite_findings):
under tso and lkmm a block that stores and touches more than one shared location is one
locked instruction / one fully ordered read-modify-write of all of it, which the kernel
has no instruction for; the text output says so once per memory model and --json lists
each block as a warning."""

from __future__ import annotations

import json

from checker.cli import main
from checker.pipeline import Options, check_spec, load

SPEC = """model blocks;
var x: 0..1 = 0;
var y: 0..1 = 0;
var l: bool = false;
var mine: 0..1 = 0;
process p {
  var r: 0..1 = 0;
  atomic { x = 1; y = 1; }
  atomic { r = x; x = 0; }
  atomic { mine = y; }
  spin_lock(l);
  spin_unlock(l);
}
process q {
  var r: 0..1 = 0;
  r = y;
  r = x;
  spin_lock(l);
  spin_unlock(l);
}
variant tso { memory tso; }
variant lkmm { memory lkmm; }
"""


def test_the_block_over_two_shared_locations_is_found_under_tso_and_lkmm(tmp_path, capsys):
    path = tmp_path / "blocks.spec"
    path.write_text(SPEC)
    result = check_spec(load(str(path)), Options(progress=False))
    found = {v.variant: v.memory_findings for v in result.variants}
    assert found["base"] == ()  # sc: an atomic block is what sc means
    for name, what in (("tso", "one locked instruction"), ("lkmm", "one fully ordered read-modify-write")):
        # only the first block: the read-and-clear of x touches one shared location, the
        # store to `mine` (only p touches it) none that is shared, spin_lock is a primitive
        assert [line for line, _ in found[name]] == [8]
        assert what in found[name][0][1] and "(x, y)" in found[name][0][1]
    out_json = tmp_path / "out.json"
    assert main([str(path), "--json", str(out_json), "--no-coverage"]) == 0
    text = capsys.readouterr().out
    assert "x86-TSO: 1 atomic block over several shared locations (line 8) is one locked instruction" in " ".join(
        text.split())
    # lkmm's statement names every atomic block that stores, the read-and-clear too
    assert "an atomic block that stores less than fully ordered (lines 8, 9)" in " ".join(text.split())
    warned = json.loads(out_json.read_text())["warnings"]
    assert sorted((w["variant"], w["line"]) for w in warned if "atomic block" in w["message"]) == [
        ("lkmm", 8), ("tso", 8)]
