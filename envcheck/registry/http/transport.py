"""HTTP for envcheck's registry reads: one GET, fenced.

- The opener knows only HTTP(S) (no file:, ftp:, data: handlers): a second fence behind the token
  realm policy (`envcheck.registry.auth`).
- The Authorization header never follows a redirect: blob downloads redirect to CDNs/S3, which
  reject (or would leak) a registry token.
- Every request has an overall deadline (`deadline`), not only a per-read timeout: a registry or
  proxy sending one byte every 2 s passes every read timeout and would hang the run. At the
  deadline the socket is shut down; the caller makes that a transient failure (retried, then the
  mirror).
"""

from __future__ import annotations

import functools
import http.client
import socket
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

from envcheck.contracts.record import record

MAX_DOCUMENT = 4 << 20  # manifests and configs are small: refuse to buffer anything bigger


@record
class Response:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes


def fetch(
    url: str, headers: Mapping[str, str], authorization: str | None, *, timeout: float
) -> Response:
    """One GET; an HTTP error status is an answer too. Raises what the network raises
    (urllib.error.URLError, OSError, http.client.HTTPException)."""
    request = urllib.request.Request(url, headers=dict(headers))
    request.add_header("User-Agent", "envcheck")
    if authorization:
        request.add_unredirected_header("Authorization", authorization)
    try:
        with _opener().open(request, timeout=timeout) as answer:
            return Response(answer.status, _lower(answer.headers), answer.read(MAX_DOCUMENT))
    except urllib.error.HTTPError as e:
        with e:
            try:
                body = e.read(MAX_DOCUMENT)
            except (OSError, http.client.HTTPException):
                body = b""  # the status is the answer; its error page was cut off
            return Response(e.code, _lower(e.headers), body)


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers or {}).items()}


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    # One opener per process, its TLS context made on first use: loading the CA store costs
    # ~70 ms, which a pull from a loopback (plain HTTP) registry never needs. Built by hand, not
    # with build_opener(): that one also opens file:, ftp: and data: URLs.
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        _HTTPHandler(),
        _LazyHTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.UnknownHandler(),
    ):
        opener.add_handler(handler)
    return opener


# -- the overall deadline: the sockets of the request in flight, shut down when it passes ----------
_current = threading.local()  # the deadline of this thread's request (redirects included)


class _Deadline:
    def __init__(self) -> None:
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []  # dups: shutdown() reaches the shared socket

    def watch(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            dup = sock.dup()  # the TLS wrapper detaches `sock`; the kernel socket stays shared
            self._sockets.append(dup)
            if self.expired:
                _shutdown(dup)
        return sock

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def close(self) -> None:
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


def _shutdown(sock: socket.socket) -> None:
    with suppress(OSError):  # already closed by the request itself
        sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def deadline(seconds: float) -> Iterator[Callable[[], bool]]:
    """Within the block, this thread's requests are cut `seconds` after it started; yields
    "has it passed?"."""
    deadline = _Deadline()
    timer = threading.Timer(seconds, deadline.expire)
    timer.daemon = True
    _current.deadline = deadline
    timer.start()
    try:
        yield lambda: deadline.expired
    finally:
        timer.cancel()
        _current.deadline = None
        deadline.close()


def _watched(http_class: Any) -> Callable[..., http.client.HTTPConnection]:
    """`http_class`, its connections' sockets registered with this thread's deadline."""
    deadline: _Deadline | None = getattr(_current, "deadline", None)

    def make(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection = http_class(*args, **kwargs)
        if deadline is not None:
            connect = conn._create_connection  # type: ignore[attr-defined]
            conn._create_connection = (  # type: ignore[attr-defined]
                lambda *a, **k: deadline.watch(connect(*a, **k))
            )
        return conn

    return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def do_open(
        self, http_class: Any, req: urllib.request.Request, **kw: Any
    ) -> http.client.HTTPResponse:
        return super().do_open(_watched(http_class), req, **kw)


class _LazyHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self) -> None:
        super().__init__()
        self._context_made = False

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        if not self._context_made:
            self._context = ssl.create_default_context()
            self._context_made = True
        return super().https_open(req)

    def do_open(
        self, http_class: Any, req: urllib.request.Request, **kw: Any
    ) -> http.client.HTTPResponse:
        return super().do_open(_watched(http_class), req, **kw)
