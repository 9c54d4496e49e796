"""The fleet dashboard on a terminal or in a log: one row per host, then the problems grouped.

    HOST        GPUS                DRIVER      CUDA  PADDLE        VERDICT  EXIT  FIRST FAILING CHECK
    gpu001      2x A100-SXM4-80GB   535.104.05  12.2  3.0.0 cu12.6  pass     0
    gpu002      2x A100-SXM4-80GB   error       -     3.0.0 cu12.6  fail     1     driver.version-mismatch

    12 hosts: driver.version-mismatch → reboot the machine (or reload the nvidia kernel modules) …

One layout for both: aligned plain text (logs, `grep`), coloured through rich on a terminal. A
cell is never broken: when a row does not fit the terminal, the host name takes a line of its
own and the other cells follow, indented, on the next (a 60-character name at 120 columns); a fix
is printed whole after its arrow, even if the terminal has to wrap it. In a log (not a terminal)
every row is one line. Rich is imported only on a terminal: it costs more than the CLI's start-up.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

from envcheck.render.sanitize import visible

if TYPE_CHECKING:
    from envcheck.fleet import FleetSummary, ProblemGroup
    from envcheck.saved_report import HostReport

COLUMNS = ("HOST", "GPUS", "DRIVER", "CUDA", "PADDLE", "VERDICT", "EXIT", "FIRST FAILING CHECK")
VERDICT_COLUMN = COLUMNS.index("VERDICT")
CHECK_COLUMN = COLUMNS.index("FIRST FAILING CHECK")
GAP = "  "
INDENT = "  "  # the cells under a host name that had to take its own line
UNKNOWN = "-"
STYLE = {
    "pass": "green",
    "warn": "yellow",
    "fail": "red",
    "cpu-fallback": "bold red",
    "wrong-results": "bold red",
}
HOST_LIST_LINES = 2  # on a terminal, a group's host list is cut after this many lines' worth
HOST_LIST_CHARS = 400  # in a log

Segment = tuple[str, str]  # text, rich style ("" = none)
Line = list[Segment]


def print_fleet_table(summary: FleetSummary, stream: TextIO) -> None:
    if not stream.isatty():
        stream.write(fleet_table_text(summary))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, highlight=False)
    for line in fleet_lines(summary, console.width):
        # soft_wrap: rich inserts no line break; a fix longer than the terminal stays one line
        console.print(Text.assemble(*line), soft_wrap=True)


def fleet_table_text(summary: FleetSummary, width: int | None = None) -> str:
    """The dashboard as plain text; `width=None` (a log): every row on one line."""
    return "".join("".join(text for text, _ in line) + "\n" for line in fleet_lines(summary, width))


def fleet_lines(summary: FleetSummary, width: int | None) -> list[Line]:
    rows = [host_cells(host) for host in summary.hosts]
    lines = _grid([list(COLUMNS), *rows], width, [h.verdict for h in summary.hosts])
    groups = summary.problem_groups()
    if groups:
        lines.append([])
        for group in groups:
            lines += _group_lines(group, width)
    lines.append([])
    lines += [[(text, "")] for text in _footer(summary)]
    return lines


def host_cells(host: HostReport) -> list[str]:
    """What a fleet owner compares across hosts; every value is the host's, so it is sanitised."""
    facts = host.report.host
    first = host.first_problem()
    cells = (
        [host.label, UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN]
        if not host.reported
        else [
            host.label,
            gpus_cell(host),
            facts.driver.version or _status(facts.driver.status),
            facts.driver.cuda or facts.cuda_driver.version or UNKNOWN,
            paddle_cell(host),
        ]
    )
    cells += [host.verdict, str(host.exit_code), first.id if first else ""]
    return [visible(cell) for cell in cells]


def gpus_cell(host: HostReport) -> str:
    """`2x A100-SXM4-80GB`; mixed models are each counted: `1x A100-SXM4-80GB + 1x T4`."""
    names = Counter(
        (g.name or "unknown GPU").removeprefix("NVIDIA ").strip() for g in host.report.host.gpus
    )
    return " + ".join(f"{n}x {name}" for name, n in names.items()) or UNKNOWN


def paddle_cell(host: HostReport) -> str:
    """`3.0.0 cu12.6` or `3.3.1 cpu` in the host's Python; else the image's, marked as such."""
    paddle, image = host.report.host.paddle, host.report.image
    if paddle.version:
        return f"{paddle.version} {f'cu{paddle.cuda}' if paddle.cuda else 'cpu'}"
    if image and image.paddle:
        return f"{image.paddle} {f'cu{image.cuda}' if image.cuda else 'cpu'} (image)"
    return _status(paddle.status)


def _status(status: str) -> str:
    return UNKNOWN if status == "unknown" else status


def _grid(rows: list[list[str]], width: int | None, verdicts: list[str]) -> list[Line]:
    """Aligned columns. When a row is wider than `width`, the host name gets its own line and the
    other cells wrap, indented, between cells (never inside one), the same way on every row."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(COLUMNS))]
    bands = [list(range(len(COLUMNS)))]
    if width is not None and _band_width(widths, bands[0]) > width:
        bands = [[0]] + _pack(widths, list(range(1, len(COLUMNS))), width - len(INDENT))
    lines: list[Line] = []
    for r, row in enumerate(rows):
        styles = _styles(verdicts[r - 1] if r else None)
        for b, band in enumerate(bands):
            if b and r and not any(row[c] for c in band):
                continue  # nothing to show there (a passing host's empty FIRST FAILING CHECK)
            line: Line = [(INDENT, "")] if b else []
            for i, c in enumerate(band):
                text = row[c] if i == len(band) - 1 else row[c].ljust(widths[c]) + GAP
                line.append((text, styles.get(c, "")))
            lines.append(_rstrip(line))
    return lines


def _band_width(widths: list[int], band: list[int]) -> int:
    return sum(widths[c] for c in band) + len(GAP) * (len(band) - 1)


def _pack(widths: list[int], columns: list[int], width: int) -> list[list[int]]:
    bands: list[list[int]] = [[]]
    for c in columns:
        if bands[-1] and _band_width(widths, [*bands[-1], c]) > width:
            bands.append([])
        bands[-1].append(c)
    return bands


def _styles(verdict: str | None) -> dict[int, str]:
    if verdict is None:  # the header
        return dict.fromkeys(range(len(COLUMNS)), "bold")
    check = "red" if verdict in ("fail", "cpu-fallback", "wrong-results") else "yellow"
    return {VERDICT_COLUMN: STYLE.get(verdict, ""), CHECK_COLUMN: check}


def _rstrip(line: Line) -> Line:
    """No trailing blanks: a row whose last cells are empty ends at its last text."""
    while line and not line[-1][0].strip():
        line.pop()
    if line:
        line[-1] = (line[-1][0].rstrip(), line[-1][1])
    return line


def _group_lines(group: ProblemGroup, width: int | None) -> list[Line]:
    """`12 hosts: driver.version-mismatch → reboot …`, then which hosts, then one host's words."""
    n = len(group.hosts)
    head: Line = [
        (f"{n} host{'' if n == 1 else 's'}: ", "bold"),
        (visible(group.id), STYLE[group.severity]),
    ]
    if group.fix:
        head.append((f" → {visible(group.fix)}", ""))
    example = visible(f"{'' if n == 1 else 'e.g. '}{group.hosts[0]}: {group.message}")
    words: list[Line] = [[(line, "dim")] for line in _prose(example, width)]
    if n == 1:
        return [head, *words]
    budget = HOST_LIST_CHARS if width is None else HOST_LIST_LINES * width - len(INDENT)
    hosts = _prose(host_list(group.hosts, budget), width, INDENT)
    return [head, *([(line, "")] for line in hosts), *words]


def _prose(text: str, width: int | None, more: str = INDENT * 2) -> list[str]:
    """Indented text wrapped between words (never inside a word, a host name or a check id: no
    break on hyphens) to fit `width`, next lines indented by `more`; a longer word stays whole."""
    if width is None:
        return [INDENT + text]
    import textwrap

    return textwrap.wrap(
        text,
        width,
        initial_indent=INDENT,
        subsequent_indent=more,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [INDENT]


def host_list(labels: tuple[str, ...], budget: int) -> str:
    """Slurm's notation (`gpu[001-012], login1`: what `--expect-hosts` reads back), cut between
    names, never inside one, when longer than `budget` characters."""
    from envcheck.hostlist import compressed_host_list

    shown: list[str] = []
    named = 0
    for part, count in compressed_host_list(labels):
        more = len(labels) - named - count
        tail = f" and {more} more (`--json` lists them all)" if more else ""
        if shown and len(", ".join([*shown, visible(part)])) + len(tail) > budget:
            break
        shown.append(visible(part))
        named += count
    left = len(labels) - named
    return ", ".join(shown) + (f" and {left} more (`--json` lists them all)" if left else "")


def _footer(summary: FleetSummary) -> list[str]:
    counts = ", ".join(f"{n} {verdict}" for verdict, n in summary.counts.items())
    hosts = len(summary.hosts)
    lines = [f"{hosts} host{'' if hosts == 1 else 's'}: {counts}; exit {summary.exit_code}"]
    lines += [
        visible(f"duplicate {d.hostname}: kept {d.kept} (newest), ignored {', '.join(d.ignored)}")
        for d in summary.duplicates
    ]
    return lines
