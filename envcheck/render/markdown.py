"""Markdown summaries: one doctor report, or a merged fleet, as GitHub-flavoured Markdown.

Written to `--markdown FILE` and, under GitHub Actions, appended to `$GITHUB_STEP_SUMMARY`.
Problems come first with their fix; passed checks fold away in a `<details>` block, so the one
screen a reviewer sees is the one that says what to do.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from envcheck.facts import HostFacts
from envcheck.findings import Finding
from envcheck.proof import proof_words
from envcheck.render.sanitize import visible
from envcheck.report import ImageChoice, Report

if TYPE_CHECKING:
    from envcheck.fleet import FleetSummary

SEVERITY_ICON = {"pass": "✅", "warn": "⚠️", "fail": "❌"}
VERDICT_ICON = {
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
    parts = [
        f"## {headline(report.verdict, problems, int(report.exit_status))}",
        host_line(report.host, report.image),
        f"Proof: {proof_words(report.proof, report.verdict, report.findings)}.",
    ]
    if problems:
        parts.append(_problem_table(problems))
    elif passed:
        parts.append(f"All {len(passed)} checks passed.")
    if passed:
        parts.append(_details(f"{_plural(len(passed), 'check')} passed", _passed_table(passed)))
    if report.smoke:
        parts.append(_details("Smoke training", _key_values(report.smoke)))
    return "\n\n".join(parts) + "\n"


def headline(verdict: str, problems: list[Finding], exit_code: int) -> str:
    failed = sum(f.severity == "fail" for f in problems)
    warned = len(problems) - failed
    says = {
        "pass": "this machine can train PaddlePaddle on its GPU",
        "warn": f"usable, with {_plural(warned, 'warning')}",
        "fail": f"{_plural(failed, 'check')} failed",
        "cpu-fallback": "the smoke training ran on the CPU, not on the GPU",
        "wrong-results": "the smoke training computed wrong numbers",
    }[verdict]
    return f"{VERDICT_ICON[verdict]} envcheck: **{verdict}** — {says} (exit {exit_code})"


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
    if summary.hosts:
        parts.append(_fleet_table(summary))
    for dup in summary.duplicates:
        parts.append(
            f"Duplicate host {_code(dup.hostname)}: kept {_code(dup.kept)} (newest), "
            f"ignored {', '.join(_code(s) for s in dup.ignored)}."
        )
    return "\n\n".join(parts) + "\n"


def _fleet_table(summary: FleetSummary) -> str:
    header = ["Host", "Verdict", *summary.layers, "First problem"]
    rows = []
    for host in summary.hosts:
        layers = host.layer_severities()
        first = host.first_problem()
        rows.append(
            [
                _text(host.hostname or f"? ({host.source})"),
                f"{VERDICT_ICON[host.verdict]} {host.verdict}",
                *(
                    SEVERITY_ICON.get(layers.get(layer, ""), NOT_CHECKED)
                    for layer in summary.layers
                ),
                f"{_code(first.id)}: {_text(first.message)}" if first else "",
            ]
        )
    return _table(header, rows)


def _problem_table(findings: list[Finding]) -> str:
    rows = [
        [
            SEVERITY_ICON[f.severity],
            _code(f.id),
            _text(f.layer),
            _text(f.message),
            _text(f.fix or ""),
        ]
        for f in findings
    ]
    return _table(["", "Check", "Layer", "What was found", "Fix"], rows)


def _passed_table(findings: list[Finding]) -> str:
    rows = [[_code(f.id), _text(f.layer), _text(f.message)] for f in findings]
    return _table(["Check", "Layer", "What was found"], rows)


def _key_values(data: Mapping[str, Any]) -> str:
    """Scalar entries only: the smoke's nested traces belong in the JSON report, not a summary."""
    rows = [
        [_code(key), _text(str(value))]
        for key, value in data.items()
        if isinstance(value, (str, int, float, bool)) or value is None
    ]
    return _table(["Field", "Value"], rows) if rows else "See the JSON report."


def _table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _details(summary: str, body: str) -> str:
    # The blank lines around the body are what makes GitHub render Markdown inside <details>.
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
_SPECIAL = re.compile(r"([\\*_<>\[\]|])")


def _text(text: str) -> str:
    """Text for one table cell: a single line, pipes escaped, Markdown/HTML neutralised.

    Code spans the fix text uses on purpose (`sudo nvidia-ctk …`) stay code spans: inside them
    only the pipe needs escaping (GFM splits cells before it parses spans).
    """
    text = " ".join(visible(text).split())
    if text.count("`") % 2:
        return _SPECIAL.sub(r"\\\1", text).replace("`", "\\`")
    parts = _CODE_SPAN.split(text)
    return "".join(
        part.replace("|", "\\|") if part.startswith("`") else _SPECIAL.sub(r"\\\1", part)
        for part in parts
    )


_TICKS = re.compile(r"`+")


def _code(text: str) -> str:
    """`text` (a finding id, a file or host name from a report) as one code span in a table cell,
    whatever it holds: a backtick in it can neither close the span nor open raw HTML (GFM: the
    span's fence is a backtick run longer than any inside, padded with a space)."""
    text = " ".join(visible(text).split()).replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in _TICKS.findall(text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
