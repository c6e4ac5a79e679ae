"""Expressions: names, operators with C's conversions made explicit (Conv nodes),
constant folding, `?:`, calls of conversions and kernel primitives (checked against
their row of builtins.py), `p@label`, `p.local` and quantifiers.
"""

from __future__ import annotations

import dataclasses

from ..front import ast
from .. import model as m
from ..semantics.primitives import ALIASES, BUILTINS, Arg, Cls, CtxOp, Pure, Result, RmwOp, signature
from ..base.errors import Echo, Span, SpecError, did_you_mean
from .base import Ctx, Shared, WAITQUEUE_BUILTINS, labels_of


class Expressions(Shared):
    """Typed expressions. Constants fold as they are built (so a knob set to false
    removes the test it guards); fixed-width operands follow C's usual conversions, each
    made explicit as a Conv node so that every back end computes the same value. About
    500 lines: the expression grammar's cases, each short, and the built-in calls'
    argument checks, which read one table row; a split would cut the recursion apart."""

    def cond(self, e: ast.Expr, ctx: Ctx, what: str) -> m.TExpr:
        r = self.expr(e, dataclasses.replace(ctx, what=what))
        if not isinstance(r.type, m.BoolT):
            raise SpecError(e.span, f"{what} must be a bool, not {r.type.describe()}",
                            "compare it, e.g. `x != 0`" if m.is_intlike(r.type) else "a condition is a bool expression")
        return r

    def lvalue(self, lv: ast.LValue, ctx: Ctx) -> m.TExpr:
        self.writing = lv.name
        try:
            if lv.index is None:
                e = self.expr(ast.Name(lv.span, lv.name), ctx, lvalue=True)
            else:
                e = self.expr(ast.Index(lv.span, lv.name, lv.span, lv.index), ctx, lvalue=True)
        finally:
            self.writing = None
        if not isinstance(e, (m.Var, m.Elem)):
            raise SpecError(lv.span, f"cannot assign to '{lv.name}'", "only variables can be assigned")
        if isinstance(e.type, (m.ArrayT, m.WaitQueueT)):
            raise SpecError(lv.span, f"cannot assign a whole {e.type.describe()} '{lv.name}'",
                            "assign one element: name[i] = value")
        return e

    def expr(self, e: ast.Expr, ctx: Ctx, lvalue: bool = False) -> m.TExpr:
        if isinstance(e, ast.Number):
            return m.Const(e.span, m.INT, e.value)
        if isinstance(e, ast.BoolLit):
            return m.Const(e.span, m.BOOL, int(e.value))
        if isinstance(e, ast.SelfRef):
            if ctx.process is None or ctx.process_count is None:
                raise SpecError(e.span, "`self` outside a process array",
                                "`self` is the index of a process declared as `process name[N]`")
            return m.SelfE(e.span, m.IntT(0, ctx.process_count - 1))
        if isinstance(e, ast.Name):
            return self._name(e, ctx, lvalue)
        if isinstance(e, ast.Index):
            return self._index(e, ctx)
        if isinstance(e, ast.Unary):
            return self._unary(e, ctx)
        if isinstance(e, ast.Binary):
            return self._binary(e, ctx)
        if isinstance(e, ast.Conditional):
            c = self.cond(e.cond, ctx, "a `?:` condition")
            pure = dataclasses.replace(ctx, effects=False, what="a branch of `?:`")
            a, b = self.expr(e.then, pure), self.expr(e.orelse, pure)
            t = self._join(a, b, e.span)
            a, b = self._conv(a, t), self._conv(b, t)
            if isinstance(c, m.Const):
                return a if c.value else b
            return m.Ite(e.span, t, c, a, b)
        if isinstance(e, ast.Call):
            return self._call(e, ctx)
        if isinstance(e, ast.AtLabel):
            return self._at(e, ctx)
        if isinstance(e, ast.LocalRef):
            return self._local_ref(e, ctx)
        if isinstance(e, ast.Quantifier):
            return self._quant(e, ctx)
        if isinstance(e, (ast.ListInit, ast.AnyInit)):
            raise SpecError(e.span, "`{...}` and `any` are only allowed as initial values",
                            "initialise the variable with it in its declaration (`var x: T = any;`)")
        raise SpecError(e.span, "unsupported expression", "spec/LANGUAGE.md lists the expressions")

    def _name(self, e: ast.Name, ctx: Ctx, lvalue: bool) -> m.TExpr:
        """The innermost binding wins: a quantifier's or lemma's variable, then a parameter
        of the fn or inline being expanded (its argument, re-spanned to this use), then the
        process's locals, the globals, the constants and the enum members."""
        n = e.name
        if n in ctx.bound:
            return ctx.bound[n]
        if n in ctx.params:
            p = ctx.params[n]
            return _respan(p, e.span)
        if n in ctx.locals:
            sym = ctx.locals[n]
            if n == self.writing:
                self.writing = None  # the target itself; its index, if any, is read
            else:
                self.read_locals.add(id(sym))
            return m.Var(e.span, sym.type, sym)
        if n in self.globals:
            sym = self.globals[n]
            return m.Var(e.span, sym.type, sym)
        if n in self.consts:
            if lvalue:
                raise SpecError(e.span, f"cannot assign to constant '{n}'",
                                "constants are fixed per variant; change them with a variant or -D")
            c = self.consts[n]
            return m.Const(e.span, c.type, c.value)
        members = self.members or self.spec_enum_members()
        if n in members:
            t, i = members[n]
            return m.Const(e.span, t, i)
        if n in m.TASK_STATE_NAMES and not lvalue:  # what `P.state` compares with
            return m.Const(e.span, m.TASK_STATE, m.TASK_STATE_NAMES[n])
        state = self.context_global(n)
        if state is not None:
            if ctx.property and not lvalue:
                return m.Var(e.span, state.type, state)
            raise SpecError(e.span, f"'{n}' is execution-context state: properties read it, code does not",
                            "in code ask `irqs_disabled()` or `smp_processor_id()`, or keep a variable of your own")
        if n in self.process_decls:
            raise SpecError(e.span, f"'{n}' is a process, not a value", f"write `{n}@label` to ask where it is")
        if n in ctx.failed or n in self.failed:
            raise Echo(e.span, f"'{n}' failed to resolve before")
        known = list(ctx.bound) + list(ctx.params) + list(ctx.locals) + list(self.globals) \
            + list(self.consts) + list(members)
        self.failed.add(n)  # reported at its first use only, and so is `p.n` in properties
        if ctx.process is not None:
            self.failed.add(f"{ctx.process.name}.{n}")
        raise SpecError(e.span, f"unknown name '{n}'",
                        did_you_mean(n, known) or "declare it with `var`, `const` or `enum`", code="TR201")

    def _index(self, e: ast.Index, ctx: Ctx) -> m.TExpr:
        base = self._name(ast.Name(e.name_span, e.name), ctx, False)
        if not isinstance(base, m.Var) or not isinstance(base.type, m.ArrayT):
            raise SpecError(e.name_span, f"'{e.name}' is not an array",
                            f"it is a {base.type.describe()}")
        idx = self._value(self.expr(e.index, ctx))
        t = base.type
        if not m.is_intlike(idx.type):
            raise SpecError(e.index.span, f"an array index must be an integer, not {idx.type.describe()}",
                            f"'{e.name}' is indexed {t.lo}..{t.hi}")
        if isinstance(idx, m.Const) and not t.lo <= idx.value <= t.hi:
            raise SpecError(e.index.span, f"index {idx.value} is outside '{e.name}' ({t.lo}..{t.hi})",
                            f"an index of '{e.name}' is {t.lo} to {t.hi}")
        return m.Elem(e.span, t.elem, base.sym, idx)

    def _unary(self, e: ast.Unary, ctx: Ctx) -> m.TExpr:
        x = self.expr(e.operand, ctx)
        if e.op == "!":
            if not isinstance(x.type, m.BoolT):
                raise SpecError(e.operand.span, f"`!` needs a bool, not {x.type.describe()}",
                                "compare it, e.g. `x == 0`" if m.is_intlike(x.type) else "`!` negates a condition")
            return m.Const(e.span, m.BOOL, 1 - x.value) if isinstance(x, m.Const) else m.Un(e.span, m.BOOL, "!", x)
        if not m.is_intlike(x.type):
            raise SpecError(e.operand.span, f"`{e.op}` needs an integer, not {x.type.describe()}",
                            "for a bool use `!`" if isinstance(x.type, m.BoolT) else "it applies to integers only")
        t = x.type if isinstance(x.type, m.BitVecT) else m.INT
        if isinstance(x, m.Const):
            v = {"-": -x.value, "+": x.value, "~": ~x.value}[e.op]
            return m.Const(e.span, t, v & t.mask if isinstance(t, m.BitVecT) else v)
        return x if e.op == "+" else m.Un(e.span, t, e.op, x)

    def _binary(self, e: ast.Binary, ctx: Ctx) -> m.TExpr:
        op = e.op
        if op in ("&&", "||", "->"):
            a = self.cond(e.left, ctx, f"an operand of `{op}`")
            pure = dataclasses.replace(ctx, effects=False, what=f"the right operand of `{op}`")
            b = self.cond(e.right, pure, f"an operand of `{op}`")
            if isinstance(a, m.Const) and isinstance(b, m.Const):
                v = {"&&": a.value and b.value, "||": a.value or b.value,
                     "->": (not a.value) or b.value}[op]
                return m.Const(e.span, m.BOOL, int(bool(v)))
            if isinstance(a, m.Const):
                if op == "&&":
                    return b if a.value else m.Const(e.span, m.BOOL, 0)
                if op == "||":
                    return m.Const(e.span, m.BOOL, 1) if a.value else b
                return b if a.value else m.Const(e.span, m.BOOL, 1)
            if isinstance(b, m.Const):
                # a knob on the right folds too, so a dead test takes no step; the left
                # operand is dropped only when evaluating it changes nothing
                keep_a = {"&&": bool(b.value), "||": not b.value, "->": not b.value}[op]
                if keep_a:
                    return a if op != "->" else m.Un(e.span, m.BOOL, "!", a)
                if not _has_effects(a):
                    return m.Const(e.span, m.BOOL, 0 if op == "&&" else 1)
            return m.Bin(e.span, m.BOOL, op, a, b)
        a, b = self.expr(e.left, ctx), self.expr(e.right, ctx)
        if op in ("==", "!="):
            self._comparable(a, b, e)
            t: m.Type = m.BOOL
        elif op in ("<", "<=", ">", ">="):
            for x, s in ((a, e.left), (b, e.right)):
                if not m.is_intlike(x.type):
                    raise SpecError(s.span, f"`{op}` compares integers, not {x.type.describe()}",
                                    "compare bools and enum values with == and !=")
            t = m.BOOL
        else:
            for x, s in ((a, e.left), (b, e.right)):
                if not m.is_intlike(x.type) and not (op in ("&", "|", "^") and isinstance(x.type, m.BitsetT)):
                    raise SpecError(s.span, f"`{op}` needs integers, not {x.type.describe()}",
                                    "use && and || for bools" if isinstance(x.type, m.BoolT) and op in ("&", "|")
                                    else "arithmetic takes integers (and `&`, `|`, `^` bit sets)")
            t = m.INT
        # Unsigned operands: C's conversions, made explicit as Conv nodes.
        width_t = a.type if op in ("<<", ">>") else m.arith_type(a.type, b.type)
        if isinstance(width_t, m.BitVecT) and (m.is_intlike(a.type) or isinstance(a.type, m.BitsetT)):
            if op in ("<<", ">>"):
                b = self._conv(b, width_t)  # the count, in the operand's type
            else:
                a, b = self._conv(a, width_t), self._conv(b, width_t)
            if t is m.INT:
                t = width_t
        if isinstance(a, m.Const) and isinstance(b, m.Const):
            if isinstance(t, m.BitVecT):
                if op in ("/", "%") and b.value == 0:
                    raise SpecError(e.span, "division by zero in a constant expression",
                                    "the divisor is a constant 0 here: change it or guard the division")
                return m.Const(e.span, t, m.bv_binop(op, a.value, b.value, t.width, t.signed))
            if isinstance(width_t, m.BitVecT) and op in ("<", "<=", ">", ">="):
                return m.Const(e.span, t, int(m.bv_compare(op, a.value, b.value, width_t)))
            return m.Const(e.span, t, _fold(op, a.value, b.value, e.span))
        return m.Bin(e.span, t, op, a, b)

    def _conv(self, x: m.TExpr, t: m.Type) -> m.TExpr:
        """`x` converted to the fixed-width type `t` (C: modulo 2**width), or a signed
        pattern to its value where `t` is an integer range; folded if constant."""
        if isinstance(t, m.IntT):
            return self._value(x)
        if not isinstance(t, m.BitVecT) or x.type == t:
            return x
        if isinstance(x, m.Const):
            return m.Const(x.span, t, m.bv_convert(x.value, x.type, t))
        return m.Conv(x.span, t, x)

    @staticmethod
    def _value(x: m.TExpr) -> m.TExpr:
        """A signed pattern (s8 .. s64) as the integer it stands for, where an integer is
        wanted: stored into a range, an index, a bit number. Anything else is itself."""
        t = x.type
        if not (isinstance(t, m.BitVecT) and t.signed):
            return x
        if isinstance(x, m.Const):
            return m.Const(x.span, m.INT, m.to_signed(x.value, t.width))
        return m.Conv(x.span, m.INT, x)

    def _comparable(self, a: m.TExpr, b: m.TExpr, e: ast.Binary):
        ta, tb = a.type, b.type
        if m.is_intlike(ta) and m.is_intlike(tb):
            return
        if isinstance(ta, m.BitsetT) and (m.is_intlike(tb) or isinstance(tb, m.BitsetT)):
            return
        if isinstance(tb, m.BitsetT) and m.is_intlike(ta):
            return
        if isinstance(ta, m.BoolT) and isinstance(tb, m.BoolT):
            return
        if isinstance(ta, m.EnumT) and ta == tb:
            return
        raise SpecError(e.span, f"cannot compare {ta.describe()} with {tb.describe()}",
                        "both sides of == and != must have the same type")

    def _join(self, a: m.TExpr, b: m.TExpr, span: Span) -> m.Type:
        if m.is_intlike(a.type) and m.is_intlike(b.type):
            return m.arith_type(a.type, b.type)
        if type(a.type) is type(b.type) and (not isinstance(a.type, m.EnumT) or a.type == b.type):
            return a.type
        raise SpecError(span, f"the branches of `?:` have different types ({a.type.describe()} and {b.type.describe()})",
                        "give both branches the same type")

    def _call(self, e: ast.Call, ctx: Ctx) -> m.TExpr:
        if e.name in self.fns:
            return self._expand_fn(e, ctx)
        width_t = m.fixed_width_type(e.name)
        if width_t is not None:
            if len(e.args) != 1:
                raise SpecError(e.span, f"the conversion '{e.name}(x)' takes one argument",
                                f"e.g. `{e.name}(x)`")
            x = self.expr(e.args[0], dataclasses.replace(ctx, effects=False))
            if not m.is_intlike(x.type) and not isinstance(x.type, m.BitsetT):
                raise SpecError(e.args[0].span, f"cannot convert {x.type.describe()} to {e.name}",
                                "a conversion takes an integer or a bit set" + ("; for a bool write `b ? 1 : 0`"
                                                                                if isinstance(x.type, m.BoolT) else ""))
            return _respan(self._conv(x, width_t), e.span) if x.type != width_t else x
        name = ALIASES.get(e.name, e.name)
        if name in BUILTINS:
            return self._builtin(e, ctx, statement=False)
        if e.name in self.inlines:
            raise SpecError(e.name_span, f"inline procedure '{e.name}' has no value",
                            "call it as a statement; for a value use `fn NAME(args) = expr;`")
        if e.name in self.failed:
            raise Echo(e.name_span, f"'{e.name}' failed to resolve before")
        self.failed.add(e.name)
        raise SpecError(e.name_span, f"unknown function '{e.name}'",
                        did_you_mean(e.name, list(self.fns) + list(BUILTINS) + list(ALIASES))
                        or "declare it with `fn NAME(args) = expr;`", code="TR201")

    def _builtin(self, e: ast.Call, ctx: Ctx, statement: bool) -> m.Builtin | m.Const:
        """The call, or the constant it folds to (a pure function of constants)."""
        name = ALIASES.get(e.name, e.name)
        sig = BUILTINS[name]
        if not len(sig.args) - sig.optional <= len(e.args) <= len(sig.args):
            takes = f"{len(sig.args) - sig.optional} or {len(sig.args)}" if sig.optional else f"{len(sig.args)}"
            raise SpecError(e.span, f"'{e.name}' takes {takes} argument(s), not {len(e.args)}",
                            f"it is `{signature(sig)}`")
        if sig.effect and not ctx.effects:
            raise SpecError(e.span, f"'{e.name}' changes state and cannot appear in {ctx.what}",
                            "side effects belong in statements: assignments, `if`/`while` conditions, calls")
        if sig.statement_only and not statement:
            raise SpecError(e.span, f"'{e.name}()' is a statement, not a value",
                            "call it on a line of its own, `" + e.name + "(...);`")
        if name in WAITQUEUE_BUILTINS and ctx.process is None:
            raise SpecError(e.span, f"'{e.name}' needs a process context",
                            "wait-queue operations belong in a process body, where a task can sleep")
        bits_t: m.BitsetT | None = None
        resolved: dict[int, m.TExpr] = {}
        for i, (kind, a) in enumerate(zip(sig.args, e.args)):
            if kind is Arg.BITS:  # first, so that a bit number can be checked against it
                x = self.expr(a, ctx, lvalue=True)
                if not isinstance(x, (m.Var, m.Elem)) or not isinstance(x.type, m.BitsetT):
                    raise SpecError(a.span, f"'{e.name}' needs a bit set variable here, not {x.type.describe()}",
                                    "declare it as `var name: bitset(N);`")
                bits_t = x.type
                resolved[i] = x
        if sig.cls is Cls.CONTEXT and self.cpus is None:
            raise SpecError(e.span, f"'{e.name}' needs the model's CPUs",
                            "declare them first: `cpus 2;` (CPUs 0 and 1), and where code runs: "
                            "`process NAME on cpu 0`, `interrupt NAME on cpu 0`")
        if sig.cls is Cls.CONTEXT and sig.ctx not in (CtxOp.RAISE, CtxOp.RAISE_ON, CtxOp.PER_CPU, CtxOp.TIMER_START,
                                                      CtxOp.TIMER_CANCEL) \
                and ctx.process is None:
            raise SpecError(e.span, f"'{e.name}' needs a thread or an interrupt handler",
                            "it acts on the CPU the code runs on: call it in `process NAME on cpu C` "
                            "or in an `interrupt`")
        for i, (kind, a) in enumerate(zip(sig.args, e.args)):
            if kind is Arg.BITS:
                continue
            if kind in (Arg.IRQ, Arg.PERCPU, Arg.EXIT):
                x = self._context_arg(kind, a, ctx, e.name)
            elif kind is Arg.LOCK:
                x = self.expr(a, ctx, lvalue=True)
                if not isinstance(x, (m.Var, m.Elem)) or x.type != m.BOOL:
                    raise SpecError(a.span, f"'{e.name}' needs a lock here, not {x.type.describe()}",
                                    "declare a spinlock as a bool variable: `var lock: bool = false;`")
            elif kind is Arg.LV:
                x = self.expr(a, ctx, lvalue=True)
                if isinstance(x, (m.Var, m.Elem)) and isinstance(x.type, m.BitsetT):
                    raise SpecError(a.span, f"'{e.name}' takes a scalar variable; '{_root_name(a)}' is a bit set",
                                    "change bits with set_bit/clear_bit (or their atomic forms), or assign the "
                                    "whole set: `s = {...};`", "TR207")
                if not isinstance(x, (m.Var, m.Elem)) or isinstance(x.type, (m.ArrayT, m.WaitQueueT, m.BitsetT)):
                    raise SpecError(a.span, f"'{e.name}' needs a variable here",
                                    "pass a scalar variable or an array element")
            elif kind is Arg.WQ:
                x = self.expr(a, ctx, lvalue=True)
                if not isinstance(x, (m.Var, m.Elem)) or not isinstance(x.type, m.WaitQueueT):
                    raise SpecError(a.span, f"'{e.name}' needs a wait queue, not {x.type.describe()}",
                                    "declare one with `waitqueue name;`")
            elif kind is Arg.NR:
                assert bits_t is not None, "a primitive with a bit number has its bit set (the table's rows)"
                x = self._value(self.expr(a, dataclasses.replace(ctx, effects=False)))
                self._check_bitnr_type(x, bits_t, a.span)
                if isinstance(x, m.Const) and not 0 <= x.value < bits_t.size:
                    raise SpecError(a.span, f"bit {x.value} is outside {bits_t.describe()}",
                                    f"its bits are 0 to {bits_t.size - 1}")
            else:
                x = self.expr(a, dataclasses.replace(ctx, effects=False, what="an argument"))
            resolved[i] = x
        args = [resolved[i] for i in range(len(e.args))]
        lv_type = args[0].type if args else None
        # the location a read-modify-write acts on (the second argument of atomic_add(i, v))
        loc_type = next((x.type for k, x in zip(sig.args, args) if k is Arg.LV), lv_type)
        for i, (kind, x, a) in enumerate(zip(sig.args, args, e.args)):
            if kind is Arg.VAL and sig.args[0] is Arg.LV and lv_type is not None:
                self._check_assignable(lv_type, x, a.span, "the variable")
                args[i] = self._conv(x, lv_type)
        if sig.args[:1] == (Arg.PERCPU,):  # the value, or the CPU, against the per-CPU variable
            percpu = args[0].type
            assert isinstance(percpu, m.ArrayT)  # a per-CPU variable is its CPUs' array
            elem = percpu.elem
            if sig.ctx is CtxOp.THIS_CPU_WRITE:
                self._check_assignable(elem, args[1], e.args[1].span, "the variable")
                args[1] = self._conv(args[1], elem)
            lv_type = elem
        arith = sig.op in (RmwOp.ADD, RmwOp.SUB, RmwOp.OR)
        if arith and sig.step is None:  # by an argument, in the kernel's order (i, v)
            if not m.is_intlike(args[1].type) or not m.is_intlike(args[0].type):
                raise SpecError(e.span, f"'{e.name}' works on integers",
                                f"it is `{signature(sig)}` on an integer variable")
            if isinstance(args[0].type, m.BitVecT) and args[0].type.signed:  # C converts i to v's type
                args[0] = self._conv(args[0], args[1].type)
        if sig.op is RmwOp.OR and not isinstance(args[1].type, m.BitVecT):
            raise SpecError(e.args[1].span, f"'{e.name}' needs an unsigned fixed-width variable (u8 .. u64), "
                            f"not {args[1].type.describe()}", "declare it as `var v: u32;`")
        if arith and sig.step is not None and not m.is_intlike(args[0].type):
            raise SpecError(e.args[0].span, f"'{e.name}' needs an integer variable, not {args[0].type.describe()}",
                            f"it is `{signature(sig)}` on an int, range or fixed-width variable")
        if sig.cls is Cls.PURE:
            for x, a in zip(args, e.args):
                if not m.is_intlike(x.type):
                    raise SpecError(a.span, f"'{name}' takes integers, not {x.type.describe()}",
                                    f"it is `{signature(sig)}`")
            joined = m.arith_type(args[0].type, args[-1].type)
            args = [self._conv(x, joined) for x in args]
        result: m.Type
        if sig.result is Result.LV:
            assert lv_type is not None, "a primitive whose value has its first argument's type has one"
            result = lv_type if isinstance(lv_type, m.BitVecT) or not m.is_intlike(lv_type) else m.INT
        elif sig.cls is Cls.PURE:
            result = m.arith_type(args[0].type, args[-1].type)
        elif sig.result is Result.INT and isinstance(loc_type, m.BitVecT):
            result = loc_type  # atomic_inc_return on an unsigned counter wraps
        else:
            result = {Result.VOID: m.VOID, Result.BOOL: m.BOOL, Result.INT: m.INT}[sig.result]
        if result is m.VOID and not statement:
            raise SpecError(e.span, f"'{e.name}' has no value", "call it as a statement")
        consts = [x for x in args if isinstance(x, m.Const)]
        if sig.cls is Cls.PURE and len(consts) == len(args):
            if sig.pure is Pure.ABS:
                v = abs(m.value_of(consts[0].value, result))
                return m.Const(e.span, result, v & result.mask if isinstance(result, m.BitVecT) else v)
            if isinstance(result, m.BitVecT):  # compare the patterns as values
                pick = (min if sig.pure is Pure.MIN else max)(consts, key=lambda x: m.value_of(x.value, result))
                return m.Const(e.span, result, pick.value)
            fold = min if sig.pure is Pure.MIN else max
            return m.Const(e.span, result, fold(consts[0].value, consts[1].value))
        return m.Builtin(e.span, result, name, tuple(args))

    def _check_bitnr_type(self, x: m.TExpr, t: m.BitsetT | None, span: Span):
        if t is None:
            return
        if t.elem is not None:
            if x.type != t.elem and not m.is_intlike(x.type):
                raise SpecError(span, f"a bit of {t.describe()} is a {t.elem.name} member, not {x.type.describe()}",
                                f"name a member of {t.elem.name}")
        elif not m.is_intlike(x.type):
            raise SpecError(span, f"a bit number must be an integer, not {x.type.describe()}",
                            "declare the set as bitset(Enum) to use enum members as bits")

    def _process_index(self, e, ctx: Ctx, example: str) -> m.TExpr | None:
        """The instance named by `p[i]` in `p[i]@label` or `p[i].name` (None for a single
        process), checked against the process array's size."""
        count = self.process_counts[e.process]
        if count is None:
            if e.index is not None:
                raise SpecError(e.index.span, f"'{e.process}' is a single process, not an array",
                                f"write `{e.process}`, without an index")
            return None
        if e.index is None:
            raise SpecError(e.process_span, f"'{e.process}' is an array of {count} processes",
                            f"name one: {example}")
        idx = self._value(self.expr(e.index, dataclasses.replace(ctx, effects=False)))
        if not m.is_intlike(idx.type):
            raise SpecError(e.index.span, "a process index must be an integer",
                            f"'{e.process}' has instances 0..{count - 1}")
        if isinstance(idx, m.Const) and not 0 <= idx.value < count:
            raise SpecError(e.index.span, f"process index {idx.value} is outside 0..{count - 1}",
                            f"'{e.process}' has {count} instances, 0 to {count - 1}")
        return idx

    def _at(self, e: ast.AtLabel, ctx: Ctx) -> m.TExpr:
        if e.process in self.failed:
            raise Echo(e.process_span, f"process '{e.process}' failed to resolve before")
        if e.process not in self.process_decls:
            raise SpecError(e.process_span, f"unknown process '{e.process}'", _which_process(e.process,
                            self.process_decls), code="TR201")
        idx = self._process_index(e, ctx, f"{e.process}[i]@{e.label}")
        labels = self.process_labels.get(e.process)
        if labels is None or self.errors:  # a label in a statement that failed was never collected
            labels = (labels or set()) | labels_of(self.process_decls[e.process], self.inlines)
        if self.process_decls[e.process].interrupt:  # a handler waiting for its interrupt
            labels = set(labels) | {m.IRQ_IDLE}
        if e.label not in labels and e.label != "end":  # `end`: at any valid end state
            if f"{e.process}@{e.label}" in self.failed:
                raise Echo(e.label_span, f"'{e.process}@{e.label}' failed to resolve before")
            self.failed.add(f"{e.process}@{e.label}")  # reported at its first use only
            raise SpecError(e.label_span, f"process '{e.process}' has no label '{e.label}'",
                            did_you_mean(e.label, labels) or
                            (f"its labels: {', '.join(sorted(labels))}" if labels else "it has no labels"))
        return m.At(e.span, m.BOOL, e.process, idx, e.label)

    def _local_ref(self, e: ast.LocalRef, ctx: Ctx) -> m.TExpr:
        """`p.r`: another process's register, visible to properties only (a process reads
        its own locals by name and cannot see another's)."""
        if e.process in self.failed or f"{e.process}.{e.name}" in self.failed:
            raise Echo(e.span, f"'{e.process}.{e.name}' failed to resolve before")
        if e.process not in self.process_decls:
            raise SpecError(e.process_span, f"unknown process '{e.process}'", _which_process(e.process,
                            self.process_decls), code="TR201")
        if e.name == "state" and all(v.name != "state" for v in self.process_decls[e.process].locals):
            return self._task_state(e, ctx)
        if ctx.process is not None:
            raise SpecError(e.span, f"'{e.process}.{e.name}' is another process's local variable",
                            "processes share only global variables; properties may read locals as proc.name")
        idx = self._process_index(e, ctx, f"{e.process}[i].{e.name}")
        proc = self.processes.get(e.process)
        if proc is None:
            raise SpecError(e.span, f"'{e.process}.{e.name}' can only be read by properties",
                            "a process reads its own locals by name; share a value through a global")
        sym = next((v for v in proc.locals if v.name == e.name), None)
        if sym is not None:
            self.read_locals.add(id(sym))
        elif e.name in m.CONTEXT_LOCALS and proc.context is not None and proc.context.kind is m.ContextKind.THREAD:
            sym = self.context_local(proc, e.name)
        if sym is None:
            names = [v.name for v in proc.locals]
            raise SpecError(e.name_span, f"process '{e.process}' has no local variable '{e.name}'",
                            did_you_mean(e.name, names) or
                            (f"its locals: {', '.join(names)}" if names else "it declares no locals"))
        if isinstance(sym.type, m.ArrayT):
            raise SpecError(e.name_span, f"'{e.process}.{e.name}' is an array; properties read scalar locals",
                            "copy the element you need into a scalar local")
        return m.LocalOf(e.span, sym.type, sym, e.process, idx)

    def _task_state(self, e: ast.LocalRef, ctx: Ctx) -> m.TExpr:
        """`P.state`: P's task state (RUNNING or INTERRUPTIBLE), which the kernel reads
        as `current->state` (kvm_sched_out) and traces print: readable by properties and
        by process code alike. A process that never waits is always RUNNING."""
        idx = self._process_index(e, ctx, f"{e.process}[i].state")
        sym = self.task_syms.get(e.process)
        if sym is None:
            sym = self.task_syms[e.process] = m.VarSym("state", m.TASK_STATE, m.Scope.LOCAL,
                                                       self.process_decls[e.process].span, ((0,),),
                                                       process=e.process, task=True)
        return m.LocalOf(e.span, m.TASK_STATE, sym, e.process, idx)

    def _quant(self, e: ast.Quantifier, ctx: Ctx) -> m.TExpr:
        lo = self.const_int(e.lo, "a quantifier bound")
        hi = self.const_int(e.hi, "a quantifier bound")
        if hi - lo > 64:
            raise SpecError(e.span, "a quantifier ranges over at most 65 values",
                            "narrow the range, or split the property")
        b = m.Bound(e.span, m.IntT(lo, hi) if lo <= hi else m.INT, e.var, next(self.uid))
        inner = dataclasses.replace(ctx, bound={**ctx.bound, e.var: b}, effects=False)
        body = self.cond(e.body, inner, f"the body of `{e.kind}`")
        return m.Quant(e.span, m.BOOL, e.kind, b, lo, hi, body)

    def _check_assignable(self, target: m.Type, value: m.TExpr, span: Span, what: str):
        tv = value.type
        ok = (m.is_intlike(target) and m.is_intlike(tv)) or \
            (isinstance(target, m.BoolT) and isinstance(tv, m.BoolT)) or \
            (isinstance(target, m.EnumT) and target == tv) or \
            (isinstance(target, m.BitsetT) and (tv == target or m.is_intlike(tv)))
        if not ok:
            raise SpecError(span, f"type mismatch: {what} is {target.describe()}, the value is {tv.describe()}",
                            "a bool is true/false; compare integers to get one" if isinstance(target, m.BoolT)
                            else f"give it a value of {target.describe()}", code="TR203")

    def _check_static_range(self, target: m.Type, value: m.TExpr, span: Span, name: str):
        if isinstance(target, m.IntT) and target.lo is not None and target.hi is not None \
                and isinstance(value, m.Const) and not target.lo <= value.value <= target.hi:
            raise SpecError(span, f"value {value.value} is outside the range of '{name}' ({target.lo}..{target.hi})",
                            f"widen the range of '{name}', or store a value in {target.lo}..{target.hi}")


# ---- helpers---------------------------------------------------------------


def _has_effects(e: m.TExpr) -> bool:
    """Whether evaluating the expression changes state (a side-effecting builtin inside)."""
    if isinstance(e, m.Builtin) and BUILTINS[e.name].effect:
        return True
    return any(_has_effects(x) for x in _children(e))


def _children(e: m.TExpr):
    for attr in ("operand", "left", "right", "cond", "then", "orelse", "index", "body"):
        x = getattr(e, attr, None)
        if isinstance(x, m.TExpr):
            yield x
    if isinstance(e, m.Builtin):
        yield from e.args


def _respan(e: m.TExpr, span: Span) -> m.TExpr:
    """An inline argument or a function's expansion keeps its meaning but points at the
    use site (so a trace shows `if (check_block(...))`, not the function's body)."""
    return dataclasses.replace(e, span=span)


def _fold(op: str, a: int, b: int, span: Span) -> int:
    if op in ("/", "%") and b == 0:
        raise SpecError(span, "division by zero in a constant expression",
                        "the divisor is a constant 0 here: change it or guard the division")
    if op in ("<<", ">>") and b < 0:
        raise SpecError(span, "negative shift count", "shift by 0 or more")
    if op == "<<" and b > 256:
        raise SpecError(span, "shift count too large", "shift by at most 256 in a constant")
    v = m.fold_binop(op, a, b)
    if v is None:
        raise ValueError(op)
    return v


def _root_name(e: ast.Expr) -> str:
    """The variable an lvalue expression names (`s` of `s` or `s[i]`), for messages."""
    return getattr(e, "name", None) or getattr(getattr(e, "base", None), "name", None) or "it"


def _which_process(name: str, processes) -> str:
    """The hint of an unknown process: the closest name, else every process."""
    return did_you_mean(name, processes) or ("processes: " + ", ".join(processes) if processes else
                                             "declare it with `process NAME { ... }`")
