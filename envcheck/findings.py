"""A finding: one check's outcome, with what was observed and the exact fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    id: str  # stable: "driver.too-old", "paddle.cpu-build", "smoke.cpu-fallback"
    severity: Severity
    message: str  # with the observed values
    fix: str | None = None  # the exact command, tag, minimum driver…
    layer: str = "host"  # driver | gpu | cuda | paddle | engine | env | image | smoke | drift
    observed: dict[str, Any] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]


def passed(id: str, message: str, layer: str, **observed: Any) -> Finding:
    return Finding(id=id, severity="pass", message=message, layer=layer, observed=observed)


def warn(id: str, message: str, fix: str | None, layer: str, **observed: Any) -> Finding:
    return Finding(id=id, severity="warn", message=message, fix=fix, layer=layer, observed=observed)


def fail(id: str, message: str, fix: str | None, layer: str, **observed: Any) -> Finding:
    return Finding(id=id, severity="fail", message=message, fix=fix, layer=layer, observed=observed)
