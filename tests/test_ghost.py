"""`ghost var`: a variable outside the memory model.

A model's clock (the guest TSC) and its bookkeeping are not memory the CPUs share
through stores and loads: rdtsc reads no store. Written as a plain `var`, under lkmm a
CPU may read the clock stale and see a deadline "not yet due" after the timer fired
(pi_timer_v6's base reported no_early_timer_irq violated that way); under tso a plain
store to it waits in a store buffer. A `ghost var` is read and written as memory under
every model: never buffered, never stale, and a step that stores only ghosts is no
fence."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from checker.cli import main
from checker.pipeline import Options, check_spec, load

CLOCK = """// A timer armed for tick 1 must not fire before the clock reaches 1.
model clock;
memory lkmm;
{decl} now: 0..2 = 0;
var fired: bool = false;
process clock {{ while (now < 2) {{ now = now + 1; }} }}
process timer {{ await now >= 1; WRITE_ONCE(fired, true); }}
process guest {{ var seen: 0..2 = 0; await READ_ONCE(fired); seen = now; assert seen >= 1; }}
"""

SB = """model sb;
memory tso;
{decl} x: 0..1 = 0;
{decl} y: 0..1 = 0;
process p0 {{ var r: 0..1 = 0; x = 1; r = y; done0: r = r; }}
process p1 {{ var r: 0..1 = 0; y = 1; r = x; done1: r = r; }}
invariant not_both_zero: !(p0@done0 && p1@done1 && p0.r == 0 && p1.r == 0);
"""


def _verdicts(text: str, **kw) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.spec"
        path.write_text(text)
        result = check_spec(load(str(path)), Options(coverage=False, **kw))
    return {o.property: o.verdict.value for v in result.variants for o in v.outcomes}


def test_a_ghost_clock_is_never_read_stale_under_lkmm():
    assert _verdicts(CLOCK.format(decl="ghost var"))["assertions"] == "holds"


def test_a_plain_var_clock_is_read_stale_under_lkmm():
    """The reason `ghost` exists: the same model with `var` reads the clock behind."""
    assert _verdicts(CLOCK.format(decl="var"))["assertions"] == "violated"


@pytest.mark.parametrize("memory", ["tso", "lkmm"])
def test_ghost_stores_are_never_buffered_or_stale(memory):
    """Store buffering needs a store to wait in a buffer (tso) or a stale view (lkmm):
    with ghosts there is neither."""
    assert _verdicts(SB.format(decl="var"), memory=memory)["not_both_zero"] == "violated"
    assert _verdicts(SB.format(decl="ghost var"), memory=memory)["not_both_zero"] == "holds"


def test_ghost_is_a_global_declaration_only(capsys):
    text = "model m; process p { ghost var g: bool = false; g = true; }\n"
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.spec"
        path.write_text(text)
        rc = main([str(path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "m.spec:1:" in err and "^" in err


def test_ghost_changes_nothing_under_sc():
    assert _verdicts(SB.format(decl="ghost var"), memory="sc") == _verdicts(SB.format(decl="var"), memory="sc")
