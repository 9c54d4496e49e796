"""The doctor's report for people: rich tables on a terminal, plain text otherwise.

Layer by layer: what is installed, then each check with its outcome and, under every problem,
the exact fix. rich is imported only when colour output is wanted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING

from envcheck import __version__
from envcheck.contracts.facts import HostFacts, unlisted_gpus
from envcheck.contracts.findings import LAYERS, Finding, Severity
from envcheck.contracts.host_report import ImageChoice, Report, Verdict
from envcheck.contracts.remedy import Command
from envcheck.contracts.smoke_report import SmokeRun
from envcheck.contracts.smoke_result import CompareCpu, CpuSkipped, ExtraFailed
from envcheck.render.sanitize import visible
from envcheck.render.smoke_runs import SMOKE_COLUMNS, number, smoke_row, smoke_runs
from envcheck.render.wrap import COMMAND, wrap
from envcheck.verdict.fixes import paddle_install
from envcheck.verdict.next_step import next_steps
from envcheck.verdict.one_plan import RESOLVED_BY
from envcheck.verdict.proof import proof_headline, proof_words

if TYPE_CHECKING:
    from rich.console import Console

_MARK: dict[Severity, str] = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}
_STYLE: dict[Severity, str] = {"pass": "green", "warn": "yellow", "fail": "bold red"}
VERDICT_STYLE: dict[Verdict, str] = {
    "pass": "bold green",
    "warn": "bold yellow",
    "fail": "bold red",
    "cpu-fallback": "bold red",
    "wrong-results": "bold red",
}


def layer_facts(host: HostFacts, layer: str) -> str:
    """One line of what is installed, per layer; every value made visible (they are the host's)."""
    return visible(_layer_facts(host, layer))


def _layer_facts(host: HostFacts, layer: str) -> str:
    h = host
    if layer == "driver":
        d = h.driver
        if d.status == "unknown" and not (d.error or d.reason):
            return "not recorded"
        if d.status != "ok":
            return f"{d.status}: {d.error or d.reason or 'unknown'}"
        module = f", kernel module {d.kernel_module}" if d.kernel_module else ""
        version = d.version or "version not recorded"
        return f"{version} (CUDA {d.cuda or 'not recorded'}){module}"
    if layer == "gpu":
        if unlisted_gpus(h):
            return f"unknown: {unlisted_gpus(h)} NVIDIA GPU(s) on the PCI bus, the driver cannot list them"
        from envcheck.verdict.gpu_groups import gpu_groups, index_span

        return (
            ", ".join(  # identical GPUs once: `[0–7] 8x Tesla P40 (CC 6.1)`
                f"[{index_span(g.indices)}] "
                + (f"{len(g.indices)}x " if len(g.indices) > 1 else "")
                + f"{g.name} (CC {g.compute_capability})"
                for g in gpu_groups(h.gpus)
            )
            or "none"
        )
    if layer == "cuda":
        c, rt, dnn = h.cuda_driver, h.cuda_runtime, h.cudnn
        api = f"driver API {c.version}" if c.status == "ok" else f"driver API {c.status}"
        runtime = f"runtime {rt.version}" if rt.status == "ok" else f"runtime {rt.status}"
        cudnn = f"cuDNN {dnn.version}" if dnn.status == "ok" else f"cuDNN {dnn.status}"
        return f"{api}; {runtime}; {cudnn}"
    if layer == "paddle":
        p = h.paddle
        # which interpreter was judged and why ("the active venv"), as the facts record it
        why = f" ({p.python_reason})" if p.python_reason else ""
        if p.status != "ok":
            where = f" — {p.python}{why}" if p.python else ""
            return f"{p.status}: {p.reason or ''}".strip() + where
        build = f"CUDA {p.cuda}, cuDNN {p.cudnn}" if p.cuda else "CPU build"
        where = f" in {p.python}{why}" if p.python else ""
        return f"{p.package} {p.version} ({build}){where}"
    if layer == "env":
        return (
            ", ".join(f"{k}={v}" for k, v in h.env.items() if k != "LD_LIBRARY_PATH")
            or "no GPU variables set"
        )
    if layer == "engine":
        e = h.engine
        return (
            f"Docker {e.version}, runtimes: {', '.join(e.runtimes)}"
            if e.status == "ok"
            else f"{e.status}: {e.reason or ''}"
        )
    return ""


def grouped(report: Report) -> Iterator[tuple[str, str, list[Finding]]]:
    known = {name for name, _ in LAYERS}
    for name, title in LAYERS:
        items = [f for f in report.findings if f.layer == name]
        shown = {"driver", "gpu", "cuda", "paddle"} | ({"smoke"} if report.smoke else set())
        if items or name in shown:
            yield name, title, items
    others = [f for f in report.findings if f.layer not in known]
    if others:
        yield "other", "Other", others


# Layers whose facts the header line already states: when every check of one passed, the
# header is the whole of it (--explain lists each check). The image and the smoke keep theirs:
# the tag chosen and what trained are the report's news.
COMPACT_LAYERS = frozenset({"driver", "gpu", "cuda", "paddle", "env", "engine"})
OK_MARK = " — ok"
# On a terminal a passed check's words take at most this many lines (a healthy smoke's took 7 of
# 80 columns); --explain, --json and a log have them whole.
PASS_LINES = 2


def compact(name: str, items: list[Finding], explain: bool) -> bool:
    """Whether the layer is one line: nothing in it but passes, and no --explain."""
    return not explain and name in COMPACT_LAYERS and all(f.severity == "pass" for f in items)


def headline(report: Report) -> str:
    m = report.host.machine
    where = ", ".join(x for x in (m.hostname, m.os, m.arch) if x)
    return f"envcheck {__version__} doctor — {visible(where)}"


def render_plain(
    report: Report, stream: IO[str], explain: bool = False, width: int | None = None
) -> None:
    """`width`: wrap prose to it (never inside a command); None: one line per finding and fix."""
    w = stream.write
    w(headline(report) + "\n")
    was_compact = False
    for name, title, items in grouped(report):
        facts = layer_facts(report.host, name)
        one_line = compact(name, items, explain)
        gap = "" if one_line and was_compact else "\n"
        w(gap + title + (f": {facts}" if facts else "") + (OK_MARK if one_line else "") + "\n")
        was_compact = one_line
        for f in [] if one_line else items:
            for line, _ in finding_lines(f, width):
                w(line + "\n")
            for line in detail_lines(f, width) if explain else []:
                w(line + "\n")
        if name == "image":
            _plain_image(report, w, explain)
        elif name == "smoke":
            _plain_smoke(report, w, explain)
            for line in smoke_extra_lines(report):
                w(line + "\n")
            _plain_loaded(report, w, explain)
    w("\n")
    for line, _ in summary_lines(report, width):
        w(line + "\n")
    w(f"Proof: {proof_line(report)}\n")
    w(verdict_line(report) + "\n")
    for line, _ in next_lines(report, width):
        w(line + "\n")


Span = tuple[int, int, str]  # start, end, rich style


def finding_lines(
    f: Finding, width: int | None, brief: bool = False
) -> list[tuple[str, list[Span]]]:
    """A finding as lines, with where each style goes (plain ignores them): the mark, the id, the
    message, then under a problem its fix. Prose wraps to `width`; a command never (wrap.py).
    `brief` (a terminal without --explain): a pass takes at most PASS_LINES, cut with `…`."""
    mark, ident = _MARK[f.severity], visible(f.id)
    prefix = f"  {mark}  {ident:<28} "
    head: list[Span] = [(2, 6, _STYLE[f.severity]), (8, 8 + len(ident), "dim")]
    message = message_text(f.message)
    if width is None or len(prefix) + 24 <= width:
        body = wrap(message, width, prefix, " " * len(prefix))
    else:  # too narrow for a column: the message under the id
        body = [prefix.rstrip(), *wrap(message, width, " " * 8, " " * 8)]
    if brief and f.severity == "pass" and len(body) > PASS_LINES:
        body = [*body[: PASS_LINES - 1], body[PASS_LINES - 1].rstrip() + " …"]
    lines = [(line, head if i == 0 else []) for i, line in enumerate(body)]
    if f.fix and f.severity != "pass":
        fix = wrap(message_text(f.fix), width, "        fix: ", " " * 13)
        lines += [(line, _fix_spans(line, first=i == 0)) for i, line in enumerate(fix)]
    return lines


def detail_lines(f: Finding, width: int | None) -> list[str]:
    """--explain: the whole error behind a one-line message (a registry's: its words in full)."""
    detail = f.observed.get("detail")
    return wrap(message_text(str(detail)), width, "        detail: ", " " * 16) if detail else []


def summary_lines(report: Report, width: int | None) -> list[tuple[str, list[Span]]]:
    """Above the verdict, as pytest's short summary: each failing, then warning,
    check with who acts on it (`envcheck fix`, a person), the checks another one's fix resolves
    on one line after the failures. The commands themselves come once, under the verdict."""
    problems = [f for f in report.findings if f.severity != "pass"]
    resolved: dict[str, list[Finding]] = {}
    for f in problems:
        if f.remedy is not None and f.remedy.resolved_by is not None:
            resolved.setdefault(f.remedy.resolved_by, []).append(f)
    own = [f for f in problems if f.remedy is None or f.remedy.resolved_by is None]
    rows: list[tuple[Severity, str, str]] = [
        (f.severity, visible(f.id), who_acts(f)) for f in own if f.severity == "fail"
    ]
    for root, found in resolved.items():
        worst: Severity = "fail" if any(f.severity == "fail" for f in found) else "warn"
        rows.append((worst, ", ".join(visible(f.id) for f in found), RESOLVED_BY + visible(root)))
    rows += [(f.severity, visible(f.id), who_acts(f)) for f in own if f.severity == "warn"]
    lines: list[tuple[str, list[Span]]] = []
    for severity, ident, action in rows:
        mark = _MARK[severity]
        text = message_text(f"{ident}: {action}")
        for i, line in enumerate(wrap(text, width, f"  {mark}  ", " " * 8)):
            spans = [(2, 6, _STYLE[severity]), (8, 8 + len(ident), "dim")] if i == 0 else []
            lines.append((line, spans))
    return lines


_RUNNER_WORDS = {"root": "as root", "user": "in your shell", "pip": "envcheck fix"}


def who_acts(f: Finding) -> str:
    """Who does what a problem's remedy asks: `envcheck fix` (its pip commands), a person (as
    root, in their shell, by hand), or nobody yet."""
    remedy = f.remedy
    if remedy is None or not remedy.steps:
        return "no fix known: read its message above"
    first = [s for s in remedy.steps if not s.alternative]
    if first and all(isinstance(s, Command) and s.runner == "pip" for s in first):
        return "envcheck fix does it (below)"
    runners = dict.fromkeys(
        _RUNNER_WORDS[s.runner] if isinstance(s, Command) else "by hand" for s in first
    )
    return ", ".join(runners) + " (below)"


def verdict_line(report: Report) -> str:
    """`Verdict: PASS (exit 0) — trained on GPU 0`: a pass or a warning says what it rests on."""
    line = f"Verdict: {report.verdict.upper()} (exit {int(report.exit_status)})"
    if report.verdict in ("pass", "warn"):
        line += f" — {proof_headline(report.proof, report.findings, bool(report.host.gpus))}"
    return line


def proof_line(report: Report) -> str:
    return proof_words(report.proof, report.verdict, report.findings, len(report.host.gpus))


def next_lines(report: Report, width: int | None) -> list[tuple[str, list[Span]]]:
    """What to type, under the verdict: each command on a line of its own, whole, without
    backticks; a person's instruction as a shell comment (a block pasted whole runs the commands
    and nothing of the words), wrapped to `width`; an alternative under "or instead"."""
    todo = next_steps(report)
    if not todo.steps:
        return []
    head = (
        "Next: envcheck fix does all of it (without --yes it shows its plan):"
        if todo.complete
        else "Next, in order:"
    )
    lines: list[tuple[str, list[Span]]] = [(head, [(0, 4, "bold")])]
    previous_alternative = False
    for step in todo.steps:
        if step.alternative and not previous_alternative:
            lines.append(("  # or instead:", [(2, 15, "dim")]))
        previous_alternative = step.alternative
        if isinstance(step, Command):
            line = "  " + visible(step.shell())
            lines.append((line, [(2, len(line), "cyan")]))
        else:
            for line in wrap(message_text(step.text), width, "  # ", "  # "):
                lines.append((line, [(2, len(line), "dim")]))
    return lines


def _fix_spans(line: str, first: bool) -> list[Span]:
    spans: list[Span] = [(8, 12, "bold")] if first else []
    return spans + [(m.start(), m.end(), "cyan") for m in COMMAND.finditer(line)]


def smoke_extra_lines(report: Report) -> list[str]:
    """What --amp and --compare-cpu measured per run, or why they were skipped."""
    lines = []
    for run in smoke_runs(report.smoke):
        device = visible(run.device_used or run.device_requested or "?")
        amp = run.amp
        if amp is not None and amp.enabled:
            lines.append(
                f"  amp on {device}: trained under auto_cast ({visible(amp.dtype or 'float16')}), "
                f"loss {number(run.loss_start)} → {number(run.loss_end)}"
            )
        if run.compare_cpu is not None:
            lines.append(f"  compare-cpu on {device}: {_compare_cpu_text(run, run.compare_cpu)}")
    return lines


def _compare_cpu_text(run: SmokeRun, cpu: CompareCpu) -> str:
    if isinstance(cpu, CpuSkipped) and cpu.skipped:
        return f"skipped: {visible(cpu.skipped)}"
    if isinstance(cpu, ExtraFailed):
        return f"failed: {visible(cpu.error.type or 'error')}: {visible(cpu.error.message)}"
    times = f"{cpu.speedup:.1f}× the CPU" if cpu.speedup is not None else "speedup unknown"
    return f"{number(run.steps_per_s)} steps/s here, {number(cpu.steps_per_s)} on the CPU: {times}"


def _plain_image(report: Report, write: Callable[[str], object], explain: bool) -> None:
    img = report.image
    if img is None:
        return
    install = image_pip_line(report)
    if install:
        write(f"  pip equivalent: {install}\n")
    for line in [*explain_lines(img), *matrix_lines(report)] if explain else []:
        write(f"  {line}\n")


def pip_line(report: Report) -> str | None:
    """The chosen build's install into the judged interpreter, marked as every command is."""
    install = paddle_install(report.host, report.image)
    return f"`{visible(install.shell())}`" if install else None


def image_pip_line(report: Report) -> str | None:
    """The image section's pip line, unless a problem's fix above gives that install already
    (the same long command printed twice reads as two things to do)."""
    install = paddle_install(report.host, report.image)
    if install is None or _installed_already(report, install.requirements[0]):
        return None
    argv = install.argvs()[-1]
    given = any(
        c.argv == argv for f in report.findings if f.remedy is not None for c in f.remedy.commands
    )
    return None if given else pip_line(report)


def _installed_already(report: Report, requirement: str) -> bool:
    """The judged interpreter holds that very build already (name, version and CUDA variant):
    its pip equivalent would change nothing."""
    paddle, image = report.host.paddle, report.image
    name, _, version = requirement.partition("==")
    return (
        paddle.status == "ok"
        and paddle.package == name
        and paddle.version == version
        and image is not None
        and (paddle.cuda or None) == (image.cuda if name == "paddlepaddle-gpu" else None)
    )


def matrix_lines(report: Report) -> list[str]:
    """--explain: how current the matrix behind the verdict is (matrix/README.md): what it has not
    read cannot be in the verdict."""
    newest = report.meta.get("matrix_newest_source")
    if not newest:
        return []
    when = visible(str(newest))
    line = (
        f"matrix: the newest source it has read is from {when}; releases, builds and images "
        "published later are unknown to this verdict"
    )
    return [line]


def explain_lines(img: ImageChoice) -> list[str]:
    """--explain: why this tag (the same text as `pull-image --dry-run`), then every rejected one."""
    from envcheck.render.choice import rejected_lines, why_lines

    return [*why_lines(img), *rejected_lines(img)]


def table_runs(report: Report, explain: bool) -> list[SmokeRun]:
    """The smoke runs worth a table: several runs, a problem in one, or --explain; one healthy
    run is said whole by its finding's line (the table would repeat it)."""
    runs = smoke_runs(report.smoke)
    worth = (
        explain
        or len(runs) > 1
        or any(f.layer == "smoke" and f.severity != "pass" for f in report.findings)
    )
    return runs if worth else []


def _plain_smoke(report: Report, write: Callable[[str], object], explain: bool) -> None:
    runs = table_runs(report, explain)
    if not runs:
        return
    write("\n  " + " | ".join(SMOKE_COLUMNS) + "\n")
    for run in runs:
        write("  " + " | ".join(smoke_row(run)) + "\n")


def loaded_lines(report: Report, explain: bool) -> list[str]:
    """What the smoke process mapped: library, version, from where; paths with --explain."""
    libs = report.smoke.loaded_libraries if report.smoke is not None else None
    if libs is None:
        return []
    if not libs:
        return ["  loaded: no NVIDIA library (the smoke ran without CUDA)"]
    if not (explain or any(f.layer == "smoke" and f.severity != "pass" for f in report.findings)):
        said = (f"{lib.name} {lib.version or '?'} ({lib.source})" for lib in libs)
        return ["  loaded: " + visible(", ".join(said))]  # healthy: one line, not a table
    lines = ["  loaded: library | version | from" + (" | path" if explain else "")]
    for lib in libs:
        cells = [lib.name, lib.version or "?", lib.source, *([lib.path] if explain else [])]
        lines.append("    " + " | ".join(visible(c) for c in cells))
    return lines


def _plain_loaded(report: Report, write: Callable[[str], object], explain: bool) -> None:
    for line in loaded_lines(report, explain):
        write(line + "\n")


def render_rich(
    report: Report,
    stream: IO[str],
    explain: bool = False,
    width: int | None = None,
    *,
    color: bool = True,
) -> None:
    """`width`: the columns to lay out for (None: the terminal's). `color=False` (NO_COLOR,
    --no-color): the same layout without colour."""
    from rich.console import Console
    from rich.text import Text

    console = Console(  # without a colour system rich writes the same lines, no escapes
        file=stream,
        highlight=False,
        force_terminal=True,
        width=width,
        color_system="auto" if color else None,
    )
    console.print(Text(headline(report), style="bold"))
    was_compact = False
    for name, title, items in grouped(report):
        facts = layer_facts(report.host, name)
        one_line = compact(name, items, explain)
        if not (one_line and was_compact):
            console.print()
        was_compact = one_line
        header = Text(title, style="bold").append(f": {facts}" if facts else "", style="dim")
        console.print(header.append(OK_MARK if one_line else "", style="green"))
        for f in [] if one_line else items:
            for line, spans in finding_lines(f, console.width, brief=not explain):
                text = Text(line)
                for start, end, style in spans:
                    text.stylize(style, start, end)
                console.print(text, soft_wrap=True)  # wrapped already, commands whole
            for line in detail_lines(f, console.width) if explain else []:
                console.print(escape(line), soft_wrap=True, style="dim")
        if name == "image":
            _rich_image(report, console, explain)
        elif name == "smoke":
            _rich_smoke(report, console, explain)
            for line in [*smoke_extra_lines(report), *loaded_lines(report, explain)]:
                console.print(escape(line))
    console.print()
    for line, spans in summary_lines(report, console.width):
        _print_spans(console, line, spans)
    console.print(Text(f"Proof: {proof_line(report)}"))
    console.print(Text(verdict_line(report), style=VERDICT_STYLE[report.verdict]))
    for line, spans in next_lines(report, console.width):
        _print_spans(console, line, spans)


def _print_spans(console: Console, line: str, spans: list[Span]) -> None:
    from rich.text import Text

    text = Text(line)
    for start, end, style in spans:
        text.stylize(style, start, end)
    console.print(text, soft_wrap=True)  # wrapped already, commands whole


def message_text(text: str) -> str:
    """A finding's message or fix: lines we composed (a log tail) kept, nothing else obeyed."""
    return visible(text, keep_lines=True)


def escape(text: str) -> str:
    from envcheck.render.sanitize import rich_safe

    return rich_safe(text)


def _rich_image(report: Report, console: Console, explain: bool) -> None:
    img = report.image
    install = image_pip_line(report)
    if install:  # a command: on one line whatever the width
        console.print(f"  pip equivalent: [cyan]{escape(install)}[/cyan]", soft_wrap=True)
    for line in [*explain_lines(img), *matrix_lines(report)] if img and explain else []:
        console.print(
            f"  {escape(line)}",
            style="dim" if line.startswith("rejected") else None,
            soft_wrap=True,
        )  # tags are copied from here: none cut


def _rich_smoke(report: Report, console: Console, explain: bool) -> None:
    from rich.table import Table

    runs = table_runs(report, explain)
    if not runs:
        return
    table = Table(title="Smoke runs", title_justify="left")
    for col in SMOKE_COLUMNS:
        table.add_column(col)
    for run in runs:
        table.add_row(*smoke_row(run))
    console.print(table)
