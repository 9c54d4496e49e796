"""The CUDA driver child of a `doctor` command line, started before anything else is imported.

`cuInit` (~0.2 s on an H100) is the slowest thing the doctor waits for, so envcheck/entry.py
calls `start_early(argv, os.environ)` first thing: when the command line reads as a `doctor` that will probe
this host, the child is on its way while the interpreter imports the rest. The doctor's host
probe `take()`s it (envcheck/probe/host.py `adopt`), and whatever nobody took is reaped by
`discard_early()`. This module and the ones it imports are `os`, `select`, `sys`, `time` and
`_thread` only: `typing`, `threading` and `enum` alone would delay the child by ~15 ms.
"""

from __future__ import annotations

from envcheck.probe.cuda_spawn import TIMEOUT_S, Child, start_cuda_child

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the checkers know it)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

# started here on these variables, not yet taken by a host probe
_EARLY: list[tuple[Mapping[str, str], Child | str]] = []


def start_early(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Start the driver child now, on the variables `env`, when `argv` reads as a `doctor` that
    will probe this host (not `--facts`, not `--help`). A guess, never a decision: a child nobody
    takes is reaped, and a doctor that finds none starts its own."""
    skips = (("--facts", 3), ("-h", 2), ("--help", 3))
    if argv[:1] == ["doctor"] and not any(_names(a, *flag) for a in argv for flag in skips):
        _EARLY.append((env, start_cuda_child({"driver": True}, env, TIMEOUT_S)))


def _names(arg: str, flag: str, shortest: int) -> bool:
    """`arg` is `flag` or the abbreviation of it argparse accepts (`--fac`, `--facts=x`)."""
    given = arg.partition("=")[0]
    return len(given) >= shortest and flag.startswith(given)


def take(env: Mapping[str, str]) -> Child | str | None:
    """The driver child started early on these very variables (a string: why it could not
    start); None when none was (one started on other variables is left to `discard_early`)."""
    return _EARLY.pop()[1] if _EARLY and _EARLY[-1][0] is env else None


def discard_early() -> None:
    """Reap every child started early that no probe took (a bad flag, `--help`)."""
    while _EARLY:
        _, child = _EARLY.pop()
        if isinstance(child, Child):
            child.stop()
