"""The parser: every construct becomes the right syntax-tree node, with its span."""

import pytest

from checker.front import ast
from checker.base.errors import SpecError
from checker.front.parse import parse


def body(src):
    spec = parse("model m;\nprocess p {\n" + src + "\n}\n", "t.spec")
    return spec.of(ast.ProcessDecl)[0].body


def expr(src):
    spec = parse(f"model m; invariant i: {src};", "t.spec")
    return spec.of(ast.InvariantDecl)[0].cond


def test_header_comments_and_numbers():
    spec = parse("/* block\n comment */ model pi_timer; // line\nconst A = 0x10;", "t.spec")
    assert spec.name == "pi_timer"
    assert spec.of(ast.ConstDecl)[0].value.value == 16


def test_declarations():
    spec = parse("""model m;
    enum Mode { OUTSIDE, IN_GUEST, }
    var mode: Mode = OUTSIDE;
    var pending[vcpu]: 0..1 = 0;
    var a[1..3]: bool = {true, false, true};
    var req: bitset(8) = {1, 2};
    var t: 0..3 = any;
    waitqueue wq[2];
    unfair process guest { skip; }
    process vcpu[2] { var r: bool; skip; }
    inline kick(v) { skip; }
    fn busy(x) = x > 0;
    invariant inv: true;
    property live: always (mode == IN_GUEST -> eventually mode == OUTSIDE);
    property often: always eventually mode == OUTSIDE;
    expect violated inv;
    variant v { A = 1; B = true; } expect violated inv, deadlock;
    lemma l: forall (x: u64, y: u64) x + y == y + x;
    """, "t.spec")
    kinds = [type(d).__name__ for d in spec.items]
    assert kinds == ["ModelDecl", "EnumDecl", "VarDecl", "VarDecl", "VarDecl", "VarDecl", "VarDecl",
                     "WaitQueueDecl", "ProcessDecl", "ProcessDecl", "InlineDecl", "FnDecl",
                     "InvariantDecl", "PropertyDecl", "PropertyDecl", "ExpectDecl", "VariantDecl", "LemmaDecl"]
    enum = spec.items[1]
    assert [n for n, _ in enum.members] == ["OUTSIDE", "IN_GUEST"]
    pending = spec.items[3]
    assert isinstance(pending.dim.count, ast.Name) and pending.dim.count.name == "vcpu"
    a = spec.items[4]
    assert a.dim.lo.value == 1 and a.dim.hi.value == 3 and len(a.init.items) == 3
    assert isinstance(spec.items[6].init, ast.AnyInit)
    guest, vcpu = spec.items[8], spec.items[9]
    assert guest.unfair and not vcpu.unfair and vcpu.dim.count.value == 2 and len(vcpu.locals) == 1
    live, often = spec.items[13], spec.items[14]
    assert live.trigger is not None and often.trigger is None
    variant = spec.items[16]
    assert [o.name for o in variant.overrides] == ["A", "B"]
    assert [n for n, _ in variant.expects[0].violated] == ["inv", "deadlock"]


def test_statements():
    stmts = body("""
      x = 1; a[i] = 2;
      if (c) x = 1; else { x = 2; }
      while (c) { break; continue; }
      loop { skip; }
      top: goto top;
      await c;
      atomic { await c; x = 1; }
      choose { x = 1; } or { x = 2; } or { skip; }
      assert named: c; assert c;
      return;
      kick(v);
    """)
    kinds = [type(s).__name__ for s in stmts]
    assert kinds == ["Assign", "Assign", "If", "While", "Loop", "Labeled", "Await", "Atomic", "Choose",
                     "Assert", "Assert", "Return", "CallStmt"]
    assert stmts[1].target.index is not None
    assert len(stmts[8].branches) == 3
    assert stmts[9].name == "named" and stmts[10].name is None


def test_dangling_else_binds_to_the_nearest_if():
    (s,) = body("if (a) if (b) x = 1; else x = 2;")
    assert s.orelse is None and s.then.orelse is not None


@pytest.mark.parametrize("src,shape", [
    ("a || b && c", ("||", "a", ("&&", "b", "c"))),
    ("a -> b -> c", ("->", "a", ("->", "b", "c"))),
    ("a == 1 -> b", ("->", ("==", "a", 1), "b")),
    ("1 + 2 * 3", ("+", 1, ("*", 2, 3))),
    ("x << 1 < y", ("<", ("<<", "x", 1), "y")),
    ("a & b == c", ("&", "a", ("==", "b", "c"))),
    ("-x + 1", ("+", ("-", "x"), 1)),
    ("!a && b", ("&&", ("!", "a"), "b")),
])
def test_precedence(src, shape):
    def sh(e):
        if isinstance(e, ast.Binary):
            return (e.op, sh(e.left), sh(e.right))
        if isinstance(e, ast.Unary):
            return (e.op, sh(e.operand))
        if isinstance(e, ast.Name):
            return e.name
        if isinstance(e, ast.Number):
            return e.value
        return type(e).__name__
    assert sh(expr(src)) == shape


def test_expression_forms():
    e = expr("vcpu[1]@halt && p@end ? exists i in 0..2: (a[i] == self) : f(x, 2)")
    assert isinstance(e, ast.Conditional)
    at = e.cond.left
    assert isinstance(at, ast.AtLabel) and at.process == "vcpu" and at.label == "halt" and at.index.value == 1
    q = e.then
    assert isinstance(q, ast.Quantifier) and q.kind == "exists" and q.var == "i"
    assert isinstance(e.orelse, ast.Call) and len(e.orelse.args) == 2


def test_spans_point_at_the_source():
    (s,) = body("   x = 1;")
    assert (s.span.line, s.span.col) == (3, 4)
    assert s.span.file == "t.spec"


@pytest.mark.parametrize("src,where", [
    ("process p { x = 1 }", (1, 19)),
    ("process p { if x) skip; }", (1, 16)),
    ("var x: 0..1 = ;", (1, 15)),
])
def test_syntax_errors_have_positions(src, where):
    with pytest.raises(SpecError) as info:
        parse(src, "t.spec")
    assert (info.value.span.line, info.value.span.col) == where
