"""Reading a file that must be a regular file, bounded, never waited on: the one reader of the
files envcheck opens by name (a Paddle version file, the docker client's files, the matrix's
TOML files, `--facts`, `--baseline`, saved reports). A standard-library helper every layer may
use: the matrix reads its own folder, the edges the files a user names.

A FIFO planted where a file should be blocks a plain `open` forever (nothing ever writes), and
`/dev/zero` never ends: the file is opened with O_NONBLOCK, checked with fstat before a byte is
read, and read up to a limit.
"""

from __future__ import annotations

import errno
import os
import stat


def read_regular(path: str | os.PathLike[str], limit: int, *, follow: bool = True) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them. Raises OSError: the
    file's own, ELOOP for a link when not `follow`, EINVAL for not a regular file (its kind in
    the message: "not a regular file: a FIFO"), EFBIG over `limit`."""
    return read_regular_stat(path, limit, follow=follow)[0]


def read_regular_stat(
    path: str | os.PathLike[str], limit: int, *, follow: bool = True
) -> tuple[bytes, os.stat_result]:
    """As `read_regular`, with the fstat of what was read (who owns it, who may write it)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file: {file_kind(info)}")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes")
        os.set_blocking(fd, True)
        with open(fd, "rb", closefd=False) as f:
            # its size, not the limit: read(16 MiB) allocates 16 MiB, per report of a fleet
            data = f.read(info.st_size + 1)
            if len(data) > info.st_size:  # it grew since fstat, or has no size (/proc)
                data += f.read(limit + 1 - len(data))
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew since fstat
        raise OSError(errno.EFBIG, f"larger than {limit} bytes")
    return data, info


def file_kind(info: os.stat_result) -> str:
    """What `info` is, in words: "a FIFO", "a directory", "a regular file", …"""
    mode = info.st_mode
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"  # pragma: no cover - every file type is listed above
