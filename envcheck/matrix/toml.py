"""`tomllib`, or its backport `tomli` on Python 3.10 (the Python of Paddle's official images).

Imported where a TOML file is parsed, when it is: a doctor whose matrix comes from the parse
cache (envcheck/matrix/cache.py) never needs it, and `tomllib` with the `datetime` it imports
is ~0.4 MB of the doctor's peak memory and ~3 ms of its start.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the Python 3.10 test run
    import tomli as tomllib

__all__ = ["tomllib"]
