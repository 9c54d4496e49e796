"""The suite's two lanes (CONTRIBUTING.md): pytest runs both, the unit lane first; every test file
is in one of them; and the unit lane names a test that needs what `scripts/dev setup` starts
(every test file the repository cites is where it says: tests/unit/test_self_contained.py)."""

from __future__ import annotations

import pytest

from envcheck.matrix.toml import tomllib
from tests.lanes import implied_markers, needing_the_set_up
from tests.paths import ROOT

pytest_plugins = ("pytester",)


def test_pytest_runs_the_unit_lane_then_the_integration_lane() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["pytest"]["ini_options"]["testpaths"] == [
        "tests/unit",
        "tests/integration",
    ]


def test_every_test_file_is_in_a_lane() -> None:
    """A test file beside the lanes would never run: pytest collects only its `testpaths`."""
    tests = ROOT / "tests"
    stray = [
        path.relative_to(ROOT).as_posix()
        for path in sorted(tests.rglob("test_*.py"))
        if path.parent not in (tests / "unit", tests / "integration")
    ]
    assert stray == []


def test_the_unit_lane_names_each_test_that_needs_the_set_up(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    docker\n    slurm\n    browser\n    fakegpu\n")
    items = pytester.getitems(
        """
        import pytest

        @pytest.mark.docker
        def test_engine(): pass

        @pytest.mark.slurm
        @pytest.mark.browser
        def test_cluster_and_chromium(): pass

        @pytest.mark.fakegpu
        def test_fake_driver(): pass

        def test_pure(): pass
        """
    )
    engine, cluster, _, _ = (item.nodeid for item in items)
    assert needing_the_set_up(items, lane=pytester.path) == [
        f"{engine} (docker)",
        f"{cluster} (browser, slurm)",
    ]
    assert needing_the_set_up(items, lane=pytester.path / "elsewhere") == []


def test_an_argument_named_like_a_fixture_implies_no_marker(pytester: pytest.Pytester) -> None:
    """`registry="baidu"` parametrized is a registry's name, not the local registry: the test ran
    nowhere under `-m "not registry"` (the lent GPU machine's selection)."""
    items = pytester.getitems(
        """
        import pytest

        @pytest.fixture
        def registry(): pass

        @pytest.fixture
        def docker_client(): pass

        def test_both(registry, docker_client): pass

        @pytest.mark.parametrize("registry", ["baidu", "dockerhub"])
        def test_named(registry): pass
        """
    )
    assert [sorted(implied_markers(item)) for item in items] == [["docker", "registry"], [], []]
