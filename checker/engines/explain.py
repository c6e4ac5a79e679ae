"""Counterexamples that explain themselves: what each branch decided and on which
values, what an atomic returned, whom a wake-up woke, which call of an inline a step
belongs to, and the values of the violated property's operands at the end.

This runs once, where run.py builds a counterexample, never in an exporter: each step
of a trace is matched to the compiled step that leads from its before-state to its
after-state, and the step's guard and operands are evaluated on the before-state with
expressions compiled by the same compiler the engine's steps come from. The engines
are not touched, and no model is ever searched again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..semantics import contexts
from .. import ir, model as m
from ..backends.python import CompiledModel, ModelError, Compiler, Emitter
from ..semantics.primitives import BUILTINS, Returns
from ..base.errors import Span, SpecError
from ..semantics.lower import Add, BitOp, Cas, Wake, Xchg, lower
from ..ir import SlotKind, TASK_STATES
from ..results.trace import MEMORY, Action, Counterexample, Members, StateDecoder, TraceState, show_value

_COMPARE = ("==", "!=", "<", "<=", ">", ">=")


def comparisons(x: m.TExpr, atoms: bool = False):
    """The comparisons reached from the root through &&, ||, -> and !: the parts a
    reader wants evaluated. `atoms`: also the other conditions met on the way (a
    `test_bit(...)`, a bool, `p@label`) as themselves."""
    if isinstance(x, m.Bin) and x.op in ("&&", "||", "->"):
        yield from comparisons(x.left, atoms)
        yield from comparisons(x.right, atoms)
    elif isinstance(x, m.Un) and x.op == "!":
        yield from comparisons(x.operand, atoms)
    elif isinstance(x, m.Bin) and x.op in _COMPARE:
        yield x
    elif atoms and not isinstance(x, m.Const):
        yield x


def _pure(x: m.TExpr) -> bool:
    """No side effect: safe to evaluate on its own."""
    return not any(BUILTINS[b.name].effect for b in ir.builtins_in(x))


class Explainer:
    """Evaluates expressions of one compiled model on decoded trace states."""

    def __init__(self, cm: CompiledModel):
        self.cm = cm
        self.model = cm.program.model
        self.layout = cm.layout
        self.comp = Compiler(cm.program)
        self.ns = dict(cm.namespace)
        self.fns: dict = {}
        self.by_name = {inst.name: inst for inst in cm.instances}
        self.inlined: dict | None = None  # (process, step uid) -> (inline, call span), when first needed
        self.decoder = StateDecoder(self.layout, {i.name: i.process.pc_names for i in cm.instances})

    # -- states back to the engine's tuples
    def encode(self, st: TraceState) -> tuple | None:
        """The state tuple that decodes to `st` (labels are unique per process, so the
        round trip proves it), or None."""
        lay = self.layout
        raw = [0] * len(lay.slots)
        try:
            values = dict(st.values)
            for k, sl in enumerate(lay.slots):
                if sl.kind is SlotKind.PC:
                    assert sl.process is not None  # a pc slot names its instance
                    raw[k] = self.by_name[sl.process].process.pc_names.index(dict(st.pcs)[sl.process])
            dec = self.decoder
            for name, slots in dec.groups:
                # a decoded value (trace.Value) whose shape follows its slots' kind: a
                # buffer's (location, value) pairs, an array's elements, one value
                v: Any = values[name]
                if lay.slots[slots[0]].kind is SlotKind.BUFFER:
                    for j, (loc, x) in enumerate(v):
                        at = next(i for i, s in enumerate(lay.slots) if s.name == loc)
                        raw[slots[2 * j]] = at + 1
                        raw[slots[2 * j + 1]] = self._raw(at, x)
                elif lay.slots[slots[0]].element is None:
                    raw[slots[0]] = self._raw(slots[0], v)
                else:
                    for i, x in zip(slots, v):
                        raw[i] = self._raw(i, x)
            out = tuple(raw)
            return out if dec.decode(out) == st else None
        except (KeyError, ValueError, StopIteration, TypeError, IndexError):
            return None

    def _raw(self, slot: int, v) -> int:
        sl = self.layout.slots[slot]
        t = sl.type
        if sl.kind is SlotKind.TASK:
            return TASK_STATES.index(v)
        if isinstance(t, m.BoolT):
            return int(v)
        if isinstance(t, m.EnumT):
            return t.members.index(v) if isinstance(v, str) else v
        if isinstance(t, m.BitsetT):
            return sum(1 << (t.elem.members.index(x) if t.elem else x) for x in v)
        if isinstance(t, m.WaitQueueT):
            return sum(1 << self.layout.instance_names.index(x) for x in v)
        return int(v)

    # -- expressions, compiled as the engine's steps are
    def values(self, exprs: tuple, raw: tuple, inst=None, bound: dict | None = None) -> tuple | None:
        """The values of `exprs` in state `raw`, as the process instance `inst` sees them
        (its locals, its store buffer); None where the model errs evaluating them."""
        key = (inst.name if inst else None, exprs, tuple(bound or {}))
        fn = self.fns.get(key)
        if fn is None:
            c = self.comp
            c.proc, c.inst = (inst.process, inst.instance) if inst else (None, None)
            c.buffer = self.layout.buffer_of(inst.gid) if inst and c.tso else None
            c.direct = False
            names = {uid: f"_b{k}" for k, uid in enumerate(bound or {})}
            c.bound = names
            e = Emitter()
            try:
                codes = [c.expr(c.simplify(x), e, "s") for x in exprs]
            except (TypeError, KeyError, AttributeError):
                return None
            e.flush()
            src = (f"def _explain(s{''.join(', ' + n for n in names.values())}):\n    v = s\n"
                   + "\n".join(e.lines[0:]) + ("\n" if e.lines else "")
                   + f"    return ({', '.join(codes)}{',' if codes else ''})\n")
            exec(compile(src, "<timerace explain>", "exec"), self.ns)
            fn = self.fns[key] = self.ns["_explain"]
        try:
            packed = self.cm.pack(raw) if raw else 0  # a lemma reads no state
            return fn(packed, *(bound or {}).values())
        except (ModelError, ArithmeticError, IndexError, ValueError, TypeError):
            return None

    def text(self, x: m.TExpr) -> str:
        while isinstance(x, m.Conv) and isinstance(x.operand, (m.Bound, m.Conv)):
            x = x.operand
        if isinstance(x, m.Bound):  # its span is the binder's (`g: 0..100`)
            return x.name
        return ir.source_text(self.model.source, x.span, 80) if x.span and x.span.line else ""

    def shown(self, t: m.Type, v) -> str:
        """A raw value of type `t` as traces show values (enum members and sets by name)."""
        if isinstance(t, m.BoolT):
            return show_value(bool(v))
        if isinstance(t, m.EnumT) and isinstance(v, int) and 0 <= v < len(t.members):
            return t.members[v]
        if isinstance(t, m.WaitQueueT) and isinstance(v, int):
            names = self.layout.instance_names
            return show_value(Members(names[g] for g in range(len(names)) if v >> g & 1))
        if isinstance(t, m.BitsetT) and isinstance(v, int):
            bits = [b for b in range(t.size) if v >> b & 1]
            return show_value(Members(t.elem.members[b] for b in bits) if t.elem else Members(bits))
        return show_value(v)

    def sides(self, cond: m.TExpr, raw: tuple, inst=None, bound: dict | None = None,
              atoms: bool = True, within: Span | None = None) -> list[tuple[str, str]]:
        """(text, value) of each side of each comparison in `cond` that is not a literal,
        and of each other condition in it (`atoms`). A part that comes from the body of a
        `fn` (outside `within`, the statement or property) is written there with the
        fn's parameters: the variables it reads are shown instead."""
        out: list[tuple[str, str]] = []
        seen = set()
        parts = []
        for c in comparisons(cond, atoms):
            compared = isinstance(c, m.Bin) and c.op in _COMPARE
            if not compared and not _pure(c):  # a primitive that stores: its note says what it returned
                continue
            for side in (c.left, c.right) if compared else _reads(c):
                bare = side.operand if isinstance(side, m.Conv) else side
                if within is not None and not isinstance(bare, m.Bound) and not _inside_span(side.span, within):
                    parts += [(r, _render(r)) for r in _reads(side)]
                else:
                    parts.append((side, None))
        for side, written in parts:
            if isinstance(side, m.Const):
                continue
            text = written or self.text(side)
            if not text or text in seen or not _pure(side):
                continue
            vals = self.values((side,), raw, inst, bound)
            if vals is None:
                continue
            seen.add(text)
            out.append((text, self.shown(side.type, vals[0])))
        return out

    # -- one step
    def step_of(self, a: Action, before: tuple, after: tuple | None):
        inst = self.by_name.get(a.process)
        if inst is None:
            return None, None
        pcs = inst.process.pc_names
        cands = [cs for k, label in enumerate(pcs) if label == a.pc_from for cs in inst.steps_at[k]
                 if cs.step.span == a.span and cs.step.text == a.text]
        if after is not None:
            for cs in cands:
                try:
                    if cs.fn(before) is not None and tuple(cs.fn(before)) == after:
                        return inst, cs.step
                except Exception:
                    continue
        return (inst, cands[0].step) if cands else (inst, None)

    def on_cpu(self, a: Action, b: TraceState, c: TraceState | None) -> Action:
        """The CPU the step ran on, in a model with execution contexts."""
        model = self.cm.program.model
        if model.cpus is None:
            return a
        cpu = contexts.step_cpu(model, a.process, a.text, dict(b.values), dict(c.values) if c else None)
        return replace(a, cpu=cpu) if cpu is not None else a

    def action(self, a: Action, b: TraceState, c: TraceState | None) -> Action:
        if a.process == MEMORY:
            return a
        before = self.encode(b)
        after = self.encode(c) if c is not None else None
        if before is None or (c is not None and after is None):
            return a
        inst, st = self.step_of(a, before, after)
        if st is None:
            return a
        notes: list[str] = []
        guard = st.guard
        if st.kind is ir.StepKind.BRANCH and st.body and isinstance(st.body[0], ir.OIf):
            cond = st.body[0].cond
            held = self.values((cond,), before, inst)
            if held is not None:
                notes.append(("taken" if held[0] else "not taken")
                             + _with(self.sides(cond, before, inst, within=st.span)))
        elif guard is not None and st.kind is ir.StepKind.AWAIT:
            notes.append("waited until true" + _with(self.sides(guard, before, inst, within=st.span)))
        prims = self.primitives(st, inst, before, b, c)
        if notes and notes[-1] in ("taken", "not taken") and prims:  # it tested what the primitive returned
            notes[-1] += ": " + prims.pop(0)
        notes += prims
        call = ""
        if a.inline:
            call = self.call_site(inst, st, before)
        if not notes and not call:
            return a
        return replace(a, detail="; ".join(n for n in notes if n), call=call)

    def primitives(self, st: ir.Step, inst, before: tuple, b: TraceState, c: TraceState | None) -> list[str]:
        """What each kernel primitive of the step returned or did."""
        notes = []
        first = True  # operands are read from the before-state: exact until the step's first store
        for op in st.body:
            for call in _calls(op):
                n, args = call.name, call.args
                k = lower(call)
                if isinstance(k, Cas) and not k.success and first:
                    vals = self.values(args, before, inst)
                    if vals is not None:
                        t = args[0].type
                        ok = vals[0] == vals[1]
                        notes.append(f"cmpxchg({self.text(args[0])}) returned {self.shown(t, vals[0])}"
                                     + (f", as expected: stored {self.shown(t, vals[2])}" if ok
                                        else f", not {self.shown(t, vals[1])}: failed, stored nothing"))
                elif isinstance(k, Xchg) and first:
                    vals = self.values(args[:1], before, inst)
                    if vals is not None:
                        notes.append(f"xchg({self.text(args[0])}) returned {self.shown(args[0].type, vals[0])}")
                elif isinstance(k, BitOp) and k.returns_old and first:
                    vals = self.values(args, before, inst)
                    if vals is not None:
                        bit = vals[1] >> vals[0] & 1 if vals[0] >= 0 else 0
                        notes.append(f"{self.text(call) or n} returned {bit} (the bit was "
                                     f"{'set' if bit else 'clear'})")
                elif isinstance(k, Add) and k.step is not None and k.returns in (Returns.NEW, Returns.NEW_IS_ZERO) \
                        and first:
                    vals = self.values(args[:1], before, inst)
                    if vals is not None:
                        new = vals[0] + k.step
                        notes.append(f"{n} returned {show_value(new == 0) if k.returns is Returns.NEW_IS_ZERO else new}")
                elif isinstance(k, Wake) and c is not None:
                    woken = [k[:-len(".state")] for (k, x), (_, y) in zip(b.values, c.values)
                             if k.endswith(".state") and x == "INTERRUPTIBLE" and y == "RUNNING"]
                    q = self.text(args[0])
                    notes.append(f"{n}({q}) woke " + ", ".join(woken) if woken
                                 else f"{n}({q}) woke nobody (no waiting task)")
                first = first and _pure(call)  # a primitive that stores changes what later ones read
            first = first and not _stores(op)
        return notes

    def call_site(self, inst, st: ir.Step, before: tuple) -> str:
        """`load(cpu = 1) at line 7`: the call of the inline this step belongs to, with
        the values of its arguments as the step reads them."""
        if self.inlined is None:
            try:
                self.inlined = _inline_calls(self.model)
            except SpecError:
                self.inlined = {}
        site = self.inlined.get((inst.process.name, st.uid))
        if site is None or site[0] != st.inline:
            return ""
        name, span = site
        call = ir.source_text(self.model.source, span, 120).rstrip(";").strip()
        args = _arguments(call, name)
        shown = []
        for text in args:
            x = _find_text(self, st, text)
            vals = self.values((x,), before, inst) if x is not None and _pure(x) else None
            shown.append(f"{text} = {self.shown(x.type, vals[0])}" if vals is not None and not _literal(text)
                         else text)
        return f"{name}({', '.join(shown)}) at line {span.line}"

    def counterexample(self, cx: Counterexample | None) -> Counterexample | None:
        if cx is None:
            return None
        if cx.kind == "lemma":
            return self.lemma(cx)
        t = cx.trace
        actions = tuple(self.on_cpu(self.action(a, t.states[i], t.states[i + 1]), t.states[i], t.states[i + 1])
                        for i, a in enumerate(t.actions))
        failure = self.on_cpu(self.action(t.failure, t.states[-1], None), t.states[-1], None) \
            if t.failure is not None else None
        cx = replace(cx, trace=replace(t, actions=actions, failure=failure))
        prop = next((p for p in self.model.properties if p.name == cx.property), None)
        if prop is not None and prop.kind in (m.PropertyKind.INVARIANT, m.PropertyKind.FINAL):
            raw = self.encode(t.states[-1])
            if raw is not None and prop.cond is not None:  # (both kinds have one)
                sides = self.sides(prop.cond, raw, within=_union(prop.span, prop.cond.span))
                cx = replace(cx, violation=tuple(sides) + tuple((f"{p}@", label) for p, label in t.states[-1].pcs))
        return cx

    def lemma(self, cx: Counterexample) -> Counterexample:
        lm = next((x for x in self.model.lemmas if x.name == cx.property), None)
        if lm is None:
            return cx
        values = dict(cx.trace.states[0].values)
        try:
            params = {b.uid: values[b.name] for b in lm.params}
        except KeyError:
            return cx
        bound = {uid: v for uid, v in params.items() if isinstance(v, int)}
        if len(bound) < len(params):  # a parameter is a number (a bool counts as one)
            return cx
        sides = self.sides(lm.body, (), None, bound, within=_union(lm.span, lm.body.span))
        names = {b.name for b in lm.params}  # a side that is a parameter is listed already
        wrapped = tuple((k, str(v)) for k, v in values.items() if k.endswith(" (wrapped)"))  # engines/smt/lemmas.py
        return replace(cx, violation=tuple((b.name, str(values[b.name])) for b in lm.params)
                       + tuple(s for s in sides if s[0] not in names) + wrapped)


def _union(a: Span, b: Span | None) -> Span:
    if b is None or b.file != a.file:
        return a
    start = min((a.line, a.col), (b.line, b.col))
    end = max((a.end_line, a.end_col), (b.end_line, b.end_col))
    return Span(a.file, start[0], start[1], end[0], end[1])


def _inside_span(a: Span | None, b: Span) -> bool:
    if a is None or a.file != b.file:
        return False
    return (a.line, a.col) >= (b.line, b.col) and (a.end_line, a.end_col) <= (b.end_line, b.end_col)


def _reads(x: m.TExpr) -> list[m.TExpr]:
    """The state a condition reads: its variables, elements and locations (`p@label`),
    as the values a reader needs to see why it held or not."""
    if isinstance(x, (m.Var, m.Elem, m.At, m.LocalOf)):
        return [x]
    out = []
    for f in getattr(x, "__dataclass_fields__", {}):
        sub = getattr(x, f)
        if isinstance(sub, m.TExpr):
            out += _reads(sub)
        elif isinstance(sub, tuple):
            out += [r for z in sub if isinstance(z, m.TExpr) for r in _reads(z)]
    return out


def _with(sides: list[tuple[str, str]]) -> str:
    return (": " + ", ".join(f"{k} = {v}" for k, v in sides)) if sides else ""


def _calls(op) -> list[m.Builtin]:
    """The primitives an op calls itself (not those of the branches of an `if`, which
    may not run)."""
    if isinstance(op, ir.OInline):  # an inline's body runs as written
        return [b for o in op.body for b in _calls(o)]
    return [b for x in ir.op_exprs(op) for b in ir.builtins_in(x)]


def _stores(op) -> bool:
    return any(isinstance(o, (ir.OAssign, ir.OEval)) for o in ir.walk_ops((op,)))


_TAG = "\x00"  # separates an inline's name from its call's number in the tagged lowering


def _inline_calls(model: m.Model) -> dict:
    """(process, step uid) -> (inline name, call span) for every step expanded from an
    inline. The lowered steps keep only the inline's name, so the model is lowered once
    more with each call's name tagged with its number: the same statements in the same
    order give the same steps with the same uids, and each step's tag names its call."""
    calls: list[Span] = []

    def tag(s):
        if isinstance(s, tuple):
            return tuple(tag(x) for x in s)
        if not isinstance(s, m.RStmt):
            return s
        changes = {}
        for f in s.__dataclass_fields__:
            sub = getattr(s, f)
            if isinstance(sub, (m.RStmt, tuple)) and not isinstance(sub, m.TExpr):
                new = tag(sub)
                if new is not sub:
                    changes[f] = new
        if isinstance(s, m.SInlined) and s.name:
            calls.append(s.span)
            changes["name"] = f"{s.name}{_TAG}{len(calls) - 1}"
        return replace(s, **changes) if changes else s

    tagged = replace(model, processes=tuple(replace(p, body=tag(p.body)) for p in model.processes))
    out = {}
    for p in ir.build(tagged).processes:
        for st in p.steps:
            if st.inline and _TAG in st.inline:
                name, k = st.inline.split(_TAG)
                out[(p.name, st.uid)] = (name, calls[int(k)])
    return out


def _arguments(call: str, name: str) -> list[str]:
    """The argument texts of `name(a, f(b, c))`: split at top-level commas."""
    start = call.find("(")
    if start < 0 or not call.endswith(")"):
        return []
    inner, depth, cur, out = call[start + 1:-1], 0, "", []
    for ch in inner:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _render(x) -> str | None:
    """A substituted expression as a call site would write it (spaces left out): an
    argument keeps the parameter's place in the source, not the call's."""
    if isinstance(x, m.Var):
        return x.sym.name
    if isinstance(x, m.Const):
        return str(x.value)
    if isinstance(x, m.Elem):
        return f"{x.sym.name}[{_render(x.index)}]"
    if isinstance(x, m.Bin):
        return f"{_render(x.left)}{x.op}{_render(x.right)}"
    if isinstance(x, m.Un):
        return f"{x.op}{_render(x.operand)}"
    return None


def _literal(text: str) -> bool:
    return text.lstrip("-").isdigit() or text in ("true", "false")


def _find_text(ex: Explainer, st: ir.Step, text: str):
    """The argument as substituted into the step: the sub-expression the call site wrote."""
    todo = [x for op in st.body for o in ir.walk_ops((op,)) for x in ir.op_exprs(o)]
    if st.guard is not None:
        todo.append(st.guard)
    while todo:
        x = todo.pop(0)
        if not isinstance(x, m.TExpr):
            continue
        if ex.text(x) == text or _render(x) == text.replace(" ", ""):
            return x
        for f in getattr(x, "__dataclass_fields__", {}):
            sub = getattr(x, f)
            if isinstance(sub, m.TExpr):
                todo.append(sub)
            elif isinstance(sub, tuple):
                todo += [z for z in sub if isinstance(z, m.TExpr)]
    return None


def explain(cm: CompiledModel, outcomes, model_error: Counterexample | None):
    """The outcomes and model error of one variant, each counterexample annotated. An
    explanation is a courtesy: should one fail, the counterexample stays as found."""
    ex = Explainer(cm)

    def annotated(cx):
        try:
            return ex.counterexample(cx)
        except Exception:
            return cx

    out = tuple(replace(o, counterexample=annotated(o.counterexample)) if o.counterexample is not None else o
                for o in outcomes)
    return out, annotated(model_error)


__all__ = ["Explainer", "explain", "comparisons"]
