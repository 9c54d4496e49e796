"""Command line: parse, dispatch, map errors to exit codes. Nothing more.

Each subcommand lives in `envcheck/commands/<name>.py` with `register(subparsers)` and
`run(args) -> int`; heavy modules are imported inside `run`, never at start-up.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module

from envcheck import __version__
from envcheck.errors import EnvcheckError
from envcheck.exitcodes import EXIT_CODES_HELP, ExitStatus

COMMANDS = ("doctor", "pull_image", "report")


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad flags already; keep its one-screen message and our exit codes."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="envcheck",
        description="Can this machine really train PaddlePaddle models on its GPU? Proof, and the fix.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"envcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        import_module(f"envcheck.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return ExitStatus.USAGE
    try:
        return int(args.run(args))
    except EnvcheckError as e:
        _print_error(e.message, e.hint)
        return int(e.status)
    except KeyboardInterrupt:
        _print_error("interrupted", None)
        return 130
    except BrokenPipeError:
        return int(ExitStatus.OK)
    except Exception as e:  # noqa: BLE001 - the one place a bug becomes exit 3
        import traceback

        traceback.print_exc(file=sys.stderr)
        _print_error(
            f"internal error: {type(e).__name__}: {e}",
            "this is a bug in envcheck; please report it with the traceback above",
        )
        return int(ExitStatus.INTERNAL)


def _print_error(message: str, hint: str | None) -> None:
    print(f"envcheck: error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
