"""What a failed registry read means: each error one screen, with its exit status."""

from __future__ import annotations

from envcheck.contracts.errors import EnvironmentProblem, UsageError
from envcheck.image.reference import DOCKER_HUB


class RegistryError(EnvironmentProblem):
    """The registry could not be read (exit 4)."""

    transient = False


class RegistryUnavailable(RegistryError):
    """5xx, 429, connection refused/reset, timeouts: worth a retry, then the mirror.
    `retry` is False when waiting cannot help (the name does not resolve): straight to the mirror."""

    transient = True

    def __init__(self, message: str, hint: str | None = None, *, retry: bool = True) -> None:
        super().__init__(message, hint)
        self.retry = retry


class RegistryAuthRequired(RegistryError):
    """401/403: the registry wants a login the engine does not have."""


class ManifestNotFound(UsageError):
    """The tag (or digest, or repository) does not exist on that registry (exit 2)."""


def login_hint(registry: str) -> str:
    command = "docker login" if registry == DOCKER_HUB else f"docker login {registry}"
    return f"log in to {registry}: `{command}` (then run envcheck again)"
