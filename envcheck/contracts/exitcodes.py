"""Process exit codes: the contract scripts and CI gates rely on (documented in --help, the man
page's EXIT STATUS, the README and the GitHub action's README: all from `EXIT_CODES`)."""

from __future__ import annotations

from enum import IntEnum, unique


@unique
class ExitStatus(IntEnum):
    OK = 0  # pass (warnings allowed)
    INCOMPATIBLE = 1  # the host cannot run the chosen Paddle build/image
    USAGE = 2  # bad flags or bad input (facts file, matrix, image reference)
    INTERNAL = 3  # a bug in envcheck
    ENVIRONMENT = 4  # could not act: daemon down, registry unreachable, no space
    SMOKE_FAILED = 5  # the smoke training crashed, timed out or did not learn
    CPU_FALLBACK = 6  # the smoke "worked" but never touched the GPU
    WRONG_RESULTS = 7  # the smoke ran but computed wrong numbers (known answers, loss)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: everything we created was removed (128 + SIGINT)


EXIT_CODES: tuple[tuple[ExitStatus, str], ...] = (
    (ExitStatus.OK, "pass (warnings allowed)"),
    (ExitStatus.INCOMPATIBLE, "incompatible: a check failed"),
    (ExitStatus.USAGE, "usage or bad input (flags, facts file, matrix, image reference)"),
    (ExitStatus.INTERNAL, "internal error (a bug in envcheck: please report it)"),
    (
        ExitStatus.ENVIRONMENT,
        "environment: could not act (daemon down, registry unreachable, no space)",
    ),
    (ExitStatus.SMOKE_FAILED, "smoke training failed (crash, timeout, loss did not fall)"),
    (
        ExitStatus.CPU_FALLBACK,
        "silent CPU fallback: a GPU was expected but the work ran on the CPU",
    ),
    (
        ExitStatus.WRONG_RESULTS,
        "wrong results: the smoke's known-answer checks or its loss were wrong (e.g. zeros)",
    ),
    (ExitStatus.INTERRUPTED, "interrupted (Ctrl-C, SIGTERM): what envcheck created was removed"),
)

EXIT_CODES_HELP = "exit codes:\n" + "\n".join(
    f"  {int(code)}  {words}" for code, words in EXIT_CODES
)
