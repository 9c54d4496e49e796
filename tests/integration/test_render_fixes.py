"""Fixes a person can copy, and messages without "None" in them.

Every scenario's report — each fake GPU profile of tests/fakenv as the real probes see it, the
judge's scenarios of tests/scenarios.py, the saved reports of tests/report_samples.py — is rendered
rich and plain at 60, 80 and 120 columns; each command of a fix or message (the text between
backticks) and the pip command must be one contiguous piece of one line, whatever the width.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.render.text import image_pip_line, render_plain, render_rich
from envcheck.render.wrap import commands_in, wrap
from envcheck.verdict.judge import Context, judge
from tests import report_samples
from tests.fakenv import profile_names
from tests.scenarios import JUDGE_HOSTS

pytest_plugins = ("tests.fakenv",)

WIDTHS = (60, 80, 120)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _judged(host_doc: dict[str, Any]) -> Report:
    matrix = load_matrix()
    host = host_from_document(host_doc)
    image = select_image(host, matrix)
    return Report(
        host=host,
        findings=tuple(judge(Context(host, matrix, image, needs_engine=True))),
        image=image,
    )


@pytest.fixture(scope="module")
def profile_hosts(fake_nvidia: Callable[[str], dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Each fake profile's `host` object, as `envcheck doctor --json --no-smoke` probed it."""

    def probe(profile: str) -> tuple[str, dict[str, Any]]:
        fake = fake_nvidia(profile)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake
        env["PYTHONPATH"] = fake["FAKE_NVIDIA_SITE_PACKAGES"]
        run = subprocess.run(
            [sys.executable, "-m", "envcheck", "doctor", "--no-smoke", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.stdout, run.stderr
        return profile, json.loads(run.stdout)["host"]

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(probe, profile_names()))


def _reports(profile_hosts: dict[str, dict[str, Any]]) -> Iterator[tuple[str, Report]]:
    for name, doc in {**profile_hosts, **JUDGE_HOSTS}.items():
        yield name, _judged(doc)
    for name, build, _, _ in report_samples.BY_VERDICT:
        yield f"sample-{name}", build()
    yield "sample-smoke-crashed", report_samples.smoke_crashed()


def _rendered(report: Report, width: int) -> dict[str, str]:
    plain, rich = io.StringIO(), io.StringIO()
    render_plain(report, plain, explain=True, width=width)
    render_rich(report, rich, explain=True, width=width)
    return {"plain": plain.getvalue(), "rich": ANSI.sub("", rich.getvalue())}


def _commands(report: Report) -> list[str]:
    found = [
        c for f in report.findings for text in (f.message, f.fix or "") for c in commands_in(text)
    ]
    line = image_pip_line(report)  # printed unless a finding's fix gives it already
    return found + ([line.strip("`")] if line else [])


def test_every_fix_command_is_whole_on_one_line_at_every_width(
    profile_hosts: dict[str, dict[str, Any]],
) -> None:
    checked, broken = 0, []
    for name, report in _reports(profile_hosts):
        commands = _commands(report)
        for width in WIDTHS:
            for kind, text in _rendered(report, width).items():
                lines = text.splitlines()
                for command in commands:
                    checked += 1
                    if not any(command in line for line in lines):
                        broken.append(f"{name} {kind} {width}: {command!r}")
    assert not broken, "\n".join(broken)
    assert checked > 300  # the scenarios have commands to check: long pip commands among them


def test_long_prose_still_wraps_to_the_width_around_the_commands() -> None:
    fix = (
        "reinstall the GPU build of Paddle for CUDA 12.6 in this environment: "
        "`pip uninstall -y paddlepaddle && python -m pip install paddlepaddle-gpu==3.3.1 -i "
        "https://www.paddlepaddle.org.cn/packages/stable/cu126/` then run the doctor again"
    )
    lines = wrap(fix, 60, "fix: ", "     ")
    command = commands_in(fix)[0]
    assert sum(command in line for line in lines) == 1
    assert all(len(line) <= 60 for line in lines if command not in line)
    assert lines[0].startswith("fix: reinstall") and len(lines) >= 3


def test_a_log_tail_keeps_its_lines_and_indents() -> None:
    assert wrap("Traceback:\n  File x\nValueError", 80, "> ", "  ") == [
        "> Traceback:",
        "    File x",
        "  ValueError",
    ]


def test_no_message_or_fix_says_none(profile_hosts: dict[str, dict[str, Any]]) -> None:
    """ "(None)", "None samples": an f-string fed a missing value. A missing value is said in words."""
    said = []
    for name, report in _reports(profile_hosts):
        for f in report.findings:
            for text in (f.message, f.fix or ""):
                if re.search(r"\bNone\b", text):
                    said.append(f"{name} {f.id}: {text}")
    assert not said, "\n".join(said)
