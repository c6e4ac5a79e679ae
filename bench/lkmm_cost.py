"""What `memory lkmm` costs: the README's table "The cost of `memory lkmm`".

For every shipped model, its base variant forced to sc, x86-TSO and lkmm, as
`check --variant base --memory-model M` explores it (the default reductions: under sc and
tso partial-order reduction and symmetry where they apply; under lkmm lazy propagation,
dead views kept canonical and partial-order reduction of the steps the machine leaves
alone): distinct states, CPU seconds of the search, and the properties that do not hold.
A cell whose search stopped at `--max-states` says so. The machine is usually shared:
the seconds are CPU time of this process, repeat a run before quoting one. With
`--memory` each cell runs in a process of its own, and adds that process's peak
resident memory (`check`'s start-up included: about 30 MB of it).

    python bench/lkmm_cost.py [--max-states N] [--memory] [--json OUT] [MODEL...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from checker.base.shipped import model_file
from checker.pipeline import Options, check_spec, load
from checker.engines.explicit import Limits
from checker.results.trace import Verdict

ROOT = Path(__file__).resolve().parent.parent
MEMORIES = ("sc", "tso", "lkmm")


def measure(path: Path, memory: str, max_states: int) -> dict:
    """One base variant under one memory model: states, CPU seconds, what does not hold."""
    start = time.process_time()
    result = check_spec(load(str(path)), Options(variants=("base",), memory=memory, progress=False,
                                                 use_expectations=False, coverage=False,
                                                 limits=Limits(max_states=max_states)))
    seconds = time.process_time() - start
    v = result.variants[0]
    return {"states": v.stats.states, "seconds": round(seconds, 2), "complete": v.stats.complete,
            "violated": sorted(o.property for o in v.outcomes if o.verdict is Verdict.VIOLATED),
            "incomplete": sorted(o.property for o in v.outcomes if o.verdict is Verdict.INCOMPLETE)}


#: one cell in a child process: `measure`'s dict with the child's peak RSS, as JSON
CHILD = """import json, resource, sys
from pathlib import Path
sys.path.insert(0, {bench!r})
from lkmm_cost import measure
got = measure(Path({path!r}), {memory!r}, {max_states!r})
got["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(got))
"""


def measure_apart(path: Path, memory: str, max_states: int) -> dict:
    """`measure` in a process of its own, with its peak resident memory (MB)."""
    code = CHILD.format(bench=str(ROOT / "bench"), path=str(path), memory=memory, max_states=max_states)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def cell(got: dict) -> str:
    text = f"{got['states']:,} / {got['seconds']:.1f} s" + (f" / {got['peak_mb']} MB" if "peak_mb" in got else "")
    if not got["complete"]:
        text += " (stopped: not finished)"
    if got["violated"]:
        text += ", violated (" + ", ".join(got["violated"]) + ")"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="model file names (default: every models/*.spec)")
    ap.add_argument("--max-states", type=int, default=1_000_000)
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--memory", action="store_true", help="each cell in a process of its own, with its peak memory")
    args = ap.parse_args()
    paths = [Path(model_file(m)) for m in args.models] \
        or sorted((ROOT / "models").glob("*.spec"))
    rows = {}
    print("| model | sc | x86-TSO | lkmm | lkmm / tso states |")
    print("|---|---:|---:|---:|---:|")
    for path in paths:
        run = measure_apart if args.memory else measure
        row = {mem: run(path, mem, args.max_states) for mem in MEMORIES}
        rows[path.name] = row
        ratio = row["lkmm"]["states"] / max(row["tso"]["states"], 1)
        print(f"| `models/{path.name}` | " + " | ".join(cell(row[mem]) for mem in MEMORIES) + f" | {ratio:.2f} |",
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
