"""The unit lane refuses, at collection, a test that needs what `scripts/dev setup` starts."""

from __future__ import annotations

import pytest

from tests.lanes import needing_the_set_up


@pytest.hookimpl(trylast=True)  # after tests/conftest.py has marked what each test's fixtures need
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    found = needing_the_set_up(items)
    if found:
        raise pytest.UsageError(
            "tests/unit runs without what `scripts/dev setup` starts; move these to "
            "tests/integration:\n  " + "\n  ".join(found)
        )
