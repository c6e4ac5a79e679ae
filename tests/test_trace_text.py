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
