"""The engine's pull failures as one-screen errors with documented exit codes (pure mapping of
the messages the real engine sends; see tests/unit/test_pull_events.py for where they come from)."""

from __future__ import annotations

import pytest

from envcheck.contracts.exitcodes import ExitStatus
from envcheck.engine.docker_adapter import PullFailed, pull_error
from envcheck.image.checks import ImageRefused
from envcheck.registry.errors import ManifestNotFound, RegistryAuthRequired, RegistryUnavailable

REF, REGISTRY = "127.0.0.1:5000/envcheck-test/busybox:1", "127.0.0.1:5000"


@pytest.mark.parametrize(
    ("message", "status_code", "kind", "status", "hint_has"),
    [
        (
            "failed to register layer: write /x: no space left on device",
            500,
            type(None),
            ExitStatus.ENVIRONMENT,
            "docker system prune",
        ),
        (
            'Head "http://127.0.0.1:5000/v2/x/manifests/1": no basic auth credentials',
            500,
            RegistryAuthRequired,
            ExitStatus.ENVIRONMENT,
            "docker login 127.0.0.1:5000",
        ),
        (
            "manifest for x:1 not found: manifest unknown: manifest unknown",
            404,
            ManifestNotFound,
            ExitStatus.USAGE,
            None,
        ),
        ("something odd", 404, ManifestNotFound, ExitStatus.USAGE, None),
        ("something odd", 401, RegistryAuthRequired, ExitStatus.ENVIRONMENT, "log in to"),
        (
            "no matching manifest for linux/amd64 in the manifest list entries",
            500,
            ImageRefused,
            ExitStatus.INCOMPATIBLE,
            "platform",
        ),
        (
            "received unexpected HTTP status: 503 Service Unavailable",
            500,
            RegistryUnavailable,
            ExitStatus.ENVIRONMENT,
            None,
        ),
        (
            "failed to register layer: invalid tar header",
            500,
            PullFailed,
            ExitStatus.ENVIRONMENT,
            None,
        ),
    ],
    ids=[
        "no-space",
        "auth-words",
        "404-words",
        "404-status",
        "401-status",
        "platform",
        "503",
        "other",
    ],
)
def test_engine_pull_errors_map_to_exit_codes(
    message: str, status_code: int, kind: type, status: int, hint_has: str | None
) -> None:
    error = pull_error(message, ref=REF, registry=REGISTRY, status_code=status_code)
    if kind is not type(None):
        assert isinstance(error, kind)
    assert error.status == status
    assert message in error.message or "no space left on device" in error.message
    if hint_has:
        assert hint_has in (error.hint or "")


def test_only_transient_failures_are_retried() -> None:
    eof = pull_error("unexpected EOF", ref=REF, registry=REGISTRY)
    assert isinstance(eof, RegistryUnavailable) and eof.transient
    # The engine's inspect_distribution of an unresolvable name (recorded, engine 20.10): a retry
    # cannot help, the mirror might.
    unresolved = pull_error(
        'Get "https://nosuchhost.invalid/v2/": dial tcp: lookup nosuchhost.invalid '
        "on 10.255.255.53:53: no such host",
        ref=REF,
        registry=REGISTRY,
        status_code=500,
    )
    assert (
        isinstance(unresolved, RegistryUnavailable)
        and unresolved.transient
        and not unresolved.retry
    )
    other = pull_error("failed to register layer: invalid tar header", ref=REF, registry=REGISTRY)
    assert isinstance(other, PullFailed) and not other.transient


def test_a_broken_engine_stream_is_an_environment_problem() -> None:
    """Any other `requests` failure while acting on the engine (a chunked answer cut short)."""
    import requests

    from envcheck.contracts.errors import EnvironmentProblem
    from envcheck.engine.docker_adapter import translate_errors

    with (
        pytest.raises(EnvironmentProblem, match="connection to the engine broke"),
        translate_errors("starting the smoke"),
    ):
        raise requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead")


def test_the_engines_words_are_quoted_whole_after_the_registry_they_came_from() -> None:
    """Before: `pulling R: the engine answered: …` without the registry, and on a terminal the
    words were folded mid-word and cut at 160 characters, the mirror's name with them."""
    words = (
        'Get "https://mirror.example.internal:5000/v2/": dial tcp 10.1.2.3:5000: connect: '
        "connection refused (a long engine message that goes on past any terminal's width)"
    )
    for error in (
        pull_error(words, ref=REF, registry="mirror.example.internal:5000"),
        pull_error(
            "failed to register layer: " + words, ref=REF, registry="mirror.example.internal:5000"
        ),
    ):
        assert 'from mirror.example.internal:5000: the engine said "' in error.message
        assert error.message.endswith(f'{words}"')


def test_a_failed_step_and_a_pull_note_keep_the_engines_words_on_one_line() -> None:
    from rich.console import Console

    from envcheck.render.activity import PlainActivity
    from envcheck.render.progress import RichDisplay
    from tests.terminal import Tty

    why = "could not pull R: pulling R from mirror.example.internal:5000: " + "x" * 300
    out = Tty()
    plain = PlainActivity(out)
    plain.phase("pulling R")
    plain.failed(why)
    plain.stop()
    assert why in out.getvalue()  # not cut at 160 characters
    out = Tty()
    display = RichDisplay(out, console=Console(file=out, force_terminal=True, width=80))
    display.note(why)
    display.stop()
    assert why in out.getvalue()  # not folded at 80 columns
