"""`--image REF` keeps nothing of the matrix's choice: a user's image is described
by what is known of it (an official tag the matrix lists, else unknown), and a CPU build found
inside it is never sent back to the same image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.image.choice import select_image
from envcheck.image.given import given_image
from envcheck.matrix.load import load_matrix
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.plan import plan_smoke
from envcheck.smoke.verdict.causes import cpu_build_fix
from tests import scenarios as s
from tests.inprocess import envcheck

H100_CPU_WHEEL = s.host(
    driver=s.driver("580.159.04", "13.0"),
    gpus=[s.H100],
    paddle=s.PADDLE_331_CPU | {"python": "/srv/train/bin/python"},
    engine=s.ENGINE_NVIDIA,
)
USERS = "registry.example.com/team/trainer:2024-05"


def _image(tmp_path: Path, ref: str) -> tuple[dict[str, object], dict[str, object]]:
    facts = tmp_path / "host.json"
    facts.write_text(json.dumps(H100_CPU_WHEEL))
    run = envcheck("doctor", "--facts", str(facts), "--no-smoke", "--image", ref, "--json")
    doc = json.loads(run.stdout)
    selected = next(f for f in doc["findings"] if f["id"] == "image.selected")
    return doc["image"], selected


def test_a_users_tag_is_unknown_not_the_tag_the_doctor_would_choose(tmp_path: Path) -> None:
    """Before: `kind: gpu, cuda: 13.0, paddle: 3.3.1, confirmed: true` for a trainer image."""
    image, selected = _image(tmp_path, USERS)
    known = {k: image[k] for k in ("ref", "kind", "cuda", "cudnn", "paddle", "confirmed")}
    assert known == {
        "ref": USERS,
        "kind": None,
        "cuda": None,
        "cudnn": None,
        "paddle": None,
        "confirmed": False,
    }
    assert selected["message"] == f"{USERS} (given with --image: not a tag the matrix knows)"


@pytest.mark.parametrize(
    "ref",
    [
        "paddlepaddle/paddle:3.3.1-gpu-cuda12.6-cudnn9.5",
        "docker.io/paddlepaddle/paddle:3.3.1-gpu-cuda12.6-cudnn9.5",
    ],
)
def test_an_official_tag_is_described_by_its_matrix_row(tmp_path: Path, ref: str) -> None:
    image, _ = _image(tmp_path, ref)
    assert (image["ref"], image["kind"], image["cuda"], image["paddle"]) == (
        ref,
        "gpu",
        "12.6",
        "3.3.1",
    )


def test_a_cpu_build_in_a_users_image_is_not_sent_back_to_it() -> None:
    """Before: "use a CUDA image: `envcheck doctor --image <the same image>`"."""
    host = host_from_document(H100_CPU_WHEEL)
    matrix = load_matrix()
    image = given_image(USERS, matrix, select_image(host, matrix))
    fix = cpu_build_fix(plan_smoke(host, image, SmokeOptions(image=USERS)))
    assert isinstance(fix, str) and USERS not in fix
    assert fix == "use a CUDA image of Paddle: without --image the doctor chooses one for this host"
