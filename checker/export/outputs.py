"""Which files a run writes: the CLI fills an OutputRequest from its flags, and this
module calls each exporter asked for. Every exporter takes the finished RunResult; for a
spec that cannot be checked, the JSON and SARIF exporters take its errors instead. An
exporter is imported only when asked for: a run that writes no file never loads one."""

from __future__ import annotations


from ..base.errors import SpecError
from ..results.trace import RunResult
from .files import check_output_paths
from ..base.record import record

DEFAULT_GRAPH_LIMIT = 2000  # --dot-graph draws variants with at most this many states


@record
class OutputRequest:
    json: str | None = None  # file, or "-" for stdout
    itf: str | None = None  # folder
    mermaid: str | None = None  # folder
    dot: str | None = None  # folder
    dot_graph: bool = False  # also the whole state graph (needs the engine to record it)
    svg: bool = False  # render every DOT file with Graphviz
    report: str | None = None  # Markdown file
    trace_url: str | None = None  # the report links each whole trace there (where CI publishes OUT.traces/)
    html: str | None = None  # folder: the trace explorer, one page per run
    sarif: str | None = None
    junit: str | None = None
    timing: bool = False  # include wall-clock seconds (files are otherwise byte-for-byte reproducible)

    @property
    def any(self) -> bool:
        return any((self.json, self.itf, self.mermaid, self.dot, self.report, self.sarif, self.junit, self.html))


def path_problems(req: OutputRequest, inputs: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with the files and folders `req` names (checked before the search);
    none may be one of the `inputs` (the spec)."""
    files = [(flag, path) for flag, path in (("--json", req.json), ("--report", req.report),
                                              ("--sarif", req.sarif), ("--junit", req.junit))
             if path and path != "-"]
    folders = [(flag, path) for flag, path in (("--itf", req.itf), ("--mermaid", req.mermaid), ("--dot", req.dot),
                                            ("--html", req.html))
               if path]
    return check_output_paths(files, folders, inputs)


def write_error_outputs(e: SpecError, req: OutputRequest, file: str, command: str | None) -> list[str]:
    """For a spec that cannot be checked: the JSON and SARIF files asked for, carrying
    every error `e` stands for (the other outputs describe a run, and there was none).
    Returns the paths written; OSError propagates."""
    written = []
    if req.json:
        from .json import write_errors_json

        write_errors_json(e, file, command, req.json)
        if req.json != "-":
            written.append(req.json)
    if req.sarif:
        from .sarif import write_errors_sarif

        write_errors_sarif(e, file, command, req.sarif)
        written.append(req.sarif)
    return written


def write_outputs(result: RunResult, req: OutputRequest) -> tuple[list[str], list[str]]:
    """Writes every requested file; returns (paths written, warnings). OSError propagates."""
    written: list[str] = []
    warnings: list[str] = []
    if req.json:
        from .json import write_json

        write_json(result, req.json, req.timing)
        if req.json != "-":
            written.append(req.json)
    if req.itf:
        from .itf import write_itf

        written += write_itf(result, req.itf)
    if req.mermaid:
        from .mermaid import write_mermaid

        written += write_mermaid(result, req.mermaid)
    if req.dot:
        from .dot import GraphvizMissing, render_svg, write_dot

        dots = write_dot(result, req.dot, req.dot_graph)
        written += dots
        if req.dot_graph:
            for v in result.variants:
                if v.graph is None:
                    warnings.append(f"{v.variant}: no state graph drawn: more than the limit of states "
                                    f"({v.stats.states:,} reached); raise it with --graph-max-states")
        if req.svg:
            try:
                written += render_svg(dots)
            except (GraphvizMissing, RuntimeError) as e:
                warnings.append(f"--svg: {e}; wrote the .dot files only")
    if req.report:
        from .markdown import write_report

        written += write_report(result, req.report, req.timing, req.trace_url)
    if req.html:
        from .html import write_html

        written += write_html(result, req.html)
    if req.sarif:
        from .sarif import write_sarif

        write_sarif(result, req.sarif)
        written.append(req.sarif)
    if req.junit:
        from .junit import write_junit

        write_junit(result, req.junit, req.timing)
        written.append(req.junit)
    return written, warnings
