"""Where the matrix is read from: `--matrix DIR` > `ENVCHECK_MATRIX` > the copy shipped in the
wheel (`envcheck/_matrix`) > the repository's `matrix/` (editable installs).

Standard library only: commands that merely need the folder must not pay for the loader.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_VAR = "ENVCHECK_MATRIX"
_PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED_DIR = _PACKAGE / "_matrix"
REPO_DIR = _PACKAGE.parent / "matrix"


def matrix_dir(
    path: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """The directory to load and where that choice came from (for error messages); `environ`:
    the command's variables (None: the process's)."""
    if path:
        return Path(path), "--matrix"
    env = (os.environ if environ is None else environ).get(ENV_VAR)
    if env:
        return Path(env), ENV_VAR
    if SHIPPED_DIR.is_dir():
        return SHIPPED_DIR, "shipped"
    return REPO_DIR, "repository"
