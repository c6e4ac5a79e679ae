"""A branch whose only statement compiles to no code (a write of a field that holds one
value) still compiles: the generated `if` gets a `pass` (it was an IndentationError
traceback, found with `hrtimer T[1] pinned`, whose CPU field holds only 0)."""

from __future__ import annotations

import pytest

from agreement import compiled
from checker.engines.explicit import explore


@pytest.mark.parametrize("branch", ["if (c) { x = 0; }", "if (c) { y = 1; } else { x = 0; }"])
def test_a_branch_with_nothing_to_do_compiles(branch):
    text = f"""model onevalue;
var x: 0..0 = 0;
var y: 0..1 = 0;
var c: bool = false;
process p {{ c = true; }}
process q {{ atomic {{ {branch} }} }}
reachable then_taken: c && q@end;
"""
    ex = explore(compiled(text))
    assert ex.stats.complete and ex.model_error is None and set(ex.counterexamples) == {"then_taken"}
