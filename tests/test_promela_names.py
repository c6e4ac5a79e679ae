"""Promela twins of models whose names are hostile to SPIN, to C or to pan.

A model's names reach three namespaces in its twin: SPIN's (Promela keywords), the C
preprocessor's (spin runs cpp on the twin, which predefines `linux` and `unix`) and the C
code pan is (every global is a field `now.<name>` next to pan's own macros, a process is a
macro `P<name>`). A name that clashes there used to give a twin that spin or gcc rejects
while `check --promela` said exit 0. Each name below is used, over five models, as a
global, a process, an enum member, a local (and label and inline), and an invariant (and
const): every twin must build, and pan must count exactly our states and find exactly our
violations (the comparison test_promela.py makes, with its helpers).

Cost: two `check`s and one spin + gcc -O0 + pan (one per claim) per model.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import oracle
from test_bench import CHECK, run as bench
from test_promela import RICH, needs_spin, ours_unreduced

# C keywords; names from the C library that pan's C code sees (macros, typedefs,
# functions); pan's own identifiers (globals, macros, and names `P<process>` would hit);
# Promela keywords; names the twin itself declares (pc_host is host's program counter and
# Phost pan's macro for host, a process `value` would have pc_value, a Promela keyword;
# deadlock and invariant_tiny assertion names, tr_monitor its monitor process).
HOSTILE = """
auto case char default do double extern float for int long register restrict short
signed sizeof static struct switch typedef union unsigned void volatile asm typeof
errno rand exit printf stdin linux unix uchar ushort uint64_t NULL EOF si_pid
now sv depth trpt ptr rintf claim VECTORSZ NFAIR BFS wasnew maxseq0 StackSize Ptr_monitor
active proctype init never chan mtype hidden byte bit d_step od fi timeout run len show
unless STDIN end pid value
pc_host Phost deadlock invariant_tiny tr_monitor
""".split()

ROLES = ("global", "process", "enum", "local", "invariant")


def names_model(rotation: int) -> str:
    """Every hostile name once, name i in role (i + rotation) % len(ROLES); a local's
    name is also a label and an inline of its process, an invariant's also a const (the
    language keeps those apart). The processes run one after the other (`turn`) beside
    `host`, which writes every global (most never read: SPIN must not hide them), every
    local and every enum member."""
    by_role: dict[str, list[str]] = {r: [] for r in ROLES}
    for i, name in enumerate(HOSTILE):
        role = ROLES[(i + rotation) % len(ROLES)]
        by_role["global" if role == "invariant" and name == "deadlock" else role].append(name)  # built in
    procs, local, invariant = by_role["process"], by_role["local"], by_role["invariant"]
    out = [f"model names{rotation};"]
    out += [f"const {c} = {k + 1};" for k, c in enumerate(invariant)]
    out.append("enum Tag { tag_none" + "".join(f", {e}" for e in by_role["enum"]) + " }")
    out.append(f"var turn: 0..{len(procs)} = 0;")
    out += [f"var {g}: 0..1 = 0;" for g in by_role["global"]]
    out.append("var tag: Tag = tag_none;")
    out += [f"inline {f}(k) {{ if (tag != tag_none) tag = tag_none; }}" for f in local]
    out += [f"process {p} {{ await turn == {j}; turn = {j + 1}; }}" for j, p in enumerate(procs)]
    body = [f"  var {v}: 0..1 = 0;" for v in local]
    body += [f"  {g} = 1;" for g in by_role["global"]]
    body += [f"  {v}: {v} = 1;" for v in local]
    body += [f"  tag = {e};" for e in by_role["enum"]]
    body += [f"  {f}(1);" for f in local]
    out.append("process host {\n" + "\n".join(body) + "\n  skip;\n}")
    out.append(f"invariant tiny: turn + {' + '.join(invariant) or '0'} >= 0;")
    for k, inv in enumerate(invariant):  # every other one is violated
        out.append(f"invariant {inv}: turn {'<=' if k % 2 else '<'} {len(procs)};")
    return "\n".join(out) + "\n"


def twins_agree(spec: Path, tmp_path: Path, variant: str = "base") -> tuple[dict, list[str]]:
    """Our unreduced run of one variant (its JSON), and where pan on its twin differs."""
    ours = next(v for v in ours_unreduced(spec, tmp_path)["variants"] if v["name"] == variant)
    pml = tmp_path / f"{spec.stem}.pml"
    r = subprocess.run(CHECK + [str(spec), "--variant", variant, "--promela", str(pml)],
                       capture_output=True, text=True, timeout=60)  # it used to loop on `tr_monitor`
    assert r.returncode == 0, r.stderr
    assert f"wrote 1 file: {pml}" in " ".join(r.stderr.split())  # wrapped between names at the width
    return ours, bench.twin_disagreements(ours, oracle.twin_check(pml, tmp_path, "-O0"))


@pytest.mark.parametrize("rotation", range(len(ROLES)), ids=lambda r: f"roles{r}")
def test_promela_twin_with_hostile_names_builds_and_agrees(rotation, tmp_path):
    spec = tmp_path / f"names{rotation}.spec"
    spec.write_text(names_model(rotation))
    ours, differences = twins_agree(spec, tmp_path)
    assert differences == []
    assert ours["stats"]["states"] > len(HOSTILE)  # the model did run


LIVE = """model live;
var turn: 0..2 = 0;
process host { turn = 1; turn = 2; }
property int: always eventually turn == 2;
property never: always eventually turn == 0;
property init: always (turn == 1 -> eventually turn == 2);
property linux: always (turn == 1 -> eventually turn == 0);
property host: always eventually turn >= 1;
property turn: always eventually turn == 1;
property np_: always eventually turn != 1;
property end: always eventually turn == 2;
expect violated never, linux, turn;
"""


def test_promela_claims_named_like_keywords_check_their_property(tmp_path):
    """An `ltl` claim is renamed where its property's name is a Promela keyword, a
    process or a cpp macro; pan's verdict on it is the property's."""
    spec = tmp_path / "live.spec"
    spec.write_text(LIVE)
    ours, differences = twins_agree(spec, tmp_path)
    assert differences == []
    verdicts = {o["property"]: o["verdict"] for o in ours["outcomes"]}
    assert verdicts["never"] == "violated" and verdicts["int"] == "holds"
    text = (tmp_path / "live.pml").read_text()
    assert "ltl int_ {" in text and "/* property int */" in text
    assert "ltl turn {" in text  # a claim may share a variable's name


def test_promela_twin_counts_the_states_of_a_variable_nothing_reads(tmp_path):
    """spin hides a global that nothing reads: pan counted 2 states here, we count 3."""
    spec = tmp_path / "unread.spec"
    spec.write_text("model unread;\nvar x: 0..1 = 0;\nprocess p { choose { x = 0; } or { x = 1; } }\n")
    ours, differences = twins_agree(spec, tmp_path)
    assert ours["stats"]["states"] == 3
    assert differences == []


def _pan(argv: list[str], cwd: Path) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=120)
    assert r.returncode == 0, (argv, r.stdout[-2000:], r.stderr[-2000:])
    return r.stdout


def test_promela_twin_builds_with_bfs(tmp_path):
    """pan refused breadth-first search (`#error cannot use BFS on models with variables
    declared hidden`); breadth-first it must store the states depth-first pan does, ours
    plus the chooser's, and find the same violations."""
    needs_spin()
    spec = tmp_path / "rich.spec"
    spec.write_text(RICH)
    ours, differences = twins_agree(spec, tmp_path)  # depth-first, as test_promela.py checks
    assert differences == []
    pml = tmp_path / "rich.pml"
    text = pml.read_text()
    assert "hidden" not in text
    assert "gcc -O2 -DBFS -DNOREDUCE -DNOCLAIM -o pan pan.c && ./pan -c0" in text  # the header says how
    work = tmp_path / "bfs"
    work.mkdir()
    (work / pml.name).write_text(text)
    _pan(["spin", "-o3", "-a", pml.name], work)
    _pan(["gcc", "-O0", "-DBFS", "-DNOREDUCE", "-DNOCLAIM", "-o", "pan", "pan.c"], work)
    out = _pan(["./pan", "-c0"], work)
    assert "Breadth-First" in out
    stored = int(re.search(r"^\s*(\d+) states, stored", out, re.M).group(1))
    assert stored == ours["stats"]["states"] + 1  # `any`: the state before the chooser picks
    assert set(re.findall(r"assertion violated (\w+)", out)) == {"invariant_few", "deadlock"}


def test_promela_twin_lists_the_names_it_changed(tmp_path):
    """The twin's names differ from the model's only where they must, and the header and
    each declaration's comment give the model's name (spin's trails show the twin's)."""
    spec = tmp_path / "few.spec"
    spec.write_text("model few;\nenum Mode { IDLE, now }\nvar char: 0..1 = 0;\nvar NR: 0..1 = 0;\n"
                    "var mode: Mode = IDLE;\nvar pc_int: 0..1 = 0;\n"
                    "process int { var x: 0..1 = 0; char = 1; NR = 1; x = 1; mode = now; pc_int = 1; }\n"
                    "invariant ok: char + NR + pc_int <= 3;\n")
    pml = tmp_path / "few.pml"
    r = subprocess.run(CHECK + [str(spec), "--promela", str(pml)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = pml.read_text()
    head = text.split("*/", 1)[0]
    assert "char_ <- char" in head and "int_ <- int" in head and "v_NR <- NR" in head and "now_ <- now" in head
    assert "mode <-" not in head and "IDLE" not in head and "x <-" not in head  # safe names stay
    assert "byte char_ = 0;\t/* char: 0..1 */" in text
    assert "byte int_x = 0;\t/* int.x: 0..1 */" in text
    assert "active proctype int_()" in text and "byte pc_int_ = 0;\t/* int's program counter" in text
    assert "byte pc_int = 0;\t/* pc_int: 0..1 */" in text  # free: process int's counter is pc_int_
    assert "#define IDLE 0" in text and "#define now_ 1" in text and "mode = now_" in text
