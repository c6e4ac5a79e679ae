"""The editor support in editors/: the TextMate grammar (VS Code, and the highlighters
that read TextMate grammars), the VS Code language configuration and problem matcher,
and the Vim syntax file.

The grammar is run by VS Code's own engine (vscode-textmate on vscode-oniguruma, npm
packages in tests/textmate) over every shipped model, and each token it scopes is
compared with what the checker's own lexer (lark, from spec/grammar.lark) makes of the
same text: a keyword must be scoped as that keyword, a kernel primitive as a built-in,
a number as a number, a comment as a comment, and nothing in code may be left unscoped.
The keyword and built-in lists of both editors must equal the grammar's keywords and
checker/semantics/primitives.py's BUILTINS table, so that a new keyword or primitive cannot be
forgotten in the editors.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from checker.cli import main
from checker.front.parse import _parser, parse
from checker.resolve import ALIASES, BUILTINS, MEMORY_MODELS, RESERVED_TYPES
from helpers import TESTS
from tools import require

ROOT = TESTS.parent
VSCODE = ROOT / "editors" / "vscode"
GRAMMAR = VSCODE / "syntaxes" / "timerace.tmLanguage.json"
VIM = ROOT / "editors" / "vim"
TEXTMATE_DIR = TESTS / "textmate"
SHIPPED = sorted((ROOT / "models").glob("*.spec")) + sorted((TESTS / "models").glob("*.spec")) \
    + sorted((TESTS / "litmus").glob("*.spec"))
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Every construct the shipped models may not use, so that the engine sees each once.
SAMPLE = """\
// sample: every kind of token
/* a block comment
   over two lines */
model sample;
memory tso(3);
const MASK = 0x1F;
enum Mode { OUTSIDE, IN_GUEST }
var mode: Mode = OUTSIDE;
var bits: bitset(0..3) = {};
var n: u8 = 0;
var hits[2]: 0..7 = {0, 0};
waitqueue wq;
fn masked(v: u8): u8 = v & MASK;
inline bump(i) { hits[i] = min(hits[i] + 1, 7); }
unfair process guest {
  var seen: bool = false;
  top: seen = test_bit(1, bits) || (n >> 1) != 0;
  if (!seen) { set_bit(1, bits); } else { skip; }
  choose { n = 1; } or { n = masked(n ^ 3) % 4 << 1; }
  bump(0); goto done;
  done: assert seen -> true;
}
process vcpu[2] {
  while (READ_ONCE(mode) == OUTSIDE) { WRITE_ONCE(mode, IN_GUEST); break; }
  await mode == IN_GUEST; prepare_to_swait(wq); atomic { hits[self] = ~0 & 1; }
  loop { if (hits[self] >= 1) { return; } continue; }
}
invariant bounded: forall i in 0..1: (hits[i] <= 7) && vcpu[0]@end -> guest.seen;
property progress: always (mode == OUTSIDE -> eventually mode == IN_GUEST);
final all_done: exists i in 0..1: (hits[i] > 0 ? true : false);
lemma mask_small: forall (v: u8) masked(v) <= MASK;
variant sc_only { memory sc; }
expect violated bounded;
"""


def grammar_keywords() -> set[str]:
    """The words spec/grammar.lark reserves, from the parser the checker runs."""
    return {t.pattern.value for t in _parser().terminals
            if type(t.pattern).__name__ == "PatternStr" and IDENT.fullmatch(t.pattern.value)}


def builtin_names() -> set[str]:
    """Every name a kernel primitive may be called by: BUILTINS and its kernel spellings."""
    return set(BUILTINS) | set(ALIASES)


@lru_cache(maxsize=1)
def tm_grammar() -> dict:
    return json.loads(GRAMMAR.read_text())


def tm_word_list(key: str) -> tuple[str, list[str]]:
    """(scope, words) of a repository entry that matches a word list `\\b(?:a|b)\\b`."""
    entry = tm_grammar()["repository"][key]
    m = re.fullmatch(r"\\b\(\?:([\w|]+)\)\\b", entry["match"])
    assert m, f"{key}: not a plain word list: {entry['match']}"
    return entry["name"], m.group(1).split("|")


TM_KEYWORD_LISTS = ("keywords-declaration", "keywords-control", "keywords-temporal", "keywords-quantifier",
                    "modifiers", "types", "constants", "self")


def tm_keyword_scopes() -> dict[str, str]:
    """keyword -> the scope the grammar gives it."""
    out: dict[str, str] = {}
    for key in TM_KEYWORD_LISTS:
        scope, words = tm_word_list(key)
        for w in words:
            assert w not in out, f"{w} is in two keyword lists"
            out[w] = scope
    return out


# ---- the lists cannot drift ------------------------------------------------------


def test_textmate_keyword_lists_are_the_grammars_keywords():
    assert set(tm_keyword_scopes()) == grammar_keywords()


def test_textmate_builtins_are_the_builtins_table():
    scope, words = tm_word_list("builtins")
    assert scope == "support.function.builtin.timerace"
    assert sorted(words) == sorted(builtin_names())
    assert set(tm_word_list("types-reserved")[1]) == set(RESERVED_TYPES) - grammar_keywords()


def test_textmate_memory_models_are_the_checkers():
    memory = next(p for p in tm_grammar()["repository"]["declarations"]["patterns"]
                  if p["match"].startswith("\\b(memory)"))
    names = re.search(r"\\s\+\(([\w|]+)\)", memory["match"]).group(1).split("|")
    assert sorted(names) == sorted(MEMORY_MODELS)


def test_textmate_declaration_captures_only_declaration_keywords():
    """The patterns that scope a declared name capture their keyword; it must be one of
    the keywords, scoped as the word list scopes it."""
    scopes = tm_keyword_scopes()
    for key in ("declarations", "labels"):
        for p in tm_grammar()["repository"][key]["patterns"]:
            m = re.match(r"\\b\(([\w|]+)\)", p["match"])
            if m:
                for w in m.group(1).split("|"):
                    assert scopes.get(w) == p["captures"]["1"]["name"], (key, w)


# ---- the real TextMate engine --------------------------------------------------


def node_textmate() -> str:
    exe = shutil.which("node")
    require(exe is not None, "Node.js is not installed")
    for pkg in ("vscode-textmate", "vscode-oniguruma"):
        require((TEXTMATE_DIR / "node_modules" / pkg).is_dir(), f"the npm package {pkg} is not installed in tests/textmate")
    return exe


def tokenize(paths: list[Path]) -> dict[str, list[list[tuple[int, int, list[str]]]]]:
    """file -> per line, the engine's tokens (start, end, scopes)."""
    done = subprocess.run([node_textmate(), str(TEXTMATE_DIR / "tokenize.mjs"), str(GRAMMAR), *map(str, paths)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("textmate") / "sample.spec"
    path.write_text(SAMPLE)
    parse(SAMPLE, str(path))  # the sample is a valid spec, so the lexer oracle applies to it
    return path


@pytest.fixture(scope="module")
def tokens(sample) -> dict:
    return tokenize([*SHIPPED, sample])


def absolute(text: str, lines: list) -> list[tuple[int, int, str, list[str]]]:
    """The engine's tokens as (start, end, text, scopes) with offsets into the whole file."""
    out, base = [], 0
    for line, toks in zip(text.split("\n"), lines):
        for s, e, scopes in toks:
            out.append((base + s, base + e, line[s:e], scopes))
        base += len(line) + 1
    return out


def expected_scope(tok, keywords: dict[str, str], called: bool):
    """What a token of the checker's lexer must be scoped as: (test on the innermost
    scope, what it should be in words); a comment's is its outer scope (its `//` and
    `/*` are punctuation inside it)."""
    if tok.type == "COMMENT":
        return (lambda s: s == "comment.line.double-slash.timerace"), "a line comment"
    if tok.type == "BLOCK_COMMENT":
        return (lambda s: s == "comment.block.timerace"), "a block comment"
    if tok.type == "NUMBER":
        want = "constant.numeric.hex.timerace" if tok.value[:2] in ("0x", "0X") else "constant.numeric.decimal.timerace"
        return (lambda s: s == want), want
    if tok.type == "CONTEXT_NAME":  # a context keyword where the grammar wants a name: either reads
        return (lambda s: s == keywords[tok.value] or s.startswith(("entity.name.", "variable.other."))), "a name"
    if tok.value in keywords:
        return (lambda s: s == keywords[tok.value]), keywords[tok.value]
    if called and tok.value in builtin_names():  # (`variant atomic_inc` names a variant)
        return (lambda s: s == "support.function.builtin.timerace"), "a built-in"
    if tok.value in RESERVED_TYPES:
        return (lambda s: s == "storage.type.timerace"), "a type"
    if tok.type == "NAME":
        return (lambda s: s.startswith(("entity.name.", "variable.other.", "support.constant.memory-model."))), "a name"
    return (lambda s: s.startswith(("keyword.operator.", "punctuation."))), "an operator or punctuation"


def check_against_lexer(path: Path, lines: list) -> int:
    """Every token of the checker's lexer is scoped by the engine as it should be; returns
    how many were compared."""
    text = path.read_text()
    tm = absolute(text, lines)
    keywords = tm_keyword_scopes()
    wrong, seen = [], 0
    lexed = [t for t in _parser().lex(text, dont_ignore=True) if t.type != "WS"]
    # The context keywords (`on`, `hrtimer`, ...) are names wherever the grammar expects a
    # name: the parser's contextual lexer says which, the plain lexer above cannot.
    as_parsed = {t.start_pos: t.type for t in _parser().parse_interactive(text).iter_parse()}
    lexed = [t.update(type="CONTEXT_NAME") if as_parsed.get(t.start_pos) == "NAME" and t.type != "NAME" else t
             for t in lexed]
    code = [t for t in lexed if "COMMENT" not in t.type]
    calls = {id(t) for t, after in zip(code, code[1:]) if t.type in ("NAME", "CONTEXT_NAME") and after.value == "("}
    for tok in lexed:
        ok, what = expected_scope(tok, keywords, id(tok) in calls)
        for s, e, piece, scopes in tm:
            if s < tok.end_pos and e > tok.start_pos and piece.strip():
                seen += 1
                if not ok(scopes[1] if "COMMENT" in tok.type else scopes[-1]):
                    wrong.append(f"{path.name}:{tok.line}:{tok.column}: {piece!r} ({tok.type} {tok.value!r}) "
                                 f"is {scopes[1:]}, should be {what}")
    assert not wrong, "\n".join(wrong[:20])
    return seen


def test_textmate_scopes_every_token_of_every_shipped_model_as_the_lexer_reads_it(tokens):
    assert len(SHIPPED) >= 5
    counts = {path.name: check_against_lexer(path, tokens[str(path)]) for path in SHIPPED}
    assert all(counts.values()), counts
    assert counts["pi_timer.spec"] > 1000


def test_textmate_leaves_no_code_unscoped(tokens):
    """No piece of any shipped model is left with only the file's scope, on any line."""
    for path in SHIPPED:
        for n, (line, toks) in enumerate(zip(path.read_text().split("\n"), tokens[str(path)]), 1):
            bare = [line[s:e] for s, e, scopes in toks if line[s:e].strip() and len(scopes) < 2]
            assert not bare, f"{path.name}:{n}: unscoped {bare}"


def test_textmate_sample_with_every_kind_of_token(sample, tokens):
    assert check_against_lexer(sample, tokens[str(sample)]) > 200
    lines = tokens[str(sample)]
    src = SAMPLE.split("\n")

    def scope(line: int, text: str, nth: int = 0) -> list[str]:
        col = [m.start() for m in re.finditer(re.escape(text), src[line - 1])][nth]
        hit = [scopes for s, e, scopes in lines[line - 1] if s <= col < e]
        return hit[0][1:]

    assert scope(1, "//") == ["comment.line.double-slash.timerace", "punctuation.definition.comment.timerace"]
    assert scope(3, "over") == ["comment.block.timerace"]  # a comment's second line
    assert scope(4, "model") == ["keyword.declaration.timerace"]
    assert scope(4, "sample") == ["entity.name.type.timerace"]
    assert scope(5, "tso") == ["support.constant.memory-model.timerace"]
    assert scope(6, "0x1F") == ["constant.numeric.hex.timerace"]
    assert scope(9, "bitset") == ["storage.type.timerace"]
    assert scope(9, "3") == ["constant.numeric.decimal.timerace"]
    assert scope(9, "..") == ["keyword.operator.range.timerace"]
    assert scope(10, "u8") == ["storage.type.timerace"]
    assert scope(13, "masked") == ["entity.name.function.timerace"]
    assert scope(14, "min") == ["support.function.builtin.timerace"]
    assert scope(15, "unfair") == ["storage.modifier.timerace"]
    assert scope(17, "top") == ["entity.name.label.timerace"]
    assert scope(17, "test_bit") == ["support.function.builtin.timerace"]
    assert scope(17, ">>") == ["keyword.operator.bitwise.shift.timerace"]
    assert scope(19, "or") == ["keyword.control.timerace"]
    assert scope(20, "done") == ["entity.name.label.timerace"]  # goto's target
    assert scope(21, "->") == ["keyword.operator.implies.timerace"]
    assert scope(25, "prepare_to_swait") == ["support.function.builtin.timerace"]  # a kernel spelling
    assert scope(25, "self") == ["variable.language.self.timerace"]
    assert scope(28, "forall") == ["keyword.operator.quantifier.timerace"]
    assert scope(28, "end") == ["entity.name.label.timerace"]  # vcpu[0]@end
    assert scope(28, "seen") == ["variable.other.member.timerace"]  # guest.seen
    assert scope(29, "eventually") == ["keyword.operator.temporal.timerace"]
    assert scope(33, "violated") == ["keyword.declaration.timerace"]


def test_textmate_scopes_each_keyword_and_builtin_alone(tmp_path):
    """Each word of the lists, alone on a line, gets its list's scope (no earlier
    pattern of the grammar takes it first)."""
    keywords = tm_keyword_scopes()
    words = sorted(keywords) + sorted(builtin_names())
    path = tmp_path / "words.spec"
    path.write_text("\n".join(words) + "\n")
    lines = tokenize([path])[str(path)]
    for word, toks in zip(words, lines):
        assert [t[2][1:] for t in toks] == [[keywords.get(word, "support.function.builtin.timerace")]], word


# ---- VS Code: the extension folder ------------------------------------------------


def vscode_manifest() -> dict:
    return json.loads((VSCODE / "package.json").read_text())


def test_vscode_extension_contributes_the_language_and_grammar():
    contributes = vscode_manifest()["contributes"]
    (lang,) = contributes["languages"]
    (gram,) = contributes["grammars"]
    assert lang["extensions"] == [".spec"]
    assert gram["language"] == lang["id"]
    assert (VSCODE / gram["path"]).resolve() == GRAMMAR.resolve()
    assert gram["scopeName"] == tm_grammar()["scopeName"]
    config = json.loads((VSCODE / lang["configuration"]).read_text())
    comments = config["comments"]
    terminals = {t.name: t.pattern.to_regexp() for t in _parser().terminals}
    assert re.fullmatch(terminals["COMMENT"], comments["lineComment"] + " text")
    assert re.fullmatch(terminals["BLOCK_COMMENT"], comments["blockComment"][0] + " text " + comments["blockComment"][1])
    literals = {t.pattern.value for t in _parser().terminals if type(t.pattern).__name__ == "PatternStr"}
    for open_, close in config["brackets"]:
        assert open_ in literals and close in literals
    assert {p["open"] for p in config["autoClosingPairs"]} >= {"{", "[", "(", "/*"}


BAD_SPECS = {
    "unknown_name.spec": ("model bad;\nvar x: 0..2 = 0;\nprocess p {\n  x = y + 1;\n}\n", 4, 7, "unknown name 'y'"),
    "missing_semicolon.spec": ("model bad;\nvar x: 0..2 = 0\nprocess p {\n  x = 1;\n}\n", 3, 1, "expected ';' before 'process'"),
    "out_of_range.spec": ("model bad;\nvar x: 0..2 = 5;\nprocess p { skip; }\n", 2, 15, None),
}


def run_check(tmp_path, monkeypatch, *argv) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(list(argv))
    return rc, err.getvalue()


def matchers() -> dict[str, dict]:
    return {m["name"]: m for m in vscode_manifest()["contributes"]["problemMatchers"]}


def problems(matcher: dict, stderr: str) -> list[dict]:
    """What VS Code reads from `check`'s stderr with this matcher: the groups it names."""
    pat = matcher["pattern"]
    out = []
    for line in stderr.splitlines():
        m = re.match(pat["regexp"], line)
        if m:
            out.append({k: m.group(pat[k]) for k in ("file", "line", "column", "severity", "message", "code")
                        if k in pat})
    return out


@pytest.mark.parametrize("name", sorted(BAD_SPECS))
def test_vscode_problem_matcher_reads_checks_errors(tmp_path, monkeypatch, name):
    text, line, col, message = BAD_SPECS[name]
    (tmp_path / name).write_text(text)
    rc, err = run_check(tmp_path, monkeypatch, name)
    assert rc == 2
    (found,) = problems(matchers()["timerace"], err)
    assert (found["file"], found["line"], found["column"], found["severity"]) == (name, str(line), str(col), "error")
    assert found["message"] == (message or found["message"]) and found["message"]
    assert re.fullmatch(r"TR\d{3}", found["code"])  # the error code, apart from the message
    assert problems(matchers()["timerace-file"], err) == []


def test_vscode_problem_matcher_reads_a_whole_file_error(tmp_path, monkeypatch):
    (tmp_path / "folder.spec").mkdir()
    rc, err = run_check(tmp_path, monkeypatch, "folder.spec")
    assert rc == 2
    assert problems(matchers()["timerace"], err) == []
    (found,) = problems(matchers()["timerace-file"], err)
    assert found["file"] == "folder.spec" and found["severity"] == "error"
    assert found["message"].startswith("folder.spec is a directory")


def test_vscode_problem_matcher_reads_the_first_byte_that_is_not_utf8(tmp_path, monkeypatch):
    (tmp_path / "latin1.spec").write_bytes(b"model caf\xe9;\n")
    rc, err = run_check(tmp_path, monkeypatch, "latin1.spec")
    assert rc == 2
    (found,) = problems(matchers()["timerace"], err)
    assert (found["file"], found["line"], found["column"]) == ("latin1.spec", "1", "10")
    assert found["message"].startswith("latin1.spec is not UTF-8 text")


def test_vscode_problem_matchers_skip_errors_that_name_no_file(tmp_path, monkeypatch):
    """`check: error: ...` (a bad -D, an unknown variant) and `check: warning: ...` name no
    file: a matcher must not invent a file called `check`."""
    (tmp_path / "ok.spec").write_text("model ok;\nconst K = 1;\nprocess p { skip; }\n")
    rc, err = run_check(tmp_path, monkeypatch, "ok.spec", "-D", "NOPE=1")
    assert rc == 2 and err.startswith("check: error: -D NOPE")
    for m in matchers().values():
        assert problems(m, err) == []
        assert problems(m, "check: warning: --svg: Graphviz is not installed") == []


# ---- Vim ------------------------------------------------------------------------


def vim_keywords() -> dict[str, set[str]]:
    """group -> words of every `syntax keyword` line (with its `\\` continuations)."""
    text = (VIM / "syntax" / "timerace.vim").read_text()
    text = re.sub(r"\n\s*\\", " ", text)
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["syntax", "keyword"]:
            out.setdefault(words[2], set()).update(w for w in words[3:] if w != "contained")
    return out


def test_vim_keyword_lists_are_the_grammars_keywords_and_builtins():
    groups = vim_keywords()
    assert groups.pop("timeraceBuiltin") == builtin_names()
    assert groups.pop("timeraceReservedType") == set(RESERVED_TYPES) - grammar_keywords()
    groups.pop("timeraceTodo")
    assert set().union(*groups.values()) == grammar_keywords()
    assert sum(map(len, groups.values())) == len(grammar_keywords())  # no word in two groups
    memory = re.search(r'timeraceMemoryModel .*\\%\(([\w\\|]+)\\\)', (VIM / "syntax" / "timerace.vim").read_text())
    assert set(memory.group(1).split("\\|")) == set(MEMORY_MODELS)


VIM_PROBE = """\
let out = [&filetype, get(b:, 'current_syntax', '')]
for [l, c] in PROBES
  call add(out, synIDattr(synID(l, c, 1), 'name'))
endfor
call add(out, v:errmsg)
call writefile(out, OUT)
qa!
"""


def vim_probe(tmp_path, spec: Path, probes: list[tuple[int, int]]) -> list[str]:
    exe = shutil.which("vim")
    if exe is None:
        pytest.skip("vim is not installed")
    out = tmp_path / "probe.out"
    script = tmp_path / "probe.vim"
    script.write_text(VIM_PROBE.replace("PROBES", json.dumps([list(p) for p in probes]))
                      .replace("OUT", json.dumps(str(out))))
    done = subprocess.run([exe, "-Nu", "NONE", "-i", "NONE", "-es", "-c", f"set rtp^={VIM}", "-c", "filetype on",
                           "-c", "syntax on", "-c", f"edit {spec}", "-c", f"source {script}"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_text().split("\n")[:-1]


def test_vim_loads_the_syntax_file_and_highlights_a_model(tmp_path):
    spec = tmp_path / "sample.spec"
    spec.write_text(SAMPLE)
    src = SAMPLE.split("\n")

    def at(line: int, text: str) -> tuple[int, int]:
        return line, src[line - 1].index(text) + 1

    probes = {at(1, "//"): "timeraceLineComment", at(3, "over"): "timeraceBlockComment",
              at(4, "model"): "timeraceDeclaration", at(5, "tso"): "timeraceMemoryModel",
              at(6, "0x1F"): "timeraceNumber", at(10, "u8"): "timeraceReservedType",
              at(14, "min"): "timeraceBuiltin", at(15, "unfair"): "timeraceModifier",
              at(17, "top"): "timeraceLabel", at(19, "or"): "timeraceControl",
              at(20, "done"): "timeraceLabel", at(25, "prepare_to_swait"): "timeraceBuiltin",
              at(28, "end"): "timeraceLabel", at(29, "eventually"): "timeraceTemporal",
              at(9, "{}"): ""}
    filetype, syntax, *names, errmsg = vim_probe(tmp_path, spec, list(probes))
    assert (filetype, syntax, errmsg) == ("timerace", "timerace", "")
    assert names == list(probes.values())


def test_vim_leaves_rpm_spec_files_alone(tmp_path):
    """An RPM .spec has no `model NAME;` line: Vim's own `spec` type stays."""
    spec = tmp_path / "package.spec"
    spec.write_text("Name: hello\nVersion: 1.0\n%description\nmodel of nothing\n")
    filetype, syntax, errmsg = vim_probe(tmp_path, spec, [])
    assert (filetype, errmsg) == ("spec", "")
