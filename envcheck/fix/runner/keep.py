"""The files of the distributions a fix removes or replaces, kept in its record before the first
change, put back from there (no network, no index: a build from a deleted wheel, another CUDA
variant's index or a conda package comes back as it was), and the proof by files that they are.

A kept file is a hard link where the record shares the target's file system (pip unlinks a file
before it writes or removes it, so the link keeps the old bytes for free), else a copy.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

from envcheck.contracts.record import record
from envcheck.fix.runner.journal import Journal, problem, write_whole
from envcheck.fix.runner.site import Dist, Site
from envcheck.fix.runner.trust import inside, kept_manifest

MANIFEST = "manifest.json"


@record
class Kept:
    """One kept file: where it lives in the target, its copy in the record, and its RECORD hash."""

    path: str
    copy: str  # relative to the kept folder; "" for a symbolic link
    mode: int
    link: str | None = None  # a symbolic link's target
    hash: str | None = None  # "sha256=<urlsafe b64>" from RECORD


def keep(
    dists: Sequence[Dist], folder: Path, prefix: str, copied: Sequence[str] = ()
) -> list[Kept]:
    """Every existing file of `dists` inside `prefix` into `folder` (made here), with its
    manifest written last: a folder without one was never complete. A file outside the prefix
    (a system site-packages a venv sees) is none pip changes there, and none the rollback
    may touch."""
    files = folder / "files"
    _ensure(files)
    kept: list[Kept] = []
    seen: set[str] = set()
    for dist in dists:
        for path, mode, digest in dist.files:
            if path in seen or not inside(path, prefix):  # two builds list the same files
                continue
            seen.add(path)
            kept += _keep_one(path, f"{mode}={digest}" if mode and digest else None, files, kept)
    for path in copied:  # files pip rewrites in place: a link would change with them
        if path not in seen and inside(path, prefix):
            seen.add(path)
            kept += _keep_one(path, None, files, kept, link=False)
    write_whole(folder / MANIFEST, json.dumps([_doc(k) for k in kept]))
    return kept


def _keep_one(
    path: str, digest: str | None, files: Path, kept: list[Kept], *, link: bool = True
) -> list[Kept]:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return []  # RECORD names it, the target does not hold it: nothing to put back
    except OSError as e:
        raise problem(f"cannot read {path}", e) from e
    if stat.S_ISLNK(info.st_mode):
        return [Kept(path, "", info.st_mode, os.readlink(path), digest)]
    if not stat.S_ISREG(info.st_mode):
        return []
    name = str(len(kept))
    try:
        try:
            if not link:
                raise OSError(errno.EXDEV, "a copy asked for")
            os.link(path, files / name)
        except OSError:  # another file system, or links refused: a copy
            shutil.copy2(path, files / name, follow_symlinks=False)
    except OSError as e:
        raise problem(f"cannot keep {path} in the record", e) from e
    return [Kept(path, name, info.st_mode, None, digest)]


def editable_links(site: Site, names: Iterable[str]) -> list[str]:
    """An old-style editable install's own files (`setup.py develop`): `<name>.egg-link` and
    the `easy-install.pth` line that puts its project on sys.path. No RECORD names them (its
    metadata lives in the project), yet pip removes them; kept by copy, as pip rewrites
    easy-install.pth in place."""
    wanted = {canonicalize_name(n) for n in names}
    found: list[str] = []
    for folder in sorted({path for key, path in site.paths if key in ("purelib", "platlib")}):
        links = [
            p
            for p in sorted(Path(folder).glob("*.egg-link"))
            if canonicalize_name(p.stem) in wanted
        ]
        found += [str(p) for p in links]
        if links and (Path(folder) / "easy-install.pth").is_file():
            found.append(str(Path(folder) / "easy-install.pth"))
    return found


def load(journal: Journal) -> list[Kept]:
    """The manifest `keep` wrote for `journal`'s record, as sealed in the journal and checked
    (envcheck/fix/runner/trust.py); [] when nothing was kept."""
    return [
        Kept(d["path"], d["copy"], d["mode"], d.get("link"), d.get("hash"))
        for d in kept_manifest(journal)
    ]


def restore(kept: Iterable[Kept], folder: Path) -> list[str]:
    """Each kept file back where it was, replacing whatever is there now; the files that could not
    be put back, with why (a full or read-only file system), [] when all are back."""
    problems: list[str] = []
    for k in kept:
        try:
            _put_back(k, folder / "files")
        except OSError as e:
            problems.append(f"{k.path}: {e.strerror or e}")
    return problems


def _put_back(k: Kept, files: Path) -> None:
    os.makedirs(os.path.dirname(k.path), exist_ok=True)
    if k.link is not None:
        if os.path.islink(k.path) and os.readlink(k.path) == k.link:
            return
        _remove(k.path)
        os.symlink(k.link, k.path)
        return
    source = files / k.copy
    if not stat.S_ISREG(os.lstat(source).st_mode):
        raise OSError(errno.EINVAL, f"its kept copy {source} is not a regular file")
    try:
        if os.path.samefile(source, k.path):
            _set_mode(k.path, k.mode)
            return
    except OSError:
        pass
    temporary = f"{k.path}.envcheck-restore"
    _remove(temporary)
    try:
        os.link(source, temporary)  # link(2) never follows a link: the checked file itself
    except OSError:
        shutil.copyfile(source, temporary, follow_symlinks=False)
    _set_mode(temporary, k.mode)
    os.replace(temporary, k.path)


def _set_mode(path: str, mode: int) -> None:
    """The kept permission bits, never setuid, setgid or sticky, set on the file itself (a link
    put there since is refused, never followed)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        os.fchmod(fd, stat.S_IMODE(mode) & 0o777)
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def differences(kept: Iterable[Kept], folder: Path) -> list[str]:
    """Where the target's files are not the ones kept in the record (`folder`): a kept file
    missing, or not byte for byte its kept copy; a kept link not pointing where it did. [] when
    every kept file is back. The kept bytes are the proof, not RECORD: a file that differed from
    its RECORD before the fix (edited, patched in place) is back when it is as it was."""
    found: list[str] = []
    for k in kept:
        if k.link is not None:
            if not os.path.islink(k.path) or os.readlink(k.path) != k.link:
                found.append(f"{k.path} is not the link it was (-> {k.link})")
            continue
        copy = folder / "files" / k.copy
        if not os.path.lexists(k.path):
            found.append(f"{k.path} is missing")
        elif not _same_file(k.path, str(copy)) and _sha256(k.path) != _sha256(str(copy)):
            found.append(f"{k.path} differs from the kept file")
    return found


def _same_file(path: str, other: str) -> bool:
    try:
        return os.path.samefile(path, other) and not os.path.islink(path)
    except OSError:
        return False


def _sha256(path: str) -> str | None:
    """The file's RECORD-style digest; None where it is no regular file (a link, a FIFO: never
    followed nor waited on) or cannot be read."""
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            os.set_blocking(fd, True)
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def remove_files(paths: Iterable[str], roots: Iterable[str]) -> list[str]:
    """Files a half-done install left behind (in no kept distribution), and the folders they
    leave empty up to the install folders `roots`; what could not go."""
    problems: list[str] = []
    paths = list(paths)
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            problems.append(f"{path}: {e.strerror or e}")
    prune_folders(paths, roots)
    return problems


def prune_folders(paths: Iterable[str], roots: Iterable[str]) -> None:
    """The folders of `paths` left empty (pip keeps a namespace folder such as `google/` when it
    removes what was in it), up to the install folders `roots`."""
    stop = {os.path.normpath(r) for r in roots}
    folders: set[str] = set()
    for path in paths:
        parent = os.path.dirname(path)
        while parent not in stop and parent != os.path.dirname(parent):
            folders.add(parent)
            parent = os.path.dirname(parent)
    for folder in sorted(folders, key=len, reverse=True):  # the deepest first
        if os.path.isdir(folder) and not os.path.islink(folder):
            try:
                os.rmdir(folder)
            except OSError:
                pass  # not empty: something else lives there


def _doc(k: Kept) -> dict[str, object]:
    return {"path": k.path, "copy": k.copy, "mode": k.mode, "link": k.link, "hash": k.hash}


def _ensure(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise problem(f"cannot make {folder}", e) from e
