"""Every variant of every shipped model says where it comes from: a kernel version, a
commit, a posted patch, or a mutation no kernel has (README, "Models": the label lines).

A label is one comment line in the model's header (the comments before `model NAME;`):

    // label VARIANT: kernel v6.18 (HLT in the guest)
    // label VARIANT: commit d4acf7e7abe4 ("KVM: Fix race between timer migration ...")
    // label VARIANT: patch seed 003 v1 (posted, not merged in this form)
    // label VARIANT: mutation: the entry's re-check removed

(` * label ...` inside a `/* */` header too). The implicit variant is `base`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.front.ast import ModelDecl, VariantDecl
from checker.pipeline import load

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "models").glob("*.spec"))

#: the label line: variant, kind, the kind's argument and the rest
LABEL = re.compile(r"^(?://| \*) label (?P<variant>\w+): (?P<kind>\w+)\b(?P<rest>.*)$")
#: what starts a label line: the comment marker, one space, `label ` (prose indents more)
LABEL_START = re.compile(r"^(?://| \*) label ")
KINDS = {
    # a kernel release as read (vN.M, or vN.x for a series whose exact release was not pinned)
    "kernel": re.compile(r"^ v\d+\.(\d+|x)\b"),
    # a commit of torvalds/linux (or kvm-x86), at least 12 hex digits
    "commit": re.compile(r"^ [0-9a-f]{12,40}\b"),
    # a posted patch, named by what identifies it
    "patch": re.compile(r"^ \S"),
    # a change no kernel has: what was changed
    "mutation": re.compile(r"^: \S"),
}


def labels_in(lines: list[str], where: str) -> tuple[dict[str, str], list[str]]:
    """variant -> its label, and the problems: a line that starts like a label but does
    not parse, an unknown kind, a kind without its argument, a variant labelled twice."""
    found: dict[str, str] = {}
    problems: list[str] = []
    for n, line in enumerate(lines, 1):
        if not LABEL_START.match(line):
            continue
        m = LABEL.match(line)
        if m is None:
            problems.append(f"{where}:{n}: not a label line: {line.strip()}")
            continue
        variant, kind, rest = m.group("variant", "kind", "rest")
        if kind not in KINDS:
            problems.append(f"{where}:{n}: {variant}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        elif not KINDS[kind].match(rest):
            problems.append(f"{where}:{n}: {variant}: `{kind}` needs its argument, got {rest.strip()!r}")
        elif variant in found:
            problems.append(f"{where}:{n}: {variant} is labelled twice")
        else:
            found[variant] = f"{kind}{rest}"
    return found, problems


def header_lines(path: Path) -> list[str]:
    """The comment lines before the model declaration."""
    spec = load(str(path))
    model = spec.of(ModelDecl)[0]
    return spec.source.splitlines()[:model.span.line - 1]


def variants_of(path: Path) -> list[str]:
    return ["base"] + [v.name for v in load(str(path)).of(VariantDecl)]


def model_labels(path: Path) -> tuple[dict[str, str], list[str]]:
    return labels_in(header_lines(path), path.name)


def unlabelled(path: Path) -> list[str]:
    """What is wrong with one model's labels (empty when every variant has one)."""
    labels, problems = model_labels(path)
    variants = variants_of(path)
    problems += [f"{path.name}: variant {v} has no label" for v in variants if v not in labels]
    problems += [f"{path.name}: label for {v}, which is not a variant" for v in labels if v not in variants]
    return problems


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_variant_is_labelled(path):
    assert unlabelled(path) == []


def test_an_unlabelled_variant_fails(tmp_path):
    """The check above can fail: a second variant without its line, a label of a variant
    that does not exist, a kind without its argument, an unknown kind."""
    p = tmp_path / "m.spec"
    p.write_text("// m: a toy.\n//\n// label base: kernel v6.18\n// label gone: mutation: removed\n"
                 "// label fixed: commit d4acf7e\n// label other: guess v1\n"
                 "model m;\nconst X = false;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n"
                 "variant fixed { X = true; }\nvariant new { X = true; }\n")
    assert unlabelled(p) == [
        "m.spec:5: fixed: `commit` needs its argument, got 'd4acf7e'",
        "m.spec:6: other: unknown kind 'guess' (one of kernel, commit, patch, mutation)",
        "m.spec: variant fixed has no label",
        "m.spec: variant new has no label",
        "m.spec: label for gone, which is not a variant",
    ]


def test_labels_only_count_in_the_header(tmp_path):
    """A label line after `model` is a comment like any other: it labels nothing."""
    p = tmp_path / "m.spec"
    p.write_text("// label base: kernel v6.18\nmodel m;\nvar x: 0..1 = 0;\nprocess p { x = 1; }\n"
                 "// label fixed: mutation: too late\nvariant fixed { }\n")
    assert unlabelled(p) == ["m.spec: variant fixed has no label"]
