"""Execution contexts in the resolver: `cpus N;`, `preemptions K;`, `percpu var`, a
thread's `on cpu` and preempt notifiers, interrupt handlers, and the arguments of the
context primitives (an interrupt's name, a per-CPU variable). What they mean is not
decided here: checker/semantics/contexts.py lowers them to state, guards and steps.
"""

from __future__ import annotations

import dataclasses

from ..front import ast
from .. import model as m
from ..semantics.primitives import BUILTINS, Arg, Cls, CtxOp
from ..base.errors import Span, SpecError, did_you_mean
from .base import Ctx, Shared

MAX_CPUS = 8
MAX_PREEMPTIONS = 8
#: the preemption bound when a model has a preemptible thread and says nothing
DEFAULT_PREEMPTIONS = 2


class Contexts(Shared):
    """The declarations of execution contexts; the rest of the resolver asks `self.cpus`."""

    def _contexts_header(self, preemptions_override: int | None | str) -> None:
        decls = self.spec.of(ast.CpusDecl)
        self.cpus = None
        if len(decls) > 1:
            raise SpecError(decls[1].span, "`cpus` is declared twice", "declare the CPUs once, `cpus N;`")
        if decls:
            n = self.const_int(decls[0].count, "the number of CPUs")
            if not 1 <= n <= MAX_CPUS:
                raise SpecError(decls[0].count.span, f"a model has 1 to {MAX_CPUS} CPUs, not {n}",
                                f"`cpus N;` with N from 1 to {MAX_CPUS}")
            self.cpus = n
        self.interrupt_names = [d.name for d in self.spec.of(ast.ProcessDecl) if d.interrupt]
        self.percpu_names = {d.name for d in self.spec.of(ast.VarDecl) if d.percpu}
        # the exits guests make, `vmexit(HLT)`: numbered after the interrupts in `exit_reason`
        self.exit_reasons = []
        for call in _vmexit_calls(self.spec):
            name = call.args[0].name if len(call.args) == 1 and isinstance(call.args[0], ast.Name) else None
            if name is not None and name not in self.interrupt_names and name not in self.exit_reasons:
                self.exit_reasons.append(name)
        contexts = [d for d in self.spec.of(ast.ProcessDecl) if d.interrupt or d.cpu is not None or d.guest_of]
        bounds = self.spec.of(ast.PreemptionsDecl)
        first = (bounds[:1] or self.spec.of(ast.VarDecl)[:0] or [None])[0]
        needs_cpus = next((d for d in self.spec.items if isinstance(d, ast.VarDecl) and d.percpu), None) \
            or (contexts[0] if contexts else None) or first
        if self.cpus is None and needs_cpus is not None:
            raise SpecError(needs_cpus.span, "execution contexts need the model's CPUs",
                            "declare them first: `cpus 2;` (CPUs 0 and 1)")
        if len(bounds) > 1:
            raise SpecError(bounds[1].span, "`preemptions` is declared twice",
                            "declare the bound once, `preemptions K;`")
        self.preemptions = None
        if any(d.preemptible or has_region(d.body) for d in self.spec.of(ast.ProcessDecl)):
            bound: int | str = DEFAULT_PREEMPTIONS
            if bounds:
                bound = self.const_int(bounds[0].bound, "the preemption bound")
            if preemptions_override is not None:
                bound = preemptions_override
            if bound != "unbounded":
                assert isinstance(bound, int), bound  # the command line gives a number or "unbounded"
                if not 0 <= bound <= MAX_PREEMPTIONS:
                    span = bounds[0].bound.span if bounds and preemptions_override is None else Span("", 0, 0, 0, 0)
                    raise SpecError(span, f"the preemption bound is 0 to {MAX_PREEMPTIONS}, not {bound}",
                                    "each preemption a run may take multiplies the states; `--preemptions "
                                    "unbounded` drops the bound")
                self.preemptions = bound

    def _thread_locals(self, d: ast.ProcessDecl, locals_: dict) -> None:
        """A thread's `cpu`, the CPU it runs on: a local, so that `vcpu.cpu` reads in
        properties and traces show it (contexts.py keeps it up to date)."""
        if d.cpu is None or d.interrupt:
            return
        if "cpu" in locals_:
            raise SpecError(locals_["cpu"].span, f"thread '{d.name}' declares 'cpu', the CPU it runs on",
                            "rename the local; `cpu` (or `smp_processor_id()`) reads the thread's CPU")
        assert d.cpu_span is not None, "the parser spans every `on cpu`"
        sym = m.VarSym("cpu", m.IntT(0, self._cpus() - 1), m.Scope.LOCAL, d.cpu_span, ((0,),), d.name)
        locals_["cpu"] = sym
        self.read_locals.add(id(sym))

    def _percpu_decl(self, d: ast.VarDecl) -> ast.VarDecl:
        """`percpu var x: T` is `var x[cpus]: T`: element c is CPU c's copy."""
        count = ast.Number(d.span, self._cpus())
        return dataclasses.replace(d, dim=ast.Dim(d.span, count, None, None))

    def _process_context(self, d: ast.ProcessDecl, count: int | None, ctx: Ctx) -> m.ProcessContext | None:
        region = has_region(d.body)
        if region is not None and (d.interrupt or d.cpu is None or d.preemptible):
            raise SpecError(region.span, f"a `preemptible` region in '{d.name}', which is "
                            + ("already preemptible everywhere" if d.preemptible and not d.interrupt
                               else "no thread"),
                            "only a thread (`process NAME on cpu 0 { ... }`) has preemptible regions"
                            if d.interrupt or d.cpu is None else "drop the region, or the `preemptible` before `process`")
        if d.guest_of is not None:
            return self._guest_context(d, count)
        if not d.interrupt and d.cpu is None:
            if d.preemptible:
                raise SpecError(d.span, f"preemptible process '{d.name}' runs on no CPU",
                                "only a thread is preempted: `preemptible process NAME on cpu 0 { ... }`")
            if d.notifiers:
                raise SpecError(d.notifiers[0].span, f"process '{d.name}' is not a thread: it has no notifiers",
                                "declare where it runs: `process NAME on cpu 0 { ... }`")
            return None
        instances = range(count or 1)
        if d.interrupt and d.cpu is None:
            if count is None:
                raise SpecError(d.span, f"interrupt '{d.name}' is bound to no CPU",
                                "write `interrupt NAME on cpu 0 { ... }`, or `interrupt NAME[N]`: one per CPU 0..N-1")
            assert d.dim is not None, "a process array has its dimension"
            cpus = tuple(instances)
            where = d.dim.span
        else:
            assert d.cpu is not None and d.cpu_span is not None, "a thread, or a handler on a CPU"
            where = d.cpu_span
            x = self.expr(d.cpu, dataclasses.replace(ctx, what="a CPU"))
            cpus = tuple(_cpu_value(x, i) for i in instances)
        ncpus = self._cpus()
        for c in cpus:
            if not 0 <= c < ncpus:
                raise SpecError(where, f"CPU {c} is not one of the model's CPUs 0..{ncpus - 1}",
                                f"`cpus {ncpus};` declares CPUs 0 to {ncpus - 1}")
        kind = m.ContextKind.INTERRUPT if d.interrupt else m.ContextKind.THREAD
        notes: dict[str, tuple[m.RStmt, ...]] = {}
        for n in d.notifiers:
            if n.name in notes:
                raise SpecError(n.span, f"`on {n.name}` is declared twice",
                                "a process has one handler per event: merge the two bodies")
            inner = dataclasses.replace(ctx, effects=True, in_atomic=True, what=f"`on {n.name}`")
            notes[n.name] = self.stmts(n.body.body, inner)
            _check_notifier(notes[n.name], d.name, n)
        return m.ProcessContext(kind, cpus, where, d.preemptible or region is not None, notes.get("sched_out", ()),
                                notes.get("sched_in", ()), d.hrtimer, regions=region is not None,
                                posted=d.posted, pinned=d.pinned, clock=self._timer_clock(d))

    def _timer_clock(self, d: ast.ProcessDecl) -> str | None:
        """A timed hrtimer's clock (`hrtimer T ... clock C`): a global ghost integer, the
        hardware's time (the guest TSC, a clock event device), which the model advances."""
        if d.clock is None:
            return None
        span = d.clock_span or d.span
        sym = self.globals.get(d.clock)
        if sym is None:
            raise SpecError(span, f"hrtimer '{d.name}' runs on clock '{d.clock}', which is no global variable",
                            did_you_mean(d.clock, list(self.globals))
                            or f"declare the clock, `ghost var {d.clock}: 0..3 = 0;`, and a process that advances it")
        if not m.is_intlike(sym.type):
            raise SpecError(span, f"the clock '{d.clock}' of hrtimer '{d.name}' is {sym.type.describe()}, not a time",
                            f"a clock is an integer that only goes up: `ghost var {d.clock}: 0..3 = 0;`")
        if not sym.ghost:
            raise SpecError(span, f"the clock '{d.clock}' of hrtimer '{d.name}' is a `var`, in the memory model",
                            f"a clock is the hardware's (rdtsc, the clock event device), read outside the memory "
                            f"model: declare it `ghost var {d.clock}: ...`")
        return d.clock

    def _guest_context(self, d: ast.ProcessDecl, count: int | None) -> m.ProcessContext:
        """`guest G of T`: T's guest code, on T's CPU (LANGUAGE.md, "Guest mode")."""
        span = d.guest_of_span or d.span
        threads = {t.name: t for t in self.spec.of(ast.ProcessDecl) if t.cpu is not None and not t.interrupt}
        if count is not None:
            raise SpecError(d.span, f"guest '{d.name}' is an array", "a guest belongs to one vCPU thread: "
                            f"declare one guest per thread, `guest {d.name} of THREAD {{ ... }}`")
        t = threads.get(d.guest_of)
        if t is None:
            raise SpecError(span, f"guest '{d.name}' of '{d.guest_of}', which is no thread",
                            did_you_mean(d.guest_of or "", list(threads))
                            or "a guest runs on its vCPU thread's CPU: declare `process vcpu on cpu 0 { ... }`")
        if self.process_counts[t.name]:
            raise SpecError(span, f"guest '{d.name}' of the thread array '{t.name}': not supported yet",
                            "give the guest a single thread, `process vcpu on cpu 0 { ... }`")
        others = [g for g in self.spec.of(ast.ProcessDecl) if g.guest_of == d.guest_of and g is not d]
        if others and others[0].span.line < d.span.line:
            raise SpecError(d.span, f"thread '{d.guest_of}' already has a guest, '{others[0].name}'",
                            "a vCPU runs one guest: merge the two bodies")
        return m.ProcessContext(m.ContextKind.GUEST, (), span=span, vcpu=t.name)

    def _context_arg(self, kind: Arg, a: ast.Expr, ctx: Ctx, fname: str) -> m.TExpr:
        """An interrupt's name (as its index among the interrupts), an exit reason (an
        interrupt's, or after them a guest-made exit's) or a per-CPU variable."""
        if kind is Arg.EXIT:
            name = a.name if isinstance(a, ast.Name) else None
            if fname == "vmexit" and name in self.interrupt_names:
                raise SpecError(a.span, f"'{name}' is an interrupt: its VM exit is the CPU's, not the guest's",
                                "raise it (`send_IPI`, `raise_irq`) and the vCPU thread's `guest_enter()` returns; "
                                "`vmexit` names an exiting instruction: `vmexit(HLT)`")
            if name in self.interrupt_names:
                return m.Const(a.span, m.INT, self.interrupt_names.index(name))
            if name in self.exit_reasons:
                return m.Const(a.span, m.INT, len(self.interrupt_names) + self.exit_reasons.index(name))
            raise SpecError(a.span, f"'{fname}' needs an exit reason here: an interrupt's name, or one a guest "
                            "makes with `vmexit(...)`",
                            did_you_mean(name or "", self.interrupt_names + self.exit_reasons)
                            or "a guest exits with `vmexit(HLT)`; a host interrupt's name is its exit's reason")
        if kind is Arg.IRQ:
            name = a.name if isinstance(a, ast.Name) else None
            if name not in self.interrupt_names:
                raise SpecError(a.span, f"'{fname}' needs an interrupt's name here",
                                did_you_mean(name or "", self.interrupt_names)
                                or "declare one: `interrupt NAME on cpu 0 { ... }`")
            return m.Const(a.span, m.INT, self.interrupt_names.index(name))
        x = self.expr(a, ctx, lvalue=True)
        if not isinstance(x, m.Var) or x.sym.name not in self.percpu_names or x.sym.scope is not m.Scope.GLOBAL:
            raise SpecError(a.span, f"'{fname}' needs a per-CPU variable here",
                            "declare one: `percpu var x: 0..3 = 0;`")
        return x


    def context_global(self, name: str) -> m.VarSym | None:
        """The execution-context state named `name` as traces print it (`irqs_off[c]`,
        `in_irq[c]`, `curr[c]`, `pending_H`, `in_flight_H`, `armed_T`, `expires_T`, `preemptions`), typed as
        semantics/contexts.py makes it: a stand-in that the lowering replaces with the
        state itself. None when the model has no such state."""
        if self.cpus is None:
            return None
        n = self.cpus
        decls = {d.name: d for d in self.spec.of(ast.ProcessDecl)}
        per_cpu = lambda elem: m.ArrayT(elem, 0, n - 1, None)  # noqa: E731
        typ: m.Type | None = None
        if name in ("irqs_off", "in_irq", m.GUEST_MODE):
            typ = per_cpu(m.BOOL)
        elif name == "curr":
            threads = 0
            for d in decls.values():
                if d.cpu is not None and not d.interrupt:
                    threads += int(self.process_counts[d.name] or 1)
            typ = per_cpu(m.IntT(0, threads))
        elif name == "preemptions" and self.preemptions is not None:
            typ = m.IntT(0, self.preemptions)
        else:
            irq = next((d for d in decls.values() if d.interrupt and name in (m.pending_name(d.name),
                                                                             m.in_flight_name(d.name),
                                                                             m.armed_name(d.name) if d.hrtimer else None,
                                                                             m.timer_cpu_name(d.name) if d.pinned else None,
                                                                             m.expires_name(d.name) if d.clock else None)),
                       None)
            if irq is not None and irq.pinned and name == m.timer_cpu_name(irq.name):
                typ = m.IntT(0, n - 1)
            elif irq is not None and irq.clock and name == m.expires_name(irq.name):
                clock = self.globals.get(irq.clock)
                typ = clock.type if clock is not None else None
            elif irq is not None:
                typ = per_cpu(m.BOOL) if name.startswith(("pending_", "in_flight_")) \
                    and self.process_counts[irq.name] else m.BOOL
        if typ is None:
            return None
        return m.VarSym(name, typ, m.Scope.GLOBAL, self.spec.of(ast.CpusDecl)[0].span, ((0,),))

    def _cpus(self) -> int:
        """The model's CPUs, for a construct that needs them (_contexts_header refused it
        in a model without `cpus`)."""
        assert self.cpus is not None, "a context construct in a model without `cpus`"
        return self.cpus

    def context_local(self, proc: m.Process, name: str) -> m.VarSym:
        """A thread's `preempt_count`, `asleep` or `in_region`, as a property reads it: a
        stand-in, like `context_global`'s (the lowering says when the thread has none)."""
        typ = m.IntT(0, m.MAX_PREEMPT_DEPTH) if name == "preempt_count" else m.BOOL
        if name == "exit_reason":  # 0: none yet, k: the k-th interrupt declared, then the guests' exits
            typ = m.IntT(0, len(self.interrupt_names) + len(self.exit_reasons))
        return m.VarSym(name, typ, m.Scope.LOCAL, proc.span, ((0,),), proc.name)


def _cpu_value(x: m.TExpr, i: int) -> int:
    """The CPU of instance i: a constant, or an expression of `self`."""
    if isinstance(x, m.Const):
        return x.value
    if isinstance(x, m.SelfE):
        return i
    if isinstance(x, m.Bin) and x.op in ("+", "-", "*", "/", "%"):
        a, b = _cpu_value(x.left, i), _cpu_value(x.right, i)
        return {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0, "%": a % b if b else 0}[x.op]
    raise SpecError(x.span, "a thread's CPU is a constant or an expression of `self`",
                    "write `on cpu 0`, or `on cpu self` in a process array")


#: what a notifier may not call: it runs inside the scheduler (kernel/sched/core.c runs the
#: preempt notifiers with the runqueue lock held), as a step of its own, not as the task
_BLOCKING = (Cls.SCHEDULE, Cls.WQ_ADD, Cls.WQ_REMOVE)


def _check_notifier(body, proc: str, n: ast.Notifier) -> None:
    """A notifier is straight-line code run by the scheduler in the thread's name: it may
    read the thread's locals but not write them (they are the thread's, not the scheduler's)."""
    for s in m.walk_statements(body):
        target = s.target if isinstance(s, m.SAssign) else None
        if target is not None and isinstance(target, (m.Var, m.Elem)) and target.sym.scope is m.Scope.LOCAL:
            raise SpecError(s.span, f"`on {n.name}` writes {proc}'s local '{target.sym.name}'",
                            "a notifier runs in the scheduler: it may write globals and per-CPU variables")
        if isinstance(s, m.SEval) and BUILTINS[s.call.name].cls in _BLOCKING:
            raise SpecError(s.call.span, f"`on {n.name}` calls '{s.call.name}', which "
                            + ("blocks" if BUILTINS[s.call.name].cls is Cls.SCHEDULE else "changes the task's wait state"),
                            "a notifier runs inside the scheduler, in one step, and cannot sleep or wait: "
                            f"move '{s.call.name}' into {proc}'s body")
        call = s.call if isinstance(s, m.SEval) else s.value if isinstance(s, m.SAssign) else None
        if isinstance(call, m.Builtin) and BUILTINS[call.name].ctx is CtxOp.TIMER_CANCEL:
            raise SpecError(call.span, f"`on {n.name}` calls 'hrtimer_cancel', which waits while the callback runs",
                            "a notifier runs in one step and cannot wait: use `hrtimer_try_to_cancel` (-1 while "
                            f"the callback runs), or move the cancel into {proc}'s body")
        if isinstance(s, (m.SLoop, m.SChoose, m.SLabeled, m.SGoto, m.SAwait)):
            raise SpecError(s.span, f"`on {n.name}` is straight-line code, run as one step",
                            "use assignments, calls, `if` and `while`; no `await`, `loop`, `choose` or labels")



def _calls_named(x, name: str):
    """Every `name(...)` call in an AST subtree."""
    if isinstance(x, (tuple, list)):
        for y in x:
            yield from _calls_named(y, name)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        if isinstance(x, ast.Call) and x.name == name:
            yield x
        for f in dataclasses.fields(x):
            v = getattr(x, f.name)
            if isinstance(v, (tuple, list)) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
                yield from _calls_named(v, name)


def _vmexit_calls(spec: ast.Spec) -> list[ast.Call]:
    """The spec's `vmexit(...)` calls. Every variant of a spec is resolved from the same
    parsed Spec, so the whole-tree walk is made once per Spec object: the cache holds
    the Spec itself beside its answer, so an entry is used only for that very object."""
    cached = _VMEXIT_CALLS.get(id(spec))
    if cached is None or cached[0] is not spec:
        if len(_VMEXIT_CALLS) >= 8:
            _VMEXIT_CALLS.clear()
        cached = _VMEXIT_CALLS[id(spec)] = (spec, list(_calls_named(spec.items, "vmexit")))
    return cached[1]


_VMEXIT_CALLS: dict[int, tuple[ast.Spec, list[ast.Call]]] = {}


def has_region(body):
    """The first `preemptible { ... }` region in an AST body, or None."""
    for s in body if isinstance(body, (tuple, list)) else (body,):
        if isinstance(s, ast.Preemptible):
            return s
        if dataclasses.is_dataclass(s) and not isinstance(s, type):
            for f in dataclasses.fields(s):
                v = getattr(s, f.name)
                if isinstance(v, (ast.Stmt, ast.Block)) or (isinstance(v, tuple) and v and isinstance(v[0], (ast.Stmt, ast.Block))):
                    found = has_region(v)
                    if found is not None:
                        return found
    return None
