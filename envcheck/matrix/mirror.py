"""A mirror of Paddle's package index (`ENVCHECK_PADDLE_INDEX`, `envcheck fix --paddle-index`).

The matrix rows are the one source of which build a host gets and where pip finds it: each
build's `pip` command, cited. A mirror replaces Paddle's own base URL in those commands as the
matrix is loaded, so every reader (the doctor's advice, the smoke's fixes, `fix`'s plan and its
rollback) names the same URL.
"""

from __future__ import annotations

from collections.abc import Mapping

from envcheck.contracts.errors import UsageError
from envcheck.contracts.record import replace
from envcheck.matrix.model import Matrix

PADDLE_INDEX = "https://www.paddlepaddle.org.cn"  # Paddle's own index, as the matrix rows cite it
PADDLE_INDEX_ENV = "ENVCHECK_PADDLE_INDEX"


def paddle_index(url: str | None, where: str = PADDLE_INDEX_ENV) -> str:
    """The base URL to install Paddle from: `url` (a mirror), else Paddle's own."""
    if not url:
        return PADDLE_INDEX
    # a control character or a bidi override (ESC, U+202E) would be echoed into every command
    if (
        not url.startswith(("https://", "http://", "file://"))
        or not url.isprintable()
        or " " in url
    ):
        raise UsageError(
            f"{where} {url!r} is not a URL",
            hint=f"give the base of Paddle's index or its mirror, e.g. {PADDLE_INDEX}",
        )
    return url.rstrip("/")


def index_of(environ: Mapping[str, str]) -> str:
    return paddle_index(environ.get(PADDLE_INDEX_ENV))


def on_index(matrix: Matrix, base: str) -> Matrix:
    """`matrix` with every build's command naming `base` in place of Paddle's own index."""
    if base == PADDLE_INDEX:
        return matrix
    old = f"{PADDLE_INDEX}/"
    return replace(
        matrix,
        builds=tuple(replace(b, pip=b.pip.replace(old, f"{base}/")) for b in matrix.builds),
    )
