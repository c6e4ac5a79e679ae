"""A reader for the Linux kernel's litmus C format (tools/memory-model/litmus-tests).

herd7 is the reference for this format; this reader takes the subset that loop-free
kernel litmus tests use (see spec/LANGUAGE.md, "Litmus tests") and refuses everything
else with a SpecError naming the construct, so `check FILE.litmus` exits 2 with
`file:line:col`, the line and a caret instead of guessing.
"""

from __future__ import annotations

import re

from ..base.errors import Span, SpecError
from ..base.record import record

# ---------------------------------------------------------------- syntax tree


@record
class Num:
    value: int
    span: Span


@record
class Name:
    """A register, a parameter (a pointer to the location of that name) or a location."""

    name: str
    span: Span


@record
class Deref:
    """`*e`: the location named by READ_ONCE/WRITE_ONCE, elsewhere a plain C read."""

    pointer: object
    span: Span


@record
class AddrOf:
    name: str
    span: Span


@record
class Unary:
    op: str
    operand: object
    span: Span


@record
class Binary:
    op: str
    left: object
    right: object
    span: Span


@record
class Call:
    func: str
    args: tuple
    span: Span


@record
class Assign:
    reg: str
    value: object
    span: Span


@record
class Store:
    """`*p = v;`: a plain C write (the LKMM's Plain accesses, with its data-race rules)."""

    pointer: object
    value: object
    span: Span


@record
class ExprStmt:
    expr: object
    span: Span


@record
class If:
    cond: object
    then: tuple
    orelse: tuple
    span: Span


@record
class LoopCut:
    """Where herd7's unrolling of a `while` stops: a path that would run the body once
    more is left out (herd7 prints `Loop` before Ok/No and warns)."""

    span: Span


@record
class Thread:
    index: int
    params: tuple[str, ...]
    body: tuple
    registers: tuple[str, ...]
    span: Span
    reg_init: tuple[tuple[str, object], ...] = ()  # `0:r0=1;` in the initial state: int or location name


# condition propositions
@record
class Atom:
    """`0:r0=1`, `x=2`, `x!=2` (thread None: a memory location)."""

    thread: int | None
    name: str
    value: object  # int, or a location name (a pointer value)
    negated: bool
    span: Span


@record
class PropOp:
    op: str  # 'and', 'or', 'not', 'true', 'false'
    args: tuple


@record
class Condition:
    quantifier: str  # 'exists', '~exists', 'forall'
    prop: object
    text: str


@record
class Litmus:
    name: str
    file: str
    source: str
    init: tuple[tuple[str, object], ...]  # location -> int or location name
    threads: tuple[Thread, ...]
    locations: tuple[tuple[int | None, str], ...]
    filter: object | None
    condition: Condition
    expected: str | None  # the `Result:` line: Never / Sometimes / Always, or DEADLOCK / Maybe
    expected_race: bool = False  # `Result: Sometimes DATARACE`: herd7 must flag a data race


# ---------------------------------------------------------------- lexer

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v\n]+)
  | (?P<ocomment>\(\*)
  | (?P<ccomment>/\*)
  | (?P<lcomment>//[^\n]*)
  | (?P<string>"[^"\n]*")
  | (?P<tid>[0-9]+:)
  | (?P<num>0x[0-9a-fA-F]+|[0-9]+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>/\\|\\/|==|!=|<=|>=|&&|\|\||[-+*/%&|^!~<>=(){}\[\];,:.])
""", re.X)

UNROLL = 2  # herd7's -unroll default: a `while` body runs at most this many times

_TYPES = {"int", "long", "unsigned", "char", "short", "atomic_t", "atomic_long_t", "spinlock_t", "u32", "u64",
          "u8", "u16", "bool", "intptr_t", "uintptr_t", "volatile", "const", "struct", "srcu_struct"}
# SRCU is refused: herd7 7.56 with this LKMM (../shared/tools/herd7) flags every
# srcu_read_lock/unlock pair as unbalanced (the bell's srcu-rscs needs a data link from
# the lock's value to the unlock that its front end does not make), so there is no
# oracle to check an SRCU semantics against. call_rcu needs callbacks.
SRCU_CALLS = {"srcu_read_lock", "srcu_read_unlock", "synchronize_srcu", "synchronize_srcu_expedited",
              "smp_mb__after_srcu_read_unlock", "srcu_down_read", "srcu_up_read"}
UNSUPPORTED_CALLS = {"call_rcu": "callbacks are not litmus-test code (herd7 has no call_rcu either)",
                     "rcu_barrier": "it waits for call_rcu callbacks, which are not modelled"}


@record
class Tok:
    kind: str
    text: str
    line: int
    col: int
    end_col: int


def _tokens(source: str, file: str) -> list[Tok]:
    out, i, line, line_start, depth = [], 0, 1, 0, 0
    n = len(source)
    while i < n:
        m = _TOKEN.match(source, i)
        if m is None:
            col = i - line_start + 1
            raise SpecError(Span(file, line, col, line, col + 1), f"unexpected character {source[i]!r}",
                            "litmus C: only the kernel's litmus-test syntax is read")
        kind, text = m.lastgroup or "", m.group()  # every alternative of _TOKEN is named
        if kind == "ocomment" and depth:  # inside C code `(*x` is a parenthesis and a deref
            m = _TOKEN.match(source, i, i + 1)
            assert m is not None  # `(` alone is an operator
            kind, text = "op", "("
        if kind == "op" and text in "{}":
            depth += 1 if text == "{" else -1
        if kind in ("ocomment", "ccomment"):
            close = "*)" if kind == "ocomment" else "*/"
            j = source.find(close, m.end())
            if j < 0:
                col = i - line_start + 1
                raise SpecError(Span(file, line, col, line, col + 2), "comment is never closed",
                                f"end it with '{close}'")
            text = source[i:j + 2]
            end = j + 2
            kind = "comment"
        else:
            end = m.end()
        col = i - line_start + 1
        if kind not in ("ws", "lcomment"):
            out.append(Tok(kind, text, line, col, col + len(text) if "\n" not in text else col + 1))
        nl = source.count("\n", i, end)
        if nl:
            line += nl
            line_start = source.rfind("\n", i, end) + 1
        i = end
    out.append(Tok("eof", "", line, i - line_start + 1, i - line_start + 2))
    return out


# ---------------------------------------------------------------- parser

# the kernel's scripts/judgelitmus.sh: DEADLOCK means no execution at all ("Never 0 0"),
# Maybe accepts any verdict, and a trailing DATARACE predicts the data-race flag
EXPECTED_RE = re.compile(r"Result:[ \t]*(Never|Sometimes|Always|DEADLOCK|Maybe)\b([ \t]+DATARACE\b)?")


# diy7's header lines between the name line and the initial state (Generator=, Hash=,
# Com=, Orig=, Cycle=, Relax=, Safe=, Prefetch=, ...): herd7 reads any `Key=...` line there
# as information about the test, and so does this reader (it skips them)
_INFO_LINE = re.compile(r"[ \t]*[A-Za-z][A-Za-z0-9_.-]*[ \t]*=")


def _without_info_lines(source: str) -> str:
    """The source with its header lines blanked (line numbers kept for the spans)."""
    lines = source.split("\n")
    for i in range(1, len(lines)):
        if lines[i].lstrip().startswith("{"):
            break
        if _INFO_LINE.match(lines[i]):
            lines[i] = ""
    return "\n".join(lines)


class _Parser:
    def __init__(self, source: str, file: str):
        self.file = file
        self.source = source
        toks = _tokens(_without_info_lines(source), file)
        self.comments = [t for t in toks if t.kind == "comment"]
        self.toks = [t for t in toks if t.kind != "comment"]
        self.i = 0
        self.reg_init: list = []  # (thread, register, value, token) from the initial state

    # helpers
    def peek(self, k: int = 0) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def span(self, t: Tok) -> Span:
        return Span(self.file, t.line, t.col, t.line, t.end_col)

    def error(self, t: Tok, message: str, hint: str | None = None):
        return SpecError(self.span(t), message, hint)

    def next(self) -> Tok:
        t = self.peek()
        self.i += 1
        return t

    def at(self, text: str) -> bool:
        t = self.peek()
        return t.text == text and t.kind in ("op", "name")

    def expect(self, text: str, what: str | None = None) -> Tok:
        t = self.peek()
        if not self.at(text):
            found = "the end of the file" if t.kind == "eof" else f"'{t.text}'"
            raise self.error(t, f"expected '{text}'{' ' + what if what else ''}, found {found}")
        return self.next()

    def name(self, what: str) -> Tok:
        t = self.peek()
        if t.kind != "name":
            found = "the end of the file" if t.kind == "eof" else f"'{t.text}'"
            raise self.error(t, f"expected {what}, found {found}")
        return self.next()

    # file
    def litmus(self) -> Litmus:
        t = self.peek()
        if t.text != "C":
            raise self.error(t, "a litmus C test starts with 'C NAME'",
                             "the first word names the architecture; only C (the kernel's LKMM tests) is read")
        self.next()
        name_tok = self.peek()
        if name_tok.kind == "eof":
            raise self.error(name_tok, "expected the test's name after 'C'")
        # a test name may contain + . - and digits: take the raw text up to the end of the line
        line_text = self.source.split("\n")[name_tok.line - 1]
        name = line_text[name_tok.col - 1:].split()[0] if line_text[name_tok.col - 1:].split() else ""
        while self.peek().line == name_tok.line and self.peek().kind != "eof":
            self.next()
        if self.peek().kind == "string":
            self.next()
        init = self.init_block()
        threads: list[Thread] = []
        while self.peek().kind == "name" and re.fullmatch(r"P[0-9]+", self.peek().text):
            threads.append(self.thread(len(threads)))
        if not threads:
            raise self.error(self.peek(), "expected a thread 'P0(...) { ... }'")
        for tid, reg, _, tok in self.reg_init:
            if tid >= len(threads):
                raise self.error(tok, f"initial value of '{tid}:{reg}', but the test has no thread P{tid}")
        locations, filt = (), None
        while True:
            if self.at("locations"):
                locations = self.locations()
            elif self.at("filter"):
                self.next()
                filt = self.prop()
            else:
                break
        cond = self.condition()
        if self.peek().kind != "eof":
            raise self.error(self.peek(), f"unexpected '{self.peek().text}' after the final condition")
        expected, race = None, False
        for c in self.comments:
            m = EXPECTED_RE.search(c.text)
            if m:
                expected, race = m.group(1), m.group(2) is not None
                break
        return Litmus(name, self.file, self.source, tuple(init), tuple(threads), locations, filt, cond, expected,
                      race)

    def init_block(self):
        self.expect("{", "to open the initial state")
        items = []
        while not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error(self.peek(), "the initial state '{' is never closed")
            start = self.peek()
            if start.kind == "tid":  # `0:r0=1;`: a register's value when its thread starts
                tid = int(start.text[:-1])
                self.next()
                reg = self.name("a register after the thread number")
                value = 0
                if self.at("="):
                    self.next()
                    value = self.init_value()
                self.reg_init.append((tid, reg.text, value, start))
                if not self.at("}"):
                    self.expect(";", "after an initial value")
                continue
            words = []
            while self.peek().kind == "name" or self.at("*"):
                words.append(self.next())
            if not words or words[-1].kind != "name":
                raise self.error(self.peek(), "expected a location in the initial state")
            loc = words[-1].text
            for w in words[:-1]:
                if w.kind == "name" and w.text not in _TYPES:
                    raise self.error(w, f"unknown type '{w.text}' in the initial state")
            value: object = 0
            if self.at("="):
                self.next()
                value = self.init_value()
            if self.at("["):
                raise self.error(self.peek(), "arrays are not supported in litmus tests")
            items.append((loc, value))
            if not self.at("}"):
                self.expect(";", "after an initial value")
        self.next()
        seen = {}
        for loc, v in items:
            seen[loc] = v
        return list(seen.items())

    def init_value(self):
        """A number, a location (`x` or `&x`) or `ATOMIC_INIT(n)`; a leading '-' negates a number."""
        v = self.peek()
        if self.at("&"):
            self.next()
            return self.name("a location after '&'").text
        if v.kind == "name" and v.text in ("ATOMIC_INIT", "ATOMIC_LONG_INIT"):
            self.next()
            self.expect("(", f"after '{v.text}'")
            n = self.init_value()
            if not isinstance(n, int):
                raise self.error(v, f"'{v.text}' takes a number")
            self.expect(")", f"to close '{v.text}('")
            return n
        if v.kind == "name":
            return self.next().text
        sign = 1
        if self.at("-") and self.peek(1).kind == "num":
            self.next()
            sign, v = -1, self.peek()
        if v.kind == "num":
            return sign * int(self.next().text, 0)
        raise self.error(v, "expected a number, a location or ATOMIC_INIT(n) as an initial value")

    def thread(self, index: int) -> Thread:
        head = self.next()
        if int(head.text[1:]) != index:
            raise self.error(head, f"threads must be numbered in order: expected P{index}, found {head.text}")
        self.expect("(")
        params = []
        while not self.at(")"):
            words = []
            while self.peek().kind == "name" or self.at("*"):
                words.append(self.next())
            if not words or words[-1].kind != "name":
                raise self.error(self.peek(), "expected a parameter such as 'int *x'")
            for w in words[:-1]:
                if w.kind == "name" and w.text not in _TYPES:
                    raise self.error(w, f"unknown type '{w.text}'")
            params.append(words[-1].text)
            if not self.at(")"):
                self.expect(",", "between parameters")
        self.next()
        init_regs = [(reg, v) for tid, reg, v, _ in self.reg_init if tid == index]
        self.registers: list[str] = [reg for reg, _ in init_regs]
        self.params = params
        body = self.block()
        return Thread(index, tuple(params), tuple(body), tuple(self.registers), self.span(head), tuple(init_regs))

    def block(self) -> list:
        self.expect("{")
        out = []
        while not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error(self.peek(), "a '{' block is never closed")
            out.extend(self.statement())
        self.next()
        return out

    def statement(self) -> list:
        t = self.peek()
        if self.at("{"):
            return self.block()
        if self.at(";"):
            self.next()
            return []
        if t.kind == "name" and t.text in _TYPES:
            return self.declaration()
        if t.kind == "name" and t.text == "if":
            self.next()
            self.expect("(", "after 'if'")
            cond = self.expr()
            self.expect(")", "to close the condition")
            then = self.statement()
            orelse = []
            if self.at("else"):
                self.next()
                orelse = self.statement()
            return [If(cond, tuple(then), tuple(orelse), self.span(t))]
        if t.kind == "name" and t.text == "while":
            self.next()
            self.expect("(", "after 'while'")
            cond = self.expr()
            self.expect(")", "to close the condition")
            body = tuple(self.statement())
            # herd7's unrolling: the condition is tested up to UNROLL + 1 times; a path on
            # which it still holds the last time is cut (LoopCut), not run further
            loop: tuple = (If(cond, (LoopCut(self.span(t)),), (), self.span(t)),)
            for _ in range(UNROLL):
                loop = (If(cond, body + loop, (), self.span(t)),)
            return list(loop)
        if t.kind == "name" and t.text in ("for", "do", "goto", "return", "switch", "break", "continue"):
            raise self.error(t, f"'{t.text}' is not supported in litmus tests here",
                             "herd7's unrolled loops are read as 'while (c) ...'; write the loop that way")
        if t.kind == "name" and self.peek(1).text == "=" and self.peek(1).kind == "op":
            if t.text not in self.registers:
                if t.text in self.params:
                    raise self.error(t, f"'{t.text}' is a parameter (a pointer): assigning it is not supported")
                raise self.error(t, f"'{t.text}' is not a declared register",
                                 f"declare it first: 'int {t.text};'")
            self.next()
            self.next()
            value = self.expr()
            self.expect(";", "after the assignment")
            return [Assign(t.text, value, self.span(t))]
        if self.at("*"):  # a plain write `*p = v;` (or a plain read as a statement)
            target = self.unary()
            if self.at("="):
                self.next()
                value = self.expr()
                self.expect(";", "after the assignment")
                return [Store(target.pointer, value, self.span(t))]
            self.expect(";", "after the statement")
            return [ExprStmt(target, self.span(t))]
        e = self.expr()
        self.expect(";", "after the statement")
        return [ExprStmt(e, self.span(t))]

    def declaration(self) -> list:
        while self.peek().kind == "name" and self.peek().text in _TYPES:
            self.next()
        out = []
        while True:
            while self.at("*"):
                self.next()
            reg = self.name("a register name")
            if reg.text in self.params:
                raise self.error(reg, f"register '{reg.text}' has the name of a parameter")
            if reg.text not in self.registers:
                self.registers.append(reg.text)
            if self.at("["):
                raise self.error(self.peek(), "arrays are not supported in litmus tests")
            if self.at("="):
                self.next()
                out.append(Assign(reg.text, self.expr(), self.span(reg)))
            if self.at(","):
                self.next()
                continue
            self.expect(";", "after the declaration")
            return out

    # expressions: C precedence, the subset litmus tests use
    _LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"),
               ("*", "/", "%"))

    def expr(self, level: int = 0):
        if level == len(self._LEVELS):
            return self.unary()
        left = self.expr(level + 1)
        while self.peek().kind == "op" and self.peek().text in self._LEVELS[level]:
            op = self.next()
            right = self.expr(level + 1)
            left = Binary(op.text, left, right, self.span(op))
        return left

    def unary(self):
        t = self.peek()
        if self.at("!") or self.at("-") or self.at("~"):
            self.next()
            return Unary(t.text, self.unary(), self.span(t))
        if self.at("*"):
            self.next()
            return Deref(self.unary(), self.span(t))
        if self.at("&"):
            self.next()
            return AddrOf(self.name("a location after '&'").text, self.span(t))
        if self.at("("):
            self.next()
            if self.peek().kind == "name" and self.peek().text in _TYPES:
                raise self.error(self.peek(), "casts are not supported in litmus tests")
            e = self.expr()
            self.expect(")")
            return e
        if t.kind == "num":
            self.next()
            return Num(int(t.text, 0), self.span(t))
        if t.kind == "name":
            self.next()
            if self.at("("):
                if t.text in SRCU_CALLS:
                    raise self.error(t, f"'{t.text}': SRCU is not supported",
                                     "herd7 7.56 with this LKMM flags every SRCU read-side section as "
                                     "unbalanced, so there is no oracle to check SRCU against; RCU "
                                     "(rcu_read_lock/unlock, synchronize_rcu) is supported")
                if t.text in UNSUPPORTED_CALLS:
                    raise self.error(t, f"'{t.text}' is not supported: {UNSUPPORTED_CALLS[t.text]}")
                self.next()
                args = []
                while not self.at(")"):
                    args.append(self.expr())
                    if not self.at(")"):
                        self.expect(",", "between arguments")
                self.next()
                return Call(t.text, tuple(args), self.span(t))
            if self.at("[") or self.at(".") or (self.at("-") and self.peek(1).text == ">"):
                raise self.error(self.peek(), "arrays and structures are not supported in litmus tests")
            if t.text not in self.registers and t.text not in self.params:
                raise self.error(t, f"unknown name '{t.text}'",
                                 "a thread uses its parameters and the registers it declares")
            return Name(t.text, self.span(t))
        found = "the end of the file" if t.kind == "eof" else f"'{t.text}'"
        raise self.error(t, f"expected an expression, found {found}")

    # conditions
    def locations(self):
        self.next()
        self.expect("[", "after 'locations'")
        out = []
        while not self.at("]"):
            t = self.peek()
            if t.kind == "tid":
                self.next()
                out.append((int(t.text[:-1]), self.name("a register").text))
            else:
                out.append((None, self.name("a location").text))
            if not self.at("]"):
                self.expect(";", "between locations")
                if self.at("]"):
                    break
        self.next()
        return tuple(out)

    def condition(self) -> Condition:
        t = self.peek()
        if self.at("~") and self.peek(1).text == "exists":
            self.next()
            self.next()
            q = "~exists"
        elif self.at("exists") or self.at("forall"):
            q = self.next().text
        else:
            found = "the end of the file" if t.kind == "eof" else f"'{t.text}'"
            raise self.error(t, f"expected the final condition 'exists (...)', '~exists (...)' or 'forall (...)', "
                                f"found {found}")
        start = self.peek()
        prop = self.prop()
        end = self.toks[self.i - 1]
        lines = self.source.split("\n")
        if start.line == end.line:
            text = lines[start.line - 1][start.col - 1:end.end_col - 1]
        else:
            text = " ".join(x.text for x in self.toks[self.toks.index(start):self.i])
        return Condition(q, prop, f"{q} {text}")

    def prop(self):
        left = self.prop_and()
        while self.at("\\/"):
            self.next()
            left = PropOp("or", (left, self.prop_and()))
        return left

    def prop_and(self):
        left = self.prop_atom()
        while self.at("/\\"):
            self.next()
            left = PropOp("and", (left, self.prop_atom()))
        return left

    def prop_atom(self):
        t = self.peek()
        if self.at("("):
            self.next()
            p = self.prop()
            self.expect(")", "to close the condition")
            return p
        if self.at("~") or self.at("not"):
            self.next()
            return PropOp("not", (self.prop_atom(),))
        if self.at("true") or self.at("false"):
            self.next()
            return PropOp(t.text, ())
        thread = None
        if t.kind == "tid":
            thread = int(self.next().text[:-1])
        elif t.kind != "name":
            found = "the end of the file" if t.kind == "eof" else f"'{t.text}'"
            raise self.error(t, f"expected a condition such as '0:r0=1' or 'x=1', found {found}")
        name = self.name("a register or a location")
        op = self.peek()
        if self.at("=") or self.at("=="):
            neg = False
        elif self.at("!="):
            neg = True
        else:
            raise self.error(op, f"expected '=' or '!=' in the condition, found '{op.text}'")
        self.next()
        v = self.peek()
        sign = 1
        if self.at("-") and self.peek(1).kind == "num":
            self.next()
            sign = -1
            v = self.peek()
        if v.kind == "num":
            value: object = sign * int(self.next().text, 0)
        elif v.kind == "name":
            value = self.next().text
        elif self.at("&"):
            self.next()
            value = self.name("a location").text
        else:
            raise self.error(v, "expected a value in the condition")
        return Atom(thread, name.text, value, neg, Span(self.file, t.line, t.col, v.line, v.end_col))


def parse_litmus(source: str, file: str) -> Litmus:
    """The test, or a SpecError at the first construct this reader does not take."""
    return _Parser(source, file).litmus()
