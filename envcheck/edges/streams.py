"""The process's own standard streams: present, able to encode, failing as exit 4, and
surviving a reader that leaves.

Hostile starts that used to end in a traceback (exit 3) or Python's own exit 120:

- a closed stdout or stderr (`envcheck doctor >&-`): Python sets the process's stdout to None and the
  first write raises AttributeError; worse, `print(file=None)` writes to stdout, so an error meant
  for a closed stderr would land in the `--json` document. A closed stream becomes /dev/null: the
  caller chose not to read it, the exit code still says the verdict;
- a stream that cannot encode UTF-8 (`LC_ALL=C PYTHONUTF8=0`, ASCII): the report's `—`, `✓`
  and a GPU name in any script are written with backslash escapes instead of raising
  UnicodeEncodeError;
- a stdout that fails to take the report (`> /dev/full`: ENOSPC, EIO, a quota): the first failed
  write or flush is an `EnvironmentProblem` (exit 4, one screen on stderr), and stdout then points
  at /dev/null so nothing else fails on it, the interpreter's final flush included.

A reader leaving stderr (`envcheck doctor 2>&1 | head -1`, EPIPE on a progress line) silences
stderr and nothing else: the pull or smoke under way goes on. A reader leaving stdout
(`envcheck doctor | head -1`) stays BrokenPipeError until the report's writer
(`reader_may_leave`) or the CLI meets it: the verdict is already decided and its exit code
must survive (a CI gate reading the first line must not turn a FAIL into 0). The rest of the
output goes to /dev/null, as Python's documentation recommends for SIGPIPE-free programs
(https://docs.python.org/3/library/signal.html#note-on-sigpipe).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import Any, TextIO, cast

from envcheck.contracts.errors import EnvironmentProblem


def _to_devnull(fd: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def discard_stdout(stdout: TextIO) -> None:
    """Point `stdout`'s file at /dev/null so later writes and the interpreter's final flush
    succeed (a stream with no file, a test's StringIO, has nothing to point elsewhere)."""
    try:
        fd = stdout.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return
    _to_devnull(fd)


@contextlib.contextmanager
def reader_may_leave(stdout: TextIO) -> Iterator[None]:
    """Write the report to `stdout`; if the reader closed the pipe, drop the rest, carry on."""
    try:
        yield
        stdout.flush()
    except BrokenPipeError:
        discard_stdout(stdout)


_SAMPLE = "—✓→…"  # characters our own reports use


def guard_stdio(stdout: TextIO | None, stderr: TextIO | None) -> tuple[TextIO, TextIO]:
    """A real process's stdout and stderr made safe for every renderer (an in-process run brings
    its own streams): `Environment.from_process()` installs them as the process's own."""
    return _guarded(stdout, report=True), _guarded(stderr, report=False)


def _guarded(stream: TextIO | None, *, report: bool) -> TextIO:
    """`report`: a failed write is exit 4 (stdout); stderr's is silenced (where would we say it?)."""
    if isinstance(stream, _Guarded):
        return stream
    if stream is None or _closed(stream):
        stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - process-long
    elif not _can_encode(stream) and isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")
    return cast(TextIO, _Guarded(stream, report=report))  # a text stream in all but name


def _closed(stream: TextIO) -> bool:
    try:
        os.fstat(stream.fileno())
    except io.UnsupportedOperation:  # not a real file (a test's StringIO): open by definition
        return False
    except (OSError, ValueError):
        return True
    return False


def _can_encode(stream: TextIO) -> bool:
    try:
        _SAMPLE.encode(stream.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _Guarded(io.TextIOBase):
    """A standard stream whose first failed write or flush is exit 4 (stdout) or silence
    (stderr: there is nowhere left to say so), and which is /dev/null from then on."""

    def __init__(self, stream: TextIO, *, report: bool) -> None:
        super().__init__()
        self._stream = stream
        self._report = report
        self._failed = False

    def write(self, text: str) -> int:
        if self._failed:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            if self._report:
                raise  # the report's writer decides (`reader_may_leave`)
            self._fail_silently()
            return len(text)
        except OSError as e:
            self._fail(e)
            return len(text)

    def flush(self) -> None:
        if self._failed:
            self._drop()
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            if self._report:
                raise
            self._fail_silently()
        except OSError as e:
            self._fail(e)

    def _fail_silently(self) -> None:
        """stderr's reader left (`doctor 2>&1 | head -1`): progress and errors have nobody to
        read them, but the pull or smoke under way goes on and the verdict's code survives."""
        self._failed = True
        self._drop()

    def _fail(self, e: OSError) -> None:
        self._failed = True
        self._drop()
        if self._report:
            raise EnvironmentProblem(
                f"cannot write the report to stdout: {e.strerror or e}",
                hint="free space where stdout goes, or send it elsewhere (`> file` on another disk)",
            ) from e

    def _drop(self) -> None:
        """Point the stream at /dev/null so the buffered rest and every later flush succeed."""
        try:
            _to_devnull(self._stream.fileno())
            self._stream.flush()
        except (OSError, ValueError, io.UnsupportedOperation):
            pass  # nothing more can be done for a stream that cannot even be silenced

    # what renderers and libraries ask a text stream
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors

    @property
    def buffer(self) -> Any:
        return self._stream.buffer

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def writable(self) -> bool:
        return True
