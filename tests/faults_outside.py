"""The outside fault campaign: where the input campaign (tests/faults.py) does not go.

Surfaces, each with its own tally of the six counts (tracebacks, wrong exit codes, injections,
leaks, damaged files, hangs):

- live-probes: hostile Paddle version files and docker client files, read by a live `doctor`;
- smoke-output: the workload's stdout broken field by field, parsed, judged and rendered;
- engine: a fake Engine API on a unix socket answering pulls with what no engine should;
- registry: fake registries on loopback, read by envcheck's client and by the real dockerd;
- fleet: hostile saved reports, host lists and GitHub files under `report`;
- streams: a reader that leaves stdout and stderr (`2>&1 | head -1`);
- state: a damaged owner.key and a full disk under the step summary;
- signals: SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 in the middle of an in-process smoke;
- package-data: a missing or damaged known_packages.toml, and scripts/refresh_packages.py
  against a PyPI that is offline or answers with something that is not its JSON.
- gate: the CI gate's shell steps fed hostile inputs (a line break, `$(…)`, quotes) with the real
  envcheck judging a failing host; facts documents without what was observed; a FIFO where a
  matrix TOML file or a named input should be;
- fix: `fix --yes` on a read-only or full target, a record write out of space, a venv whose path
  is not UTF-8, a 4,046-character XDG_STATE_HOME, a --paddle-index holding ESC or U+202E or a
  token; a link, FIFO, device or oversized file where the fix's lock, journal or its temporary
  file belongs; a journal copied with its venv, naming pip, a path outside the venv or a shell
  step, another user's; a record gone; and its pip steps (tests/faults_pipsteps.py): pip killed
  while it uninstalls Paddle (with envcheck) or installs it (envcheck alone), a full disk during
  the download, a hung step and SIGTERM or a second Ctrl-C, PIP_TARGET/PIP_PREFIX/PIP_USER set,
  root fixing a user's venv as sudo does, a shared interpreter under --yes alone, the dry run on
  an externally managed one.

Only peers are fake (servers on loopback and unix sockets); envcheck, the docker SDK, the real
engine and Paddle are the real ones. A process case runs under a timeout (a hang is counted,
never waited on) and an address-space limit (a blow-up is a MemoryError, not a dead machine).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcheck.contracts.errors import EnvcheckError
from envcheck.matrix.toml import tomllib
from tests import report_samples as samples
from tests.faults import Tally, field_paths, snapshot, with_value
from tests.inprocess import ENV
from tests.servers import ENGINE_VERSION, Answer, FakeEngine, FakeRegistry
from tests.smoke_host import processes_mentioning

SURFACES = (
    "live-probes",
    "smoke-output",
    "engine",
    "registry",
    "fleet",
    "streams",
    "state",
    "signals",
    "package-data",
    "fix",
    "gate",
)
TALLIES = {surface: Tally(surface) for surface in SURFACES}
HANG_S = float(os.environ.get("ENVCHECK_FAULTS_HANG_S", "60"))  # far past any case: a fault
ADDRESS_SPACE = 4 << 30  # bytes: a 2.1 GB host list fails inside it
FORGED = "FORGED\n::add-mask::FORGED\x1b]0;title\x07\u202e"
# Output a reader is harmed by: ESC, BEL, bidi overrides, or a workflow command we never send.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_OURS = re.compile(r"^::(error|warning)( [^:]*)?::")


def injected(output: str, *, github: bool = False) -> bool:
    lines = output.splitlines()
    commands = [line for line in lines if line.lstrip().startswith("::")]
    forged = [line for line in commands if not (github and _OURS.match(line))]
    return bool(_UNSAFE.search(output) or forged)


# -- process cases ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ProcessCase:
    surface: str
    name: str
    args: tuple[str, ...]  # envcheck's; "{tmp}" is the case's folder
    codes: tuple[int, ...]  # the documented exit codes for this case
    setup: Callable[[Path], dict[str, str]] | None = None  # plants files, returns variables
    github: bool = False  # GITHUB_ACTIONS=true: our own annotations are expected
    dead_pipe: bool = False  # stdout and stderr: a pipe whose reader has left
    check: Callable[[Path, str], str | None] | None = None  # a damaged file or leak, in words
    argv: tuple[str, ...] = ()  # instead of `python -m envcheck ARGS`
    address_space: int = ADDRESS_SPACE  # bytes: lower where a blow-up fits inside the default
    stderr_has: str = ""  # words the error must say (an error that helps): else a wrong outcome


# A limit set in a small launcher that then execs the case (no preexec_fn: the fake servers'
# threads make forking with one unsafe).
def _limited(address_space: int) -> tuple[str, ...]:
    return (
        sys.executable,
        "-c",
        (
            "import os, resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({address_space}, {address_space}))\n"
            "os.execvp(sys.argv[1], sys.argv[1:])\n"
        ),
    )


def run_process_case(case: ProcessCase, tmp: Path) -> None:
    """Run `case` with `tmp` as its cwd, home and state; everything it may write goes under
    `tmp/out`. Record it in its surface's tally."""
    tally = TALLIES[case.surface]
    (tmp / "out").mkdir(exist_ok=True)
    extra = case.setup(tmp) if case.setup else {}
    env = {
        **ENV,
        "HOME": str(tmp / "home"),
        "XDG_STATE_HOME": str(tmp / "out" / "state"),
        "ENVCHECK_CACHE_DIR": "",
        "GITHUB_ACTIONS": "true" if case.github else "",
        **extra,
    }
    args = [a.replace("{tmp}", str(tmp)) for a in case.args]
    cmd = list(case.argv) or [sys.executable, "-m", "envcheck", *args]
    before = _outside_out(snapshot(tmp), tmp)
    out, err, code, hung = _run(cmd, env, tmp, case.dead_pipe, case.address_space)
    after = _outside_out(snapshot(tmp), tmp)
    new = [p for p in after if p not in before]
    changed = [p for p in before if p in after and after[p] != before[p]]
    problem = case.check(tmp, out + err) if case.check and not hung else None
    tally.record(
        case.name,
        traceback_seen="Traceback" in err or code == 3,
        wrong_exit=not hung and (code not in case.codes or case.stderr_has not in err),
        injected=injected(out + err, github=case.github),
        leaks=len(new) + (problem is not None and problem.startswith("leak")),
        damaged=len(changed) + (problem is not None and problem.startswith("damaged")),
        hung=hung,
        detail=f"exit {code} (want {case.codes}); new {new}; changed {changed}; {problem}; "
        f"stderr {err[-600:]!r}",
    )


def _outside_out(files: dict[str, Any], tmp: Path) -> dict[str, Any]:
    out = str(tmp / "out")
    return {p: v for p, v in files.items() if not p.startswith(out) and p != str(tmp)}


def _run(
    cmd: list[str], env: dict[str, str], cwd: Path, dead_pipe: bool, address_space: int
) -> tuple[str, str, int | None, bool]:
    if dead_pipe:
        read, write = os.pipe()
        os.close(read)
        streams: dict[str, Any] = {"stdout": write, "stderr": write}
    else:
        streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    proc = subprocess.Popen([*_limited(address_space), *cmd], cwd=cwd, env=env, **streams)
    if dead_pipe:
        os.close(write)
    try:
        out, err = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "", "", None, True
    decode = (lambda b: b.decode("utf-8", "replace")) if out is not None else (lambda b: "")
    return decode(out), decode(err), proc.returncode, False


# -- live probes --------------------------------------------------------------------------------
_VERSION = "full_version = '3.3.1'\ncuda_version = '12.6'\ncudnn_version = '9.5.1'\n"


def _paddle_site(tmp: Path, text: str | bytes | None) -> dict[str, str]:
    """A site folder whose `paddle/version/__init__.py` is `text` (None: a FIFO), and a stand-in
    interpreter that names it (the doctor is pointed at it with --python)."""
    site = tmp / "site"
    version = site / "paddle" / "version" / "__init__.py"
    version.parent.mkdir(parents=True)
    (site / "paddlepaddle_gpu-3.3.1.dist-info").mkdir()
    if text is None:
        os.mkfifo(version)
    else:
        version.write_bytes(
            text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        )
    answer = {"prefix": str(tmp), "path": [str(site)], "version": "3.11.2"}
    python = tmp / "python"
    python.write_text(
        f"#!{sys.executable}\nimport json\nprint('envcheck-interpreter:' + json.dumps({answer!r}))\n"
    )
    python.chmod(0o755)
    return {}


VERSION_FILES: dict[str, str | bytes | None] = {
    "cuda-word": _VERSION + "cuda_version = 'abc'\n",
    "cuda-seven-parts": _VERSION + "cuda_version = '1.2.3.4.5.6.7'\n",
    "cuda-1e400": _VERSION + "cuda_version = 1e400\n",
    "cuda-arabic-digits": _VERSION + "cuda_version = '\u0661\u0662.\u0666'\n",
    "full-arabic-digits": _VERSION + "full_version = '\u0661.\u0662'\n",
    "archs-huge": _VERSION + "compiled_cuda_archs = [80, 1000, 10**9]\n",
    "archs-deep": _VERSION + "compiled_cuda_archs = " + "[" * 5000 + "]" * 5000 + "\n",
    "forged-version": _VERSION + "full_version = '3.3.1\\n::add-mask::FORGED\\x1b]0;t\\x07'\n",
    "forged-cuda": _VERSION + "cuda_version = '\\u202e12.6\\x1b[2J'\n",
    "garbage": b"\xff\xfe\x00" * 1000,
    "huge": _VERSION + "#" * (300 * 1024) + "\n",
    "fifo": None,
}


def _docker_config(kind: str) -> Callable[[Path], dict[str, str]]:
    def setup(tmp: Path) -> dict[str, str]:
        config = tmp / "docker-config"
        config.mkdir()
        env = {"DOCKER_CONFIG": str(config), "DOCKER_HOST": ""}
        if kind == "config-fifo":
            os.mkfifo(config / "config.json")
        elif kind == "config-deep":
            (config / "config.json").write_text("[" * 100_000)
        elif kind == "config-forged":
            (config / "config.json").write_text(json.dumps({"currentContext": FORGED}))
        elif kind in ("meta-fifo", "meta-forged"):
            meta = config / "contexts" / "meta" / hashlib.sha256(b"planted").hexdigest()
            meta.mkdir(parents=True)
            if kind == "meta-fifo":
                os.mkfifo(meta / "meta.json")
            else:
                doc = {"Endpoints": {"docker": {"Host": f"unix:///nonexistent/{FORGED}"}}}
                (meta / "meta.json").write_text(json.dumps(doc))
            env["DOCKER_CONTEXT"] = "planted"
        return env

    return setup


def _fake_gpu(tmp: Path) -> dict[str, str]:
    """The variables of a fake two-A100 host (tests/fakenv, the C-ABI fakes), so the judge
    compares the Paddle build with a driver and a GPU."""
    from tests import fakenv

    if "build" not in fakenv._BUILDS:
        fakenv._BUILDS["build"] = fakenv.build(Path(tempfile.mkdtemp(prefix="fakenv-")))
    return fakenv.make_host(fakenv._BUILDS["build"], "a100x2-535", tmp / "fake-host")


_VERSION_2X = "full_version = '2.6.2'\ncuda_version = '11.8'\ncudnn_version = '8.6.0'\n"


def _hostile_fatbin(kind: str) -> Callable[[Path], dict[str, str]]:
    """A 2.x GPU build (no compiled archs recorded, so its libpaddle.so's `.nv_fatbin` is read)
    whose library is a sparse hostile ELF: 3 GiB of claimed padding, or a section-header table
    of 65,279 entries of 65,000 bytes (4.2 GB)."""
    from tests.fatbin_files import hostile_elf

    def setup(tmp: Path) -> dict[str, str]:
        env = _paddle_site(tmp, _VERSION_2X)
        library = tmp / "site" / "paddle" / "base" / "libpaddle.so"
        library.parent.mkdir()
        if kind == "padding":
            hostile_elf(library, fatbin_at=4096, fatbin_size=3 << 30, size=4096 + (3 << 30))
        else:
            size = 4096 + 65_279 * 65_000
            hostile_elf(
                library, fatbin_at=0, fatbin_size=0, size=size, shentsize=65_000, shnum=65_279
            )
        return env

    return setup


def live_probe_cases() -> Iterator[ProcessCase]:
    for kind in ("padding", "table"):
        yield ProcessCase(
            "live-probes",
            f"fatbin-{kind}",
            ("doctor", "--no-smoke", "--python", "{tmp}/python"),
            (0, 1),
            setup=_hostile_fatbin(kind),
            address_space=2 << 30,  # the 4.2 GB table fits (barely) inside the default 4 GiB
        )
    for gpu in (False, True):
        for name, text in VERSION_FILES.items():

            def setup(
                tmp: Path, text: str | bytes | None = text, gpu: bool = gpu
            ) -> dict[str, str]:
                return {**_paddle_site(tmp, text), **(_fake_gpu(tmp) if gpu else {})}

            yield ProcessCase(
                "live-probes",
                f"paddle-{name}{'-a100' if gpu else ''}",
                ("doctor", "--no-smoke", "--python", "{tmp}/python"),
                (0, 1),
                setup=setup,
            )
    for kind in ("config-fifo", "config-deep", "config-forged", "meta-fifo", "meta-forged"):
        yield ProcessCase(
            "live-probes",
            f"docker-{kind}",
            ("doctor", "--no-smoke"),
            (0, 1, 2, 4),
            setup=_docker_config(kind),
        )


# -- the engine ---------------------------------------------------------------------------------
REF = "127.0.0.1:5000/envcheck-test/busybox:1"
DISTRIBUTION = {  # the real dockerd's answer for REF in the test registry
    "Descriptor": {
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "digest": "sha256:eefa0937cd87770e2a6d55f7fb8c4fbe89953f6f4e406bfff57395c74aa0d16c",
        "size": 527,
    },
    "Platforms": [{"architecture": "amd64", "os": "linux"}],
}
PULL_ANSWERS = {
    "not-chunked-not-json": Answer(body=b"not json at all"),
    "not-chunked-html": Answer(body=b"<html>proxy error</html>", content_type="text/html"),
    "chunked-not-json": Answer(body=b"{broken", chunked=True),
    "chunked-not-objects": Answer(body=b'[1]\n"x"\n3\n', chunked=True),
    "error-detail-a-list": Answer(body=b'{"errorDetail": [1]}\n', chunked=True),
    "progress-detail-a-list": Answer(
        body=b'{"id": "a", "status": "Downloading", "progressDetail": [1]}\n', chunked=True
    ),
    "nested-too-deep": Answer(body=b"[" * 100_000 + b"]" * 100_000),
    "error-event-forged": Answer(
        body=json.dumps({"error": FORGED, "errorDetail": {"message": FORGED}}).encode() + b"\n",
        chunked=True,
    ),
    "http-500-forged": Answer(500, json.dumps({"message": FORGED}).encode()),
    "layer-id-forged": Answer(
        body=json.dumps({"id": FORGED, "status": "Downloading"}).encode() + b"\n", chunked=True
    ),
}


def engine_routes(pull: Answer) -> dict[tuple[str, str], Answer]:
    return {
        ("GET", "/_ping"): Answer(body=b"OK", content_type="text/plain"),
        ("GET", "/version"): ENGINE_VERSION,
        ("GET", "/distribution/"): Answer(body=json.dumps(DISTRIBUTION).encode()),
        ("POST", "/images/create"): pull,
    }


@dataclass
class Peers:
    """The fake servers a case started, stopped when it ends."""

    started: list[Any] = field(default_factory=list)

    def engine(self, path: Path, routes: dict[tuple[str, str], Answer]) -> FakeEngine:
        self.started.append(FakeEngine(path, routes))
        return self.started[-1]  # type: ignore[no-any-return]

    def registry(self, routes: dict[tuple[str, str], Answer]) -> FakeRegistry:
        self.started.append(FakeRegistry(routes))
        return self.started[-1]  # type: ignore[no-any-return]

    def close(self) -> None:
        for server in self.started:
            server.close()
        self.started.clear()


PEERS = Peers()


def engine_cases() -> Iterator[ProcessCase]:
    for name, answer in PULL_ANSWERS.items():

        def setup(tmp: Path, answer: Answer = answer) -> dict[str, str]:
            return {"DOCKER_HOST": PEERS.engine(tmp / "docker.sock", engine_routes(answer)).host}

        yield ProcessCase(
            "engine", f"pull-{name}", ("pull-image", "--image", REF), (4,), setup=setup
        )


# -- registries ---------------------------------------------------------------------------------
def _manifest_for(config: bytes) -> dict[str, Any]:
    return {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
            "size": len(config),
        },
        "layers": [],
    }


_CONFIG = json.dumps(
    {"architecture": "amd64", "os": "linux", "config": {"Env": ["CUDA_VERSION=12.6.3"]}}
).encode()
_KIND = "application/vnd.docker.distribution.manifest.v2+json"
REGISTRY_ANSWERS: dict[str, dict[tuple[str, str], Answer]] = {
    "config-tampered": {
        ("GET", "/manifests/"): Answer(
            body=json.dumps(_manifest_for(_CONFIG)).encode(), content_type=_KIND
        ),
        ("GET", "/blobs/"): Answer(body=_CONFIG.replace(b"12.6.3", b"11.0.3")),
    },
    "manifest-not-json": {("GET", "/manifests/"): Answer(body=b"<html>", content_type=_KIND)},
    "manifest-deep": {("GET", "/manifests/"): Answer(body=b"[" * 100_000, content_type=_KIND)},
    "manifest-wrong-shape": {
        ("GET", "/manifests/"): Answer(
            body=b'{"mediaType": "%s", "layers": {"a": 1}}' % _KIND.encode()
        )
    },
    "error-forged": {
        ("GET", "/manifests/"): Answer(500, json.dumps({"errors": [{"message": FORGED}]}).encode())
    },
    "denied-forged": {
        ("GET", "/manifests/"): Answer(
            403, json.dumps({"errors": [{"code": "DENIED", "message": FORGED}]}).encode()
        )
    },
    "config-not-json": {
        ("GET", "/manifests/"): Answer(
            body=json.dumps(_manifest_for(b"\xff")).encode(), content_type=_KIND
        ),
        ("GET", "/blobs/"): Answer(body=b"\xff"),
    },
}


def registry_case(name: str, routes: dict[tuple[str, str], Answer]) -> None:
    """envcheck's own client against a fake registry: an EnvcheckError or an answer, and a
    message that shows the registry's words without obeying them."""
    from envcheck.image.platforms import Platform
    from envcheck.image.reference import parse_reference
    from envcheck.registry.http.client import RegistryClient
    from envcheck.render.sanitize import visible

    server = FakeRegistry(routes)
    message, trace = "", None
    try:
        ref = parse_reference(f"{server.addr}/envcheck-test/fake:1")
        RegistryClient.for_reference(ref, timeout=5).inspect(ref, Platform("linux", "amd64"))
    except EnvcheckError as e:
        message = f"envcheck: error: {visible(e.message, keep_lines=True)}"
    except Exception:  # noqa: BLE001 - what the campaign counts
        trace = traceback.format_exc(limit=4)
    finally:
        server.close()
    wrong = name == "config-tampered" and "digest" not in message  # judged unverified bytes
    TALLIES["registry"].record(
        f"client-{name}",
        traceback_seen=trace is not None,
        wrong_exit=wrong,
        injected=injected(message),
        detail=f"{trace or message[:300]}",
    )


def through_dockerd_cases() -> Iterator[ProcessCase]:
    """The real dockerd pulls from a fake registry and relays its words."""
    for name in ("error-forged", "denied-forged", "manifest-not-json"):

        def setup(tmp: Path, name: str = name) -> dict[str, str]:
            server = PEERS.registry(REGISTRY_ANSWERS[name])
            (tmp / "out" / "ref").write_text(f"{server.addr}/envcheck-test/fake:1")
            return {}

        yield ProcessCase(
            "registry",
            f"dockerd-{name}",
            (),
            (2, 4),
            setup=setup,
            argv=(
                "sh",
                "-c",
                f'exec {sys.executable} -m envcheck pull-image --image "$(cat out/ref)"',
            ),
        )


# -- the smoke's output -------------------------------------------------------------------------
SMOKE_VALUES: list[Any] = [
    None, True, -1, 2**63, 10**400, 1.5, float("nan"), "", "gpu:0", "\x1b[2J", FORGED,
    "\ud800", [], {}, [[[]]], "9" * 5000,
]  # fmt: skip


def smoke_output_cases() -> Iterator[tuple[str, bytes]]:
    from tests import smoke_samples as rec

    good = rec.on_gpu(rec.result())
    yield "deep", b"[" * 100_000 + b"]" * 100_000
    yield "deep-object", b'{"a":' * 50_000 + b"1" + b"}" * 50_000
    yield "huge-int", b'{"schema": ' + b"9" * 5000 + b"}"
    yield "surrogate", json.dumps(good).replace('"gpu:0"', '"gpu:\\ud800"').encode()
    yield "two-lines", b"{}\n{}"
    yield "not-utf8", b"\xff\xfe"
    for path in sorted(field_paths(good), key=str)[::7]:
        for value in SMOKE_VALUES:
            try:
                doc = with_value(good, path, value)
                text = json.dumps(doc, allow_nan=True)
            except (ValueError, TypeError, KeyError, IndexError):
                continue
            yield f"{path}={value!r:.12}", text.encode("utf-8", "surrogatepass")


# -- package data ---------------------------------------------------------------------------------
KNOWN_PACKAGES_FILES: dict[str, bytes | None] = {
    "missing": None,
    "not-toml": b'refreshed = "2026\n[pypi',
    "not-utf8": b'refreshed = "\xff"\n',
    "incomplete": b'refreshed = "2026-11-24"\n[pypi."paddlepaddle"]\nversions = ["3.3.1"]\n',
    "wrong-types": b'refreshed = 1\n[pypi."paddlepaddle"]\nversions = 3\n[index]\n',
}


def known_packages_case(name: str, content: bytes | None, tmp: Path) -> None:
    """A damaged pin list is known as nothing (the fixes then name no pin), never an exception."""
    from envcheck.verdict.known_packages import load_known_packages

    path = tmp / "known_packages.toml"
    if content is not None:
        path.write_bytes(content)
    trace, problem = None, None
    try:
        known = load_known_packages(path)
        known.exists("paddlepaddle", "3.3.1")
        known.newest("nvidia-cudnn-cu12", "9.")
        problem = known.problem
    except Exception:  # noqa: BLE001
        trace = traceback.format_exc(limit=4)
    TALLIES["package-data"].record(
        f"known-packages-{name}",
        traceback_seen=trace is not None,
        wrong_exit=trace is None and problem is None,  # a damaged file must say it is
        detail=f"{trace or problem}",
    )


_REFRESH = Path(__file__).resolve().parents[1] / "scripts" / "refresh_packages.py"
PYPI_ANSWERS: dict[str, Answer | None] = {
    "offline": None,
    "html": Answer(body=b"<html><body>captive portal</body></html>", content_type="text/html"),
    "no-releases": Answer(body=b'{"info": {"name": "paddlepaddle"}}'),
    "releases-forged": Answer(body=json.dumps({"releases": {FORGED: [{}]}}).encode()),
}


def refresh_packages_cases() -> Iterator[ProcessCase]:
    """The refresh script against a fake PyPI: exit 4 in one line and nothing written, or (for
    forged versions) a file TOML can read back."""
    for name, answer in PYPI_ANSWERS.items():

        def setup(tmp: Path, answer: Answer | None = answer) -> dict[str, str]:
            if answer is None:
                from tests.servers import free_port

                addr = f"127.0.0.1:{free_port()}"
            else:
                addr = PEERS.registry({("GET", "/pypi/"): answer}).addr
            (tmp / "out" / "pypi").write_text(f"http://{addr}/pypi")
            (tmp / "paddle.toml").write_text("")
            return {}

        def check(tmp: Path, _: str) -> str | None:
            written = tmp / "out" / "known.toml"
            if not written.exists():
                return None
            try:
                tomllib.loads(written.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                return f"damaged: it wrote a file TOML cannot read: {e}"
            return None

        yield ProcessCase(
            "package-data",
            f"refresh-{name}",
            (),
            (0,) if name == "releases-forged" else (4,),
            setup=setup,
            check=check,
            argv=(
                "sh",
                "-c",
                (
                    f'exec {sys.executable} {_REFRESH} --pypi "$(cat out/pypi)" '
                    "--matrix paddle.toml --output out/known.toml"
                ),
            ),
        )


def _denied_socket(tmp: Path) -> dict[str, str]:
    """An engine socket whose mode lets nobody in (root too: the case drops CAP_DAC_OVERRIDE)."""
    import socket

    path = tmp / "docker.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
    path.chmod(0o000)
    return {"DOCKER_HOST": f"unix://{path}"}


_NO_DAC = "-dac_override,-dac_read_search"


def helpful_error_cases() -> Iterator[ProcessCase]:
    """Errors that must say what is wrong and what to do: a socket one may not open (named, with
    the group, rootless or a context, never `[Errno 13]`), a missing tag (said once, with the
    registry's nearest tags)."""
    for args in (("pull-image",), ("doctor", "--image", "envcheck-test/busybox:1")):
        yield ProcessCase(
            "engine",
            f"socket-denied-{args[0]}",
            (),
            (4,),
            setup=_denied_socket,
            argv=(
                *(("setpriv", f"--bounding-set={_NO_DAC}", f"--inh-caps={_NO_DAC}")),
                *(sys.executable, "-m", "envcheck", *args),
            )
            if os.geteuid() == 0
            else (sys.executable, "-m", "envcheck", *args),
            stderr_has="permission denied on the engine's socket ",
        )
    yield ProcessCase(
        "registry",
        "missing-tag-nearest",
        ("pull-image", "--image", "127.0.0.1:5000/envcheck-test/busybox:2"),
        (2,),
        stderr_has="the nearest tags in 127.0.0.1:5000/envcheck-test/busybox: cuda12.9",
    )


def smoke_claim_cases() -> Iterator[ProcessCase]:
    """An image whose workload claims gpu:0 on this host, which has no GPU and gives the
    container none: a contradiction is a failed smoke (exit 5), never a pass."""
    from tests.smoke_host import PADDLE_IMAGE, SCRIPTS

    def setup(tmp: Path) -> dict[str, str]:
        return {"ENVCHECK_SMOKE_SCRIPT": str(SCRIPTS / "claims_gpu.py")}

    yield ProcessCase(
        "smoke-output", "claims-gpu-no-gpu-host", ("doctor", "--image", PADDLE_IMAGE), (5,), setup
    )


def smoke_output_case(name: str, stdout: bytes) -> None:
    """Parse, judge and render one stdout: BadOutput or findings, never an exception."""
    from envcheck.render.markdown import render_markdown
    from envcheck.smoke.parse import RawRun
    from envcheck.smoke.verdict.judge import judge
    from tests import report_samples as samples
    from tests.smoke_plans import GPU_IMAGE, container_plan, gpu_host

    trace, text = None, ""
    try:
        from envcheck.contracts.smoke_report import NvmlSummary
        from envcheck.smoke.runner.check import outcome_of

        outcome = outcome_of(RawRun(0, stdout, "", 1.0), NvmlSummary("unavailable", samples=0))
        findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome)
        text = render_markdown(samples.report(tuple(findings)))
        text.encode("utf-8")
    except Exception:  # noqa: BLE001
        trace = traceback.format_exc(limit=4)
    TALLIES["smoke-output"].record(
        f"stdout-{name}",
        traceback_seen=trace is not None,
        injected=bool(_UNSAFE.search(text)),
        detail=trace or "",
    )


# -- fleets -------------------------------------------------------------------------------------
def _reports(tmp: Path, *reports: Any, names: tuple[str, ...] = ()) -> Path:
    folder = tmp / "reports"
    folder.mkdir(exist_ok=True)
    for i, report in enumerate(reports):
        name = names[i] if i < len(names) else f"r{i}.json"
        (folder / name).write_text(json.dumps(report.to_json()), encoding="utf-8")
    return folder


def _github(tmp: Path, summary: str = "summary.md", output: str = "output") -> dict[str, str]:
    return {
        "GITHUB_STEP_SUMMARY": str(tmp / "out" / summary),
        "GITHUB_OUTPUT": str(tmp / "out" / output),
    }


def _summary_is_markdown(tmp: Path, _: str) -> str | None:
    """The step summary renders without raw HTML or headings a report's text opened."""
    from markdown_it import MarkdownIt

    path = tmp / "out" / "summary.md"
    if not path.exists():
        return None
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(path.read_text())
    return "damaged: raw HTML in the step summary" if re.search(r"<(b|h1|script)>", html) else None


def _hostile_id(tmp: Path) -> dict[str, str]:
    from envcheck.contracts.findings import fail

    bad = fail("driver.x`<b>hi</b>`\n\n# heading\udcff", FORGED, fix=FORGED, layer="driver")
    _reports(tmp, samples.report((bad,)))
    return _github(tmp)


def _hostile_hosts(tmp: Path) -> dict[str, str]:
    hosts = [samples.smoke_crashed(hostname=f"n{i}\x1b]0;x\x07\u202e") for i in range(12)]
    _reports(tmp, *hosts)
    return _github(tmp)


def _fifo_report(tmp: Path) -> dict[str, str]:
    folder = _reports(tmp, samples.healthy())
    os.mkfifo(folder / "planted.json")
    return {}


def _forged_name(tmp: Path) -> dict[str, str]:
    folder = _reports(tmp, samples.healthy())
    (folder / "x\n::add-mask::FORGED\x1b[2J.json").write_text("not json")
    return {}


def _linked_summary(tmp: Path) -> dict[str, str]:
    _reports(tmp, samples.driver_upgraded_without_reboot())
    (tmp / "canary").write_text("not ours\n")
    (tmp / "out" / "summary.md").symlink_to(tmp / "canary")
    (tmp / "out" / "output").symlink_to(tmp / "canary")
    return _github(tmp)


def _fifo_github(tmp: Path) -> dict[str, str]:
    _reports(tmp, samples.driver_upgraded_without_reboot())
    os.mkfifo(tmp / "out" / "summary.md")
    os.mkfifo(tmp / "out" / "output")
    return _github(tmp)


def _host_list(text: str) -> Callable[[Path], dict[str, str]]:
    def setup(tmp: Path) -> dict[str, str]:
        _reports(tmp, samples.healthy())
        (tmp / "hosts.txt").write_text(text)
        return {}

    return setup


def fleet_cases() -> Iterator[ProcessCase]:
    report = ("report", "--markdown", "{tmp}/out/fleet.md", "{tmp}/reports")
    yield ProcessCase(
        "fleet", "finding-id-hostile", report, (1,), _hostile_id, True, check=_summary_is_markdown
    )
    yield ProcessCase(
        "fleet", "hostnames-hostile", report, (5,), _hostile_hosts, True, check=_summary_is_markdown
    )
    yield ProcessCase("fleet", "fifo-in-folder", ("report", "{tmp}/reports"), (2,), _fifo_report)
    yield ProcessCase("fleet", "file-name-forged", ("report", "{tmp}/reports"), (2,), _forged_name)
    yield ProcessCase(
        "fleet", "github-files-linked", ("report", "{tmp}/reports"), (1,), _linked_summary, True
    )
    yield ProcessCase(
        "fleet", "github-files-fifo", ("report", "{tmp}/reports"), (1,), _fifo_github, True
    )
    expect = ("report", "--expect-hosts", "{tmp}/hosts.txt", "{tmp}/reports")
    for name, text in (
        ("hosts-many-ranges", "n[" + ",".join(["0-99999"] * 300) + "]\n"),
        ("hosts-product", "a[0-999]b[0-999]c[0-999]\n"),
        ("hosts-long-names", "x" * 250 + "[0-99999]\n"),
        ("hosts-forged", "gpu1 \x1b[2J ::add-mask::x\n"),
    ):
        yield ProcessCase("fleet", name, expect, (2,), _host_list(text))


# -- streams: a reader that leaves ----------------------------------------------------------------
def _failing_facts(tmp: Path) -> dict[str, str]:
    (tmp / "facts.json").write_text(json.dumps(samples.driver_upgraded_without_reboot().to_json()))
    return {}


def _two_reports(tmp: Path) -> dict[str, str]:
    _reports(tmp, samples.healthy(), samples.driver_upgraded_without_reboot())
    return {}


def stream_cases() -> Iterator[ProcessCase]:
    for mode in ((), ("--json",)):
        yield ProcessCase(
            "streams",
            f"doctor{''.join(mode)}-2>&1-head",
            ("doctor", "--facts", "{tmp}/facts.json", *mode),
            (1,),
            _failing_facts,
            dead_pipe=True,
        )
    for mode in ((), ("--json",)):
        yield ProcessCase(
            "streams",
            f"report{''.join(mode)}-2>&1-head",
            ("report", "{tmp}/reports", *mode),
            (1,),
            _two_reports,
            dead_pipe=True,
        )


# -- state --------------------------------------------------------------------------------------
def _key(content: bytes | None) -> Callable[[Path], dict[str, str]]:
    def setup(tmp: Path) -> dict[str, str]:
        folder = tmp / "out" / "state" / "envcheck"
        folder.mkdir(parents=True, mode=0o700)
        path = folder / "owner.key"
        if content is None:
            os.mkfifo(path, 0o600)
        else:
            path.write_bytes(content)
            path.chmod(0o600)
        return {}

    return setup


def _key_healed(tmp: Path, _: str) -> str | None:
    path = tmp / "out" / "state" / "envcheck" / "owner.key"
    if path.is_fifo():
        return None  # not ours: refused (process-only key), left alone
    return None if len(path.read_bytes()) == 32 else "damaged: the owner key was not remade"


_OWNER_KEY = (
    sys.executable,
    "-c",
    "import os; from envcheck.smoke.runner import ownership; print(len(ownership.owner_key(os.environ)))",
)
_FULL_DISK = (
    sys.executable,
    "-c",
    (
        "import os, resource, signal\n"
        "from envcheck.render.annotations import append_step_summary\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))\n"
        "print(append_step_summary('| row |\\n' * 50_000, os.environ))\n"
    ),
)


def _summary_whole(tmp: Path, _: str) -> str | None:
    text = (tmp / "out" / "summary.md").read_text()
    return None if text == "## earlier step\n" else f"damaged: a cut-off table ({len(text)} bytes)"


def _earlier_summary(tmp: Path) -> dict[str, str]:
    (tmp / "out" / "summary.md").write_text("## earlier step\n")
    return _github(tmp)


def state_cases() -> Iterator[ProcessCase]:
    for name, content in (("empty", b""), ("short", b"\x01" * 7), ("fifo", None)):
        yield ProcessCase(
            "state",
            f"owner-key-{name}",
            (),
            (0,),
            _key(content),
            check=_key_healed,
            argv=_OWNER_KEY,
        )
    yield ProcessCase(
        "state",
        "step-summary-full-disk",
        (),
        (0,),
        _earlier_summary,
        check=_summary_whole,
        argv=_FULL_DISK,
    )


# -- signals ------------------------------------------------------------------------------------
def signal_case(signum: signal.Signals, tmp: Path) -> None:
    """An in-process smoke (the real CPU Paddle) signalled once its temp folder exists."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "doctor", "--json", "--in-process"],
        env={**ENV, "TMPDIR": str(tmp)},
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + HANG_S
    while proc.poll() is None and time.monotonic() < deadline:
        if any(p.name.startswith("envcheck-smoke-") for p in tmp.iterdir()):
            break
        time.sleep(0.02)
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=HANG_S)
        hung = False
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        hung = True
    left = [p.name for p in tmp.iterdir() if p.name.startswith("envcheck")]
    children = processes_mentioning(str(tmp))
    # the last line names the signal and what was cleaned up (never a bare "interrupted")
    said = f"envcheck: error: interrupted by {signum.name}: " in err
    said = said and "removed the smoke's folder" in err
    TALLIES["signals"].record(
        f"in-process-{signum.name}",
        traceback_seen="Traceback" in err,
        wrong_exit=not hung and (proc.returncode != 130 or not said),
        leaks=len(left) + len(children),
        hung=hung,
        detail=f"exit {proc.returncode}; left {left}; children {children}; {err[-300:]!r}",
    )


SIGNALS = (signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def sigkill_leftover_case(tmp: Path) -> None:
    """SIGKILL (never seen, so never cleaned up) once the in-process smoke's folder exists;
    then a whole run in the same $TMPDIR, which must leave no smoke folder behind: its own
    removed as always, the killed run's removed as its maker is gone."""
    env = {**ENV, "TMPDIR": str(tmp)}
    doctor = [sys.executable, "-m", "envcheck", "doctor", "--json", "--in-process"]
    proc = subprocess.Popen(
        doctor, env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + HANG_S
    while proc.poll() is None and time.monotonic() < deadline:
        if any(p.name.startswith("envcheck-smoke-") for p in tmp.iterdir()):
            break
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    killed = [p.name for p in tmp.iterdir() if p.name.startswith("envcheck-smoke-")]
    try:
        again = subprocess.run(
            doctor, env=env, cwd=tmp, capture_output=True, text=True, timeout=HANG_S, check=False
        )
        hung, err, code = False, again.stderr, again.returncode
    except subprocess.TimeoutExpired:
        hung, err, code = True, "", None
    left = [p.name for p in tmp.iterdir() if p.name.startswith("envcheck-smoke-")]
    for orphan in processes_mentioning(str(tmp)):  # the killed run's child, in its own session
        os.kill(int(orphan.split(":", 1)[0]), signal.SIGKILL)
    TALLIES["signals"].record(
        "in-process-SIGKILL-then-a-run",
        traceback_seen="Traceback" in err,
        wrong_exit=not hung
        and (code != 0 or not killed),  # the kill came while the folder was there
        leaks=len(left),
        hung=hung,
        detail=f"killed left {killed}; the next run exit {code} left {left}; {err[-300:]!r}",
    )


# -- fix: the target and the state a repair writes ------------------------------------------------
_DEAD_INDEX = "http://127.0.0.1:9"  # the discard port: nothing listens, refused at once


def _no_index(tmp: Path) -> dict[str, str]:
    """Paddle's index dead, and pip's own configuration pointing there too: where Paddle's index
    does not answer, a CPU build may come from pip's configured index, on this machine PyPI.
    What pip writes there is pip's, as any `pip install` does (its cache, and here rustup's
    settings: pip's user agent asks `rustc --version`), so its cache and home go under `out`."""
    return {
        "HOME": str(tmp / "out" / "home"),
        "ENVCHECK_PADDLE_INDEX": _DEAD_INDEX,
        "PIP_INDEX_URL": _DEAD_INDEX,
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_FIND_LINKS": "",
        "PIP_CACHE_DIR": str(tmp / "out" / "pip-cache"),
    }


_FIX = ("--paddle", "3.3.1", "--no-pull", "--yes")


def _venv(tmp: Path, name: str = "venv") -> Path:
    """A venv with pip under `tmp/out` (what a fix writes into it is no leak), copied from one
    made once per process."""
    template = Path(tempfile.gettempdir()) / f"envcheck-faults-venv-{os.getpid()}"
    if not template.exists():
        subprocess.run([sys.executable, "-m", "venv", str(template)], check=True, timeout=300)
    target = tmp / "out" / name
    subprocess.run(["cp", "-a", str(template), str(target)], check=True)
    return target


def _fix_target(tmp: Path) -> dict[str, str]:
    return {"FIX_TARGET": str(_venv(tmp)), **_no_index(tmp)}


def _fix_small(tmp: Path) -> dict[str, str]:
    (tmp / "out" / "small").mkdir()
    return _fix_target(tmp) | {"FIX_SMALL": str(tmp / "out" / "small")}


def _non_utf8(tmp: Path) -> dict[str, str]:
    _venv(tmp, "v\udcff")
    return _no_index(tmp)


def _long_state(tmp: Path) -> dict[str, str]:
    _venv(tmp)
    return _no_index(tmp) | {"XDG_STATE_HOME": "/" + "s" * 4045}


def _in_namespace(script: str) -> tuple[str, ...]:
    """`script` as root in a mount namespace of its own (its mounts go with it), then the fix of
    the venv it names as $T."""
    fix = 'exec "$0" -m envcheck fix --python "$T/bin/python" ' + " ".join(_FIX)
    return ("unshare", "-m", "sh", "-c", f"{script} && {fix}", sys.executable)


_READ_ONLY = _in_namespace(
    'T="$FIX_TARGET" && mount --bind "$T" "$T" && mount -o remount,bind,ro "$T"'
)
_FULL = _in_namespace(
    'mount -t tmpfs -o size=48m tmpfs "$FIX_SMALL" && cp -a "$FIX_TARGET" "$FIX_SMALL/venv" && '
    '{ dd if=/dev/zero of="$FIX_SMALL/fill" bs=64k 2>/dev/null; T="$FIX_SMALL/venv"; }'
)
_FULL_RECORD = _in_namespace(  # the fix's folder is there: its first file write meets the full disk
    'mount -t tmpfs -o size=48m tmpfs "$FIX_SMALL" && cp -a "$FIX_TARGET" "$FIX_SMALL/venv" && '
    'mkdir -p "$FIX_SMALL/venv/.envcheck-fix/records" && '
    '{ dd if=/dev/zero of="$FIX_SMALL/fill" bs=64k 2>/dev/null; T="$FIX_SMALL/venv"; }'
)


# -- fix: the fix's own files, planted or forged ------------------------------------------------
_VICTIM = "root's file\n"


def _planted(plant: Callable[[Path, Path], None]) -> Callable[[Path], dict[str, str]]:
    """A venv under `out` whose `.envcheck-fix/` holds what `plant(folder, victim)` puts there;
    the victim a file outside `out` (a change to it is a damaged file)."""

    def setup(tmp: Path) -> dict[str, str]:
        from envcheck.fix.runner import journal

        env = _fix_target(tmp)
        (tmp / "victim").write_text(_VICTIM)
        plant(journal.ensure_home(env["FIX_TARGET"]), tmp / "victim")
        return env

    return setup


def _open_journal(venv: Path) -> Any:
    """An open journal in `venv`, as a killed `fix --yes` leaves it (written by envcheck's own
    code: a record with its freeze, one step started)."""
    from envcheck.fix.runner import journal

    folder = journal.ensure_home(str(venv))
    record = folder / "records" / "r1"
    record.mkdir()
    python = str(venv / "bin" / "python")
    journal.write_new(
        record / "freeze.txt",
        subprocess.check_output([python, "-m", "pip", "freeze", "--all"], text=True),
    )
    left = journal.open_journal(
        folder,
        python=python,
        prefix=str(venv),
        record_folder=str(record),
        expect="cpu",
        pip_flags=(),
    )
    left.phase = "apply"
    return left


def _forged(change: Callable[[Any, Path], None]) -> Callable[[Path], dict[str, str]]:
    """An open journal that its writer (this user) changed by `change(journal, victim)` and
    saved whole: trusted as envcheck's own, and still obeyed only where a plan could have
    written it."""

    def setup(tmp: Path) -> dict[str, str]:
        env = _fix_target(tmp)
        (tmp / "victim").write_text(_VICTIM)
        left = _open_journal(Path(env["FIX_TARGET"]))
        change(left, tmp / "victim")
        left.save()
        return env

    return setup


def _copied_journal(tmp: Path) -> dict[str, str]:
    """`cp -a venvA venvB` of a venv a killed fix left; A outside `out` (a change is damage)."""
    env = _fix_target(tmp)
    a = tmp / "venvA"
    subprocess.run(["cp", "-a", env["FIX_TARGET"], str(a)], check=True)
    _open_journal(a).save()
    subprocess.run(["rm", "-rf", env["FIX_TARGET"]], check=True)
    subprocess.run(["cp", "-a", str(a), env["FIX_TARGET"]], check=True)
    return env


def _record_gone(tmp: Path) -> dict[str, str]:
    env = _fix_target(tmp)
    left = _open_journal(Path(env["FIX_TARGET"]))
    left.save()
    subprocess.run(["rm", "-rf", left.record], check=True)
    return env


def _victim_kept(tmp: Path, output: str) -> str | None:
    return None if (tmp / "victim").read_text() == _VICTIM else "damaged: the victim changed"


_TARGET = ("fix", "--python", "{tmp}/out/venv/bin/python", "--paddle", "3.3.1", "--no-pull")
_TOKEN = "s3cret-t0ken"


def own_file_cases() -> Iterator[ProcessCase]:
    """A link, FIFO, device or oversized file where the lock or the journal belongs; a journal
    copied, forged, or naming what a fix never touches; a record gone; an index's token."""
    planted: dict[str, tuple[Callable[[Path, Path], None], tuple[str, ...]]] = {
        "lock-symlink": (lambda f, v: (f / "lock").symlink_to(v), ("--yes",)),
        "lock-fifo": (lambda f, v: os.mkfifo(f / "lock"), ("--yes",)),
        "journal-fifo-dry-run": (lambda f, v: os.mkfifo(f / "journal.json"), ()),
        "journal-symlink": (lambda f, v: (f / "journal.json").symlink_to(v), ("--rollback",)),
        "journal-device": (
            lambda f, v: os.mknod(f / "journal.json", 0o644 | stat.S_IFCHR, os.makedev(1, 5)),
            (),
        ),
        "journal-oversized": (lambda f, v: os.truncate(_touched(f / "journal.json"), 65 << 20), ()),
        "journal-tmp-symlink": (lambda f, v: (f / ".journal.json.tmp").symlink_to(v), ("--yes",)),
    }
    for name, (plant, args) in planted.items():
        codes = (4, 7) if name == "journal-tmp-symlink" else (2,)  # that one runs, and rolls back
        yield ProcessCase(
            "fix", name, (*_TARGET, *args), codes, _planted(plant), check=_victim_kept
        )
    forged: dict[str, Callable[[Any, Path], None]] = {
        "journal-names-pip": lambda j, v: j.kept.append("pip"),
        "journal-stray-outside": lambda j, v: j.strays.append(str(v)),
        "journal-step-runs-a-shell": _shell_step,
        "journal-foreign-owner": lambda j, v: None,  # then the whole venv is chowned
    }
    for name, change in forged.items():
        action = "--resume" if "step" in name else "--rollback"
        setup = _forged(change)
        if name == "journal-foreign-owner":  # the venv and its journal another user's
            setup = _chowned(setup)
        yield ProcessCase("fix", name, (*_TARGET, action), (2,), setup, check=_victim_kept)
    yield ProcessCase(
        "fix", "journal-copied-with-venv", (*_TARGET, "--rollback"), (2,), _copied_journal
    )
    yield ProcessCase("fix", "record-gone", (*_TARGET, "--rollback"), (2,), _record_gone)
    yield ProcessCase(
        "fix",
        "index-credentials",
        (*_TARGET, "--paddle-index", f"http://user:{_TOKEN}@127.0.0.1:9"),
        (0, 1, 4, 5, 6),
        _fix_target,
        check=lambda tmp, out: "leak: the index token was echoed" if _TOKEN in out else None,
    )


def _shell_step(left: Any, victim: Path) -> None:
    from envcheck.fix.runner.journal import JournalStep

    left.steps.append(JournalStep(("/bin/sh", "-c", f"echo owned > {victim}"), "forged"))


def _touched(path: Path) -> Path:
    path.touch(mode=0o644)
    return path


def _chowned(setup: Callable[[Path], dict[str, str]]) -> Callable[[Path], dict[str, str]]:
    def chowned(tmp: Path) -> dict[str, str]:
        env = setup(tmp)
        subprocess.run(["chown", "-R", "65534:65534", env["FIX_TARGET"]], check=True)
        return env

    return chowned


def fix_cases() -> Iterator[ProcessCase]:
    yield from own_file_cases()
    yield ProcessCase("fix", "read-only-target", (), (4,), _fix_target, argv=_READ_ONLY)
    yield ProcessCase("fix", "full-target", (), (4,), _fix_small, argv=_FULL)
    yield ProcessCase("fix", "record-write-out-of-space", (), (4,), _fix_small, argv=_FULL_RECORD)
    yield ProcessCase(
        "fix",
        "non-utf8-venv-path",
        ("fix", "--python", "{tmp}/out/v\udcff/bin/python", *_FIX),
        (4,),
        _non_utf8,
    )
    yield ProcessCase(
        "fix",
        "long-xdg-state-home",
        ("fix", "--python", "{tmp}/out/venv/bin/python", *_FIX),
        (4,),
        _long_state,
    )
    for name, bad in (("esc", "\x1b]0;FORGED\x07"), ("bidi", "\u202e")):
        yield ProcessCase(
            "fix",
            f"paddle-index-{name}",
            ("fix", "--paddle-index", f"https://m.example/{bad}"),
            (2,),
        )


# -- gate: no gate without evidence, no injection through inputs ----------------------------------
def _facts_doc(doc: dict[str, Any]) -> Callable[[Path], dict[str, str]]:
    def setup(tmp: Path) -> dict[str, str]:
        (tmp / "facts.json").write_text(json.dumps(doc))
        return {}

    return setup


def _fifo_at(name: str) -> Callable[[Path], dict[str, str]]:
    def setup(tmp: Path) -> dict[str, str]:
        (tmp / "facts.json").write_text(json.dumps(samples.healthy().to_json()))
        if name == "matrix":
            matrix = tmp / "matrix"
            matrix.mkdir()
            for source in (Path(__file__).resolve().parents[1] / "matrix").glob("*.toml"):
                (matrix / source.name).write_bytes(source.read_bytes())
            (matrix / "images.toml").unlink()
            os.mkfifo(matrix / "images.toml")
        else:
            os.mkfifo(tmp / name)
        return {"ENVCHECK_CACHE_DIR": ""}

    return setup


def gate_cases() -> Iterator[ProcessCase]:
    for name, doc in (
        ("facts-empty", {}),
        ("facts-no-paddle", {"driver": {"status": "absent"}, "gpus": []}),
        ("facts-empty-report", {"host": {}, "findings": []}),
    ):
        yield ProcessCase(
            "gate",
            name,
            ("doctor", "--facts", "{tmp}/facts.json"),
            (2,),
            _facts_doc(doc),
            stderr_has="section",
        )
    for name, args in (
        ("matrix", ("doctor", "--facts", "{tmp}/facts.json", "--matrix", "{tmp}/matrix")),
        ("named.json", ("doctor", "--facts", "{tmp}/named.json")),
        (
            "baseline.json",
            ("doctor", "--facts", "{tmp}/facts.json", "--baseline", "{tmp}/baseline.json"),
        ),
        ("report.json", ("report", "{tmp}/facts.json", "{tmp}/report.json")),
    ):
        yield ProcessCase(
            "gate",
            f"fifo-as-{name.split('.')[0]}",
            args,
            (2,),
            _fifo_at(name),
            stderr_has="not a regular file: a FIFO",
        )


GATE_HOSTILE = {
    "workflow-commands": "x\n::stop-commands::pwned\n::error::forged",
    "forged-outputs": "x\nexit-code=0\nverdict=pass",
    "substitutions": "$(touch PWNED)`touch PWNED`'\"; exit 0; #",
}


def gate_input_cases() -> Iterator[tuple[str, str, str]]:
    """(action or gpu-gate, input, hostile value name)."""
    for kind in ("action", "gpu-gate"):
        names = ["paddle-version", "image", "registry", "baseline", "artifact-name", "extra-flags"]
        if kind == "action":
            names += ["training-python", "report-dir"]
        for name in names:
            for hostile in GATE_HOSTILE:
                yield kind, name, hostile


def gate_input_case(kind: str, name: str, hostile: str, tmp: Path) -> None:
    """The gate's real steps (tests/gate_steps.py) with the real envcheck judging a failing host
    and one input hostile: the job must fail, with no forged workflow command nor output."""
    from tests.gate_steps import ACTION, GATE, forged, run_job

    facts = tmp / "facts.json"
    facts.write_text(json.dumps(samples.driver_upgraded_without_reboot().to_json()))
    inputs = {"extra-flags": f"--facts {facts} --no-smoke"}
    value = GATE_HOSTILE[hostile]
    inputs[name] = f"{inputs.get(name, '')} {value}".strip()
    envcheck = str(Path(sys.executable).parent / "envcheck")
    try:
        run = run_job(
            ACTION if kind == "action" else GATE,
            inputs,
            tmp,
            outputs={"install": {"envcheck": envcheck}},
            skip=("install",),
        )
    except subprocess.TimeoutExpired:
        TALLIES["gate"].record(f"{kind}-{name}-{hostile}", hung=True)
        return
    TALLIES["gate"].record(
        f"{kind}-{name}-{hostile}",
        traceback_seen="Traceback" in run.log,
        wrong_exit=not run.failed or run.job_exit == 0,  # the gate went green
        injected=bool(forged(run.log)),
        leaks=len(list(tmp.rglob("PWNED"))),
        detail=f"job exit {run.job_exit}; outputs {run.outputs}; log {run.log[-600:]!r}",
    )


def pipstep_cases() -> list[ProcessCase]:
    from tests.faults_pipsteps import pipstep_cases as cases  # it builds on this module

    return cases()


def process_cases() -> list[ProcessCase]:
    return [
        *live_probe_cases(),
        *engine_cases(),
        *through_dockerd_cases(),
        *fleet_cases(),
        *stream_cases(),
        *state_cases(),
        *smoke_claim_cases(),
        *refresh_packages_cases(),
        *helpful_error_cases(),
        *fix_cases(),
        *gate_cases(),
        *pipstep_cases(),
    ]


def totals() -> str:
    lines = [TALLIES[s].line() for s in SURFACES]
    whole = Tally("outside, all surfaces")
    for tally in TALLIES.values():
        whole.cases += tally.cases
        whole.tracebacks += tally.tracebacks
        whole.wrong_exit += tally.wrong_exit
        whole.injections += tally.injections
        whole.leaks += tally.leaks
        whole.damaged += tally.damaged
        whole.hangs += tally.hangs
    return "\n".join([*lines, whole.line()])
