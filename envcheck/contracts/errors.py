"""The one expected-error type. Each carries its exit status and a "what to do" hint.

The CLI has a single handler that prints `error: <message>` and `hint: <hint>` on one screen
and returns the status; anything else escaping is a bug (exit 3).
"""

from __future__ import annotations

from envcheck.contracts.exitcodes import ExitStatus


class EnvcheckError(Exception):
    """An error the user can act on."""

    status: ExitStatus = ExitStatus.INTERNAL

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(EnvcheckError):
    """Bad flags, bad files, bad references."""

    status = ExitStatus.USAGE


class EnvironmentProblem(EnvcheckError):
    """Could not act on the environment (daemon down, registry unreachable, no space)."""

    status = ExitStatus.ENVIRONMENT


class MatrixError(UsageError):
    """The compatibility matrix files are invalid; `problems` lists every one found."""

    def __init__(self, problems: list[str]) -> None:
        shown = "\n  ".join(problems)
        super().__init__(
            f"invalid compatibility matrix ({len(problems)} problem(s)):\n  {shown}",
            hint="fix the listed entries, or drop --matrix/ENVCHECK_MATRIX to use the shipped matrix",
        )
        self.problems = problems
