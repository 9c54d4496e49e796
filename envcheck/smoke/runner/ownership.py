"""Which containers envcheck made: a mark an image cannot preset, and the sweep's rules (pure).

An image's own `LABEL` lines become labels of every container made from it, so a label *key*
proves nothing: any image (or another tool) can carry `envcheck=…`. What an image cannot set is
a value it cannot compute: each container envcheck creates carries `envcheck.mark`, an HMAC of
its run id, owner and deadline under a key only this user can read
(`$XDG_STATE_HOME/envcheck/owner.key`, mode 0600 in a 0700 folder, made with `O_EXCL`), and the
container is *named* `envcheck-smoke-<run id>`, a create-time setting no image can preset.

When the key cannot be stored (read-only home), this process uses a key of its own: its
containers are still removed by their `with`, and the sweep removes nothing it cannot prove.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from envcheck.contracts.command_env import home
from envcheck.engine.docker_adapter import LABEL

NAME_PREFIX = "envcheck-smoke-"
OWNER_LABEL = f"{LABEL}.owner"  # "hostname:pid" of the envcheck process that created it
DEADLINE_LABEL = f"{LABEL}.deadline"  # epoch seconds after which its owner no longer waits for it
MARK_LABEL = f"{LABEL}.mark"  # HMAC(owner key, run id, owner, deadline)
SWEPT_STATES = ("created", "exited")  # never a running (or paused, restarting) container
LEFTOVER_GRACE_S = 120.0  # a container younger than this is never swept: its run may still want it
KEY_BYTES = 32


def container_name(run_id: str) -> str:
    return f"{NAME_PREFIX}{run_id}"


def mark(key: bytes, run_id: str, owner: str, deadline: str) -> str:
    message = "\0".join((run_id, owner, deadline)).encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def is_ours(key: bytes, name: str, labels: Mapping[str, str]) -> bool:
    """Made by an envcheck holding `key`: the mark matches and the name is the run id's."""
    run_id = labels.get(LABEL, "")
    expected = mark(key, run_id, labels.get(OWNER_LABEL, ""), labels.get(DEADLINE_LABEL, ""))
    return (
        bool(run_id)
        and name.lstrip("/") == container_name(run_id)
        and hmac.compare_digest(labels.get(MARK_LABEL, ""), expected)
    )


def leftover_reason(
    attrs: Mapping[str, Any],
    *,
    key: bytes,
    now: float,
    hostname: str,
    alive: Callable[[int], bool],
    grace: float = LEFTOVER_GRACE_S,
) -> str | None:
    """Why the container described by `attrs` (`docker inspect`) is a leftover to remove, or
    None to leave it alone. Only ours, only created/exited, only past the grace period, and never
    one whose owner on this host still lives before its deadline."""
    config, state = attrs.get("Config") or {}, attrs.get("State") or {}
    labels = config.get("Labels") or {}
    status = str(state.get("Status", ""))
    if status not in SWEPT_STATES or not is_ours(key, str(attrs.get("Name", "")), labels):
        return None
    since = _epoch(state.get("FinishedAt")) if status == "exited" else None
    since = since or _epoch(attrs.get("Created"))
    if since is None or now - since < grace:
        return None
    host, _, pid = labels.get(OWNER_LABEL, "").rpartition(":")
    deadline = _int(labels.get(DEADLINE_LABEL))
    owner_waits = host == hostname and pid.isdigit() and alive(int(pid))
    if owner_waits and (deadline is None or now <= deadline):
        return None
    age = int(now - since)
    return f"{status} {age} s ago, owner {labels.get(OWNER_LABEL) or '?'} {'gone' if not owner_waits else 'past its deadline'}"


def owner_key(variables: Mapping[str, str]) -> bytes:
    """This user's owner key (its folder from the command's `variables`), created on first use;
    a process-only key when it cannot be kept."""
    return _owner_key(_key_path(variables))[0]


def unprovable(variables: Mapping[str, str]) -> str | None:
    """Why this process holds a process-only key (None: the stored one): no leftover of an
    earlier run can then be proven ours, and the sweep says so instead of keeping quiet."""
    return _owner_key(_key_path(variables))[1]


@functools.cache
def _owner_key(path: Path) -> tuple[bytes, str | None]:
    try:
        return _stored_key(path), None
    except OSError as e:
        return secrets.token_bytes(KEY_BYTES), f"{path}: {e.strerror or e}"


def _key_path(variables: Mapping[str, str]) -> Path:
    base = variables.get("XDG_STATE_HOME") or os.path.join(home(variables), ".local", "state")
    return Path(base) / "envcheck" / "owner.key"


def _stored_key(path: Path) -> bytes:
    """The key in `path`, made when missing and remade when damaged (empty or short: a first run
    on a full disk left it so, and every later run then fell back to a process-only key and the
    sweep never removed a leftover again). A key is written whole to a temp file first,
    then linked in (no other run's key is ever replaced) or, over a damaged one, renamed in."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private(path.parent, stat.S_ISDIR)
    key = _read_key(path)
    if key is None:
        _install_key(path, replace=False)
        key = _read_key(path)
    if key is not None and len(key) == KEY_BYTES:
        return key
    if key is not None and len(key) < KEY_BYTES:  # ours, cut short: heal it
        _install_key(path, replace=True)
        key = _read_key(path)
        if key is not None and len(key) == KEY_BYTES:
            return key
    raise OSError(f"{path}: not an envcheck owner key")  # foreign or too long: do not trust


def _read_key(path: Path) -> bytes | None:
    """The bytes of our private key file (None: there is none); OSError for anything else."""
    try:
        # O_NONBLOCK: a FIFO planted there is refused by the fstat below, not waited on
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as found:
        _private_fd(found.fileno())
        return found.read(KEY_BYTES + 1)


def _install_key(path: Path, *, replace: bool) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".owner.key.", dir=path.parent)  # 0600, O_EXCL
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(KEY_BYTES))
            out.flush()
            os.fsync(out.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another run made it first: its key is the one
    finally:
        Path(tmp).unlink(missing_ok=True)


def _private(path: Path, kind: Callable[[int], bool]) -> None:
    info = os.lstat(path)
    if not kind(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{path}: not a private folder of this user")


def _private_fd(fd: int) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError("the owner key is not a private file of this user")


def _epoch(text: Any) -> float | None:
    """Docker's RFC 3339 times with nanoseconds (`2024-05-01T12:34:56.123456789Z`); the zero
    time `0001-01-01T00:00:00Z` (never finished) is None."""
    if not isinstance(text, str) or len(text) < 19 or text.startswith("0001-"):
        return None
    try:
        whole = datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return whole.timestamp()  # the engine writes UTC (`Z`); a second's precision is plenty here


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
