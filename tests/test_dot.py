"""DOT: counterexamples as graphs, the whole state graph as the engine recorded it, and
rendering to SVG with Graphviz (installed by tests/install-tools.sh)."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET

from checker.engines.explicit import explore, state_space
from checker.export.dot import quote
from checker.pipeline import Options, check_spec, compile_variant, load
from helpers import GOLDEN, MODELS, run_check
from tools import graphviz_dot


def test_every_dot_file_renders_with_graphviz(exported):
    dot = graphviz_dot()
    files = sorted(GOLDEN.rglob("*.dot"))
    for folder, _, _ in exported.values():
        files += sorted((folder / "out" / "dot").glob("*.dot"))
    assert len(files) >= 16
    for f in files:
        done = subprocess.run([dot, "-Tsvg", str(f)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and not done.stderr.strip(), (f, done.stderr)
        assert ET.fromstring(done.stdout.encode()).tag.endswith("svg")


def test_svg_flag_renders_next_to_each_dot_file(tmp_path):
    graphviz_dot()
    rc, _, err = run_check(tmp_path, "wakeup", "--dot", "out", "--dot-graph", "--svg")
    assert rc == 0, err
    dots = sorted(p.stem for p in (tmp_path / "out").glob("*.dot"))
    svgs = sorted(p.stem for p in (tmp_path / "out").glob("*.svg"))
    assert dots == svgs == ["wakeup.base.state-graph", "wakeup.nocheck.deadlock", "wakeup.nocheck.state-graph"]
    svg = ET.parse(tmp_path / "out" / "wakeup.nocheck.deadlock.svg").getroot()
    assert svg.tag.endswith("svg")
    texts = " ".join(t.text or "" for t in svg.iter() if t.tag.endswith("text"))
    assert "prepare_to_wait(wq);" in texts


def test_the_state_graph_is_the_engines_graph(exported):
    folder, _, result = exported["counter"]
    text = (folder / "out/dot/counter.base.state-graph.dot").read_text()
    base = result.variants[0]
    nodes = re.findall(r"^  s\d+ \[label=", text, re.M)
    edges = re.findall(r"^  s\d+ -> s\d+ ", text, re.M)
    assert len(nodes) == base.stats.states == 28
    assert len(edges) == base.stats.transitions == 38
    red = re.findall(r"^  s(\d+) \[label=\"(\d+)  violates both_counted", text, re.M)
    assert len(red) == 1  # the counterexample's last state


def test_exporters_get_the_graph_only_when_asked_and_under_the_limit():
    spec = load(str(MODELS / "counter.spec"))
    assert check_spec(spec, Options()).variants[0].graph is None
    g = check_spec(spec, Options(graph_limit=28)).variants[0].graph
    assert g is not None and len(g.states) == 28 and g.initial == (0,) and g.complete and len(g.edges) == 38
    assert all(0 <= a < 28 and 0 <= b < 28 and act.process in ("inc[0]", "inc[1]") for a, b, act in g.edges)
    assert check_spec(spec, Options(graph_limit=27)).variants[0].graph is None
    cm = compile_variant(spec, "base", Options())
    kept = explore(cm, graph=True).graph
    assert state_space(cm, kept) == g  # the decoded view of the engine's own graph


def test_a_model_over_the_limit_says_so(tmp_path):
    rc, _, err = run_check(tmp_path, "four", "--dot", "out", "--dot-graph", "--graph-max-states", "100")
    assert "no state graph drawn" in err and "240 reached" in err
    assert not list((tmp_path / "out").glob("*state-graph*"))


def test_dot_strings_are_escaped():
    assert quote('a "b" \\ c\nd') == '"a \\"b\\" \\\\ c\\ld\\l"'
