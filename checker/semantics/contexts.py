"""Execution contexts -> plain state, guards and steps: the one lowering every back end
inherits (LANGUAGE.md, "Execution contexts").

A model with `cpus N;` gets hidden state, as ordinary variables, so that the explicit
engine, bmc/induction, the Promela twin and the reductions' footprints see it like any
other variable:

- per CPU c: `irqs_off[c]` (local_irq_disable .. enable), `in_irq[c]` (a handler runs
  there) and `curr[c]` (the thread on it: 0 none, k the k-th thread);
- per interrupt: `pending_H` (an array for one handler per CPU);
- per thread (locals, so that `vcpu.cpu` reads in properties and shows in traces):
  `cpu` (where it runs), `preempt_count` (preempt_disable, get_cpu, spin locks) when it
  is preemptible, `asleep` when it calls schedule(), `in_region` when it is preemptible
  only inside its `preemptible { ... }` regions (set on entry, cleared on exit);
- `preemptions`: how many a run has taken, when the bound is finite.

`lower(model)` rewrites the resolved model before the IR is built: each context
primitive becomes assignments to that state, a handler becomes a process that loops
over entry (its interrupt pending and unmasked on an idle CPU), its body and exit, and
preemption is a generated `unfair` process, `scheduler`, whose steps each take one
preemptible thread off its CPU, running its `on sched_out` notifier. `finish(procs)`
then works on the built processes: every step of a thread gets the guard "this thread
is current on its CPU, no handler runs there, and no unmasked interrupt is pending"
(so a pending unmasked interrupt is taken before the CPU's next process-context step),
a thread's last step frees its CPU, and at each pc of a thread a sched-in step puts it
back on a free CPU (any CPU for a preemptible thread: migration), running `on sched_in`;
at a `schedule()` a step takes the thread off its CPU (`asleep`, running `on sched_out`),
and the woken thread returns from schedule() off its CPU, to be put back as above.
Calling schedule() in atomic context (interrupts off, preemption disabled, a spin lock
held, or in a handler) is the kernel's "BUG: scheduling while atomic": the built-in
assertion `scheduling_while_atomic` fails there, with a trace, rather than the thread
sleeping with its CPU's interrupts still off.
Sched-in steps belong to the thread, so weak fairness makes them eventual; preemption
belongs to an unfair process, so fairness never forces it.

Under `memory tso` the context state is outside the memory model (ghost), and x86's
drains are explicit: at each pc a thread has a fence step that sets `sb_drained[c]`, which
a handler's entry and a preemption wait for when a thread is on CPU c, and which the
thread's next step clears; handler entry and exit, schedule(), sched-in and the raising
primitives are fences (LANGUAGE.md, "Under x86-TSO").

Under `memory lkmm` views attach to CPUs (memory/lkmm.py), so a handler is in program
order with what it interrupted without anything here; a preemption, schedule() going
off its CPU and a sched-in carry an smp_mb() (the switch's smp_mb__after_spinlock()),
and an IPI or device interrupt is raised after one (LANGUAGE.md, "Under lkmm").
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

from .. import model as m
from .primitives import BUILTINS, Arg, Cls, CtxOp
from ..base.errors import Span, SpecError
from ..base.record import record

HIDDEN_GLOBALS = m.CONTEXT_GLOBALS
SCHEDULER = "scheduler"
MAX_PREEMPT_DEPTH = m.MAX_PREEMPT_DEPTH
IRQ_IDLE = m.IRQ_IDLE
DRAINED = "sb_drained"  # tso: per CPU, its thread's store buffer is empty for an interrupt or preemption
SLEEP_IN_ATOMIC = "scheduling_while_atomic"
GUEST_MODE = m.GUEST_MODE  # per CPU: it runs a vCPU thread's guest (VMX non-root)
EXIT_REASON = "exit_reason"  # per guest-entering thread: 1 + the interrupt that caused its last VM exit
VM_EXIT = "VM exit"  # the trace text of a guest-entering thread's exit step
VM_ENTRY = "VM entry (interrupts on)"
VMEXIT = "vmexit"  # `vmexit_T`: the exit T's guest made, until T's exit step reads it
GUEST_HALTED = "halted"  # a guest's label where it waits halted in guest mode: not a valid end
SCHED_IN = "sched in"  # the text of a thread's sched-in steps (engines/reduce/footprint.py finds them by it)


@record
class _Thread:
    proc: m.Process
    index: int  # instance
    id: int  # 1.. (0 in `curr` is no thread)


def lower(model: m.Model) -> m.Model:
    """The model with its contexts lowered; a model without `cpus` is returned as is."""
    if model.cpus is None:
        return model
    return _Lowering(model).run()


class _Lowering:
    def __init__(self, model: m.Model):
        assert model.cpus is not None, "only a model with `cpus` has contexts to lower"
        self.model = model
        self.n: int = model.cpus
        self.texts: list[tuple[tuple[str, Span], str]] = []  # ((process, span), trace text): Model.step_texts
        span = next((p.context.span for p in model.processes if p.context), model.processes[0].span)
        self.span = span
        self.tso = model.memory == "tso"
        self.lkmm = model.memory == "lkmm"
        taken = {g.name for g in model.globals} | {p.name for p in model.processes}
        self.irqs = [p for p in model.processes if p.context and p.context.kind is m.ContextKind.INTERRUPT]
        self.threads: list[_Thread] = []
        for p in model.processes:
            if p.context and p.context.kind is m.ContextKind.THREAD:
                for i in range(p.instances):
                    self.threads.append(_Thread(p, i, len(self.threads) + 1))
        self.preemptible = [t for t in self.threads if _ctx(t.proc).preemptible]
        pending_names = [m.pending_name(h.name) for h in self.irqs]
        self.timers = [h for h in self.irqs if _ctx(h).hrtimer]
        flight_names = [n for h in self.irqs for n in (m.in_flight_name(h.name), m.delivery_name(h.name))]
        timer_names = flight_names + [m.armed_name(h.name) for h in self.timers] + [f"{h.name}_expiry" for h in self.timers] \
            + [m.timer_cpu_name(h.name) for h in self.timers if _ctx(h).pinned] \
            + [m.expires_name(h.name) for h in self.timers if _ctx(h).clock]
        for name in HIDDEN_GLOBALS + tuple(pending_names) + tuple(timer_names) \
                + ((SCHEDULER,) if self.preemptible else ()):
            if name in taken:
                raise SpecError(span, f"'{name}' names the execution-context state in a model with `cpus`",
                                f"rename the model's '{name}'")
        for h in self.irqs:
            if h.count is not None and h.count != self.n:
                raise SpecError(_ctx(h).span, f"interrupt '{h.name}[{h.count}]' needs one handler per CPU",
                                f"the model has {self.n} CPUs: write `interrupt {h.name}[{self.n}]`")
        arr = lambda elem: m.ArrayT(elem, 0, self.n - 1, None)  # noqa: E731
        # the CPU's own state, not memory: never in a store buffer (a `ghost var`)
        self.irqs_off = m.VarSym("irqs_off", arr(m.BOOL), m.Scope.GLOBAL, span, ((0,),) * self.n, ghost=True)
        self.in_irq = m.VarSym("in_irq", arr(m.BOOL), m.Scope.GLOBAL, span, ((0,),) * self.n, ghost=True)
        first = [next((t.id for t in self.threads if _ctx(t.proc).cpus[t.index] == c), 0) for c in range(self.n)]
        self.curr = m.VarSym("curr", arr(m.IntT(0, len(self.threads))), m.Scope.GLOBAL, span,
                             tuple((v,) for v in first), ghost=True)
        # guest mode, when a thread enters the guest: per CPU, and per such thread why it last exited
        guests = [p for p in {t.proc.name: t.proc for t in self.threads}.values()
                  if _calls(p.body, lambda q: q.ctx is CtxOp.GUEST_ENTER)]
        if guests and GUEST_MODE in taken:
            raise SpecError(span, f"'{GUEST_MODE}' names the execution-context state in a model with `cpus`",
                            f"rename the model's '{GUEST_MODE}'")
        self.guest_mode = m.VarSym(GUEST_MODE, arr(m.BOOL), m.Scope.GLOBAL, span, ((0,),) * self.n, ghost=True) \
            if guests else None
        reasons = len(self.irqs) + len(model.exit_reasons)
        self.exit_sym = {p.name: m.VarSym(EXIT_REASON, m.IntT(0, reasons), m.Scope.LOCAL, _ctx(p).span,
                                          ((0,),), p.name) for p in guests}
        # `guest G of T`: T's guest code; its exits reach T through `vmexit_T` (0: none)
        self.guest_of = {p.context.vcpu: p for p in model.processes
                         if p.context and p.context.kind is m.ContextKind.GUEST}
        self.vmexit: dict[str, m.VarSym] = {}
        for t, gp in self.guest_of.items():
            if t not in self.exit_sym:
                raise SpecError(_ctx(gp).span, f"guest '{gp.name}' of '{t}', which never enters the guest",
                                f"the guest runs only in guest mode: call `guest_enter()` in '{t}'")
            name = f"{VMEXIT}_{t}"
            if name in taken:
                raise SpecError(span, f"'{name}' names the execution-context state in a model with `cpus`",
                                f"rename the model's '{name}'")
            self.vmexit[t] = m.VarSym(name, m.IntT(0, reasons), m.Scope.GLOBAL, _ctx(gp).span, ((0,),), ghost=True)
        self.entries = 0
        # tso: the thread on CPU c has drained its store buffer for an interrupt or a preemption
        self.drained = m.VarSym(DRAINED, arr(m.BOOL), m.Scope.GLOBAL, span, ((0,),) * self.n, ghost=True) \
            if self.tso else None
        self.pending: dict[str, m.VarSym] = {}
        for h, name in zip(self.irqs, pending_names):
            typ = arr(m.BOOL) if h.count is not None else m.BOOL
            self.pending[h.name] = m.VarSym(name, typ, m.Scope.GLOBAL, _ctx(h).span, ((0,),) * (h.count or 1),
                                            ghost=True)
        # an interrupt raised from another CPU: in flight until its delivery step (made on
        # demand, by the first raise that may be remote: `raise_on`)
        self.in_flight: dict[str, m.VarSym] = {}
        self.armed = {h.name: m.VarSym(m.armed_name(h.name), m.BOOL, m.Scope.GLOBAL, _ctx(h).span, ((0,),),
                                       ghost=True) for h in self.timers}
        # `hrtimer T[N] pinned`: the CPU whose clock base queues it, set by hrtimer_start
        self.timer_cpu = {h.name: m.VarSym(m.timer_cpu_name(h.name), m.IntT(0, self.n - 1), m.Scope.GLOBAL,
                                           _ctx(h).span, ((0,),), ghost=True)
                          for h in self.timers if _ctx(h).pinned}
        # a timed hrtimer (`clock C`): its expiry time on C, set by hrtimer_start(T, t)
        self.clock = {h.name: next(g for g in model.globals if g.name == _ctx(h).clock)
                      for h in self.timers if _ctx(h).clock}
        self.expires = {name: m.VarSym(m.expires_name(name), c.type, m.Scope.GLOBAL, c.span,
                                       ((_lowest(c.type),),), ghost=True) for name, c in self.clock.items()}
        self.bound = model.preemptions if self.preemptible else None
        self.budget: m.VarSym | None = None
        if self.preemptible and self.bound is not None:
            self.budget = m.VarSym("preemptions", m.IntT(0, self.bound), m.Scope.GLOBAL, span, ((0,),), ghost=True)
        # per-thread locals
        self.cpu_sym: dict[str, m.VarSym] = {}
        self.pc_sym: dict[str, m.VarSym] = {}
        self.asleep_sym: dict[str, m.VarSym] = {}
        self.region_sym: dict[str, m.VarSym] = {}
        for p in {t.proc.name: t.proc for t in self.threads}.values():
            ctx = _ctx(p)
            if ctx.regions:
                self.region_sym[p.name] = m.VarSym("in_region", m.BOOL, m.Scope.LOCAL, ctx.span, ((0,),), p.name)
            for name in m.CONTEXT_LOCALS:
                if any(v.name == name for v in p.locals):
                    raise SpecError(ctx.span, f"thread '{p.name}' declares '{name}', the name of its "
                                    "execution-context state", f"rename the local '{name}'")
            # made by the resolver; the first CPU differs per instance: `initial_cpus` sets each
            self.cpu_sym[p.name] = next(v for v in p.locals if v.name == "cpu")
            sleeps = _calls(p.body, lambda q: q.cls is Cls.SCHEDULE)
            if ctx.preemptible or sleeps:  # a sleeper's count: schedule() checks it is 0
                self.pc_sym[p.name] = m.VarSym("preempt_count", m.IntT(0, MAX_PREEMPT_DEPTH), m.Scope.LOCAL,
                                               ctx.span, ((0,),), p.name)
            if sleeps:  # off its CPU while it sleeps
                self.asleep_sym[p.name] = m.VarSym("asleep", m.BOOL, m.Scope.LOCAL, ctx.span, ((0,),), p.name)

    # -- expressions
    def g(self, sym: m.VarSym) -> m.Var:
        return m.Var(self.span, sym.type, sym)

    def at(self, sym: m.VarSym, index: m.TExpr) -> m.Elem:
        assert isinstance(sym.type, m.ArrayT), sym
        return m.Elem(index.span, sym.type.elem, sym, index)

    def in_guest(self, cpu: m.TExpr) -> m.Elem:
        """`guest_mode[cpu]`, in a model whose threads enter the guest."""
        assert self.guest_mode is not None, "guest_mode exists where a thread calls guest_enter()"
        return self.at(self.guest_mode, cpu)

    def sb(self, cpu: m.TExpr) -> m.Elem:
        """tso: `sb_drained[cpu]`, the thread on CPU `cpu` has an empty store buffer."""
        assert self.drained is not None, "sb_drained exists under tso only"
        return self.at(self.drained, cpu)

    def pend(self, cpu: m.TExpr) -> m.TExpr:
        """Some interrupt is pending on CPU `cpu`."""
        terms = [self.pending_on(h, cpu) for h in self.irqs]
        return _or(*terms) if terms else _c(0, cpu.span, m.BOOL)

    def runnable_here(self, cpu: m.TExpr) -> m.TExpr:
        """Process context may run on `cpu`: no handler runs there, none is due."""
        return _and(_not(self.at(self.in_irq, cpu)), _or(self.at(self.irqs_off, cpu), _not(self.pend(cpu))))

    def thread_id(self, p: m.Process, span: Span) -> m.TExpr:
        base = next(t.id for t in self.threads if t.proc.name == p.name)
        if p.count is None:
            return _c(base, span)
        return m.Bin(span, m.INT, "+", _c(base, span), m.SelfE(span, m.IntT(0, p.count - 1)))

    # -- the model
    def run(self) -> m.Model:
        procs: list[m.Process] = []
        for p in self.model.processes:
            ctx = p.context
            if ctx is None:
                procs.append(dataclasses.replace(p, body=self.stmts(p.body, _Where(p, None, None))))
            elif ctx.kind is m.ContextKind.THREAD:
                where = _Where(p, m.Var(ctx.span, self.cpu_sym[p.name].type, self.cpu_sym[p.name]),
                               self.pc_sym.get(p.name))
                extra = tuple(d[p.name] for d in (self.pc_sym, self.asleep_sym, self.region_sym, self.exit_sym)
                              if p.name in d)
                body = self.stmts(p.body, where)
                out = self.stmts(ctx.sched_out, where)
                inn = self.stmts(ctx.sched_in, where)
                procs.append(dataclasses.replace(p, locals=p.locals + extra, body=body,
                                                 context=dataclasses.replace(ctx, sched_out=out, sched_in=inn)))
            elif ctx.kind is m.ContextKind.GUEST:
                for a in m.walk_statements(p.body):
                    if isinstance(a, m.SAtomic):
                        _exit_last(a.body)
                procs.append(dataclasses.replace(p, body=self.stmts(p.body, _Where(p, self.guest_cpu(p), None))))
            else:
                procs.append(self.handler(p))
        procs += [self.expiry(h) for h in self.timers]
        procs += [self.delivery(h) for h in self.irqs if h.name in self.in_flight]
        if self.preemptible:
            procs.append(self.scheduler())
        hidden = (self.irqs_off, self.in_irq, self.curr) + tuple(self.pending.values()) \
            + tuple(self.armed.values()) + tuple(self.timer_cpu.values()) + tuple(self.expires.values()) \
            + ((self.budget,) if self.budget else ()) \
            + ((self.drained,) if self.drained else ()) + ((self.guest_mode,) if self.guest_mode else ()) \
            + tuple(self.vmexit.values()) + tuple(self.in_flight[h.name] for h in self.irqs if h.name in self.in_flight)
        props = tuple(self.reads(p, hidden) for p in self.model.properties)
        sleeper = next((p for p in self.model.processes if p.context and p.context.kind is not m.ContextKind.SCHEDULER
                        and _calls(p.body, lambda q: q.cls is Cls.SCHEDULE)), None)
        if sleeper is not None and all(q.name != SLEEP_IN_ATOMIC for q in props):
            props = props + (m.Property(SLEEP_IN_ATOMIC, m.PropertyKind.ASSERT, _ctx(sleeper).span),)
        return dataclasses.replace(self.model, globals=self.model.globals + hidden, processes=tuple(procs),
                                   step_texts=tuple(self.texts), properties=props)

    def reads(self, prop: m.Property, hidden: tuple[m.VarSym, ...]) -> m.Property:
        """`prop` reading the context state itself where the resolver put stand-ins for
        it (the names traces print: resolve/contexts.py)."""
        state = {s.name: s for s in hidden}
        if self.guest_mode is None:
            state.pop(GUEST_MODE, None)
        mine = {(p, s.name): s for d in (self.pc_sym, self.asleep_sym, self.region_sym, self.exit_sym)
                for p, s in d.items()}

        def real(x):
            if isinstance(x, (m.Var, m.Elem)) and x.sym.name == GUEST_MODE and self.guest_mode is None \
                    and x.sym not in self.model.globals:
                raise SpecError(x.span, f"'{GUEST_MODE}': no thread of this model enters the guest",
                                "a vCPU thread enters it with `guest_enter()`")
            if isinstance(x, (m.Var, m.Elem)) and x.sym.name.startswith("in_flight_") and x.sym.name not in state \
                    and x.sym not in self.model.globals:
                raise SpecError(x.span, f"'{x.sym.name}': interrupt '{x.sym.name[len('in_flight_'):]}' is never "
                                "raised from another CPU, so it is never in flight",
                                "an interrupt is in flight between a remote `send_IPI`/`raise_irq` and its delivery")
            if isinstance(x, (m.Var, m.Elem)) and x.sym.scope is m.Scope.GLOBAL and x.sym.name in state \
                    and x.sym is not state[x.sym.name]:
                if isinstance(x, m.Elem):  # `irqs_off[c]`: the index may read stand-ins too
                    return dataclasses.replace(x, sym=state[x.sym.name], index=_map(x.index, real))
                return dataclasses.replace(x, sym=state[x.sym.name])
            if isinstance(x, m.LocalOf) and x.sym.name in m.CONTEXT_LOCALS \
                    and all(v is not x.sym for p in self.model.processes if p.name == x.process for v in p.locals):
                sym = mine.get((x.process, x.sym.name))
                if sym is None:
                    why = {"preempt_count": "is never preempted and never calls schedule(): its count is not kept",
                           "asleep": "never calls schedule()",
                           "in_region": "has no `preemptible { ... }` region",
                           "exit_reason": "never enters the guest (`guest_enter()`)"}[x.sym.name]
                    raise SpecError(x.span, f"'{x.process}.{x.sym.name}': thread '{x.process}' {why}")
                return dataclasses.replace(x, sym=sym)
            return None

        fields = {f: _map(getattr(prop, f), real) for f in ("cond", "trigger", "goal") if getattr(prop, f) is not None}
        return dataclasses.replace(prop, **fields)

    def handler(self, p: m.Process) -> m.Process:
        ctx = _ctx(p)
        span = ctx.span
        cpu = _c(ctx.cpus[0], span) if p.count is None else m.SelfE(span, m.IntT(0, p.count - 1))
        sym = self.pending[p.name]
        pending = self.g(sym) if p.count is None else self.at(sym, cpu)
        where = _Where(p, cpu, None)
        body = self.stmts(p.body, where)
        due = _and(pending, _not(self.at(self.irqs_off, cpu)), _not(self.at(self.in_irq, cpu)))
        if self.guest_mode is not None and not ctx.posted:  # in guest mode it is a VM exit first
            due = _and(due, _not(self.at(self.guest_mode, cpu)))
        take: tuple[m.RStmt, ...] = (m.SAssign(span, pending, _c(0, span, m.BOOL)),
                                     m.SAssign(span, self.at(self.in_irq, cpu), _c(1, span, m.BOOL)))
        if self.tso:  # the thread on the CPU drained its store buffer first (`finish`)
            due = _and(due, _or(_eq(self.at(self.curr, cpu), _c(0, span)), self.sb(cpu)))
            take += (m.SAssign(span, self.sb(cpu), _c(0, span, m.BOOL)),)
        entry = m.SAtomic(span, (m.SAwait(span, due),) + take)
        leave = m.SAssign(p.end_span, self.at(self.in_irq, cpu), _c(0, span, m.BOOL))
        self.texts.append(((p.name, span), f"irq entry: {p.name}"))
        self.texts.append(((p.name, p.end_span), f"irq exit: {p.name}"))
        loop = m.SLabeled(span, IRQ_IDLE, m.SLoop(span, (entry,) + body + (leave,)))
        return dataclasses.replace(p, body=(loop,), labels=p.labels | {IRQ_IDLE})

    def expiry(self, h: m.Process) -> m.Process:
        """The timer hardware of hrtimer `h`: while armed it may expire, raising `h`'s
        interrupt; weakly fair, so an armed timer eventually fires. An unpinned hrtimer
        (`hrtimer T[N]`) was queued on a CPU the kernel chose (get_nohz_timer_target: a
        busy housekeeping CPU): any, one expiry process per CPU, which nothing observes
        before the callback runs there. A `pinned` one expires only on the CPU that
        queued it (`cpu_T`)."""
        span = _ctx(h).span
        armed = self.g(self.armed[h.name])
        cpu = m.SelfE(span, m.IntT(0, h.count - 1)) if h.count is not None else None
        pending = self.g(self.pending[h.name]) if cpu is None else self.at(self.pending[h.name], cpu)
        due: m.TExpr = armed
        if h.name in self.clock:  # a timed one: only once its clock has reached the expiry
            due = _and(due, m.Bin(span, m.BOOL, ">=", self.g(self.clock[h.name]), self.g(self.expires[h.name])))
        if h.name in self.timer_cpu and cpu is not None:
            due = _and(due, _eq(self.g(self.timer_cpu[h.name]), cpu))
        fire = m.SAtomic(span, (m.SAwait(span, due), m.SAssign(span, armed, _c(0, span, m.BOOL)),
                                m.SAssign(span, pending, _c(1, span, m.BOOL))))
        name = f"{h.name}_expiry"
        self.texts.append(((name, span), f"hrtimer {h.name} expires" + ("" if cpu is None else " here")))
        loop = m.SLabeled(span, "end_armed", m.SLoop(span, (fire,)))
        return m.Process(name, span, h.count, False, (), (loop,), frozenset({"end_armed"}), span)

    def delivery(self, h: m.Process) -> m.Process:
        """The interrupt controller's delivery of `h` raised from another CPU: while it
        is in flight it may arrive, becoming pending on its target (an IPI's message
        through the APIC bus, a device's MSI write). A process of its own and weakly
        fair, so an interrupt in flight is eventually delivered; it orders nothing of
        the raiser's (what the raise orders, it orders first: `call`)."""
        span = _ctx(h).span
        cpu = m.SelfE(span, m.IntT(0, h.count - 1)) if h.count is not None else None
        wire = self.g(self.in_flight[h.name]) if cpu is None else self.at(self.in_flight[h.name], cpu)
        pending = self.g(self.pending[h.name]) if cpu is None else self.at(self.pending[h.name], cpu)
        arrive = m.SAtomic(span, (m.SAwait(span, wire), m.SAssign(span, wire, _c(0, span, m.BOOL)),
                                  m.SAssign(span, pending, _c(1, span, m.BOOL))))
        name = m.delivery_name(h.name)
        self.texts.append(((name, span), f"interrupt {h.name} delivered" + ("" if cpu is None else " here")))
        loop = m.SLabeled(span, "end_flight", m.SLoop(span, (arrive,)))
        return m.Process(name, span, h.count, False, (), (loop,), frozenset({"end_flight"}), span)

    def raise_on(self, h: m.Process, target: m.TExpr, w: _Where, span: Span) -> m.RStmt:
        """Raising `h` on CPU `target` from where `w` runs. From that CPU itself it is
        pending at once (the local APIC takes a self-IPI without the bus, and a
        handler raising on its own CPU runs again only after it returns); from another
        CPU, or from a device or the hardware (a process on no CPU), it is in flight
        (`delivery`): the x2APIC ICR write is not serializing and the message may reach
        the target after the raiser's later stores have."""
        t = _c(1, span, m.BOOL)
        pending = self.g(self.pending[h.name]) if h.count is None else self.at(self.pending[h.name], target)
        here = self.fixed_cpu(w, span)
        if isinstance(here, m.Const) and isinstance(target, m.Const) and here.value == target.value:
            return m.SAssign(span, pending, t)
        sym = self.in_flight.get(h.name)
        if sym is None:
            typ = m.ArrayT(m.BOOL, 0, self.n - 1, None) if h.count is not None else m.BOOL
            sym = self.in_flight[h.name] = m.VarSym(m.in_flight_name(h.name), typ, m.Scope.GLOBAL, _ctx(h).span,
                                                    ((0,),) * (h.count or 1), ghost=True)
        wire = self.g(sym) if h.count is None else self.at(sym, target)
        if here is None or isinstance(here, m.Const) and isinstance(target, m.Const):
            return m.SAssign(span, wire, t)
        local = _eq(here, target)
        return m.SAtomic(span, (m.SAssign(span, pending, m.Ite(span, m.BOOL, local, t, pending)),
                                m.SAssign(span, wire, m.Ite(span, m.BOOL, local, wire, t))))

    def fixed_cpu(self, w: _Where, span: Span) -> m.TExpr | None:
        """Where `w` runs: a constant for a thread that never leaves its first CPU (one
        instance, not preemptible: a sleeper wakes on it again), else its `cpu`."""
        if w.cpu is None:
            return None
        ctx = w.proc.context
        if ctx is not None and ctx.kind is m.ContextKind.THREAD and not ctx.preemptible and w.proc.count is None \
                and w.instance is None:
            return _c(ctx.cpus[0], span)
        return w.cpu

    def guest_enter(self, span: Span, w: _Where) -> m.SInlined:
        """VM entry (interrupts on atomically, as VMLAUNCH/VMRESUME with the host's IF
        restored in guest mode) and the VM exit that a host interrupt aimed at this CPU
        causes: the thread resumes with interrupts off (acknowledge-on-exit: the handler
        runs at its local_irq_enable) and `vm_exit_by(H)` says which. Posted vectors do
        not exit: their handler runs in guest mode. The guest may run for ever: the wait
        for the exit is a valid end (`end_guest`)."""
        cpu = self.cpu_of(w, span, "guest_enter")
        if _ctx(w.proc).kind is not m.ContextKind.THREAD or w.instance is not None:
            raise SpecError(span, "'guest_enter' outside a thread's body", "a vCPU thread enters the guest")
        assert self.guest_mode is not None, "a thread that enters the guest makes guest_mode"
        t, f = _c(1, span, m.BOOL), _c(0, span, m.BOOL)
        enter = m.SAtomic(span, (m.SAssign(span, self.at(self.guest_mode, cpu), t),
                                 m.SAssign(span, self.at(self.irqs_off, cpu), f)))
        exiting = [h for h in self.irqs if not _ctx(h).posted]
        why = m.Var(span, self.exit_sym[w.proc.name].type, self.exit_sym[w.proc.name])
        reason: m.TExpr = _c(0, span)
        for h in reversed(exiting):  # the lowest-numbered pending interrupt is the reason
            reason = m.Ite(span, m.INT, self.pending_on(h, cpu), _c(self.irqs.index(h) + 1, span), reason)
        at = dataclasses.replace(span, end_col=span.end_col + 1)  # a span of its own: its own trace text
        cause = _or(*(self.pending_on(h, cpu) for h in exiting)) if exiting else f
        made = self.vmexit.get(w.proc.name)
        if made is not None:  # its guest's `vmexit(R)` left guest mode and said why
            gone = m.Bin(at, m.BOOL, "!=", self.g(made), _c(0, at))
            cause, reason = _or(cause, gone), m.Ite(at, m.INT, gone, self.g(made), reason)
        leave = m.SAtomic(at, (m.SAwait(at, cause), m.SAssign(at, why, reason))
                          + ((m.SAssign(at, self.g(made), _c(0, at)),) if made is not None else ())
                          + (m.SAssign(at, self.at(self.guest_mode, cpu), f), m.SAssign(at, self.at(self.irqs_off, cpu), t)))
        self.texts.append(((w.proc.name, span), VM_ENTRY))
        self.texts.append(((w.proc.name, at), VM_EXIT))
        self.entries += 1
        label = "end_guest" if self.entries == 1 else f"end_guest{self.entries}"
        return m.SInlined(span, "", (enter, m.SLabeled(at, label, leave)))

    def guest_cpu(self, gp: m.Process) -> m.TExpr:
        """The CPU a guest runs on: its thread's (which it follows when that migrates)."""
        t = next(p for p in self.model.processes if p.name == _ctx(gp).vcpu)
        if not _ctx(t).preemptible:
            return _c(_ctx(t).cpus[0], _ctx(gp).span)
        sym = self.cpu_sym[t.name]
        return m.LocalOf(_ctx(gp).span, sym.type, sym, t.name, None)

    def guest_exit(self, span: Span, w: _Where, reason: int) -> m.SAtomic:
        """`vmexit(R)` in a guest: the CPU leaves guest mode with interrupts off (the
        host's IF is restored at the exit, acknowledge-on-exit) and its thread's exit step
        reads R (LANGUAGE.md, "Guest mode")."""
        if w.proc.context is None or w.proc.context.kind is not m.ContextKind.GUEST:
            raise SpecError(span, f"'vmexit' outside a guest, in '{w.proc.name}'",
                            "the guest makes its exits: declare its code `guest NAME of THREAD { ... vmexit(HLT); }`; "
                            "a host thread leaves guest mode when `guest_enter()` returns")
        cpu = self.cpu_of(w, span, "vmexit")
        t, f = _c(1, span, m.BOOL), _c(0, span, m.BOOL)
        made = self.vmexit[w.proc.context.vcpu or ""]  # a guest always names its thread
        assert self.guest_mode is not None, "a guest's thread enters the guest (checked in __init__)"
        return m.SAtomic(span, (m.SAssign(span, self.g(made), _c(reason + 1, span)),
                                m.SAssign(span, self.at(self.guest_mode, cpu), f),
                                m.SAssign(span, self.at(self.irqs_off, cpu), t)))

    def pending_on(self, h: m.Process, cpu: m.TExpr) -> m.TExpr:
        """Interrupt `h` is pending on CPU `cpu`."""
        if h.count is not None:
            return self.at(self.pending[h.name], cpu)
        return _and(_eq(cpu, _c(_ctx(h).cpus[0], cpu.span)), self.g(self.pending[h.name]))

    def cancel(self, op: CtxOp, arg: m.TExpr, span: Span, name: str, target: m.TExpr | None) -> m.SAtomic:
        """hrtimer_cancel waits until the callback is not running, hrtimer_try_to_cancel
        gives -1 then (kernel/time/hrtimer.c); otherwise both disarm the timer, drop an
        expiry not yet handled, and give whether it was queued (armed or expired, not run)."""
        h = self.timer(arg, span, name)
        f = _c(0, span, m.BOOL)
        first = (_mb(span),) if self.tso else ()  # the clock base's lock: a locked instruction
        cpus = [None] if h.count is None else [_c(c, span) for c in range(h.count)]
        idle = _and(*(m.At(span, m.BOOL, h.name, c, IRQ_IDLE) for c in cpus))
        armed = self.g(self.armed[h.name])
        pending = [self.g(self.pending[h.name]) if c is None else self.at(self.pending[h.name], c) for c in cpus]
        queued = m.Ite(span, m.INT, _or(armed, *pending), _c(1, span), _c(0, span))
        off = (m.SAssign(span, armed, f),) + tuple(m.SAssign(span, p, f) for p in pending)
        if op is CtxOp.TIMER_CANCEL:
            got = () if target is None else (m.SAssign(span, target, queued),)
            return m.SAtomic(span, (m.SAwait(span, idle),) + first + got + off)
        if target is None:
            return m.SAtomic(span, first + (m.SIf(span, idle, off, ()),))
        value = m.Ite(span, m.INT, idle, queued, _c(-1, span))
        return m.SAtomic(span, first + (m.SAssign(span, target, value), m.SIf(span, idle, off, ())))

    def start(self, h: m.Process, w: _Where, span: Span, name: str, when: tuple[m.TExpr, ...]) -> m.SAtomic:
        """hrtimer_start: the timer is taken off its queue first (remove_hrtimer), so an
        expiry raised and not yet handled is dropped, then armed. A `pinned` one is
        queued on this CPU's clock base, unless its callback is running, which keeps it
        on its old base (switch_hrtimer_base, kernel/time/hrtimer.c). A timed one
        records its expiry `when` (hrtimer_start(timer, tim, HRTIMER_MODE_ABS): the
        expiry on the timer's clock; `expiry` lets it fire once the clock reaches it)."""
        f = _c(0, span, m.BOOL)
        clock = _ctx(h).clock
        if clock is None and when:
            raise SpecError(when[0].span, f"hrtimer '{h.name}' has no clock: it may expire at any moment",
                            f"declare its clock, `hrtimer {h.name} ... clock NAME {{ ... }}`, or start it "
                            f"without an expiry: `hrtimer_start({h.name})`")
        if clock is not None and not when:
            raise SpecError(span, f"hrtimer '{h.name}' runs on clock '{clock}': '{name}' needs its expiry",
                            f"write `hrtimer_start({h.name}, {clock} + 1)`: it expires once {clock} reaches that time")
        expiry: tuple[m.RStmt, ...] = ()
        if when:
            if not m.is_intlike(when[0].type):
                raise SpecError(when[0].span, f"the expiry of hrtimer '{h.name}' is {when[0].type.describe()}, "
                                "not a time", f"give a time on its clock, e.g. `hrtimer_start({h.name}, {clock} + 1)`")
            expiry = (m.SAssign(span, self.g(self.expires[h.name]), self.expr(when[0], w)),)
        cpus = [None] if h.count is None else [_c(c, span) for c in range(h.count)]
        drop = tuple(m.SAssign(span, self.g(self.pending[h.name]) if c is None else self.at(self.pending[h.name], c), f)
                     for c in cpus)
        move: tuple[m.RStmt, ...] = ()
        if h.name in self.timer_cpu:
            idle = _and(*(m.At(span, m.BOOL, h.name, c, IRQ_IDLE) for c in cpus))
            move = (m.SIf(span, idle, (m.SAssign(span, self.g(self.timer_cpu[h.name]), self.cpu_of(w, span, name)),), ()),)
        return m.SAtomic(span, drop + move + expiry + (m.SAssign(span, self.g(self.armed[h.name]), _c(1, span, m.BOOL)),))

    def timer(self, arg: m.TExpr, span: Span, name: str) -> m.Process:
        h = self.irqs[_irq(arg)]
        if not _ctx(h).hrtimer:
            raise SpecError(arg.span, f"'{name}' needs an hrtimer; '{h.name}' is an interrupt",
                            f"declare it `hrtimer {h.name} on cpu {_ctx(h).cpus[0]} {{ ... }}`, or raise it with "
                            f"`raise_irq({h.name})`")
        return h

    def scheduler(self) -> m.Process:
        branches = []
        for k, t in enumerate(self.preemptible):
            p, ctx = t.proc, _ctx(t.proc)
            idx = None if p.count is None else _c(t.index, ctx.span)
            span = dataclasses.replace(ctx.span, end_col=ctx.span.end_col + k)  # one per thread: its own text
            cpu_sym = self.cpu_sym[p.name]
            cpu = m.LocalOf(span, cpu_sym.type, cpu_sym, p.name, idx)
            count = m.LocalOf(span, self.pc_sym[p.name].type, self.pc_sym[p.name], p.name, idx)
            guard = _and(_eq(self.at(self.curr, cpu), _c(t.id, span)), _eq(count, _c(0, span)),
                         _not(self.at(self.irqs_off, cpu)), _not(self.at(self.in_irq, cpu)), _not(self.pend(cpu)))
            if p.name in self.region_sym:  # preempted only inside its `preemptible { ... }` regions
                guard = _and(guard, m.LocalOf(span, m.BOOL, self.region_sym[p.name], p.name, idx))
            if self.tso:  # the thread drained its store buffer first (`finish`)
                guard = _and(guard, self.sb(cpu))
            if self.guest_mode is not None:  # a thread in guest mode is preempted through a VM exit only
                guard = _and(guard, _not(self.at(self.guest_mode, cpu)))
            if self.budget is not None and self.bound is not None:
                guard = _and(guard, m.Bin(span, m.BOOL, "<", self.g(self.budget), _c(self.bound, span)))
            body: list[m.RStmt] = [m.SAwait(span, guard)]
            if self.tso:
                body.append(m.SAssign(span, self.sb(cpu), _c(0, span, m.BOOL)))
            if self.lkmm:  # __schedule(): rq lock, then smp_mb__after_spinlock(), before the notifiers
                body.append(_mb(span))
            where = _Where(p, cpu, None, instance=idx)
            body += list(self.stmts(ctx.sched_out, where))
            body.append(m.SAssign(span, self.at(self.curr, cpu), _c(0, span)))
            if self.budget is not None:
                body.append(m.SAssign(span, self.g(self.budget),
                                      m.Bin(span, m.INT, "+", self.g(self.budget), _c(1, span))))
            branches.append((m.SAtomic(span, tuple(body)),))
            name = p.instance_name(t.index)
            self.texts.append(((SCHEDULER, span), f"preempt {name}" + (" (sched_out)" if ctx.sched_out else "")))
        loop = m.SLabeled(self.span, "end_sched", m.SLoop(self.span, (m.SChoose(self.span, tuple(branches)),)))
        return m.Process(SCHEDULER, self.span, None, True, (), (loop,), frozenset({"end_sched"}), self.span,
                         m.ProcessContext(m.ContextKind.SCHEDULER, (), self.span))

    # -- statements: the context primitives become assignments to the hidden state
    def stmts(self, body: tuple[m.RStmt, ...], w: _Where) -> tuple[m.RStmt, ...]:
        return tuple(self.stmt(s, w) for s in body)

    def stmt(self, s: m.RStmt, w: _Where) -> m.RStmt:
        x = lambda e: self.expr(e, w)  # noqa: E731
        if isinstance(s, m.SEval):
            p = BUILTINS[s.call.name]
            if p.cls is Cls.CONTEXT:
                assert p.ctx is not None, "a context primitive's row names what it does"
                return self.call(s, p.ctx, w)
            if p.cls is Cls.SCHEDULE and w.proc.context is not None \
                    and w.proc.context.kind is m.ContextKind.INTERRUPT:  # a handler never sleeps
                return m.SAssert(s.span, SLEEP_IN_ATOMIC, _c(0, s.span, m.BOOL))
            if w.count is not None and _ctx(w.proc).preemptible and p.args[:1] == (Arg.LOCK,) \
                    and p.cls is Cls.RMW:
                raise SpecError(s.span, f"'{s.call.name}' in a preemptible thread is not supported yet",
                                "use spin_lock, or make the thread not preemptible")
            if p.cls in (Cls.LOCK, Cls.STORE) and w.count is not None and p.args[:1] == (Arg.LOCK,):
                # a spin lock held by a preemptible thread disables preemption
                lock = s.call.args[0]
                if self.lkmm:  # the lock's own acquire and release: not one fully ordered atomic block
                    return self.locked(s.span, s.call.name, lock, w.count)
                if p.cls is Cls.LOCK:
                    return m.SAtomic(s.span, (m.SAwait(s.span, _not(lock)), m.SAssign(s.span, lock, _c(1, s.span, m.BOOL)),
                                              self.add(w.count, 1, s.span)))
                return m.SAtomic(s.span, (m.SAssign(s.span, lock, _c(0, s.span, m.BOOL)), self.add(w.count, -1, s.span)))
            return dataclasses.replace(s, call=x(s.call))
        if isinstance(s, m.SAssign):
            if isinstance(s.target, m.Var) and s.target.sym in self.cpu_sym.values():
                raise SpecError(s.span, f"'{w.proc.name}' assigns its own CPU",
                                "a thread's `cpu` changes only when the scheduler migrates it; "
                                "keep the value in a local of your own")
            v = s.value
            op = BUILTINS[v.name].ctx if isinstance(v, m.Builtin) else None
            if isinstance(v, m.Builtin) and op in (CtxOp.TIMER_CANCEL, CtxOp.TIMER_TRY_CANCEL):
                assert op is not None
                return self.cancel(op, v.args[0], s.span, v.name, x(s.target))
            if isinstance(v, m.Builtin) and op is CtxOp.GET_CPU:
                cpu = self.cpu_of(w, s.span, v.name)
                ops: tuple[m.RStmt, ...] = (m.SAssign(s.span, x(s.target), cpu),)
                if w.count is not None:
                    ops = (self.add(w.count, 1, s.span),) + ops
                return m.SAtomic(s.span, ops) if len(ops) > 1 else ops[0]
            return dataclasses.replace(s, target=x(s.target), value=x(s.value))
        if isinstance(s, m.SInlined) and s.name == m.PREEMPTIBLE_REGION:
            flag = m.Var(s.span, m.BOOL, self.region_sym[w.proc.name])
            end = s.span if not s.body else s.body[-1].span
            return m.SInlined(s.span, "", (m.SAssign(s.span, flag, _c(1, s.span, m.BOOL)),) + self.stmts(s.body, w)
                              + (m.SAssign(end, flag, _c(0, end, m.BOOL)),))
        if isinstance(s, (m.SIf, m.SWhile, m.SAwait, m.SAssert)):
            changes = {"cond": x(s.cond)}
        else:
            changes = {}
        for f in ("then", "orelse", "body"):
            if hasattr(s, f):
                changes[f] = self.stmts(getattr(s, f), w)
        if isinstance(s, m.SChoose):
            changes["branches"] = tuple(self.stmts(b, w) for b in s.branches)
        if isinstance(s, m.SLabeled):
            changes["stmt"] = self.stmt(s.stmt, w)
        return dataclasses.replace(s, **changes) if changes else s

    def locked(self, span: Span, name: str, lock: m.TExpr, count: m.VarSym | None,
               between: tuple = ()) -> m.SInlined:
        """lkmm: spin_lock as preempt_disable(); the lock (an acquire), spin_unlock as the
        unlock (a release), then `between`, then preempt_enable()."""
        call = m.SEval(span, m.Builtin(span, m.VOID, name, (lock,)))
        if name == "spin_lock":
            return m.SInlined(span, "", ((self.add(count, 1, span),) if count is not None else ()) + (call,))
        return m.SInlined(span, "", (call,) + between + ((self.add(count, -1, span),) if count is not None else ()))

    def add(self, sym: m.VarSym, k: int, span: Span) -> m.SAssign:
        v = m.Var(span, sym.type, sym)
        return m.SAssign(span, v, m.Bin(span, m.INT, "+" if k > 0 else "-", v, _c(abs(k), span)))

    def cpu_of(self, w: _Where, span: Span, name: str) -> m.TExpr:
        if w.cpu is None:
            raise SpecError(span, f"'{name}' runs on no CPU in process '{w.proc.name}'",
                            "declare it a thread, `process NAME on cpu 0 { ... }`, or call it in an `interrupt`")
        return dataclasses.replace(w.cpu, span=span)

    def call(self, s: m.SEval, op: CtxOp, w: _Where, fenced: bool = False) -> m.RStmt:
        span, a = s.span, s.call.args
        name = s.call.name
        if op is CtxOp.GUEST_EXIT:
            return self.guest_exit(span, w, _irq(a[0]))  # the reason's number, as an interrupt's
        _host_only(w, name, span)
        off = lambda: self.at(self.irqs_off, self.cpu_of(w, span, name))  # noqa: E731
        t, f = _c(1, span, m.BOOL), _c(0, span, m.BOOL)
        if op is CtxOp.IRQ_OFF:
            return m.SAssign(span, off(), t)
        if op is CtxOp.IRQ_ON:
            return m.SAssign(span, off(), f)
        if op is CtxOp.IRQ_SAVE:
            return m.SAtomic(span, (m.SAssign(span, a[0], _to(off(), a[0].type)), m.SAssign(span, off(), t)))
        if op is CtxOp.IRQ_RESTORE:
            return m.SAssign(span, off(), _to(a[0], m.BOOL))
        if op in (CtxOp.LOCK_IRQSAVE, CtxOp.UNLOCK_IRQRESTORE) and self.lkmm:
            # lkmm: local_irq_save(); spin_lock() (and spin_unlock(); local_irq_restore()),
            # as include/linux/spinlock_api_smp.h does them: the lock's acquire and release,
            # where one atomic block would be a fully ordered read-modify-write
            if op is CtxOp.LOCK_IRQSAVE:
                save = m.SAtomic(span, (m.SAssign(span, a[1], _to(off(), a[1].type)), m.SAssign(span, off(), t)))
                return m.SInlined(span, "", (save,) + self.locked(span, "spin_lock", a[0], w.count).body)
            restore = m.SAssign(span, off(), _to(a[1], m.BOOL))
            return m.SInlined(span, "", self.locked(span, "spin_unlock", a[0], w.count, (restore,)).body)
        body: tuple[m.RStmt, ...]
        if op is CtxOp.LOCK_IRQSAVE:
            body = (m.SAwait(span, _not(a[0])), m.SAssign(span, a[1], _to(off(), a[1].type)),
                    m.SAssign(span, off(), t), m.SAssign(span, a[0], t))
            if w.count is not None:
                body += (self.add(w.count, 1, span),)
            return m.SAtomic(span, body)
        if op is CtxOp.UNLOCK_IRQRESTORE:
            body = (m.SAssign(span, a[0], f), m.SAssign(span, off(), _to(a[1], m.BOOL)))
            if w.count is not None:
                body += (self.add(w.count, -1, span),)
            return m.SAtomic(span, body)
        if op in (CtxOp.PREEMPT_OFF, CtxOp.PREEMPT_ON, CtxOp.PUT_CPU):
            self.cpu_of(w, span, name)
            if w.count is None:
                return m.SSkip(span)  # a thread never preempted, or a handler: nothing to count
            return self.add(w.count, 1 if op is CtxOp.PREEMPT_OFF else -1, span)
        if (self.tso and op in (CtxOp.RAISE, CtxOp.RAISE_ON, CtxOp.TIMER_START)
                or self.lkmm and op in (CtxOp.RAISE, CtxOp.RAISE_ON)) and not fenced:
            # what raising orders: the kernel's IPI send fences before its ICR write
            # (weak_wrmsr_fence), a device's MSI is posted after its DMA writes (PCIe
            # ordering), hrtimer_start/cancel take the clock base's lock: earlier stores first.
            # lkmm: an IPI is sent after a full barrier (kernel/smp.c queues the call with
            # llist_add, a fully ordered RMW, before arch_send_call_function_single_ipi);
            # hrtimer_start is a release through the clock base's lock (memory/lkmm.py's Signal)
            inner = self.call(s, op, w, fenced=True)
            return m.SAtomic(span, (_mb(span),) + (inner.body if isinstance(inner, m.SAtomic) else (inner,)))
        if op is CtxOp.RAISE:
            h = self.irqs[_irq(a[0])]
            if h.count is not None:
                raise SpecError(span, f"interrupt '{h.name}' has one handler per CPU: say which",
                                f"write `send_IPI(cpu, {h.name})`")
            return self.raise_on(h, _c(_ctx(h).cpus[0], span), w, span)
        if op is CtxOp.RAISE_ON:
            h = self.irqs[_irq(a[1])]
            if h.count is None:
                raise SpecError(span, f"interrupt '{h.name}' is bound to CPU {_ctx(h).cpus[0]}",
                                f"write `raise_irq({h.name})`")
            return self.raise_on(h, self.expr(a[0], w), w, span)
        if op is CtxOp.TIMER_START:
            return self.start(self.timer(a[0], span, name), w, span, name, a[1:])
        if op in (CtxOp.TIMER_CANCEL, CtxOp.TIMER_TRY_CANCEL):
            return self.cancel(op, a[0], span, name, None)
        if op is CtxOp.GUEST_ENTER:
            return self.guest_enter(span, w)
        if op is CtxOp.THIS_CPU_WRITE:
            return m.SAssign(span, self.at(_percpu(a[0]), self.cpu_of(w, span, name)), self.expr(a[1], w))
        raise SpecError(span, f"'{name}' has a value: use it in an expression",
                        f"e.g. `x = {name}(...);` or `if ({name}(...)) ...`")

    def expr(self, e, w: _Where):
        if isinstance(e, m.Builtin) and BUILTINS[e.name].cls is Cls.CONTEXT:
            op = BUILTINS[e.name].ctx
            _host_only(w, e.name, e.span)
            if op is CtxOp.CPU_ID:
                return self.cpu_of(w, e.span, e.name)
            if op is CtxOp.IRQS_DISABLED:
                return self.at(self.irqs_off, self.cpu_of(w, e.span, e.name))
            if op is CtxOp.THIS_CPU_READ:
                return self.at(_percpu(e.args[0]), self.cpu_of(w, e.span, e.name))
            if op is CtxOp.PER_CPU:
                return self.at(_percpu(e.args[0]), self.expr(e.args[1], w))
            if op is CtxOp.IN_GUEST:
                if w.proc.context is None or not w.proc.context.posted or self.guest_mode is None:
                    raise SpecError(e.span, f"'{e.name}' outside a posted interrupt's handler, in '{w.proc.name}'",
                                    "only a `posted` handler (`interrupt H[N] posted { ... }`) runs both as the "
                                    "CPU's processing in guest mode and as the host's handler; a model with one "
                                    "has a thread that calls `guest_enter()`")
                return self.at(self.guest_mode, self.cpu_of(w, e.span, e.name))
            if op is CtxOp.EXIT_BY:
                sym = self.exit_sym.get(w.proc.name)
                if sym is None or w.instance is not None:
                    raise SpecError(e.span, f"'{e.name}' in '{w.proc.name}', which never enters the guest",
                                    "call it in a thread after its `guest_enter()`")
                return _eq(m.Var(e.span, sym.type, sym), _c(_irq(e.args[0]) + 1, e.span))
            raise SpecError(e.span, f"'{e.name}' changes the context: call it as a statement",
                            f"or assign its value on its own: `r = {e.name}(...);`")
        if isinstance(e, m.Builtin) and w.count is not None and _ctx(w.proc).preemptible \
                and BUILTINS[e.name].args[:1] == (Arg.LOCK,):
            raise SpecError(e.span, f"'{e.name}' in a preemptible thread is not supported yet",
                            "use spin_lock, or make the thread not preemptible")
        if w.instance is not None and isinstance(e, m.Var) and e.sym.scope is m.Scope.LOCAL:
            return m.LocalOf(e.span, e.type, e.sym, w.proc.name, w.instance)  # a notifier in the scheduler
        if w.instance is not None and isinstance(e, m.Elem) and e.sym.scope is m.Scope.LOCAL:
            raise SpecError(e.span, "a notifier reads a thread's local arrays: not supported",
                            "copy the value to a global first")
        if not isinstance(e, m.TExpr) or isinstance(e, (m.Const, m.Var, m.SelfE, m.Bound)):
            return e
        changes = {}
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if isinstance(v, m.TExpr):
                changes[f.name] = self.expr(v, w)
            elif isinstance(v, tuple) and v and isinstance(v[0], m.TExpr):
                changes[f.name] = tuple(self.expr(a, w) for a in v)
        return dataclasses.replace(e, **changes)


def _lowest(t: m.Type) -> int:
    """The least value of an integer type (a timed hrtimer's expiry starts there)."""
    return t.lo if isinstance(t, m.IntT) and t.lo is not None else 0


def _is_exit(s) -> bool:
    return isinstance(s, m.SEval) and BUILTINS[s.call.name].ctx is CtxOp.GUEST_EXIT


def _exit_last(body) -> None:
    """In a guest's `atomic` block a `vmexit` comes last (or last in a branch that does):
    the guest runs nothing after its exit until the next VM entry."""
    for i, s in enumerate(body):
        inner = _is_exit(s) or any(_is_exit(x) for x in m.walk_statements((s,)))
        if not inner:
            continue
        if i != len(body) - 1 or not (_is_exit(s) or isinstance(s, m.SIf)):
            where = s.span if _is_exit(s) else next(x.span for x in m.walk_statements((s,)) if _is_exit(x))
            raise SpecError(where, "'vmexit' ends the guest's step: nothing may follow it in an `atomic` block",
                            "make the exit the block's last statement; the guest's next statement runs after the "
                            "next VM entry")
        if isinstance(s, m.SIf):
            _exit_last(s.then)
            _exit_last(s.orelse)


def _host_only(w: _Where, name: str, span: Span) -> None:
    """A guest runs in VMX non-root mode: the host's context primitives are not its."""
    if w.proc.context is not None and w.proc.context.kind is m.ContextKind.GUEST:
        raise SpecError(span, f"'{name}' in guest '{w.proc.name}': the guest runs in VMX non-root mode",
                        "a guest makes VM exits (`vmexit(HLT)`); the host's interrupts, CPUs and timers are its "
                        f"thread's ('{w.proc.context.vcpu}'): model what the exit does there")


@record
class _Where:
    """The context a statement is lowered in: its process, the CPU it runs on (an
    expression: a thread's `cpu`, a handler's constant or `self`), the thread's preempt
    count when it has one, and for a notifier run by the scheduler, the thread's instance."""

    proc: m.Process
    cpu: m.TExpr | None
    count: m.VarSym | None
    instance: m.TExpr | None = None


# ---- after the processes are built: the thread guards and the sched-in steps


# `ir` is the IR module (checker/ir.py), passed in by its caller: semantics sits below
# the IR (tests/test_layers.py), so its processes and steps are typed Any here
def finish(model: m.Model, procs: tuple[Any, ...], ir: ModuleType) -> tuple[Any, ...]:
    """Every thread step guarded by "current here, no handler running or due"; a
    thread's final step frees its CPU; at every pc of a thread, its sched-in steps."""
    if model.cpus is None:
        return procs
    low = _Lowering.__new__(_Lowering)  # the state symbols, found again in the lowered model
    g = {s.name: s for s in model.globals}
    low.n, low.span = model.cpus, model.processes[0].span
    low.irqs_off, low.in_irq, low.curr = g["irqs_off"], g["in_irq"], g["curr"]
    low.irqs = [p for p in model.processes if p.context and p.context.kind is m.ContextKind.INTERRUPT]
    low.pending = {h.name: g[m.pending_name(h.name)] for h in low.irqs}
    low.tso, low.drained = model.memory == "tso", g.get(DRAINED)
    low.lkmm = model.memory == "lkmm"
    low.guest_mode = g.get(GUEST_MODE)
    low.guest_of = {p.context.vcpu: p for p in model.processes if p.context and p.context.kind is m.ContextKind.GUEST}
    low.threads = []
    for p in model.processes:
        if p.context and p.context.kind is m.ContextKind.THREAD:
            for i in range(p.instances):
                low.threads.append(_Thread(p, i, len(low.threads) + 1))
    texts = dict(model.step_texts)
    out = []
    for p, pir in zip(model.processes, procs):
        if p.context and p.context.kind is m.ContextKind.THREAD:
            pir = _thread(low, model, p, pir, ir)
        if p.context and p.context.kind is m.ContextKind.GUEST:
            pir = _guest(low, model, p, pir, ir)
        if any(k[0] == p.name for k in texts):
            steps_at = tuple(tuple(_retext(st, texts) for st in at) for at in pir.steps_at)
            pir = dataclasses.replace(pir, steps_at=steps_at, steps=tuple(_retext(st, texts) for st in pir.steps))
        if p.context and p.context.kind is m.ContextKind.INTERRUPT and low.tso:
            # x86: taking an interrupt drains the store buffer and IRET is serializing (SDM
            # vol. 3A, "Store Buffer", "Serializing Instructions"): entry and exit are fences
            fenced = lambda st: dataclasses.replace(st, fence=True) if st.generated else st  # noqa: E731
            pir = dataclasses.replace(pir, steps_at=tuple(tuple(fenced(st) for st in at) for at in pir.steps_at),
                                      steps=tuple(fenced(st) for st in pir.steps))
        out.append(pir)
    return _forget_exit_reasons(model, tuple(out), ir)


def _forget_exit_reasons(model: m.Model, procs: tuple[Any, ...], ir: ModuleType) -> tuple[Any, ...]:
    """A thread's `exit_reason` is written at each VM exit and read by the exit's
    dispatch (`vm_exit_by`); between the dispatch and the next exit it tells apart states
    that behave alike, so it is forgotten there (`ir.forget_dead`), unless a property or
    another process reads it."""
    out = list(procs)
    for i, p in enumerate(model.processes):
        sym = next((v for v in p.locals if v.name == EXIT_REASON), None)
        if sym is None or any(ir.mentions(prop, sym) for prop in model.properties) \
                or any(ir.mentions((st.guard, st.body), sym) for j, q in enumerate(procs) if j != i for st in q.steps):
            continue
        out[i] = ir.forget_dead(procs[i], sym)
    return tuple(out)


def _retext(st, texts):
    t = texts.get((st.process, st.span))
    return dataclasses.replace(st, text=t, generated=True) if t is not None else st


def _thread(low: _Lowering, model: m.Model, p: m.Process, pir: Any, ir: ModuleType) -> Any:
    ctx = _ctx(p)
    cpu_sym = next(v for v in p.locals if v.name == "cpu")
    span = ctx.span
    cpu = m.Var(span, cpu_sym.type, cpu_sym)
    me = low.thread_id(p, span)
    here = _and(_eq(low.at(low.curr, cpu), me), low.runnable_here(cpu))
    end_pcs = {pc for pc, at in enumerate(pir.steps_at) if not at}
    free = ir.OAssign(low.at(low.curr, cpu), _c(0, span))

    asleep_sym = next((v for v in p.locals if v.name == "asleep"), None)
    asleep = m.Var(span, m.BOOL, asleep_sym) if asleep_sym is not None else None
    count_sym = next((v for v in p.locals if v.name == "preempt_count"), None)
    atomic: m.TExpr = low.at(low.irqs_off, cpu)  # schedule() here is "BUG: scheduling while atomic"
    if count_sym is not None:
        atomic = _or(atomic, m.Bin(span, m.BOOL, ">", m.Var(span, count_sym.type, count_sym), _c(0, span)))
    remade: dict[int, object] = {}
    uid = max((st.uid for st in pir.steps), default=-1) + 1
    # tso: `sb_drained[c]` says the thread on CPU c has an empty store buffer, for an
    # interrupt entry or a preemption to rely on; any step of the thread clears it
    undrain = (ir.OAssign(low.sb(cpu), _c(0, span, m.BOOL)),) if low.tso else ()
    texts = dict(model.step_texts)
    # lkmm: a context switch is a full barrier on the CPU it happens on (__schedule takes
    # the rq lock, then smp_mb__after_spinlock()); views attach to CPUs (memory/lkmm.py)
    mb = (ir.OBarrier("smp_mb"),) if low.lkmm else ()
    guest = low.guest_of.get(p.name)
    for st in pir.steps:
        guard = here if st.guard is None else _and(here, st.guard)
        body = undrain + ir.before_gotos(st.body, end_pcs, (free,))
        fence = st.fence
        if texts.get((p.name, st.span)) == VM_EXIT:  # taken exactly when an interrupt is due here
            guard = _and(_eq(low.at(low.curr, cpu), me), _not(low.at(low.in_irq, cpu)), st.guard)
            fence = fence or low.tso  # an interrupt drains the store buffer
            if low.tso and guest is not None:  # ... the guest's too: it drained for a host interrupt
                guard = _and(guard, _or(_not(low.in_guest(cpu)), low.sb(cpu)))
        if texts.get((p.name, st.span)) == VM_ENTRY and low.tso and guest is not None:
            fence = True  # the guest reads what its thread stored (its buffer is its own here)
        if st.kind is ir.StepKind.SCHEDULE:  # woken: returns from schedule() off its CPU if it slept
            assert asleep is not None, "a thread that calls schedule() has `asleep`"
            guard = _or(here, asleep)
            body = (ir.OAssert(SLEEP_IN_ATOMIC, _or(asleep, _not(atomic)), st.span),
                    ir.OAssign(asleep, _c(0, span, m.BOOL))) + body
        remade[st.uid] = dataclasses.replace(st, guard=guard, body=body, fence=fence)
    sched_out = ir._ProcessBuilder(model, p).ops(ctx.sched_out)
    sched_in = ir._ProcessBuilder(model, p).ops(ctx.sched_in)
    targets: list[int | None] = list(range(low.n)) if ctx.preemptible else [None]
    steps_at = []
    extra = []
    for pc, at in enumerate(pir.steps_at):
        new = [remade[st.uid] for st in at]
        if any(st.kind is ir.StepKind.SCHEDULE for st in at):
            # schedule() switches away: off the CPU, its notifier run; back when woken and put on a CPU
            where_s = next(st.span for st in at if st.kind is ir.StepKind.SCHEDULE)
            body = (ir.OAssert(SLEEP_IN_ATOMIC, _not(atomic), where_s),) + undrain + mb + tuple(sched_out) \
                + (free, ir.OAssign(asleep, _c(1, span, m.BOOL)), ir.OGoto(pc))
            text = "schedule(): off cpu" + (" (sched_out)" if ctx.sched_out else "")
            # a context switch takes the runqueue lock: a full barrier (tso: a fence)
            st = ir.Step(uid, p.name, ir.StepKind.ATOMIC, here, body, where_s, text, None, None,
                         fence=low.tso, generated=True)
            uid += 1
            new.append(st)
            extra.append(st)
        if pc not in end_pcs and low.tso:
            # the thread drains its store buffer (a fence step) before an interrupt due on
            # its CPU is taken, and whenever it may be preempted
            due = _and(_not(low.at(low.irqs_off, cpu)), low.pend(cpu))
            if ctx.preemptible:
                due = _c(1, span, m.BOOL)
            guard = _and(_eq(low.at(low.curr, cpu), me), _not(low.at(low.in_irq, cpu)),
                         _not(low.sb(cpu)), due)
            if guest is not None:  # in guest mode the guest's buffer is what must drain (`_guest`)
                guard = _and(guard, _not(low.in_guest(cpu)))
            st = _drain(low, ir, p.name, uid, guard, cpu, pc, span)
            uid += 1
            new.append(st)
            extra.append(st)
        if pc not in end_pcs:
            for c in targets:
                dest = cpu if c is None else _c(c, span)
                guard = _and(_not(_eq(low.at(low.curr, cpu), me)), _eq(low.at(low.curr, dest), _c(0, span)),
                             low.runnable_here(dest))
                if asleep is not None:  # a sleeper comes back through schedule() first
                    guard = _and(guard, _not(asleep))
                ops = ([] if c is None else [ir.OAssign(cpu, dest)]) + [ir.OAssign(low.at(low.curr, dest), me)]
                if low.tso:
                    ops.append(ir.OAssign(low.sb(dest), _c(0, span, m.BOOL)))
                ops += list(mb) + [_subst(op, cpu_sym, dest) for op in sched_in] + [ir.OGoto(pc)]
                where = "" if c is None else f" on cpu{c}"
                text = f"{SCHED_IN}{where}" + (" (sched_in)" if ctx.sched_in else "")
                # migration: the old CPU's accesses before the new one's (kernel/sched/core.c,
                # "Notes on Program-Order guarantees on SMP systems"): tso, a fence
                st = ir.Step(uid, p.name, ir.StepKind.ATOMIC, guard, tuple(ops), span, text, None, None,
                             fence=low.tso, generated=True)
                uid += 1
                new.append(st)
                extra.append(st)
        steps_at.append(tuple(new))
    steps = tuple(remade[st.uid] for st in pir.steps) + tuple(extra)
    return dataclasses.replace(pir, steps_at=tuple(steps_at), steps=steps)


def _drain(low: _Lowering, ir, process: str, uid: int, guard: m.TExpr, cpu: m.TExpr, pc: int, span: Span):
    """tso: a fence step that drains the process's store buffer before an interrupt is
    taken on `cpu` (or a preemption), and says so in `sb_drained[cpu]`."""
    body = (ir.OAssign(low.sb(cpu), _c(1, span, m.BOOL)), ir.OGoto(pc))
    return ir.Step(uid, process, ir.StepKind.ATOMIC, guard, body, span, "drain store buffer", None, None,
                   fence=True, generated=True)


def _guest(low: _Lowering, model: m.Model, p: m.Process, pir, ir):
    """A guest's steps run only while its thread is in guest mode on its CPU, with no
    handler running there (a posted vector's processing) and no interrupt due (a host one
    exits first, a posted one is processed first). Under tso the guest has a buffer of its
    own: it drains (a fence step) before an interrupt is taken, as its thread does, and its
    exits and its last steps are fences."""
    t = next(q for q in model.processes if q.name == _ctx(p).vcpu)
    span = _ctx(p).span
    cpu_sym = next(v for v in t.locals if v.name == "cpu")
    cpu = _c(_ctx(t).cpus[0], span) if not _ctx(t).preemptible \
        else m.LocalOf(span, cpu_sym.type, cpu_sym, t.name, None)
    me = low.thread_id(t, span)
    mine = _and(low.in_guest(cpu), _eq(low.at(low.curr, cpu), me), _not(low.at(low.in_irq, cpu)))
    here = _and(mine, _not(low.pend(cpu)))
    end_pcs = {pc for pc, at in enumerate(pir.steps_at) if not at}  # where its code has ended
    undrain = (ir.OAssign(low.sb(cpu), _c(0, span, m.BOOL)),) if low.tso else ()

    def exits(ops) -> bool:
        return any(isinstance(op, ir.OAssign) and isinstance(op.target, m.Elem) and op.target.sym.name == GUEST_MODE
                   or isinstance(op, ir.OGoto) and op.pc in end_pcs for op in ir.walk_ops(ops))

    remade = {}
    for st in pir.steps:
        guard = here if st.guard is None else _and(here, st.guard)
        fence = st.fence or (low.tso and exits(st.body))
        remade[st.uid] = dataclasses.replace(st, guard=guard, body=undrain + tuple(st.body), fence=fence)
    steps_at, extra = [], []
    uid = max((st.uid for st in pir.steps), default=-1) + 1
    for pc, at in enumerate(pir.steps_at):
        new = [remade[st.uid] for st in at]
        if pc not in end_pcs and low.tso:
            st = _drain(low, ir, p.name, uid, _and(mine, _not(low.sb(cpu)), low.pend(cpu)), cpu, pc, span)
            uid += 1
            new.append(st)
            extra.append(st)
        steps_at.append(tuple(new))
    steps = tuple(remade[st.uid] for st in pir.steps) + tuple(extra)
    # the guest stops wherever its vCPU stops running it: every pc is a valid end, but
    # where it waits halted in guest mode (a `halted` label: HLT with HLT exits off), which
    # is a vCPU stuck for ever if the run ends there
    halted = frozenset().union(*(pcs for label, pcs in pir.label_pcs.items() if label.startswith(GUEST_HALTED)))
    every = frozenset(range(len(steps_at))) - halted
    return dataclasses.replace(pir, steps_at=tuple(steps_at), steps=steps, end_pcs=every,
                               label_pcs={**pir.label_pcs, "end": every})


def _subst(x, sym: m.VarSym, by: m.TExpr):
    """`x` (an expression or an IR operation) with the variable `sym` read as `by`: the
    sched-in notifier sees the CPU the thread is put on, whatever order the step's
    operations read their operands in."""
    return _map(x, lambda e: by if isinstance(e, m.Var) and e.sym is sym else None)


def _map(x, f):
    """`x` (an expression or an IR operation) with each node for which `f` gives a
    replacement replaced, the rest rebuilt only where something below changed."""
    got = f(x)
    if got is not None:
        return got
    if isinstance(x, tuple):
        return tuple(_map(a, f) for a in x)
    if not dataclasses.is_dataclass(x) or isinstance(x, (type, m.Const, m.Var, m.Type, m.VarSym)):
        return x
    changes = {}
    for fl in dataclasses.fields(x):
        v = getattr(x, fl.name)
        if isinstance(v, (m.TExpr, tuple)) or (dataclasses.is_dataclass(v) and not isinstance(v, (m.Type, m.VarSym))):
            nv = _map(v, f)
            if nv is not v:
                changes[fl.name] = nv
    return dataclasses.replace(x, **changes) if changes else x


def initial_cpus(model: m.Model, layout, choices: list) -> None:
    """A thread's `cpu` starts at its own `on cpu`, which may differ per instance."""
    if model.cpus is None:
        return
    for p in model.processes:
        if p.context and p.context.kind is m.ContextKind.THREAD:
            sym = next(v for v in p.locals if v.name == "cpu")
            for i in range(p.instances):
                choices[layout.var_base[(sym, i)]] = (p.context.cpus[i],)


def _calls(body, pred) -> bool:
    for s in body:
        if isinstance(s, m.SEval) and pred(BUILTINS[s.call.name]):
            return True
        for f in ("then", "orelse", "body"):
            if isinstance(getattr(s, f, None), tuple) and _calls(getattr(s, f), pred):
                return True
        if isinstance(s, m.SChoose) and any(_calls(b, pred) for b in s.branches):
            return True
        if isinstance(s, m.SLabeled) and _calls((s.stmt,), pred):
            return True
    return False


# ---- small expression builders


def _ctx(p: m.Process) -> m.ProcessContext:
    """The context of a process the lowering found running in one (a thread, a handler)."""
    assert p.context is not None, f"'{p.name}' runs in no execution context"
    return p.context


def _irq(arg: m.TExpr) -> int:
    """An interrupt argument: the resolver made it the interrupt's index (resolve/contexts.py)."""
    assert isinstance(arg, m.Const), arg
    return arg.value


def _percpu(arg: m.TExpr) -> m.VarSym:
    """A per-CPU variable argument: the resolver made it that global (resolve/contexts.py)."""
    assert isinstance(arg, m.Var), arg
    return arg.sym


def _mb(span: Span) -> m.SEval:
    """smp_mb(): under tso, what makes a step a fence (ir.is_fence)."""
    return m.SEval(span, m.Builtin(span, m.VOID, "smp_mb", ()))


def _c(v: int, span: Span, t: m.Type = m.INT) -> m.Const:
    return m.Const(span, t, v)


def _to(x: m.TExpr, t: m.Type) -> m.TExpr:
    """A bool into a bool or integer location, and back (`flags` may be either)."""
    if t == x.type:
        return x
    if t == m.BOOL:
        return m.Bin(x.span, m.BOOL, "!=", x, _c(0, x.span))
    return m.Ite(x.span, m.INT, x, _c(1, x.span), _c(0, x.span))


def _not(x: m.TExpr) -> m.TExpr:
    return m.Un(x.span, m.BOOL, "!", x)


def _eq(a: m.TExpr, b: m.TExpr) -> m.TExpr:
    return m.Bin(a.span, m.BOOL, "==", a, b)


def _and(*xs: m.TExpr) -> m.TExpr:
    out = xs[0]
    for x in xs[1:]:
        out = m.Bin(out.span, m.BOOL, "&&", out, x)
    return out


def _or(*xs: m.TExpr) -> m.TExpr:
    out = xs[0]
    for x in xs[1:]:
        out = m.Bin(out.span, m.BOOL, "||", out, x)
    return out


def step_cpu(model: m.Model, process: str, text: str, before: dict, after: dict | None) -> int | None:
    """The CPU a trace step ran on: a thread's `cpu` after the step (a sched-in step runs
    on the CPU it puts the thread on), a handler's own CPU, for a preemption the CPU of
    the thread it took off. None in a model without contexts or for a process of its own."""
    if model.cpus is None:
        return None
    base, _, idx = process.partition("[")
    p = next((q for q in model.processes if q.name == base), None)
    if p is None or p.context is None:
        return None
    if p.context.kind is m.ContextKind.INTERRUPT:
        return p.context.cpus[int(idx[:-1]) if idx else 0]
    if p.context.kind is m.ContextKind.GUEST:
        return (after or before).get(f"{p.context.vcpu}.cpu")
    if p.context.kind is m.ContextKind.SCHEDULER:
        who = text.split()[1] if text.startswith("preempt ") else None
        return before.get(f"{who}.cpu")
    return (after or before).get(f"{process}.cpu")
