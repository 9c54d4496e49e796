"""Whether what a fix left on disk is envcheck's own, and what may be done from it.

The trust boundary is the file system's: a journal or record file is read back only where it is
owned by the user running envcheck or by root and neither group nor others may write it, so only
someone who could already run envcheck as that user could have written it. Inside that boundary
a digest over the canonical content is enough (a keyed HMAC would add nothing: its key would sit
beside the journal, readable by whoever may write the journal): it catches a journal cut short
or changed by hand, and, the content holding the prefix's real path and identity (st_dev,
st_ino), one copied or moved with its venv (`cp -r venvA venvB`).

What a trusted journal names is still checked as if a stranger wrote it: each command `--resume`
runs is derived again from the one shape a plan gives a pip step; every path the rollback touches
must resolve inside the prefix; nothing a fix never changes (pip itself) is named; a kept file
comes back without setuid or setgid bits. Each refusal is exit 2, before the first change.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from envcheck.contracts.errors import UsageError
from envcheck.edges.userfiles import read_own_file
from envcheck.fix.plan import PIP_OVERRIDE
from envcheck.fix.runner.journal import OPEN, VERSION, Journal, JournalStep

MAX_JOURNAL = 64 << 20  # a GPU build's strays are tens of thousands of paths
MAX_RECORD = 64 << 20
NEVER_CHANGED = frozenset({"pip"})  # what runs every step and the rollback: a plan never changes it
KEPT_MANIFEST = "kept/manifest.json"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_REQUIREMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(==[A-Za-z0-9][A-Za-z0-9.+!_-]*)?")
_RECORD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PHASES = frozenset({"record", "download", "resolve", "keep", "apply", "verify", "rollback"})
_STATES = frozenset({OPEN, "nothing-changed", "fixed", "rolled-back", "rollback-incomplete"})
_FLAGS = frozenset({PIP_OVERRIDE})


class Untrusted(Exception):
    """Why a file the fix left cannot be trusted, in words."""


def canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sealed(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its digest: the sha256 of its canonical form, binding included."""
    return {**body, "digest": f"sha256:{hashlib.sha256(canonical(body)).hexdigest()}"}


def own_bytes(path: Path, limit: int) -> bytes:
    """The bytes of a file the fix wrote, read only if it is still its own: a regular file (never
    through a link, never a FIFO or device waited on), at most `limit` bytes, owned by this user
    or root, no group or other write. FileNotFoundError passes; anything else is Untrusted."""
    try:
        data, info = read_own_file(path, limit)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Untrusted("it is a symbolic link, not the file envcheck writes") from e
        raise Untrusted(e.strerror or str(e)) from e
    if info.st_uid not in (os.geteuid(), 0):
        raise Untrusted(
            f"it is owned by uid {info.st_uid}, not by you (uid {os.geteuid()}) nor root"
        )
    if info.st_mode & 0o022:
        raise Untrusted(f"group or others may write it (mode {stat.S_IMODE(info.st_mode):o})")
    return data


def file_digest(path: Path) -> str:
    return f"sha256:{hashlib.sha256(own_bytes(path, MAX_RECORD)).hexdigest()}"


def refused(path: Path | str, why: str) -> UsageError:
    return UsageError(
        f"refusing the fix journal {path}: {why}; nothing was changed",
        hint=f"envcheck obeys only a journal it wrote for this environment: look at {path} and "
        "the record it names, and remove it once the environment is as you want it",
    )


def trusted(path: Path, python: str | None) -> Journal | None:
    """The journal at `path` when it is envcheck's own for the prefix it lies in (and for
    `python`, when given), its steps derived again; None when there is none."""
    try:
        data = own_bytes(path, MAX_JOURNAL)
    except FileNotFoundError:
        return None
    except Untrusted as e:
        raise refused(path, str(e)) from e
    try:
        journal = _journal(path, data)
        _check(journal, python)
    except Untrusted as e:
        raise refused(path, str(e)) from e
    return journal


def _journal(path: Path, data: bytes) -> Journal:
    try:
        doc = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Untrusted(f"it is not a whole JSON document (cut short?): {e}") from e
    if not isinstance(doc, dict):
        raise Untrusted("it is not a journal")
    version = doc.get("version")
    if isinstance(version, int) and version > VERSION:
        raise Untrusted(
            f"it was written by a newer envcheck (journal version {version}; this one reads "
            f"{VERSION}): finish that fix with the envcheck that started it"
        )
    if version != VERSION:
        raise Untrusted(
            f"it was written by an older envcheck (journal version {version!r}), without the "
            "binding and digest this one checks"
        )
    digest = doc.pop("digest", None)
    if digest != sealed(doc)["digest"]:
        raise Untrusted("its digest does not match its content (changed by hand, cut short?)")
    try:
        return _from_doc(path, doc)
    except (KeyError, TypeError, ValueError) as e:
        raise Untrusted(f"it is not a journal this envcheck wrote ({e!r})") from e


def _from_doc(path: Path, doc: dict[str, Any]) -> Journal:
    target = doc["target"]
    return Journal(
        str(path),
        _text(doc["python"]),
        _text(target["prefix"]),
        _text(doc["record"]),
        [JournalStep(_texts(s["argv"]), _text(s["what"]), _text(s["state"])) for s in doc["steps"]],
        _text(doc["phase"]),
        _text(doc["state"]),
        int(doc["pid"]),
        _text(doc["started"]),
        None if doc["expect"] is None else _text(doc["expect"]),
        _texts(doc["pip_flags"]),
        list(_texts(doc["added"])),
        list(_texts(doc["strays"])),
        list(_texts(doc["kept"])),
        int(target["dev"]),
        int(target["ino"]),
        {_text(k): _text(v) for k, v in doc["seals"].items()},
    )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value


def _texts(values: object) -> tuple[str, ...]:
    if not isinstance(values, list):
        raise TypeError(f"{values!r} is not a list")
    return tuple(_text(v) for v in values)


def _check(journal: Journal, python: str | None) -> None:
    """What the journal names is a fix of this environment, by envcheck's shapes only."""
    folder = Path(journal.path).parent
    prefix = str(folder.parent)
    if journal.prefix != prefix:
        raise Untrusted(
            f"it was written for {journal.prefix}, not for {prefix} (copied or moved with it?)"
        )
    here = os.stat(prefix)
    if (here.st_dev, here.st_ino) != (journal.dev, journal.ino):
        raise Untrusted(f"it was written for another environment once at {prefix}")
    if python is not None and os.path.realpath(journal.python) != os.path.realpath(python):
        raise Untrusted(f"it was written for the interpreter {journal.python}, not {python}")
    record = Path(journal.record)
    if record.parent != folder / "records" or not _RECORD_NAME.fullmatch(record.name):
        raise Untrusted(f"its record {journal.record} is not a folder of {folder}/records")
    if journal.phase not in _PHASES | {"closed"} or journal.state not in _STATES:
        raise Untrusted(f"its phase {journal.phase!r} or state {journal.state!r} is none of ours")
    if not set(journal.pip_flags) <= _FLAGS:
        raise Untrusted(f"its pip flags {list(journal.pip_flags)} are none a plan gives")
    names = [*journal.kept, *journal.added]
    if not all(_NAME.fullmatch(n) for n in names):
        raise Untrusted(f"it names packages that are no package names: {names}")
    _never({canonicalize_name(n) for n in names})
    for n, step in enumerate(journal.steps, 1):
        step.argv = derive(journal, step.argv, n)
    if python is not None:  # the target as asked now runs every step and the rollback
        journal.python = python
        for step in journal.steps:
            step.argv = (python, *step.argv[1:])
    outside = next((p for p in journal.strays if not inside(p, prefix)), None)
    if outside is not None:
        raise Untrusted(f"it names {outside!r}, outside {prefix}")


def _never(names: set[str]) -> None:
    touched = sorted(names & NEVER_CHANGED)
    if touched:
        raise Untrusted(f"it names {', '.join(touched)}, which a fix never changes")


def step_argv(
    python: str, verb: str, flags: Iterable[str], wheelhouse: str, packages: Iterable[str]
) -> tuple[str, ...]:
    """A journaled pip step, the one shape each verb has: a removal by name; an install from the
    record's wheelhouse only."""
    if verb == "uninstall":
        return (python, "-m", "pip", "uninstall", *flags, "-y", *packages)
    where = ("--no-index", "--find-links", wheelhouse)
    return (python, "-m", "pip", "install", *flags, *where, *packages)


def derive(journal: Journal, argv: tuple[str, ...], n: int) -> tuple[str, ...]:
    """Step `n` built again from its verb and packages; refused unless the journal's argv is
    exactly that (no other interpreter, option, index or file)."""
    verb = argv[3] if len(argv) > 3 else ""
    if verb not in ("uninstall", "install"):
        raise Untrusted(f"its step {n} is not a pip step a fix makes: {list(argv)[:6]}")
    start = 4 + len(journal.pip_flags) + (1 if verb == "uninstall" else 3)
    packages = argv[start:]
    shape = _NAME if verb == "uninstall" else _REQUIREMENT
    if not packages or not all(shape.fullmatch(p) for p in packages):
        raise Untrusted(f"its step {n} names no packages a fix changes: {list(packages)}")
    _never({canonicalize_name(p.split("==")[0]) for p in packages})
    wheelhouse = str(Path(journal.record) / "wheelhouse")
    derived = step_argv(journal.python, verb, journal.pip_flags, wheelhouse, packages)
    if derived != tuple(argv):
        raise Untrusted(f"its step {n} is not the command a fix makes: {' '.join(argv)}")
    return derived


def inside(path: str, prefix: str) -> bool:
    """`path` (its folder resolved; the name itself is replaced, never followed) lies inside the
    real `prefix`."""
    if not os.path.isabs(path) or os.path.basename(path) in ("", ".", ".."):
        return False
    folder = os.path.realpath(os.path.dirname(path))
    return folder == prefix or folder.startswith(prefix.rstrip("/") + "/")


def record_text(journal: Journal, name: str) -> str:
    """A record file read back as envcheck wrote it (its seal in the journal): a record that is
    gone, or not these bytes, is refused (exit 2) before anything changes."""
    path = Path(journal.record) / name
    try:
        data = own_bytes(path, MAX_RECORD)
    except FileNotFoundError as e:
        raise UsageError(
            f"the record of that fix is gone ({path}: no such file): it cannot be put back; "
            "nothing was changed",
            hint=f"look at the environment as it is; remove {journal.path} once it is as you "
            "want it",
        ) from e
    except Untrusted as e:
        raise refused(path, str(e)) from e
    seal = journal.seals.get(name)
    if seal is None or seal != f"sha256:{hashlib.sha256(data).hexdigest()}":
        raise refused(path, "it is not the file the fix wrote (its digest differs from the seal)")
    return data.decode("utf-8", "surrogateescape")


def kept_manifest(journal: Journal) -> list[dict[str, Any]]:
    """The kept files' manifest, checked: each path inside the prefix, each copy a plain name in
    the record. [] when the fix kept none (it stopped before its keep phase was done)."""
    if KEPT_MANIFEST not in journal.seals:
        return []
    path = Path(journal.record) / KEPT_MANIFEST
    try:
        doc = json.loads(record_text(journal, KEPT_MANIFEST))
        entries = [dict(e) for e in doc]
        for e in entries:
            if not inside(_text(e["path"]), journal.prefix):
                raise Untrusted(f"it names {e['path']!r}, outside {journal.prefix}")
            copy = _text(e["copy"])
            if copy and not copy.isdigit():
                raise Untrusted(f"its copy {copy!r} is not a file of the record")
            int(e["mode"])
    except (ValueError, TypeError, KeyError) as e:
        raise refused(path, f"it is not a manifest this envcheck wrote ({e!r})") from e
    except Untrusted as e:
        raise refused(path, str(e)) from e
    return entries


def check_record(journal: Journal) -> None:
    """Everything the rollback and the resume read, read and checked once before either
    changes anything."""
    for name in sorted({"freeze.txt", *journal.seals}):  # the freeze is always recorded
        if name == KEPT_MANIFEST:
            kept_manifest(journal)
        else:
            record_text(journal, name)
