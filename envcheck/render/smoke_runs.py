"""The smoke's runs as table cells, one row per device: the same columns in the text report,
on a terminal and in the Markdown summary (never a Python `None`/`True`/`False`: a cell says
`-` where nothing was measured)."""

from __future__ import annotations

from envcheck.contracts.smoke_report import SmokeDocument, SmokeRun
from envcheck.contracts.smoke_result import KnownAnswer
from envcheck.render.sanitize import visible

UNMEASURED = "-"
SMOKE_COLUMNS = (
    "device asked",
    "device used",
    "loss start → end",
    "steps/s",
    "first step s",
    "known answers",
    "peak GPU MiB",
)


def smoke_runs(smoke: SmokeDocument | None) -> list[SmokeRun]:
    """The runs of a report's `smoke` section."""
    return list(smoke.runs) if smoke is not None else []


def smoke_row(run: SmokeRun) -> tuple[str, ...]:
    """One smoke run (per device) as table cells; `-` where the run did not measure it. A run
    whose GPU claim the host rules out shows the device as claimed, and no GPU memory."""
    contradicted = run.contradicted is True
    peak = None if contradicted else run.peak_gpu_mem_bytes
    used = _word(run.device_used)
    return (
        _word(run.device_requested),
        f"{used} (claimed)" if contradicted else used,
        loss_change(run),
        number(run.steps_per_s),
        number(run.first_step_s),
        known_answers(run.checks),
        f"{peak / 2**20:.0f}" if peak else UNMEASURED,
    )


def loss_change(run: SmokeRun) -> str:
    """`0.694 → 0.217`; `-` when the run never reported a loss (it crashed first)."""
    start, end = run.loss_start, run.loss_end
    if start is None and end is None:
        return UNMEASURED
    return f"{number(start)} → {number(end)}"


def known_answers(checks: tuple[KnownAnswer, ...] | None) -> str:
    """`14/14 right`, or `13/14 right (matmul wrong)`: the known-answer checks of one run."""
    if not checks:
        return UNMEASURED
    wrong = [visible(c.op or "?") for c in checks if not c.ok]
    right = f"{len(checks) - len(wrong)}/{len(checks)} right"
    return f"{right} ({', '.join(dict.fromkeys(wrong))} wrong)" if wrong else right


def number(value: float | None) -> str:
    return f"{value:.3g}" if value is not None else UNMEASURED


def _word(value: str | None) -> str:
    return visible(value) if value else UNMEASURED
