"""The generated level loop (engines/explicit/fastloop.py) must store exactly what the generic
loop stores, in the same order, with the same parent links and step numbers, and find
the same violations: it is only a faster way of doing the same search."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from agreement import compiled
from test_reduce_random import _Gen
from variant_cover import covering_variants

from checker.engines import reduce
from checker.engines.explicit import Limits
from checker.engines.explicit.fastloop import LevelLoopWriter, LoopShape, _paste
from checker.engines.explicit.search import Search, run_levels
from checker.base.errors import SpecError
from checker.pipeline import Options, compile_variant, load, selected_variants

ROOT = Path(__file__).resolve().parent.parent


def _search(cm, generated: bool, **kw) -> Search:
    limits = kw.pop("limits", Limits())
    search = Search(cm, limits, generate_from=0 if generated else None, **kw)
    run_levels(search, search.add_initial(), 0, 0, None)
    return search


def _same_search(cm, **kw) -> Search:
    """Run both loops; everything the search records must be equal."""
    fast, slow = _search(cm, True, **kw), _search(cm, False, **kw)
    assert fast.loops is not None and slow.loops is None
    assert fast.count == slow.count
    assert list(fast.parent) == list(slow.parent)
    assert list(fast.via) == list(slow.via)
    assert (fast.expanded, fast.transitions, fast.depth) == (slow.expanded, slow.transitions, slow.depth)
    assert (fast.ample_states, fast.buffer_full, fast.limit) == (slow.ample_states, slow.buffer_full, slow.limit)
    assert fast.found == slow.found
    assert fast.model_error == slow.model_error
    assert _coverage(fast) == _coverage(slow)
    assert fast.held == slow.held
    return fast


def _coverage(search: Search):
    """Per step: whether it ran, and for a condition the pcs it went to (the generic loop
    also records the pc after other steps, which coverage does not read)."""
    if search.marks is None:
        return None
    branches = search.loops.branches() if search.loops is not None else LevelLoopWriter(
        search.cm, search.actors).branches()
    return [(bool(h), h >> 1 if k in branches else None) for k, h in enumerate(search.marks)]


@pytest.mark.parametrize("seed", range(40))
def test_random_models_search_the_same(seed):
    """Random models with asserts, overflows (model errors), awaits, loops, tso store
    buffers and arrays of processes: the generated loop stops at every such state and
    hands it to the generic loop, which must leave identical records."""
    try:
        cm = compiled(_Gen(seed).model(), file="rnd.spec")
    except SpecError as e:
        pytest.skip(f"generated model refused: {e.message}")
    _same_search(cm)
    _same_search(cm, hash_compact=True, coverage=True)
    _same_search(cm, reduction=reduce.plan(cm, por=True, symmetry=reduce.SymmetryMode.ON), coverage=True)


@pytest.mark.parametrize("model", sorted(p.name for p in (ROOT / "models").glob("*.spec")))
def test_shipped_models_search_the_same(model):
    """The model's covering set of variants (variant_cover: between them every statement
    and branch outcome any variant runs), searched as `check` searches: both loops leave
    the same records."""
    spec = load(str(ROOT / "models" / model))
    for variant in covering_variants(ROOT / "models" / model):
        cm = compile_variant(spec, variant, Options())
        try:
            _ = cm.program.initial_states
        except SpecError:
            continue  # an `any` too wide to enumerate: for the Z3 engines only
        assert _same_search(cm, reduction=reduce.plan(cm, por=True), coverage=True).count > 0


def test_limits_stop_where_the_generic_loop_stops():
    cm = compiled("""
model m;
var x: 0..7 = 0;
var y: 0..7 = 0;
process a { loop { x = (x + 1) % 8; } }
process b { loop { y = (y + 1) % 8; } }
""")
    assert _same_search(cm).count == 64
    for limits in (Limits(max_states=10), Limits(max_depth=3)):
        s = _same_search(cm, limits=limits)
        assert s.limit is not None


def test_assertion_and_deadlock_found_through_the_generic_loop():
    cm = compiled("""
model m;
var x: 0..3 = 0;
process a { x = x + 1; assert small: x < 2; x = x + 1; await x == 0; }
process b { x = x + 1; }
""")
    s = _same_search(cm)
    assert set(s.found) == {"small", "deadlock"}


def test_a_return_after_a_branch_is_moved_into_it():
    body = ast.parse("if not s:\n    return None\nv = s\nif v & 1:\n    return v\nv = v + 2\nreturn v").body
    store = ast.parse("out.append(succ)").body
    pasted = ast.unparse(ast.Module(body=_paste(body, store), type_ignores=[]))
    assert "return" not in pasted
    ns = {}
    fn = "def f(s, out):\n" + "\n".join("    " + line for line in pasted.splitlines())
    exec(fn, ns)
    for s, want in ((0, []), (1, [1]), (2, [4])):
        out: list = []
        ns["f"](s, out)
        assert out == want


def test_a_step_with_a_return_in_a_loop_is_called(tmp_path):
    cm = compiled("""
model m;
var x: 0..3 = 0;
process a { x = 1; }
""")
    search = Search(cm, Limits())
    writer: LevelLoopWriter = search.loops
    name = cm.instances[0].steps_at[0][0].name
    writer.functions[name] = ast.parse(f"def {name}(s):\n    while True:\n        return s\n").body[0]
    source = writer.source(LoopShape((), True, False, False, False, False))
    assert f"succ = {name}(s)" in source


def test_final_conditions_are_checked_in_states_the_generated_loop_reaches():
    """With the deadlock check off, only the final-state hand-off brings a state where
    every process is at a valid end to the generic loop, which checks `final` there
    when nothing can move (the states at the end label with a step left are not final)."""
    cm = compiled("""
model m;
var x: 0..3 = 0;
process a { x = 1; end_idle: while (x < 3) x = x + 1; }
final small: x < 2;
""")
    s = _same_search(cm, limits=Limits(check_deadlock=False))
    assert "small" in s.found and s.final_count == 1


def _writes_cover_every_change(cm, states: int = 2000) -> int:
    """Every step, from the first `states` reachable states, changes only bits in its
    `writes` (a parallel worker trusts them not to compute the owner of a successor by
    a step that leaves the owner's bits alone). How many steps write known bits. Where
    no step says (every `writes` -1: the lkmm machine's steps), there is nothing to check
    and nothing is searched."""
    search = Search(cm, Limits(max_states=states))
    if all(cs.writes == -1 for cs in search.steps):
        return 0
    run_levels(search, search.add_initial(), 0, 0, None)  # the first `states` are all it reads
    steps = search.steps
    for n, s in enumerate(search.seen):
        if n == states:
            break
        for cs in steps:
            try:
                t = cs.packed(s)
            except Exception:
                continue
            if t is not None:
                assert not (t ^ s) & ~cs.writes, (cs.name, hex(s), hex(t), hex(cs.writes))
    return sum(1 for cs in steps if cs.writes != -1)


@pytest.mark.parametrize("path", sorted((ROOT / "models").glob("*.spec")) + sorted((ROOT / "tests/litmus").glob("*.spec")),
                         ids=lambda p: p.stem)
def test_a_step_changes_only_the_bits_it_says_it_writes(path):
    """Every variant of a litmus model; of a shipped model, its covering set (variant_cover:
    between them every statement and branch outcome any variant runs), since what this
    checks is each step's code."""
    spec = load(str(path))
    known = 0
    shipped = path.parent == ROOT / "models"
    for variant in covering_variants(path) if shipped else selected_variants(spec, ()):
        cm = compile_variant(spec, variant, Options())
        try:
            _ = cm.program.initial_states
        except SpecError:
            continue
        known += _writes_cover_every_change(cm)
    assert known > 0  # most steps write fixed slots: the test checks something


@pytest.mark.parametrize("seed", range(40))
def test_random_steps_change_only_the_bits_they_say_they_write(seed):
    """Random models: arrays indexed at run time (any bit, -1), tso buffers, overflows."""
    try:
        cm = compiled(_Gen(seed).model(), file="rnd.spec")
    except SpecError as e:
        pytest.skip(f"generated model refused: {e.message}")
    _writes_cover_every_change(cm)
