"""Every error a mutated documented example meets says where, what and how to fix it.

The examples of spec/LANGUAGE.md are complete, valid models; each is mutated token by
token (a token deleted, doubled, replaced by another of the same example, misspelt, or
replaced by a common punctuation mark), with a fixed seed, and the mutant goes through
the pipeline's front half (`diagnose`: parse, then resolve, lower and compile each
variant), as the language server does on every keystroke. Whatever it reports must be
a SpecError with a registered code, a hint and a position in the file; anything else
(a traceback from inside a stage) fails the test with the mutant that caused it.
"""

from __future__ import annotations

import random
import re

import pytest

from checker.base.errors import REGISTRY
from checker.pipeline import diagnose
from test_language_doc import EXAMPLES

#: tokens as a lexer would cut them (comments are left alone: mutating them finds nothing)
TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|[A-Za-z_][A-Za-z0-9_]*|0x[0-9a-fA-F]+|\d+|\.\.|->|&&|\|\||[=!<>]=|<<|>>|\S",
                   re.S)
PUNCTUATION = (";", "{", "}", "(", ")", "0", "true", "x", "=", ",", "..", "@", "[", "]")
PER_EXAMPLE = 30  # mutants per example; a wider run (hundreds each, several seeds) found the defects fixed here


def mutants(source: str, rng: random.Random, n: int):
    spans = [(m.start(), m.end()) for m in TOKEN.finditer(source) if not m.group().startswith("/")]
    for _ in range(n):
        a, b = rng.choice(spans)
        token = source[a:b]
        how = rng.randrange(5)
        if how == 0:
            new = ""
        elif how == 1:
            new = f"{token} {token}"
        elif how == 2:
            c, d = rng.choice(spans)
            new = source[c:d]
        elif how == 3:
            new = token + rng.choice("xq_1")
        else:
            new = rng.choice(PUNCTUATION)
        yield source[:a] + new + source[b:]


@pytest.mark.parametrize("ex", EXAMPLES, ids=[f"line{e.line}" for e in EXAMPLES])
def test_every_error_of_a_mutated_example_has_a_code_a_hint_and_a_position(ex):
    rng = random.Random(ex.line)  # one stream per example: a failure names its own example
    problems = []
    for text in mutants(ex.source, rng, PER_EXAMPLE):
        try:
            found = diagnose(text, "example.spec")
        except Exception as e:
            pytest.fail(f"{type(e).__name__}: {e} for the mutant:\n{text}")
        for e, _ in found.errors:
            if e.code not in REGISTRY or not e.hint or e.span.line <= 0:
                problems.append(f"{e.render(text)}\n(code {e.code!r}, hint {e.hint!r}) in the mutant:\n{text}")
    assert not problems, "\n\n".join(problems[:3])


def test_the_mutants_are_mostly_errors():
    """The fuzzer mutates enough to matter: most mutants are refused, some are still models."""
    rng = random.Random(0)
    results = [bool(diagnose(t, "example.spec").errors) for ex in EXAMPLES[:10] for t in mutants(ex.source, rng, 10)]
    assert 0.4 < sum(results) / len(results) < 1.0


def test_a_pure_built_in_as_a_statement_is_refused():
    """Found by the fuzzer: `max(0, 1);` folded to a constant that the IR took for a call
    (AttributeError)."""
    [(e, _)] = diagnose("model m;\nvar x: 0..1 = 0;\nprocess p { max(0, 1); x = 1; }\n", "m.spec").errors
    assert e.message == "'max' computes a value, and this statement drops it" and e.hint
    assert (e.span.line, e.span.col) == (3, 13)


def test_finish_wait_in_a_process_that_never_waits_is_checked():
    """Found by the fuzzer: finish_wait in a process with no task state was a KeyError in
    the compiler. The kernel's finish_wait sets the task running and leaves the queue,
    both already true here, so the model checks, with the waker's wake-up still needed."""
    from checker.pipeline import Options, check_spec
    from checker.front.parse import parse

    text = """model m;
waitqueue wq;
var done: bool = false;
process sleeper { prepare_to_wait(wq); if (!done) schedule(); finish_wait(wq); }
process waker { done = true; finish_wait(wq); wake_up(wq); }
"""
    assert not diagnose(text, "m.spec").errors
    v = check_spec(parse(text, "m.spec"), Options()).variants[0]
    assert [(o.property, o.verdict.value) for o in v.outcomes] == [("deadlock", "holds")]
