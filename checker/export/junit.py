"""JUnit XML (`--junit OUT.xml`), for CI servers' test views.

One test suite per variant, one test case per (variant, property). An outcome that
differs from its expectation is a failure whose one-line message says what and how long
(the race diagram and the numbered trace are the failure's text); a model error is an error; an incomplete verdict
(search cut short, or a property this engine does not check) is skipped, with why.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..base.safe_text import printable
from ..results.trace import RunResult, Verdict
from .files import variant_stem, write_text
from .text import DIAGRAM, format_counterexample, format_trace


def one_line(text: str, limit: int = 300) -> str:
    """A failure's `message` attribute: one line (CI views show it as a title); the
    race diagram and the trace go in the element's text."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3].rsplit(" ", 1)[0] + " ..."


def to_junit(result: RunResult, timing: bool = False) -> str:
    root = ET.Element("testsuites", name=f"timerace {result.model}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for v in result.variants:
        suite = ET.SubElement(root, "testsuite", name=variant_stem(result, v.variant))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        props = ET.SubElement(suite, "properties")
        for name, value in (("file", printable(result.file)), ("variant", v.variant), ("memory_model", v.memory),
                            ("engine", v.stats.engine), ("states", str(v.stats.states)),
                            ("transitions", str(v.stats.transitions)), ("depth", str(v.stats.depth)),
                            ("complete", "true" if v.stats.complete else f"false ({v.stats.limit})")):
            ET.SubElement(props, "property", name=name, value=value)
        for o in v.outcomes:
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", name=o.property, classname=variant_stem(result, v.variant),
                                 file=printable(result.file))
            if o.span is not None:
                case.set("line", str(o.span.line))
            expected = "violated" if o.expected_violation else "holds"
            if o.verdict is Verdict.INCOMPLETE:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=f"not verified: {o.note or 'incomplete'}")
            elif not o.as_expected:
                counts["failures"] += 1
                if o.counterexample is not None:
                    cx = o.counterexample
                    steps = "" if cx.kind == "lemma" else f"; {cx.trace.steps} steps"  # a lemma has no trace
                    message = one_line(f"{cx.message} (expected: {expected}{steps})")
                    fail = ET.SubElement(case, "failure", message=message,
                                         type=f"unexpected {o.verdict.value}")
                    fail.text = format_counterexample(cx, v.variant, show=DIAGRAM) + "\n\n" + format_trace(cx.trace)
                else:
                    ET.SubElement(case, "failure", type=f"unexpected {o.verdict.value}",
                                  message=f"{o.kind} {o.property} {o.verdict.value}, expected: {expected} "
                                          f"({v.stats.states:,} states explored)")
        if v.model_error is not None:
            counts["tests"] += 1
            counts["errors"] += 1
            cx = v.model_error
            case = ET.SubElement(suite, "testcase", name="model error", classname=variant_stem(result, v.variant),
                                 file=printable(result.file))
            err = ET.SubElement(case, "error", type="model error",
                                message=one_line(f"{cx.message} ({cx.trace.steps} steps)"))
            err.text = format_counterexample(cx, v.variant, show=DIAGRAM) + "\n\n" + format_trace(cx.trace)
        for k, n in counts.items():
            suite.set(k, str(n))
            totals[k] += n
        if timing:
            suite.set("time", f"{v.stats.seconds:.3f}")
    for k, n in totals.items():
        root.set(k, str(n))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(result: RunResult, path: str, timing: bool = False) -> None:
    write_text(path, to_junit(result, timing))


