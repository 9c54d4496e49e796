"""The people's report: plain text in a pipe, rich colour on a terminal, the same content."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import pytest

from envcheck.contracts.facts import from_dict, host_from_document
from envcheck.contracts.host_report import Report
from envcheck.contracts.smoke_report import SmokeDocument
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.render.text import render_plain, render_rich
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s

Render = Callable[..., None]  # render_plain or render_rich

SMOKE: dict[str, Any] = {
    "runs": [
        {
            "device_requested": "gpu:0",
            "device_used": "gpu:0",
            "loss_start": 0.6931,
            "loss_end": 0.41,
            "steps_per_s": 812.5,
            "first_step_s": 0.21,
            "peak_gpu_mem_bytes": 268435456,
        }
    ]
}


def report(smoke: dict[str, object] | None = None) -> Report:
    """The report of a saved host, with `smoke` read as a saved report's smoke section is."""
    matrix = load_matrix()
    host = host_from_document(
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU)
    )
    image = select_image(host, matrix)
    return Report(
        host=host,
        findings=tuple(judge(Context(host, matrix, image))),
        image=image,
        smoke=from_dict(SmokeDocument, smoke, "smoke", numbers_as_text=False) if smoke else None,
    )


@pytest.mark.parametrize("render", [render_plain, render_rich], ids=["plain", "rich"])
def test_every_problem_shows_its_fix_the_image_and_the_verdict(render: Render) -> None:
    out = io.StringIO()
    render(report(SMOKE), out, explain=True)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert "paddle.cpu-build" in text and "pip uninstall -y paddlepaddle" in text
    assert "3.3.1-gpu-cuda12.9-cudnn9.9" in text and "rejected" in text and "cuda13.0" in text
    assert (
        "0.693" in text and "0.41" in text and "812" in text and "256" in text
    )  # the smoke table, per device
    assert "Verdict: FAIL (exit 1)" in text


def test_rich_colours_and_plain_does_not() -> None:
    plain, rich = io.StringIO(), io.StringIO()
    render_plain(report(), plain)
    render_rich(report(), rich)
    assert "\x1b[" not in plain.getvalue() and "\x1b[" in rich.getvalue()


def test_text_from_the_host_is_not_taken_as_rich_markup() -> None:
    r = report()
    img = r.image
    assert img is not None and img.pip_command is not None
    out = io.StringIO()
    from envcheck.contracts.record import replace

    render_rich(
        replace(r, image=replace(img, pip_command="python -m pip install [bold]x[/bold]")), out
    )
    assert "[bold]x[/bold]" in re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())


def _healthy_a100() -> Report:
    matrix = load_matrix()
    host = host_from_document(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
            engine=s.ENGINE_NVIDIA,
        )
    )
    image = select_image(host, matrix)
    return Report(host=host, findings=tuple(judge(Context(host, matrix, image))), image=image)


@pytest.mark.parametrize("render", [render_plain, render_rich], ids=["plain", "rich"])
def test_explain_on_a_healthy_host_says_why_this_tag(render: Render) -> None:
    """The driver and the newest CUDA it runs, the GPUs' archs, every rejected tag —
    the text `pull-image --dry-run` prints (envcheck.render.choice), not a second wording."""
    from envcheck.render.choice import rejected_lines, why_lines

    r = _healthy_a100()
    assert r.verdict in ("pass", "warn") and r.image is not None and r.image.rejected
    out = io.StringIO()
    render(r, out, explain=True, width=400)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    for line in [*why_lines(r.image), *rejected_lines(r.image)]:
        assert f"  {line}" in text
    assert "driver 535.104.05 (CUDA 12.2) runs CUDA 12.9" in text and "every GPU's arch" in text
    assert "rejected docker.io/paddlepaddle/paddle:3.3.1-gpu-cuda13.0" in text
    quiet = io.StringIO()
    render(r, quiet, explain=False, width=400)
    assert "why: " not in quiet.getvalue()


AMP_RUN = {
    **SMOKE["runs"][0],
    "amp": {"enabled": True, "dtype": "bfloat16"},
    "compare_cpu": {
        "steps_per_s": 90.5,
        "first_step_s": 0.3,
        "loss_start": 0.69,
        "loss_end": 0.43,
        "speedup": 8.98,
        "skipped": None,
        "error": None,
    },
}
CPU_RUN = {
    "device_requested": "cpu",
    "device_used": "cpu",
    "loss_start": 0.69,
    "loss_end": 0.52,
    "steps_per_s": 90.6,
    "amp": {"enabled": False, "dtype": None},
    "compare_cpu": {
        "skipped": "the run itself was on the CPU",
        "steps_per_s": None,
        "speedup": None,
        "error": None,
    },
}


@pytest.mark.parametrize("render", [render_plain, render_rich], ids=["plain", "rich"])
def test_amp_and_compare_cpu_results_are_shown_or_why_they_were_skipped(render: Render) -> None:
    """--amp and --compare-cpu were once measured, then dropped from the text report."""
    out = io.StringIO()
    render(report({"runs": [AMP_RUN, CPU_RUN]}), out)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert "amp on gpu:0: trained under auto_cast (bfloat16), loss 0.693 → 0.41" in text
    assert "compare-cpu on gpu:0: 812 steps/s here, 90.5 on the CPU: 9.0× the CPU" in text
    assert "compare-cpu on cpu: skipped: the run itself was on the CPU" in text
    assert "amp on cpu" not in text


def test_a_passed_check_takes_two_rows_on_a_terminal_and_is_whole_with_explain() -> None:
    """Before: a healthy smoke's words took 7 rows of 80 columns, a third of the screen."""
    from envcheck.contracts.findings import passed
    from envcheck.contracts.record import replace
    from tests import report_samples as samples

    words = (
        "Paddle 3.3.1 trained in envcheck-test/paddle-cpu:3.3.1: cpu loss 0.694 → 0.217 in 60 "
        "steps, 53.89 steps/s, 14/14 known answers right; no NVIDIA library mapped "
        "(/proc/self/maps after the first step) (no GPU expected: the host has no usable GPU)"
    )
    base = samples.healthy()
    healthy = replace(base, findings=(*base.findings, passed("smoke.pass", words, layer="smoke")))
    brief, whole = io.StringIO(), io.StringIO()
    render_rich(healthy, brief, width=80, color=False)
    render_rich(healthy, whole, explain=True, width=80, color=False)
    lines = brief.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "smoke.pass" in line)
    assert lines[start + 1].endswith(" …")  # the second row, cut
    assert not lines[start + 2].startswith(" " * 10)  # and no third
    assert "usable GPU)" not in brief.getvalue() and "usable GPU)" in whole.getvalue()
