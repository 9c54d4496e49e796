"""Less noise, plainer words (outside the pull's own lines): a tag's standing said in
one wording, a registry failure in one line with the whole error under --explain and in the
JSON, and the source tree saying why in words, never by a number of a tracker it does not hold."""

from __future__ import annotations

import io
import os
import re
import subprocess

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.contracts.record import replace
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.render.text import render_plain
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.runner.check import smoke_check
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s
from tests.paths import ROOT
from tests.smoke_host import CPU_CHOICE, NO_GPU_HOST


def test_an_unconfirmed_tag_is_said_in_the_words_of_its_image_line() -> None:
    """Before: "(tag from Paddle's issue tracker, not confirmed by an official source)" on the
    image line and, under --explain, "the matrix marks this tag UNCONFIRMED (seen only in
    third-party material)"."""
    matrix = load_matrix()
    host = host_from_document(s.host(driver=s.driver("580.159.04", "13.0"), gpus=[s.H100]))
    image = select_image(host, matrix)
    assert image.ref and not image.confirmed and image.source
    report = Report(host=host, findings=tuple(judge(Context(host, matrix, image))), image=image)
    out = io.StringIO()
    render_plain(report, out, explain=True)
    text = out.getvalue()
    selected = next(f.message for f in report.findings if f.id == "image.selected")
    standing = selected[selected.index("(tag ") + len("(tag ") : selected.index(")")]
    assert f"  note: tag {standing}\n" in text
    assert "UNCONFIRMED" not in text and "third-party" not in text


@pytest.mark.docker  # the real engine answers the pull
def test_a_registry_failure_is_one_line_and_the_whole_error_under_explain() -> None:
    """Before: the pull's whole error, its reference three times, as the message (22 lines at
    80 columns)."""
    ref = "127.0.0.1:1/envcheck-test/paddle-cpu:3.3.1"
    doc, findings = smoke_check(
        NO_GPU_HOST, replace(CPU_CHOICE, ref=ref), SmokeOptions(quiet=True, variables=os.environ)
    )
    (unavailable,) = (f for f in findings if f.id == "smoke.image-unavailable")
    assert unavailable.message.startswith(f"image {ref} unavailable (connection refused); ran ")
    assert unavailable.message.count(ref) == 1
    detail = unavailable.observed["detail"]
    assert "dial tcp 127.0.0.1:1" in detail and f"could not pull {ref}" in detail
    report = Report(host=NO_GPU_HOST, findings=(unavailable,), smoke=doc)
    plain, explained = io.StringIO(), io.StringIO()
    render_plain(report, plain, width=80)
    render_plain(report, explained, width=80, explain=True)
    assert (
        "dial tcp" not in plain.getvalue()
        and "        detail: could not pull" in explained.getvalue()
    )


# -- no tracker numbers: the reason in words ----------------------------------------------------
# The project's issue tracker is not in the repository: a number in it tells the next maintainer
# nothing. A public source is cited with its project (`Paddle#77102`, `PR #746` of a
# named project, `PaddleMIX#312`), which these patterns leave alone; so are issues of 4+ digits.

SCANNED = ("envcheck/", "bench/", "scripts/", "docs/", "tests/", "matrix/", ".github/")
SCANNED_FILES = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "pyproject.toml")
# `#` and one to three digits, perhaps an item (`.N`, a letter), not glued to a project's name
# (`Paddle#77102`), a URL fragment or an HTML entity, nor a pull request (`PR #746`); "issue" or
# "issues" and such a number, `#` or not; a test named after an issue's item.
TRACKER = re.compile(
    r"(?<![\w/&#])(?<!PR )#\d{1,3}(?:\.\d+)*[a-z]?(?![\w-])"
    r"|\b[Ii]ssues? #?\d{1,3}(?:\.\d+)*(?!\d)"
    r"|\bdef test_\d+_\d+_|\bdef test_\w*issue_?\d{1,3}(?!\d)"  # test_10_1_…, test_…_issue10_8
)
# Numbered things that are not issues of ours, quoted as their source prints them.
NOT_OURS = (
    "hook #6",  # runc: "error running createContainer hook #6" (the NVIDIA toolkit's hook)
    "runner #3",  # a self-hosted runner's name, as GitHub Actions sets RUNNER_NAME
)


def tracker_references(text: str) -> list[str]:
    """The tracker references of ours in `text`, one `line: text` per line that has one."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        plain = line
        for quoted in NOT_OURS:
            plain = plain.replace(quoted, "")
        if TRACKER.search(plain):
            found.append(f"{number}: {line.strip()}")
    return found


def _scanned() -> dict[str, str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=30,
    )
    texts = {}
    for name in out.stdout.decode().split("\0"):
        path = ROOT / name
        if not (name.startswith(SCANNED) or name in SCANNED_FILES) or not path.is_file():
            continue
        if name.startswith("tests/data/"):
            continue  # recordings keep what the recorded machine printed
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a picture
    return texts


def test_no_tracker_number_stands_in_for_a_reason() -> None:
    found = [
        f"{name}:{hit}"
        for name, text in sorted(_scanned().items())
        for hit in tracker_references(text)
    ]
    assert not found, "say why in words, not by a tracker number:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "    # see #" + "12",
        "x = 1  # shown, never obeyed (#" + "23.2)",
        '    """#' + "27.3: `main` builds only the subcommand",
        "a fix (#" + "26.6a): the rules",
        "the outside fault campaign of issue #" + "23",
        "SIGTERM unwinds like Ctrl-C (issue " + "9.4).",
        "Issue " + "10, one scenario per item",
        "def test_" + "10_1_gtx1080_never_gets_the_cu129_image() -> None:",
        "def test_gpus_are_named_" + "issue10_8(shipped: Matrix) -> None:",
    ],
)
def test_a_tracker_reference_is_found(line: str) -> None:
    assert tracker_references(line) == [f"1: {line.strip()}"]


@pytest.mark.parametrize(
    "line",
    [
        "3.2.0 cu129 lacks 61 (PaddleX#4682); nf-core/proteinfold#349",
        "3P (rapids-cmake PR #746, xgboost PR #11187)",
        "PaddlePaddle/Paddle issues #73687, #73937; PaddleX #4285 / Paddle #73687",
        "def test_paddle31_cu126_wheel_lacks_sm120_issue73687() -> None:",
        "error running createContainer hook #6: exit status 1",
        '"RUNNER_NAME": "gpu runner #3",',
        "color: #1f2328; background: #fff; &#160;",
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars",
        "# 2 GPUs, #!/bin/sh, `#` comments",
    ],
)
def test_a_public_citation_or_a_quoted_number_is_not_ours(line: str) -> None:
    assert tracker_references(line) == []
