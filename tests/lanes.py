"""What a test needs of the machine, read from its markers (CONTRIBUTING.md, "Set up and run the
tests"). tests/conftest.py marks a test by the fixtures it asks for (`docker_client` → docker,
`registry` → registry); the unit lane refuses a test marked with anything `scripts/dev setup`
starts (tests/unit/conftest.py): it belongs in tests/integration."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.paths import ROOT

UNIT = ROOT / "tests" / "unit"
# A test that asks for one of these needs what `scripts/dev setup` starts: it carries the marker
# whether or not its author wrote it, so `-m "not docker and not registry"` selects exactly the
# tests a machine without them can run (the lent GPU machine, a developer's workstation).
NEEDS = {"docker_client": "docker", "registry": "registry", "registry_factory": "registry"}
# The engine, the local registry, the Slurm cluster and Chromium (pyproject.toml's markers).
OUTSIDE = frozenset({"docker", "registry", "slurm", "browser"})


def needing_the_set_up(items: Iterable[pytest.Item], lane: Path = UNIT) -> list[str]:
    """Each test of `lane` marked with something outside this process, and what."""
    found = []
    for item in items:
        if lane not in item.path.parents:
            continue
        marks = sorted({mark.name for mark in item.iter_markers()} & OUTSIDE)
        if marks:
            found.append(f"{item.nodeid} ({', '.join(marks)})")
    return found


def implied_markers(item: pytest.Item) -> set[str]:
    """The markers the fixtures `item` asks for imply. An argument parametrized directly only
    shares a fixture's name (`registry="baidu"` in tests/unit/test_select_image.py): it asks for
    no registry, and its test runs where none is."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return {
        NEEDS[name]
        for name in getattr(item, "fixturenames", ())
        if name in NEEDS and name not in params
    }
