"""GitHub Actions outputs: `::error`/`::warning` annotations, the step summary, step outputs.

Only under `GITHUB_ACTIONS=true`: anywhere else `::error …` lines are noise in a terminal or a
log. The runner reads workflow commands from the step's stdout *and* stderr (actions/runner,
`ScriptHandler.cs`: both streams go through an `OutputManager` bound to the command manager), so
the doctor prints them on stderr and `--json` keeps stdout to exactly one JSON document.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TextIO

from envcheck.contracts.errors import EnvcheckError
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import Report
from envcheck.edges.userfiles import append_output, write_output
from envcheck.render.markdown import render_fleet_markdown, render_markdown
from envcheck.render.sanitize import visible
from envcheck.verdict.proof import proof_headline

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment
    from envcheck.verdict.fleet import FleetSummary

# GitHub shows at most 10 error and 10 warning annotations per step and drops the rest silently
# (actions/toolkit docs/problem-matchers.md, "Limitations"): the last slot says what was dropped.
ANNOTATIONS_PER_LEVEL = 10
# $GITHUB_STEP_SUMMARY may hold at most 1 MiB per step; over that the upload fails and the
# summary is lost, so a long one is cut with a note instead.
STEP_SUMMARY_LIMIT = 1024 * 1024

LEVELS = {"fail": "error", "warn": "warning"}


def in_github_actions(environ: Mapping[str, str]) -> bool:
    return environ.get("GITHUB_ACTIONS") == "true"


def github_annotations(report: Report) -> list[str]:
    """`::error title=envcheck driver.too-old on gpu-3::message%0AFix: …` per failed/warned check."""
    host = report.host.machine.hostname
    where = f" on {host}" if host else ""
    followers = follow_ons(report.findings)
    problems = [
        (LEVELS[f.severity], f"envcheck {f.id}{where}", _message(f, followers.get(f.id, [])), f.id)
        for f in report.findings
        if f.severity in LEVELS and not (f.remedy and f.remedy.resolved_by)
    ]
    return _capped(problems)


def follow_ons(findings: Iterable[Finding]) -> dict[str, list[str]]:
    """{root cause: the problems its fix resolves}: one annotation per root cause, as the
    terminal folds them into one line."""
    found: dict[str, list[str]] = {}
    for f in findings:
        if f.severity != "pass" and f.remedy is not None and f.remedy.resolved_by:
            found.setdefault(f.remedy.resolved_by, []).append(f.id)
    return found


def fleet_annotations(summary: FleetSummary) -> list[str]:
    """One annotation per host that did not pass, naming its first problem."""
    problems = []
    for host in summary.hosts:
        first = host.first_problem()
        if first is None:
            continue
        level = "warning" if host.verdict == "warn" else "error"
        name = host.hostname or host.source
        problems.append((level, f"envcheck {host.verdict} on {name}", _message(first), name))
    return _capped(problems)


def emit_ci_outputs(
    report: Report, *, markdown_path: str | None, stream: TextIO, env: Environment
) -> None:
    """Write `--markdown FILE` if asked; under GitHub Actions (`env`'s variables, None: the
    process's) also append the same Markdown to the step summary and print the annotations on
    `stream` (the doctor passes stderr)."""
    image = report.image
    outputs = {
        "verdict": report.verdict,
        "headline": proof_headline(report.proof, report.findings, bool(report.host.gpus)),
        "image": (image.ref if image else None) or "",
        "image-digest": (image.digest if image else None) or "",
    }
    _emit(render_markdown(report), github_annotations(report), outputs, markdown_path, stream, env)


def emit_fleet_ci_outputs(
    summary: FleetSummary,
    *,
    markdown_path: str | None,
    stream: TextIO,
    env: Environment,
) -> None:
    outputs = {"verdict": summary.verdict}
    markdown = render_fleet_markdown(summary)
    _emit(markdown, fleet_annotations(summary), outputs, markdown_path, stream, env)


def _emit(
    markdown: str,
    annotations: list[str],
    outputs: Mapping[str, str],
    markdown_path: str | None,
    stream: TextIO,
    env: Environment,
) -> None:
    if markdown_path:
        write_output(markdown_path, markdown, flag="--markdown", env=env)
    environ = env.env
    if not in_github_actions(environ):
        return
    lines = list(annotations)
    for problem in (append_step_summary(markdown, environ), append_step_outputs(outputs, environ)):
        if problem:
            lines.append(f"::warning title=envcheck::{escape_data(problem)}")
    for line in lines:
        print(line, file=stream)
    stream.flush()


def append_step_summary(markdown: str, environ: Mapping[str, str]) -> str | None:
    """Append to `$GITHUB_STEP_SUMMARY`; return why it could not, or None.

    A summary that cannot be written must not turn a passing gate red: it becomes a warning.
    """
    path = environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return "GITHUB_STEP_SUMMARY is not set: no step summary written"
    try:
        used = os.path.getsize(path) if os.path.isfile(path) else 0
        append_output(path, _fit(markdown, STEP_SUMMARY_LIMIT - used), what="the step summary")
    except EnvcheckError as e:
        return e.message
    return None


def append_step_outputs(outputs: Mapping[str, str], environ: Mapping[str, str]) -> str | None:
    """`verdict=…`, `image=…` into `$GITHUB_OUTPUT`, so a step that runs `envcheck doctor` with
    an `id:` exposes them as `steps.<id>.outputs.*` (the gate passes `image` to its dependants).
    Return why it could not, or None; no `$GITHUB_OUTPUT` (a bare `docker run`) is not a problem."""
    path = environ.get("GITHUB_OUTPUT")
    if not path:
        return None
    text = "".join(f"{key}={' '.join(visible(value).split())}\n" for key, value in outputs.items())
    try:
        append_output(path, text, what="the step outputs")
    except EnvcheckError as e:
        return e.message
    return None


def _fit(markdown: str, budget: int) -> str:
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    note = (
        "\n\n*(summary cut: GitHub allows 1 MiB per step; the full report is in the artifacts)*\n"
    )
    keep = max(budget - len(note.encode("utf-8")), 0)
    return data[:keep].decode("utf-8", errors="ignore") + note if keep else ""


def _message(finding: Finding, resolves: list[str] | None = None) -> str:
    message = visible(finding.message, keep_lines=True)
    also = f"\nIts fix also resolves: {', '.join(resolves)}" if resolves else ""
    fix = f"\nFix: {visible(finding.fix, keep_lines=True)}" if finding.fix else ""
    return message + fix + visible(also, keep_lines=True)


def _capped(problems: list[tuple[str, str, str, str]]) -> list[str]:
    """Errors first, then warnings; per level at most ANNOTATIONS_PER_LEVEL lines, the last of
    which lists what did not fit rather than letting GitHub drop it without a word."""
    lines: list[str] = []
    for level in ("error", "warning"):
        mine = [p for p in problems if p[0] == level]
        if len(mine) > ANNOTATIONS_PER_LEVEL:
            kept, rest = mine[: ANNOTATIONS_PER_LEVEL - 1], mine[ANNOTATIONS_PER_LEVEL - 1 :]
            more = ", ".join(p[3] for p in rest)
            kept.append(
                (level, f"envcheck: {len(rest)} more", f"also: {more} (see the step summary)", "")
            )
            mine = kept
        lines += [workflow_command(lvl, message, title=title) for lvl, title, message, _ in mine]
    return lines


def workflow_command(command: str, message: str, **properties: str) -> str:
    """`::command key=value,…::message` with GitHub's escaping (actions/toolkit `command.ts`):
    data escapes `%`, CR and LF; property values also `:` and `,`. Both pass `visible()` first
    (idempotent): a hostname's ESC, BEL or bidi control never reaches the log."""
    props = ",".join(f"{k}={escape_property(visible(v))}" for k, v in properties.items() if v)
    shown = escape_data(visible(message, keep_lines=True))
    return f"::{command}{' ' + props if props else ''}::{shown}"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
