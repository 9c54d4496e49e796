"""A finding: one check's outcome, with what was observed and its remedy (the steps that fix it)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from envcheck.contracts.record import field, record
from envcheck.contracts.remedy import Remedy, as_remedy

Severity = Literal["pass", "warn", "fail"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)  # in order of weight, the worst last
Layer = Literal[
    "host", "driver", "gpu", "cuda", "paddle", "env", "engine", "image", "smoke", "drift", "fleet"
]

# The doctor's layers in report order, with their titles: one list for every renderer and the
# fleet table. "host" (a finding about the host as a whole) and "fleet" sort after them.
LAYERS: tuple[tuple[Layer, str], ...] = (
    ("driver", "NVIDIA driver"),
    ("gpu", "GPUs"),
    ("cuda", "CUDA & cuDNN"),
    ("paddle", "Paddle build"),
    ("env", "Environment"),
    ("engine", "Container engine"),
    ("image", "Image"),
    ("smoke", "Smoke training"),
    ("drift", "Drift"),
)


# The fix of a finding that another one's fix resolves (one plan per report: verdict/one_plan.py)
RESOLVED_BY = "resolved by the fix for "


@record
class Finding:
    """One check's outcome: pass, warn or fail, with the observed values and the remedy."""

    id: str  # stable: "driver.too-old", "paddle.cpu-build", "smoke.cpu-fallback"
    severity: Severity
    message: str  # with the observed values
    remedy: Remedy | None = None  # the ordered steps: complete commands, or words
    layer: Layer = "host"
    observed: dict[str, Any] = field(default_factory=dict)

    @property
    def fix(self) -> str | None:
        """The remedy in one sentence, commands between backticks (the line under a finding)."""
        return self.remedy.prose() if self.remedy is not None else None

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def follows(self) -> str | None:
        """The id of the finding whose fix resolves this one too; None for a root cause."""
        fix = self.fix or ""
        return fix[len(RESOLVED_BY) :] if fix.startswith(RESOLVED_BY) else None


def passed(id: str, message: str, *, layer: Layer, **observed: Any) -> Finding:
    return Finding(id=id, severity="pass", message=message, layer=layer, observed=observed)


def warn(
    id: str, message: str, *, fix: Remedy | str | None, layer: Layer, **observed: Any
) -> Finding:
    """`fix`: the remedy, or words (one manual instruction)."""
    remedy = as_remedy(fix)
    return Finding(
        id=id, severity="warn", message=message, remedy=remedy, layer=layer, observed=observed
    )


def fail(
    id: str, message: str, *, fix: Remedy | str | None, layer: Layer, **observed: Any
) -> Finding:
    """`fix`: the remedy, or words (one manual instruction)."""
    remedy = as_remedy(fix)
    return Finding(
        id=id, severity="fail", message=message, remedy=remedy, layer=layer, observed=observed
    )
