"""Writing a rendered report to the file a flag named (`--junit FILE`, `--markdown FILE`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from envcheck.errors import UsageError


def write_report_file(path: str, text: str, *, flag: str) -> None:
    """Write `text` to `path` atomically; an unwritable path is bad input (exit 2), named by flag.

    Atomic (temp file + rename) because CI uploads whatever is there when a job is cancelled:
    a half-written JUnit file makes the importer fail on the whole run.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the report from others
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise UsageError(
            f"cannot write {flag} {path}: {e.strerror or e}",
            hint=f"give {flag} a path in an existing, writable directory",
        ) from e


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
