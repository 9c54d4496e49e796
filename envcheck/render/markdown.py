"""Markdown summaries: one doctor report, or a merged fleet, as GitHub-flavoured Markdown.

Written to `--markdown FILE` and, under GitHub Actions, appended to `$GITHUB_STEP_SUMMARY`.
Problems come first, each with its fix under it (a Fix column pushed the commands behind a
horizontal scroll in a browser); the smoke has its own table; passed checks fold away in
a `<details>` block, so the one screen a reviewer sees is the one that says what to do. A fleet
leads with its root causes, each with how many hosts have it, which (Slurm's notation) and its
fixes, then one row per host.
`bench/bench_markdown.py` renders these in headless Chromium: `docs/job-summary.png`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import HostFacts
from envcheck.contracts.findings import Finding, Severity
from envcheck.contracts.host_report import ImageChoice, Report, Verdict
from envcheck.contracts.smoke_report import SmokeDocument
from envcheck.render.sanitize import visible
from envcheck.render.smoke_runs import SMOKE_COLUMNS, number, smoke_row, smoke_runs
from envcheck.verdict.proof import proof_headline, proof_words

if TYPE_CHECKING:
    from envcheck.verdict.fleet import Cause, FleetSummary

SEVERITY_ICON: dict[Severity, str] = {"pass": "✅", "warn": "⚠️", "fail": "❌"}
VERDICT_ICON: dict[Verdict, str] = {
    "pass": "✅",
    "warn": "⚠️",
    "fail": "❌",
    "cpu-fallback": "🛑",
    "wrong-results": "🛑",
}
NOT_CHECKED = "—"


def render_markdown(report: Report) -> str:
    problems = [f for f in report.findings if f.severity != "pass"]
    problems.sort(key=lambda f: f.severity != "fail")  # failures first, stable otherwise
    passed = [f for f in report.findings if f.severity == "pass"]
    says = proof_headline(report.proof, report.findings, bool(report.host.gpus))
    parts = [
        f"## {headline(report.verdict, problems, int(report.exit_status), says)}",
        host_line(report.host, report.image),
        f"Proof: {proof_words(report.proof, report.verdict, report.findings, len(report.host.gpus))}.",
    ]
    if problems:
        followers = _follow_ons(problems)
        parts += [
            _finding_item(f, followers.get(f.id, []))
            for f in problems
            if not (f.remedy and f.remedy.resolved_by)
        ]
        parts += _what_to_type(report)
    elif passed:
        parts.append(f"All {len(passed)} checks passed.")
    if report.smoke:
        parts.append(smoke_section(report.smoke))
    if passed:
        parts.append(_details(f"{_plural(len(passed), 'check')} passed", _passed_table(passed)))
    return "\n\n".join(parts) + "\n"


def headline(
    verdict: Verdict, problems: list[Finding], exit_code: int, proven: str | None = None
) -> str:
    """`proven`: what the proof shows ("trained on GPU 0", "CPU host, static checks only"): a
    pass claims that and no more."""
    failed = sum(f.severity == "fail" for f in problems)
    warned = len(problems) - failed
    proven = proven or "static checks only"
    says: dict[Verdict, str] = {
        "pass": proven,
        "warn": f"{proven}, with {_plural(warned, 'warning')}",
        "fail": f"{_plural(failed, 'check')} failed",
        "cpu-fallback": "the smoke training ran on the CPU, not on the GPU",
        "wrong-results": "the smoke training computed wrong numbers",
    }
    return f"{VERDICT_ICON[verdict]} envcheck: **{verdict}** — {says[verdict]} (exit {exit_code})"


def host_line(host: HostFacts, image: ImageChoice | None) -> str:
    """One line a human can compare across runners: host · driver · GPUs · Paddle · image."""
    bits = [f"**{_text(host.machine.hostname or 'unknown host')}**"]
    if host.driver.version:
        cuda = f" (CUDA {host.driver.cuda})" if host.driver.cuda else ""
        bits.append(_text(f"driver {host.driver.version}{cuda}"))
    elif host.driver.status != "unknown":
        bits.append(_text(f"driver {host.driver.status}"))
    if host.gpus:
        bits.append(gpu_summary(host))
    if host.paddle.version:
        cuda = f"CUDA {host.paddle.cuda}" if host.paddle.cuda else "CPU build"
        bits.append(_text(f"Paddle {host.paddle.version} ({cuda})"))
    if image and image.ref:
        digest = f" `{image.digest[:19]}…`" if image.digest else ""
        bits.append(_text(f"image `{image.ref}`{digest}"))
    return " · ".join(bits)


def gpu_summary(host: HostFacts) -> str:
    """`2 × NVIDIA A100-SXM4-80GB (sm 8.0)`: identical GPUs counted, not listed."""
    names = Counter(
        f"{g.name or 'unknown GPU'}"
        + (f" (sm {g.compute_capability})" if g.compute_capability else "")
        for g in host.gpus
    )
    return ", ".join(f"{n} × {_text(name)}" if n > 1 else _text(name) for name, n in names.items())


def render_fleet_markdown(summary: FleetSummary) -> str:
    counts = ", ".join(f"{n} {verdict}" for verdict, n in summary.counts.items() if n)
    icon = VERDICT_ICON[summary.verdict]
    hosts = _plural(len(summary.hosts), "host")
    parts = [
        f"## {icon} envcheck fleet: {hosts} — {counts or 'no reports'} (exit {summary.exit_code})"
    ]
    from envcheck.render.table import gpu_proof_words

    proof = gpu_proof_words(summary)
    if proof:
        parts.append(_prose(proof) + ".")
    parts += [_cause_item(cause) for cause in summary.causes()]
    if summary.hosts:
        parts.append(_fleet_table(summary))
    for dup in summary.duplicates:
        kept, ignored = _code(dup.kept, cell=False), (_code(s, cell=False) for s in dup.ignored)
        parts.append(
            f"Duplicate host {_code(dup.hostname, cell=False)}: kept {kept} (newest), "
            f"ignored {', '.join(ignored)}."
        )
    return "\n\n".join(parts) + "\n"


def _finding_item(f: Finding, resolves: list[str] | None = None) -> str:
    """A problem as a list item, its fix in a paragraph under it: the fix wraps in the page's
    width, and a check id at the start of its line is never broken at its hyphen. `resolves`:
    the problems its fix resolves too, folded into it as the terminal folds them."""
    item = f"- {SEVERITY_ICON[f.severity]} **{_code(f.id, cell=False)}** ({_text(f.layer)}): {_prose(f.message)}"
    # Four spaces: the item's own paragraph for GFM (2 would do) and python-markdown (4 needed).
    item += f"\n\n    **Fix:** {_prose(f.fix)}" if f.fix else ""
    if resolves:
        item += (
            "\n\n    Its fix also resolves "
            + ", ".join(_code(i, cell=False) for i in resolves)
            + "."
        )
    return item


def _follow_ons(problems: list[Finding]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in problems:
        if f.remedy is not None and f.remedy.resolved_by:
            found.setdefault(f.remedy.resolved_by, []).append(f.id)
    return found


def _what_to_type(report: Report) -> list[str]:
    """The next steps as one shell block: each command once, a person's words as comments."""
    from envcheck.render.text import next_lines

    lines = next_lines(report, 80)
    if not lines:
        return []
    body = "\n".join(line.removeprefix("  ") for line, _ in lines[1:])
    fence = "~~~~" if "~~~" in body else "~~~"
    return [f"**{_text(lines[0][0])}**", f"{fence}sh\n{body}\n{fence}"]


def _cause_item(cause: Cause) -> str:
    """A root cause of the fleet: how many hosts have it, which (Slurm's notation), its fix (or
    its fixes, each with its hosts), one host's words."""
    from envcheck.render.table import HOST_LIST_CHARS, host_list

    n = len(cause.hosts)
    hosts = _prose(host_list(cause.hosts, HOST_LIST_CHARS))
    item = f"- {SEVERITY_ICON[cause.severity]} **{_code(cause.id, cell=False)}** on {_plural(n, 'host')}: {hosts}"
    (first, *others) = cause.variants
    if not others and first.fix:
        item += f"\n\n    **Fix:** {_prose(first.fix)}"
    for variant in cause.variants if others else ():
        on = _prose(host_list(variant.hosts, HOST_LIST_CHARS))
        item += f"\n\n    **Fix** on {on}: {_prose(variant.fix or 'none given')}"
    example = f"{'' if n == 1 else 'e.g. '}{cause.hosts[0]}: {cause.message}"
    return item + f"\n\n    {_prose(example)}"


def _fleet_table(summary: FleetSummary) -> str:
    """One row per host: its verdict and its root causes; the page's width whatever the number
    of layers (a column per layer was wider than a job summary)."""
    from envcheck.verdict.fleet import root_problems

    rows = [
        [
            _text(host.label),
            f"{VERDICT_ICON[host.verdict]} {host.verdict} ({host.exit_code})",
            # one id a line: a browser breaks inline code at its hyphen ("driver.minor-" /
            # "compat") when a cell wraps, and an id is copied whole
            "<br>".join(_code(f.id) for f in root_problems(host)),
        ]
        for host in summary.hosts
    ]
    return _table(["Host", "Verdict (exit)", "Root causes"], rows)


def smoke_section(smoke: SmokeDocument) -> str:
    """`### Smoke training: pass`, where and how long in words, then a row per device."""
    title = f"### Smoke training: {_text(smoke.status) if smoke.status else 'unknown'}"
    lines = [title, _smoke_where(smoke)]
    runs = smoke_runs(smoke)
    if runs:
        lines.append(_table(list(SMOKE_COLUMNS), ([_text(c) for c in smoke_row(r)] for r in runs)))
    return "\n\n".join(line for line in lines if line)


def _smoke_where(smoke: SmokeDocument) -> str:
    bits = []
    if smoke.mode == "container" and smoke.image is not None:
        bits.append(f"Ran in a container of {_code(smoke.image, cell=False)}")
    elif smoke.python is not None:
        bits.append(f"Ran in a subprocess of {_code(smoke.python, cell=False)}")
    if smoke.duration_s is not None:
        bits.append(f"{number(smoke.duration_s)} s")
    if smoke.gpu_expected_reason:
        expected = "a GPU was expected" if smoke.gpu_expected else "no GPU expected"
        bits.append(f"{expected}: {_prose(smoke.gpu_expected_reason)}")
    return " · ".join(bits)


def _passed_table(findings: list[Finding]) -> str:
    rows = [[_code(f.id), _text(f.layer), _text(f.message)] for f in findings]
    return _table(["Check", "Layer", "What was found"], rows)


def _table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _details(summary: str, body: str) -> str:
    # The blank lines around the body are what makes GitHub render Markdown inside <details>.
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
_SPECIAL = re.compile(r"([\\*_<>\[\]|])")


def _text(text: str, *, cell: bool = True) -> str:
    """Text for one table cell (`cell`) or paragraph: a single line, Markdown/HTML neutralised.

    Code spans the fix text uses on purpose (`sudo nvidia-ctk …`) stay code spans: inside them
    only a cell's pipe needs escaping (GFM splits cells before it parses spans; in a paragraph
    the backslash would show).
    """
    text = " ".join(visible(text).split())
    if text.count("`") % 2:
        return _SPECIAL.sub(r"\\\1", text).replace("`", "\\`")
    parts = _CODE_SPAN.split(text)
    return "".join(
        (part.replace("|", "\\|") if cell else part)
        if part.startswith("`")
        else _SPECIAL.sub(r"\\\1", part)
        for part in parts
    )


def _prose(text: str) -> str:
    return _text(text, cell=False)


_TICKS = re.compile(r"`+")


def _code(text: str, *, cell: bool = True) -> str:
    """`text` (a finding id, a file or host name from a report) as one code span in a table cell
    (`cell`) or a paragraph, whatever it holds: a backtick in it can neither close the span nor
    open raw HTML (GFM: the span's fence is a backtick run longer than any inside, padded with a
    space); only a cell's pipe is escaped (GFM splits cells first; in a paragraph it would show)."""
    text = " ".join(visible(text).split())
    text = text.replace("|", "\\|") if cell else text
    fence = "`" * (1 + max((len(run) for run in _TICKS.findall(text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
