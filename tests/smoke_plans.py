"""The hosts, images, plans and outcomes the smoke judge's tests are built from: a plan made from
facts (envcheck/smoke/plan.py) and an outcome made from a recorded workload line
(tests/smoke_samples.py), as the runners would hand them to the judge."""

from __future__ import annotations

import json
from typing import Any

from envcheck.contracts.facts import HostFacts, host_from_document
from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.smoke_report import NvmlSummary
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.parse import RawRun
from envcheck.smoke.plan import Outcome, Plan, plan_smoke
from tests import scenarios as s
from tests import smoke_samples as rec

CPU_IMAGE = ImageChoice(ref="envcheck-test/paddle-cpu:3.3.1", kind="cpu", pip_command=None)
GPU_IMAGE = ImageChoice(
    ref="paddlepaddle/paddle:3.3.1-gpu-cuda12.6-cudnn9.5",
    kind="gpu",
    pip_command="python -m pip install paddlepaddle-gpu==3.3.1 -i "
    "https://www.paddlepaddle.org.cn/packages/stable/cu126/",
)
NO_GPU_HOST = host_from_document(s.host(engine=s.ENGINE_PLAIN, paddle=s.PADDLE_331_CPU))
NVML_ABSENT = NvmlSummary(status="unavailable", reason="NVML_ERROR_LIBRARY_NOT_FOUND", samples=0)


def gpu_host(gpus: int = 1, **extra: Any) -> HostFacts:
    cards = [s.A100 | {"index": i} for i in range(gpus)]
    return host_from_document(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=cards,
            paddle=s.PADDLE_331_CU126,
            engine=s.ENGINE_NVIDIA,
            **extra,
        )
    )


def container_plan(
    host: HostFacts = NO_GPU_HOST, choice: ImageChoice = CPU_IMAGE, **options: Any
) -> Plan:
    return plan_smoke(host, choice, SmokeOptions(**options))


def outcome(
    doc: dict[str, Any] | None, exit_code: int = 0, nvml: NvmlSummary | None = None, **raw: Any
) -> Outcome:
    stdout = (json.dumps(doc) + "\n").encode() if doc is not None else b""
    run = RawRun(
        exit_code=exit_code, stdout=stdout, stderr=raw.pop("stderr", ""), duration_s=4.2, **raw
    )
    result = rec.as_result(doc) if doc is not None else None
    return Outcome(run, result, raw.get("problem"), nvml or NVML_ABSENT)
