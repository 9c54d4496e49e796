"""`envcheck pull-image` reads the registry through the engine's own network path.

`docker pull` goes where the daemon's configuration says — its `registry-mirrors`, its
`insecure-registries`, its proxy — with the logins the docker CLI stored in `$DOCKER_CONFIG`.
envcheck's digest and platform read must go the same way, so that a network where only the engine
can reach the registry still pulls. Each test makes envcheck's own HTTP client unable to reach the
registry (its proxy variables point at a dead port: the daemon does not read the caller's
environment) and proves the pull still happens, through the real engine, from a real registry:

- the main engine and a loopback registry (127.0.0.0/8: the engine's insecure-registries default);
- a registry behind htpasswd, whose login exists only in a `docker login`'s `$DOCKER_CONFIG`;
- a second `dockerd` whose daemon.json names a loopback mirror for Docker Hub (a daemon restart is
  needed for `registry-mirrors`: the main engine is never touched), with no route to Docker Hub.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUSYBOX, LocalRegistry
from tests.inprocess import assert_one_screen
from tests.paths import ROOT
from tests.registry_push import Fresh
from tests.servers import HTPASSWD_PASSWORD, HTPASSWD_USER, SecondEngine, free_port

pytestmark = [pytest.mark.docker, pytest.mark.registry]


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def blocked_env(**extra: str) -> dict[str, str]:
    """This process's environment with every proxy variable pointing at a port nobody listens on:
    envcheck's own registry client (urllib reads them) cannot reach any registry."""
    dead = f"http://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k.upper() not in _PROXY_VARIABLES}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = dead
    return {**env, **extra}


def envcheck(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=env,
        check=False,
    )


def test_envchecks_own_client_really_is_blocked(registry: LocalRegistry) -> None:
    """The premise of every test here: with these variables, envcheck's own read fails."""
    probe = (
        "from envcheck.image.reference import parse_reference\n"
        "from envcheck.registry.http.client import RegistryClient\n"
        "from envcheck.registry.errors import RegistryUnavailable\n"
        "from envcheck.image.platforms import host_platform\n"
        f"ref = parse_reference({registry.ref(BUSYBOX)!r})\n"
        "try:\n    RegistryClient.for_reference(ref, timeout=5).inspect(ref, host_platform())\n"
        "except RegistryUnavailable as e:\n    print('unreachable:', e.message)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=blocked_env(),
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("unreachable: cannot reach 127.0.0.1:5000"), run.stdout


def test_a_registry_only_the_engine_reaches_is_pulled_with_a_warning(fresh: Fresh) -> None:
    repo, pushed = fresh.push(layers=2)
    ref = fresh.registry.ref(f"{repo}:1")
    run = envcheck("pull-image", "--image", ref, "--json", "--quiet", env=blocked_env())
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert (doc["outcome"], doc["digest"], doc["registry"]) == (
        "pulled",
        pushed.digest,
        fresh.registry.addr,
    )
    assert doc["failures"] == [] and doc["attempts"] == 1  # the engine's read never failed
    # The config was read after the pull, from the engine's copy; the size was not known.
    assert (doc["config_source"], doc["size"]) == ("local image", None)
    assert len(doc["warnings"]) == 1 and "could not read the image config" in doc["warnings"][0]
    assert "envcheck: warning: envcheck could not read the image config" in run.stderr
    local = fresh.local(ref)
    assert local is not None and local["Id"] == pushed.config_digest
    again = envcheck("pull-image", "--image", ref, "--json", "--quiet", env=blocked_env())
    assert json.loads(again.stdout)["outcome"] == "present", again.stderr  # same digest: a no-op


def test_a_cuda_claim_read_after_the_pull_is_still_refused_and_the_image_removed(
    fresh: Fresh,
) -> None:
    """The tag says nothing; only the config does, and only the engine can read it: the refusal
    comes after the pull, and the refused image does not stay behind."""
    repo, _ = fresh.push(layers=1, env={"CUDA_VERSION": "12.9.1"})
    ref = fresh.registry.ref(f"{repo}:1")
    run = envcheck("pull-image", "--image", ref, "--quiet", env=blocked_env())
    assert run.returncode == 1, run.stderr
    assert_one_screen(run.stderr)
    assert "needs CUDA 12.9 (config CUDA_VERSION=12.9.1)" in run.stderr
    assert "read from the pulled image's config, removed again" in run.stderr
    assert fresh.local(ref) is None
    forced = envcheck(
        "pull-image", "--image", ref, "--quiet", "--force", "--json", env=blocked_env()
    )
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["config_source"] is None  # --force: nothing judged it


def test_a_cuda_tag_is_refused_before_any_pull(fresh: Fresh) -> None:
    tag = "3.3.1-gpu-cuda12.9-cudnn9.9"
    repo, _ = fresh.push(layers=1, tag=tag)
    ref = fresh.registry.ref(f"{repo}:{tag}")
    run = envcheck("pull-image", "--image", ref, "--quiet", env=blocked_env())
    assert run.returncode == 1 and "needs CUDA 12.9 (tag " in run.stderr, run.stderr
    assert "removed again" not in run.stderr and fresh.local(ref) is None


# -- a login only the engine's client config holds ---------------------------------------------------
@pytest.fixture
def docker_config(tmp_path: Path) -> Path:
    folder = tmp_path / "docker-config"
    folder.mkdir(mode=0o700)
    return folder


def test_a_login_stored_by_docker_login_is_used_by_the_engines_read(
    fresh: Fresh, registry_factory: Callable[..., Any], docker_config: Path, tmp_path: Path
) -> None:
    storage = tmp_path / "storage"
    storage.mkdir()
    open_door = registry_factory(storage=storage)
    repo, pushed = fresh.push(base=open_door.url, layers=1)
    locked = registry_factory(auth=True, storage=storage)  # the same blobs, behind htpasswd
    ref = f"{locked.addr}/{repo}:1"
    refused = envcheck(
        "pull-image", "--image", ref, "--quiet", env=blocked_env(DOCKER_CONFIG=str(docker_config))
    )
    assert refused.returncode == 4 and f"docker login {locked.addr}" in refused.stderr, (
        refused.stderr
    )
    login = subprocess.run(
        [
            "docker",
            "--config",
            str(docker_config),
            "login",
            "--username",
            HTPASSWD_USER,
            "--password-stdin",
            locked.addr,
        ],
        input=HTPASSWD_PASSWORD,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert login.returncode == 0, login.stderr
    assert locked.addr in json.loads((docker_config / "config.json").read_text())["auths"]
    run = envcheck(
        "pull-image",
        "--image",
        ref,
        "--json",
        "--quiet",
        env=blocked_env(DOCKER_CONFIG=str(docker_config)),
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert (doc["outcome"], doc["digest"]) == ("pulled", pushed.digest)
    assert doc["warnings"] and doc["config_source"] == "local image"  # envcheck's own read: blocked


# -- a mirror only the engine's daemon.json names ----------------------------------------------------
@pytest.fixture
def mirrored_engine(
    registry: LocalRegistry, registry_factory: Callable[..., Any], proxy_factory: Callable[..., Any]
) -> Iterator[tuple[SecondEngine, Any]]:
    """A second dockerd whose daemon.json mirrors Docker Hub on a second loopback registry (the
    test images' storage), seen through a recording proxy."""
    mirror = registry_factory(storage=registry.storage)
    watch = proxy_factory(mirror.addr)
    engine = SecondEngine({"registry-mirrors": [f"http://{watch.addr}"]}).start()
    try:
        yield engine, watch
    finally:
        engine.stop()


def test_a_docker_hub_image_comes_through_the_engines_mirror(
    mirrored_engine: tuple[SecondEngine, Any], docker_client: Any
) -> None:
    engine, watch = mirrored_engine
    expected = docker_client.images.get_registry_data(f"127.0.0.1:5000/{BUSYBOX}").id
    env = blocked_env(DOCKER_HOST=engine.host)
    run = envcheck("pull-image", "--image", BUSYBOX, "--json", "--quiet", env=env)
    assert run.returncode == 0, f"{run.stderr}\n--- dockerd log:\n{engine.log()[-3000:]}"
    doc = json.loads(run.stdout)
    assert doc["reference"] == f"docker.io/{BUSYBOX}" and doc["registry"] == "docker.io"
    assert (doc["outcome"], doc["digest"]) == ("pulled", expected)
    assert doc["warnings"]  # envcheck could not read Docker Hub itself: the mirror is the engine's
    manifests = [p for m, p, s in watch.requests if "/manifests/" in p and s == 200]
    assert manifests and all(
        p.startswith("/v2/envcheck-test/busybox/manifests/") for p in manifests
    )
    assert any("/blobs/" in p for _, p, _ in watch.requests)  # the layers came through it too
