"""One module per subcommand: `register(subparsers)` and `run(args, env) -> int`, `env` the
`envcheck.environment.Environment` it reads and writes (never `sys.std*`, `os.environ`)."""

from __future__ import annotations

import argparse


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
        help="the interpreter whose Paddle to inspect (default: this one)",
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
