"""The `check` command: arguments, exit codes, and which exporters run.

Exit codes (as SPIN/TLC users expect, and scripts can test):
  0  every outcome is as expected (with --no-expect: every property holds)
  1  an outcome differs from its expectation (with --no-expect: a violation), or a
     model error was found during the search
  2  bad input: syntax, types, unknown names, bad -D, unknown variant, missing file
  3  cut short by a limit, an interrupt (Ctrl-C, SIGTERM) or running out of memory, with
     no unexpected outcome found (the variants not reached are listed, not checked); also
     bmc without a violation up to its depth, an unproved k-induction, and a lemma
     or query on which Z3 ran out of time (`unknown`)
A counterexample from a Z3 engine that does not replay through the compiled steps
is a checker bug: reported loudly (also on stderr), exit 1.

With --replay TRACE (re-run a saved counterexample against the model, default the base
variant, so a reviewer can check that a new patch version closes the race):
  0  the trace no longer applies (it diverges, or no longer ends in the violation), or
     it reproduces a violation the variant expects
  1  the violation still reproduces and the variant does not expect it: the race is there
  2  bad input: the trace file is unreadable or ambiguous (see --replay-pick), bad spec
  3  inconclusive: too many model states match the trace to follow them all
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys

from . import __version__
from .engines.explicit import LOOPS, OUT_OF_MEMORY, Limits, level_loop_source, native_source
from .engines.simulate import SimulationPlan
from .base.errors import REGISTRY, SpecError, explain
from .base.limits import STRENGTHEN_STATES
from .export.files import check_output_paths, write_text
from .export.outputs import DEFAULT_GRAPH_LIMIT, OutputRequest, path_problems, write_error_outputs, write_outputs
from .export.text import format_replay, format_run
from .results.findings import coverage_table
from .resolve import parse_defines
from .pipeline import (ENGINES, Options, default_workers, max_workers, check_spec, compile_variant, load, load_litmus,
                       promela_twin, read_for_display, replay_trace, selected_variants, too_many_workers)
from .base.safe_text import printable
from .results.trace import LKMM_NAME, Engine, ReplayResult, RunResult, Verdict

EXIT_OK, EXIT_VIOLATION, EXIT_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3
TEXT_WIDTH = 100  # the text's width when stdout is not a terminal (files, pipes, CI logs): stable output

EPILOG = """exit codes:
  0  every outcome is as expected (with --no-expect: every property holds)
  1  an outcome differs from its expectation, a model error, or a checker bug
  2  bad input: syntax, types, unknown names, a bad option or path (file:line:col and a hint)
  3  incomplete: a limit, a timeout, an interrupt; nothing unexpected found so far
  (--replay: 0 the trace no longer applies or is expected, 1 the race is still there,
   2 bad input, 3 inconclusive)

examples:
  check models/pi_timer.spec                      every variant; races of unexpected outcomes in full
  check models/pi_timer.spec --variant stale_expired_deadline --full
  check models/pi_timer.spec --brief --report review.md --sarif out.sarif --junit out.xml
  check tests/litmus_c/SB+poonceonces.litmus      a kernel litmus C test under the LKMM (--help there)
"""
LITMUS_EPILOG = """output, as herd7's: Test NAME Allowed|Forbidden|Required (exists, ~exists, forall),
States N and each final state, Ok|No (the condition holds or not), Witnesses
Positive: P Negative: N (allowed executions that satisfy the condition, and not; for
~exists those of its negation), one Flag line per flag some allowed execution raises
(data-race, mixed-accesses, unbalanced-rcu-lock, ...), the Condition, then
Observation NAME Never|Sometimes|Always P N (counted for the proposition itself), and
how that compares with the file's Result line.

exit codes:
  0  the Observation is the file's 'Result:' line (or the file has none)
  1  it is not
  2  the file cannot be read: file:line:col, a caret, the construct named (SRCU, for and do loops, ...)
  3  more than --max-candidates candidate executions: no verdict
"""
class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors are bad input: exit 2, no traceback
        self.print_usage(sys.stderr)
        sys.stderr.write(f"check: error: {message}\n")
        raise SystemExit(EXIT_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="check", description="Model-check a timerace spec: the base model and every variant.",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("file", help="the .spec file, or the name of a shipped model (check --list-models)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="override a constant (applies to every variant, on top of its own settings)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME",
                   help="check only this variant (repeatable; 'base' is the model without overrides)")
    p.add_argument("--no-expect", action="store_true",
                   help="ignore `expect` clauses: every property must hold")
    p.add_argument("--max-states", type=_whole_number(1), metavar="N", help="stop after N distinct states")
    p.add_argument("--max-depth", type=_whole_number(0), metavar="N", help="do not explore beyond depth N")
    p.add_argument("--no-deadlock", action="store_true", help="do not report deadlocks / invalid end states")
    p.add_argument("--memory-model", choices=("sc", "tso", "lkmm"),
                   help="override the `memory` declarations of the model and its variants")
    p.add_argument("--preemptions", type=_bound_or_unbounded, metavar="K",
                   help="execution contexts: at most K preemptions per run (default 2, or `preemptions K;`); "
                        "`unbounded` drops the bound")
    p.add_argument("--store-buffer", type=_whole_number(1), metavar="N",
                   help="tso: a CPU's store buffer holds at most N stores (default 2, or `memory tso(N)`); "
                        "lkmm: a location keeps at most N stores a CPU may read (default 2, or `memory lkmm(N)`)")
    z = p.add_argument_group("engines (lemmas are always checked by Z3)")
    z.add_argument("--engine", choices=ENGINES, default="explicit",
                   help="explicit: breadth-first search (default); bmc: bounded model checking in Z3 up to "
                        "--depth; induction: k-induction in Z3 up to k = --depth; pdr: PDR/IC3 in Z3 (Spacer), unbounded "
                        "proofs with a certified invariant, or a counterexample at any depth")
    z.add_argument("--depth", type=_whole_number(0), metavar="K",
                   help="bmc: paths of up to K steps (K rounds with --rounds), and for liveness fair lassos of up "
                        "to K steps, stem and loop; induction: k = 0..K (for liveness, on the liveness-to-safety "
                        "product); --simulate: steps per run (default 10)")
    z.add_argument("--rounds", type=_whole_number(1), nargs="?", const=1, default=0, metavar="N",
                   help="bmc: each depth is a round, in which every process instance in turn takes up to N steps "
                        "in a row (default 1) or idles, so deep violations are reached in fewer frames; a "
                        "counterexample lists its steps (replayed) and may be longer than the shortest")
    z.add_argument("--stride", type=_whole_number(1), default=1, metavar="D",
                   help="bmc --rounds: look for violations only at every D-th round and at the last (a look "
                        "covers the rounds before it, which may idle), each look a query of its own: deep "
                        "violations sooner, at the first look past them")
    z.add_argument("--strengthen", type=_whole_number(1), nargs="?", const=STRENGTHEN_STATES, metavar="STATES",
                   help="induction, pdr: first search up to STATES states explicitly (default "
                        f"{STRENGTHEN_STATES:,}), guess invariants from them, and assume the ones k-induction "
                        "proves (Houdini; pdr: the jointly inductive ones, given to Spacer and re-checked "
                        "with its invariant); the invariants used are printed")
    z.add_argument("--simulate", type=_whole_number(1), metavar="N",
                   help="N random runs (of --depth steps) instead of a search, each preferring steps to states "
                        "no run has been in: finds violations, never says holds (exit 3 when none is found), "
                        "and says how many distinct states the runs went through")
    z.add_argument("--seed", type=_whole_number(0), default=0, metavar="S",
                   help="--simulate: the random seed (the same seed gives the same runs)")
    p.add_argument("--coverage", action="store_true",
                   help="print every statement of every variant with how many process instances ran it")
    p.add_argument("--no-coverage", action="store_true",
                   help="skip the coverage and vacuity pass after each search (a second, unreduced search)")
    p.add_argument("--explain", metavar="CODE", help="explain an error code (e.g. TR101) and exit")
    z.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                   help="Z3 time limit per query (default 60); a query that runs out is 'unknown'")
    out = p.add_argument_group("output files (byte-for-byte reproducible unless --with-timing)")
    out.add_argument("--json", metavar="OUT", help="the whole run as JSON, schema spec/trace-schema.json ('-': stdout, and the text to stderr)")
    out.add_argument("--itf", metavar="DIR",
                     help="each counterexample as ITF (Apalache ADR-015): DIR/<model>.<variant>.<property>.itf.json")
    out.add_argument("--mermaid", metavar="DIR", help="each counterexample as a Mermaid sequence diagram (.mmd)")
    out.add_argument("--dot", metavar="DIR", help="each counterexample as a Graphviz DOT graph (.dot)")
    out.add_argument("--dot-graph", action="store_true",
                     help="with --dot: also the whole state graph of each variant (<model>.<variant>.state-graph.dot)")
    out.add_argument("--graph-max-states", type=_whole_number(1), metavar="N", default=DEFAULT_GRAPH_LIMIT,
                     help=f"--dot-graph draws variants with at most N states (default {DEFAULT_GRAPH_LIMIT})")
    out.add_argument("--svg", action="store_true", help="with --dot: render every .dot file to .svg with Graphviz")
    out.add_argument("--report", metavar="OUT.md", help="a Markdown review report for a pull request or review")
    out.add_argument("--trace-url", metavar="URL",
                     help="with --report: link each whole trace as URL/<model>.<variant>.<property>.txt (where "
                          "CI publishes OUT.traces/) instead of embedding it in the report")
    out.add_argument("--html", metavar="DIR",
                     help="the trace explorer: DIR/<model>.html, one self-contained page to step through "
                          "every counterexample in a browser (no server, no network)")
    out.add_argument("--sarif", metavar="OUT.sarif", help="SARIF 2.1.0: one result per unexpected outcome")
    out.add_argument("--junit", metavar="OUT.xml", help="JUnit XML: one test case per variant and property")
    out.add_argument("--with-timing", action="store_true", help="put wall-clock times into the files")
    rep = p.add_argument_group("replay")
    rep.add_argument("--replay", metavar="TRACE",
                     help="re-run a saved counterexample (a --json file or an .itf.json) against the model "
                          "(the base variant unless --variant) and say where it diverges or that it reproduces")
    rep.add_argument("--replay-pick", metavar="VARIANT/PROPERTY",
                     help="which counterexample of a --json file with several to replay (not needed when "
                          "--variant leaves one)")
    perf = p.add_argument_group("speed and memory")
    perf.add_argument("--workers", type=_whole_number(1), metavar="N", default=None,
                      help="processes that share the search, each state owned by one of them through a few "
                           "slots that seldom change (default: the cores that are free; a small search, one the "
                           "native loop takes (--loop auto: C in one process is faster), or one that needs the "
                           "whole graph (liveness, --dot-graph) or --max-states, runs in one process, and says "
                           "so when --workers was given; bench/README.md has measurements)")
    perf.add_argument("--hash-compact", action="store_true",
                      help="store a 64-bit fingerprint per state instead of the state: less memory; "
                           "'holds' then holds with an estimated collision probability, which is printed")
    perf.add_argument("--loop", choices=LOOPS, default="auto",
                      help="the explicit search's level loop: auto (default: Python at once, and for a search "
                           "big enough to pay for it the breadth-first loop compiled to C with the system's C "
                           "compiler while Python goes on, switching at a level boundary once built; builds are "
                           "cached under $XDG_CACHE_HOME), native (C from the start, waiting for the build) or "
                           "python; the same states, verdicts and counterexamples either way. Where native does "
                           "not apply (symmetry, tso, lkmm, fixed-width integers, no compiler, ...) the Python "
                           "loop runs and the output says why")
    red = p.add_argument_group("reductions (verdicts are the same with and without them)")
    red.add_argument("--no-por", action="store_true",
                     help="turn partial-order reduction off (on by default; counterexamples are the same either way)")
    sym = red.add_mutually_exclusive_group()
    sym.add_argument("--symmetry", action="store_const", const="on", dest="symmetry", default="auto",
                     help="reduce by symmetry of process arrays, and say why wherever the model is not symmetric "
                          "(by default it is applied silently where the model is provably symmetric)")
    sym.add_argument("--no-symmetry", action="store_const", const="off", dest="symmetry",
                     help="turn symmetry reduction off")
    p.add_argument("--dump-python", action="store_true", help="print the generated step functions and exit")
    p.add_argument("--dump-c", action="store_true",
                   help="print the C of the native level loop (--loop native) of each variant, or why it has none, "
                        "and exit")
    p.add_argument("--promela", metavar="OUT",
                   help="write each variant's Promela twin for SPIN and exit: OUT is the .pml file for one "
                        "variant (unless OUT is a folder), a folder (OUT/<model>.<variant>.pml, not named .pml) for several; "
                        "variants that cannot "
                        "be translated faithfully (memory tso, u32/u64) are refused (exit 2)")
    p.add_argument("--brief", action="store_true", help="print only the summary table, no traces")
    p.add_argument("--full", action="store_true",
                   help="print every row of the table and every counterexample in full (numbered trace and "
                        "race diagram); by default an expected violation shows its race one line per run of "
                        "one process's steps, and a long table one row per variant that is as expected")
    p.add_argument("--progress", action="store_true", default=None,
                   help="show progress even when stderr is not a terminal")
    p.add_argument("--version", action="version", version=f"timerace {__version__}; memory lkmm and "
                                                              f"FILE.litmus: {LKMM_NAME}")
    p.add_argument("--list-models", action="store_true", help="list the models shipped with timerace and exit")
    return p


def text_width(stream) -> int:
    """The terminal's width for a terminal (at least 60 columns), else TEXT_WIDTH; a
    COLUMNS the caller sets wins in a pipe too (`COLUMNS=80 check ... | less`)."""
    import shutil

    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    columns = os.environ.get("COLUMNS", "")
    if not tty and columns.isdigit() and int(columns) > 0:
        return max(60, int(columns))
    if not tty:
        return TEXT_WIDTH
    return max(60, shutil.get_terminal_size((TEXT_WIDTH, 24)).columns - 1)


def wrote_line(written: list[str], width: int) -> str:
    """`check: wrote N files: ...`, within `width` columns: each file named while that
    fits, else a folder that holds several of them named once with its count; wrapped."""
    head = f"check: wrote {len(written)} file{'s' if len(written) != 1 else ''}: "
    names = [printable(w) for w in written]
    if len(head) + len(", ".join(names)) > width:
        folders: dict[str, int] = {}
        for w in names:
            folders[os.path.dirname(w)] = folders.get(os.path.dirname(w), 0) + 1
        said, seen = [], set()
        for w in names:
            folder = os.path.dirname(w)
            if folders[folder] <= 3:  # a few files are named; a folder of many is counted
                said.append(w)
            elif folder not in seen:
                seen.add(folder)
                said.append(f"{folder or '.'}/ ({folders[folder]} files)")
        names = said
    # wrapped between names, never inside one (a path is copied from here): a name that
    # does not fit starts a line of its own
    lines, line, first = [], head.rstrip(), True
    for name in names:
        sep = " " if first else ", "
        if len(line) + len(sep) + len(name) > width:
            lines.append(line if first else line + ",")
            line = "  " + name
        else:
            line += sep + name
        first = False
    return "\n".join([*lines, line])


def _seconds(text: str) -> float:
    try:
        t = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not t > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return t


def _bound_or_unbounded(text: str):
    """--preemptions: a whole number or `unbounded`."""
    return "unbounded" if text == "unbounded" else _whole_number(0)(text)


def _whole_number(least: int):
    """An argparse type: a whole number >= least (a bad value is a usage error, exit 2)."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"expected a number >= {least}, got {n}")
        return n

    return parse


def exit_code(result: RunResult) -> int:
    outcomes = [o for v in result.variants for o in v.outcomes]
    if any(v.model_error is not None or v.checker_bugs for v in result.variants):
        return EXIT_VIOLATION
    decided = [o for o in outcomes if o.verdict not in (Verdict.INCOMPLETE, Verdict.UNKNOWN)]
    if any(not o.as_expected for o in decided):
        return EXIT_VIOLATION
    if len(decided) < len(outcomes) or any(not v.stats.complete for v in result.variants):
        return EXIT_INCOMPLETE
    return EXIT_OK


def replay_exit_code(results: list[ReplayResult]) -> int:
    if any(r.reproduced and not r.expected_violation for r in results):
        return EXIT_VIOLATION
    if any(r.inconclusive for r in results):
        return EXIT_INCOMPLETE
    return EXIT_OK


def _outputs(args, parser) -> OutputRequest:
    req = OutputRequest(json=args.json, itf=args.itf, mermaid=args.mermaid, dot=args.dot, dot_graph=args.dot_graph,
                        svg=args.svg, report=args.report, sarif=args.sarif, junit=args.junit,
                        html=args.html, trace_url=args.trace_url, timing=args.with_timing)
    if args.trace_url and not args.report:
        parser.error("--trace-url URL says where the report's whole traces are: it needs --report OUT.md")
    if (args.dot_graph or args.svg) and not args.dot:
        parser.error("--dot-graph and --svg need --dot DIR (where the .dot files go)")
    if args.replay and req.any:
        parser.error("--replay re-runs one saved trace; it writes no output files")
    if args.promela and (req.any or args.replay or args.dump_python):
        parser.error("--promela writes Promela twins and checks nothing; it takes no output files, "
                     "--replay or --dump-python")
    if args.workers is not None and args.workers > max_workers():
        parser.error(f"--workers {args.workers}: {too_many_workers()}")
    if args.replay_pick and not args.replay:
        parser.error("--replay-pick needs --replay TRACE")
    if args.simulate is not None and args.engine != "explicit":
        parser.error("--simulate runs the compiled steps; it takes no --engine")
    if args.depth is not None and args.engine == "explicit" and args.simulate is None:
        parser.error("--depth is for --engine bmc or induction; the explicit engine takes --max-depth")
    if args.strengthen is not None and args.engine not in ("induction", "pdr"):
        parser.error("--strengthen is for --engine induction or pdr")
    if args.rounds and args.engine != "bmc":
        parser.error(f"--rounds is for --engine bmc, not {args.engine}")
    if args.stride > 1 and not args.rounds:
        parser.error("--stride is for --engine bmc --rounds: without rounds a depth does not cover the ones before it")
    if args.depth is not None and args.engine == "pdr":
        parser.error("--engine pdr has no bound: it takes no --depth")
    if (args.max_states is not None or args.max_depth is not None) and args.engine != "explicit":
        parser.error(f"--max-states and --max-depth are for the explicit engine; {args.engine} takes --depth")
    if args.engine != "explicit" and (args.replay or args.dot_graph):
        parser.error(f"--replay and --dot-graph need the explicit engine, not {args.engine}")
    return req


def litmus_main(argv: list[str]) -> int:
    """`check FILE.litmus [--memory-model lkmm|tso|sc] [--max-candidates N]`: herd7's
    report, then 0 if the Observation matches the file's `Result:` line, 1 if not, 2 for
    what cannot be read, 3 when the candidate executions exceed the limit."""
    from .litmus import axiomatic as lkmm  # (a spec's check never needs the axiomatic model)

    p = _Parser(prog="check", description="Check a litmus C test (the kernel's format) under the LKMM, as herd7 does.",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=LITMUS_EPILOG)
    p.add_argument("file", help="the .litmus file")
    p.add_argument("--memory-model", choices=lkmm.MODELS, default="lkmm",
                   help="lkmm (default): linux-kernel.cat; tso: x86-TSO with the kernel's x86 mapping; sc "
                        "(RCU grace periods: lkmm only)")
    p.add_argument("--max-candidates", type=int, default=lkmm.DEFAULT_LIMIT, metavar="N",
                   help="give up (exit 3) beyond N candidate executions")
    args = p.parse_args(argv)

    source = None
    try:
        test = load_litmus(args.file)
        source = test.source
        result = lkmm.evaluate(test, args.memory_model, args.max_candidates)
    except SpecError as e:
        if source is None and e.span.line:
            source = read_for_display(args.file)
        sys.stderr.write(printable(e.render(source), multiline=True) + "\n")
        return 2
    except lkmm.TooManyCandidates as e:
        sys.stderr.write(f"check: {printable(args.file)}: cannot decide: {e} "
                         "(raise --max-candidates, or shrink the test)\n")
        return 3
    except RecursionError:
        sys.stderr.write(f"{printable(args.file)}: error: the test nests too deeply to check\n")
        return 2
    text = lkmm.format_result(test, result)
    if result.loop_cut:  # herd7 warns "unrolling limit exceeded, legal outcomes may be missing"
        text += "\n" + lkmm.LOOP_NOTE
    said, race = lkmm.judge_result(test, result)
    if test.expected is None:
        text += "\nResult: no 'Result:' line in the file: nothing to compare"
        code = 0
    elif said and race:
        text += f"\nResult: {result.observation}, as the file's 'Result: {lkmm.result_line(test)}' says"
        code = 0
    elif not said:
        text += f"\nResult: {result.observation}, but the file says 'Result: {lkmm.result_line(test)}'"
        code = 1
    else:
        flagged = "data-race" in result.flags
        text += (f"\nResult: {result.observation}, " + ("but a data race is flagged, which the file's 'Result: "
                 f"{lkmm.result_line(test)}' does not predict" if flagged else
                 f"but no data race is flagged, which the file's 'Result: {lkmm.result_line(test)}' predicts"))
        code = 1
    if args.memory_model != "lkmm" and test.expected is not None:
        text += f" (the Result line is the LKMM's; this is memory {args.memory_model})"
    try:
        sys.stdout.write(printable(text, multiline=True) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return code


def _simulation(args):
    if args.simulate is None:
        return None
    return SimulationPlan(args.simulate, 10 if args.depth is None else args.depth, args.seed)


def _explain(code: str) -> int:
    """`check --explain CODE`: the registry's explanation (errors.py)."""
    text = explain(code) if code else None
    if text is None:
        sys.stderr.write(f"check: error: unknown error code {printable(code)!r}\n"
                         f"  hint: codes: {', '.join(REGISTRY)}\n")
        return EXIT_INPUT
    _print(text)
    return EXIT_OK


def _list_models() -> int:
    """`check --list-models`: the shipped models, each with the first line of its header."""
    from .base.shipped import models_dir, shipped_models  # (importlib.resources: only here)

    models = shipped_models()
    if not models:
        sys.stderr.write("check: error: this installation ships no models\n")
        return EXIT_INPUT
    rows = []
    for name, path in models.items():
        first = next((ln.strip().lstrip("/").strip() for ln in path.read_text(encoding="utf-8").splitlines()
                      if ln.strip().startswith("//") and ln.strip().lstrip("/").strip()), "")
        rows.append(f"{name:<22} {first}")
    _print("\n".join(rows) + f"\n\n(in {models_dir()}; check NAME runs one)")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--explain"] or (argv and argv[0].startswith("--explain=")):
        return _explain(argv[1] if argv[0] == "--explain" and len(argv) > 1 else argv[0].partition("=")[2])
    if any(a.endswith(".litmus") and not a.startswith("-") for a in argv):  # the kernel's litmus C format
        return litmus_main(argv)
    if argv[:1] == ["--list-models"]:
        return _list_models()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not os.path.exists(args.file):  # (the shipped models' module only then: start-up)
        from .base.shipped import model_file

        args.file = model_file(args.file)  # `check pi_timer`: the model shipped with timerace
    req = _outputs(args, parser)
    problems = path_problems(req, (args.file,)) + _promela_problems(args.promela, args.file)
    if problems:
        for problem in problems:
            sys.stderr.write(f"check: error: {printable(problem)}\n")
        return EXIT_INPUT
    source = None
    command = "check " + " ".join(shlex.quote(a) for a in argv)
    try:
        defines = parse_defines(args.defines)
        spec = load(args.file)
        source = spec.source
        opts = Options(defines=defines, variants=tuple(args.variant), use_expectations=not args.no_expect,
                       limits=Limits(args.max_states, args.max_depth, not args.no_deadlock),
                       memory=args.memory_model, store_buffer=args.store_buffer, preemptions=args.preemptions, progress=args.progress,
                       command=command,
                       graph_limit=args.graph_max_states if args.dot_graph else None,
                       workers=args.workers if args.workers is not None else default_workers(),
                       workers_asked=args.workers is not None, hash_compact=args.hash_compact,
                       engine=Engine(args.engine), depth=10 if args.depth is None else args.depth,
                       timeout=args.timeout, rounds=args.rounds, stride=args.stride, strengthen=args.strengthen,
                       por=not args.no_por, symmetry=args.symmetry, simulate=_simulation(args),
                       coverage=not args.no_coverage, loop=args.loop)
        if args.promela:
            return _write_promela(spec, opts, args.promela)
        if args.dump_python:
            for name in selected_variants(spec, opts.variants):
                cm = compile_variant(spec, name, opts)
                if not _print(cm.source + "\n" + level_loop_source(cm, opts.limits.check_deadlock,
                                                                   opts.hash_compact)):
                    break
            return EXIT_OK
        if args.dump_c:
            from .backends.c import Unsupported

            for name in selected_variants(spec, opts.variants):
                cm = compile_variant(spec, name, opts)
                try:
                    text = native_source(cm).text
                except Unsupported as e:
                    text = f"/* variant {printable(name)}: no native loop: {printable(str(e))} */\n"
                if not _print(text):
                    break
            return EXIT_OK
        if args.replay:
            results = replay_trace(spec, args.replay, args.replay_pick, opts)
            _print("\n\n".join(format_replay(r, spec.file) for r in results))
            return replay_exit_code(results)
        with _sigterm_as_ctrl_c():
            result = check_spec(spec, opts)
    except SpecError as e:
        if e.span.line and (source is None or e.span.file != args.file):
            source = read_for_display(e.span.file)  # the error is in another file than the spec
        sys.stderr.write(printable(e.with_code("TR600").render(source), multiline=True) + "\n")
        _write_errors(e, req, args.file, command)
        return EXIT_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("interrupted before the search started\n")
        return EXIT_INCOMPLETE
    except RecursionError:
        sys.stderr.write(f"{args.file}: error: the spec nests too deeply to check\n")
        return EXIT_INPUT
    # with `--json -` stdout is the JSON alone (`check ... --json - | jq .`): the text goes to stderr
    stream = sys.stderr if req.json == "-" else sys.stdout
    text = format_run(result, show_traces=not args.brief, width=text_width(stream), full=args.full)
    if args.coverage:
        text += "\n\n" + coverage_table(result)
    if not _print(text, stream):
        return exit_code(result)
    for v in result.variants:
        for bug in v.checker_bugs:
            sys.stderr.write(printable(f"CHECKER BUG ({v.variant}): {bug}", multiline=True) + "\n")
    try:
        written, warnings = write_outputs(result, req)
    except BrokenPipeError:  # `--json - | head`
        _silence_stdout()
        return exit_code(result)
    except OSError as e:
        sys.stderr.write(f"check: error: cannot write {printable(str(e.filename or 'an output file'))}: "
                         f"{e.strerror}\n")
        return EXIT_INPUT
    for w in warnings:
        sys.stderr.write(f"check: warning: {printable(w)}\n")
    if written:
        sys.stderr.write(wrote_line(written, text_width(sys.stderr)) + "\n")
    if any(v.stats.limit == "interrupted" for v in result.variants):
        sys.stderr.write("interrupted: the results above cover what was explored so far\n")
        return EXIT_INCOMPLETE
    for v in result.variants:
        if v.stats.limit == OUT_OF_MEMORY:  # a limit: exit 3 unless something unexpected was found
            why = next((o.note for o in v.outcomes if o.note and o.note != OUT_OF_MEMORY), None)
            if why is not None and not v.stats.states:  # stopped before it could count (a killed worker)
                sys.stderr.write(f"check: {printable(why)} (variant {v.variant}); its properties are not verified\n")
            else:
                sys.stderr.write(f"check: out of memory after {v.stats.states:,} states (variant {v.variant}): "
                                 "the results above cover what was explored so far\n")
    return exit_code(result)


@contextlib.contextmanager
def _sigterm_as_ctrl_c():
    """`kill PID` (SIGTERM) ends a check as Ctrl-C does: the partial result is printed and
    written, exit 3 (the default action would lose it, and once left workers behind)."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _write_promela(spec, opts, out: str) -> int:
    """`--promela OUT`: the twins that translate are written; each refusal is an error."""
    variants = selected_variants(spec, opts.variants)
    single = len(variants) == 1 and not os.path.isdir(out)  # one variant into a folder: OUT/<stem>.pml
    if not single and not os.path.isdir(out) and (os.path.exists(out) or out.endswith(".pml")):
        what = "is a file" if os.path.exists(out) else "names a .pml file"
        sys.stderr.write(f"check: error: --promela {printable(out)} {what}, but {len(variants)} variants need a "
                         f"folder (OUT/<model>.<variant>.pml)\n"
                         "  hint: name a folder, or choose one variant with --variant NAME\n")
        return EXIT_INPUT
    written, refused = [], 0
    for v in variants:
        try:
            stem, text = promela_twin(spec, v, opts)
        except SpecError as e:
            refused += 1
            sys.stderr.write(printable(e.render(spec.source if e.span.file == spec.file else None), True) + "\n")
            continue
        path = out if single else os.path.join(out, stem + ".pml")
        try:
            write_text(path, text)
        except OSError as e:
            sys.stderr.write(f"check: error: cannot write {printable(str(e.filename or path))}: {e.strerror}\n")
            return EXIT_INPUT
        written.append(path)
    if written:
        sys.stderr.write(wrote_line(written, text_width(sys.stderr)) + "\n")
    if refused:
        sys.stderr.write(f"check: {refused} of {len(variants)} variant{'s' if len(variants) != 1 else ''} "
                         "not translated to Promela (see the errors above)\n")
        return EXIT_INPUT
    return EXIT_OK


def _promela_problems(out: str | None, spec: str) -> list[str]:
    """`--promela OUT`: an existing folder, or a file for one variant (which variants there
    are is checked once the spec is read)."""
    if out is None:
        return []
    if os.path.isdir(out):
        return check_output_paths([], [("--promela", out)])
    return check_output_paths([("--promela", out)], [], (spec,))


def _write_errors(e: SpecError, req, spec: str, command: str) -> None:
    """The --json and --sarif files of a spec that cannot be checked: its errors."""
    try:
        written = write_error_outputs(e, req, spec, command)
    except BrokenPipeError:  # `--json - | head`
        _silence_stdout()
        return
    except OSError as err:
        sys.stderr.write(f"check: error: cannot write {printable(str(err.filename or 'an output file'))}: "
                         f"{err.strerror}\n")
        return
    if written:
        sys.stderr.write(f"check: wrote {len(written)} file{'s' if len(written) != 1 else ''} with the errors: "
                         + ", ".join(printable(w) for w in written) + "\n")


def _print(text: str, stream=None) -> bool:
    """Print outside-derived text with its control characters escaped; False when the
    reader has gone (`check ... | head`), which is not an error: the rest is dropped."""
    stream = stream or sys.stdout
    try:
        stream.write(printable(text, multiline=True) + "\n")
        stream.flush()
    except BrokenPipeError:
        if stream is sys.stdout:
            _silence_stdout()
        return False
    return True


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def entry() -> None:  # pragma: no cover
    raise SystemExit(main())
