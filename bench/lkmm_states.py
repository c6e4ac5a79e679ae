"""Where the states of `memory lkmm` come from: per group of the machine's slots, how many
of a base's reachable states would merge if that group were left out.

The base variant is searched as `check --variant base --memory-model lkmm` searches it
(the default reductions), keeping its states; then, for each group, the states are
projected with the group's slots set to 0 and the merged ones counted. A group that
merges few states costs few; one that merges many is where the extra states of lkmm over
the sc state (the "non-view classes") are told apart. The groups overlap, so the counts
do not add up. Upper bounds: a count says what leaving the group out would merge, not
that leaving it out is sound.

Groups: `column/values of x` (every lag on x, the CPUs' views of x included, and x's
older values), `old value x@i`, `message views of x@i` (what the message at lag i
published), and by kind: the CPUs' current views (`reads`), acquire, release, strong,
own-store and SC views, and every message's views.

    python bench/lkmm_states.py [--max-states N] [--top K] MODEL...
"""

from __future__ import annotations

import argparse
import re
import time
from collections import defaultdict
from pathlib import Path

from checker.base.shipped import model_file
from checker.engines import reduce
from checker.engines.explicit import Limits, explore
from checker.ir import SlotKind
from checker.pipeline import Options, compile_variant, load

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("reads", "acquire view", "release view", "strong view", "own store", "sc view", "raise of")


def groups_of(names: dict[int, str]) -> dict[str, list[int]]:
    """The machine's slots (slot -> name, as `lkmm.extend` names them) in named groups."""
    out: dict[str, list[int]] = defaultdict(list)
    for k, name in names.items():
        loc = re.search(r" on (\S+)$", name) or re.search(r"reads (\S+)$", name) or re.match(r"(\S+)@\d+$", name)
        if loc:
            out[f"column/values of {loc.group(1)}"].append(k)
        msg = re.match(r"(?:strong )?view of (\S+@\d+)", name)
        if msg:
            out[f"message views of {msg.group(1)}"].append(k)
            out["kind: message views"].append(k)
        elif re.match(r"\S+@\d+$", name):
            out[f"old value {name}"].append(k)
        else:
            for kind in KINDS:
                if kind in name:
                    out[f"kind: {kind}"].append(k)
    return out


def profile(path: Path, max_states: int) -> tuple[str, int, list[tuple[int, str]]]:
    """(summary line, states, [(states merged, group)] largest first) of one model's base."""
    cm = compile_variant(load(str(path)), "base", Options(memory="lkmm"))
    red = reduce.plan(cm, True)
    start = time.process_time()
    found = explore(cm, Limits(max_states=max_states), graph=True, reduction=red if red.active else None)
    seconds = time.process_time() - start
    assert found.graph is not None, "explore keeps the graph when asked"
    states = set(found.graph.states.packed)
    pk = cm.packing
    slots = cm.program.layout.slots
    names = {k: sl.name for k, sl in enumerate(slots) if sl.kind is SlotKind.VIEW}

    def merged(ks) -> int:
        keep = ~sum(pk.mask(k) << pk.shift[k] for k in ks)
        return len(states) - len({s & keep for s in states})

    classes = len(states) - merged(names)
    line = (f"{path.stem}: {len(states):,} states{'' if found.stats.complete else ' (stopped)'} in "
            f"{seconds:.1f} s, {classes:,} without the machine's slots ({len(states) / max(classes, 1):.2f}x)")
    return line, len(states), sorted(((merged(ks), g) for g, ks in groups_of(names).items()), reverse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="model file names")
    ap.add_argument("--max-states", type=int, default=400_000)
    ap.add_argument("--top", type=int, default=12, help="groups to print per model")
    args = ap.parse_args()
    for m in args.models:
        line, total, rows = profile(Path(model_file(m)), args.max_states)
        print(line)
        for n, g in rows[:args.top]:
            if n:
                print(f"  {n:8,} {100 * n / total:5.1f}%  {g}")


if __name__ == "__main__":
    main()
