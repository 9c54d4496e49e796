"""Image selection over saved hosts: one scenario per real failure, asserting what the facts imply.

What the shipped matrix says (compat_facts.md): 3.3.1 has GPU tags for CUDA 12.9 and 13.0 only
(3P, unconfirmed); CUDA 13.x needs driver >= 580.65.06; 12.x runs on >= 525.60.13 and 11.x on
>= 450.80.02 through minor-version compatibility; sm_120 needs CUDA >= 12.8; Volta is gone in 13.0.
"""

from __future__ import annotations

import pytest

from envcheck.contracts.errors import UsageError
from envcheck.contracts.facts import DriverFacts, GpuFacts, HostFacts
from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.record import replace
from envcheck.image.choice import gpu_candidates, select_image
from envcheck.matrix.builds import build_for, runnable_archs
from envcheck.matrix.compat import arch_supported
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR
from envcheck.matrix.model import Matrix

MATRIX = load_matrix(str(REPO_DIR))
HUB = "docker.io/paddlepaddle/paddle"
CCR = "ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddle"

A100 = GpuFacts(name="NVIDIA A100-SXM4-80GB", compute_capability="8.0", memory_total_mib=81920)
T4 = GpuFacts(name="Tesla T4", compute_capability="7.5", memory_total_mib=15360)
H100 = GpuFacts(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", memory_total_mib=81559)
RTX5090 = GpuFacts(
    name="NVIDIA GeForce RTX 5090", compute_capability="12.0", memory_total_mib=32607
)
V100 = GpuFacts(name="Tesla V100-SXM2-32GB", compute_capability="7.0", memory_total_mib=32768)
K80 = GpuFacts(name="Tesla K80", compute_capability="3.7", memory_total_mib=11441)


def host(driver: str | None, cuda: str | None, *gpus: GpuFacts) -> HostFacts:
    """A host whose NVML answered with this driver and these GPUs (indices in order)."""
    return HostFacts(
        driver=DriverFacts(status="ok", version=driver, cuda=cuda),
        gpus=tuple(replace(g, index=i) for i, g in enumerate(gpus)),
    )


def tags(choice: ImageChoice) -> list[str]:
    return [r.ref.rsplit(":", 1)[1] for r in choice.rejected]


# -- a GPU tag is chosen --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "paddle", "tag", "rejected"),
    [
        (
            host("535.104.05", "12.2", A100, A100),
            None,
            "3.3.1-gpu-cuda12.9-cudnn9.9",
            ["3.3.1-gpu-cuda13.0-cudnn9.13"],
        ),
        (host("580.65.06", "13.0", H100), None, "3.3.1-gpu-cuda13.0-cudnn9.13", []),
        (
            host("570.124.06", "12.8", RTX5090),
            None,
            "3.3.1-gpu-cuda12.9-cudnn9.9",
            ["3.3.1-gpu-cuda13.0-cudnn9.13"],
        ),
        (
            host("580.65.06", "13.0", V100),
            None,
            "3.3.1-gpu-cuda12.9-cudnn9.9",
            ["3.3.1-gpu-cuda13.0-cudnn9.13"],
        ),
        (
            host("470.82.01", "11.4", T4),
            "3.1.0",
            "3.1.0-gpu-cuda11.8-cudnn8.9",
            ["3.1.0-gpu-cuda12.9-cudnn9.9", "3.1.0-gpu-cuda12.6-cudnn9.5"],
        ),
        (
            host("470.82.01", "11.4", T4),
            "2.6.2",
            "2.6.2-gpu-cuda11.7-cudnn8.4-trt8.4",
            ["2.6.2-gpu-cuda12.0-cudnn8.9-trt8.6"],
        ),
        (host("570.124.06", "12.8", RTX5090), "3.2.0", "3.2.0-gpu-cuda12.9-cudnn9.9", []),
        (host("535.104.05", "12.2", A100), "2.6.2", "2.6.2-gpu-cuda12.0-cudnn8.9-trt8.6", []),
        (
            host("470.82.01", "11.4", K80),
            "2.5.2",
            "2.5.2-gpu-cuda10.2-cudnn7.6-trt7.0",
            [
                "2.5.2-gpu-cuda12.0-cudnn8.9-trt8.6",
                "2.5.2-gpu-cuda11.7-cudnn8.4-trt8.4",
                "2.5.2-gpu-cuda11.2-cudnn8.2-trt8.0",
            ],
        ),
        (
            host("470.82.01", "11.4", T4),
            "3.0.0",
            "3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6",
            ["3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5", "3.0.0-gpu-cuda12.3-cudnn9.0-trt8.6"],
        ),
    ],
    ids=[
        "2xA100-on-535-runs-cu129-through-minor-compat-not-cu130",
        "H100-on-580-gets-the-cuda13-image",
        "RTX5090-on-570-cu129-via-minor-compat-cu130-needs-580",
        "V100-on-580-not-the-cuda13-image-volta-removed",
        "T4-on-470-gets-cu118-via-minor-compat-450.80.02",
        "T4-on-470-paddle262-cuda11.7-not-12.0",
        "RTX5090-paddle320-cu129-works-issue76037",
        "A100-on-535-paddle262-cuda12.0",
        "K80-on-470-paddle252-only-cu102-has-kepler-issue55715",
        "confirmed-cu118-tag-before-the-3P-variant",
    ],
)
def test_newest_cuda_the_driver_and_every_gpu_allow(
    facts: HostFacts, paddle: str | None, tag: str, rejected: list[str]
) -> None:
    choice = select_image(facts, MATRIX, paddle=paddle)
    assert choice.ref == f"{HUB}:{tag}" and choice.tag == tag and choice.kind == "gpu"
    assert tags(choice) == rejected
    assert choice.pip_command and f"=={choice.paddle}" in choice.pip_command
    assert choice.source and choice.reason and choice.cuda and choice.cuda in choice.reason


def test_a100_on_535_pip_command_and_provenance() -> None:
    choice = select_image(host("535.104.05", "12.2", A100, A100), MATRIX)
    assert choice.pip_command == (
        "python -m pip install paddlepaddle-gpu==3.3.1 -i https://www.paddlepaddle.org.cn/packages/stable/cu129/"
    )
    assert choice.paddle == "3.3.1" and choice.cuda == "12.9" and choice.cudnn == "9.9"
    assert choice.confirmed is False and choice.source == "3P"  # 3.3.1 tags are third-party only
    assert "minor-version compatibility" in (choice.reason or "") and "525.60.13" in (
        choice.reason or ""
    )
    assert "580.65.06" in choice.rejected[0].reason


def test_v100_is_rejected_from_cuda13_for_its_architecture_not_its_driver() -> None:
    choice = select_image(host("580.65.06", "13.0", V100), MATRIX)
    reason = choice.rejected[0].reason
    assert "sm_70" in reason and "CUDA 13.0" in reason and "driver" not in reason


def test_gpu_without_a_probed_cc_is_looked_up_by_name() -> None:
    nameless_cc = replace(V100, compute_capability=None)
    choice = select_image(host("580.65.06", "13.0", nameless_cc), MATRIX)
    assert choice.tag == "3.3.1-gpu-cuda12.9-cudnn9.9" and "sm_70" in choice.rejected[0].reason


def test_mixed_gpus_every_gpu_must_run_the_image() -> None:
    choice = select_image(host("580.65.06", "13.0", H100, V100), MATRIX)
    assert choice.tag == "3.3.1-gpu-cuda12.9-cudnn9.9"
    assert (
        "GPU 1 Tesla V100" in choice.rejected[0].reason and "H100" not in choice.rejected[0].reason
    )


# -- nothing runs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "paddle", "in_every_rejection", "fix"),
    [
        (
            host("470.82.01", "11.4", T4),
            "3.3.1",
            "CUDA 11.4",
            f"upgrade the NVIDIA driver to >= 525.60.13 to run {HUB}:3.3.1-gpu-cuda12.9-cudnn9.9",
        ),
        (
            host("570.124.06", "12.8", RTX5090),
            "2.6.2",
            "sm_120",
            "choose another release with --paddle",
        ),
        (
            host("535.104.05", "12.2", K80),
            "2.6.2",
            "minimum compute capability 6.0",
            "choose another release with --paddle",
        ),
        (host(None, None, A100), None, "no driver version known", "driver version is unknown"),
    ],
    ids=[
        "T4-on-470-has-no-3.3.1-image-needs-525",
        "RTX5090-paddle262-no-build-has-sm120",
        "K80-below-paddle26-minimum-cc-6.0",
        "driver-answered-without-a-version",
    ],
)
def test_gpus_but_every_tag_rejected_gives_no_ref_and_the_fix(
    facts: HostFacts, paddle: str | None, in_every_rejection: str, fix: str
) -> None:
    choice = select_image(facts, MATRIX, paddle=paddle)
    assert choice.ref is None and choice.kind == "gpu"
    assert len(choice.rejected) == len(gpu_candidates(MATRIX, choice.paddle or ""))
    assert all(in_every_rejection in r.reason for r in choice.rejected)
    assert fix in (choice.reason or "")


def test_paddle31_cu126_wheel_lacks_sm120_issue73687() -> None:
    # Without the cu129 tag, an RTX 5090 must not get 3.1.0's cu126 (CUDA 12.6 cannot target
    # sm_120; the 3P list "75 80 86 89" was seen in a Windows session, so it does not decide a
    # Linux image) nor cu118 (CUDA 11.8 cannot target sm_120).
    matrix = replace(
        MATRIX, images=tuple(i for i in MATRIX.images if i.tag != "3.1.0-gpu-cuda12.9-cudnn9.9")
    )
    choice = select_image(host("570.124.06", "12.8", RTX5090), matrix, paddle="3.1.0")
    assert choice.ref is None
    cu126, cu118 = choice.rejected
    assert "sm_120" in cu126.reason and "CUDA 12.6 can target" in cu126.reason
    assert "seen on windows/amd64 only" in cu126.reason
    assert "sm_120" in cu118.reason and "CUDA 11.8 can target" in cu118.reason


@pytest.mark.parametrize(
    ("paddle", "cuda", "archs_from"),
    [
        ("3.1.0", "12.6", "CUDA 12.6"),
        ("2.6.2", "11.8", "compiled"),
        ("3.3.1", "11.8", "CUDA 11.8"),
        ("3.3.1", "12.6", "CUDA 12.6"),
    ],
    ids=[
        "paddle310-cu126-3P-archs",
        "paddle262-cu118-measured-archs",
        "cu118-toolkit",
        "cu126-toolkit",
    ],
)
def test_cu118_and_cu126_builds_cannot_run_sm120(paddle: str, cuda: str, archs_from: str) -> None:
    source = runnable_archs(MATRIX, paddle, cuda)
    assert source is not None and archs_from in source.origin
    assert not arch_supported("12.0", source.archs)
    assert arch_supported("8.0", source.archs)


def test_cu129_toolkit_can_run_sm120_and_gb10() -> None:
    source = runnable_archs(MATRIX, "3.3.1", "12.9")
    assert (
        source is not None
        and arch_supported("12.0", source.archs)
        and arch_supported("12.1", source.archs)
    )


# -- no usable GPU: the CPU tag -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "why"),
    [
        (
            HostFacts(driver=DriverFacts(status="absent", reason="libnvidia-ml.so.1 not found")),
            "no usable NVIDIA driver (absent: libnvidia-ml.so.1 not found)",
        ),
        (
            HostFacts(
                driver=DriverFacts(status="error", error="NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
                gpus=(A100,),
            ),
            "no usable NVIDIA driver (error: NVML_ERROR_LIB_RM_VERSION_MISMATCH)",
        ),
        (host("535.104.05", "12.2"), "the NVIDIA driver reports no GPU"),
    ],
    ids=["laptop-without-nvidia-driver", "driver-upgraded-without-reboot", "gpu-fell-off-the-bus"],
)
def test_no_usable_gpu_gets_the_cpu_tag(facts: HostFacts, why: str) -> None:
    choice = select_image(facts, MATRIX)
    assert choice.ref == f"{HUB}:3.3.1" and choice.kind == "cpu" and choice.cuda is None
    # 3.4.0 is only reported (no first-party source): never the default, and not the question
    # where an image of a confirmed release runs
    assert choice.reason == f"{why}: the CPU image"
    assert choice.pip_command == (
        "python -m pip install paddlepaddle==3.3.1 -i https://www.paddlepaddle.org.cn/packages/stable/cpu/"
    )
    assert choice.confirmed is False  # 3.1+ CPU tags follow the pattern; no source lists them


def test_cpu_tag_of_an_older_release_is_confirmed() -> None:
    choice = select_image(HostFacts(), MATRIX, paddle="2.6.2")
    assert choice.ref == f"{HUB}:2.6.2" and choice.confirmed and choice.source == "D-2.6"


# -- registries and versions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("paddle", "registry", "ref"),
    [
        ("3.2.0", "baidu", f"{CCR}:3.2.0-gpu-cuda12.9-cudnn9.9"),
        (
            "2.6.2",
            "baidu-legacy",
            "registry.baidubce.com/paddlepaddle/paddle:2.6.2-gpu-cuda12.0-cudnn8.9-trt8.6",
        ),
        ("2.6.2", "baidu", None),
    ],
    ids=[
        "3.x-on-the-ccr-mirror",
        "2.x-on-registry.baidubce.com",
        "2.x-tags-are-not-on-the-ccr-mirror",
    ],
)
def test_registry_baidu(paddle: str, registry: str, ref: str | None) -> None:
    choice = select_image(
        host("535.104.05", "12.2", A100), MATRIX, paddle=paddle, registry=registry
    )
    assert choice.ref == ref and choice.registry == registry
    if ref is None:
        assert all(f"not published on {registry}" in r.reason for r in choice.rejected)
        assert all(r.ref.startswith(CCR) for r in choice.rejected)
        assert "use --registry" in (choice.reason or "")


def test_registry_baidu_reason_names_where_the_tag_is() -> None:
    choice = select_image(
        host("535.104.05", "12.2", A100), MATRIX, paddle="2.6.2", registry="baidu"
    )
    assert "known on: dockerhub, baidu-legacy" in choice.rejected[0].reason
    assert "use --registry dockerhub or --registry baidu-legacy" in (choice.reason or "")


def test_unknown_registry_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown registry 'quay'.*dockerhub, baidu, baidu-legacy"):
        select_image(host("535.104.05", "12.2", A100), MATRIX, registry="quay")


@pytest.mark.parametrize(
    "paddle", ["9.9.9", "latest", " "], ids=["not-in-matrix", "not-a-version", "blank"]
)
def test_unknown_paddle_is_a_usage_error_listing_known_versions(paddle: str) -> None:
    with pytest.raises(UsageError) as e:
        select_image(host("535.104.05", "12.2", A100), MATRIX, paddle=paddle)
    assert "2.5.2, 2.6.0, 2.6.2, 3.0.0b2, 3.0.0" in e.value.message and e.value.message.endswith(
        "3.4.0)"
    )


def test_an_unreleased_version_is_not_the_default_nor_named_the_newest_release() -> None:
    # 3.4.0: only release/3.4 nightlies and third-party pins were seen (every row unconfirmed).
    # The default is the newest release a first-party source confirms, 3.3.1; 3.4.0 is a target
    # only when asked for.
    choice = select_image(host("535.104.05", "12.2", A100), MATRIX)
    assert MATRIX.newest_release().version == "3.3.1" and choice.paddle == "3.3.1"
    reason = choice.reason or ""
    assert "newest release" not in reason and "install Paddle 3.4.0" not in reason
    assert "3.4.0" not in reason  # not the question: an image of 3.3.1 runs here
    asked = select_image(host("535.104.05", "12.2", A100), MATRIX, paddle="3.4.0")
    assert asked.paddle == "3.4.0"


# -- helpers --------------------------------------------------------------------------------------


def test_candidates_newest_cuda_first_confirmed_first() -> None:
    assert [i.tag for i in gpu_candidates(MATRIX, "3.2.0")] == [
        "3.2.0-gpu-cuda12.9-cudnn9.9",
        "3.2.0-gpu-cuda12.6-cudnn9.5",
        "3.2.0-gpu-cuda11.8-cudnn8.9",
    ]


@pytest.mark.parametrize(
    ("paddle", "cuda", "pip_index"),
    [
        ("3.3.1", "12.9", "/cu129/"),
        ("3.3.1", "13.0.2", "/cu130/"),
        ("3.3.1", None, "/cpu/"),
        ("2.6.2", "11.8", "paddlepaddle-gpu==2.6.2"),
    ],
    ids=["cu129", "patch-level-cuda-matches-its-minor", "cpu", "pypi-default"],
)
def test_build_for_matches_cuda_by_major_minor(
    paddle: str, cuda: str | None, pip_index: str
) -> None:
    build = build_for(MATRIX, paddle, cuda)
    assert build is not None and pip_index in build.pip


def test_selection_is_pure() -> None:
    facts = host("535.104.05", "12.2", A100)
    snapshot = (facts, _frozen(MATRIX))
    first = select_image(facts, MATRIX)
    assert select_image(facts, MATRIX) == first and (facts, _frozen(MATRIX)) == snapshot


def _frozen(m: Matrix) -> tuple[object, ...]:
    return (m.images, m.builds, m.releases, tuple(sorted(m.registries.items())))
