"""Version parsers: recorded real outputs, and properties (hypothesis) — arbitrary input never
raises anything but VersionParseError, and the integer encodings round-trip."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from packaging.version import Version

from envcheck.contracts.versions import (
    VersionParseError,
    cuda_version_from_int,
    cudnn_version_from_int,
    parse_compute_capability,
    parse_dotted,
    parse_kernel_module_version,
    release_of,
    sm_of,
)

# compat_facts §9: /proc/driver/nvidia/version, proprietary and open kernel modules.
PROC_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
)
PROC_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build  "
    "(dvs-builder@U16)  Tue May 20 2025\n"
)
PROC_OPEN_ARM = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build\n"
)

ANYTHING = st.one_of(
    st.text(),
    st.integers(),
    st.floats(),
    st.none(),
    st.booleans(),
    st.binary(),
    st.lists(st.integers(), max_size=3),
    st.from_regex(r"\s*\d{1,4}(\.\d{1,4}){0,5}\s*", fullmatch=True),  # near-misses of real versions
)

PARSERS: list[Callable[[Any], Any]] = [
    parse_dotted,
    cuda_version_from_int,
    cudnn_version_from_int,
    parse_compute_capability,
    sm_of,
    release_of,
    parse_kernel_module_version,
]


@pytest.mark.parametrize("parse", PARSERS, ids=[p.__name__ for p in PARSERS])
@given(value=ANYTHING)
@example(value="535.104.05")
@example(value="٣.٥")  # Arabic-Indic digits match \d but not packaging's [0-9]
@example(value=12040)
@example(value=True)
def test_arbitrary_input_raises_only_version_parse_error(
    parse: Callable[[Any], Any], value: Any
) -> None:
    with contextlib.suppress(VersionParseError):
        parse(value)


@pytest.mark.parametrize(
    ("text", "raw", "normalised"),
    [
        ("535.104.05", "535.104.05", "535.104.5"),
        (" 580.65.06\n", "580.65.06", "580.65.6"),
        ("470.82.01", "470.82.01", "470.82.1"),
        ("12.2", "12.2", "12.2"),
    ],
    ids=["nvml-535", "with-whitespace", "nvml-470", "cuda"],
)
def test_driver_version_keeps_what_the_driver_printed(text: str, raw: str, normalised: str) -> None:
    parsed = parse_dotted(text)
    assert str(parsed) == parsed.raw == raw and parsed.version == Version(normalised)


@given(parts=st.lists(st.integers(0, 10**9 - 1), min_size=1, max_size=4), zeros=st.integers(0, 2))
def test_dotted_versions_round_trip_their_raw_text(parts: list[int], zeros: int) -> None:
    text = ".".join(f"{p:0{zeros + 1}d}" for p in parts)  # leading zeros as in 535.104.05
    parsed = parse_dotted(text)
    assert parsed.raw == text and parsed.version.release == tuple(parts)


@given(major=st.integers(1, 999), minor=st.integers(0, 99), patch=st.integers(0, 9))
def test_cuda_int_round_trips_to_major_minor(major: int, minor: int, patch: int) -> None:
    # 1000*major + 10*minor (+ patch digit, dropped): 12040 -> "12.4", 11080 -> "11.8"
    text = cuda_version_from_int(1000 * major + 10 * minor + patch)
    assert text == f"{major}.{minor}" and parse_dotted(text).version.release == (major, minor)


@pytest.mark.parametrize(
    ("value", "text"), [(12040, "12.4"), (11080, "11.8"), (13000, "13.0"), (12090, "12.9")]
)
def test_cuda_int_recorded_values(value: int, text: str) -> None:
    assert cuda_version_from_int(value) == text


@given(major=st.integers(1, 8), minor=st.integers(0, 9), patch=st.integers(0, 99))
def test_cudnn8_int_round_trips(major: int, minor: int, patch: int) -> None:
    assert cudnn_version_from_int(1000 * major + 100 * minor + patch) == f"{major}.{minor}.{patch}"


@given(major=st.integers(9, 99), minor=st.integers(0, 99), patch=st.integers(0, 99))
def test_cudnn9_int_round_trips(major: int, minor: int, patch: int) -> None:
    assert cudnn_version_from_int(10000 * major + 100 * minor + patch) == f"{major}.{minor}.{patch}"


@pytest.mark.parametrize(
    ("value", "text"), [(8906, "8.9.6"), (8600, "8.6.0"), (90501, "9.5.1"), (91300, "9.13.0")]
)
def test_cudnn_int_recorded_values(value: int, text: str) -> None:
    assert cudnn_version_from_int(value) == text


@given(major=st.integers(0, 99), minor=st.integers(0, 9))
def test_compute_capability_round_trips_and_sm_is_major_times_ten_plus_minor(
    major: int, minor: int
) -> None:
    text = f"{major}.{minor}"
    assert parse_compute_capability(text) == (major, minor)
    assert sm_of(text) == 10 * major + minor


@given(parts=st.lists(st.integers(0, 999), min_size=1, max_size=4))
def test_release_is_padded_and_keeps_major_and_minor_first(parts: list[int]) -> None:
    release = release_of(".".join(map(str, parts)))
    assert release[:2] == (parts[0], parts[1] if len(parts) > 1 else 0)
    assert len(release) == max(3, len(parts)) and release[: len(parts)] == tuple(parts)


@pytest.mark.parametrize(
    ("text", "version"),
    [(PROC_PROPRIETARY, "535.104.05"), (PROC_OPEN, "575.57.08"), (PROC_OPEN_ARM, "580.65.06")],
    ids=["proprietary-module", "open-module-x86_64", "open-module-aarch64"],
)
def test_kernel_module_version_from_proc(text: str, version: str) -> None:
    assert parse_kernel_module_version(text) == version


@given(noise=st.text())
def test_kernel_module_version_is_found_among_noise(noise: str) -> None:
    try:
        found = parse_kernel_module_version(noise + "\n" + PROC_PROPRIETARY)
    except VersionParseError:
        return  # noise may look like a (bad) module line; the contract is only the error type
    assert found  # the first module line wins, whichever it is
