"""The leftover sweep removes only what envcheck made and abandoned, on the real engine.

Containers here are made by hand with the labels a crashed envcheck would have left, from the
busybox test image or from an image built here whose own `LABEL`s imitate envcheck's.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from envcheck.engine.docker_adapter import LABEL
from envcheck.smoke.runner import ownership
from envcheck.smoke.runner.container import sweep_leftovers
from envcheck.smoke.runner.ownership import DEADLINE_LABEL, MARK_LABEL, OWNER_LABEL
from tests.conftest import BUSYBOX
from tests.inprocess import ENV
from tests.smoke_host import dead_pid

pytestmark = pytest.mark.docker

HOST = socket.gethostname()


def crashed_labels(
    run_id: str, owner: str | None = None, deadline: str = "9999999999", key: bytes | None = None
) -> dict[str, str]:
    """What a run whose process died (SIGKILL) left on its container (`key`: its owner key,
    else this process's)."""
    owner = owner or f"{HOST}:{dead_pid()}"
    key = ownership.owner_key(os.environ) if key is None else key
    return {
        LABEL: run_id,
        OWNER_LABEL: owner,
        DEADLINE_LABEL: deadline,
        MARK_LABEL: ownership.mark(key, run_id, owner, deadline),
    }


@pytest.fixture
def made(docker_client: Any) -> Iterator[list[Any]]:
    """Containers a test makes; whatever the sweep left is removed afterwards."""
    containers: list[Any] = []
    yield containers
    for container in containers:
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True, v=True)


def exited(client: Any, made: list[Any], image: str = BUSYBOX, **kw: Any) -> Any:
    container = client.containers.create(image, ["true"], **kw)
    made.append(container)
    container.start()
    container.wait(timeout=60)
    return container


def present(client: Any, container: Any) -> bool:
    try:
        client.containers.get(container.id)
    except docker.errors.NotFound:
        return False
    return True


@pytest.fixture
def labelled_image(docker_client: Any) -> Iterator[str]:
    """An image whose own LABELs copy a *valid* envcheck label set (a mark computed with this
    user's key, as if leaked from an old container), with an anonymous VOLUME."""
    run_id = uuid.uuid4().hex[:12]
    copied = crashed_labels(run_id)
    lines = "".join(f'LABEL {k}="{v}"\n' for k, v in copied.items())
    dockerfile = f"FROM {BUSYBOX}\n{lines}VOLUME /data\n"
    tag = f"envcheck-test/labelled:{run_id}"
    docker_client.images.build(
        fileobj=io.BytesIO(dockerfile.encode()),
        tag=tag,
        rm=True,
        forcerm=True,
        network_mode="none",
        pull=False,
    )
    yield tag
    with contextlib.suppress(docker.errors.ImageNotFound, docker.errors.APIError):
        docker_client.images.remove(tag, force=True)


def test_a_container_whose_image_presets_the_labels_is_not_ours(
    docker_client: Any,
    made: list[Any],
    labelled_image: str,
) -> None:
    """Image labels are container labels: even a copied valid mark does not make it ours, because
    the name (`envcheck-smoke-<run id>`) is set at create time and no image can preset it."""
    foreign = exited(docker_client, made, labelled_image)
    foreign.reload()
    assert foreign.labels[MARK_LABEL] and foreign.labels[LABEL]
    assert sweep_leftovers(docker_client, grace=0, variables=os.environ, stderr=sys.stderr) == []
    assert present(docker_client, foreign)


def test_a_label_key_alone_is_not_ours(docker_client: Any, made: list[Any]) -> None:
    """Another tool's container labelled `envcheck=…` (the old sweep removed it)."""
    foreign = exited(
        docker_client,
        made,
        labels={LABEL: "someone-else", OWNER_LABEL: "elsewhere:1", DEADLINE_LABEL: "1"},
    )
    forged = exited(
        docker_client,
        made,
        name=ownership.container_name("forged1"),
        labels={**crashed_labels("forged1"), MARK_LABEL: "0" * 64},
    )
    assert sweep_leftovers(docker_client, grace=0, variables=os.environ, stderr=sys.stderr) == []
    assert present(docker_client, foreign) and present(docker_client, forged)


def test_a_running_container_with_our_labels_is_never_swept(
    docker_client: Any, made: list[Any]
) -> None:
    run_id = uuid.uuid4().hex[:12]
    running = docker_client.containers.run(
        BUSYBOX,
        ["sleep", "300"],
        detach=True,
        name=ownership.container_name(run_id),
        labels=crashed_labels(run_id, deadline="1"),
    )
    made.append(running)
    assert sweep_leftovers(docker_client, grace=0, variables=os.environ, stderr=sys.stderr) == []
    running.reload()
    assert running.status == "running"


def test_a_fresh_leftover_waits_out_the_grace_period_then_goes_alone(
    docker_client: Any,
    made: list[Any],
    labelled_image: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    run_id = uuid.uuid4().hex[:12]
    # Built from the image with a VOLUME: the sweep removes the container, never its volume.
    leftover = exited(
        docker_client,
        made,
        labelled_image,
        name=ownership.container_name(run_id),
        labels=crashed_labels(run_id),
    )
    volume = next(m["Name"] for m in leftover.attrs["Mounts"] if m["Type"] == "volume")
    try:
        assert (
            sweep_leftovers(docker_client, variables=os.environ, stderr=sys.stderr) == []
        )  # exited a moment ago: inside the grace period
        assert present(docker_client, leftover)
        assert sweep_leftovers(docker_client, grace=0, variables=os.environ, stderr=sys.stderr) == [
            leftover.short_id
        ]
        assert not present(docker_client, leftover)
        assert docker_client.volumes.get(volume) is not None
        err = capfd.readouterr().err
        assert f"removed leftover smoke container {leftover.short_id}" in err
        assert ownership.container_name(run_id) in err
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            docker_client.volumes.get(volume).remove(force=True)


def test_a_live_owners_container_waits_for_its_deadline(
    docker_client: Any, made: list[Any]
) -> None:
    run_id = uuid.uuid4().hex[:12]
    deadline = str(int(time.time()) + 3600)
    mine = exited(
        docker_client,
        made,
        name=ownership.container_name(run_id),
        labels=crashed_labels(run_id, owner=f"{HOST}:1", deadline=deadline),
    )  # pid 1 lives
    assert sweep_leftovers(docker_client, grace=0, variables=os.environ, stderr=sys.stderr) == []
    assert sweep_leftovers(
        docker_client, grace=0, now=int(deadline) + 1, variables=os.environ, stderr=sys.stderr
    ) == [mine.short_id]


# -- the rules, pure --------------------------------------------------------------------------------
def attrs(
    labels: dict[str, str],
    *,
    name: str,
    status: str = "exited",
    created: str = "2024-05-01T12:00:00.123456789Z",
    finished: str = "2024-05-01T12:00:10.5Z",
) -> dict[str, Any]:
    return {
        "Name": f"/{name}",
        "Created": created,
        "Config": {"Labels": labels},
        "State": {"Status": status, "FinishedAt": finished},
    }


FINISHED = 1714564810.0  # 2024-05-01T12:00:10Z


@pytest.mark.parametrize(
    ("status", "now", "swept"),
    [
        ("exited", FINISHED + 119, False),
        ("exited", FINISHED + 121, True),
        ("created", FINISHED + 121, True),
        ("running", FINISHED + 10_000, False),
        ("paused", FINISHED + 10_000, False),
        ("restarting", FINISHED + 10_000, False),
    ],
    ids=["exited-in-grace", "exited-past-grace", "created", "running", "paused", "restarting"],
)
def test_leftover_rules(status: str, now: float, swept: bool) -> None:
    labels = crashed_labels("abc", owner="h:5")
    found = attrs(labels, name=ownership.container_name("abc"), status=status)
    reason = ownership.leftover_reason(
        found, key=ownership.owner_key(os.environ), now=now, hostname="h", alive=lambda pid: False
    )
    assert (reason is not None) == swept


def test_another_key_or_name_is_not_ours() -> None:
    labels = crashed_labels("abc", owner="h:5")
    assert ownership.is_ours(ownership.owner_key(os.environ), "/envcheck-smoke-abc", labels)
    assert not ownership.is_ours(b"k" * 32, "/envcheck-smoke-abc", labels)
    assert not ownership.is_ours(ownership.owner_key(os.environ), "/envcheck-smoke-abd", labels)
    assert not ownership.is_ours(
        ownership.owner_key(os.environ), "/envcheck-smoke-abc", {**labels, DEADLINE_LABEL: "1"}
    )  # labels changed after marking


def test_the_owner_key_is_private(tmp_path: Any) -> None:
    path = tmp_path / "state" / "envcheck" / "owner.key"
    key = ownership._stored_key(path)
    assert len(key) == ownership.KEY_BYTES and ownership._stored_key(path) == key
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    path.chmod(0o644)
    with pytest.raises(OSError, match="private"):
        ownership._stored_key(path)  # readable by others: no longer proof of anything


@pytest.mark.parametrize("damaged", [b"", b"\x01" * 7], ids=["empty", "short"])
def test_an_empty_or_short_key_of_ours_is_remade_whole(tmp_path: Any, damaged: bytes) -> None:
    """A first run on a full disk left owner.key empty for good: every later run used a
    process-only key and the sweep never removed a leftover again."""
    path = tmp_path / "state" / "envcheck" / "owner.key"
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(damaged)
    path.chmod(0o600)
    key = ownership._stored_key(path)
    assert len(key) == ownership.KEY_BYTES and path.read_bytes() == key
    assert ownership._stored_key(path) == key  # the next run proves with the same key
    assert sorted(p.name for p in path.parent.iterdir()) == ["owner.key"]  # no temp file left


@pytest.mark.parametrize("planted", ["fifo", "long"])
def test_a_key_that_is_not_ours_is_refused_and_left_alone(tmp_path: Any, planted: str) -> None:
    path = tmp_path / "state" / "envcheck" / "owner.key"
    path.parent.mkdir(parents=True, mode=0o700)
    if planted == "fifo":
        os.mkfifo(path, 0o600)  # opened blocking, this hung the run
    else:
        path.write_bytes(b"x" * (ownership.KEY_BYTES + 1))
        path.chmod(0o600)
    with pytest.raises(OSError):
        ownership._stored_key(path)
    assert planted == "fifo" or path.read_bytes() == b"x" * (ownership.KEY_BYTES + 1)


def test_a_first_run_on_a_full_disk_leaves_no_empty_key(tmp_path: Any) -> None:
    """The key is written whole before it is linked in: a write that fails (here RLIMIT_FSIZE,
    failing as ENOSPC would) leaves no key at all, so the next run makes a good one."""
    path = tmp_path / "state" / "envcheck" / "owner.key"
    code = (
        "import resource, signal\n"
        "from pathlib import Path\n"
        "from envcheck.smoke.runner import ownership\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
        "try:\n"
        f"    ownership._stored_key(Path({str(path)!r}))\n"
        "except OSError as e:\n"
        "    print('refused', e)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert "refused" in run.stdout, run.stdout + run.stderr
    assert not path.exists()
    assert len(ownership._stored_key(path)) == ownership.KEY_BYTES


@pytest.mark.parametrize(("planted", "provable"), [(b"", True), (b"x" * 33, False)])
def test_a_run_says_when_it_cannot_prove_ownership(
    tmp_path: Any, planted: bytes, provable: bool
) -> None:
    """An empty key is remade (ownership provable again); a key that is not ours is
    left alone and the run says it cannot prove ownership (the sweep prints why)."""
    folder = tmp_path / "envcheck"
    folder.mkdir(mode=0o700)
    (folder / "owner.key").write_bytes(planted)
    (folder / "owner.key").chmod(0o600)
    code = "from envcheck.smoke.runner import ownership; import os; print(ownership.unprovable(os.environ))"
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
    )
    assert (run.stdout.strip() == "None") == provable, run.stdout + run.stderr
    assert provable or "not an envcheck owner key" in run.stdout


def test_the_sweep_says_its_removals_on_the_injected_stderr(
    docker_client: Any, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Smoke/runner/container.py printed on the process's stderr whatever stream the command
    had; and the owner key comes from the command's XDG_STATE_HOME."""
    variables = {**ENV, "XDG_STATE_HOME": str(tmp_path)}
    run_id = uuid.uuid4().hex[:12]
    labels = crashed_labels(run_id, key=ownership.owner_key(variables))
    leftover = docker_client.containers.create(
        BUSYBOX, ["true"], name=ownership.container_name(run_id), labels=labels
    )
    stderr = io.StringIO()
    try:
        leftover.start()
        leftover.wait(timeout=30)
        swept = sweep_leftovers(docker_client, grace=0, variables=variables, stderr=stderr)
        assert swept == [leftover.short_id]
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            leftover.remove(force=True)
    assert f"removed leftover smoke container {leftover.short_id}" in stderr.getvalue()
    assert capfd.readouterr().err == ""
    assert (tmp_path / "envcheck" / "owner.key").is_file()
    assert sys.stderr is not stderr and os.environ.get("XDG_STATE_HOME") != str(tmp_path)
