"""The pull a smoke needs plans with the matrix the doctor chose its image with, and shows its
progress on the command's stderr.

Against the real engine and the local registry. Two images are pushed under one tag of one
repository (the "mirror"): the tag now names the second. A matrix copied from the shipped one
adds that repository, a "home" repository that lacks the tag, and the tag's row: on both, pinned
to the FIRST image's digest. Only a pull planned with that matrix tries the mirror after the
home's 404 and pulls the pinned image; the shipped matrix knows neither repository (no mirror,
no pin). Every image a test pulls is removed again.
"""

from __future__ import annotations

import io
import json
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import EnvcheckError
from envcheck.matrix.load import load_matrix
from envcheck.matrix.model import Matrix
from envcheck.pull.ensure import ensure_image
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.plan import Plan
from envcheck.smoke.runner.check import acquire_image
from tests.conftest import LocalRegistry
from tests.inprocess import ENV, run_envcheck
from tests.registry_push import PushedImage, push_random_image

pytestmark = [pytest.mark.docker, pytest.mark.registry]


@dataclass(frozen=True)
class Mirrored:
    home: str  # a reference whose repository lacks the tag: the registry answers 404
    mirror: str  # the same tag where it was pushed (twice: it names `moved` now)
    pinned: PushedImage  # the image the matrix pins
    moved: PushedImage  # the image the tag names now
    matrix_dir: Path  # the shipped matrix plus the two repositories and the tag's row

    def matrix(self) -> Matrix:
        return load_matrix(str(self.matrix_dir))


@pytest.fixture
def mirrored(registry: LocalRegistry, docker_client: Any, tmp_path: Path) -> Iterator[Mirrored]:
    unique = uuid.uuid4().hex[:10]
    home_repo = f"envcheck-test/home-{unique}"  # never pushed
    mirror_repo = f"envcheck-test/mirror-{unique}"
    tag = f"3.3.1-smokepull{unique}"  # a matrix tag starts with its paddle version
    pinned = push_random_image(registry.url, mirror_repo, tag, layers=2, layer_size=128 << 10)
    moved = push_random_image(registry.url, mirror_repo, tag, layers=2, layer_size=128 << 10)
    matrix_dir = tmp_path / "matrix"
    shutil.copytree(load_matrix(None).path, matrix_dir)
    with (matrix_dir / "images.toml").open("a", encoding="utf-8") as f:
        f.write(
            "\n"
            f'[[registry]]\nname = "test-home"\nref = "{registry.ref(home_repo)}"\n'
            'source = "test"\nconfirmed = true\n\n'
            f'[[registry]]\nname = "test-mirror"\nref = "{registry.ref(mirror_repo)}"\n'
            'source = "test"\nconfirmed = true\n\n'
            f'[[image]]\npaddle = "3.3.1"\ntag = "{tag}"\nkind = "cpu"\n'
            'registries = ["test-home", "test-mirror"]\nplatforms = ["linux/amd64"]\n'
            f'digest = "{pinned.digest}"\nsource = "test"\nconfirmed = true\n'
        )
    yield Mirrored(
        registry.ref(f"{home_repo}:{tag}"),
        registry.ref(f"{mirror_repo}:{tag}"),
        pinned,
        moved,
        matrix_dir,
    )
    for image in docker_client.images.list():
        names = image.tags + image.attrs.get("RepoDigests", [])
        if any(home_repo in n or mirror_repo in n for n in names):
            docker_client.images.remove(image.id, force=True)


def _assert_pulled_the_pin(progress: str, mirrored: Mirrored, *, via_mirror: bool) -> None:
    registry = mirrored.mirror.split("/", 1)[0]
    assert (f"trying the mirror {registry}" in progress) is via_mirror, progress
    assert f"pulling the digest the matrix pins, {mirrored.pinned.digest}" in progress, progress
    repository = mirrored.mirror.rsplit(":", 1)[0]  # a pinned pull names the digest alone
    assert f"pulling {repository}@{mirrored.pinned.digest}: 2 layer(s)" in progress, progress
    assert "overall 100%" in progress, progress


def test_ensure_image_plans_with_the_matrix_it_is_given_and_draws_on_its_stream(
    mirrored: Mirrored, docker_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = io.StringIO()
    image_id = ensure_image(
        mirrored.home,
        allow_pull=True,
        quiet=False,
        client=docker_client,
        matrix=mirrored.matrix(),
        stream=stream,
    )
    assert image_id == mirrored.pinned.config_digest
    _assert_pulled_the_pin(stream.getvalue(), mirrored, via_mirror=True)
    assert capsys.readouterr().err == ""  # nothing went to the process's stderr


def test_ensure_image_without_a_matrix_still_plans_with_the_shipped_one(
    mirrored: Mirrored, docker_client: Any
) -> None:
    """Other callers pass none: the shipped matrix knows neither repository, so no mirror."""
    with pytest.raises(EnvcheckError) as info:
        ensure_image(mirrored.home, allow_pull=True, quiet=True, client=docker_client)
    assert info.value.status == 2  # the home's 404, and no mirror to try


def test_the_smokes_acquire_image_pulls_with_the_options_matrix_and_stream(
    mirrored: Mirrored, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = io.StringIO()
    plan = Plan(
        mode="container",
        gpu_expected=False,
        gpu_reason="no GPU",
        device_args=("cpu",),
        image=mirrored.home,
    )
    options = SmokeOptions(matrix=mirrored.matrix(), stderr=stream)
    _client, image_id = acquire_image(plan, options)
    assert image_id == mirrored.pinned.config_digest
    _assert_pulled_the_pin(stream.getvalue(), mirrored, via_mirror=True)
    assert capsys.readouterr().err == ""


def test_the_doctors_pull_uses_the_commands_matrix_and_stderr(
    mirrored: Mirrored, docker_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """ENVCHECK_MATRIX only in the command's variables (never the process's): the doctor loads
    it once, and the smoke's pull plans with it (the pin, not the tag's newer image) and draws on
    the command's stderr."""
    run = run_envcheck(
        ["doctor", "--image", mirrored.mirror, "--json"],
        env={**ENV, "ENVCHECK_MATRIX": str(mirrored.matrix_dir)},
    )
    # The random image has no Python: the smoke container cannot start (exit 4), after the pull.
    assert json.loads(run.stdout)["exit_code"] == run.returncode == 4, run.stderr
    assert "envcheck: creating the smoke container" in run.stderr
    _assert_pulled_the_pin(run.stderr, mirrored, via_mirror=False)
    assert docker_client.images.get(mirrored.mirror).id == mirrored.pinned.config_digest
    assert capsys.readouterr().err == ""


def test_a_mirrors_image_is_the_one_the_smoke_container_runs(
    mirrored: Mirrored, docker_client: Any
) -> None:
    """The home registry lacks the tag and the mirror serves it: the engine holds the image under
    the mirror's name only, and the container is made from the pulled image's id, never from the
    name the doctor asked for ("No such image")."""
    run = run_envcheck(
        ["doctor", "--image", mirrored.home, "--json"],
        env={**ENV, "ENVCHECK_MATRIX": str(mirrored.matrix_dir)},
    )
    _assert_pulled_the_pin(run.stderr, mirrored, via_mirror=True)
    assert "No such image" not in run.stderr, run.stderr
    assert "starting the smoke container" in run.stderr, run.stderr  # made; no Python to run
