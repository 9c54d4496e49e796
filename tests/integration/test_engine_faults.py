"""A misbehaving engine (a fake Engine API on a unix socket, a peer for the real docker SDK):
whatever it answers, envcheck exits with a documented code and one screen, never a traceback.

The first: a non-chunked pull answer raised docker-py's JSONDecodeError out of `pull-image`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults_outside import PULL_ANSWERS, REF, engine_routes
from tests.inprocess import envcheck
from tests.servers import Answer, FakeEngine


@pytest.fixture
def engine_at() -> Iterator[list[FakeEngine]]:
    started: list[FakeEngine] = []
    yield started
    for engine in started:
        engine.close()


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
    """The error printer wrote engine and registry texts raw: a line starting
    `::warning::` became a workflow command, OSC/ESC and bidi reached the CI log."""
    body = json.dumps({"message": FORGED}).encode()
    engine = FakeEngine(tmp_path / "docker.sock", engine_routes(Answer(500, body)))
    engine_at.append(engine)
    run = envcheck("pull-image", "--image", REF, env={"DOCKER_HOST": engine.host})
    assert run.returncode == 4, run.stderr
    assert "forged by the engine" in run.stderr
    assert not any(line.lstrip().startswith("::") for line in run.stderr.splitlines())
    assert "\x1b" not in run.stderr and "\x07" not in run.stderr and "\u202e" not in run.stderr
