"""The smoke image's CUDA compat libcuda, read from its files on the real engine: an image built
here FROM the offline busybox with a compat libcuda of tests/fakenv (real ELF, real note) in
/usr/local/cuda/compat and that folder on its LD_LIBRARY_PATH, as the CUDA 13.0 images do
(Paddle#76558). The smoke container is created, never started, and its note is judged against
the host driver."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.smoke_report import ContainerInfo
from envcheck.smoke.runner.container import SmokeContainer
from envcheck.smoke.runner.container_spec import ContainerSpec
from envcheck.smoke.verdict.image_compat import image_compat_findings
from tests import scenarios as s
from tests.conftest import BUSYBOX
from tests.fakenv import FakeBuild
from tests.smoke_host import SCRIPTS

pytest_plugins = ("tests.fakenv", "tests.smoke_fixtures")

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_leftovers")]


@pytest.fixture
def compat_image(docker_client: Any, fake_build: FakeBuild) -> Iterator[Callable[[str], str]]:
    """`compat_image("575.57.08")`: busybox with that compat libcuda, its folder on the path."""
    tags: list[str] = []

    def build(version: str) -> str:
        context = io.BytesIO()
        dockerfile = (
            f"FROM {BUSYBOX}\n"
            f"COPY libcuda.so.{version} /usr/local/cuda/compat/libcuda.so.{version}\n"
            "ENV LD_LIBRARY_PATH=/usr/local/cuda/compat:/usr/local/nvidia/lib64\n"
        )
        with tarfile.open(fileobj=context, mode="w") as tar:
            for name, data in (
                ("Dockerfile", dockerfile.encode()),
                (f"libcuda.so.{version}", fake_build.compat(version).read_bytes()),
            ):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        tag = f"envcheck-test/compat:{uuid.uuid4().hex[:12]}"
        context.seek(0)
        docker_client.images.build(
            fileobj=context, custom_context=True, tag=tag, rm=True, network_mode="none", pull=False
        )
        tags.append(tag)
        return tag

    yield build
    for tag in tags:
        with contextlib.suppress(docker.errors.ImageNotFound, docker.errors.APIError):
            docker_client.images.remove(tag, force=True)


def created(docker_client: Any, image: str) -> ContainerInfo:
    """What the smoke container learnt of its image once created (it is removed unstarted)."""
    spec = ContainerSpec(image=image, args=(), script=SCRIPTS / "lockdown.py", timeout=30.0)
    with SmokeContainer(docker_client, spec, variables=os.environ, stderr=None) as box:
        return ContainerInfo(compat=box.compat)


def host_on(driver: str, cuda: str) -> Any:
    return host_from_document(s.host(driver=s.driver(driver, cuda), gpus=[s.H100]))


def test_the_images_compat_library_and_its_note_are_read_before_the_smoke_starts(
    docker_client: Any, compat_image: Callable[[str], str]
) -> None:
    info = created(docker_client, compat_image("575.57.08"))
    assert info.compat is not None
    (lib,) = info.compat
    assert (lib.path, lib.version, lib.loaded) == (
        "/usr/local/cuda/compat/libcuda.so.575.57.08",
        "575.57.08",
        True,
    )
    assert lib.note is not None and lib.note.drivers == (535, 550, 560, 565, 570, 575)
    # on a 580 driver the note excludes the host branch: the image fails before its smoke
    (f,) = image_compat_findings(host_on("580.65.06", "13.0"), info)
    assert f.id == "image.compat-mismatch" and f.severity == "fail"
    assert "branch 580" in f.message and "image's LD_LIBRARY_PATH" in f.message
    # on a 570 driver the toolkit would use it: no finding
    assert image_compat_findings(host_on("570.124.06", "12.8"), info) == []


def test_an_image_without_a_compat_folder_has_none(docker_client: Any) -> None:
    assert created(docker_client, BUSYBOX).compat == ()


def test_the_note_of_the_fake_matches_what_the_host_probe_reads(
    fake_build: FakeBuild, tmp_path: Path
) -> None:
    """The same library read from a host folder and from an image gives the same note."""
    from envcheck.probe.cuda_compat import probe_cuda_compat

    folder = tmp_path / "usr" / "local" / "cuda" / "compat"
    folder.mkdir(parents=True)
    (folder / "libcuda.so.590.44.01").write_bytes(fake_build.compat("590.44.01").read_bytes())
    (lib,) = probe_cuda_compat({"ENVCHECK_DRIVER_ROOT": str(tmp_path)})
    assert lib.note is not None and lib.note.cuda == "13.1" and not lib.loaded


@pytest.mark.parametrize("chunk", [1, 511, 1 << 16], ids=["bytes", "odd", "64k"])
def test_the_archive_is_read_as_a_stream_whatever_its_chunks(
    fake_build: FakeBuild, chunk: int
) -> None:
    """The engine's archive arrives in chunks of any size; a cut one is an unreadable library,
    never an exception."""
    from envcheck.smoke.runner.image_compat import _libraries, _Stream

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name in ("compat/libnvidia-ptxjitcompiler.so.1", "compat/libcuda.so.590.44.01"):
            tar.add(fake_build.compat("590.44.01"), arcname=name)
    raw = data.getvalue()
    chunks = iter([raw[i : i + chunk] for i in range(0, len(raw), chunk)])
    (lib,) = _libraries(_Stream(chunks), loaded=True)
    assert lib.version == "590.44.01" and lib.note is not None and lib.note.cuda == "13.1"
    (cut,) = _libraries(_Stream(iter([raw[: len(raw) // 2]])), loaded=True)
    assert cut.error is not None and cut.note is None
