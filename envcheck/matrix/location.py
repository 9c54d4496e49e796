"""Where the matrix is read from: `--matrix DIR` > `ENVCHECK_MATRIX` > the copy shipped in the
wheel (`envcheck/_matrix`) > the repository's `matrix/` (editable installs).

Standard library only: commands that merely need the folder must not pay for the loader.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

ENV_VAR = "ENVCHECK_MATRIX"
_PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED_DIR = _PACKAGE / "_matrix"
REPO_DIR = _PACKAGE.parent / "matrix"


def matrix_dir(
    path: str | None = None, environ: Mapping[str, str] = MappingProxyType({})
) -> tuple[Path, str]:
    """The directory to load and where that choice came from (for error messages); `environ`:
    the command's variables (none given: the shipped matrix, unless `path`)."""
    if path:
        return Path(path), "--matrix"
    env = environ.get(ENV_VAR)
    if env:
        return Path(env), ENV_VAR
    if SHIPPED_DIR.is_dir():
        return SHIPPED_DIR, "shipped"
    return REPO_DIR, "repository"
