"""The statement text shown in traces is the code, without the comments written in it.

A multi-line `atomic` block with comments on its lines used to be shown with the
comments joined into the code (`... = true; // why else { ... }`), which reads as if
the rest of the block were commented out.
"""

from checker.front.parse import parse
from checker.pipeline import Options, check_spec


def test_comments_inside_a_multi_line_step_are_not_shown():
    text = """model t;
var a: bool = false;
var b: bool = false;
process p {
  atomic {
    a = true;      // first
    /* a block
       comment */
    b = true;      // second
  }
}
invariant never_both: !(a && b);
"""
    result = check_spec(parse(text, "t.spec"), Options())
    cx = next(o.counterexample for o in result.variants[0].outcomes if o.property == "never_both")
    assert [a.text for a in cx.trace.actions] == ["atomic { a = true; b = true; }"]


# ------------------------------------------------------------ under memory lkmm

LKMM_BRANCH = """model t;
var x: 0..3 = 0;
var y: 0..2 = 0;
process a {
  x = 1;
  y = 1;
}
process b {
  var r: 0..3 = 0;
  if (y == 1) {
    r = cmpxchg(x, 0, 2);
  }
}
invariant PROP;
"""


def _lkmm_details(prop: str, expected: int = 0) -> list[tuple[str, str]]:
    text = LKMM_BRANCH.replace("PROP", prop).replace("cmpxchg(x, 0, 2)", f"cmpxchg(x, {expected}, 2)")
    result = check_spec(parse(text, "t.spec"), Options(memory="lkmm"))
    cx = next(o.counterexample for o in result.variants[0].outcomes if o.counterexample is not None)
    return [(a.text, a.detail) for a in cx.trace.actions if a.process == "b"]


def test_an_lkmm_branch_says_taken_or_not_and_what_it_read():
    """As the sc trace of the same statement does (it once printed only the stale read)."""
    steps = _lkmm_details("stale: !(b@end && b.r == 0 && y == 1 && x == 1)")
    assert steps[0][0] == "if (y == 1)"
    assert steps[0][1].startswith("not taken: read y = 0, an older store than memory's 1")
    steps = _lkmm_details("failed: !(b@end && b.r == 1)")
    assert steps[0] == ("if (y == 1)", "taken: y = 1")


def test_an_lkmm_failed_cmpxchg_is_shown_as_failed():
    steps = _lkmm_details("failed: !(b@end && b.r == 1)")
    assert steps[1][0] == "r = cmpxchg(x, 0, 2);"
    assert steps[1][1].startswith("cmpxchg failed: it read another value than it expected, and stored nothing")
    ok = _lkmm_details("succeeded: !(b@end && x == 2)", expected=1)
    assert ok[1][0] == "r = cmpxchg(x, 1, 2);" and "failed" not in ok[1][1]
