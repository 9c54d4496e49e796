"""GPU health over saved facts: a GPU that needs a reset, a reboot or a replacement is named with
its own fix; a healthy GPU, or one that cannot say (GeForce, no ECC), adds no line."""

from __future__ import annotations

from typing import Any

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.findings import Finding
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s

MATRIX = load_matrix()
HEALTHY = {"remap_pending": False, "remap_failure": False, "ecc_volatile_uncorrected": 0}


def judged(*gpus: dict[str, Any]) -> list[Finding]:
    host = host_from_document(
        s.host(
            driver=s.driver("580.65.06", "13.0", kernel_module="580.65.06"),
            gpus=list(gpus),
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    return judge(Context(host=host, matrix=MATRIX, image=select_image(host, MATRIX)))


def gpu_lines(findings: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        if f.layer == "gpu":
            out.setdefault(f.id, []).append(f)
    return out


def a100(index: int, **health: Any) -> dict[str, Any]:
    return s.A100 | {"index": index, "health": HEALTHY | health}


def test_a_pending_row_remap_fails_that_gpu_only_with_the_reset_command() -> None:
    lines = gpu_lines(judged(a100(0, remap_pending=True), a100(1)))
    (reset,) = lines["gpu.reset-needed"]
    assert reset.severity == "fail" and reset.observed["index"] == 0
    assert "row remap" in reset.message and reset.message.startswith("GPU 0 ")
    assert "`sudo nvidia-smi -r -i 0`" in (reset.fix or "")
    assert "nvidia-smi --query-compute-apps=pid,process_name --format=csv -i 0" in (reset.fix or "")
    # the healthy one keeps its single line, the one to reset is not listed as good
    assert [f.observed["indices"] for f in lines["gpu.1"]] == [[1]]
    assert "gpu.0" not in lines


def test_a_row_remapping_failure_says_replace_the_gpu() -> None:
    lines = gpu_lines(judged(a100(0, remap_failure=True, remap_pending=True)))
    (replace,) = lines["gpu.replace"]
    assert replace.severity == "fail" and "cannot be repaired" in replace.message
    assert "replaced" in (replace.fix or "") and "CUDA_VISIBLE_DEVICES" in (replace.fix or "")
    assert "gpu.reset-needed" not in lines  # one finding per GPU: replacing it is the answer


def test_volatile_uncorrectable_ecc_errors_need_a_reset() -> None:
    lines = gpu_lines(judged(a100(0, ecc_volatile_uncorrected=3)))
    (reset,) = lines["gpu.reset-needed"]
    assert "3 uncorrectable ECC error(s) since the driver loaded" in reset.message
    assert "`sudo nvidia-smi -r -i 0`" in (reset.fix or "")


@pytest.mark.parametrize(
    ("action", "finding_id", "severity"),
    [
        ("GPU_RESET", "gpu.reset-needed", "fail"),
        ("DRAIN_AND_RESET", "gpu.reset-needed", "fail"),
        ("NODE_REBOOT", "gpu.reboot-needed", "fail"),
        ("SYSTEM_REBOOT", "gpu.reboot-needed", "fail"),
        ("DRAIN_P2P", "gpu.recovery-action", "warn"),
        ("42", "gpu.recovery-action", "warn"),
    ],
    ids=["reset", "drain-and-reset", "node-reboot", "system-reboot", "drain-p2p", "unknown"],
)
def test_the_drivers_recovery_action_is_followed(
    action: str, finding_id: str, severity: str
) -> None:
    (found,) = gpu_lines(judged(a100(0, recovery_action=action)))[finding_id]
    assert found.severity == severity and action in found.message


def test_pending_page_retirement_alone_is_a_warning_with_the_reset() -> None:
    (found,) = gpu_lines(judged(s.V100 | {"health": {"retired_pages_pending": True}}))[
        "gpu.retired-pages-pending"
    ]
    assert found.severity == "warn" and "`sudo nvidia-smi -r -i 0`" in (found.fix or "")


@pytest.mark.parametrize(
    "gpus",
    [
        [a100(0), a100(1, recovery_action="NONE")],
        [s.RTX5090],  # GeForce: NVML answers NOT_SUPPORTED, the probe records no health
        [s.A100],  # a facts file saved before health was read
    ],
    ids=["healthy-a100s", "geforce-cannot-say", "not-read"],
)
def test_healthy_or_silent_gpus_add_no_line(gpus: list[dict[str, Any]]) -> None:
    lines = gpu_lines(judged(*gpus))
    assert set(lines) == {"gpu.0"}, lines
    assert lines["gpu.0"][0].severity == "pass"


def test_health_round_trips_through_a_saved_facts_file() -> None:
    host = host_from_document(s.host(gpus=[a100(0, remap_pending=True)]))
    assert host.gpus[0].health is not None and host.gpus[0].health.remap_pending is True
    assert host_from_document(s.host(gpus=[s.A100])).gpus[0].health is None
