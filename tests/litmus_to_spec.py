"""A kernel litmus test (checker/litmus/reader.py's syntax tree) as a timerace model, so that
`memory lkmm` (checker/memory/lkmm.py) runs it through the normal pipeline, and the
outcomes it reaches, read off its final states.

Only what the spec language has a primitive for translates; anything else raises
`Untranslatable` naming it (pointers held in registers, RCU, smp_mb__after_unlock_lock).
"""

from __future__ import annotations

from checker.litmus import axiomatic as ax
from checker.litmus import reader as L
from checker.litmus.axiomatic import order_of
from checker.semantics.primitives import BUILTINS, ORDER_SUFFIX, Arg, Cls
from checker.engines.explicit import Limits, explore
from checker.backends.python import compile_program
from checker import ir
from checker.front.parse import parse
from checker.resolve import resolve
from checker.ir import SlotKind
from checker.results.trace import StateDecoder

RANGE = "-16..16"


class Untranslatable(Exception):
    pass


# the spec's form of each ordering: the suffix of the table's ordered forms
_SUFFIX = {order: sfx for sfx, order in ORDER_SUFFIX.items()}


def _ordered(base: str, name: str) -> str:
    """The spec's form of `base` with the ordering the table gives the litmus `name`."""
    return base + _SUFFIX[order_of(name)]


def _like(cls: Cls, name: str) -> str:
    """The spec's load or store with the ordering of the litmus `name` (itself if it has a row)."""
    if name in BUILTINS:
        return name
    order = order_of(name)
    return next(p.name for p in BUILTINS.values() if p.cls is cls and p.args[:1] == (Arg.LV,) and p.order is order)


def _rmw_call(name: str, args: list[str]) -> str | None:
    """The spec expression for a litmus read-modify-write, or None if it is not one."""
    if name not in ax.RMWS:
        return None
    op, returns, takes_value, test = ax.RMWS[name]
    if op in ("xchg", "cmpxchg"):
        return f"{_ordered(op, name)}({', '.join(args)})"
    loc = args[1] if takes_value else args[0]
    if returns is None:  # atomic_add(i, v), atomic_inc(v): the spec has every one
        return f"{name}({', '.join(args)})"
    if test == "==0" and name in BUILTINS:  # atomic_dec_and_test, atomic_inc_and_test
        return f"{name}({args[0]})"
    delta = {"add": lambda: args[0], "sub": lambda: f"-({args[0]})", "inc": lambda: "1", "dec": lambda: "-1"}[op]()
    call = f"{_ordered('atomic_add_return' if returns == 'new' else 'atomic_fetch_add', name)}({delta}, {loc})"
    if test == "==0":
        return f"({call} == 0)"
    if test == "<0":
        return f"({call} < 0)"
    return call


LOADS = {name: _like(Cls.LOAD, name) for name in ax.LOADS if not name.startswith("rcu_")}
STORES = {name: _like(Cls.STORE, name) for name in ax.STORES if not name.startswith("rcu_")}
FENCES = {name for name in ax.FENCES if name in BUILTINS}
LOCKS = {"spin_lock", "spin_unlock", "spin_trylock"}
BOOLS = {"spin_trylock", "atomic_sub_and_test", "atomic_add_negative"}


class _Writer:
    def __init__(self, test: L.Litmus):
        self.test = test
        self.locks: set[str] = set()
        self.locations: set[str] = set()

    def location(self, e, thread: L.Thread) -> str:
        if isinstance(e, L.Deref):
            e = e.pointer
        if isinstance(e, L.Name) and e.name in thread.params:
            self.locations.add(e.name)
            return e.name
        raise Untranslatable(f"a location that is not a parameter: {e}")

    def expr(self, e, thread: L.Thread) -> str:
        if isinstance(e, L.Num):
            return str(e.value)
        if isinstance(e, L.Name):
            if e.name in thread.registers:
                return e.name
            raise Untranslatable(f"a pointer value: {e.name}")
        if isinstance(e, L.Unary):
            op = {"!": "!", "-": "-", "~": "~"}.get(e.op)
            if op is None:
                raise Untranslatable(f"operator {e.op}")
            return f"({op}{self.expr(e.operand, thread)})"
        if isinstance(e, L.Binary):
            return f"({self.expr(e.left, thread)} {e.op} {self.expr(e.right, thread)})"
        if isinstance(e, L.Call):
            return self.call(e, thread)
        raise Untranslatable(type(e).__name__)

    def cond(self, e, thread: L.Thread) -> str:
        """A C condition (an int) as a spec bool."""
        if isinstance(e, L.Binary) and e.op in ("==", "!=", "<", "<=", ">", ">="):
            return self.expr(e, thread)
        if isinstance(e, L.Binary) and e.op in ("&&", "||"):
            return f"({self.cond(e.left, thread)} {e.op} {self.cond(e.right, thread)})"
        if isinstance(e, L.Unary) and e.op == "!":
            return f"!({self.cond(e.operand, thread)})"
        if isinstance(e, L.Call) and (e.func in BOOLS or e.func.endswith("_and_test")):
            return self.expr(e, thread)
        return f"({self.expr(e, thread)} != 0)"

    def call(self, c: L.Call, thread: L.Thread) -> str:
        f = c.func
        if f in LOADS:
            loc = self.location(c.args[0], thread)
            if loc in self.locks:  # a lock is a bool in the spec language, never an int
                raise Untranslatable(f"a spinlock read as a value: {loc}")
            return f"{LOADS[f]}({loc})"
        if f in STORES:
            return f"{STORES[f]}({self.location(c.args[0], thread)}, {self.expr(c.args[1], thread)})"
        if f in FENCES:
            return f"{f}()"
        if f in LOCKS:
            loc = self.location(c.args[0], thread)
            self.locks.add(loc)
            return f"{f}({loc})"
        args = []
        for a in c.args:
            if isinstance(a, (L.Name, L.Deref)) and (isinstance(a, L.Deref) or a.name in thread.params):
                args.append(self.location(a, thread))
            else:
                args.append(self.expr(a, thread))
        out = _rmw_call(f, args)
        if out is None:
            raise Untranslatable(f)
        return out

    def stmts(self, body, thread: L.Thread, depth: int) -> list[str]:
        pad = "  " * depth
        out = []
        for s in body:
            if isinstance(s, L.Assign):
                if s.reg not in thread.registers:
                    raise Untranslatable(f"assignment to {s.reg}")
                value = self.expr(s.value, thread)
                if isinstance(s.value, L.Call) and (s.value.func in BOOLS or s.value.func.endswith("_and_test")):
                    out.append(f"{pad}if ({value}) {{ {s.reg} = 1; }} else {{ {s.reg} = 0; }}")
                else:
                    out.append(f"{pad}{s.reg} = {value};")
            elif isinstance(s, L.ExprStmt):
                out.append(f"{pad}{self.expr(s.expr, thread)};")
            elif isinstance(s, L.If):
                out.append(f"{pad}if ({self.cond(s.cond, thread)}) {{")
                out += self.stmts(s.then, thread, depth + 1) or [f"{pad}  skip;"]
                if s.orelse:
                    out.append(f"{pad}}} else {{")
                    out += self.stmts(s.orelse, thread, depth + 1)
                out.append(f"{pad}}}")
            else:
                raise Untranslatable(type(s).__name__)
        return out

    def spec(self, memory: str, bound: int) -> str:
        procs = []
        for t in self.test.threads:
            self.locations.update(t.params)
            body = self.stmts(t.body, t, 1)
            regs = "".join(f"  var {r}: {RANGE} = 0;\n" for r in t.registers)
            procs.append(f"process p{t.index} {{\n{regs}" + "\n".join(body) + "\n}\n")
        init = dict(self.test.init)
        for name, v in init.items():
            if not isinstance(v, int):
                raise Untranslatable(f"a pointer in the initial state: {name}")
        lines = ["model litmus;", f"memory {memory}({bound});" if memory != "sc" else "memory sc;"]
        for loc in sorted(self.locations | set(init)):
            if loc in self.locks:
                lines.append(f"var {loc}: bool = {'true' if init.get(loc) else 'false'};")
            else:
                lines.append(f"var {loc}: {RANGE} = {init.get(loc, 0)};")
        return "\n".join(lines) + "\n" + "".join(procs) + "final ended: true;\n"


def to_spec(test: L.Litmus, memory: str = "lkmm", bound: int = 3) -> str:
    w = _Writer(test)
    return w.spec(memory, bound)


def outcomes(test: L.Litmus, memory: str = "lkmm", bound: int = 3, labels=None):
    """(set of outcomes as tuples of (label, value), states, whether a store waited for a
    full history) of the model of `test` under `memory`. `labels` are lkmm.py's."""
    text = to_spec(test, memory, bound)
    model = resolve(parse(text, "litmus.spec"), "base")
    cm = compile_program(ir.build(model))
    ex = explore(cm, Limits(check_deadlock=False), graph=True)
    decoder = StateDecoder(cm.layout, {inst.name: inst.process.pc_names for inst in cm.instances})
    found = set()
    for s in ex.graph.states:
        if not cm.final_state(s):
            continue
        d = decoder.decode(s)
        regs = {(t.index, r): d.get(f"p{t.index}.{r}") for t in test.threads for r in t.registers}
        final = {sl.name: int(s[k]) for k, sl in enumerate(cm.layout.slots)
                 if sl.kind is SlotKind.VAR and sl.process is None}
        if test.filter is not None and not holds(test.filter, regs, final):
            continue
        row = []
        for label in labels:
            if ":" in label:
                t, r = label.split(":")
                row.append((label, regs[(int(t), r)]))
            else:
                row.append((label, final[label.strip("[]")]))
        found.add(tuple(row))
    return found, ex.stats.states, ex.stats.buffer_full_states, text


def holds(p, regs: dict, final: dict) -> bool:
    """A condition's proposition on one final state (registers by (thread, name))."""
    if isinstance(p, L.Atom):
        v = regs[(p.thread, p.name)] if p.thread is not None else final[p.name]
        return (v == p.value) != p.negated
    args = [holds(a, regs, final) for a in p.args] if p.op not in ("true", "false") else []
    return {"and": lambda: all(args), "or": lambda: any(args), "not": lambda: not args[0],
            "true": lambda: True, "false": lambda: False}[p.op]()
