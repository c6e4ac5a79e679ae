"""The exact axiomatic Linux-kernel memory model for loop-free litmus programs.

herd7's method, in plain Python: run each thread once per guess of the values its
reads return (every value some write could store), keep the combinations in which every
read can read from a write of that value, enumerate reads-from and coherence order, and
keep the candidate executions that satisfy the axioms of linux-kernel.cat and lock.cat
(the LKMM files in ../shared/tools/herd7/lkmm/). Each relation below cites its .cat line.
The same events and relations give sequential consistency and x86-TSO (with the
kernel's x86 mapping), so one program can be checked under all three.

Plain C accesses follow the cat's Marked/Plain split (the `plain-coherence` axiom, and
the `data-race` and `mixed-accesses` flags, printed as herd7 prints them); RCU follows
its rcu-order / rcu-fence / rb (the `rcu` axiom). Left out (refused by the reader):
SRCU (herd7 here cannot check it, see litmus.SRCU_CALLS), loops.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..base.errors import SpecError, did_you_mean
from ..model import MEMORY_MODELS, fold_binop
from ..semantics.primitives import BUILTINS, ORDER_SUFFIX, FenceKind, Order, Primitive
from .reader import (AddrOf, Assign, Atom, Binary, Call, Deref, ExprStmt, If, Litmus, LoopCut, Name, Num, PropOp, Store,
                     UNROLL, Unary)
from ..base.record import record

MODELS = tuple(reversed(MEMORY_MODELS))  # model.MemoryModel; the LKMM first, the litmus default
LOOP_NOTE = (f"Loop: a while loop would run more than {UNROLL} times (herd7's unrolling): the executions that "
             "loop longer are left out, so outcomes may be missing")
DEFAULT_LIMIT = 200_000  # candidate executions; beyond it the verdict is "cannot decide" (exit 3)


# the flags of linux-kernel.bell, lock.cat and linux-kernel.cat this evaluator raises, in
# the order herd7 prints them (sorted)
FLAGS = ("data-race", "lock-final", "mixed-accesses", "mixed-lock-accesses", "unbalanced-rcu-lock",
         "unbalanced-rcu-unlock", "unmatched-unlock")


class TooManyCandidates(Exception):
    """The candidate executions exceed the limit: no verdict (exit 3)."""


@record
class Loc:
    """A pointer value: the address of a location."""

    name: str

    def __str__(self):
        return self.name


@dataclass(slots=True)
class Event:
    eid: int
    tid: int  # -1: an initial write
    kind: str  # 'R', 'W', 'F'
    loc: str | None = None
    val: object = None
    tags: frozenset = frozenset()  # once plain acquire release noreturn IW LKR LKW UL LF RL RU RMW
    fence: str | None = None


@dataclass(slots=True)
class ThreadRun:
    """One path through a thread with guessed read values."""

    events: list = field(default_factory=list)
    regs: dict = field(default_factory=dict)
    addr: set = field(default_factory=set)
    data: set = field(default_factory=set)
    ctrl: set = field(default_factory=set)
    rmw: set = field(default_factory=set)


# ---------------------------------------------------------------- the primitives
# The orderings are the primitives table's (semantics/primitives.py, the one place they
# are written), read when an event is made; this file keeps only the names litmus tests
# use, their shapes, and how the cat tags a documented ordering. A litmus name the spec
# language has no row for takes its ordering the way the table's own forms do (its
# suffix: primitives.ORDER_SUFFIX); RCU's, which the table lacks, are written here.

# the cat's tags for an ordering (linux-kernel.def): of the read, of the write, a full
# fence on each side
_TAGS = {Order.FULL: ("once", "once", True), Order.RELAXED: ("once", "once", False),
         Order.ACQUIRE: ("acquire", "once", False), Order.RELEASE: ("once", "release", False)}
_FENCE_TAGS = {FenceKind.FULL: "mb", FenceKind.READ: "rmb", FenceKind.WRITE: "wmb",
               FenceKind.BEFORE_ATOMIC: "before-atomic", FenceKind.AFTER_ATOMIC: "after-atomic",
               FenceKind.AFTER_SPINLOCK: "after-spinlock", FenceKind.COMPILER: "barrier"}
_SUFFIXES = ("", "_relaxed", "_acquire", "_release")
# the fences the table does not have (RCU, and the lock-lock barrier)
_OWN_FENCES = {"smp_mb__after_unlock_lock": "after-unlock-lock", "rcu_read_lock": "rcu-lock",
               "rcu_read_unlock": "rcu-unlock", "synchronize_rcu": "sync-rcu", "synchronize_rcu_expedited": "sync-rcu"}
_FENCE_NAMES = ("smp_mb", "smp_rmb", "smp_wmb", "smp_mb__before_atomic", "smp_mb__after_atomic",
                "smp_mb__after_spinlock", "barrier")
_OPS = {"add": "+", "sub": "-", "inc": "+", "dec": "-"}


def _row(name: str) -> Primitive | None:
    """The table's row of a litmus primitive (`atomic_xchg` is `xchg` on an atomic_t)."""
    return BUILTINS.get(name) or BUILTINS.get(name.removeprefix("atomic_"))


def order_of(name: str) -> Order:
    """The ordering the kernel documents for `name`: its row of the primitives table, or
    that of its suffix for a form the spec language does not have."""
    row = _row(name)
    if row is not None:
        return row.order
    return ORDER_SUFFIX[next((sfx for sfx in _SUFFIXES if sfx and name.endswith(sfx)), "")]


def fence_of(name: str) -> str:
    """The cat's name of a fence."""
    if name in _OWN_FENCES:
        return _OWN_FENCES[name]
    kind = BUILTINS[name].fence
    assert kind is not None, name
    return _FENCE_TAGS[kind]


def load_tag(name: str) -> str:
    """An acquire load is tagged `acquire`, a relaxed one `once`."""
    return _TAGS[Order.RELAXED if name == "rcu_dereference" else order_of(name)][0]


def store_tags(name: str) -> tuple[str, bool]:
    """A store's tag, and whether a full fence follows it (`smp_store_mb`: fully ordered)."""
    order = Order.RELEASE if name == "rcu_assign_pointer" else order_of(name)  # linux-kernel.def
    return ("once", True) if order is Order.FULL else (_TAGS[order][1], False)


def rmw_tags(name: str) -> tuple[str, str, bool]:
    """(read tag, write tag, full fences around it) of a read-modify-write; one that
    returns nothing reads with the cat's `noreturn` tag."""
    rtag, wtag, full = _TAGS[order_of(name)]
    return ("noreturn" if RMWS[name][1] is None else rtag), wtag, full


def failure_tag(name: str) -> str:
    """The read of a cmpxchg that fails: the table's failure ordering (relaxed: `once`)."""
    row = _row(name)
    assert row is not None and row.failure_order is not None, name
    return _TAGS[row.failure_order][0]


def _rmw_table():
    """name -> (operation, returns 'new'/'old'/None, takes a value argument, test)."""
    t = {}
    for op in ("add", "sub", "inc", "dec"):
        val = op in ("add", "sub")
        t[f"atomic_{op}"] = (op, None, val, None)
        for sfx in _SUFFIXES:
            t[f"atomic_{op}_return{sfx}"] = (op, "new", val, None)
            t[f"atomic_fetch_{op}{sfx}"] = (op, "old", val, None)
    t["atomic_sub_and_test"] = ("sub", "new", True, "==0")
    t["atomic_dec_and_test"] = ("dec", "new", False, "==0")
    t["atomic_inc_and_test"] = ("inc", "new", False, "==0")
    t["atomic_add_negative"] = ("add", "new", True, "<0")
    for sfx in _SUFFIXES:
        for pre in ("", "atomic_"):
            t[f"{pre}xchg{sfx}"] = ("xchg", "old", True, None)
            t[f"{pre}cmpxchg{sfx}"] = ("cmpxchg", "old", True, None)
    return t


RMWS = _rmw_table()
FENCES = set(_FENCE_NAMES) | set(_OWN_FENCES)
LOADS = {"READ_ONCE": True, "atomic_read": False, "smp_load_acquire": False, "atomic_read_acquire": False,
         "rcu_dereference": True}  # name -> whether it takes a pointer (not `&x`)
STORES = {"WRITE_ONCE": True, "atomic_set": False, "smp_store_release": False, "atomic_set_release": False,
          "rcu_assign_pointer": True, "smp_store_mb": True}
LOCKS = {"spin_lock", "spin_unlock", "spin_trylock", "spin_is_locked"}
PRIMITIVES = set(RMWS) | set(LOADS) | set(STORES) | LOCKS | set(FENCES)


def _arith(op: str, a, b, span):
    if isinstance(a, Loc) or isinstance(b, Loc):
        if op in ("==", "!="):
            return int((a == b) == (op == "=="))
        # diy7's address dependency: `y + (r0 & 128)`, an offset that is 0 but depends on a read
        if op in ("+", "-") and isinstance(a, Loc) and not isinstance(b, Loc) or (
                op == "+" and isinstance(b, Loc) and not isinstance(a, Loc)):
            ptr, offset = (a, b) if isinstance(a, Loc) else (b, a)
            if offset == 0:
                return ptr
            raise SpecError(span, f"'{op}' moves the pointer '{ptr}' by {offset}: a location beside '{ptr}' is a "
                                  "mixed-size access", "herd7 refuses it too (without -variant mixed); "
                                                       "an address dependency adds an offset that is 0, "
                                                       "as diy7 writes it: 'y + (r0 & 128)'")
        raise SpecError(span, f"'{op}' on a pointer is not supported")
    if op not in _LITMUS_BINOPS:
        raise SpecError(span, f"operator '{op}' is not supported")
    if op in ("/", "%") and b == 0:
        raise SpecError(span, f"'{op}' by zero in a candidate execution",
                        hint="as in a model, a zero divisor is an error, not a value")
    value = fold_binop(op, a, b)  # C's semantics, the one definition a model's operators have
    assert value is not None
    return value


#: the operators of the kernel's litmus C format that a test's expressions may use
_LITMUS_BINOPS = frozenset({"+", "-", "*", "/", "%", "&", "|", "^", "==", "!=", "<", "<=", ">", ">="})


class _Runner:
    """Runs one thread on every guess of its read values (values from `domain`)."""

    def __init__(self, thread, domain, locations, model="lkmm", all_arms=False):
        self.thread = thread
        self.model = model
        self.all_arms = all_arms  # both arms of every `if`: the writes any path could make
        self.cut = False  # some path reached a LoopCut (herd7's "unrolling limit exceeded")
        self.domain = domain  # loc -> set of values
        self.locations = locations

    def runs(self):
        start = ThreadRun(regs={r: (0, frozenset()) for r in self.thread.registers})
        for r, v in self.thread.reg_init:  # `0:r0=1;` in the initial state
            start.regs[r] = (Loc(v) if isinstance(v, str) else v, frozenset())
        yield from self._stmts(list(self.thread.body), 0, start, frozenset())

    # Continuation style: each statement list is run on each state; branching over guesses.
    def _stmts(self, stmts, i, st, ctrl):
        if i == len(stmts):
            yield st
            return
        s = stmts[i]
        if isinstance(s, LoopCut):  # the loop would run once more than herd7 unrolls it: no run
            self.cut = True
            return
        if isinstance(s, If):
            for st2, (v, deps) in self._expr(s.cond, st, ctrl):
                arms = (s.then, s.orelse) if self.all_arms else (s.then if _truthy(v, s.span) else s.orelse,)
                inner = ctrl | deps  # ctrl covers only the arms (herd7's C front end)
                for arm in arms:
                    for st3 in self._stmts(list(arm), 0, st2, inner):
                        yield from self._stmts(stmts, i + 1, st3, ctrl)
            return
        if isinstance(s, Assign):
            for st2, (v, deps) in self._expr(s.value, st, ctrl):
                st2.regs[s.reg] = (v, deps)
                yield from self._stmts(stmts, i + 1, st2, ctrl)
            return
        if isinstance(s, Store):  # `*p = v;`: herd7 evaluates the address, then the value
            for st2, (p, pd) in self._expr(s.pointer, st, ctrl):
                loc = self._loc(p, s.span)
                for st3, (v, vd) in self._expr(s.value, st2, ctrl):
                    st4 = self._copy(st3)
                    self._event(st4, "W", loc, v, ("plain",), addr=pd, data=vd, ctrl=ctrl)
                    yield from self._stmts(stmts, i + 1, st4, ctrl)
            return
        assert isinstance(s, ExprStmt)
        for st2, _ in self._expr(s.expr, st, ctrl):
            yield from self._stmts(stmts, i + 1, st2, ctrl)

    @staticmethod
    def _copy(st):
        return ThreadRun(list(st.events), dict(st.regs), set(st.addr), set(st.data), set(st.ctrl), set(st.rmw))

    def _event(self, st, kind, loc=None, val=None, tags=(), fence=None, addr=frozenset(), data=frozenset(),
               ctrl=frozenset()):
        e = Event(len(st.events), self.thread.index, kind, loc, val, frozenset(tags), fence)
        st.events.append(e)
        st.addr |= {(d, e.eid) for d in addr}
        st.data |= {(d, e.eid) for d in data}
        st.ctrl |= {(d, e.eid) for d in ctrl}
        return e.eid

    def _read_values(self, loc):
        return sorted(self.domain.get(loc, {0}), key=_order_key)

    def _expr(self, e, st, ctrl):
        """Yields (state, (value, dependencies)) for every guess."""
        if isinstance(e, Num):
            yield st, (e.value, frozenset())
        elif isinstance(e, Name):
            if e.name in st.regs:
                yield st, st.regs[e.name]
            else:
                yield st, (Loc(e.name), frozenset())
        elif isinstance(e, AddrOf):
            yield st, (Loc(e.name), frozenset())
        elif isinstance(e, Deref):  # a plain C read
            for st2, (p, pd) in self._expr(e.pointer, st, ctrl):
                loc = self._loc(p, e.span)
                for v in self._read_values(loc):
                    st3 = self._copy(st2)
                    r = self._event(st3, "R", loc, v, ("plain",), addr=pd, ctrl=ctrl)
                    yield st3, (v, frozenset({(self.thread.index, r)}))
        elif isinstance(e, Unary):
            for st2, (v, d) in self._expr(e.operand, st, ctrl):
                if isinstance(v, Loc):
                    raise SpecError(e.span, f"'{e.op}' on a pointer is not supported")
                yield st2, ({"!": int(not v), "-": -v, "~": ~v}[e.op], d)
        elif isinstance(e, Binary):
            for st2, (a, da) in self._expr(e.left, st, ctrl):
                if e.op in ("&&", "||"):
                    ta = _truthy(a, e.span)
                    if (e.op == "&&" and not ta) or (e.op == "||" and ta):
                        yield st2, (int(ta), da)
                        continue
                    for st3, (b, db) in self._expr(e.right, st2, ctrl):
                        yield st3, (int(_truthy(b, e.span)), da | db)
                    continue
                for st3, (b, db) in self._expr(e.right, st2, ctrl):
                    yield st3, (_arith(e.op, a, b, e.span), da | db)
        elif isinstance(e, Call):
            yield from self._call(e, st, ctrl)
        else:  # pragma: no cover
            raise AssertionError(e)

    def _args(self, e, st, ctrl, n=None):
        """Evaluate the arguments left to right: [(state, [(value, deps), ...])]."""
        if n is not None and len(e.args) != n:
            raise SpecError(e.span, f"'{e.func}' takes {n} argument{'s' if n != 1 else ''}, got {len(e.args)}")
        results = [(st, [])]
        for a in e.args:
            nxt = []
            for s, vals in results:
                for s2, v in self._expr(a, s, ctrl):
                    nxt.append((s2, vals + [v]))
            results = nxt
        return results

    def _pointer(self, arg, e, deref):
        """The location an access names: `*p` for READ_ONCE/WRITE_ONCE, `p` for the rest."""
        if deref:
            if not isinstance(arg, Deref):
                raise SpecError(e.span, f"'{e.func}' takes '*p' (the location, as in the kernel's tests)",
                                f"write {e.func}(*x{', v' if e.func in STORES else ''})")
            return arg.pointer
        if isinstance(arg, Deref):
            raise SpecError(arg.span, f"'{e.func}' takes a pointer 'p', not '*p'")
        return arg

    def _loc(self, v, span):
        if not isinstance(v, Loc):
            raise SpecError(span, f"the address of this access is the number {v}, not a location")
        if v.name not in self.locations:
            raise SpecError(span, f"'{v.name}' is not a location of this test")
        return v.name

    def _call(self, e, st, ctrl):
        f = e.func
        if f in FENCES:
            if e.args:
                raise SpecError(e.span, f"'{f}' takes no arguments")
            fence = fence_of(f)
            if fence == "sync-rcu" and self.model != "lkmm":
                raise SpecError(e.span, f"'{f}' under memory {self.model} is not supported",
                                "a grace period's guarantee is the LKMM's rcu axiom, not a CPU's; "
                                "check RCU tests under lkmm")
            st = self._copy(st)
            self._event(st, "F", fence=fence, ctrl=ctrl)
            yield st, (0, frozenset())
        elif f in LOADS:
            tag, deref = load_tag(f), LOADS[f]
            if len(e.args) != 1:
                raise SpecError(e.span, f"'{f}' takes 1 argument, got {len(e.args)}")
            ptr = self._pointer(e.args[0], e, deref)
            for s, (p, pd) in self._expr(ptr, st, ctrl):
                loc = self._loc(p, e.span)
                for v in self._read_values(loc):
                    s2 = self._copy(s)
                    r = self._event(s2, "R", loc, v, (tag,), addr=pd, ctrl=ctrl)
                    yield s2, (v, frozenset({(self.thread.index, r)}))
        elif f in STORES:
            (tag, mb), deref = store_tags(f), STORES[f]
            if len(e.args) != 2:
                raise SpecError(e.span, f"'{f}' takes 2 arguments, got {len(e.args)}")
            ptr = self._pointer(e.args[0], e, deref)
            for s, (p, pd) in self._expr(ptr, st, ctrl):
                loc = self._loc(p, e.span)
                for s2, (v, vd) in self._expr(e.args[1], s, ctrl):
                    s3 = self._copy(s2)
                    self._event(s3, "W", loc, v, (tag,), addr=pd, data=vd, ctrl=ctrl)
                    if mb:
                        self._event(s3, "F", fence="mb", ctrl=ctrl)
                    yield s3, (0, frozenset())
        elif f in RMWS:
            yield from self._rmw(e, st, ctrl)
        elif f in LOCKS:
            if len(e.args) != 1:
                raise SpecError(e.span, f"'{f}' takes 1 argument (the lock), got {len(e.args)}")
            for s, (p, pd) in self._expr(self._pointer(e.args[0], e, False), st, ctrl):
                loc = self._loc(p, e.span)
                s2 = self._copy(s)
                if f == "spin_unlock":
                    self._event(s2, "W", loc, 0, ("UL", _TAGS[order_of(f)][1]), addr=pd, ctrl=ctrl)
                    yield s2, (0, frozenset())
                    continue
                if f == "spin_is_locked":  # lock.cat: RL reads "locked" (an LF), RU "unlocked"
                    r = self._event(s2, "R", loc, 1, ("LF", "RL"), addr=pd, ctrl=ctrl)
                    yield s2, (1, frozenset({(self.thread.index, r)}))
                    s3 = self._copy(s)
                    r = self._event(s3, "R", loc, 0, ("RU",), addr=pd, ctrl=ctrl)
                    yield s3, (0, frozenset({(self.thread.index, r)}))
                    continue
                # lock.cat: LKR (an acquire reading "unlocked") and LKW, paired in rmw
                r = self._event(s2, "R", loc, 0, ("LKR", _TAGS[order_of(f)][0]), addr=pd, ctrl=ctrl)
                w = self._event(s2, "W", loc, 1, ("LKW",), addr=pd, ctrl=ctrl)
                s2.rmw.add((r, w))
                yield s2, (1, frozenset())
                if f == "spin_trylock":  # or it fails: LF, a read of "locked" with no ordering
                    s3 = self._copy(s)
                    r = self._event(s3, "R", loc, 1, ("LF",), addr=pd, ctrl=ctrl)
                    yield s3, (0, frozenset({(self.thread.index, r)}))
        else:
            if f.startswith(("test_and_", "set_bit", "clear_bit", "change_bit")) or "_bit" in f:
                raise SpecError(e.span, f"'{f}': bit operations are not in the LKMM's linux-kernel.def",
                                "herd7 cannot check them either; model the word with atomic_* or xchg")
            raise SpecError(e.span, f"unknown primitive '{f}'",
                            did_you_mean(f, PRIMITIVES) or "see spec/LANGUAGE.md, 'Litmus tests'")

    def _rmw(self, e, st, ctrl):
        f = e.func
        op, returns, takes_value, test = RMWS[f]
        # argument order: atomic_op(V, X), xchg(X, V), cmpxchg(X, OLD, NEW)
        if op == "cmpxchg":
            n, pi = 3, 0
        elif op == "xchg":
            n, pi = 2, 0
        else:
            n, pi = (2, 1) if takes_value else (1, 0)
        if len(e.args) != n:
            raise SpecError(e.span, f"'{f}' takes {n} argument{'s' if n != 1 else ''}, got {len(e.args)}")
        args = list(e.args)
        args[pi] = self._pointer(args[pi], e, False)
        for s, vals in self._args(Call(f, tuple(args), e.span), st, ctrl):
            p, pd = vals[pi]
            loc = self._loc(p, e.span)
            rtag, wtag, full = rmw_tags(f)
            for old in self._read_values(loc):
                s2 = self._copy(s)
                if op == "cmpxchg":
                    (_, _), (exp, ed), (new, nd) = vals
                    if old != exp:  # failed: a lone read, unordered, but in the RMW set (before-atomic)
                        r = self._event(s2, "R", loc, old, (failure_tag(f), "RMW"), addr=pd, ctrl=ctrl)
                        yield s2, (old, frozenset({(self.thread.index, r)}))
                        continue
                    wv, wd = new, nd
                elif op == "xchg":
                    wv, wd = vals[1]
                else:
                    if takes_value:
                        amount, wd = vals[0]
                    else:
                        amount, wd = 1, frozenset()
                    if isinstance(old, Loc) or isinstance(amount, Loc):
                        raise SpecError(e.span, f"'{f}' on a pointer value is not supported")
                    wv = old + amount if _OPS[op] == "+" else old - amount
                if full:
                    self._event(s2, "F", fence="mb", ctrl=ctrl)
                r = self._event(s2, "R", loc, old, (rtag, "RMW"), addr=pd, ctrl=ctrl)
                w = self._event(s2, "W", loc, wv, (wtag, "RMW"), addr=pd, data=wd, ctrl=ctrl)
                s2.rmw.add((r, w))
                if full:
                    self._event(s2, "F", fence="mb", ctrl=ctrl)
                rd = frozenset({(self.thread.index, r)})
                result = None if returns is None else (wv if returns == "new" else old)
                if test == "==0":
                    result = int(result == 0)
                elif test == "<0":
                    result = int(result < 0)
                yield s2, (0 if result is None else result, rd if result is not None else frozenset())


def _truthy(v, span):
    if isinstance(v, Loc):
        return True
    return v != 0


def _order_key(v):
    return (1, v.name) if isinstance(v, Loc) else (0, v)


# ---------------------------------------------------------------- relations (sets of pairs)

def seq(a, b):
    by = {}
    for x, y in b:
        by.setdefault(x, []).append(y)
    return {(x, z) for x, y in a for z in by.get(y, ())}


def ident(s):
    return {(x, x) for x in s}


def restrict(r, dom=None, rng=None):
    return {(x, y) for x, y in r if (dom is None or x in dom) and (rng is None or y in rng)}


def plus(r):
    """Transitive closure."""
    closure = set(r)
    while True:
        new = seq(closure, closure) - closure
        if not new:
            return closure
        closure |= new


def star(r, universe):
    return plus(r) | ident(universe)


def opt(r, universe):
    return set(r) | ident(universe)


def inverse(r):
    return {(y, x) for x, y in r}


def acyclic(r):
    return not any(x == y for x, y in plus(r))


# ---------------------------------------------------------------- one candidate execution

@dataclass(slots=True)
class Execution:
    events: dict  # gid -> Event
    po: set
    addr: set
    data: set
    ctrl: set
    rmw: set
    rf: set
    co: set
    regs: dict  # (tid, reg) -> value
    final: dict  # loc -> value


def allowed(x: Execution, model: str) -> bool:
    """Whether the candidate execution satisfies the model's axioms."""
    return judge(x, model)[0]


_NO: tuple[bool, frozenset[str]] = (False, frozenset())  # not allowed, no flags


def judge(x: Execution, model: str) -> tuple[bool, frozenset[str]]:
    """(allowed, flags): the model's axioms, and under lkmm the `flag`s herd7 prints
    (data-race, mixed-accesses, unbalanced-rcu-lock, ...) that the execution raises."""
    ev = x.events
    E = set(ev)
    R = {g for g, e in ev.items() if e.kind == "R"}
    W = {g for g, e in ev.items() if e.kind == "W"}
    M = R | W
    tid = {g: e.tid for g, e in ev.items()}

    def tagged(t):
        return {g for g, e in ev.items() if t in e.tags}

    def fences(kind):
        return {g for g, e in ev.items() if e.kind == "F" and e.fence == kind}

    po = x.po
    int_ = lambda r: {(a, b) for a, b in r if tid[a] == tid[b]}  # noqa: E731
    ext = lambda r: {(a, b) for a, b in r if tid[a] != tid[b]}  # noqa: E731
    loc = lambda r: {(a, b) for a, b in r if ev[a].loc is not None and ev[a].loc == ev[b].loc}  # noqa: E731
    rf, co = x.rf, x.co
    fr = seq(inverse(rf), co)  # lock.cat:139 fr = rf^-1 ; co
    rfe, rfi = ext(rf), int_(rf)
    coe, fre = ext(co), ext(fr)
    po_loc = loc(po)
    com = rf | co | fr  # linux-kernel.cat:57
    # linux-kernel.cat:58 acyclic po-loc | com as coherence
    if not acyclic(po_loc | com):
        return _NO
    # linux-kernel.cat:61 empty rmw & (fre ; coe) as atomic
    if x.rmw & seq(fre, coe):
        return _NO
    LKW, LKR, UL = tagged("LKW"), tagged("LKR"), tagged("UL")
    # lock.cat:55 empty ([LKW] ; po-loc ; [LKR]) \ (po-loc ; [UL] ; po-loc) as lock-nest
    if restrict(po_loc, LKW, LKR) - seq(restrict(po_loc, None, UL), po_loc):
        return _NO
    if model == "sc":
        return acyclic(po | com), frozenset()
    RMW = tagged("RMW")
    if model == "tso":
        # x86-TSO (Owens, Sarkar, Sewell) with the kernel's x86 mapping: every atomic RMW and
        # spin_lock is a locked instruction (a full barrier, a failed cmpxchg included),
        # smp_mb() is mfence, smp_rmb/wmb and acquire/release are plain moves.
        locked = RMW | LKR | LKW | (tagged("LF") - tagged("RL"))  # spin_is_locked: a plain load
        mbf = fences("mb")  # smp_mb__{before,after}_atomic and __after_spinlock: barrier() on x86
        ppo = {(a, b) for a, b in po if a in M and b in M and not (a in W and b in R)}
        implied = restrict(po, locked, M) | restrict(po, M, locked)
        fenced = seq(seq(restrict(po, M, mbf), po), ident(M))
        return acyclic(ppo | implied | fenced | rfe | co | fr), frozenset()
    assert model == "lkmm"
    def fencerel(S):  # herd7 stdlib: fencerel(S) = (po ; [S]) ; po
        return seq(restrict(po, None, S), po)


    Plain = tagged("plain") & M  # bell:75-77 Plain = M \ Marked: only `*x` accesses carry no mark
    Marked = E - Plain
    Acquire = tagged("acquire")  # lock.cat:68 Acquire | LKR (LKR carries 'acquire')
    Release = tagged("release")  # lock.cat:67 Release | UL (UL carries 'release')
    Noreturn = tagged("noreturn")
    IW = tagged("IW")
    # bell:80-83 carry-dep = (data ; [~Srcu-unlock] ; rfi)*; addr/ctrl/data = carry-dep ; ...
    carry = star(seq(x.data, rfi), E)
    addr, data, ctrl = seq(carry, x.addr), seq(carry, x.data), seq(carry, x.ctrl)
    acq_po = restrict(po, Acquire, M)  # cat:28
    po_rel = restrict(po, M, Release)  # cat:29
    po_unlock_lock_po = seq(seq(restrict(po, None, UL), restrict(po | rf, UL, LKR)), po)  # cat:30
    R4rmb = R - Noreturn  # cat:33
    rmb = restrict(fencerel(fences("rmb")), R4rmb, R4rmb)  # cat:34
    wmb = restrict(fencerel(fences("wmb")), W, W)  # cat:35
    po_opt = opt(po, E)
    mb = (restrict(fencerel(fences("mb")), M, M)  # cat:36
          | restrict(seq(restrict(fencerel(fences("before-atomic")), M, RMW), po_opt), None, M)  # cat:37
          | restrict(seq(restrict(po_opt, M, RMW), fencerel(fences("after-atomic"))), None, M)  # cat:38
          | restrict(seq(restrict(po_opt, M, LKW), fencerel(fences("after-spinlock"))), None, M)  # cat:39
          | restrict(seq(seq(restrict(po, M, UL), restrict(co | po, UL, LKW)),  # cat:40-41
                         fencerel(fences("after-unlock-lock"))), None, M))
    SyncRcu = fences("sync-rcu")
    gp = seq(restrict(po, None, SyncRcu), po_opt)  # cat:42 (Sync-srcu: SRCU is refused by the reader)
    strong_fence = mb | gp  # cat:43
    nonrw_fence = strong_fence | po_rel | acq_po  # cat:45
    fence = nonrw_fence | wmb | rmb  # cat:46
    dep = addr | data  # cat:68
    rwdep = restrict(dep | ctrl, None, W)  # cat:69
    overwrite = co | fr  # cat:70
    to_w = rwdep | int_(overwrite) | seq(restrict(addr, None, Plain), wmb)  # cat:71
    to_r = addr | seq(restrict(dep, None, Marked), rfi)  # cat:72
    ppo = to_r | to_w | fence | int_(po_unlock_lock_po)  # cat:73
    rfe_m = restrict(rfe, None, Marked)
    a_cumul = lambda r: seq(opt(rfe_m, E), r)  # noqa: E731  cat:76 A-cumul(r) = (rfe ; [Marked])? ; r
    cumul_fence = restrict(a_cumul(strong_fence | po_rel) | wmb | po_unlock_lock_po, Marked, Marked)  # cat:77-78
    cumul_star = star(cumul_fence, E)
    prop = restrict(seq(seq(restrict(opt(ext(overwrite), E), Marked), cumul_star),  # cat:79-80
                        restrict(opt(rfe, E), Marked, Marked)), Marked, Marked)
    hb = restrict(ppo | rfe | int_({(a, b) for a, b in prop if a != b}), Marked, Marked)  # cat:86
    if not acyclic(hb):  # cat:87 acyclic hb as happens-before
        return _NO
    hb_star = star(hb, E)
    pb = restrict(seq(seq(prop, strong_fence), hb_star), None, Marked)  # cat:94
    if not acyclic(pb):  # cat:95 acyclic pb as propagation
        return _NO
    pb_star = star(pb, E)
    flags = set()
    # RCU. bell:44-54 rcu-rscs: each rcu_read_unlock matches the innermost open lock of its thread
    rscs = set()
    for t in sorted({tid[g] for g in E if tid[g] >= 0}):
        stack = []
        for g in sorted((g for g in E if tid[g] == t), ):  # gids follow program order
            if ev[g].fence == "rcu-lock":
                stack.append(g)
            elif ev[g].fence == "rcu-unlock" and stack:
                rscs.add((stack.pop(), g))
    if fences("rcu-lock") - {a for a, _ in rscs}:
        flags.add("unbalanced-rcu-lock")  # bell:56
    if fences("rcu-unlock") - {b for _, b in rscs}:
        flags.add("unbalanced-rcu-unlock")  # bell:57
    rcu_fence = set()
    strong_fence2, fence2 = strong_fence, fence
    rb = set()
    if SyncRcu:
        rscsi = inverse(rscs)  # cat:113
        gp_id = ident(SyncRcu)  # cat:111
        link = seq(seq(seq(seq(po_opt, hb_star), pb_star), prop), po)  # cat:121 rcu-link
        order = set(gp_id)  # cat:131-140 rcu-order, the least fixpoint
        base = seq(seq(gp_id, link), rscsi) | seq(seq(rscsi, link), gp_id)
        order |= base
        while True:
            nxt = (order | seq(seq(seq(seq(gp_id, link), order), link), rscsi)
                   | seq(seq(seq(seq(rscsi, link), order), link), gp_id)
                   | seq(seq(order, link), order))
            if nxt == order:
                break
            order = nxt
        rcu_fence = seq(seq(po, order), po_opt)  # cat:141
        strong_fence2, fence2 = strong_fence | rcu_fence, fence | rcu_fence  # cat:142-143
        rb = restrict(seq(seq(seq(prop, rcu_fence), hb_star), pb_star), None, Marked)  # cat:146
        if any(a == b for a, b in rb):  # cat:148 irreflexive rb as rcu
            return _NO
    # lock.cat:41 mixed-lock-accesses, :71-73 unmatched-unlock
    lock_events = LKR | LKW | UL | tagged("LF") | tagged("RU")
    lock_locs = {ev[g].loc for g in lock_events}
    if any(ev[g].loc in lock_locs for g in (M - IW - lock_events)):
        flags.add("mixed-lock-accesses")
    between = seq(restrict(po_loc, None, LKW | UL), po_loc)
    critical = restrict(po_loc, LKW, UL) - between
    if UL - {b for _, b in critical}:
        flags.add("unmatched-unlock")
    if not Plain:
        return True, frozenset(flags)
    # Plain accesses and data races, cat:164-203
    barrier = (fencerel(fences("barrier") | fences("rmb") | fences("wmb") | fences("mb") | SyncRcu
                        | fences("before-atomic") | fences("after-atomic") | Acquire | Release
                        | fences("rcu-lock") | fences("rcu-unlock"))
               | restrict(po, None, Release) | restrict(po, Acquire, None))  # cat:47-50
    pl_nb = po_loc - barrier
    PlainW = Plain & W
    if restrict(pl_nb, PlainW, Marked) | restrict(pl_nb, Marked, PlainW):  # cat:164-166
        flags.add("mixed-accesses")
    xbstar = star(hb | pb | rb, E)  # cat:169
    vis = seq(seq(cumul_star, restrict(opt(rfe, E), None, Marked)),  # cat:170-172
              seq(restrict(strong_fence2, None, Marked), xbstar) | int_(xbstar))
    w_pre = restrict(opt(addr | fence2, E), Marked, None)  # cat:174
    r_pre = restrict(opt(addr | nonrw_fence | restrict(fencerel(fences("rmb")), R4rmb, E - Noreturn), E),
                     Marked, None)  # cat:175-176
    w_post = restrict(opt(fence2, E), None, Marked)  # cat:177
    r_post = restrict(opt(nonrw_fence | restrict(fencerel(fences("rmb")), E - Noreturn, R4rmb), E),
                      None, Marked)  # cat:178-179
    ww_vis = fence2 | seq(seq(strong_fence2, xbstar), w_pre) | seq(seq(w_post, vis), w_pre)  # cat:182
    wr_vis = fence2 | seq(seq(strong_fence2, xbstar), r_pre) | seq(seq(w_post, vis), r_pre)  # cat:184
    rw_xbstar = fence2 | seq(seq(r_post, xbstar), w_pre)  # cat:186

    def pre_race(r):  # cat:189 ext & ((Plain * M) | ((M \ IW) * Plain))
        return {(a, b) for a, b in ext(r) if a in M and b in M
                and (a in Plain or (b in Plain and a not in IW))}

    rf_r, fr_r, co_r = pre_race(rf), pre_race(fr), pre_race(co)
    if (rf_r & inverse(rw_xbstar)) | (fr_r & inverse(wr_vis)) | (co_r & inverse(ww_vis)):
        return _NO  # cat:192-195 plain-coherence
    ww_nonrace = {(a, b) for a, b in ww_vis
                  if (a in Marked and b in W or (a, b) in rw_xbstar)
                  and (a in W and b in Marked or (a, b) in wr_vis)}  # cat:198
    ww_race = co_r - ww_nonrace  # cat:199
    wr_race = pre_race(seq(opt(co, E), rf)) - wr_vis - inverse(rw_xbstar)  # cat:200
    rw_race = fr_r - rw_xbstar  # cat:201
    if ww_race | wr_race | rw_race:
        flags.add("data-race")  # cat:203
    return True, frozenset(flags)


# ---------------------------------------------------------------- enumeration

@record
class Outcome:
    """The final values the condition and `locations` name, in a fixed order."""

    values: tuple  # ((label, value), ...)

    def __str__(self):
        return " ".join(f"{k}={v};" for k, v in self.values)


@record
class Result:
    model: str
    outcomes: tuple  # of (Outcome, satisfies the condition)
    positive: int  # allowed executions satisfying the condition's proposition
    negative: int
    candidates: int
    flags: tuple = ()  # herd7's `Flag NAME` lines, in FLAGS order
    loop_cut: bool = False  # a `while` ran past herd7's unrolling: outcomes may be missing

    @property
    def observation(self) -> str:
        if self.positive == 0:
            return "Never"
        return "Always" if self.negative == 0 else "Sometimes"


def _locations(test: Litmus) -> list[str]:
    locs = []
    for name, v in test.init:
        locs.append(name)
        if isinstance(v, str):
            locs.append(v)
    for t in test.threads:
        locs.extend(t.params)
    return sorted(set(locs))


def _shown(test: Litmus) -> list[tuple[int | None, str]]:
    names = list(test.locations)

    def walk(p):
        if isinstance(p, Atom):
            if (p.thread, p.name) not in names:
                names.append((p.thread, p.name))
        else:
            for a in p.args:
                walk(a)

    walk(test.condition.prop)  # not the filter's names: herd7 does not show them
    return sorted(names, key=lambda k: (k[0] is None, -1 if k[0] is None else k[0], k[1]))


def _label(k):
    return f"[{k[1]}]" if k[0] is None else f"{k[0]}:{k[1]}"  # herd7 shows locations as [x]


def _holds(p, regs, final, test) -> bool:
    if isinstance(p, PropOp):
        if p.op == "and":
            return all(_holds(a, regs, final, test) for a in p.args)
        if p.op == "or":
            return any(_holds(a, regs, final, test) for a in p.args)
        if p.op == "not":
            return not _holds(p.args[0], regs, final, test)
        return p.op == "true"
    v = final.get(p.name) if p.thread is None else regs.get((p.thread, p.name))
    want = Loc(p.value) if isinstance(p.value, str) else p.value
    return (v == want) != p.negated


def check_atoms(test: Litmus) -> None:
    """Every register and location the condition names exists (a SpecError otherwise)."""
    locs = set(_locations(test))

    def walk(p):
        if isinstance(p, Atom):
            if p.thread is None:
                if p.name not in locs:
                    raise SpecError(p.span, f"'{p.name}' is not a location of this test")
            elif p.thread >= len(test.threads) or p.name not in test.threads[p.thread].registers:
                raise SpecError(p.span, f"thread {p.thread} has no register '{p.name}'")
            if isinstance(p.value, str) and p.value not in locs:
                raise SpecError(p.span, f"'{p.value}' is not a location of this test")
        elif isinstance(p, PropOp):
            for a in p.args:
                walk(a)

    walk(test.condition.prop)
    if test.filter is not None:
        walk(test.filter)
    for th, name in test.locations:
        walk(Atom(th, name, 0, False, test.threads[0].span))


def evaluate(test: Litmus, model: str = "lkmm", limit: int = DEFAULT_LIMIT, visit=None) -> Result:
    """Every candidate execution, kept when the model allows it; raises TooManyCandidates.
    `visit(outcome, execution)`, when given, sees each allowed execution (tests classify
    the executions an operational machine misses by their rf and co)."""
    check_atoms(test)
    locs = _locations(test)
    init: dict[str, object] = {name: 0 for name in locs}
    for name, v in test.init:
        init[name] = Loc(v) if isinstance(v, str) else v
    # The values a read may return: herd7 solves each execution's read values from its rf,
    # so a read may return any value some write of some path stores, that path's own
    # branch conditions included (load buffering whose values justify themselves: each
    # thread takes the branch the other's store enables). The domain is that fixpoint:
    # every path of every thread (both arms of each `if`) run on the values so far. A
    # value of a real execution comes from a chain of at most (number of write events)
    # writes, so that many rounds reach every such value; extra guesses are pruned by rf.
    domain = {name: {v} for name, v in init.items()}
    rounds, writes_bound = 0, 1
    while True:
        paths = [list(_Runner(t, domain, set(locs), model, all_arms=True).runs()) for t in test.threads]
        if sum(len(r) for r in paths) > limit:
            raise TooManyCandidates(f"more than {limit:,} thread runs")
        new = {k: set(v) for k, v in domain.items()}
        for rs in paths:
            for run in rs:
                for e in run.events:
                    if e.kind == "W":
                        new[e.loc].add(e.val)
        writes_bound = max(writes_bound, sum(max((sum(e.kind == "W" for e in run.events) for run in rs), default=0)
                                             for rs in paths))
        rounds += 1
        if new == domain or rounds > writes_bound:
            break
        domain = new
    runners = [_Runner(t, domain, set(locs), model) for t in test.threads]
    runs = [list(r.runs()) for r in runners]
    loop_cut = any(r.cut for r in runners)
    if sum(len(r) for r in runs) > limit:
        raise TooManyCandidates(f"more than {limit:,} thread runs")
    shown = _shown(test)
    final_locs = {name for th, name in shown if th is None}
    outcomes: dict = {}
    positive = negative = candidates = 0
    flags: set = set()
    budget = [limit * 10]  # rf/co choices tried per location, over the whole run
    for combo in itertools.product(*runs):
        # global events: initial writes, then each thread's
        events: dict[int, Event] = {}
        po: set[tuple[int, int]] = set()
        addr: set[tuple[int, int]] = set()
        data: set[tuple[int, int]] = set()
        ctrl: set[tuple[int, int]] = set()
        rmw: set[tuple[int, int]] = set()
        gid = {}
        for name in locs:
            g = len(events)
            events[g] = Event(g, -1, "W", name, init[name], frozenset({"IW"}))
        for t, run in enumerate(combo):
            ids = []
            for e in run.events:
                g = len(events)
                gid[(t, e.eid)] = g
                events[g] = Event(g, t, e.kind, e.loc, e.val, e.tags, e.fence)
                ids.append(g)
            po |= {(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]}
            for rel, out in ((run.addr, addr), (run.data, data), (run.ctrl, ctrl)):
                out |= {(gid[d], gid[(t, b)]) for d, b in rel}
            rmw |= {(gid[(t, a)], gid[(t, b)]) for a, b in run.rmw}
        writes = {name: [g for g, e in events.items() if e.kind == "W" and e.loc == name] for name in locs}
        reads = [g for g, e in events.items() if e.kind == "R"]
        regs: dict[tuple[int | None, str], object] = {}
        for t, run in enumerate(combo):
            for name, (v, _) in run.regs.items():
                regs[(t, name)] = v
        # Coherence and atomicity are per location (linux-kernel.cat:58, 61): choose each
        # location's co and rf together and keep only the coherent pairs, then combine.
        per_loc = []
        for name in locs:
            choices = list(_coherent(name, writes[name], [r for r in reads if events[r].loc == name], events, po,
                                     rmw, budget))
            if not choices:
                break
            per_loc.append(choices)
        else:
            for pick in itertools.product(*per_loc):
                candidates += 1
                if candidates > limit:
                    raise TooManyCandidates(f"more than {limit:,} candidate executions")
                rf = set().union(*(p[0] for p in pick))
                co = set().union(*(p[1] for p in pick))
                final = {name: events[p[2]].val for name, p in zip(locs, pick)}
                x = Execution(events, po, addr, data, ctrl, rmw, rf, co, regs, final)
                if test.filter is not None and not _holds(test.filter, regs, final, test):
                    continue
                ok, raised = judge(x, model)
                if not ok:
                    continue
                flags |= raised
                if model == "lkmm" and any(e.loc in final_locs and _LOCK_TAGS & e.tags for e in events.values()):
                    flags.add("lock-final")  # lock.cat:58 the final value of a lock is tested
                sat = _holds(test.condition.prop, regs, final, test)
                positive += sat
                negative += not sat
                key = Outcome(tuple((_label(k), final[k[1]] if k[0] is None else regs[k]) for k in shown))
                outcomes[key] = sat
                if visit is not None:
                    visit(key, x)
    ordered = tuple(sorted(outcomes.items(), key=lambda kv: [_order_key(v) for _, v in kv[0].values]))
    return Result(model, ordered, positive, negative, candidates, tuple(f for f in FLAGS if f in flags), loop_cut)


def _coherent(name, ws, rs, events, po, rmw, budget):
    """(rf, co, last write) of one location that pass coherence and atomicity there.
    Orders that put one thread's writes against program order (CoWW), and rf choices
    where an RMW's read does not read the write just co-before its own (atomicity), are
    skipped before the full check; every order tried counts against `budget`."""
    sources = []
    for r in rs:
        src = [w for w in ws if events[w].val == events[r].val and _may_read(events[r], events[w])]
        if not src:
            return
        sources.append(src)
    po_loc = {(a, b) for a, b in po if events[a].loc == name and events[b].loc == name}
    rfi_ru = _rfi_ru(ws, rs, events, po_loc)
    tid = {g: events[g].tid for g in ws + rs}
    rmw_l = {(a, b) for a, b in rmw if events[a].loc == name}
    rmw_w = dict(rmw_l)
    same_thread = [(a, b) for a, b in po_loc if a in ws and b in ws]
    for order, co in _co_orders(ws, events, po):
        budget[0] -= 1
        if budget[0] < 0:
            raise TooManyCandidates("too many coherence orders")
        pos = {w: i for i, w in enumerate(order)}
        if any(pos.get(a, -1) > pos.get(b, len(pos)) for a, b in same_thread):  # an unmatched UL has no place
            continue
        last = order[-1]
        choices = []
        for r, src in zip(rs, sources):
            if r in rmw_w:  # atomicity: read the write immediately co-before its own write
                i = pos[rmw_w[r]]
                src = [w for w in src if i > 0 and order[i - 1] == w]
            choices.append(src)
        for pick in itertools.product(*choices):
            budget[0] -= 1
            if budget[0] < 0:
                raise TooManyCandidates("too many coherence orders and reads-from choices")
            rf = set(zip(pick, rs)) | rfi_ru
            fr = seq(inverse(rf), co)
            if not acyclic(po_loc | rf | co | fr):
                continue
            fre = {(a, b) for a, b in fr if tid[a] != tid[b]}
            coe = {(a, b) for a, b in co if tid[a] != tid[b]}
            if rmw_l & seq(fre, coe):
                continue
            yield rf, co, last


_LOCK_W, _LOCK_R = frozenset({"LKW", "UL"}), frozenset({"LKR", "LF", "RU"})
_LOCK_TAGS = _LOCK_W | _LOCK_R


def _may_read(r, w) -> bool:
    """lock.cat's reads-from for lock events, which herd7 builds apart from the others:
    LKR reads an initial write or an unlock (lock.cat:135), LF/RL a lock write
    (lock.cat:80-97), RU an initial write or another thread's unlock (lock.cat:109-117,
    its own last unlock is added by _rfi_ru); other reads never read lock writes."""
    if "LKR" in r.tags:
        return bool({"IW", "UL"} & w.tags)
    if "LF" in r.tags:
        return "LKW" in w.tags
    if "RU" in r.tags:
        return bool({"IW", "UL"} & w.tags) and w.tid != r.tid
    return not (_LOCK_W & w.tags)


def _rfi_ru(ws, rs, events, po_loc) -> set:
    r"""lock.cat:106 rfi-ru = ([UL] ; po-loc ; [RU]) \ ([UL] ; po-loc ; [LKW] ; po-loc):
    an RU also reads its thread's last unlock, besides the rfe-ru edge it always gets."""
    out = set()
    for r in rs:
        if "RU" not in events[r].tags:
            continue
        for u in ws:
            if "UL" in events[u].tags and (u, r) in po_loc and not any(
                    "LKW" in events[k].tags and (u, k) in po_loc and (k, r) in po_loc for k in ws):
                out.add((u, r))
    return out




def _co_orders(ws, events, po):
    """Coherence orders of one location as lock.cat builds them: the initial write first,
    then every order of the rest, an unlock straight after its lock's write (lock.cat:130),
    an unmatched lock write after every other lock write (lock.cat:125) and at most one of
    them (lock.cat:76), and an unmatched unlock in no coherence order at all (lock.cat:130
    merges only the ULs of `critical`), so no spin_lock reads from it."""
    init = [w for w in ws if "IW" in events[w].tags]
    rest = [w for w in ws if "IW" not in events[w].tags]
    # lock.cat:71 critical: each UL matches the last po-earlier LKW of its thread on that lock
    match = {}
    for u in rest:
        if "UL" in events[u].tags:
            lkws = [w for w in rest if "LKW" in events[w].tags and (w, u) in po]
            lkws = [w for w in lkws if not any((w, o) in po and (o, u) in po for o in rest
                                               if {"LKW", "UL"} & events[o].tags)]
            if lkws:
                match[u] = lkws[-1]
    rest = [w for w in rest if "UL" not in events[w].tags or w in match]
    lkws = [w for w in rest if "LKW" in events[w].tags]
    unmatched_lkw = [w for w in lkws if w not in match.values()]
    if len(unmatched_lkw) > 1:  # lock.cat:76 unmatched-locks: more than one must deadlock
        return
    for perm in itertools.permutations(rest):
        pos = {w: i for i, w in enumerate(perm)}
        if any(pos[u] != pos[w] + 1 for u, w in match.items()):
            continue
        if unmatched_lkw and any(pos[w] > pos[unmatched_lkw[0]] for w in lkws):
            continue
        order = init + list(perm)
        yield order, {(order[i], order[j]) for i in range(len(order)) for j in range(i + 1, len(order))}


def judge_result(test: Litmus, res: Result) -> tuple[bool, bool]:
    """(the verdict is the Result line's, the data-race flag is as it predicts), as the
    kernel's judgelitmus.sh: DEADLOCK wants no execution at all, Maybe takes any verdict."""
    if test.expected is None:
        return True, True
    if test.expected == "DEADLOCK":
        said = res.positive == res.negative == 0
    else:
        said = test.expected in ("Maybe", res.observation)
    if res.model != "lkmm":  # flags are the LKMM's: sc and tso raise none
        return said, True
    return said, ("data-race" in res.flags) == test.expected_race


def result_line(test: Litmus) -> str:
    return f"{test.expected}{' DATARACE' if test.expected_race else ''}"


def _pp(p, inside: str | None = None) -> str:
    r"""A proposition as herd7 prints it: `[x]` for a location, `not (...)` for `~` and
    `!=`, chains of one operator flat, parentheses only around an `\/` inside a `/\`."""
    if isinstance(p, Atom):
        name = f"[{p.name}]" if p.thread is None else f"{p.thread}:{p.name}"
        text = f"{name}={p.value}"
        return f"not ({text})" if p.negated else text
    if p.op in ("true", "false"):
        return p.op
    if p.op == "not":
        return f"not ({_pp(p.args[0])})"
    sep = " /\\ " if p.op == "and" else " \\/ "
    text = sep.join(_pp(a, p.op) for a in p.args)
    return f"({text})" if inside == "and" and p.op == "or" else text


def format_result(test: Litmus, res: Result) -> str:
    """herd7's layout: the states, Ok/No, the witnesses, the condition and the Observation."""
    q = test.condition.quantifier
    kind = {"forall": "Required", "~exists": "Forbidden"}.get(q, "Allowed")
    lines = [f"Test {test.name} {kind}" + ("" if res.model == "lkmm" else f" (memory {res.model})"),
             f"States {len(res.outcomes)}"]
    lines += [str(o) for o, _ in res.outcomes]
    if q == "exists":
        ok = res.positive > 0
    elif q == "~exists":
        ok = res.positive == 0
    else:
        ok = res.negative == 0
    # herd7 counts the witnesses of the condition (of ~P for ~exists), the Observation of P
    pos, neg = (res.negative, res.positive) if q == "~exists" else (res.positive, res.negative)
    lines += [("Loop " if res.loop_cut else "") + ("Ok" if ok else "No"), "Witnesses",
              f"Positive: {pos} Negative: {neg}"]
    lines += [f"Flag {f}" for f in res.flags]
    lines += [f"Condition {q} ({_pp(test.condition.prop)})",
              f"Observation {test.name} {res.observation} {res.positive} {res.negative}"]
    return "\n".join(lines)
