"""The import graph of checker/ follows the pipeline, one way (README, "How it is built").

Read from the source with `ast`, not by importing, so that an import hidden in a function
counts as much as one at the top: the rules below are written once, as data, and each
test checks one of them over every module of checker/:

* every module sits in one layer of `LAYERS`, and imports only modules of lower layers
  (exporters may also use each other); so the graph has no cycle;
* after the front end, only the orchestrators (run, api, cli) import parse, ast or
  resolve: the other stages see the model and the IR, never the source or the pass;
* no module imports another's private names (`_x`): what is shared is public, in the
  module where it belongs;
* an import inside a function only defers a heavy dependency (Z3, networkx), listed in
  `LAZY` with the reason, never an import that would make a cycle at the top;
* Z3 loads only with the Z3 engines (run defers them), so checking a model explicitly
  or printing a result never waits for it;
* the explicit engine is one package behind one `explore()`: nothing outside it imports
  its parts.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "checker"

#: The folders of checker/, lowest first: one folder per pipeline stage, so a sorted
#: listing shows the pipeline. (folder, why it is here, its layers lowest first: (name,
#: modules, whether the layer's modules may import each other, why)). A module may import
#: only modules of lower layers, so a folder imports only the folders below it, and, in
#: its own folder, the layers below its own. The README's "How it is built" is this table.
FOLDERS: tuple[tuple[str, str, tuple[tuple[str, tuple[str, ...], bool, str], ...]], ...] = (
    ("checker/base", "what every stage uses", (
        ("records", ("checker.base.record",), False,
         "`@record`, the frozen slots dataclass every stage's data is made of, with its methods shared"),
        ("foundation", ("checker", "checker.base", "checker.base.errors", "checker.base.limits",
                        "checker.base.safe_text", "checker.base.progress", "checker.base.shipped"), False,
         "spans and input errors (with the text a span covers), the language's limits, text made safe to "
         "print, progress lines, where the shipped models are, the version; none imports another checker "
         "module but the records"),
    )),
    ("checker/front", "the spec language's front end: text -> lark tree -> typed AST", (
        ("ast", ("checker.front", "checker.front.ast"), False, "the typed, frozen syntax tree with spans"),
        ("parse", ("checker.front.parse",), False, "spec text -> ast, the only user of lark"),
    )),
    ("checker/model.py", "the resolved model, the resolver's output", (
        ("model", ("checker.model",), False, "symbols, types, typed expressions"),
    )),
    ("checker/semantics", "what the language's constructs mean, once for every back end", (
        ("primitives", ("checker.semantics", "checker.semantics.primitives"), False,
         "the one table of kernel primitives: signature, semantic class, documented ordering"),
        ("lowering", ("checker.semantics.lower", "checker.semantics.fold", "checker.semantics.contexts"), False,
         "each primitive call -> a core operation carrying its table row; constant folding and store "
         "checks both back ends share; execution contexts (CPUs, threads, handlers, preemption) -> plain "
         "state, guards and generated steps, so that every back end and the reductions inherit them"),
    )),
    ("checker/litmus", "the second front end: the kernel's litmus tests and their axiomatic judge", (
        ("litmus reader", ("checker.litmus", "checker.litmus.reader"), False,
         "the kernel's litmus C text -> its own small syntax tree"),
        ("litmus evaluator", ("checker.litmus.axiomatic",), False,
         "the exact axiomatic LKMM (and sc, tso) over a litmus test's candidate executions, "
         "the reference for loop-free input; the command line prints what it finds"),
    )),
    # the resolver, bottom up: its context, its parts (mixins that reach each other through
    # `self` only), the package that puts them together
    ("checker/resolve", "typed AST -> resolved model", (
        ("resolve base", ("checker.resolve.base",), False,
         "what the resolver's parts share: the context of a resolution and the built-in names"),
        ("resolve parts", ("checker.resolve.declarations", "checker.resolve.types", "checker.resolve.expressions",
                           "checker.resolve.statements", "checker.resolve.inlines", "checker.resolve.variants",
                           "checker.resolve.contexts"), False,
         "one concern each: declarations, types, expressions, statements, inlines (fn and inline calls), "
         "variants (constants and their overrides), execution-context declarations; none imports another"),
        ("resolve", ("checker.resolve",), False, "ast -> model: the resolver put together from its parts"),
    )),
    ("checker/ir.py", "resolved model -> state layout and atomic steps", (
        ("ir", ("checker.ir",), False, "model -> state layout and per-process atomic steps, store buffers"),
    )),
    ("checker/memory", "memory models beyond sc that wrap the compiled steps", (
        ("lkmm machine", ("checker.memory", "checker.memory.lkmm"), False,
         "memory lkmm: the view-based machine's state (planned from the IR) and the steps it wraps "
         "around the compiled ones"),
    )),
    ("checker/backends", "IR -> code", (
        ("back ends", ("checker.backends", "checker.backends.python", "checker.backends.promela",
                       "checker.backends.c"), False,
         "IR -> generated Python for the explicit engine, IR -> the Promela twin, IR -> the C of the native "
         "level loop; none uses another"),
    )),
    ("checker/results", "what every engine fills and every exporter reads", (
        ("results", ("checker.results", "checker.results.trace", "checker.results.findings"), False,
         "the trace, statistics and verdict types"),
    )),
    # the engines, bottom up
    ("checker/engines", "compiled model -> results: explicit search, reductions, Z3", (
        ("engine bases", ("checker.engines", "checker.engines.smt", "checker.engines.smt.solver",
                          "checker.engines.smt.terms", "checker.engines.explicit.fastloop"), False,
         "the Z3 solver settings and Boolean terms; the generated level loop, lowest part of the "
         "explicit engine"),
        ("z3 encoding, explicit search", ("checker.engines.smt.encode", "checker.engines.explicit.search"), False,
         "compiled model -> Z3; the breadth-first search (it runs the generated loop)"),
        ("explicit workers", ("checker.engines.explicit.parallel", "checker.engines.explicit.native"), False,
         "the same search shared among worker processes; the native level loop (the C back end's, "
         "built and loaded)"),
        ("explicit engine", ("checker.engines.explicit",), False,
         "the package's face: explore() picks one process or the workers"),
        ("footprints", ("checker.engines.reduce.footprint",), False,
         "what each step reads and writes, from the IR: the reductions' common ground"),
        ("reductions", ("checker.engines.reduce.por", "checker.engines.reduce.symmetry",
                        "checker.engines.reduce.merge"), False,
         "partial-order reduction, symmetry and step merging, each on the footprints; none uses another"),
        ("explicit clients", ("checker.engines.crosscheck", "checker.engines.liveness", "checker.engines.reduce",
                              "checker.engines.replay", "checker.engines.coverage", "checker.engines.simulate"),
         False,
         "use explore()'s results or plug into it: replay of Z3 traces, liveness on the state graph, "
         "the reductions (partial-order, symmetry) handed to explore(), replay of saved traces, "
         "coverage, random simulation"),
        ("invariant candidates", ("checker.engines.smt.houdini",), False,
         "candidate invariants read off an explicit search's states, for k-induction to prove or drop"),
        ("bmc", ("checker.engines.smt.bmc",), False, "bounded model checking (replays what Z3 finds)"),
        ("z3 proofs", ("checker.engines.smt.induction", "checker.engines.smt.lemmas"),
         False, "k-induction on top of bmc's unrolling; lemmas over bmc's findings"),
        ("pdr", ("checker.engines.smt.pdr",), False,
         "PDR through Spacer, its paths pinned to bmc's unrolling; with --strengthen, the mined candidates "
         "that k-induction's Houdini pruning keeps"),
        ("z3 liveness", ("checker.engines.smt.lasso",), False,
         "liveness under Z3: the liveness-to-safety product, unrolled by bmc's unrolling and proved by pdr's "
         "Spacer query; its lassos judged by the explicit liveness engine"),
        ("explanations", ("checker.engines.explain",), False,
         "what each step of a counterexample decided, evaluated with the compiled model; the pipeline "
         "attaches it to the results, so that no exporter re-runs anything"),
    )),
    ("checker/export", "results -> files and text", (
        ("exporters", ("checker.export", "checker.export.*"), True,
         "RunResult -> text, JSON, ITF, Mermaid, DOT, Markdown, SARIF, JUnit; they share helpers "
         "(files, text) and outputs dispatches to all of them, without a cycle"),
    )),
    ("checker/pipeline.py", "the one module that knows the whole chain", (
        ("run", ("checker.pipeline",), False, "parse, resolve, build, compile, search, explain, in order"),
    )),
    ("checker/api.py, checker/cli.py, checker/lsp.py, checker/__main__.py", "the entry points", (
        ("entry points", ("checker.api", "checker.cli", "checker.lsp"), False,
         "the Python API, the command line and the language server, all over the pipeline; none uses another"),
        ("main", ("checker.__main__",), False, "`python -m checker`"),
    )),
)

#: The layers, lowest first, as FOLDERS orders them
LAYERS: tuple[tuple[str, tuple[str, ...], bool, str], ...] = tuple(
    layer for _, _, layers in FOLDERS for layer in layers)

#: modules a layer names that do not exist yet; delete a name here when its module lands
NOT_YET: frozenset[str] = frozenset()

#: what the exporters may import besides each other: an exporter never re-runs a model
#: (README), it reads the finished RunResult
EXPORTERS_READ = ("records", "foundation", "results")

#: the front end's passes and their input: after it, only the orchestrators call them
FRONT_END = frozenset({"checker.front", "checker.front.parse", "checker.front.ast", "checker.resolve"} | {
    f"checker.resolve.{part}" for part in ("base", "declarations", "types", "expressions", "statements",
                                           "inlines", "variants", "contexts")})
ORCHESTRATORS = frozenset({"checker.pipeline", "checker.api", "checker.cli", "checker.lsp", "checker.__main__"})

#: Private names a module may use from another, each with the reason (none now: explain
#: uses the Python back end's Compiler and Emitter and ir.op_exprs, public since the move);
#: test_exceptions_are_still_needed says when an entry can go.
PENDING_PRIVATE: dict[tuple[str, str], frozenset[str]] = {}

#: the imports that may stay inside a function, each deferring a heavy dependency:
#: (importer, imported) -> why. A standard-library module cannot import us back, so
#: its imports may sit anywhere.
LAZY: dict[tuple[str, str], str] = {
    ("checker.pipeline", "checker.engines.smt.solver"): "Z3, only to read the default timeout of a Z3 engine",
    ("checker.pipeline", "checker.engines.smt.lemmas"): "Z3, only for models with lemmas",
    ("checker.pipeline", "checker.engines.smt.bmc"): "Z3, only for --engine bmc",
    ("checker.pipeline", "checker.engines.smt.induction"): "Z3, only for --engine induction",
    # start-up (issue 30): `check` on a small model loads only what its run uses
    ("checker.cli", "checker.litmus.axiomatic"): "the axiomatic LKMM, only for a .litmus file",
    ("checker.pipeline", "checker.litmus.reader"): "the litmus reader, only for a .litmus file",
    ("checker.pipeline", "checker.backends.promela"): "the Promela back end, only for --promela",
    ("checker.pipeline", "checker.export.itf"): "the ITF reader, only for --replay",
    ("checker.pipeline", "checker.export.json"): "the JSON reader, only for --replay",
    ("checker.export.outputs", "checker.export.json"): "an exporter, only when its file is asked for",
    ("checker.export.outputs", "checker.export.itf"): "an exporter, only when its files are asked for",
    ("checker.export.outputs", "checker.export.mermaid"): "an exporter, only when its files are asked for",
    ("checker.export.outputs", "checker.export.dot"): "an exporter (and subprocess), only for --dot",
    ("checker.export.outputs", "checker.export.markdown"): "an exporter, only for --report",
    ("checker.export.outputs", "checker.export.html"): "an exporter, only for --html",
    ("checker.export.outputs", "checker.export.sarif"): "an exporter, only for --sarif",
    ("checker.export.outputs", "checker.export.junit"): "an exporter (and xml.etree), only for --junit",
    ("checker.pipeline", "checker.engines.smt.pdr"): "Z3, only for --engine pdr",
    ("checker.engines.explicit", "checker.engines.explicit.native"):
        "the native loop (ctypes, the compiler's child process), only for a search past NATIVE_FROM states, "
        "--loop native or --dump-c",
    ("checker.pipeline", "checker.engines.smt.lasso"): "Z3, only for liveness under a Z3 engine",
    ("checker.engines.explicit", "checker.backends.c"):
        "the C back end, only for a native search (--loop native, or auto past NATIVE_FROM states) or --dump-c",
    ("checker.engines.reduce.por", "checker.backends.c"): "the C back end, only for a native search's ample tables",
    ("checker.cli", "checker.backends.c"): "the C back end, only for --dump-c",
    ("checker.engines.explicit", "checker.engines.explicit.parallel"):
        "the workers (multiprocessing's kin: mmap, queues, signals), only for --workers past one",
    ("checker.pipeline", "checker.engines.liveness"): "the liveness engine, only for a model with liveness properties",
    ("checker.pipeline", "checker.engines.replay"): "the replay engine, only for --replay",
    ("checker.backends.python", "checker.memory.lkmm"): "the lkmm machine, only under `memory lkmm`",
    ("checker.engines.explicit.search", "checker.memory.lkmm"): "the lkmm machine's trace notes, only under lkmm",
    ("checker.results.trace", "checker.memory.lkmm"): "the lkmm machine's views, only under lkmm",
    ("checker.pipeline", "checker.memory.lkmm"): "the lkmm machine's findings, only under tso and lkmm",
    ("checker.cli", "checker.base.shipped"):
        "the shipped models (importlib.resources, pathlib), only for --list-models or a FILE that is not there",
}

#: calls that import by name at run time, allowed only here: module -> why
DYNAMIC = {"checker": "the lazy public names (`from checker import check_file`): `import checker` stays cheap"}

#: a heavy dependency -> the modules that may import it at their top; and, for Z3, the
#: modules that may load it at all (their top-level imports reach it)
TOP_LEVEL_HEAVY = {
    "z3": frozenset({"checker.engines.smt.solver", "checker.engines.smt.terms", "checker.engines.smt.encode",
                     "checker.engines.smt.bmc", "checker.engines.smt.induction", "checker.engines.smt.lemmas",
                     "checker.engines.smt.pdr", "checker.engines.smt.houdini", "checker.engines.smt.lasso"}),
    "lark": frozenset({"checker.front.parse"}),
    "networkx": frozenset(),
}
Z3_ENGINES = TOP_LEVEL_HEAVY["z3"] | {"checker.engines.crosscheck"}

#: packages whose parts only the package itself may import (outside: the package's face)
ONE_FACE = ("checker.engines.explicit",)


# ---- the import graph, read from the source --------------------------------------


@dataclass(frozen=True, slots=True)
class Edge:
    importer: str
    imported: str  # a checker module, or the top-level name of another distribution
    names: tuple[str, ...]  # `from x import names`; () for `import x` and submodules
    file: str
    line: int
    top: bool  # at module level (not inside a function)

    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.importer} imports {self.imported}" + (
            f" ({', '.join(self.names)})" if self.names else "")


@dataclass(frozen=True, slots=True)
class Graph:
    modules: dict[str, Path]  # module name -> file
    edges: tuple[Edge, ...]
    private_uses: tuple[tuple[str, str, str, str], ...]  # `module._x` reads: (reader, module, _x, file:line)
    dynamic: tuple[tuple[str, str], ...]  # (module, where) of importlib.import_module / __import__


def module_names(package: Path) -> dict[str, Path]:
    out = {}
    for p in sorted(package.rglob("*.py")):
        parts = p.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def import_graph(package: Path) -> Graph:
    modules = module_names(package)
    top_name = package.name
    edges, private_uses, dynamic = [], [], []
    def read(mod: str, path: Path) -> None:
        """One module's imports (a function, so that its helpers bind this module's names)."""
        is_pkg = path.name == "__init__.py"
        here = mod if is_pkg else mod.rpartition(".")[0]
        rel = str(path.relative_to(package.parent))
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        aliases: dict[str, str] = {}  # local name -> checker module it is bound to

        def add(imported: str, names: tuple[str, ...], node: ast.stmt, top: bool) -> None:
            edges.append(Edge(mod, imported, names, rel, node.lineno, top))

        def within(name: str) -> str | None:
            """The longest prefix of a dotted name that is one of our modules."""
            parts = name.split(".")
            for k in range(len(parts), 0, -1):
                if ".".join(parts[:k]) in modules:
                    return ".".join(parts[:k])
            return None

        def visit(node: ast.AST, top: bool) -> None:
            for child in ast.iter_child_nodes(node):
                inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.Import):
                    for a in child.names:
                        if a.name.split(".")[0] == top_name:
                            target = within(a.name) or a.name
                            add(target, (), child, top)
                            if a.asname:
                                aliases[a.asname] = target
                        else:
                            add(a.name.split(".")[0], (), child, top)
                elif isinstance(child, ast.ImportFrom) and child.module != "__future__":
                    if child.level:
                        base_parts = here.split(".")[: len(here.split(".")) - (child.level - 1)]
                        base = ".".join(base_parts + ([child.module] if child.module else []))
                    else:
                        base = child.module or ""
                    if base.split(".")[0] != top_name:
                        add(base.split(".")[0], tuple(a.name for a in child.names), child, top)
                        continue
                    names = []
                    for a in child.names:
                        sub = f"{base}.{a.name}"
                        if sub in modules:  # `from . import model as m`: the submodule
                            add(sub, (), child, top)
                            aliases[a.asname or a.name] = sub
                        else:
                            names.append(a.name)
                    if names:
                        add(within(base) or base, tuple(names), child, top)
                elif isinstance(child, ast.Call):
                    f = child.func
                    if (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
                            isinstance(f, ast.Name) and f.id in ("__import__", "import_module")):
                        dynamic.append((mod, f"{rel}:{child.lineno}"))
                visit(child, inner)

        visit(tree, True)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and private(node.attr)):
                private_uses.append((mod, aliases[node.value.id], node.attr, f"{rel}:{node.lineno}"))
    for mod, path in modules.items():
        read(mod, path)
    return Graph(modules, tuple(edges), tuple(private_uses), tuple(dynamic))


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def layer_of(module: str) -> int | None:
    for k, (_, members, _, _) in enumerate(LAYERS):
        for pattern in members:
            if module == pattern or (pattern.endswith(".*") and module.startswith(pattern[:-1])):
                return k
    return None


def layer_named(name: str) -> int:
    return next(k for k, layer in enumerate(LAYERS) if layer[0] == name)


def internal(graph: Graph):
    """The edges between two modules of the checker."""
    return [e for e in graph.edges if e.imported in graph.modules]


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    succ: dict[str, set[str]] = {m: set() for m in graph.modules}
    for e in internal(graph):
        if e.imported != e.importer:
            succ[e.importer].add(e.imported)
    index, low, on, stack, out = {}, {}, set(), [], []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(succ) + 100))
    for v in sorted(succ):
        if v not in index:
            strong(v)
    return out


# ---- the rules, each a function from a graph to its violations -------------------


def unplaced(graph: Graph) -> list[str]:
    out = [f"{m} is in no layer: add it to LAYERS in tests/test_layers.py, where its imports put it"
           for m in graph.modules if layer_of(m) is None]
    for _, members, _, _ in LAYERS:
        for name in members:
            if not name.endswith(".*") and name not in graph.modules and name not in NOT_YET:
                out.append(f"LAYERS names {name}, which is no module of checker/")
    out += [f"NOT_YET names {name}, which exists now: delete it from NOT_YET" for name in NOT_YET
            if name in graph.modules]
    return out


def upward(graph: Graph) -> list[str]:
    out = []
    reads = {layer_named(n) for n in EXPORTERS_READ}
    exporters = layer_named("exporters")
    for e in internal(graph):
        a, b = layer_of(e.importer), layer_of(e.imported)
        if a is None or b is None or e.importer == e.imported:
            continue
        name_a, name_b = LAYERS[a][0], LAYERS[b][0]
        if b > a:
            out.append(f"{e.where()}: layer '{name_b}' is above '{name_a}'; data flows one way, so a lower "
                       f"layer never imports a higher one (move the shared part down, or pass it in)")
        elif b == a and not LAYERS[a][2]:
            out.append(f"{e.where()}: both are in layer '{name_a}', whose modules do not use each other "
                       f"(if one must, give it a layer of its own above the other)")
        elif a == exporters and b != exporters and b not in reads:
            out.append(f"{e.where()}: an exporter reads the finished RunResult only (layers "
                       f"{', '.join(EXPORTERS_READ)}), it never re-runs a model")
    return out


def front_end_reached(graph: Graph) -> list[str]:
    ir = layer_named("ir")
    return [f"{e.where()}: after the front end only {', '.join(sorted(ORCHESTRATORS))} call it; "
            f"this stage should get what it needs from the model or the IR"
            for e in internal(graph)
            if e.imported in FRONT_END and e.importer not in ORCHESTRATORS
            and (layer_of(e.importer) or 0) >= ir]


def pending(importer: str, imported: str, names) -> bool:
    return set(names) <= PENDING_PRIVATE.get((importer, imported), frozenset())


def private_imports(graph: Graph) -> list[str]:
    out = [f"{e.where()}: {', '.join(n for n in e.names if private(n))} private to {e.imported}; make it "
           f"public where it belongs" for e in internal(graph)
           if any(private(n) for n in e.names) and not pending(e.importer, e.imported, filter(private, e.names))]
    return out + [f"{where}: {reader} reads {module}.{name}, private to that module; make it public where it "
                  f"belongs" for reader, module, name, where in graph.private_uses
                  if not pending(reader, module, (name,))]


def stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names


def function_level(graph: Graph) -> list[str]:
    out = [f"{e.where()} inside a function: import it at the top (if that makes a cycle, the design has "
           f"one: move the shared part to a lower layer); only a heavy dependency may be deferred, listed "
           f"in LAZY with the reason"
           for e in graph.edges
           if not e.top and not stdlib(e.imported) and (e.importer, e.imported) not in LAZY
           and not (e.names and pending(e.importer, e.imported, e.names))]
    return out + [f"{where}: {m} imports by name at run time; only {', '.join(DYNAMIC)} may (DYNAMIC)"
                  for m, where in graph.dynamic if m not in DYNAMIC]


def heavy_at_top(graph: Graph) -> list[str]:
    out = [f"{e.where()} at its top: {e.imported} loads only in "
           f"{', '.join(sorted(TOP_LEVEL_HEAVY[e.imported])) or 'a function (LAZY)'}"
           for e in graph.edges
           if e.top and e.imported in TOP_LEVEL_HEAVY and e.importer not in TOP_LEVEL_HEAVY[e.imported]]
    # what importing a module, or calling into it, may load: every import but the deferred
    # ones LAZY lists (an import inside a function still runs when the function does)
    follows: dict[str, set[str]] = {m: set() for m in graph.modules}
    for e in internal(graph):
        if (e.importer, e.imported) not in LAZY:
            follows[e.importer].add(e.imported)
    loads_z3 = {e.importer for e in graph.edges if e.top and e.imported == "z3"}
    for m in sorted(graph.modules):
        if m in Z3_ENGINES:
            continue
        seen, todo, via = {m}, [m], {m: None}
        while todo:
            x = todo.pop()
            for y in sorted(follows[x]):
                if y not in seen:
                    seen.add(y)
                    via[y] = x
                    todo.append(y)
        reached = sorted(seen & loads_z3)
        if reached:
            chain, x = [], reached[0]
            while x is not None:
                chain.append(x)
                x = via[x]
            out.append(f"{m} loads Z3 ({' -> '.join(reversed(chain))} -> z3): only the Z3 engines may, and "
                       f"run defers them (LAZY); move what is shared out of the Z3 modules")
    return out


def faces(graph: Graph) -> list[str]:
    return [f"{e.where()}: a part of {pkg}; outside the package, import what it exports from {pkg} itself"
            for e in internal(graph) for pkg in ONE_FACE
            if e.imported.startswith(pkg + ".") and not e.importer.startswith(pkg + ".") and e.importer != pkg]


def stale_exceptions(graph: Graph) -> list[str]:
    out = []
    for (a, b), names in PENDING_PRIVATE.items():
        used = {n for e in graph.edges if e.importer == a and e.imported == b for n in e.names}
        used |= {n for r, mod, n, _ in graph.private_uses if r == a and mod == b}
        if not names & used:
            out.append(f"PENDING_PRIVATE still exempts {a} -> {b}, which no longer uses {', '.join(sorted(names))}: "
                       f"delete the entry")
    for a, b in LAZY:
        if not any(e.importer == a and e.imported == b and not e.top for e in graph.edges):
            out.append(f"LAZY still lists {a} -> {b}, which is no longer imported in a function: delete the entry")
    return out


# ---- the tests --------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(PACKAGE)


def fail_with(problems: list[str]) -> None:
    assert not problems, "\n".join(problems)


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "checker"


def test_the_graph_sees_every_kind_of_import(tmp_path, graph):
    """The rules pass vacuously if the reader misses imports: it must resolve relative
    imports of submodules and of names, absolute ones, and see those in functions."""
    pkg = write_package(tmp_path, {
        "checker/__init__.py": "",
        "checker/model.py": "",
        "checker/engines/__init__.py": "",
        "checker/engines/explicit/__init__.py": "from .search import explore\n",
        "checker/engines/explicit/search.py": (
            "from ... import model as m\nfrom ...model import Thing\nimport z3\n"
            "class C:\n    def f(self):\n        import checker.engines as e\n        return e._hidden\n"),
    })
    edges = {(e.importer, e.imported, e.names, e.top) for e in import_graph(pkg).edges}
    assert edges == {
        ("checker.engines.explicit", "checker.engines.explicit.search", ("explore",), True),
        ("checker.engines.explicit.search", "checker.model", (), True),
        ("checker.engines.explicit.search", "checker.model", ("Thing",), True),
        ("checker.engines.explicit.search", "z3", (), True),
        ("checker.engines.explicit.search", "checker.engines", (), False),
    }
    assert import_graph(pkg).private_uses == (
        ("checker.engines.explicit.search", "checker.engines", "_hidden", "checker/engines/explicit/search.py:7"),)
    assert len(graph.modules) >= 40 and len(internal(graph)) >= 100  # and the real package is read


def test_every_module_is_in_one_layer(graph):
    fail_with(unplaced(graph))


def folder_problems(graph: Graph) -> list[str]:
    """Each module sits in the row of the folder that holds it: the layering is by folder."""
    out = []
    root = graph.modules["checker"].parent.parent
    for folder, _, layers in FOLDERS:
        paths = [root / f.strip() for f in folder.split(",")]
        for _, members, _, _ in layers:
            for name in members:
                path = graph.modules.get(name) if not name.endswith(".*") else None
                if path is not None and not any(path == p or p in path.parents for p in paths) and name != "checker":
                    out.append(f"{name} ({path.relative_to(root)}) is listed under {folder}, which does not hold it")
        for p in paths:
            if p.is_dir():
                for name, path in graph.modules.items():
                    if p in path.parents and not any(
                            name in members or any(m.endswith(".*") and name.startswith(m[:-1]) for m in members)
                            for _, members, _, _ in layers):
                        out.append(f"{name} lies in {folder} but FOLDERS lists it under another folder")
    return out


def test_every_module_is_in_its_folders_row(graph):
    fail_with(folder_problems(graph))


def test_a_module_in_the_wrong_folder_is_reported(tmp_path):
    pkg = write_package(tmp_path, {"checker/__init__.py": "", "checker/base/errors.py": "",
                                   "checker/base/pipeline.py": ""})
    problems = folder_problems(import_graph(pkg))
    assert any("checker.base.pipeline lies in checker/base" in p for p in problems)


def test_no_module_imports_a_higher_layer(graph):
    fail_with(upward(graph))


def test_import_cycles_hidden_in_functions(graph):
    """explicit, fastloop and parallel imported each other, and ir and resolve, the
    back edge inside a function each time; the graph counts those imports too."""
    fail_with([" <-> ".join(c) + ": an import cycle" for c in cycles(graph)])


def test_only_the_orchestrators_call_the_front_end(graph):
    fail_with(front_end_reached(graph))


def test_private_names_imported_across_modules(graph):
    """parallel took explicit's _rss_bytes and _Stop, run export.files' _safe, fastloop
    compile's _comment, crosscheck explicit's _stuck_message, bmc, induction and lemmas
    encode's _and / _or / _not."""
    fail_with(private_imports(graph))


def test_function_level_imports_dodge_cycles(graph):
    fail_with(function_level(graph))


def test_text_export_loads_z3_to_format_a_number(graph):
    """export/text imported engines.lemmas (and so Z3) to show a lemma's value."""
    fail_with(heavy_at_top(graph))


def test_explicit_engine_parts_imported_from_outside(graph):
    """The CLI imported engines.fastloop and crosscheck a private helper of explicit:
    the engine's parts are its own, its face is checker.engines.explicit."""
    fail_with(faces(graph))
    import checker.engines.explicit as face

    assert callable(face.explore) and "explore" in face.__all__


def test_exceptions_are_still_needed(graph):
    """An exception that no import needs any more would let the next one through."""
    fail_with(stale_exceptions(graph))


# ---- the rules on a small package with a back edge --------------------------------


def test_a_back_edge_is_reported(tmp_path):
    """A two-module package where the lower layer imports the higher one inside a
    function: the layer rule, the cycle rule and the function-level rule each catch it."""
    g = import_graph(write_package(tmp_path, {
        "checker/__init__.py": "",
        "checker/base/errors.py": "def f():\n    from .. import pipeline\n    return pipeline._x\n",
        "checker/pipeline.py": "from .base.errors import f\n_x = 1\n",
    }))
    assert any("layer 'run' is above 'foundation'" in p for p in upward(g))
    assert cycles(g) == [["checker.base.errors", "checker.pipeline"]]
    assert any("inside a function" in p for p in function_level(g))
    assert any("reads checker.pipeline._x" in p for p in private_imports(g))


# ---- the README's map of the tree, made from FOLDERS ---------------------------------

README = ROOT / "README.md"
MAP_START, MAP_END = "<!-- layout: made by `python tests/test_layers.py`, from FOLDERS -->", "<!-- layout end -->"


def layout_markdown(graph: Graph) -> str:
    """The README's table of the tree: each folder, lowest first, with its modules in layer
    order; the one map, so that it cannot leave a module out."""
    rows = ["| folder | stage | modules, lowest layer first |", "|---|---|---|"]
    for folder, why, layers in FOLDERS:
        names = []
        for _, members, _, _ in layers:
            for name in members:
                if name.endswith(".*"):
                    prefix = name[:-1]
                    names += [m for m in sorted(graph.modules) if m.startswith(prefix)]
                elif name in graph.modules:
                    names.append(name)
        files = []
        for name in names:
            path = graph.modules[name].relative_to(ROOT)
            if path.name == "__init__.py" and len(path.parts) > 2:
                continue  # a folder's package file: the folder stands for it
            if str(path) in (f.strip() for f in folder.split(",")) or name == "checker":
                continue
            files.append(path.name if len(path.parts) == 3 else str(path.relative_to(folder.split(",")[0])))
        rows.append(f"| `{folder}` | {why} | {', '.join(f'`{f}`' for f in files)} |")
    return "\n".join([MAP_START, *rows, MAP_END])


def test_the_readme_map_is_the_tree(graph):
    text = README.read_text(encoding="utf-8")
    assert MAP_START in text and MAP_END in text, "README.md's 'How it is built' has no generated map"
    now = text[text.index(MAP_START):text.index(MAP_END) + len(MAP_END)]
    assert now == layout_markdown(graph), "README.md's map is stale: run `python tests/test_layers.py`"


if __name__ == "__main__":  # rewrite the README's map
    text = README.read_text(encoding="utf-8")
    start, end = text.index(MAP_START), text.index(MAP_END) + len(MAP_END)
    README.write_text(text[:start] + layout_markdown(import_graph(PACKAGE)) + text[end:], encoding="utf-8")
