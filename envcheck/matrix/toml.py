"""`tomllib`, or its backport `tomli` on Python 3.10 (the Python of Paddle's official images)."""

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the Python 3.10 test run
    import tomli as tomllib

__all__ = ["tomllib"]
