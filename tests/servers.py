"""Real throwaway servers on loopback for the integration tests: extra Debian `docker-registry`
processes (open, or behind htpasswd auth), a small HTTP proxy that misbehaves on purpose, and a
second `dockerd` with a daemon.json of its own (never the main engine's).

Nothing here is a mock: the engine and envcheck talk HTTP to real processes. Every server binds
127.0.0.1 on a free port and is stopped by the fixture that started it.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self

REGISTRY_BINARY = shutil.which("docker-registry") or "/usr/bin/docker-registry"
# Where `scripts/dev setup` keeps the main registry's blobs: a second registry process can serve
# the same (read-only for it) storage, so it holds every test image without a push.
MAIN_REGISTRY_STORAGE = (
    Path(os.environ.get("ENVCHECK_DEV_STATE", "/var/tmp/envcheck-dev")) / "registry" / "data"
)

# A test login for throwaway registries only: user `envcheck`, password `envcheck-test-secret`
# (bcrypt, the only scheme the registry's htpasswd accepts).
HTPASSWD_USER = "envcheck"
HTPASSWD_PASSWORD = "envcheck-test-secret"
HTPASSWD_LINE = "envcheck:$2b$12$vXFpI5iMd/ccQdArcJ31k.49EREB2dtXnyHYr0.ir9ZfCvC2czDfy\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_status(url: str, timeout: float = 1.0) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return e.code
    except (OSError, http.client.HTTPException):
        return None


@dataclass
class RegistryProcess:
    """A `docker-registry serve` child on 127.0.0.1:port."""

    port: int
    storage: Path
    auth: bool = False
    workdir: Path = field(
        default_factory=lambda: Path(tempfile.mkdtemp(prefix="envcheck-registry-"))
    )
    process: subprocess.Popen[bytes] | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.addr}"

    def start(self, timeout: float = 15.0) -> RegistryProcess:
        config = self.workdir / "config.yml"
        config.write_text(self._config())
        log = (self.workdir / "registry.log").open("ab")
        self.process = subprocess.Popen(
            [REGISTRY_BINARY, "serve", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if http_status(f"{self.url}/v2/", 0.5) in (200, 401):
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(
            f"docker-registry on {self.addr} did not start: "
            f"{(self.workdir / 'registry.log').read_text()[-2000:]}"
        )

    def kill(self) -> None:
        """SIGKILL: the registry vanishes mid-transfer, as a crash would."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _config(self) -> str:
        auth = ""
        if self.auth:
            htpasswd = self.workdir / "htpasswd"
            htpasswd.write_text(HTPASSWD_LINE)
            auth = f"auth:\n  htpasswd:\n    realm: envcheck-test\n    path: {htpasswd}\n"
        return (
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.storage}\n"
            f"http:\n  addr: {self.addr}\n  secret: envcheck-test-{self.port}\n{auth}"
        )


BEARER_TOKEN = "envcheck-test-token"


class FlakyProxy:
    """An HTTP proxy in front of a registry that misbehaves on purpose:

    - answers 500 to the first `fail_first` requests whose path contains `fail_path` (and, with
      `fail_agent`, whose User-Agent contains it: "docker/" hits only the engine, "envcheck" only
      envcheck's own registry reads);
    - slows blob bodies to `rate` bytes/s;
    - with `bearer`, acts as a Docker Hub-style registry: 401 + `WWW-Authenticate: Bearer realm=…`
      until the token from its own `/token` realm is presented.
    """

    def __init__(
        self,
        upstream: str,
        *,
        fail_first: int = 0,
        fail_path: str = "/manifests/",
        fail_agent: str | None = None,
        rate: float | None = None,
        bearer: bool = False,
    ) -> None:
        self.upstream = upstream
        self.fail_first = fail_first
        self.fail_path = fail_path
        self.fail_agent = fail_agent
        self.rate = rate
        self.bearer = bearer
        self.token_requests: list[str] = []
        self.failed = 0
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FlakyProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _should_fail(self, path: str, agent: str) -> bool:
        if self.fail_agent is not None and self.fail_agent not in agent:
            return False
        with self._lock:
            if self.fail_path in path and self.failed < self.fail_first:
                self.failed += 1
                return True
            return False

    def _record(self, method: str, path: str, status: int) -> None:
        with self._lock:
            self.requests.append((method, path, status))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_HEAD(self) -> None:
                self._forward()

            def do_GET(self) -> None:
                self._forward()

            def _answer(
                self, status: int, body: bytes, headers: dict[str, str] | None = None
            ) -> None:
                proxy._record(self.command, self.path, status)
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _forward(self) -> None:
                if proxy.bearer and self.path.startswith("/token"):
                    proxy.token_requests.append(self.path)
                    self._answer(200, f'{{"token": "{BEARER_TOKEN}"}}'.encode())
                    return
                if proxy.bearer and self.headers.get("Authorization") != f"Bearer {BEARER_TOKEN}":
                    realm = f'Bearer realm="http://{proxy.addr}/token",service="envcheck-test"'
                    self._answer(
                        401,
                        b'{"errors":[{"code":"UNAUTHORIZED","message":"token needed"}]}',
                        {"WWW-Authenticate": realm},
                    )
                    return
                if proxy._should_fail(self.path, self.headers.get("User-Agent", "")):
                    self._answer(
                        500, b'{"errors":[{"code":"UNKNOWN","message":"injected failure"}]}'
                    )
                    return
                try:
                    self._relay()
                except (OSError, http.client.HTTPException):
                    # Upstream died mid-answer: drop the client connection as a crash would.
                    self.close_connection = True

            def _relay(self) -> None:
                upstream = http.client.HTTPConnection(proxy.upstream, timeout=30)
                upstream.putrequest(self.command, self.path, skip_accept_encoding=True)
                # Header by header: the engine sends several `Accept` lines, a dict keeps one.
                for key, value in self.headers.items():
                    if key.lower() not in ("host", "connection", "authorization"):
                        upstream.putheader(key, value)
                upstream.endheaders()
                answer = upstream.getresponse()
                proxy._record(self.command, self.path, answer.status)
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("connection", "transfer-encoding", "keep-alive"):
                        self.send_header(key, value)
                if answer.getheader("Content-Length") is None:
                    self.send_header(
                        "Connection", "close"
                    )  # the body then ends with the connection
                    self.close_connection = True
                self.end_headers()
                if self.command == "HEAD":
                    return
                rate = proxy.rate if "/blobs/" in self.path else None
                while chunk := answer.read(64 << 10):
                    self.wfile.write(chunk)
                    if rate is not None:
                        time.sleep(len(chunk) / rate)
                upstream.close()

        return Handler


class TrickleServer:
    """A loopback HTTP server that answers one byte every `interval` seconds, forever: from the
    status line (`phase="headers"`) or after prompt headers, in the body (`phase="body"`). Every
    read timeout is met; only an overall deadline ends the request."""

    def __init__(self, *, interval: float = 2.0, phase: str = "headers") -> None:
        self.interval = interval
        self.phase = phase
        self.connections = 0
        self.open = 0  # connections the client has not closed yet (its requests still waiting)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self._listener.getsockname()[1]}"

    def start(self) -> TrickleServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # stopped
            with self._lock:
                self.connections += 1
                self.open += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        body = b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}'
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        try:
            self._send_slowly(conn, head, body)
        finally:
            with self._lock:
                self.open -= 1

    def _send_slowly(self, conn: socket.socket, head: bytes, body: bytes) -> None:
        with conn:
            try:
                conn.recv(65536)  # the request
                if self.phase == "body":
                    conn.sendall(head)
                    head = b""
                for byte in head + body * 1000:
                    if self._stop.wait(self.interval):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return  # the client gave up: what the deadline is for


class SecondEngine:
    """A second, private `dockerd` (its own data root, exec root, pidfile, unix socket and
    daemon.json; no bridge, no iptables; vfs storage) so a test can give an engine settings such
    as `registry-mirrors` — which need a daemon restart — without touching the main engine."""

    def __init__(self, config: dict[str, object]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="envcheck-dockerd-", dir="/tmp"))
        self.socket = self.root / "docker.sock"  # short: a unix socket path has 108 bytes
        self.config = config
        self.process: subprocess.Popen[bytes] | None = None
        # Its own bridge: `--bridge=none` makes dockerd delete the interface `docker0`, the main
        # engine's bridge (daemon_unix.go removeDefaultBridgeInterface), after which no container
        # of the main engine can start. A named bridge it did not create is left as it is.
        self.bridge = f"envck{os.getpid() % 100000:05d}"[:15]

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    def start(self, timeout: float = 60.0) -> SecondEngine:
        (self.root / "daemon.json").write_text(json.dumps(self.config))
        subnet = f"10.213.{os.getpid() % 250}.1/24"
        for ip_args in (
            ["link", "add", self.bridge, "type", "bridge"],
            ["addr", "add", subnet, "dev", self.bridge],
            ["link", "set", self.bridge, "up"],
        ):
            subprocess.run(["ip", *ip_args], check=True, capture_output=True, timeout=10)
        log = (self.root / "dockerd.log").open("ab")
        self.process = subprocess.Popen(
            [
                shutil.which("dockerd") or "/usr/sbin/dockerd",
                "--config-file",
                str(self.root / "daemon.json"),
                "--data-root",
                str(self.root / "data"),
                "--exec-root",
                str(self.root / "exec"),
                "--pidfile",
                str(self.root / "dockerd.pid"),
                "-H",
                self.host,
                f"--bridge={self.bridge}",
                "--iptables=false",
                "--ip6tables=false",
                "--storage-driver=vfs",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.socket.exists() and _pings(self.socket):
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"a second dockerd did not start: {self.log()[-2000:]}")

    def log(self) -> str:
        path = self.root / "dockerd.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """SIGTERM (dockerd stops its own containerd), SIGKILL if it lingers; then its files go."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        subprocess.run(
            ["ip", "link", "del", self.bridge], capture_output=True, timeout=10, check=False
        )
        shutil.rmtree(self.root, ignore_errors=True)


def _pings(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2.0)
        try:
            s.connect(str(path))
            s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return s.recv(64).split(b" ")[1:2] == [b"200"]  # "HTTP/1.x 200 OK"
        except OSError:
            return False


@dataclass
class Answer:
    """One canned HTTP answer of `FakeEngine`: `chunked` streams the body as one chunk."""

    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json"
    chunked: bool = False


class _Routes:
    """Answers each request with the first route whose `(method, path part)` matches, else 404;
    `requests` records `METHOD path` of every request."""

    def __init__(self, routes: dict[tuple[str, str], Answer]) -> None:
        self.routes, self.requests = routes, list[str]()

    def serve(self, server: socketserver.BaseServer) -> None:
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                owner.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                answer = next(
                    (
                        a
                        for (m, part), a in owner.routes.items()
                        if m == self.command and part in self.path
                    ),
                    Answer(404, b'{"message": "no such route in the fake server"}'),
                )
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Api-Version", "1.45")
                if answer.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    body = answer.body
                    self.wfile.write(f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(answer.body)

            do_GET = do_POST = do_HEAD = do_DELETE = _answer

            def address_string(self) -> str:
                return "peer"

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


class FakeEngine(_Routes):
    """A misbehaving Engine API on a unix socket, a *peer* for the real docker SDK (never a mock
    of it)."""

    def __init__(self, path: Path, routes: dict[tuple[str, str], Answer]) -> None:
        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        super().__init__(routes)
        self.path = path
        self.serve(Server(str(path), self.handler()))

    @property
    def host(self) -> str:
        return f"unix://{self.path}"


class FakeRegistry(_Routes):
    """A misbehaving registry on 127.0.0.1 (plain HTTP, as envcheck speaks to a loopback one)."""

    def __init__(self, routes: dict[tuple[str, str], Answer]) -> None:
        super().__init__(routes)
        server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        server.daemon_threads = True
        self.serve(server)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"


ENGINE_VERSION = Answer(
    body=json.dumps(
        {
            "Version": "27.3.1",
            "ApiVersion": "1.45",
            "MinAPIVersion": "1.24",
            "Os": "linux",
            "Arch": "amd64",
        }
    ).encode()
)
