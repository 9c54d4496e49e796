"""The smoke's runs as table cells, one row per device: the same columns in the text report,
on a terminal and in the Markdown summary (never a Python `None`/`True`/`False`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def smoke_runs(smoke: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The runs of a report's `smoke` object (a saved report may hold anything there)."""
    runs = (smoke or {}).get("runs")
    return [run for run in runs if isinstance(run, dict)] if isinstance(runs, list) else []


def smoke_row(run: Mapping[str, Any]) -> tuple[str, ...]:
    """One smoke run (per device) as table cells; `-` where the run did not measure it. A run
    whose GPU claim the host rules out shows the device as claimed, and no GPU memory."""
    contradicted = run.get("contradicted") is True
    peak = None if contradicted else run.get("peak_gpu_mem_bytes")
    used = _word(run.get("device_used"))
    return (
        _word(run.get("device_requested")),
        f"{used} (claimed)" if contradicted else used,
        loss_change(run),
        number(run.get("steps_per_s")),
        number(run.get("first_step_s")),
        known_answers(run.get("checks")),
        f"{peak / 2**20:.0f}" if _is_number(peak) and peak else UNMEASURED,
    )


def loss_change(run: Mapping[str, Any]) -> str:
    """`0.694 → 0.217`; `-` when the run never reported a loss (it crashed first)."""
    start, end = run.get("loss_start"), run.get("loss_end")
    if not (_is_number(start) or _is_number(end)):
        return UNMEASURED
    return f"{number(start)} → {number(end)}"


def known_answers(checks: Any) -> str:
    """`14/14 right`, or `13/14 right (matmul wrong)`: the known-answer checks of one run."""
    if not isinstance(checks, list) or not checks:
        return UNMEASURED
    items = [c for c in checks if isinstance(c, dict)]
    wrong = [visible(str(c.get("op") or "?")) for c in items if c.get("ok") is not True]
    right = f"{len(items) - len(wrong)}/{len(items)} right"
    return f"{right} ({', '.join(dict.fromkeys(wrong))} wrong)" if wrong else right


def number(value: object) -> str:
    return f"{value:.3g}" if _is_number(value) else UNMEASURED


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _word(value: object) -> str:
    return visible(value) if isinstance(value, str) and value else UNMEASURED
