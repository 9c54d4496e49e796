"""CUDA forward-compatibility libcuda files built by tests/fakenv with the real ELF note (gcc,
`__attribute__((section(".note.cuda.fwd_compatibility")))`): the parser reads them as the
Container Toolkit does, cut or damaged copies never crash it, and the doctor judges a host whose
compat library's note excludes its driver branch (FAIL) and one whose note includes it (pass)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcheck.contracts.facts import CompatNote
from envcheck.probe.cuda_compat import probe_cuda_compat
from envcheck.probe.elf_note import ElfNoteError, note_from_bytes
from tests.fakenv import COMPAT_NOTES, FakeBuild
from tests.inprocess import doctor_process

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia

pytestmark = pytest.mark.fakegpu


@pytest.mark.parametrize("version", sorted(COMPAT_NOTES))
def test_the_note_of_a_built_compat_library_is_read(fake_build: FakeBuild, version: str) -> None:
    note = note_from_bytes(fake_build.compat(version).read_bytes())
    expected = COMPAT_NOTES[version]
    assert note == CompatNote(
        cuda=expected["CUDA Version"],
        drivers=tuple(expected["Driver"]),
        devices=tuple(expected["Device"]),
        format=expected["Format"],
    )


@given(cut=st.integers(0, 1 << 16), flip=st.integers(0, 1 << 16), byte=st.integers(0, 255))
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_cut_or_damaged_compat_library_never_crashes_the_parser(
    fake_build: FakeBuild, cut: int, flip: int, byte: int
) -> None:
    data = bytearray(fake_build.compat("590.44.01").read_bytes())
    data[flip % len(data)] = byte
    try:
        note = note_from_bytes(bytes(data[: max(cut, 16)]))
    except ElfNoteError:
        return
    assert note is None or isinstance(note, CompatNote)


def test_the_probe_finds_the_compat_library_and_whether_it_is_on_the_path(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    env = fake_nvidia("h100-580-compat-12.9")
    (lib,) = probe_cuda_compat(env)
    assert lib.path.endswith("usr/local/cuda/compat/libcuda.so.575.57.08")
    assert lib.version == "575.57.08" and lib.loaded
    assert lib.note is not None and lib.note.drivers == (535, 550, 560, 565, 570, 575)
    # the same library off the loader's path: found, not in use
    off_path = env | {"LD_LIBRARY_PATH": env["LD_LIBRARY_PATH"].split(":", 1)[1]}
    assert [x.loaded for x in probe_cuda_compat(off_path)] == [False]
    assert probe_cuda_compat(fake_nvidia("h100-580")) == ()  # the driver's libcuda is no compat one


def doctor_on(fake: dict[str, str]) -> tuple[int, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake
    code, doc, _ = doctor_process(env, "--no-smoke")
    return code, doc


def test_a_compat_library_whose_note_excludes_the_host_branch_fails(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    fake = fake_nvidia("h100-580-compat-12.9")
    code, doc = doctor_on(fake)
    (f,) = [f for f in doc["findings"] if f["id"].startswith("cuda.compat")]
    assert f["id"] == "cuda.compat-mismatch" and f["severity"] == "fail"
    assert "branch 580" in f["message"] and "535, 550, 560, 565, 570, 575" in f["message"]
    compat = str(Path(fake["ENVCHECK_DRIVER_ROOT"]) / "usr/local/cuda/compat")
    rest = fake["LD_LIBRARY_PATH"].removeprefix(compat + ":")
    assert f"`export LD_LIBRARY_PATH={rest}`" in f["fix"]
    assert doc["host"]["cuda_compat"][0]["note"]["cuda"] == "12.9"
    assert code == 1


def test_a_compat_library_whose_note_includes_the_host_branch_passes(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    _, doc = doctor_on(fake_nvidia("a100x2-535-compat-13.1"))
    (f,) = [f for f in doc["findings"] if f["id"].startswith("cuda.compat")]
    assert (f["id"], f["severity"]) == ("cuda.compat", "pass")
    assert "CUDA 13.1" in f["message"] and "535.104.05" in f["message"]
