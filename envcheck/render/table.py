"""The fleet dashboard on a terminal or in a log: the root causes, then one line per host.

    2 hosts: driver.version-mismatch → reboot the machine (or reload the nvidia kernel modules) …
      gpu[002-003]
      e.g. gpu002: NVML: Driver/library version mismatch (user space 550.54.14, kernel …)

    HOST    GPUS               DRIVER       CUDA  PADDLE        VERDICT  EXIT  PROBLEM
    gpu001  2x A100-SXM4-80GB  535.104.05   12.2  3.0.0 cu12.6  pass     0
    gpu002  2x A100-SXM4-80GB  535.104.05*  -     3.0.0 cu12.6  fail     1     driver.version-mismatch

    3 hosts: 1 pass, 2 fail; exit 1
    * the loaded kernel module's version: the user-space driver differs (reboot)

A cause counts every host that has it, whatever else the host has; its different fixes are listed
under it with their hosts. On a terminal a cause is one line (`8 hosts: id on gpu[001-004,007] +4
more → fix…`) and the causes take what the table leaves of 40 lines.
One line per host at any terminal width, as `sinfo` does: when the columns do not fit,
the widest of the host name, GPU, Paddle and check cells are shortened with `…` (a host name
in its middle, which keeps its number), never broken over lines; the groups above name every
check id and host whole. In a log (not a terminal) nothing is shortened. A fix is printed whole
after its arrow, even if the terminal has to wrap it. Rich is imported only on a terminal: it
costs more than the CLI's start-up.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, TextIO

from envcheck.render.sanitize import visible

if TYPE_CHECKING:
    from envcheck.contracts.host_report import Verdict
    from envcheck.contracts.saved_report import HostReport
    from envcheck.verdict.fleet import Cause, FleetSummary

COLUMNS = ("HOST", "GPUS", "DRIVER", "CUDA", "PADDLE", "VERDICT", "EXIT", "PROBLEM")
HOST_COLUMN = COLUMNS.index("HOST")
CUDA_COLUMN = COLUMNS.index("CUDA")
VERDICT_COLUMN = COLUMNS.index("VERDICT")
CHECK_COLUMN = COLUMNS.index("PROBLEM")  # the host's first failing (else warning) check
# The cells that may be shortened to fit a terminal, the fewest characters each keeps, and how
# many more than the others it keeps while shortened (a check id says the most, then the host).
SHORTEST = {HOST_COLUMN: 8, COLUMNS.index("GPUS"): 8, COLUMNS.index("PADDLE"): 13, CHECK_COLUMN: 9}
PRECEDENCE = {HOST_COLUMN: 6, CHECK_COLUMN: 6}
SHORTENABLE = tuple(SHORTEST)
ELLIPSIS = "…"
KERNEL_MODULE_MARK = "*"
IMAGE_MARK = "†"  # the Paddle of the image the doctor chose: the host's Python has none
BRANDS = ("NVIDIA ", "Tesla ", "GeForce ", "Quadro ")  # the model after them tells GPUs apart
GAP = "  "
INDENT = "  "  # a group's host list and its example, under the group's line
UNKNOWN = "-"
STYLE: dict[Verdict, str] = {
    "pass": "green",
    "warn": "yellow",
    "fail": "red",
    "cpu-fallback": "bold red",
    "wrong-results": "bold red",
}
HOST_LIST_LINES = 2  # on a terminal, a group's host list is cut after this many lines' worth
HOST_LIST_CHARS = 400  # in a log
HOST_BUDGET_FLOOR = 20  # a cause's hosts on a terminal: at least this much, else half the room
# On a terminal the causes take what the table and totals leave of 40 lines, at least 4 (the
# rest: `--verbose`, and a log, list every cause).
SCREEN_LINES = 40
MIN_CAUSE_LINES = 4
MORE_HOSTS = " and {} more (`--json` lists them all)"

Segment = tuple[str, str]  # text, rich style ("" = none)
Line = list[Segment]


def print_fleet_table(summary: FleetSummary, stream: TextIO, *, verbose: bool = False) -> None:
    if not stream.isatty():
        stream.write(fleet_table_text(summary, verbose=verbose))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, highlight=False)
    for line in fleet_lines(summary, console.width, verbose=verbose):
        # soft_wrap: rich inserts no line break; a fix longer than the terminal stays one line
        console.print(Text.assemble(*line), soft_wrap=True)


def fleet_table_text(
    summary: FleetSummary, width: int | None = None, *, verbose: bool = False
) -> str:
    """The dashboard as plain text; `width=None` (a log): every row on one line."""
    lines = fleet_lines(summary, width, verbose=verbose)
    return "".join("".join(text for text, _ in line) + "\n" for line in lines)


def fleet_lines(summary: FleetSummary, width: int | None, *, verbose: bool = False) -> list[Line]:
    """Each root cause with how many hosts have it, which, and what to do; then one line per
    host, then the totals. On a terminal a cause takes one line, cut to its width (26 hosts fit
    40 lines of 80 columns); in a log, whole, with its fixes below it when they differ per host
    and one host's words. `verbose`: the follow-on problems too, so."""
    rows = [host_cells(host) for host in summary.hosts]
    table = _grid([list(COLUMNS), *rows], width, [h.verdict for h in summary.hosts])
    footer: list[Line] = [[(text, "")] for text in _footer(summary, width)]
    causes = summary.causes(every=verbose)
    lines: list[Line] = []
    if width is not None and not verbose:
        room = max(MIN_CAUSE_LINES, SCREEN_LINES - len(table) - len(footer) - 2)
        shown = causes if len(causes) <= room else causes[: room - 1]
        lines += [_cause_line(cause, width) for cause in shown]
        if len(shown) < len(causes):
            left = len(causes) - len(shown)
            lines.append([(f"and {left} more cause{'' if left == 1 else 's'} (`--verbose`)", "")])
    else:
        lines += [line for cause in causes for line in _cause_lines(cause, width)]
    return [*lines, *([[]] if lines else []), *table, [], *footer]


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
            driver_cell(host),
            facts.driver.cuda or facts.cuda_driver.version or UNKNOWN,
            paddle_cell(host),
        ]
    )
    cells += [host.verdict, str(host.exit_code), first.id if first else ""]
    return [visible(cell) for cell in cells]


def gpus_cell(host: HostReport) -> str:
    """`2x A100-SXM4-80GB`; mixed models are each counted: `1x A100-SXM4-80GB + 1x T4`; one GPU
    is its model alone (`RTX 5090`). The brand goes: `Tesla V100`, `Tesla T4` and `Tesla P40`
    once all read `1x Tesl…` in a narrow column, RTX 4090 and 5090 `1x RTX …`."""
    gpus = host.report.host.gpus
    names = Counter(_model(g.name or "unknown GPU") for g in gpus)
    if len(gpus) == 1:
        return next(iter(names))
    return " + ".join(f"{n}x {name}" for name, n in names.items()) or UNKNOWN


def _model(name: str) -> str:
    for brand in BRANDS:
        name = name.strip().removeprefix(brand)
    return name.strip()


def driver_cell(host: HostReport) -> str:
    """The driver the GPUs run: the loaded kernel module's version, marked `*` when the
    user-space driver differs (upgraded without a reboot: NVML then fails with a version
    mismatch, and the user-space version alone would name a driver that is not running)."""
    driver = host.report.host.driver
    module, user = driver.kernel_module, driver.version
    if module and user and module != user:
        return module + KERNEL_MODULE_MARK
    return module or user or _status(driver.status)


def paddle_cell(host: HostReport) -> str:
    """`3.0.0 cu12.6` or `3.3.1 cpu` in the host's Python; else the image's, marked `†` at the
    end, where a cut to fit the column keeps it (`(image)` was the first thing cut)."""
    paddle, image = host.report.host.paddle, host.report.image
    if paddle.version:
        return f"{paddle.version} {f'cu{paddle.cuda}' if paddle.cuda else 'cpu'}"
    if image and image.paddle:
        return f"{image.paddle} {f'cu{image.cuda}' if image.cuda else 'cpu'}{IMAGE_MARK}"
    return _status(paddle.status)


def _status(status: str) -> str:
    return UNKNOWN if status == "unknown" else status


def _grid(rows: list[list[str]], width: int | None, verdicts: list[Verdict]) -> list[Line]:
    """Aligned columns, one line per row; cells shortened to fit `width` (None: never)."""
    widths, gap = fit_widths([max(len(row[c]) for row in rows) for c in range(len(COLUMNS))], width)
    same = {c: _shared_ends([row[c] for row in rows[1:]]) for c in SHORTENABLE}
    lines: list[Line] = []
    for r, row in enumerate(rows):
        styles = _styles(verdicts[r - 1] if r else None)
        shown = [c for c in range(len(row)) if widths[c]]
        line: Line = []
        for c in shown:
            # what tells a cell from the others in its column stays (`gpu-…-017`, `1x …3090`);
            # else a DNS name keeps its first label (`gpu004.rack-07.…`), another both ends
            middle = c == HOST_COLUMN and r > 0 and "." not in row[c]
            kept = _distinct(row[c], widths[c], *same[c]) if r > 0 and c in same else None
            text = kept or shorten(row[c], widths[c], middle=middle)
            if c != shown[-1]:
                text = text.ljust(widths[c]) + gap
            line.append((text, styles.get(c, "")))
        lines.append(_rstrip(line))
    return lines


def fit_widths(widths: list[int], width: int | None) -> tuple[list[int], str]:
    """The column widths (0: left out) and the gap between columns for lines of at most `width`
    columns. Too wide: first only long host names are shortened; if that is not enough, the CUDA
    column goes (the driver's version implies it), one space separates columns (as in `sinfo`)
    and every shortenable cell may be cut to its floor; the last column takes what is left (a
    line is never wider than the terminal)."""
    if width is None:
        return list(widths), GAP
    fitted = _shrunk(list(widths), width, GAP, (HOST_COLUMN,))
    if sum(fitted) + len(GAP) * (len(fitted) - 1) <= width:
        return fitted, GAP
    narrow = list(widths)
    narrow[CUDA_COLUMN] = 0
    return _shrunk(narrow, width, " ", SHORTENABLE), " "


def _shrunk(widths: list[int], width: int, gap: str, shortenable: tuple[int, ...]) -> list[int]:
    """The widest of `shortenable` (less its PRECEDENCE) loses a character at a time until the
    line fits or each is at its floor; under `SHORTENABLE`, the last column then loses the rest."""

    def total() -> int:
        shown = [w for w in widths if w]
        return sum(shown) + len(gap) * (len(shown) - 1)

    while total() > width:
        room = [c for c in shortenable if widths[c] > SHORTEST[c]]
        if not room:
            break
        widths[max(room, key=lambda c: widths[c] - PRECEDENCE.get(c, 0))] -= 1
    if shortenable == SHORTENABLE:
        widths[-1] = max(1, widths[-1] - max(0, total() - width))
    return widths


def _shared_ends(cells: list[str]) -> tuple[int, int]:
    """How many leading and trailing characters every distinct cell of a column shares (0, 0
    when they are all the same, or there is only one)."""
    distinct = sorted(set(cells))
    if len(distinct) < 2:
        return 0, 0
    head = _word_start(distinct, len(os.path.commonprefix(distinct)))
    tails = [c[head:][::-1] for c in distinct]
    tail = _word_start(tails, len(os.path.commonprefix(tails)))
    return head, tail


def _word_start(cells: list[str], n: int) -> int:
    """`n` moved back to where a word starts in every cell, so that a number or a name that
    differs is kept whole (`gpu-node-` of `gpu-node-017`, not `gpu-node-0`)."""
    while n and any(n < len(c) and c[n - 1].isalnum() and c[n].isalnum() for c in cells):
        n -= 1
    return n


def _distinct(text: str, width: int, head: int, tail: int) -> str | None:
    """`text` in `width` columns keeping whole the part that differs from the rest of its column
    (after the `head` characters all share, before the `tail` ones): `gpu-node-017` in 9 columns
    is `gpu-n…017`, not `gpu-node…`. None when it fits, or that part alone does not."""
    if len(text) <= width or not (head or tail):
        return None
    start, end = head, max(head, len(text) - tail)
    core = text[start:end]
    tail_room = len(text) - end
    cut_tail = 1 if tail_room else 0  # the shared end goes too, marked with its own `…`
    room = width - len(core) - 1 - cut_tail
    if room < 0 or not core:
        return None
    if (
        cut_tail and start + len(core) + 1 <= width
    ):  # the shared start fits whole: only the end is cut
        return text[: width - 1] + ELLIPSIS
    return text[:room] + ELLIPSIS + core + (ELLIPSIS if cut_tail else "")


def shorten(text: str, width: int, *, middle: bool = False) -> str:
    """`text` in `width` columns, the cut marked `…`: at the end, or in the middle (a host name
    without dots: `a-very-long-…ack12-gpu07` keeps both its start and its node's number)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    if not middle:
        return text[: width - 1] + ELLIPSIS
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def _styles(verdict: Verdict | None) -> dict[int, str]:
    if verdict is None:  # the header
        return dict.fromkeys(range(len(COLUMNS)), "bold")
    check = "yellow" if verdict in ("pass", "warn") else "red"  # a failing verdict's check
    return {VERDICT_COLUMN: STYLE[verdict], CHECK_COLUMN: check}


def _rstrip(line: Line) -> Line:
    """No trailing blanks: a row whose last cells are empty ends at its last text."""
    while line and not line[-1][0].strip():
        line.pop()
    if line:
        line[-1] = (line[-1][0].rstrip(), line[-1][1])
    return line


def _count(n: int) -> str:
    return f"{n} host{'' if n == 1 else 's'}: "


def _cause_line(cause: Cause, width: int | None) -> Line:
    """`8 hosts: paddle.arch-unverified on gpu[001-004,007] +3 more → pin …`: one cause, its
    hosts (cut between names) and its fix, or how many fixes it has, cut to `width`."""
    count, ident = _count(len(cause.hosts)), visible(cause.id)
    budget = max(HOST_BUDGET_FLOOR, ((width or 0) - len(count) - len(ident)) // 2)
    hosts = f" on {host_list(cause.hosts, budget, more=' +{} more')}"
    (fix, *others) = cause.variants
    action = f" → {len(cause.variants)} fixes (`--verbose`)" if others else _arrow(fix.fix)
    line: Line = [(count, "bold"), (ident, STYLE[cause.severity])]
    room = None if width is None else max(0, width - len(count) - len(ident))
    line.append((hosts if room is None else shorten(hosts, room), ""))
    if room is not None:
        action = shorten(action, max(0, room - len(hosts)))
    return [*line, (action, "")]


def _arrow(fix: str | None) -> str:
    return f" → {visible(fix)}" if fix else ""


def _cause_lines(cause: Cause, width: int | None) -> list[Line]:
    """`12 hosts: driver.version-mismatch → reboot …`, then which hosts, its other fixes with
    their hosts, then one host's words."""
    n = len(cause.hosts)
    head: Line = [(_count(n), "bold"), (visible(cause.id), STYLE[cause.severity])]
    (first, *others) = cause.variants
    if not others:
        head.append((_arrow(first.fix), ""))
    budget = HOST_LIST_CHARS if width is None else HOST_LIST_LINES * width - len(INDENT)
    lines = [head]
    if n > 1:
        lines += [[(line, "")] for line in _prose(host_list(cause.hosts, budget), width, INDENT)]
    for variant in cause.variants if others else ():
        on = host_list(variant.hosts, budget)
        lines += [[(line, "")] for line in _prose(f"→ {visible(variant.fix or '')} ({on})", width)]
    example = visible(f"{'' if n == 1 else 'e.g. '}{cause.hosts[0]}: {cause.message}")
    return lines + [[(line, "dim")] for line in _prose(example, width)]


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


def host_list(labels: tuple[str, ...], budget: int, *, more: str = MORE_HOSTS) -> str:
    """Slurm's notation (`gpu[001-012], login1`: what `--expect-hosts` reads back), cut between
    names, never inside one, when longer than `budget` characters; `more` says how many are
    left out."""
    from envcheck.verdict.hostlist import compressed_host_list

    shown: list[str] = []
    named = 0
    for part, count in compressed_host_list(labels):
        left = len(labels) - named - count
        tail = more.format(left) if left else ""
        if shown and len(", ".join([*shown, visible(part)])) + len(tail) > budget:
            break
        shown.append(visible(part))
        named += count
    left = len(labels) - named
    return ", ".join(shown) + (more.format(left) if left else "")


def gpu_proof_words(summary: FleetSummary, width: int | None = None) -> str | None:
    """`GPUs proven by a smoke: 14 of 16; fewer than all on gpu[001-002]`, None when
    the hosts have no GPU; the hosts are named only when some GPU was proven (a static run
    proves none, on every host)."""
    proven, total, partial = summary.gpus_proven()
    if not total:
        return None
    line = f"GPUs proven by a smoke: {proven} of {total}"
    if not (proven and partial):
        return line
    line += "; fewer than all on "
    budget = HOST_LIST_CHARS if width is None else max(width - len(line), 20)
    return line + host_list(partial, budget)


def _gpu_proof_lines(summary: FleetSummary, width: int | None) -> list[str]:
    words = gpu_proof_words(summary, width)
    return [words] if words else []


def _footer(summary: FleetSummary, width: int | None) -> list[str]:
    counts = ", ".join(f"{n} {verdict}" for verdict, n in summary.counts.items())
    hosts = len(summary.hosts)
    lines = _gpu_proof_lines(summary, width)
    lines.append(f"{hosts} host{'' if hosts == 1 else 's'}: {counts}; exit {summary.exit_code}")
    lines += [
        visible(f"duplicate {d.hostname}: kept {d.kept} (newest), ignored {', '.join(d.ignored)}")
        for d in summary.duplicates
    ]
    if any(driver_cell(h).endswith(KERNEL_MODULE_MARK) for h in summary.hosts if h.reported):
        lines.append(
            f"{KERNEL_MODULE_MARK} the loaded kernel module's version: the user-space driver "
            "differs (reboot)"
        )
    if any(paddle_cell(h).endswith(IMAGE_MARK) for h in summary.hosts if h.reported):
        lines.append(f"{IMAGE_MARK} the Paddle of the image chosen: the host's Python has none")
    return lines
