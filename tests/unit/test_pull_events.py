"""Folding the engine's pull stream into per-layer progress, and reading its error words.
Events and messages recorded from the real engine (Docker 20.10, see tests/data)."""

from __future__ import annotations

import pytest

from envcheck.contracts.pull_events import PullProgress, classify_engine_error
from envcheck.digest import short_id
from tests.pull_samples import DIGEST, EVENTS


def test_recorded_pull_ends_with_every_layer_done_and_the_digest() -> None:
    progress = PullProgress()
    changed = [progress.apply(e) for e in EVENTS]
    assert progress.digest == DIGEST
    assert (
        progress.status == "Downloaded newer image for 127.0.0.1:5000/envcheck-test/busybox:layers"
    )
    assert progress.error is None
    assert [layer.phase for layer in progress.layers.values()] == [
        "exists",
        "complete",
        "complete",
        "complete",
    ]
    assert {c.id for c in changed if c} == set(progress.layers)
    sizes = {layer.id: layer.size for layer in progress.layers.values()}
    assert sizes["1e332d71d083"] == 4195775  # the engine's total, as no manifest size was given


def test_sizes_from_the_manifest_give_the_total_before_the_first_byte() -> None:
    progress = PullProgress({"sha256:1e332d71d083aa": 4195775, "sha256:e46a45083e9abb": 4195778})
    assert progress.total_work == 2 * (4195775 + 4195778)
    assert progress.work_done == 0
    assert set(progress.layers) == {short_id("sha256:1e332d71d083aa"), "e46a45083e9a"}


def test_work_done_only_grows_through_download_then_extraction() -> None:
    progress = PullProgress()
    values: list[int] = []
    for event in EVENTS:
        progress.apply(event)
        layer = progress.layers.get("1e332d71d083")
        if layer is not None:
            values.append(layer.work_done)
    assert values == sorted(values)
    assert values[-1] == 2 * 4195775


def test_an_error_event_is_kept_not_raised() -> None:
    progress = PullProgress()
    progress.apply({"errorDetail": {"message": "unexpected EOF"}, "error": "unexpected EOF"})
    assert progress.error == "unexpected EOF"


def test_the_engines_own_retry_resets_the_layer() -> None:
    progress = PullProgress()
    progress.apply(
        {"id": "abc", "status": "Downloading", "progressDetail": {"current": 10, "total": 100}}
    )
    layer = progress.apply({"id": "abc", "status": "Retrying in 5 seconds", "progressDetail": {}})
    assert layer is not None and layer.note == "Retrying in 5 seconds" and layer.downloaded == 0


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (
            "manifest for 127.0.0.1:5000/envcheck-test/busybox:nope not found: manifest unknown: manifest unknown",
            "not-found",
        ),
        (
            'Get "http://127.0.0.1:5999/v2/": dial tcp 127.0.0.1:5999: connect: connection refused',
            "transient",
        ),
        ("received unexpected HTTP status: 500 Internal Server Error", "transient"),
        ('Head "http://127.0.0.1:41234/v2/x/manifests/1": no basic auth credentials', "auth"),
        (
            "pull access denied for foo/bar, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
            "auth",
        ),
        (
            "failed to register layer: Error processing tar file(exit status 1): write /usr/lib/x: no space left on device",
            "no-space",
        ),
        ("no matching manifest for linux/amd64 in the manifest list entries", "platform"),
        ("unexpected EOF", "transient"),
        ("toomanyrequests: You have reached your pull rate limit.", "transient"),
        ("failed to register layer: invalid tar header", "other"),
    ],
    ids=[
        "404-manifest-unknown",
        "registry-down",
        "http-500",
        "htpasswd-401",
        "hub-denied",
        "disk-full",
        "arm-only",
        "cut-stream",
        "hub-rate-limit",
        "bad-tar",
    ],
)
def test_engine_error_words(message: str, kind: str) -> None:
    assert classify_engine_error(message) == kind
