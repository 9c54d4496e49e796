"""Where a matrix fact comes from, in words. The rows' `source` keys are an open
list of citation tags (each new issue, PR or docs page adds one); the kinds they name are closed
(`SourceKind`), and every tag the shipped matrix cites must name one, or a user's report reads as
"reported by users" by accident."""

from __future__ import annotations

import pytest

from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR
from envcheck.matrix.provenance import plain_source
from tests.matrix_rows import all_rows

USER_REPORT = "3P"  # the sheet's tag for third-party reports: the one tag that names no kind


def test_every_tag_the_shipped_matrix_cites_names_its_kind() -> None:
    m = load_matrix(str(REPO_DIR))
    cited = {key.strip() for row in all_rows(m) for key in row.source.split(",")}
    unplaced = plain_source(USER_REPORT, True)
    assert sorted(k for k in cited if k != USER_REPORT and plain_source(k, True) == unplaced) == []
    assert len(cited) > 20  # the walk saw the rows


@pytest.mark.parametrize(
    ("source", "confirmed", "said"),
    [
        ("D-2.6, W-262", True, "confirmed by Paddle's install docs and measured from the wheel"),
        ("MEASURED W-262", True, "measured from the wheel"),
        ("NV-RN, NV-MVC", True, "confirmed by NVIDIA's documentation"),
        (
            "Paddle#76558, 3P",
            False,
            "from Paddle's issue tracker, not confirmed by an official source",
        ),
        ("3P", False, "reported by users, not in the official docs"),
    ],
)
def test_plain_source_says_the_kind(source: str, confirmed: bool, said: str) -> None:
    assert plain_source(source, confirmed) == said
