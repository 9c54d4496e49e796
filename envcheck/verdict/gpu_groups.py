"""Identical GPUs judged once: an 8-GPU node of Tesla P40s is one finding, "GPU 0–7 Tesla P40",
not eight identical ones. Pure."""

from __future__ import annotations

from collections.abc import Iterable

from envcheck.contracts.facts import GpuFacts
from envcheck.contracts.record import record


@record
class GpuGroup:
    """GPUs of one name and compute capability, in index order."""

    compute_capability: str
    name: str
    indices: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"GPU {index_span(self.indices)} {self.name}"


def gpu_groups(gpus: Iterable[GpuFacts]) -> list[GpuGroup]:
    """One group per (name, compute capability), in the order the driver lists them."""
    groups: dict[tuple[str, str], list[int]] = {}
    for g in gpus:
        groups.setdefault((g.name or "?", g.compute_capability or "?"), []).append(g.index)
    return [GpuGroup(cc, name, tuple(indices)) for (name, cc), indices in groups.items()]


def index_span(indices: tuple[int, ...]) -> str:
    """(0, 1, …, 7) -> "0–7"; (0, 2, 5) -> "0,2,5"; (3,) -> "3"."""
    ordered = sorted(indices)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}–{ordered[-1]}"
    return ",".join(map(str, ordered))
