"""What a fix run as root (`sudo envcheck fix --yes`, or root fixing a user's venv) wrote into an
environment that a user owns is given back to that user: the fix's own folder (lock, journal,
record) and the files pip installed. Else the owner's next `envcheck fix --yes`, or their own
`pip install`, meets root's files it may not replace.

The owner is the environment's own: the user and group of its prefix (under sudo, the one
SUDO_UID names when they ran it on their venv). Only entries root created or changed during this
run are given back; a link is changed itself, never followed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator


@contextlib.contextmanager
def given_back(prefix: str) -> Iterator[None]:
    """Inside the block root may write into `prefix`; when it ends (however it ends) what root
    wrote there belongs to the prefix's owner again."""
    started = time.time()
    try:
        yield
    finally:
        give_back(prefix, started)


def give_back(prefix: str, since: float) -> int:
    """Every entry under `prefix` that root owns and created or changed since `since` (a second
    of slack for the file system's clock), handed to the prefix's owner; how many were."""
    if os.geteuid() != 0:
        return 0
    try:
        info = os.stat(prefix)
    except OSError:
        return 0
    if info.st_uid == 0:
        return 0  # root's own environment: nothing to give back
    given = 0
    for path in _tree(prefix):
        try:
            entry = os.lstat(path)
            if entry.st_uid == 0 and entry.st_ctime >= since - 1:
                os.lchown(path, info.st_uid, info.st_gid)
                given += 1
        except OSError:
            continue  # gone meanwhile, or a file system that refuses: the next entry
    return given


def _tree(prefix: str) -> Iterator[str]:
    yield prefix
    for folder, folders, files in os.walk(prefix):
        for name in (*folders, *files):
            yield os.path.join(folder, name)
