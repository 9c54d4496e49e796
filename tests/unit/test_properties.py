"""Invariants, checked on generated inputs (hypothesis) against the shipped matrix.

- the image choice never names a tag the driver or any GPU cannot run, and a newer driver never
  gets an older CUDA (except where a known defect, defects.toml, rejects the newer one: said so);
- driver compatibility is monotone: a newer driver never runs less, a newer CUDA never needs less;
- the facts round-trip: host -> JSON -> host gives the same host;
- the verdict and the exit code follow one severity order, whatever the order of the findings.

Each test runs a bounded number of examples (CI: a few seconds each, no deadline on a loaded
machine; the examples are derandomized so a failure reproduces).
"""

from __future__ import annotations

import json
import random
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.facts import (
    CudaDriverFacts,
    DriverFacts,
    EngineFacts,
    GpuFacts,
    HostFacts,
    LibraryCandidate,
    LibraryFacts,
    MachineFacts,
    PaddleFacts,
    host_from_document,
    to_dict,
)
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import (
    CPU_FALLBACK_ID,
    WRONG_RESULTS_ID,
    exit_status_of,
    verdict_of,
)
from envcheck.contracts.record import replace
from envcheck.contracts.versions import parse_dotted, release_of
from envcheck.image.choice import gpu_candidates, select_image
from envcheck.matrix.builds import build_for, runnable_archs
from envcheck.matrix.compat import arch_supported, cc_below, driver_support
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR
from envcheck.smoke.workload.protocol import LibraryOrigin

MATRIX = load_matrix(str(REPO_DIR))
CI = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

# -- generators ------------------------------------------------------------------------------------

# Every driver the matrix names (toolkit, minor-compat floors, defect bounds), their neighbours, and
# some in between: the boundaries are where a rule can be off by one.
_NAMED = sorted(
    {t.min_driver for t in MATRIX.toolkit_drivers if t.min_driver}
    | {m.min_driver for m in MATRIX.minor_compat}
    | {d.driver_above for d in MATRIX.defects},
    key=lambda v: parse_dotted(v).version,
)


def _neighbours(version: str) -> list[str]:
    major, minor = (int(x) for x in version.split(".")[:2])
    return [f"{major}.{max(minor - 1, 0):02d}", f"{major}.{minor + 1:02d}", f"{major + 1}.00"]


DRIVERS = st.one_of(
    st.sampled_from(_NAMED),
    st.sampled_from([n for v in _NAMED for n in _neighbours(v)]),
    st.builds(
        lambda a, b, c: f"{a}.{b:02d}.{c:02d}",
        st.integers(384, 600),
        st.integers(0, 200),
        st.integers(0, 20),
    ),
)


def driver_cuda(driver: str) -> str | None:
    """The CUDA a real driver reports (nvmlSystemGetCudaDriverVersion): the newest toolkit whose
    minimum driver it meets (NV-RN Table 3), as major.minor."""
    have = parse_dotted(driver).version
    met = [
        t.cuda
        for t in MATRIX.toolkit_drivers
        if t.min_driver and have >= parse_dotted(t.min_driver).version
    ]
    if not met:
        return None
    newest = max(met, key=release_of)
    return ".".join(map(str, release_of(newest)[:2]))


CCS = st.sampled_from(
    sorted({g.compute_capability for g in MATRIX.gpus} | {"3.0", "6.1", "7.2", "10.0"})
)
GPUS = st.lists(CCS, min_size=1, max_size=4).map(
    lambda ccs: tuple(
        GpuFacts(index=i, name=f"GPU {cc}", compute_capability=cc) for i, cc in enumerate(ccs)
    )
)
RELEASES = st.sampled_from([r.version for r in MATRIX.releases])
CUDAS = st.sampled_from(
    sorted(
        {t.cuda for t in MATRIX.toolkit_drivers} | {i.cuda for i in MATRIX.images if i.cuda},
        key=release_of,
    )
)


def gpu_host(driver: str, gpus: tuple[GpuFacts, ...]) -> HostFacts:
    return HostFacts(
        driver=DriverFacts(status="ok", version=driver, cuda=driver_cuda(driver)),
        gpus=gpus,
        machine=MachineFacts(arch="x86_64"),
    )


def _cuda_key(cuda: str | None) -> tuple[int, ...]:
    return release_of(cuda)[:2] if cuda else (0,)


# -- the image choice ------------------------------------------------------------------------------


@CI
@given(DRIVERS, GPUS, RELEASES)
def test_the_chosen_tag_runs_on_the_driver_and_every_gpu(
    driver: str, gpus: tuple[GpuFacts, ...], paddle: str
) -> None:
    host = gpu_host(driver, gpus)
    choice = select_image(host, MATRIX, paddle)
    if choice.ref is None:
        # said why, with every tag of the release rejected (a pip-only release has none)
        assert choice.kind == "gpu" and choice.reason
        assert len(choice.rejected) == len(gpu_candidates(MATRIX, paddle))
        return
    assert choice.kind == "gpu" and choice.cuda is not None and choice.paddle == paddle
    support = driver_support(driver, host.driver.cuda, choice.cuda, MATRIX)
    assert support.level != "none", (driver, choice.ref, support.reason)
    archs = runnable_archs(MATRIX, paddle, choice.cuda)
    build = build_for(MATRIX, paddle, choice.cuda)
    release = MATRIX.release(paddle)
    assert release is not None
    floor = build.floor(release, "linux/amd64") if build else release.min_compute_capability
    for gpu in gpus:
        cc = gpu.compute_capability or ""
        assert not cc_below(cc, floor), (cc, floor, choice.ref)
        if archs is not None:
            assert (
                arch_supported(cc, archs.archs) and int(cc.replace(".", "")) not in archs.absent
            ), (cc, choice.ref)


@CI
@given(st.lists(DRIVERS, min_size=2, max_size=2), GPUS, RELEASES)
def test_a_newer_driver_never_gets_an_older_cuda(
    drivers: list[str], gpus: tuple[GpuFacts, ...], paddle: str
) -> None:
    older, newer = sorted(drivers, key=lambda v: parse_dotted(v).version)
    before = select_image(gpu_host(older, gpus), MATRIX, paddle)
    after = select_image(gpu_host(newer, gpus), MATRIX, paddle)
    if before.ref is None:
        return  # nothing ran on the older driver: any answer is at least as good
    assert after.ref is not None, (older, newer, before.ref, after.reason)
    if _cuda_key(after.cuda) >= _cuda_key(before.cuda):
        return
    # The only way down: a known defect rejects the older driver's tag on the newer driver.
    why = {r.ref: r.reason for r in after.rejected}.get(before.ref, "")
    assert "known defect" in why, (older, newer, before.ref, after.ref, why)


@CI
@given(DRIVERS, RELEASES)
def test_no_usable_gpu_gets_the_cpu_image(driver: str, paddle: str) -> None:
    for host in (
        gpu_host(driver, ()),
        HostFacts(
            driver=DriverFacts(status="error", version=driver, error="NVML_ERROR_UNKNOWN"),
            gpus=(GpuFacts(index=0, compute_capability="8.0"),),
        ),
    ):
        choice = select_image(host, MATRIX, paddle)
        assert choice.kind == "cpu" and choice.cuda is None


# -- driver compatibility --------------------------------------------------------------------------

LEVEL = {"none": 0, "minor-compat": 1, "full": 2}


@CI
@given(st.lists(DRIVERS, min_size=2, max_size=2), CUDAS)
def test_a_newer_driver_never_runs_less(drivers: list[str], cuda: str) -> None:
    older, newer = sorted(drivers, key=lambda v: parse_dotted(v).version)
    low = driver_support(older, driver_cuda(older), cuda, MATRIX)
    high = driver_support(newer, driver_cuda(newer), cuda, MATRIX)
    assert LEVEL[high.level] >= LEVEL[low.level], (older, newer, cuda, low, high)


@CI
@given(DRIVERS, st.lists(CUDAS, min_size=2, max_size=2))
def test_a_newer_cuda_never_needs_less(driver: str, cudas: list[str]) -> None:
    lower, higher = sorted(cudas, key=release_of)
    low = driver_support(driver, driver_cuda(driver), lower, MATRIX)
    high = driver_support(driver, driver_cuda(driver), higher, MATRIX)
    assert LEVEL[high.level] <= LEVEL[low.level], (driver, lower, higher, low, high)


@CI
@given(DRIVERS, CUDAS)
def test_support_level_agrees_with_the_drivers_it_names(driver: str, cuda: str) -> None:
    reported = driver_cuda(driver)
    support = driver_support(driver, reported, cuda, MATRIX)
    have = parse_dotted(driver).version
    if reported and release_of(reported) >= release_of(cuda):
        assert support.level == "full"  # the driver says it runs this CUDA
    if support.full_driver and have >= parse_dotted(support.full_driver).version:
        assert support.level == "full"
    if support.minimum_driver and have < parse_dotted(support.minimum_driver).version:
        assert support.level == "none" and support.minimum_driver in support.reason


@CI
@given(st.text(max_size=12), CUDAS)
def test_an_unreadable_driver_runs_nothing(driver: str, cuda: str) -> None:
    try:
        parse_dotted(driver)
    except ValueError:
        assert driver_support(driver, None, cuda, MATRIX).level == "none"


@CI
@given(
    CCS,
    st.frozensets(
        st.sampled_from([30, 35, 50, 52, 60, 61, 70, 75, 80, 86, 89, 90, 100, 120]), max_size=8
    ),
    st.frozensets(st.sampled_from([60, 70, 80, 90, 100, 120]), max_size=3),
)
def test_arch_support_needs_only_its_own_major_and_more_archs_never_hurt(
    cc: str, archs: frozenset[int], more: frozenset[int]
) -> None:
    major, minor = (int(x) for x in cc.split("."))
    own_major = frozenset(a for a in archs if a // 10 == major)
    assert arch_supported(cc, archs) == arch_supported(cc, own_major)  # other majors never count
    assert arch_supported(cc, {major * 10 + minor})  # its own sm always runs
    newer = frozenset(a for a in own_major if a % 10 > minor)
    assert not arch_supported(cc, newer)  # a higher minor's cubin never runs on a lower one
    if arch_supported(cc, archs):
        assert arch_supported(cc, archs | more)


# Cases with their source: the lent H100, Paddle's own check (gpu_resources.cc, GPURES in
# docs/facts/compat_facts.md: the exact sm or the major's x.0) and NVIDIA's binary compatibility.
RECORDED_ARCH_CASES = [
    # tests/data/real-h100: paddlepaddle-gpu 2.6.2 built for 61-86 died with CUDA error 209
    ("9.0", {61, 70, 75, 80, 86}, False),
    ("9.0", {80, 90}, True),
    ("8.6", {61, 70, 75, 80}, True),  # an A10 on a build with sm_80: the major's x.0
    ("8.9", {86}, False),  # Paddle's check looks for 89 or 80, not 86
    ("8.6", {87}, False),  # Jetson Orin's sm_87 is a higher minor
    ("12.0", {61, 70, 75, 80, 86, 89, 90}, False),  # an RTX 5090 on a build without sm_120
    ("6.1", {70, 75, 80, 86, 89, 90}, False),  # a Tesla P40 on a build without Pascal
    ("7.5", {75}, True),
]


@pytest.mark.parametrize(
    ("cc", "archs", "runs"),
    RECORDED_ARCH_CASES,
    ids=["h100-2.6.2", "h100", "a10-sm80", "ada-sm86", "a10-sm87", "rtx5090", "p40", "t4"],
)
def test_arch_support_matches_the_recorded_cases(cc: str, archs: set[int], runs: bool) -> None:
    assert arch_supported(cc, archs) is runs


@CI
@given(CCS, CCS)
def test_cc_below_is_a_strict_order(a: str, b: str) -> None:
    assert not (cc_below(a, b) and cc_below(b, a))
    assert not cc_below(a, a)


# -- the facts round-trip --------------------------------------------------------------------------

TEXT = st.one_of(st.none(), st.text(max_size=20))
DOTTED = st.one_of(
    st.none(),
    st.builds(
        lambda *p: ".".join(map(str, p)),
        st.integers(0, 999),
        st.integers(0, 999),
        st.integers(0, 99),
    ),
)
CC = st.one_of(st.none(), st.builds(lambda a, b: f"{a}.{b}", st.integers(1, 12), st.integers(0, 9)))
COUNT = st.one_of(st.none(), st.integers(0, 2**40))
STATUS = st.sampled_from(["ok", "absent", "error", "unknown"])
ORIGIN = st.sampled_from(get_args(LibraryOrigin))
CANDIDATE = st.builds(
    LibraryCandidate,
    path=st.text(min_size=1, max_size=20),
    version=DOTTED,
    origin=ORIGIN,
    error=TEXT,
)
LIBRARY = st.builds(
    LibraryFacts,
    status=STATUS,
    version=DOTTED,
    path=TEXT,
    origin=st.one_of(st.none(), ORIGIN),
    candidates=st.lists(CANDIDATE, max_size=2).map(tuple),
    reason=TEXT,
)
HOSTS = st.builds(
    HostFacts,
    driver=st.builds(
        DriverFacts,
        status=STATUS,
        version=DOTTED,
        cuda=DOTTED,
        kernel_module=TEXT,
        nvml_version=TEXT,
        error=TEXT,
        reason=TEXT,
        library=TEXT,
    ),
    gpus=st.lists(
        st.builds(
            GpuFacts,
            index=st.integers(0, 64),
            name=TEXT,
            uuid=TEXT,
            compute_capability=CC,
            memory_total_mib=COUNT,
            mig_mode=st.one_of(st.none(), st.booleans()),
            mig_instances=COUNT,
            process_query=st.sampled_from([None, "v2", "v3"]),
        ),
        max_size=3,
    ).map(tuple),
    cuda_driver=st.builds(
        CudaDriverFacts,
        status=STATUS,
        version=DOTTED,
        device_count=COUNT,
        error=TEXT,
        reason=TEXT,
        library=TEXT,
    ),
    cuda_runtime=LIBRARY,
    cudnn=LIBRARY,
    paddle=st.builds(
        PaddleFacts,
        status=STATUS,
        package=TEXT,
        version=st.one_of(
            st.none(), st.sampled_from(["3.3.1", "2.6.2", "3.0.0rc1", "3.1.0.post1"])
        ),
        cuda=DOTTED,
        cudnn=DOTTED,
        compiled_cuda_archs=st.one_of(
            st.none(), st.lists(st.integers(30, 120), max_size=4).map(tuple)
        ),
        with_pip_cuda_libraries=st.one_of(st.none(), st.booleans()),
        location=TEXT,
        reason=TEXT,
    ),
    engine=st.builds(
        EngineFacts,
        status=STATUS,
        version=TEXT,
        runtimes=st.lists(st.text(max_size=8), max_size=2).map(tuple),
        nvidia_runtime=st.one_of(st.none(), st.booleans()),
        denied=st.one_of(st.none(), st.booleans()),
    ),
    env=st.dictionaries(
        st.sampled_from(["CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME"]),
        st.text(max_size=20),
    ),
    machine=st.builds(MachineFacts, hostname=TEXT, os=TEXT, kernel=TEXT, arch=TEXT, python=TEXT),
)


@CI
@given(HOSTS)
def test_host_to_json_and_back_is_the_same_host(host: HostFacts) -> None:
    text = json.dumps(to_dict(host))
    assert host_from_document(json.loads(text)) == host
    report = {"schema_version": 2, "host": json.loads(text), "findings": []}  # a whole saved report
    assert host_from_document(json.loads(json.dumps(report))) == host


# -- the verdict's severity order ------------------------------------------------------------------

VERDICT_RANK = {"pass": 0, "warn": 1, "fail": 2, "cpu-fallback": 3, "wrong-results": 4}
EXIT_RANK = {
    ExitStatus.OK: 0,
    ExitStatus.INCOMPATIBLE: 1,
    ExitStatus.SMOKE_FAILED: 2,
    ExitStatus.CPU_FALLBACK: 3,
    ExitStatus.WRONG_RESULTS: 4,
}
FINDINGS = st.builds(
    lambda fid, severity: Finding(id=fid, severity=severity, message="m"),
    st.sampled_from(
        [
            "driver.too-old",
            "paddle.cpu-build",
            "smoke.pass",
            "smoke.crashed",
            "smoke.timeout",
            CPU_FALLBACK_ID,
            WRONG_RESULTS_ID,
            "gpu.0",
        ]
    ),
    st.sampled_from(["pass", "warn", "fail"]),
)


@CI
@given(
    st.lists(FINDINGS, max_size=6),
    st.lists(FINDINGS, max_size=6),
    st.randoms(use_true_random=False),
)
def test_verdict_and_exit_are_the_worst_of_their_parts(
    a: list[Finding], b: list[Finding], rnd: random.Random
) -> None:
    both = a + b
    shuffled = list(both)
    rnd.shuffle(shuffled)
    assert verdict_of(shuffled) == verdict_of(both)
    assert exit_status_of(shuffled) == exit_status_of(both)
    assert VERDICT_RANK[verdict_of(both)] == max(
        VERDICT_RANK[verdict_of(a)], VERDICT_RANK[verdict_of(b)]
    )
    assert EXIT_RANK[exit_status_of(both)] == max(
        EXIT_RANK[exit_status_of(a)], EXIT_RANK[exit_status_of(b)]
    )


@CI
@given(st.lists(FINDINGS, max_size=8))
def test_the_exit_code_says_what_the_verdict_says(findings: list[Finding]) -> None:
    verdict, status = verdict_of(findings), exit_status_of(findings)
    expected = {
        "pass": {ExitStatus.OK},
        "warn": {ExitStatus.OK},  # warnings allowed
        "fail": {ExitStatus.INCOMPATIBLE, ExitStatus.SMOKE_FAILED},
        "cpu-fallback": {ExitStatus.CPU_FALLBACK},
        "wrong-results": {ExitStatus.WRONG_RESULTS},
    }[verdict]
    assert status in expected, (verdict, status)
    fails = [f for f in findings if f.severity == "fail"]
    assert (status == ExitStatus.OK) == (not fails)
    demoted = [replace(f, severity="warn") if f.severity == "fail" else f for f in findings]
    assert verdict_of(demoted) in ("pass", "warn") and exit_status_of(demoted) == ExitStatus.OK
