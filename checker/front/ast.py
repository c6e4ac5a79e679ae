"""The syntax tree of a spec: frozen dataclasses, each carrying its source span.

This is what the parser produces and the resolver consumes. Names are still plain
strings here; the resolver binds them to declarations and gives expressions types.
Spans take no part in `==` or hashing: two trees that say the same thing are equal
wherever they stand (the parser's tests compare trees without positions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base.errors import Span

# ---- expressions ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Expr:
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Number(Expr):
    value: int


@dataclass(frozen=True, slots=True)
class BoolLit(Expr):
    value: bool


@dataclass(frozen=True, slots=True)
class Name(Expr):
    name: str


@dataclass(frozen=True, slots=True)
class SelfRef(Expr):
    pass


@dataclass(frozen=True, slots=True)
class Index(Expr):
    name: str
    name_span: Span = field(compare=False)
    index: Expr


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Conditional(Expr):
    cond: Expr
    then: Expr
    orelse: Expr


@dataclass(frozen=True, slots=True)
class Call(Expr):
    name: str
    name_span: Span = field(compare=False)
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class AtLabel(Expr):
    """`proc@label` or `proc[i]@label`: the process is at that label."""

    process: str
    process_span: Span = field(compare=False)
    index: Expr | None
    label: str
    label_span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class LocalRef(Expr):
    """`proc.name` or `proc[i].name`: a process-local variable, read by a property."""

    process: str
    process_span: Span = field(compare=False)
    index: Expr | None
    name: str
    name_span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Quantifier(Expr):
    kind: str  # "exists" | "forall"
    var: str
    lo: Expr
    hi: Expr
    body: Expr


@dataclass(frozen=True, slots=True)
class ListInit(Expr):
    """`{a, b, c}`: an array's values or a bit set's members."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class AnyInit(Expr):
    """`any`: every value of the type is an initial value."""


# ---- types ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypeExpr:
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class BoolType(TypeExpr):
    pass


@dataclass(frozen=True, slots=True)
class NamedType(TypeExpr):
    name: str


@dataclass(frozen=True, slots=True)
class RangeType(TypeExpr):
    lo: Expr
    hi: Expr


@dataclass(frozen=True, slots=True)
class BitsetType(TypeExpr):
    """`bitset(N)`, `bitset(lo..hi)` or `bitset(Enum)`."""

    size: Expr | None
    lo: Expr | None
    hi: Expr | None


@dataclass(frozen=True, slots=True)
class Dim:
    """An array dimension: a count `N`, a range `lo..hi`, or a process name."""

    span: Span = field(compare=False)
    count: Expr | None
    lo: Expr | None
    hi: Expr | None


# ---- statements ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stmt:
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class LValue:
    span: Span = field(compare=False)
    name: str
    index: Expr | None


@dataclass(frozen=True, slots=True)
class Assign(Stmt):
    target: LValue
    value: Expr


@dataclass(frozen=True, slots=True)
class If(Stmt):
    cond: Expr
    then: Stmt
    orelse: Stmt | None


@dataclass(frozen=True, slots=True)
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass(frozen=True, slots=True)
class Loop(Stmt):
    body: Stmt


@dataclass(frozen=True, slots=True)
class Break(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Labeled(Stmt):
    label: str
    label_span: Span = field(compare=False)
    stmt: Stmt


@dataclass(frozen=True, slots=True)
class Goto(Stmt):
    label: str


@dataclass(frozen=True, slots=True)
class Await(Stmt):
    cond: Expr


@dataclass(frozen=True, slots=True)
class Atomic(Stmt):
    body: Block


@dataclass(frozen=True, slots=True)
class Preemptible(Stmt):
    """`preemptible { ... }` in a thread: the scheduler may preempt it only in here."""

    body: Block


@dataclass(frozen=True, slots=True)
class Choose(Stmt):
    branches: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class Assert(Stmt):
    name: str | None
    cond: Expr


@dataclass(frozen=True, slots=True)
class Skip(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Stutter(Stmt):
    """`stutter;`: a step that changes nothing, so the process may rest here for ever."""


@dataclass(frozen=True, slots=True)
class Fair(Stmt):
    """`fair S` / `strongly fair S`: S's first step is an action with fairness of its own."""

    strong: bool
    stmt: Stmt


@dataclass(frozen=True, slots=True)
class Return(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class CallStmt(Stmt):
    call: Call


# ---- declarations --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decl:
    span: Span = field(compare=False)
    name: str


@dataclass(frozen=True, slots=True)
class ModelDecl(Decl):
    pass


@dataclass(frozen=True, slots=True)
class MemoryDecl(Decl):
    """`memory sc;` or `memory tso;`, optionally with a store-buffer bound: `memory tso(3);`."""

    bound: Expr | None = None


@dataclass(frozen=True, slots=True)
class ConstDecl(Decl):
    value: Expr


@dataclass(frozen=True, slots=True)
class EnumDecl(Decl):
    members: tuple[tuple[str, Span], ...]


@dataclass(frozen=True, slots=True)
class VarDecl(Decl):
    dim: Dim | None
    type: TypeExpr
    init: Expr | None
    percpu: bool = False  # `percpu var x: T;`: one element per CPU (an array over `cpus`)
    ghost: bool = False  # `ghost var x: T;`: outside the memory model (every CPU reads its newest value)


@dataclass(frozen=True, slots=True)
class CpusDecl(Decl):
    """`cpus N;`: the model's CPUs, 0 to N-1 (execution contexts)."""

    count: Expr


@dataclass(frozen=True, slots=True)
class PreemptionsDecl(Decl):
    """`preemptions K;`: the preemption bound of context bounding."""

    bound: Expr


@dataclass(frozen=True, slots=True)
class Notifier:
    """`on sched_out { ... }` / `on sched_in { ... }` inside a thread: a preempt notifier."""

    span: Span = field(compare=False)
    name: str
    body: Block


@dataclass(frozen=True, slots=True)
class WaitQueueDecl(Decl):
    dim: Dim | None


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class InlineDecl(Decl):
    params: tuple[str, ...]
    body: Block


@dataclass(frozen=True, slots=True)
class Param:
    span: Span = field(compare=False)
    name: str
    type: TypeExpr | None


@dataclass(frozen=True, slots=True)
class FnDecl(Decl):
    params: tuple[Param, ...]
    result: TypeExpr | None
    body: Expr


@dataclass(frozen=True, slots=True)
class InvariantDecl(Decl):
    cond: Expr


@dataclass(frozen=True, slots=True)
class ReachableDecl(Decl):
    """`reachable NAME: cond;` (or `sometimes`): some reachable state satisfies cond, the
    way `expect violated` states that a bug must show."""

    cond: Expr


@dataclass(frozen=True, slots=True)
class FinalDecl(Decl):
    """`final NAME: cond;`: cond holds in every final state (no process can move, all at a
    valid end, every store buffer empty). Litmus tests state their outcome this way."""

    cond: Expr


@dataclass(frozen=True, slots=True)
class PropertyDecl(Decl):
    """`always (P -> eventually Q)`, or `always eventually Q` (then `trigger` is None)."""

    trigger: Expr | None
    goal: Expr


@dataclass(frozen=True, slots=True)
class ExpectDecl:
    span: Span = field(compare=False)
    violated: tuple[tuple[str, Span], ...]


@dataclass(frozen=True, slots=True)
class Override:
    span: Span = field(compare=False)
    name: str
    value: Expr


@dataclass(frozen=True, slots=True)
class VariantDecl(Decl):
    overrides: tuple[Override, ...]
    expects: tuple[ExpectDecl, ...]
    memory: tuple[MemoryDecl, ...] = ()  # `memory tso;` inside the braces (at most one)


@dataclass(frozen=True, slots=True)
class LemmaDecl(Decl):
    params: tuple[Param, ...]
    body: Expr


@dataclass(frozen=True, slots=True)
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
