"""One module per subcommand: `register(subparsers)` and `run(args, env) -> int`, `env` the
`envcheck.contracts.command_env.Environment` it reads and writes (never `sys.std*`,
`os.environ`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from envcheck.contracts.errors import UsageError

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment


def add_choice_arguments(group: argparse._ArgumentGroup, registry_note: str = "") -> None:
    """The flags that choose what to judge and which image: shared by doctor and pull-image."""
    group.add_argument(
        "--matrix",
        metavar="DIR",
        help="compatibility matrix folder (default: ENVCHECK_MATRIX, else the shipped one)",
    )
    group.add_argument(
        "--python",
        metavar="PATH",
        help="the interpreter whose Paddle to inspect (default: the active venv, else the "
        "active conda environment, else envcheck's own if it has Paddle, else the first python3 "
        "on PATH with Paddle)",
    )
    group.add_argument(
        "--paddle",
        metavar="VERSION",
        help="Paddle release to choose the image for (default: the newest in the matrix)",
    )
    group.add_argument(
        "--registry",
        metavar="NAME",
        default="dockerhub",
        help="registry, a name from the matrix: dockerhub (default), baidu (Baidu's mirror "
        f"of 3.x) or baidu-legacy (registry.baidubce.com, 2.x){registry_note}",
    )


def stdout_format(args: argparse.Namespace, env: Environment, flags: tuple[str, ...]) -> str | None:
    """The one format that takes stdout: `--json`, or a file flag of `flags` naming stdout (`-`,
    `/dev/stdout`, the file stdout already is). None: the text report does. As `--json` always
    did (and `kubectl -o`, `gh --json`), a format sent to stdout is all that stdout holds:
    `--junit - | xmllint -` must parse. Two formats for one stdout are a UsageError (exit 2)."""
    from envcheck.edges.userfiles import names_stdout

    takers = ["--json"] if getattr(args, "json", False) else []
    takers += [
        f"--{flag.replace('_', '-')} {getattr(args, flag)}"
        for flag in flags
        if getattr(args, flag, None) and names_stdout(env.path(getattr(args, flag)), env)
    ]
    if len(takers) > 1:
        raise UsageError(
            f"{' and '.join(takers)} {'both' if len(takers) == 2 else 'all'} write to stdout, "
            "which holds one document",
            hint="give all but one of them a file path",
        )
    return takers[0] if takers else None


def check_outputs(args: argparse.Namespace, env: Environment, flags: tuple[str, ...]) -> None:
    """Every output file flag of `flags` that can be written, before any work: a UsageError
    (exit 2) at once, not after the probes and the smoke."""
    from envcheck.edges.userfiles import check_output

    for flag in flags:
        path = getattr(args, flag, None)
        if path:
            check_output(env.path(path), flag=f"--{flag.replace('_', '-')}", env=env)
