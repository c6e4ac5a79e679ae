"""One generated level loop per model: the search's hot path without a call per step.

`Search.level` (search.py) is generic: for every state and every actor it
reads the pc field, looks the pc up in a table and calls one step function per step
there. In Python, those calls and lookups cost about as much as the steps themselves.
This module writes, for one compiled variant, a single function that does the same
work with every step's body pasted in place: per actor one branch on its pc field,
and where a step would `return` its successor, the code that looks the successor up
in the visited set and stores it. The step bodies come from the compiled module's own
source (`CompiledModel.source`, parsed with `ast`), so there is one definition of
what a step does; a step whose body cannot be pasted (a `return` inside a loop) is
called as a function instead.

The generated loop handles the common case only. Whenever a state needs more (an
invariant fails, no step moves, a step raises: a failed assertion, a value out of
range, a full store buffer), it stops at that state and reports its index; the caller
expands that one state with the generic loop, which knows how to report it, and
resumes the generated loop after it. Successors the generated loop stored before it
stopped stay stored (the generic loop finds them seen), and the state's transitions
are counted once. So the generated loop never decides a verdict: it only makes the
states that need no decision cheaper. `check --dump-python` prints it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ...backends.python import CompiledModel
from ...base.safe_text import python_comment as _comment
from ...ir import StepKind
from ...base.record import record

#: what a generated loop returns first: the level is done, state j needs the generic
#: loop, the state limit was reached after state j - 1, or Ctrl-C arrived at state j
DONE, GENERIC, FULL, INTERRUPTED = 0, 1, 2, 3

#: states are partitioned by (s & omask) % OWNER_MOD (which mixes every digit of s),
#: looked up in a table: three cheap operations per successor (search.Route,
#: parallel.Partition, and the routing loops written here)
OWNER_MOD = 65521


@record
class LoopShape:
    """What one generated loop must do besides expanding states; a search needs a new
    loop when any of this changes (an invariant is found violated, say)."""

    invariants: tuple[int, ...]  # indices into CompiledModel.invariants still to check
    deadlock: bool  # stop at a state without successors (the generic loop judges it)
    compact: bool  # the visited set is `Fingerprints` (add() says whether t was new)
    canonical: bool  # successors go through the symmetry's canonical(t) first
    ample: bool  # partial-order reduction: ample_mask(s) says which actors to expand
    progress: bool  # call tick(count, queued) every 1024 states
    route: bool = False  # a parallel worker: a successor another worker owns is routed to it
    # states another worker owns (taken from its level): every successor is routed, with
    # no lookup in this worker's visited set, which seldom holds it
    route_all: bool = False
    finals: bool = False  # the model has `final` conditions: a final state goes to the generic loop
    # a parallel worker's own states: the steps that leave the bits its owner depends on
    # alone (CompiledStep.writes & omask == 0), whose successors are this worker's too
    # (without symmetry, which may move any bits)
    local_steps: frozenset[int] = frozenset()
    # coverage: each step marks, in a local of its own, that it ran (a condition: which
    # pc it went to), and the loop returns the marks; a premise of vacuity not yet seen
    # to hold sends a state where it holds to the generic loop, which records it
    marks: bool = False
    premises: tuple[int, ...] = ()


class _Unsupported(Exception):
    """A step body that cannot be pasted into the loop (it is called instead)."""


# names the loop itself uses: a pasted body must not assign any of them
_LOOP_NAMES = frozenset({
    "frontier", "ids", "j", "count", "expanded", "max_states", "seen", "seen_add", "nxt_append",
    "parent_append", "via_append", "tick", "ample_mask", "actors", "canonical", "transitions", "ample_states",
    "before", "sid", "succ", "field", "am", "route", "me", "owners", "omask", "sent", "sent_add", "rt", "rp", "rk"})
# the coverage marks' locals, h0, h1, ...: a body assigning such a name is called instead
_MARK = re.compile(r"h[0-9]+")



class LevelLoopWriter:
    """Writes level loops for one compiled variant from the search's own actor tables
    (`Search.actors`: actors in order, steps numbered as the search numbers them), so
    that the generated loop stores exactly what the generic loop would, in the same
    order."""

    def __init__(self, cm: CompiledModel, actor_tables: list[tuple[int, int, tuple]]):
        self.cm = cm
        self.actor_tables = actor_tables  # (shift, mask, (step function, step number) pairs by pc) per actor
        self._functions: dict[str, ast.FunctionDef] | None = None
        self.cache: dict[LoopShape, Callable] = {}
        self.sources: dict[LoopShape, str] = {}
        self._branches: frozenset[int] | None = None
        self.field = (0, 0)  # (shift, mask) of the actor whose steps are being written
        # a step's pasted lines by what they depend on: a search asks for loops of several
        # shapes (premises seen, the ample set on), which mostly paste the same steps again
        self.pasted: dict[tuple, list[str]] = {}

    @property
    def functions(self) -> dict[str, ast.FunctionDef]:
        """The step functions' trees, parsed when the first loop is written: every search
        makes a writer, and most end before they reach the level where it starts."""
        if self._functions is None:
            self._functions = {node.name: node for node in ast.parse(self.cm.source).body
                               if isinstance(node, ast.FunctionDef)}
        return self._functions

    def loop(self, shape: LoopShape) -> Callable:
        fn = self.cache.get(shape)
        if fn is None:
            source = self.source(shape)
            ns = dict(self.cm.namespace)  # the step functions, for the steps it calls
            ns["__builtins__"] = dict(ns["__builtins__"], zip=zip, Exception=Exception,
                                      KeyboardInterrupt=KeyboardInterrupt)
            exec(compile(source, f"<timerace {self.cm.program.model.name} level loop>", "exec"), ns)
            fn = self.cache[shape] = ns["level"]
            self.sources[shape] = source
        return fn

    # -- the loop
    def source(self, shape: LoopShape) -> str:
        lines = [
            "def level(frontier, ids, j, count, expanded, max_states, seen, seen_add, nxt_append, parent_append,",
            "          via_append, tick, ample_mask, actors, canonical, route):",
            "    # one level of the breadth-first search, from frontier[j] on (engines/fastloop.py)",
            "    transitions = ample_states = before = 0",
            "    try:",
            "        for s, sid in zip(frontier[j:] if j else frontier, ids[j:] if j else ids):",
            "            before = transitions",
        ]
        if shape.route:
            lines.insert(3, "    me, owners, omask, sent = route.me, route.owners, route.omask, route.sent")
            lines.insert(4, "    sent_add, (rt, rp, rk) = sent.add, route.routed")
        hits = "()"
        if shape.marks:
            names = [f"h{k}" for k in range(len(self.steps()))]
            lines.insert(3, "    " + " = ".join(names) + " = 0" if names else "    pass")
            hits = "(" + ", ".join(names) + ",)" if names else "()"
        body: list[str] = []
        for k in shape.invariants:
            inv = self.cm.invariants[k]
            body.append(f"# invariant {_comment(inv.property.name)}")
            body.append(f"if not ({self.predicate(inv.name)}):")
            body.append("    return 1, j, count, expanded, transitions, ample_states, " + hits)
        for n in shape.premises:
            body.append(f"# premise {_comment(self.cm.premises[n].property.name)}: not yet seen to hold")
            body.append(f"if {self.predicate(self.cm.premises[n].name)}:")
            body.append("    return 1, j, count, expanded, transitions, ample_states, " + hits)
        if shape.finals:  # rare states: the generic loop counts them and checks the conditions
            body.append("# a final state: `final` conditions are the generic loop's")
            body.append(f"if {self.predicate('final_state')}:")
            body.append("    return 1, j, count, expanded, transitions, ample_states, " + hits)
        if shape.ample:
            body.append("am = ample_mask(s, actors)")
        for g, (shift, mask, table) in enumerate(self.actor_tables):
            cases = [(pc, at) for pc, at in enumerate(table) if at]
            if not cases:
                continue
            name = _comment(self.actor_name(g))
            if shape.ample:
                body.append(f"if am & {1 << g:#x}:  # {name}")
                body.extend("    " + line for line in self.actor(shift, mask, cases, shape))
            else:
                body.append(f"# {name}")
                body.extend(self.actor(shift, mask, cases, shape))
        if shape.deadlock:
            body.append("if transitions == before:  # no successor: the generic loop judges the state")
            body.append("    return 1, j, count, expanded, transitions, ample_states, " + hits)
        if shape.ample:  # counted once the state is done: it may still go to the generic loop
            body.append(f"if am != {(1 << len(self.actor_tables)) - 1:#x}:")
            body.append("    ample_states += 1")
        body.append("expanded += 1")
        body.append("j += 1")
        if shape.progress:
            body.append("if not expanded & 1023:")
            body.append("    tick(count, count - expanded)")
        body.append("if count >= max_states and expanded < count:")
        body.append("    return 2, j, count, expanded, transitions, ample_states, " + hits)
        lines.extend("            " + line for line in body)
        lines += [
            "    except KeyboardInterrupt:",
            "        return 3, j, count, expanded, before, ample_states, " + hits,
            "    except Exception:  # the generic loop expands state j again and reports what failed",
            "        return 1, j, count, expanded, before, ample_states, " + hits,
            "    return 0, j, count, expanded, transitions, ample_states, " + hits,
        ]
        return "\n".join(lines) + "\n"

    def steps(self) -> tuple:
        """Every step, numbered as the search numbers them (`actor_tables`)."""
        return actor_tables(self.cm)[0]

    def branches(self) -> frozenset[int]:
        """The numbers of the steps that are conditions (`if`, `while`): their marks say
        which pc they went to."""
        if self._branches is None:
            self._branches = frozenset(k for k, cs in enumerate(self.steps())
                                       if getattr(getattr(cs, "step", None), "kind", None) is StepKind.BRANCH)
        return self._branches

    def actor_name(self, g: int) -> str:
        cm = self.cm
        if g < len(cm.instances):
            return cm.instances[g].name
        return cm.flushes[g - len(cm.instances)].buffer.name + " flush"

    def actor(self, shift: int, mask: int, cases: list, shape: LoopShape) -> list[str]:
        """Branch on the actor's field (a pc, or a store buffer's first address), then
        run the steps there: a binary search over the field's values, whose runs of
        equal steps (a flush at every nonzero address) share one branch."""
        runs: list[list] = []  # [first value, last value, steps]
        for value, at in cases:
            if runs and runs[-1][1] == value - 1 and runs[-1][2] == at:
                runs[-1][1] = value
            else:
                runs.append([value, value, at])
        self.field = (shift, mask)
        return [f"field = s & {mask << shift:#x}"] + self.dispatch(runs, shift, shape)

    def dispatch(self, runs: list, shift: int, shape: LoopShape) -> list[str]:
        if len(runs) > 4:
            half = len(runs) // 2
            return ([f"if field < {runs[half][0] << shift:#x}:"]
                    + ["    " + line for line in self.dispatch(runs[:half], shift, shape)]
                    + ["else:"] + ["    " + line for line in self.dispatch(runs[half:], shift, shape)])
        lines = []
        for n, (first, last, at) in enumerate(runs):
            cond = f"field == {first << shift:#x}" if first == last else \
                f"{first << shift:#x} <= field <= {last << shift:#x}"
            lines.append(("if " if n == 0 else "elif ") + cond + ":")
            for fn, k in at:
                lines.append(f"    # {fn.__name__} (step {k})")
                lines.extend("    " + line for line in self.step(fn.__name__, k, shape))
        return lines

    # -- pasting a step
    def step(self, fname: str, k: int, shape: LoopShape) -> list[str]:
        # everything `store` reads: the lines are a function of these
        key = (fname, k, self.field, shape.marks, shape.canonical, shape.compact, shape.route_all,
               shape.route and k not in shape.local_steps)
        lines = self.pasted.get(key)
        if lines is None:
            lines = self.pasted[key] = self._step(fname, k, shape)
        return lines

    def _step(self, fname: str, k: int, shape: LoopShape) -> list[str]:
        store = self.store(k, shape)
        node = self.functions.get(fname)
        try:
            if node is None:
                raise _Unsupported(fname)
            assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            if assigned & (_LOOP_NAMES | {"s"}) or node.args.args[0].arg != "s" \
                    or any(_MARK.fullmatch(n) for n in assigned):
                raise _Unsupported(fname)
            return _unparse(_paste(node.body, store))
        except _Unsupported:
            return [f"succ = {fname}(s)", "if succ is not None:"] + ["    " + line for line in _unparse(store)]

    def store(self, k: int, shape: LoopShape) -> list[ast.stmt]:
        """What replaces `return succ`: count the transition (and mark the step, for
        coverage: a condition with the pc it went to); store succ if new."""
        lines = ["transitions += 1"]
        if shape.marks:
            shift, mask = self.field
            lines.append(f"h{k} |= 2 << (succ >> {shift} & {mask:#x})" if k in self.branches() else f"h{k} = 1")
        if shape.canonical:
            lines.append("succ = canonical(succ)")
        new = ["nxt_append(succ)", "parent_append(sid)", f"via_append({k})", "count += 1"]
        # as Route.send routes (parallel.py owns the states)
        send = ["if succ not in sent:", "    sent_add(succ)", "    rt.append(succ)", "    rp.append(sid)",
                f"    rk.append({k})"]
        if shape.route_all:
            return ast.parse("\n".join(lines + send)).body
        # a step that can change the owner's bits: route first, so that another worker's
        # state is not looked up here, where it never is (a cache miss)
        route = shape.route and k not in shape.local_steps
        if route:
            lines += [f"if owners[(succ & omask) % {OWNER_MOD}] != me:"] + ["    " + line for line in send]
        if shape.compact:
            lines.append("elif seen_add(succ):" if route else "if seen_add(succ):")
        else:
            lines += ["elif succ not in seen:" if route else "if succ not in seen:", "    seen_add(succ)"]
        lines += ["    " + line for line in new]
        return ast.parse("\n".join(lines)).body

    def predicate(self, fname: str) -> str:
        """An invariant's expression over `s`, or a call when it is more than one."""
        node = self.functions.get(fname)
        if node is not None and len(node.body) == 1 and isinstance(node.body[0], ast.Return) \
                and node.body[0].value is not None and node.args.args[0].arg == "s":
            return _unparse([ast.Expr(node.body[0].value)])[0]
        return f"{fname}(s)"


def _paste(stmts: list[ast.stmt], store: list[ast.stmt]) -> list[ast.stmt]:
    """`stmts` (a step function's body) with every `return x` turned into `succ = x`
    and `store`, and `return None` into nothing; code after an `if` that returns on
    some path is moved into its branches, so no `return` is needed to skip it."""
    out: list[ast.stmt] = []
    for n, st in enumerate(stmts):
        rest = stmts[n + 1:]
        if isinstance(st, ast.Return):
            if st.value is None or (isinstance(st.value, ast.Constant) and st.value.value is None):
                return out
            return out + [ast.Assign(targets=[ast.Name("succ", ast.Store())], value=st.value, lineno=0)] + store
        if isinstance(st, ast.If) and _returns(st):
            then = _paste(st.body + rest, store)
            orelse = _paste(st.orelse + rest, store)
            if orelse == [] or all(isinstance(x, ast.Pass) for x in orelse):
                orelse = []
            return out + [ast.If(test=st.test, body=then or [ast.Pass()], orelse=orelse)]
        if _returns(st):  # a return inside a loop or another compound statement
            raise _Unsupported("return inside " + type(st).__name__)
        out.append(st)
    if sum(1 for _ in ast.walk(ast.Module(body=out, type_ignores=[]))) > 5000:
        raise _Unsupported("too large once pasted")
    return out


def _returns(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


class _Readable(ast.NodeTransformer):
    """Masks and pc values in hex, as the compiled module writes them; no `pass`
    beside other statements."""

    def visit_Constant(self, node: ast.Constant):
        if type(node.value) is int and node.value >= 256:
            return ast.Name(hex(node.value), ast.Load())  # printed as written, never run from the tree
        return node

    def generic_visit(self, node: ast.AST):
        super().generic_visit(node)
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list) and len(block) > 1:
                kept = [st for st in block if not isinstance(st, ast.Pass)]
                setattr(node, name, kept or block[:1])
        return node


def _unparse(stmts: list[ast.stmt]) -> list[str]:
    module = _Readable().visit(ast.Module(body=stmts or [ast.Pass()], type_ignores=[]))
    return ast.unparse(module).splitlines()


def level_loop_source(cm: CompiledModel, deadlock: bool = True, compact: bool = False) -> str:
    """The level loop a search of `cm` starts with, without reductions (`check
    --dump-python` prints it after the step functions)."""
    shape = LoopShape(tuple(range(len(cm.invariants))), deadlock, compact, canonical=False, ample=False,
                      progress=False, finals=bool(cm.finals))
    return ("# The search's level loop for this variant (engines/fastloop.py), as it starts without reductions;\n"
            "# with partial-order reduction each actor's block runs only when its bit of the ample set is set.\n"
            + LevelLoopWriter(cm, actor_tables(cm)[1]).source(shape))


def actor_tables(cm: CompiledModel) -> tuple[tuple, list]:
    """Every step once, numbered (a flush is an actor of its own, its gid after the
    instances'), and per actor (shift, mask, (packed step, number) pairs by field
    value): the tables the search walks in each state."""
    pk = cm.packing
    assert pk is not None  # compile_program packs every model
    steps = tuple({id(cs): cs for inst in cm.instances for at in inst.steps_at for cs in at}.values()) \
        + tuple(cm.flushes)
    number = {id(cs): k for k, cs in enumerate(steps)}
    actors = [(pk.shift[slot], pk.mask(slot), tuple(tuple((cs.packed, number[id(cs)]) for cs in at) for at in table))
              for slot, table in [(inst.pc_slot, inst.steps_at) for inst in cm.instances]
              + [(f.slot, f.steps_at) for f in cm.flushes]]
    return steps, actors
