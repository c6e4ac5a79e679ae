"""The syntax tree of a spec: frozen dataclasses, each carrying its source span.

This is what the parser produces and the resolver consumes. Names are still plain
strings here; the resolver binds them to declarations and gives expressions types.
Spans take no part in `==` or hashing: two trees that say the same thing are equal
wherever they stand (the parser's tests compare trees without positions).
"""

from __future__ import annotations

from dataclasses import field

from ..base.errors import Span
from ..base.record import record

# ---- expressions ---------------------------------------------------------------


@record
class Expr:
    span: Span = field(compare=False)


@record
class Number(Expr):
    value: int


@record
class BoolLit(Expr):
    value: bool


@record
class Name(Expr):
    name: str


@record
class SelfRef(Expr):
    pass


@record
class Index(Expr):
    name: str
    name_span: Span = field(compare=False)
    index: Expr


@record
class Unary(Expr):
    op: str
    operand: Expr


@record
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@record
class Conditional(Expr):
    cond: Expr
    then: Expr
    orelse: Expr


@record
class Call(Expr):
    name: str
    name_span: Span = field(compare=False)
    args: tuple[Expr, ...]


@record
class AtLabel(Expr):
    """`proc@label` or `proc[i]@label`: the process is at that label."""

    process: str
    process_span: Span = field(compare=False)
    index: Expr | None
    label: str
    label_span: Span = field(compare=False)


@record
class LocalRef(Expr):
    """`proc.name` or `proc[i].name`: a process-local variable, read by a property."""

    process: str
    process_span: Span = field(compare=False)
    index: Expr | None
    name: str
    name_span: Span = field(compare=False)


@record
class Quantifier(Expr):
    kind: str  # "exists" | "forall"
    var: str
    lo: Expr
    hi: Expr
    body: Expr


@record
class ListInit(Expr):
    """`{a, b, c}`: an array's values or a bit set's members."""

    items: tuple[Expr, ...]


@record
class AnyInit(Expr):
    """`any`: every value of the type is an initial value."""


# ---- types ---------------------------------------------------------------------


@record
class TypeExpr:
    span: Span = field(compare=False)


@record
class BoolType(TypeExpr):
    pass


@record
class NamedType(TypeExpr):
    name: str


@record
class RangeType(TypeExpr):
    lo: Expr
    hi: Expr


@record
class BitsetType(TypeExpr):
    """`bitset(N)`, `bitset(lo..hi)` or `bitset(Enum)`."""

    size: Expr | None
    lo: Expr | None
    hi: Expr | None


@record
class Dim:
    """An array dimension: a count `N`, a range `lo..hi`, or a process name."""

    span: Span = field(compare=False)
    count: Expr | None
    lo: Expr | None
    hi: Expr | None


# ---- statements ----------------------------------------------------------------


@record
class Stmt:
    span: Span = field(compare=False)


@record
class Block(Stmt):
    body: tuple[Stmt, ...]


@record
class LValue:
    span: Span = field(compare=False)
    name: str
    index: Expr | None


@record
class Assign(Stmt):
    target: LValue
    value: Expr


@record
class If(Stmt):
    cond: Expr
    then: Stmt
    orelse: Stmt | None


@record
class While(Stmt):
    cond: Expr
    body: Stmt


@record
class Loop(Stmt):
    body: Stmt


@record
class Break(Stmt):
    pass


@record
class Continue(Stmt):
    pass


@record
class Labeled(Stmt):
    label: str
    label_span: Span = field(compare=False)
    stmt: Stmt


@record
class Goto(Stmt):
    label: str


@record
class Await(Stmt):
    cond: Expr


@record
class Atomic(Stmt):
    body: Block


@record
class Preemptible(Stmt):
    """`preemptible { ... }` in a thread: the scheduler may preempt it only in here."""

    body: Block


@record
class Choose(Stmt):
    branches: tuple[Block, ...]


@record
class Assert(Stmt):
    name: str | None
    cond: Expr


@record
class Skip(Stmt):
    pass


@record
class Stutter(Stmt):
    """`stutter;`: a step that changes nothing, so the process may rest here for ever."""


@record
class Fair(Stmt):
    """`fair S` / `strongly fair S`: S's first step is an action with fairness of its own."""

    strong: bool
    stmt: Stmt


@record
class Return(Stmt):
    pass


@record
class CallStmt(Stmt):
    call: Call


# ---- declarations --------------------------------------------------------------


@record
class Decl:
    span: Span = field(compare=False)
    name: str


@record
class ModelDecl(Decl):
    pass


@record
class MemoryDecl(Decl):
    """`memory sc;` or `memory tso;`, optionally with a store-buffer bound: `memory tso(3);`."""

    bound: Expr | None = None


@record
class ConstDecl(Decl):
    value: Expr


@record
class EnumDecl(Decl):
    members: tuple[tuple[str, Span], ...]


@record
class VarDecl(Decl):
    dim: Dim | None
    type: TypeExpr
    init: Expr | None
    percpu: bool = False  # `percpu var x: T;`: one element per CPU (an array over `cpus`)
    ghost: bool = False  # `ghost var x: T;`: outside the memory model (every CPU reads its newest value)


@record
class CpusDecl(Decl):
    """`cpus N;`: the model's CPUs, 0 to N-1 (execution contexts)."""

    count: Expr


@record
class PreemptionsDecl(Decl):
    """`preemptions K;`: the preemption bound of context bounding."""

    bound: Expr


@record
class Notifier:
    """`on sched_out { ... }` / `on sched_in { ... }` inside a thread: a preempt notifier."""

    span: Span = field(compare=False)
    name: str
    body: Block


@record
class WaitQueueDecl(Decl):
    dim: Dim | None


@record
class ProcessDecl(Decl):
    unfair: bool
    dim: Dim | None
    locals: tuple[VarDecl, ...]
    body: tuple[Stmt, ...]
    end_span: Span = field(compare=False)
    # execution contexts: a thread (`on cpu C`), an interrupt handler (`interrupt NAME`)
    cpu: Expr | None = None
    cpu_span: Span | None = field(default=None, compare=False)
    interrupt: bool = False
    preemptible: bool = False
    notifiers: tuple[Notifier, ...] = ()
    hrtimer: bool = False  # `hrtimer NAME on cpu C { callback }`: an interrupt that a timer raises
    posted: bool = False  # `interrupt NAME ... posted { ... }`: processed in guest mode, no VM exit
    pinned: bool = False  # `hrtimer NAME[N] pinned { ... }`: queued on the CPU that starts it
    clock: str | None = None  # `hrtimer NAME ... clock C { ... }`: expires once clock C reaches its expiry
    clock_span: Span | None = field(default=None, compare=False)
    guest_of: str | None = None  # `guest NAME of THREAD { ... }`: the thread's guest code
    guest_of_span: Span | None = field(default=None, compare=False)


@record
class InlineDecl(Decl):
    params: tuple[str, ...]
    body: Block


@record
class Param:
    span: Span = field(compare=False)
    name: str
    type: TypeExpr | None


@record
class FnDecl(Decl):
    params: tuple[Param, ...]
    result: TypeExpr | None
    body: Expr


@record
class InvariantDecl(Decl):
    cond: Expr


@record
class ReachableDecl(Decl):
    """`reachable NAME: cond;` (or `sometimes`): some reachable state satisfies cond, the
    way `expect violated` states that a bug must show."""

    cond: Expr


@record
class FinalDecl(Decl):
    """`final NAME: cond;`: cond holds in every final state (no process can move, all at a
    valid end, every store buffer empty). Litmus tests state their outcome this way."""

    cond: Expr


@record
class PropertyDecl(Decl):
    """`always (P -> eventually Q)`, or `always eventually Q` (then `trigger` is None)."""

    trigger: Expr | None
    goal: Expr


@record
class ExpectDecl:
    span: Span = field(compare=False)
    violated: tuple[tuple[str, Span], ...]


@record
class Override:
    span: Span = field(compare=False)
    name: str
    value: Expr


@record
class VariantDecl(Decl):
    overrides: tuple[Override, ...]
    expects: tuple[ExpectDecl, ...]
    memory: tuple[MemoryDecl, ...] = ()  # `memory tso;` inside the braces (at most one)


@record
class LemmaDecl(Decl):
    params: tuple[Param, ...]
    body: Expr


@record
class Spec:
    """A whole spec file: its declarations in source order."""

    file: str
    source: str
    items: tuple[Decl | ExpectDecl, ...] = field(default=())

    def of(self, kind):
        return [d for d in self.items if isinstance(d, kind)]

    @property
    def name(self) -> str:
        models = self.of(ModelDecl)
        return models[0].name if models else "model"
