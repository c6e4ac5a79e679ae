"""The language server (`timerace-lsp`, checker/lsp.py), spoken to as an editor does: the
installed console script is started as a process and gets LSP's JSON-RPC messages on
its stdin (initialize, didOpen, didChange, hover, definition, completion, shutdown),
and every answer is read back from its stdout, framed by Content-Length headers.

The diagnostics must be the checker's own errors (the codes and hints `check` prints,
the same positions); hover on a built-in must be its row of the primitives table.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from checker.base.errors import SpecError
from checker.front.parse import parse
from checker.pipeline import diagnose
from checker.resolve import resolve
from checker.semantics.primitives import BUILTINS, signature
from helpers import TESTS

ROOT = TESTS.parent
SERVER = Path(sys.executable).parent / "timerace-lsp"
WAIT = 30  # seconds for one answer: a bound against a hang, not a measurement

MODEL = """\
model kick;
var mode: 0..2 = 0;
var ipi: bool = false;
inline kick() {
  if (cmpxchg(mode, 1, 2) == 1) ipi = true;
}
process vcpu {
  mode = 1;
entry:
  await ipi;
}
process waker { kick(); }
invariant sent: vcpu@entry -> mode != 0;
"""

TYPO = MODEL.replace("ipi = true;", "ipj = true;")


class Client:
    """A minimal LSP client over the server's pipes."""

    def __init__(self):
        self.log = tempfile.TemporaryFile()  # the server's stderr (its log), shown when it fails
        self.proc = subprocess.Popen([str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                key, value = line.split(":", 1)
                headers[key.lower()] = value.strip()
            self.inbox.put(json.loads(out.read(int(headers["content-length"]))))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: dict):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def wait(self, wanted):
        while True:
            try:
                m = self.inbox.get(timeout=WAIT)
            except queue.Empty:
                self.log.seek(0)
                raise AssertionError("the server did not answer; its log: "
                                     + self.log.read()[-4000:].decode(errors="replace")) from None
            if wanted(m):
                return m

    def diagnostics(self, uri: str, version: int) -> list[dict]:
        m = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                      and m["params"]["uri"] == uri and m["params"].get("version") == version)
        return m["params"]["diagnostics"]

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout, self.log):
                f.close()


@pytest.fixture(scope="module")
def client():
    assert SERVER.exists(), "timerace-lsp is not installed with the package (pyproject [project.scripts])"
    c = Client()
    init = c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    c.notify("initialized", {})
    c.capabilities = init["capabilities"]
    yield c
    c.close()


def _open(client, tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "timerace", "version": 1,
                                                            "text": text}})
    return uri


def _at(text: str, needle: str, offset: int = 0) -> dict:
    """The LSP position (0-based) of `needle`'s first occurrence plus `offset` characters."""
    before = text[:text.index(needle) + offset]
    return {"line": before.count("\n"), "character": len(before) - before.rfind("\n") - 1}


def test_the_server_says_what_it_offers(client):
    caps = client.capabilities
    assert caps["hoverProvider"] and caps["definitionProvider"] and caps["completionProvider"]
    assert caps["textDocumentSync"]["change"] == 1  # the whole text each time: the checker parses it whole


def test_a_typo_is_diagnosed_with_the_checkers_code_hint_and_position(client, tmp_path):
    uri = _open(client, tmp_path, "typo.spec", TYPO)
    [d] = client.diagnostics(uri, 1)
    assert d["code"] == "TR201" and d["source"] == "timerace" and d["severity"] == 1
    assert "unknown name 'ipj'" in d["message"]
    assert "hint: did you mean 'ipi'?" in d["message"] and d["data"]["hint"] == "did you mean 'ipi'?"
    start = _at(TYPO, "ipj")
    assert d["range"]["start"] == start and d["range"]["end"] == {**start, "character": start["character"] + 3}
    # the same error the checker raises, not a second opinion
    with pytest.raises(SpecError) as e:
        resolve(parse(TYPO, "typo.spec"))
    assert (e.value.code, e.value.hint, e.value.span.line, e.value.span.col) == \
        ("TR201", d["data"]["hint"], start["line"] + 1, start["character"] + 1)
    # fixing it as one types clears it
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": MODEL}]})
    assert client.diagnostics(uri, 2) == []


def test_quick_edits_end_with_the_diagnostics_of_the_last_text(client, tmp_path):
    """Edits in a row: the last text's diagnostics are published (an earlier one may be
    dropped as superseded, never published after it)."""
    uri = _open(client, tmp_path, "quick.spec", MODEL)
    assert client.diagnostics(uri, 1) == []
    for version, text in ((2, TYPO), (3, TYPO.replace("ipj", "ipk")), (4, MODEL.replace("ipi = true", "ipx = true"))):
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [{"text": text}]})
    last = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                       and m["params"]["uri"] == uri and m["params"].get("version") == 4)
    [d] = last["params"]["diagnostics"]
    assert "unknown name 'ipx'" in d["message"]


def test_a_syntax_error_and_a_variant_error_are_diagnosed(client, tmp_path):
    broken = MODEL.replace("var ipi: bool = false;", "var ipi: bool = false")
    uri = _open(client, tmp_path, "syntax.spec", broken)
    [d] = client.diagnostics(uri, 1)
    assert d["code"] == "TR101" and "hint:" in d["message"]
    # an error only one variant's knob shows, at the declaration it breaks, saying which variant
    knob = MODEL.replace("var mode: 0..2 = 0;", "const START = 0;\nvar mode: 0..2 = START;") \
        + "variant ok { START = 1; }\nvariant bad { START = 7; }\n"
    uri = _open(client, tmp_path, "variant.spec", knob)
    [d] = client.diagnostics(uri, 1)
    assert d["code"] == "TR200" and "initial value 7 of 'mode'" in d["message"] and "(in variant bad)" in d["message"]
    assert d["range"]["start"]["line"] == 2


def test_hover_on_cmpxchg_is_its_row_of_the_primitives_table(client, tmp_path):
    uri = _open(client, tmp_path, "hover.spec", MODEL)
    client.diagnostics(uri, 1)
    got = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": _at(MODEL, "cmpxchg", 3)})
    text = got["contents"]["value"]
    p = BUILTINS["cmpxchg"]
    assert got["contents"]["kind"] == "markdown"
    assert signature(p) in text and p.doc in text and "x86: locked" in text
    assert "relaxed if it fails" in text  # the kernel's ordering of a failed cmpxchg, from the table


def test_hover_on_a_declared_name_shows_its_declaration(client, tmp_path):
    uri = _open(client, tmp_path, "hover2.spec", MODEL)
    client.diagnostics(uri, 1)
    got = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": _at(MODEL, "mode, 1, 2")})
    assert "variable `mode` (line 2)" in got["contents"]["value"]
    assert "var mode: 0..2 = 0;" in got["contents"]["value"]
    nothing = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": _at(MODEL, " == 1")})
    assert nothing is None


@pytest.mark.parametrize("use, offset, declared", [
    ("ipi = true", 0, "var ipi"),  # a variable
    ("kick();", 0, "inline kick"),  # an inline
    ("vcpu@entry", 0, "process vcpu"),  # a process
    ("@entry", 1, "entry:"),  # a label of the process named before `@`
])
def test_go_to_definition(client, tmp_path, use, offset, declared):
    uri = _open(client, tmp_path, "goto.spec", MODEL)
    client.diagnostics(uri, 1)
    got = client.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                     "position": _at(MODEL, use, offset)})
    assert got["uri"] == uri
    name = use[offset:].split("@")[0].split()[0].rstrip("();:")
    start = _at(MODEL, declared, declared.index(name))
    assert got["range"]["start"] == start
    assert got["range"]["end"] == {**start, "character": start["character"] + len(name)}


def test_go_to_a_label_in_the_same_process(client, tmp_path):
    text = MODEL.replace("  await ipi;\n}", "  await ipi;\n  goto entry;\n}")
    uri = _open(client, tmp_path, "goto2.spec", text)
    client.diagnostics(uri, 1)
    got = client.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                     "position": _at(text, "goto entry", 6)})
    assert got["range"]["start"] == _at(text, "entry:")


def test_completion_offers_every_built_in_with_its_signature(client, tmp_path):
    uri = _open(client, tmp_path, "complete.spec", MODEL)
    client.diagnostics(uri, 1)
    got = client.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": _at(MODEL, "mode = 1")})
    items = {i["label"]: i for i in got["items"]}
    assert set(BUILTINS) <= set(items)
    assert items["atomic_fetch_add"]["detail"] == signature(BUILTINS["atomic_fetch_add"])
    assert items["mode"]["detail"] == "variable" and items["kick"]["detail"] == "inline"


def test_a_shipped_model_has_no_diagnostics_and_its_labels_resolve(client):
    path = ROOT / "models" / "pi_timer.spec"
    text = path.read_text()
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "timerace", "version": 1,
                                                            "text": text}})
    assert client.diagnostics(uri, 1) == []
    got = client.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                     "position": _at(text, "os@timer_irq", 4)})
    assert got["range"]["start"] == _at(text, "\ntimer_irq:", 1)


def test_diagnose_reports_each_error_once_with_a_code():
    """The one function the server calls: errors shared by several variants appear once."""
    text = TYPO + "variant a { }\nvariant b { }\n"
    found = diagnose(text, "t.spec")
    assert [(e.code, e.span.line, variants) for e, variants in found.errors] == [("TR201", 5, ("base", "a", "b"))]
    assert found.variants == ("base", "a", "b")


def test_the_vscode_client_starts_the_installed_server():
    """The extension's client names the console script pyproject installs."""
    import re
    import shutil

    vscode = ROOT / "editors" / "vscode"
    manifest = json.loads((vscode / "package.json").read_text())
    assert manifest["activationEvents"] == ["onLanguage:timerace"] and "vscode-languageclient" in manifest["dependencies"]
    default = manifest["contributes"]["configuration"]["properties"]["timerace.server.path"]["default"]
    scripts = re.search(r"\[project\.scripts\]\n(.*?)\n\n", (ROOT / "pyproject.toml").read_text(), re.S).group(1)
    assert f'{default} = "checker.lsp:main"' in scripts and default == SERVER.name
    main = vscode / manifest["main"]
    assert '"server.path", "timerace-lsp"' in main.read_text()
    if shutil.which("node"):
        subprocess.run(["node", "--check", str(main)], check=True)
