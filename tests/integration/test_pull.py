"""`envcheck pull-image` and `envcheck.pull` against the real engine and real loopback registries.

Fresh images are pushed over the Registry API with random bytes, so the engine has never seen
their layers and a pull really downloads and extracts. Every image a test pulls is removed by
the `fresh` fixture; misbehaving registries are real processes or a real loopback proxy.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import EnvcheckError, EnvironmentProblem
from envcheck.image.pull_plan import PullPlan, PullResult, plan_pull
from envcheck.image.reference import parse_reference
from envcheck.matrix.load import load_matrix
from envcheck.pull.ensure import ensure_image
from envcheck.pull.run import RetryPolicy, pull_image
from envcheck.registry.errors import ManifestNotFound, RegistryUnavailable
from envcheck.render.progress import PlainDisplay
from tests.conftest import BUSYBOX, BUSYBOX_CUDA, LocalRegistry
from tests.inprocess import assert_one_screen, run_with_a_gone_reader
from tests.paths import ROOT
from tests.registry_push import Fresh, PushedImage, push_index
from tests.servers import TrickleServer, free_port

pytestmark = [pytest.mark.docker, pytest.mark.registry]

FAST = RetryPolicy(attempts=4, base=0.05, cap=0.2)  # the real backoff shape, test-sized


# -- fixtures -------------------------------------------------------------------------------------
def envcheck(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


class SentinelEngine:
    """A unix socket posing as DOCKER_HOST that counts connections: proof of no engine call."""

    def __init__(self, path: Path) -> None:
        self.path, self.connections = path, 0
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.thread.join()
        self.sock.close()


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[SentinelEngine]:
    engine = SentinelEngine(tmp_path / "docker.sock")
    yield engine
    engine.close()


# -- pulling ----------------------------------------------------------------------------------------
def test_pull_renders_each_layer_and_the_image_has_the_registry_digest(
    fresh: Fresh, docker_client: Any
) -> None:
    repo, pushed = fresh.push()
    ref = fresh.registry.ref(f"{repo}:1")
    out = io.StringIO()
    result = pull_image(
        PullPlan(parse_reference(ref)),
        client=docker_client,
        display=PlainDisplay(out, interval=0.0),
        retry=FAST,
    )
    assert (result.outcome, result.digest, result.attempts) == ("pulled", pushed.digest, 1)
    assert result.size == sum(s for _, s in pushed.layers) + _config_size(fresh, repo, pushed)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"envcheck: pulling {ref}: 3 layer(s), {lines[0].split(', ')[1]}"
    for digest, _ in pushed.layers:
        short = digest.removeprefix("sha256:")[:12]
        assert sum(f"layer {short}: downloaded" in line for line in lines) == 1, lines
        assert sum(f"layer {short}: extracted" in line for line in lines) == 1
    assert any(line.startswith("envcheck:   overall ") for line in lines)
    local = fresh.local(ref)
    assert local is not None and local["Id"] == pushed.config_digest == result.image_id
    assert f"{fresh.registry.addr}/{repo}@{pushed.digest}" in local["RepoDigests"]


def _config_size(fresh: Fresh, repo: str, pushed: PushedImage) -> int:
    import urllib.request

    request = urllib.request.Request(
        f"{fresh.registry.url}/v2/{repo}/blobs/{pushed.config_digest}", method="HEAD"
    )
    with urllib.request.urlopen(request) as answer:
        return int(answer.headers["Content-Length"])


def test_cli_json_then_an_already_present_image_is_a_no_op(
    fresh: Fresh, registry: LocalRegistry, proxy_factory: Callable[..., Any]
) -> None:
    repo, pushed = fresh.push()
    watch = proxy_factory(registry.addr)  # records every request the engine and envcheck make
    ref = f"{watch.addr}/{repo}:1"
    first = envcheck("pull-image", "--image", ref, "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert doc["outcome"] == "pulled" and doc["digest"] == pushed.digest and doc["reference"] == ref
    assert doc["size"] > 3 * (512 << 10) and doc["seconds"] > 0 and doc["registry"] == watch.addr
    assert doc["schema_version"] == 1 and doc["mirror"] is False and doc["failures"] == []
    seen = len(watch.requests)
    second = envcheck("pull-image", "--image", ref, "--json")
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert (again["outcome"], again["attempts"], again["digest"]) == ("present", 0, pushed.digest)
    later = [path for _, path, _ in watch.requests[seen:]]
    assert not any(d in p for p in later for d, _ in pushed.layers)  # no layer was fetched again
    text = envcheck("pull-image", "--image", ref)
    assert (
        text.returncode == 0 and "already present" in text.stdout and pushed.digest in text.stdout
    )


@pytest.mark.parametrize(
    ("tag", "nearest"), [("layer", "layers"), ("2", "cuda12.9, ")], ids=["typo", "far"]
)
def test_a_missing_tag_is_said_once_with_the_registrys_nearest_tags(
    registry: LocalRegistry, tag: str, nearest: str
) -> None:
    """It said the reference three times and the registry's 404 twice; a tag close to nothing
    (`2`) offered no tag at all. The registry's own tag list is offered."""
    ref = registry.ref(f"envcheck-test/busybox:{tag}")
    run = envcheck("pull-image", "--image", ref)
    assert run.returncode == 2
    error, hint = run.stderr.splitlines()  # other tests may push tags: the nearest come first
    assert error == f"envcheck: error: tag not found: {ref}"
    assert hint.startswith(
        f"envcheck: hint: the nearest tags in {ref.rsplit(':', 1)[0]}: {nearest}"
    )
    assert hint.endswith("; `envcheck pull-image --dry-run` shows the tag chosen for this host")


def test_a_registry_with_htpasswd_auth_says_log_in(registry_factory: Callable[..., Any]) -> None:
    locked = registry_factory(auth=True)
    run = envcheck("pull-image", "--image", f"{locked.addr}/envcheck-test/busybox:1")
    assert run.returncode == 4
    assert_one_screen(run.stderr)
    assert f"log in to {locked.addr}: `docker login {locked.addr}`" in run.stderr


def test_the_engines_500s_are_retried(
    fresh: Fresh, registry: LocalRegistry, docker_client: Any, proxy_factory: Callable[..., Any]
) -> None:
    repo, pushed = fresh.push(layers=1)
    # Only the engine's requests fail: its registry read (inspect_distribution) is retried.
    flaky = proxy_factory(registry.addr, fail_first=4, fail_agent="docker/")
    result = pull_image(
        PullPlan(parse_reference(f"{flaky.addr}/{repo}:1")), client=docker_client, retry=FAST
    )
    assert result.outcome == "pulled" and result.digest == pushed.digest
    assert [s for _, _, s in flaky.requests].count(500) == 4
    assert result.failures and all("500 Internal Server Error" in f for f in result.failures)
    assert all(f.startswith(f"reading {flaky.addr}, try ") for f in result.failures)
    assert result.warnings == ()  # envcheck's own config read was never refused


def test_envchecks_own_config_read_failing_is_a_warning_and_the_config_is_checked_after_the_pull(
    fresh: Fresh, registry: LocalRegistry, docker_client: Any, proxy_factory: Callable[..., Any]
) -> None:
    repo, pushed = fresh.push(layers=1, env={"CUDA_VERSION": "12.9.1"})
    # Only envcheck's own registry read fails: the engine's read and pull are untouched.
    flaky = proxy_factory(registry.addr, fail_first=1, fail_agent="envcheck")
    seen: list[dict[str, str]] = []
    result = pull_image(
        PullPlan(parse_reference(f"{flaky.addr}/{repo}:1")),
        client=docker_client,
        retry=FAST,
        check=lambda remote: seen.append(dict(remote.env)),
    )
    assert result.outcome == "pulled" and result.digest == pushed.digest and result.failures == ()
    assert len(result.warnings) == 1 and "could not read the image config" in result.warnings[0]
    assert "HTTP 500" in result.warnings[0]
    assert [s for _, _, s in flaky.requests].count(500) == 1  # one try: advisory, never retried
    assert seen[0] == {}  # before the pull: nothing but the tag to judge
    assert seen[1]["CUDA_VERSION"] == "12.9.1"  # after it: the pulled image's own config
    assert (result.config_source, result.size) == ("local image", None)


def test_a_registry_killed_mid_pull_ends_pulled_and_proven_or_cleanly_failed(
    fresh: Fresh,
    docker_client: Any,
    registry_factory: Callable[..., Any],
    proxy_factory: Callable[..., Any],
    tmp_path: Path,
) -> None:
    storage = tmp_path / "storage"
    storage.mkdir()
    doomed = registry_factory(storage=storage)
    # Layers well above loopback socket buffers, slowed down: the kill lands mid-blob.
    repo, pushed = fresh.push(base=doomed.url, layers=3, layer_size=8 << 20)
    slow = proxy_factory(doomed.addr, rate=2_000_000)
    ref = f"{slow.addr}/{repo}:1"
    outcome: dict[str, Any] = {}

    def pull() -> None:
        try:
            outcome["result"] = pull_image(
                PullPlan(parse_reference(ref)),
                client=docker_client,
                retry=RetryPolicy(attempts=4, base=0.5, cap=2),
            )
        except EnvcheckError as e:
            outcome["error"] = e

    worker = threading.Thread(target=pull)
    worker.start()
    _wait_for(lambda: any(d in p for d, _ in pushed.layers for _, p, _ in slow.requests), 30)
    time.sleep(1.0)
    doomed.kill()
    time.sleep(1.0)
    registry_factory(storage=storage, port=doomed.port)  # back on the same port, same blobs
    worker.join(120)
    assert not worker.is_alive()
    local = fresh.local(f"{slow.addr}/{repo}@{pushed.digest}")
    print("killed mid-pull:", outcome)  # which of the two allowed endings happened (-s shows it)
    layer_gets = [
        p for m, p, _ in slow.requests if m == "GET" and any(d in p for d, _ in pushed.layers)
    ]
    assert len(layer_gets) > len(pushed.layers)  # the kill did cut a download: it was fetched again
    if "result" in outcome:
        result: PullResult = outcome["result"]
        assert (
            result.digest == pushed.digest and local is not None and local["Id"] == result.image_id
        )
    else:
        error = outcome["error"]
        assert isinstance(error, EnvironmentProblem), error
        assert local is None  # nothing half-pulled is presented as an image


def test_a_dead_registry_fails_cleanly_after_retries(fresh: Fresh, docker_client: Any) -> None:
    ref = parse_reference(f"127.0.0.1:{free_port()}/envcheck-test/nothing:1")
    with pytest.raises(RegistryUnavailable) as info:
        pull_image(PullPlan(ref), client=docker_client, retry=FAST)
    assert "connection refused" in info.value.message.lower() and info.value.status == 4
    assert fresh.local(str(ref)) is None
    # what was tried, as it happened: four tries, and the three waits between them (backoff)
    hint = info.value.hint or ""
    assert "envcheck tried 4 times, waiting " in hint, hint
    assert hint.endswith(" s)") and len(hint.rpartition("(backoff: ")[2].split(", ")) == 3, hint


def test_a_failed_pull_in_the_smoke_says_so_and_is_never_marked_done(
    registry: LocalRegistry, docker_client: Any
) -> None:
    """The live line marked the failed pull `✓` when the in-process fallback began."""
    from envcheck.edges import activity
    from envcheck.render.activity import RichActivity
    from tests.terminal import Tty, screen

    ref = registry.ref(f"envcheck-test/absent-{uuid.uuid4().hex[:8]}:1")
    out = Tty()
    shown = RichActivity(out)
    with activity.showing(shown), pytest.raises(EnvcheckError):
        try:
            ensure_image(ref, allow_pull=True, quiet=True, client=docker_client)
        finally:
            activity.phase("smoke: starting /usr/bin/python3")
    lines = screen(out.getvalue())
    assert not [line for line in lines if line.startswith("✓ pulling")], lines
    (failed,) = [line for line in lines if line.startswith(f"✗ pulling {ref} from {registry.addr}")]
    assert "not found" in failed or "unknown" in failed, failed


def test_the_mirror_serves_when_the_first_registry_fails(fresh: Fresh, docker_client: Any) -> None:
    repo, pushed = fresh.push(layers=1)
    dead = parse_reference(f"127.0.0.1:{free_port()}/{repo}:1")
    mirror = parse_reference(fresh.registry.ref(f"{repo}:1"))
    notes = io.StringIO()
    result = pull_image(
        PullPlan(dead, (mirror,)), client=docker_client, retry=FAST, display=PlainDisplay(notes)
    )
    assert (result.registry, result.mirror, result.digest) == (
        fresh.registry.addr,
        True,
        pushed.digest,
    )
    assert result.requested == str(dead) and result.reference == str(mirror)
    assert f"trying the mirror {fresh.registry.addr}" in notes.getvalue()
    assert any(f.startswith(f"{dead.registry}:") for f in result.failures)


def test_a_pinned_digest_is_what_gets_pulled(fresh: Fresh, docker_client: Any) -> None:
    repo, old = fresh.push(layers=1, tag="1")
    _, new = fresh.push(layers=1, tag="1", repo=repo)  # the tag moved on since the pin
    ref = parse_reference(fresh.registry.ref(f"{repo}:1"))
    result = pull_image(PullPlan(ref, pinned_digest=old.digest), client=docker_client, retry=FAST)
    assert result.digest == old.digest and result.image_id == old.config_digest
    tagged = fresh.local(str(ref))
    assert tagged and tagged["Id"] == old.config_digest  # tag → pinned image
    missing = "sha256:" + "0" * 64
    with pytest.raises(ManifestNotFound):
        pull_image(
            PullPlan(ref.with_tag("2"), pinned_digest=missing), client=docker_client, retry=FAST
        )
    assert new.digest != old.digest


# -- refusals before any byte is pulled -------------------------------------------------------------
def test_an_image_whose_cuda_this_host_cannot_run_is_refused(registry: LocalRegistry) -> None:
    run = envcheck("pull-image", "--image", registry.ref(BUSYBOX_CUDA))
    assert run.returncode == 1
    assert_one_screen(run.stderr)
    assert "needs CUDA 12.9" in run.stderr and "--force" in run.stderr


def test_force_pulls_it_anyway(fresh: Fresh) -> None:
    repo, pushed = fresh.push(
        layers=1, env={"CUDA_VERSION": "12.9.1"}, tag="3.3.1-gpu-cuda12.9-cudnn9.9"
    )
    ref = fresh.registry.ref(f"{repo}:3.3.1-gpu-cuda12.9-cudnn9.9")
    refused = envcheck("pull-image", "--image", ref, "--quiet")
    assert refused.returncode == 1 and fresh.local(ref) is None
    forced = envcheck("pull-image", "--image", ref, "--quiet", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["digest"] == pushed.digest


def test_an_image_without_linux_amd64_is_refused(fresh: Fresh) -> None:
    repo, arm = fresh.push(layers=1, architecture="arm64", tag="arm")
    push_index(fresh.registry.url, repo, "multi", [(arm, "linux", "arm64")])
    run = envcheck("pull-image", "--image", fresh.registry.ref(f"{repo}:multi"), "--json")
    assert run.returncode == 1
    assert (
        "no linux/amd64 variant (it offers: linux/arm64)"
        in json.loads(run.stdout)["error"]["message"]
    )
    assert fresh.local(fresh.registry.ref(f"{repo}:multi")) is None


def test_invalid_references_are_refused_before_any_engine_call(sentinel: SentinelEngine) -> None:
    for bad in (
        "Paddle:3",
        "paddlepaddle/paddle:3.3.1 ",
        "a/b@sha256:12",
        "127.0.0.1:70000/a:1",
        "a;b",
    ):
        run = envcheck("pull-image", "--image", bad, env={"DOCKER_HOST": f"unix://{sentinel.path}"})
        assert run.returncode == 2, (bad, run.stderr)
        assert_one_screen(run.stderr)
        assert "invalid image reference" in run.stderr
    assert sentinel.connections == 0


# -- the engine itself ------------------------------------------------------------------------------
def test_daemon_unreachable_exits_4(tmp_path: Path, registry: LocalRegistry) -> None:
    run = envcheck(
        "pull-image",
        "--image",
        registry.ref(BUSYBOX),
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"},
    )
    assert run.returncode == 4
    assert_one_screen(run.stderr)
    assert "cannot reach the Docker engine" in run.stderr and "DOCKER_HOST" in run.stderr


def test_socket_permission_denied_exits_4(registry: LocalRegistry) -> None:
    if os.geteuid() != 0:
        pytest.fail(
            "this test drops root to a user outside the docker group: run the suite as root"
        )
    # As `nobody`, with Debian's Python 3.11 (the venv's interpreter may live under /root), from a
    # world-readable copy of envcheck and the few packages a pull needs (the checkout may not be).
    world = Path(tempfile.mkdtemp(prefix="envcheck-nobody-"))
    try:
        site = Path(
            next(p for p in sys.path if p.endswith("site-packages") and Path(p, "docker").is_dir())
        )
        for package in (
            "docker",
            "requests",
            "urllib3",
            "idna",
            "charset_normalizer",
            "certifi",
            "packaging",
        ):
            shutil.copytree(site / package, world / package)
        shutil.copytree(
            ROOT / "envcheck", world / "envcheck", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copytree(ROOT / "matrix", world / "matrix")
        subprocess.run(["chmod", "-R", "a+rX", str(world)], check=True)
        run = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
                "-m",
                "envcheck",
                "pull-image",
                "--image",
                registry.ref(BUSYBOX),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/tmp",
            check=False,
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": "/tmp",
                "PYTHONPATH": str(world),
                "PYTHONDONTWRITEBYTECODE": "1",
            },
        )
    finally:
        shutil.rmtree(world, ignore_errors=True)
    assert run.returncode == 4, run.stderr
    assert_one_screen(run.stderr)
    # the socket named, never `[Errno 13]`; the group, rootless or a context
    assert "permission denied on the engine's socket /var/run/docker.sock (" in run.stderr
    assert "Errno" not in run.stderr and "join the docker group" in run.stderr
    assert "rootless" in run.stderr and "docker context use" in run.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_cleanly(
    fresh: Fresh, registry: LocalRegistry, proxy_factory: Callable[..., Any], signum: int
) -> None:
    """SIGTERM (CI cancelling the job) unwinds exactly like Ctrl-C."""
    repo, pushed = fresh.push(layers=2, layer_size=2 << 20)
    slow = proxy_factory(registry.addr, rate=500_000)  # ≈8 s: plenty of time to interrupt
    ref = f"{slow.addr}/{repo}:1"
    child = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "pull-image", "--image", ref],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    _wait_for(
        lambda: (
            any("/blobs/" in p and pushed.layers[0][0] in p for _, p, _ in slow.requests)
            or any("/blobs/" in p and pushed.layers[1][0] in p for _, p, _ in slow.requests)
        ),
        30,
    )
    child.send_signal(signum)
    stdout, stderr = child.communicate(timeout=30)
    assert child.returncode == 130
    assert "Traceback" not in stderr and "envcheck: error: interrupted" in stderr
    assert "pulled" not in stdout
    time.sleep(1.0)  # the engine cancels the pull when its client goes away
    assert fresh.local(ref) is None


# -- dry run, planning, ensure_image --------------------------------------------------------------
def test_dry_run_prints_the_choice_and_touches_nothing(
    sentinel: SentinelEngine, tmp_path: Path
) -> None:
    env = {"DOCKER_HOST": f"unix://{sentinel.path}", "ENVCHECK_DRIVER_ROOT": str(tmp_path)}
    text = envcheck("pull-image", "--dry-run", env=env)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("would pull docker.io/paddlepaddle/paddle:")
    assert "  why: " in text.stdout and "  mirror: ccr-" in text.stdout
    doc = json.loads(
        envcheck("pull-image", "--dry-run", "--json", "--paddle", "3.3.1", env=env).stdout
    )
    assert doc["dry_run"] is True and doc["reference"] == "docker.io/paddlepaddle/paddle:3.3.1"
    assert doc["mirrors"] == ["ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddle:3.3.1"]
    assert doc["reason"] and doc["kind"] == "cpu"  # no NVIDIA driver: env's empty driver root
    named = json.loads(
        envcheck("pull-image", "--dry-run", "--json", "--image", "busybox", env=env).stdout
    )
    assert (
        named["reference"] == "docker.io/library/busybox:latest"
        or named["reference"] == "docker.io/library/busybox"
    )
    assert sentinel.connections == 0


def test_plan_from_the_shipped_matrix_has_the_baidu_mirror() -> None:
    matrix = load_matrix(None)
    plan = plan_pull(parse_reference("paddlepaddle/paddle:3.3.1"), matrix)
    assert [m.registry for m in plan.mirrors] == ["ccr-2vdh3abv-pub.cnc.bj.baidubce.com"]
    assert "3.3.1-gpu-cuda12.9-cudnn9.9" in plan.known_tags
    baidu = plan_pull(plan.mirrors[0], matrix)
    assert [str(m) for m in baidu.mirrors] == ["docker.io/paddlepaddle/paddle:3.3.1"]
    # Per the matrix, this GPU tag is published on Docker Hub only: no mirror to try.
    assert (
        plan_pull(
            parse_reference("paddlepaddle/paddle:3.3.1-gpu-cuda12.9-cudnn9.9"), matrix
        ).mirrors
        == ()
    )
    assert plan_pull(parse_reference("127.0.0.1:5000/x/y:1"), matrix) == PullPlan(
        parse_reference("127.0.0.1:5000/x/y:1")
    )


def test_ensure_image_returns_a_present_image_and_pulls_a_missing_one(fresh: Fresh) -> None:
    present = fresh.client.images.get(BUSYBOX)
    assert ensure_image(BUSYBOX, allow_pull=False, quiet=True, client=fresh.client) == present.id
    repo, pushed = fresh.push(layers=1)
    ref = fresh.registry.ref(f"{repo}:1")
    with pytest.raises(EnvironmentProblem, match="pulling is off"):
        ensure_image(ref, allow_pull=False, quiet=True, client=fresh.client)
    assert (
        ensure_image(ref, allow_pull=True, quiet=True, client=fresh.client) == pushed.config_digest
    )
    with pytest.raises(EnvcheckError) as info:
        ensure_image("Not A Ref", allow_pull=True, quiet=True, client=fresh.client)
    assert info.value.status == 2


def _wait_for(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {seconds} s")


def test_a_trickling_registry_is_retried_then_the_mirror_serves(
    fresh: Fresh, docker_client: Any
) -> None:
    """One byte every 2 s meets every read timeout: only the per-request deadline ends it."""
    repo, pushed = fresh.push(layers=1)
    mirror = parse_reference(fresh.registry.ref(f"{repo}:1"))
    retry = RetryPolicy(attempts=2, base=0.05, cap=0.1, request_deadline=3.0)
    with TrickleServer() as server:
        slow = parse_reference(f"{server.addr}/{repo}:1")
        result = pull_image(PullPlan(slow, (mirror,)), client=docker_client, retry=retry)
    assert (result.registry, result.mirror, result.digest) == (
        fresh.registry.addr,
        True,
        pushed.digest,
    )
    assert sum("did not answer within 3 s" in f for f in result.failures) == 2  # both tries


def test_a_trickling_registry_alone_ends_in_exit_4(docker_client: Any) -> None:
    retry = RetryPolicy(attempts=2, base=0.05, cap=0.1, request_deadline=3.0)
    with (
        TrickleServer(phase="body") as server,
        pytest.raises(RegistryUnavailable, match="did not answer within 3 s") as info,
    ):
        ref = parse_reference(f"{server.addr}/envcheck-test/nothing:1")
        pull_image(PullPlan(ref), client=docker_client, retry=retry)
        # The engine's reads (both tries) stop with envcheck's call: none is left trickling on.
        _wait_for(lambda: server.open == 0, 30)
    assert info.value.status == 4 and server.connections >= 2
    assert "the engine reading" in info.value.message


def test_a_reader_leaving_stdout_and_stderr_does_not_abandon_the_pull(fresh: Fresh) -> None:
    """`pull-image … 2>&1 | head -1`: the first progress line's EPIPE abandoned the pull
    (exit 4, no image). The reader's leaving silences the output, never the pull."""
    repo, pushed = fresh.push()
    ref = fresh.registry.ref(f"{repo}:1")
    code, _ = run_with_a_gone_reader(["pull-image", "--image", ref], stderr_too=True)
    assert code == 0
    image = fresh.local(ref)
    assert image is not None and any(pushed.digest in d for d in image["RepoDigests"])
