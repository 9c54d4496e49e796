"""The smoke container's output, read from its attach stream on a thread of its own.

stdout goes to the collector up to its bound, stderr to the collector and, line by line, to the
activity display; past the bound the main thread is told to kill the container, and the reader
keeps draining. A broken stream is its end; any other exception is handed to the main thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from envcheck.edges import activity
from envcheck.smoke.parse import OutputCollector


def pump(
    stream: Iterator[tuple[bytes | None, bytes | None]],
    sink: OutputCollector,
    attention: threading.Event,
    failures: list[Exception],
    lines: activity.LineSplitter,
) -> None:
    """Read to the end of the stream (the workload's log lines to the activity display too).
    Past the stdout bound keep draining (the collector drops it): an attach stream nobody reads
    blocks dockerd, and then even `kill` hangs (measured).
    The stream breaking is its end; any other exception is a bug, handed to the main thread."""
    import requests.exceptions
    import urllib3.exceptions

    try:
        for out, err in _frames(
            stream,
            (
                OSError,
                ValueError,
                requests.exceptions.RequestException,
                urllib3.exceptions.HTTPError,
            ),
        ):
            if out:
                sink.feed_stdout(out)
                if sink.overflow.is_set():
                    attention.set()  # the main thread kills the container
            if err:
                sink.feed_stderr(err)
                lines.feed(err)
    except Exception as e:  # noqa: BLE001 - not swallowed: re-raised by run() in the main thread
        failures.append(e)
    finally:
        attention.set()


def _frames(
    stream: Iterator[tuple[bytes | None, bytes | None]], ends: tuple[type[Exception], ...]
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """The stream's frames until it ends or breaks (`ends`: the socket closed under us when the
    container was killed, or the stream was closed) — only the read is guarded."""
    while True:
        try:
            frame = next(stream)
        except StopIteration:
            return
        except ends:
            return
        yield frame
