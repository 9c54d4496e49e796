"""Less noise, plainer words (issue 21.11, the parts outside the pull): a tag's standing said in
one wording, and a registry failure in one line with the whole error under --explain and in the
JSON."""

from __future__ import annotations

import io
import os

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
