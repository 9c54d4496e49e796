"""The fleet table on a terminal: host × layer × verdict.

Rich (colours, wrapped columns) when writing to a TTY; aligned plain text otherwise, so logs
and `grep fail` work. Rich is imported only when used: it costs more than the CLI's start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from envcheck.render.sanitize import visible

if TYPE_CHECKING:
    from envcheck.fleet import FleetSummary

NOT_CHECKED = "-"
STYLE = {"pass": "green", "warn": "yellow", "fail": "red", "cpu-fallback": "bold red", "wrong-results": "bold red"}
RICH_MARK = {"pass": "✓", "warn": "!", "fail": "✗"}
PROBLEM_MIN_WIDTH = 12


def print_fleet_table(summary: FleetSummary, stream: TextIO) -> None:
    if stream.isatty():
        _print_rich(summary, stream)
    else:
        stream.write(fleet_table_text(summary))


def fleet_table_text(summary: FleetSummary) -> str:
    rows = [_header(summary)] + [_cells(summary, i) for i in range(len(summary.hosts))]
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1]
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n\n" + "\n".join(_footer(summary)) + "\n"


def _header(summary: FleetSummary) -> list[str]:
    return ["HOST", "VERDICT", "EXIT", *summary.layers, "FIRST PROBLEM"]


def _cells(summary: FleetSummary, i: int) -> list[str]:
    host = summary.hosts[i]
    layers = host.layer_severities()
    first = host.first_problem()
    return [
        visible(host.hostname or f"? ({host.source})"),
        host.verdict,
        str(host.exit_code),
        *(layers.get(layer, NOT_CHECKED) for layer in summary.layers),
        visible(f"{first.id}: {first.message}") if first else "",
    ]


def _footer(summary: FleetSummary) -> list[str]:
    counts = ", ".join(f"{n} {verdict}" for verdict, n in summary.counts.items())
    hosts = len(summary.hosts)
    lines = [f"{hosts} host{'' if hosts == 1 else 's'}: {counts}; exit {summary.exit_code}"]
    lines += [
        visible(f"duplicate {d.hostname}: kept {d.kept} (newest), ignored {', '.join(d.ignored)}")
        for d in summary.duplicates
    ]
    return lines


def _print_rich(summary: FleetSummary, stream: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Every column but the problem id is short and must not wrap; the messages go under the
    # table, where they can wrap to the terminal's width without tearing the grid apart.
    table = Table(title="envcheck fleet", header_style="bold")
    rows = [_cells(summary, i) for i in range(len(summary.hosts))]
    widths = [max([len(name)] + [len(row[c]) for row in rows]) for c, name in enumerate(_header(summary)[:-1])]
    for name, width in zip(_header(summary), widths):
        table.add_column(name, no_wrap=True, min_width=width)
    table.add_column("FIRST PROBLEM", min_width=PROBLEM_MIN_WIDTH, overflow="fold")
    notes: list[Text] = []
    for host, cells in zip(summary.hosts, rows):
        first = host.first_problem()
        marks = [Text(RICH_MARK.get(c, c), style=STYLE.get(c, "dim")) for c in cells[3:-1]]
        verdict = Text(host.verdict, style=STYLE[host.verdict])
        table.add_row(Text(cells[0]), verdict, cells[2], *marks, Text(visible(first.id) if first else ""))
        if first:
            notes.append(Text.assemble((f"{cells[0]}: ", "bold"), visible(first.message)))
    console = Console(file=stream)
    if sum(w + 3 for w in widths) + PROBLEM_MIN_WIDTH + 4 > console.width:  # + borders, padding
        stream.write(fleet_table_text(summary))  # a cropped grid hides columns; text just wraps
        return
    console.print(table)
    for note in notes:
        console.print(note)
    for line in _footer(summary):
        console.print(line, highlight=False, markup=False)
