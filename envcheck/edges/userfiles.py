"""The files a user names on the command line: JSON documents we read, reports we write.

Writing (`--junit`, `--markdown`, `--save-baseline`, `report --junit/--markdown`), by what the
path is now (CI runs envcheck as root on shared machines: it must never harm what is not ours):

| the path                                  | what happens                                         |
|---|---|
| `-`                                       | written to stdout                                    |
| the file our stdout/stderr already is     | written through that stream (`/dev/stdout`, `/dev/fd/2`, `--markdown out.md > out.md`) |
| a character device or FIFO (or a symlink to one) | written in place: never created, truncated or replaced (`/dev/null`, `/dev/tty`, `>(cat)`) |
| a regular file, or nothing yet            | replaced atomically: a temp file in the same folder (`mkstemp`, `O_EXCL`), fsync, rename; mode 0666 less the umask |
| a symbolic link to anything else          | refused (exit 2): a link is never replaced, and writing through one into a file we were not named is how a planted link in `/tmp` overwrites `/etc/…` as root |
| a directory, a socket, a block device     | refused (exit 2)                                     |

Atomic because CI uploads whatever is there when a job is cancelled: a half-written JUnit file
makes the importer fail on the whole run. No space (ENOSPC, EDQUOT) is exit 4; any other failure
is exit 2 naming the flag and the path.

Reading: a JSON document of at most `MAX_DOCUMENT` bytes, from a path or `-` (stdin). Bytes that
are not UTF-8, nesting deep enough to exhaust the parser's recursion, integers over Python's
4300-digit limit: each is exit 2 naming the flag and the path, never a traceback.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from envcheck.contracts.errors import EnvcheckError, EnvironmentProblem, UsageError
from envcheck.regular import file_kind as _kind
from envcheck.regular import read_regular, read_regular_stat

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment

MAX_DOCUMENT = 16 * 1024 * 1024
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def write_output(path: str, text: str, *, flag: str, env: Environment) -> None:
    """Write `text` to the file `flag` named, as the module docstring's table says; `-` and
    "our stdout/stderr" mean `env`'s streams, the command's."""
    try:
        _write(path, text, flag, (env.stdout, env.stderr))
    except OSError as e:
        raise output_error(flag, path, e) from e


def check_output(path: str, *, flag: str, env: Environment) -> None:
    """Refuse now what `write_output` would refuse at the end (exit 2): a folder, a link, a
    socket, a folder that is missing or not ours to write in. Checked before the doctor probes
    anything: `--markdown DIR` once failed after the whole smoke. Writes nothing."""
    if names_stdout(path, env) or _our_stream(path, (env.stderr, None)) is not None:
        return
    try:
        info = _stat(path)
    except OSError as e:
        raise output_error(flag, path, e) from e
    refused = _refused(path, flag, info)
    if refused is not None:
        raise refused
    if info is not None and _in_place(info):  # a device or FIFO, written in place
        return
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise UsageError(
            f"cannot write {flag} {path}: no folder {folder}",
            hint=f"create the folder, or give {flag} a path in one that exists",
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(
            f"cannot write {flag} {path}: the folder {folder} is not writable by this user",
            hint=f"give {flag} a writable file path, or `-` for stdout",
        )


def names_stdout(path: str, env: Environment) -> bool:
    """`path` is `-`, or the very file `env`'s stdout, the command's, writes to."""
    return path == "-" or _our_stream(path, (env.stdout, None)) is not None


def append_output(path: str, text: str, *, what: str) -> None:
    """Append to a file the environment named (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`): a
    regular file (created when missing) or a character device/FIFO someone reads, never through
    a symbolic link, never waited on, never a directory. A regular file is left
    as it was when the text could not all be written (a full disk): never a cut-off table.
    Raises EnvcheckError."""
    try:
        _append(path, text.encode("utf-8", "backslashreplace"))
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(
                f"refusing to write {what} {path}: it is a symbolic link",
                hint="envcheck never writes a file through a link: name the target itself",
            ) from e
        if e.errno == errno.ENXIO:
            raise UsageError(f"cannot write {what} {path}: a FIFO nothing is reading") from e
        raise output_error(what, path, e) from e


def _append(path: str, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    fd = os.open(path, flags | os.O_CLOEXEC, 0o666)
    try:
        info = os.fstat(fd)
        if not (stat.S_ISREG(info.st_mode) or _in_place(info)):
            raise UsageError(f"cannot write to {path}: it is {_kind(info)}")
        os.set_blocking(fd, True)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if stat.S_ISREG(info.st_mode):
                os.fsync(fd)
        except OSError:
            if stat.S_ISREG(info.st_mode):
                os.ftruncate(fd, info.st_size)  # what was there before us, whole
            raise
    finally:
        os.close(fd)


def output_error(flag: str, path: str, e: OSError) -> EnvcheckError:
    message = f"cannot write {flag} {path}: {e.strerror or e}"
    if e.errno in _NO_SPACE:
        return EnvironmentProblem(
            message, hint="free some space on that file system, or write elsewhere"
        )
    return UsageError(message, hint=f"give {flag} a writable file path, or `-` for stdout")


def _write(path: str, text: str, flag: str, streams: tuple[TextIO | None, TextIO | None]) -> None:
    if path == "-":
        _write_stream(streams[0], text)
        return
    stream = _our_stream(path, streams)
    if stream is not None:
        _write_stream(stream, text)
        return
    info = _stat(path)
    refused = _refused(path, flag, info)
    if refused is not None:
        raise refused
    if info is not None and _in_place(info):
        _write_in_place(path, text, info)
    else:
        _write_atomically(Path(path), text)


def _refused(path: str, flag: str, info: os.stat_result | None) -> UsageError | None:
    """Why `path` (whose stat is `info`) is not written, as the module docstring's table says:
    a symbolic link to anything but a device or FIFO, a directory, a socket, a block device."""
    if info is not None and _in_place(info):
        return None
    if os.path.islink(path):
        target = "a missing file" if info is None else _kind(info)
        return UsageError(
            f"refusing to write {flag} {path}: it is a symbolic link to {target}",
            hint="envcheck never replaces a link nor writes a file through one: name the target itself",
        )
    if info is not None and not stat.S_ISREG(info.st_mode):
        return UsageError(
            f"cannot write {flag} {path}: it is {_kind(info)}",
            hint=f"give {flag} a file path, or `-` for stdout",
        )
    return None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _in_place(info: os.stat_result) -> bool:
    return stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)


def _our_stream(path: str, streams: tuple[TextIO | None, TextIO | None]) -> TextIO | None:
    """Our stdout or stderr when `path` is the very file it writes to."""
    try:
        target = os.stat(path)
    except OSError:
        return None
    for stream in streams:
        try:
            mine = os.fstat(stream.fileno()) if stream is not None else None
        except (OSError, ValueError, AttributeError):  # closed, or not a real file (pytest capture)
            continue
        if mine is not None and (mine.st_dev, mine.st_ino) == (target.st_dev, target.st_ino):
            return stream
    return None


def _write_stream(stream: TextIO | None, text: str) -> None:
    if stream is None:  # started with that stream closed: nowhere to write, nothing to harm
        return
    stream.write(text)
    stream.flush()


def _write_in_place(path: str, text: str, info: os.stat_result) -> None:
    # O_NONBLOCK on open only: a FIFO nobody reads is ENXIO at once instead of a hang.
    flags = os.O_WRONLY | os.O_NOCTTY | (os.O_NONBLOCK if stat.S_ISFIFO(info.st_mode) else 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise UsageError(f"cannot write to the FIFO {path}: nothing is reading it") from e
        raise
    os.set_blocking(fd, True)
    with open(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _write_atomically(target: Path, text: str) -> None:
    import tempfile  # only for a report file: `doctor --json` writes none (~2 ms)

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # mkstemp's 0600 would hide the report
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_folder(target.parent)


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # the rename is done; durability of the folder entry is best effort
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# -- reading ----------------------------------------------------------------------------------


def read_json(path: str, *, what: str, hint: str | None = None, env: Environment) -> Any:
    """The JSON document at `path` (`-` = `env`'s stdin, the command's); any failure is a
    UsageError naming `what`."""
    shown = path if path != "-" else "- (stdin)"
    data = _read_bytes(path, what, hint, env.stdin)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = data[e.start : e.start + 1]
        raise UsageError(
            f"{what} {shown} is not JSON: byte {e.start} ({bad!r}) is not UTF-8", hint=hint
        ) from e
    return parse_json(text, what=f"{what} {shown}", hint=hint)


def parse_json(text: str, *, what: str, hint: str | None = None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(
            f"{what} is not JSON: {e.msg} at line {e.lineno} column {e.colno}", hint=hint
        ) from e
    except RecursionError as e:
        raise UsageError(f"{what} is not JSON we can read: nested too deeply", hint=hint) from e
    except ValueError as e:  # an integer over sys.get_int_max_str_digits() digits
        raise UsageError(f"{what} is not JSON we can read: {e}", hint=hint) from e


def stdin_bytes(stdin: TextIO, limit: int = -1) -> bytes:
    """Up to `limit` bytes of `stdin`: the process's (its binary buffer) or a test's StringIO."""
    raw = getattr(stdin, "buffer", None)
    return raw.read(limit) if raw else stdin.read(limit).encode()


def read_bytes(path: str, stdin: TextIO | None, limit: int = MAX_DOCUMENT) -> bytes:
    """The bytes of a file the user named, `-` being `stdin` (a command's `env.stdin`; None:
    closed): the one reader of them, whose callers word the errors.

    A named path must be a regular file (`read_regular`): a FIFO nobody writes to, a device or
    a folder is refused at once, never waited on or read without end; `-` is how a stream comes
    in (`--facts - < <(ssh gpu-01 envcheck doctor --json)`). A link to a regular file is
    followed: the user named it, reading harms nothing through it, and `latest.json -> …` is
    how saved reports are kept. Raises OSError: the file's own, EINVAL for not a regular file,
    EBADF for a closed stdin (or one closed under us), EFBIG over `limit` bytes."""
    if path != "-":
        try:
            return read_regular(path, limit)
        except ValueError as e:  # a NUL in the path
            raise OSError(errno.EINVAL, str(e)) from e
    if stdin is None:
        raise OSError(errno.EBADF, "stdin is closed")
    try:
        data = stdin_bytes(stdin, limit + 1)
    except ValueError as e:  # stdin closed under us
        raise OSError(errno.EBADF, str(e)) from e
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit // 2**20} MiB")
    return data


def read_own_file(path: str | os.PathLike[str], limit: int) -> tuple[bytes, os.stat_result]:
    """A file envcheck wrote itself and reads back (a fix's journal, its record): a regular file,
    bounded, never through a symbolic link (O_NOFOLLOW), with the fstat of what was read so the
    caller can ask who owns it and who may write it. Raises OSError as `read_regular`."""
    return read_regular_stat(path, limit, follow=False)


def create_own_file(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """A new file envcheck writes in a folder of its own: O_CREAT|O_EXCL|O_NOFOLLOW, so a name
    already there (a planted link, FIFO, device or file) is EEXIST, never followed, truncated or
    written through; synced. Raises OSError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags, mode)
    try:
        _write_all(fd, data)
    except BaseException:
        os.close(fd)
        Path(path).unlink(missing_ok=True)
        raise
    os.close(fd)


def replace_own_file(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """`path` replaced whole or not at all: a fresh name in the same folder (mkstemp: O_EXCL,
    O_NOFOLLOW), synced, its mode set, renamed over `path` (rename replaces a link itself,
    never what it points to). No fixed temporary name: nothing to plant. Raises OSError."""
    import tempfile

    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode & ~_umask())
        _write_all(fd, data)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def make_own_folder(path: str | os.PathLike[str], mode: int = 0o755) -> os.stat_result:
    """A folder envcheck keeps its own files in: made with `mode` where missing; what is there
    must be a directory itself (lstat: a link to one is refused) that neither group nor others
    may write. Its lstat, for the caller to ask who owns it. Raises OSError (ENOTDIR for a link
    or a file, EPERM for a folder others may write)."""
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else _kind(info)
        raise OSError(errno.ENOTDIR, f"not a folder: {what}")
    if info.st_mode & 0o022 and info.st_uid == os.geteuid():  # ours, made under umask 002
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~0o022)
            info = os.fstat(fd)
        finally:
            os.close(fd)
    if info.st_mode & 0o022:
        mode = stat.S_IMODE(info.st_mode)
        raise OSError(errno.EPERM, f"group or others may write it (mode {mode:o})")
    return info


def _read_bytes(path: str, what: str, hint: str | None, stdin: TextIO | None) -> bytes:
    shown = path if path != "-" else "- (stdin)"
    try:
        return read_bytes(path, stdin)
    except FileNotFoundError as e:
        raise UsageError(f"cannot read {what} {shown}: no such file", hint=hint) from e
    except OSError as e:
        if e.errno == errno.EINVAL and str(e.strerror).startswith("not a regular file"):
            hint = "name a regular file, or pass `-` and send the document on stdin" + (
                f"; {hint}" if hint else ""
            )
        raise UsageError(f"cannot read {what} {shown}: {e.strerror or e}", hint=hint) from e
