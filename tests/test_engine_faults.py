"""A misbehaving engine (a fake Engine API on a unix socket, a peer for the real docker SDK):
whatever it answers, envcheck exits with a documented code and one screen, never a traceback.

Issue #23: a non-chunked pull answer raised docker-py's JSONDecodeError out of `pull-image`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inprocess import envcheck
from tests.servers import ENGINE_VERSION, Answer, FakeEngine

REF = "127.0.0.1:5000/envcheck-test/busybox:1"
# What the real dockerd answered to GET /distribution/{REF}/json for the test registry's image.
DISTRIBUTION = {
    "Descriptor": {
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "digest": "sha256:eefa0937cd87770e2a6d55f7fb8c4fbe89953f6f4e406bfff57395c74aa0d16c",
        "size": 527,
    },
    "Platforms": [{"architecture": "amd64", "os": "linux"}],
}


def engine_routes(pull: Answer) -> dict[tuple[str, str], Answer]:
    return {
        ("GET", "/_ping"): Answer(body=b"OK", content_type="text/plain"),
        ("GET", "/version"): ENGINE_VERSION,
        ("GET", "/distribution/"): Answer(body=json.dumps(DISTRIBUTION).encode()),
        ("POST", "/images/create"): pull,
    }


@pytest.fixture
def engine_at(tmp_path: Path) -> Iterator[list[FakeEngine]]:
    started: list[FakeEngine] = []
    yield started
    for engine in started:
        engine.close()


PULL_ANSWERS = {
    "not-chunked-not-json": Answer(body=b"not json at all"),
    "not-chunked-html": Answer(body=b"<html>proxy error</html>", content_type="text/html"),
    "chunked-not-json": Answer(body=b"{broken", chunked=True),
    "chunked-not-objects": Answer(body=b'[1]\n"x"\n3\n', chunked=True),
    "error-detail-a-list": Answer(body=b'{"errorDetail": [1]}\n', chunked=True),
    "progress-detail-a-list": Answer(
        body=b'{"id": "a", "status": "Downloading", "progressDetail": [1]}\n', chunked=True
    ),
    "nested-too-deep": Answer(body=b"[" * 100_000 + b"]" * 100_000),
}


@pytest.mark.parametrize("answer", PULL_ANSWERS.values(), ids=PULL_ANSWERS.keys())
def test_a_pull_answer_that_is_not_events_is_exit_4_on_one_screen(
    tmp_path: Path, engine_at: list[FakeEngine], answer: Answer
) -> None:
    engine = FakeEngine(tmp_path / "docker.sock", engine_routes(answer))
    engine_at.append(engine)
    run = envcheck("pull-image", "--image", REF, env={"DOCKER_HOST": engine.host})
    assert run.returncode == 4, run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert "envcheck: error: " in run.stderr and len(run.stderr.splitlines()) <= 12
    assert any(r.startswith("POST ") and "/images/create" in r for r in engine.requests)


FORGED = "boom\n::warning::forged by the engine\x1b]0;title\x07\u202e"


def test_an_engines_error_text_is_shown_never_obeyed(
    tmp_path: Path, engine_at: list[FakeEngine]
) -> None:
    """#23.2: the error printer wrote engine and registry texts raw: a line starting
    `::warning::` became a workflow command, OSC/ESC and bidi reached the CI log."""
    body = json.dumps({"message": FORGED}).encode()
    engine = FakeEngine(tmp_path / "docker.sock", engine_routes(Answer(500, body)))
    engine_at.append(engine)
    run = envcheck("pull-image", "--image", REF, env={"DOCKER_HOST": engine.host})
    assert run.returncode == 4, run.stderr
    assert "forged by the engine" in run.stderr
    assert not any(line.lstrip().startswith("::") for line in run.stderr.splitlines())
    assert "\x1b" not in run.stderr and "\x07" not in run.stderr and "\u202e" not in run.stderr
