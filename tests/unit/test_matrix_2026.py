"""The matrix's edges of 2026: GPU generations by PCI id and the driver branches that drive them
(`gpu_generations.toml`), a CUDA toolkit with no bundled driver (13.4), Paddle's develop
nightlies `X.Y.Z.postDATE+sha`, arch names with suffixes, and the kernel module's flavour."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envcheck.contracts.errors import MatrixError
from envcheck.contracts.versions import (
    VersionParseError,
    parse_arch_name,
    parse_kernel_module_flavor,
)
from envcheck.matrix.compat import driver_support
from envcheck.matrix.load import load_matrix
from envcheck.matrix.model import release_version
from envcheck.probe.paddle_build import build_facts

REPO_DIR = Path(__file__).resolve().parents[2] / "matrix"
MATRIX = load_matrix(str(REPO_DIR))


def test_every_gpu_of_the_reports_has_its_generation() -> None:
    """The ids the failure reports name (GTX 1050/1080, Tesla P4, P100, V100, T4, A100, H100,
    RTX 5090) map to their generation."""
    named = {
        "1c81": "Pascal",
        "1b80": "Pascal",
        "1bb3": "Pascal",
        "15f8": "Pascal",
        "1db4": "Volta",
        "1eb8": "Turing",
        "20b0": "Ampere",
        "2330": "Hopper",
        "2b85": "Blackwell",
    }
    assert {d: MATRIX.generation_of(d)[0].name for d in named} == named  # type: ignore[index]
    assert MATRIX.generation_of("0x1B80") is not None  # as sysfs writes it


def test_branches_and_their_end_of_life() -> None:
    eol = {b.branch: b.end_of_life for b in MATRIX.driver_branches}
    assert eol[535] == "2026-06" and eol[580] == "2028-06"
    assert eol[595] == "2027-03" and eol[610] == "2026-08" and eol[620] == "2029-09"
    assert MATRIX.last_branch_for("Pascal").branch == 580  # type: ignore[union-attr]
    assert MATRIX.driver_branch(600).branch == 595  # type: ignore[union-attr]
    assert MATRIX.driver_branch(470) is None  # older than every row: not judged


def test_the_disputed_cut_stays_unconfirmed() -> None:
    """590 or 595: the sources disagree on which branch dropped Maxwell, Pascal and Volta."""
    r590 = MATRIX.driver_branch(590)
    assert r590 is not None and r590.branch == 590 and not r590.confirmed
    assert "Pascal" not in r590.generations


def test_cuda_13_4_has_no_bundled_driver_and_minor_compat_decides() -> None:
    assert MATRIX.toolkit_min_driver("13.4") is None
    assert MATRIX.toolkit_min_driver("13.3").min_driver == "610.43.02"  # type: ignore[union-attr]
    support = driver_support("580.95.05", "13.0", "13.4", MATRIX)
    assert support.level == "minor-compat" and support.minimum_driver == "580.65.06"
    full = driver_support("620.10.01", "13.4", "13.4", MATRIX)
    assert full.level == "full" and full.reason == "the driver supports CUDA 13.4"


def _matrix_with(tmp_path: Path, extra: str) -> Path:
    shutil.copytree(REPO_DIR, tmp_path / "m", ignore=shutil.ignore_patterns("*.md"))
    with open(tmp_path / "m" / "gpu_generations.toml", "a", encoding="utf-8") as f:
        f.write(extra)
    return tmp_path / "m"


def test_the_loader_reports_every_generation_problem_at_once(tmp_path: Path) -> None:
    root = _matrix_with(
        tmp_path,
        """
[[gpu_generation]]
name = "Kepler"
devices = { "1B80" = "GeForce GTX 1080", "1eb8" = "Tesla T4" }
open_module = "maybe"
source = "3P"
confirmed = false

[[driver_branch]]
branch = 470
kind = "production"
end_of_life = "2024"
generations = ["Kepler", "Fermi"]
source = "3P"
confirmed = false
""",
    )
    with pytest.raises(MatrixError) as e:
        load_matrix(str(root))
    problems = "\n".join(e.value.problems)
    assert "gpu_generation entry 8 (Kepler): devices: not PCI device ids" in problems
    assert "open_module: expected one of unsupported, supported, required" in problems
    assert "driver_branch entry 8 (470): end_of_life: not a year and month" in problems
    assert "generations: unknown ['Fermi']" in problems


def test_a_device_id_belongs_to_one_generation(tmp_path: Path) -> None:
    root = _matrix_with(
        tmp_path,
        """
[[gpu_generation]]
name = "Kepler"
devices = { "1eb8" = "Tesla T4" }
open_module = "unsupported"
source = "3P"
confirmed = false
""",
    )
    with pytest.raises(MatrixError) as e:
        load_matrix(str(root))
    assert any("devices: 1eb8 is also in" in p for p in e.value.problems)


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("2.5.2.post117", "2.5.2"),  # a CUDA marker: a wheel of 2.5.2
        ("3.3.1.post20260403+ef0820a64e9", "3.3.1.post20260403"),  # a develop nightly
        ("3.4.0.post20260417+616f7c19d12", "3.4.0.post20260417"),
        ("3.0.0.dev20250717", "3.0.0.dev20250717"),
    ],
    ids=["cuda-marker", "nightly-3.3.1", "nightly-3.4.0", "dev-nightly"],
)
def test_a_nightly_post_is_no_cuda_marker(version: str, release: str) -> None:
    assert str(release_version(version)) == release


def test_a_nightly_gets_no_release_rows_but_a_cuda_marker_does() -> None:
    assert MATRIX.builds_for("3.3.1.post20260403+ef0820a64e9") == ()
    assert MATRIX.builds_for("2.5.2.post117")


@pytest.mark.parametrize(
    ("name", "sm"),
    [(86, 86), ("86", 86), ("sm_90a", 90), ("100a", 100), ("120f", 120), ("compute_120f", 120)],
)
def test_arch_names_with_suffixes(name: object, sm: int) -> None:
    assert parse_arch_name(name) == sm


@pytest.mark.parametrize("name", ["", "sm_", "12.0f", True, "x120"])
def test_arch_names_that_are_not_archs(name: object) -> None:
    with pytest.raises(VersionParseError):
        parse_arch_name(name)


def test_a_build_string_with_suffixed_archs_keeps_them() -> None:
    """`compiled_cuda_archs = [90, "100a", "120f"]`: suffixed names were dropped before."""
    facts = build_facts(
        {
            "full_version": "3.4.0",
            "cuda_version": "13.0",
            "compiled_cuda_archs": [90, "100a", "120f"],
        },
        "paddlepaddle-gpu",
        "/site",
        None,
    )
    assert facts.compiled_cuda_archs == (90, 100, 120)


@pytest.mark.parametrize(
    ("text", "flavor"),
    [
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build",
            "open",
        ),
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19", "proprietary"),
        ("nothing of the kind", None),
    ],
    ids=["open", "proprietary", "neither"],
)
def test_the_kernel_module_flavour(text: str, flavor: str | None) -> None:
    assert parse_kernel_module_flavor(text) == flavor


def test_a_matrix_arch_list_takes_suffixed_names() -> None:
    """`archs = [90, "100a", "120f"]` as a build string lists them; a name that is no arch is
    still refused."""
    from envcheck.matrix import fields

    assert fields.archs([90, "100a", "120f"]) == (90, 100, 120)
    with pytest.raises(fields.Bad, match="not sm numbers"):
        fields.archs([90, "12.0f"])
