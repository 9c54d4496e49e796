"""Every cited row of a matrix, for the tests that walk them all (their sources, confirmations)."""

from __future__ import annotations

from typing import Protocol

from envcheck.matrix.model import Matrix


class Cited(Protocol):
    @property
    def source(self) -> str: ...
    @property
    def confirmed(self) -> bool: ...


def all_rows(m: Matrix) -> list[Cited]:
    return [
        *m.toolkit_drivers,
        *m.minor_compat,
        *m.arch_sets,
        *m.gpus,
        *m.releases,
        *m.builds,
        *m.images,
        *m.defects,
        *m.gpu_generations,
        *m.driver_branches,
        *m.cuda_libraries,
    ]
