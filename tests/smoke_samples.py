"""Recorded outputs of the smoke workload, and real Paddle log lines, for the judge's unit tests.

The two JSON lines were printed by `envcheck/smoke/workload/main.py --compare-cpu --export` in the
offline test image `envcheck-test/paddle-cpu:3.3.1` (Paddle 3.3.1 CPU, uid 1000, no network) on
the 2-core CI machine: `--device cpu`, and `--device gpu:0` (which a CPU build refuses); re-recorded
when the training gained its text-CNN head, DataLoader worker and default Adam. No GPU
exists here, so GPU results are *derived* from them by `on_gpu()` below, with the places,
capabilities and version line a CUDA build prints (compat_facts.md section 7, row 14).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from envcheck.contracts.facts import from_dict
from envcheck.contracts.smoke_report import NvmlSummary
from envcheck.contracts.smoke_result import SmokeResult

RECORDED_CPU_PASS = '{"schema":"envcheck-smoke/1","error":null,"runs":[{"device_requested":"cpu","device_error":null,"error":null,"device_used":"cpu","checks":[{"dtype":"float32","tolerance":0.00029108302593231205,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"embedding","phase":"before","device":"cpu"},{"dtype":"tf32","tolerance":0.12853687282642914,"max_abs_diff":4.898451663848391e-06,"ok":true,"problem":null,"op":"matmul","phase":"before","device":"cpu"},{"dtype":"tf32","tolerance":0.11528527374804658,"max_abs_diff":5.492089904635122e-06,"ok":true,"problem":null,"op":"conv1d","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":7.893812110026679e-05,"max_abs_diff":9.747842943941265e-08,"ok":true,"problem":null,"op":"mean","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":0.00015617351886758948,"max_abs_diff":3.547765259348523e-08,"ok":true,"problem":null,"op":"cross_entropy","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":1.9999999912448607e-06,"max_abs_diff":4.872297565405859e-08,"ok":true,"problem":null,"op":"adam","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":0.00029995355606079105,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"dropout","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":0.00029108302593231205,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"embedding","phase":"after","device":"cpu"},{"dtype":"tf32","tolerance":0.12853687282642914,"max_abs_diff":4.898451663848391e-06,"ok":true,"problem":null,"op":"matmul","phase":"after","device":"cpu"},{"dtype":"tf32","tolerance":0.11528527374804658,"max_abs_diff":5.492089904635122e-06,"ok":true,"problem":null,"op":"conv1d","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":7.893812110026679e-05,"max_abs_diff":9.747842943941265e-08,"ok":true,"problem":null,"op":"mean","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":0.00015617351886758948,"max_abs_diff":3.547765259348523e-08,"ok":true,"problem":null,"op":"cross_entropy","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":1.9999999912448607e-06,"max_abs_diff":4.872297565405859e-08,"ok":true,"problem":null,"op":"adam","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":0.00029995355606079105,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"dropout","phase":"after","device":"cpu"}],"checks_s":0.0899,"steps":60,"batch_size":128,"loss_start":0.69369,"loss_end":0.21678,"losses":[0.6937,0.69,0.6795,0.6803,0.6849,0.6601,0.6605,0.66,0.6332,0.6237,0.631,0.5885,0.5793,0.5723,0.6019,0.5503,0.5214,0.5293,0.4617,0.4823,0.4933,0.5106,0.4651,0.4717,0.396,0.4501,0.411,0.3894,0.4279,0.3583,0.3714,0.3535,0.3391,0.3668,0.4207,0.3761,0.3213,0.2942,0.3249,0.2823,0.318,0.258,0.3007,0.299,0.2742,0.2132,0.3172,0.2353,0.2907,0.2534,0.216,0.2177,0.2443,0.2066,0.2011,0.2812,0.1736,0.1654,0.2594,0.2043],"first_step_s":0.1405,"steps_per_s":52.15,"samples_per_s":6675.8,"loss_check":{"start":0.6936931610107422,"non_finite":0,"zero_steps":0,"distinct":60},"train_window":{"start":1795394061.365157,"end":1795394062.632373},"param_places":{"embedding.weight":"Place(cpu)","fc.weight":"Place(cpu)","fc.bias":"Place(cpu)","conv.weight":"Place(cpu)","conv.bias":"Place(cpu)","conv_fc.weight":"Place(cpu)","conv_fc.bias":"Place(cpu)"},"logits_place":"Place(cpu)","logits_dtype":"float32","amp":{"enabled":false,"dtype":null},"accuracy":0.9023,"peak_gpu_mem_bytes":null,"peak_gpu_reserved_bytes":null,"compare_cpu":{"skipped":"the run itself was on the CPU","steps_per_s":null,"speedup":null,"error":null},"export":{"format":"json","inference_gpu":false,"max_abs_diff":9.5367431640625e-07,"argmax_agreement":1.0,"match":true,"seconds":0.5584,"error":null}}],"import_s":2.0224,"python":"3.11.2","paddle_version":"3.3.1","compiled_with_cuda":false,"cuda_version":"False","cudnn_version":"False","cuda_device_count":0,"cuda_device_count_error":null,"device_capabilities":[],"device_names":[],"default_device":"cpu","env":{"CUDA_VISIBLE_DEVICES":null,"NVIDIA_VISIBLE_DEVICES":null,"CUDA_DEVICE_ORDER":"PCI_BUS_ID"},"uid":1000,"pid":1,"shm":{"size_bytes":268435456,"free_bytes":268435456},"loaded_libraries":[],"loaded_when":"first-step","driver_check":null,"warnings":[],"total_s":3.9723}'

RECORDED_CPU_BUILD_ASKED_GPU = '{"schema":"envcheck-smoke/1","error":null,"runs":[{"device_requested":"gpu:0","device_error":"ValueError: The device should not be <re.Match object; span=(0, 5), match=\'gpu:0\'>, since PaddlePaddle is not compiled with CUDA","error":null,"device_used":"cpu","checks":[{"dtype":"float32","tolerance":0.00029108302593231205,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"embedding","phase":"before","device":"cpu"},{"dtype":"tf32","tolerance":0.12853687282642914,"max_abs_diff":4.898451663848391e-06,"ok":true,"problem":null,"op":"matmul","phase":"before","device":"cpu"},{"dtype":"tf32","tolerance":0.11528527374804658,"max_abs_diff":5.492089904635122e-06,"ok":true,"problem":null,"op":"conv1d","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":7.893812110026679e-05,"max_abs_diff":9.747842943941265e-08,"ok":true,"problem":null,"op":"mean","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":0.00015617351886758948,"max_abs_diff":3.547765259348523e-08,"ok":true,"problem":null,"op":"cross_entropy","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":1.9999999912448607e-06,"max_abs_diff":4.872297565405859e-08,"ok":true,"problem":null,"op":"adam","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":0.00029995355606079105,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"dropout","phase":"before","device":"cpu"},{"dtype":"float32","tolerance":0.00029108302593231205,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"embedding","phase":"after","device":"cpu"},{"dtype":"tf32","tolerance":0.12853687282642914,"max_abs_diff":4.898451663848391e-06,"ok":true,"problem":null,"op":"matmul","phase":"after","device":"cpu"},{"dtype":"tf32","tolerance":0.11528527374804658,"max_abs_diff":5.492089904635122e-06,"ok":true,"problem":null,"op":"conv1d","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":7.893812110026679e-05,"max_abs_diff":9.747842943941265e-08,"ok":true,"problem":null,"op":"mean","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":0.00015617351886758948,"max_abs_diff":3.547765259348523e-08,"ok":true,"problem":null,"op":"cross_entropy","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":1.9999999912448607e-06,"max_abs_diff":4.872297565405859e-08,"ok":true,"problem":null,"op":"adam","phase":"after","device":"cpu"},{"dtype":"float32","tolerance":0.00029995355606079105,"max_abs_diff":0.0,"ok":true,"problem":null,"op":"dropout","phase":"after","device":"cpu"}],"checks_s":0.0832,"steps":60,"batch_size":128,"loss_start":0.69369,"loss_end":0.21678,"losses":[0.6937,0.69,0.6795,0.6803,0.6849,0.6601,0.6605,0.66,0.6332,0.6237,0.631,0.5885,0.5793,0.5723,0.6019,0.5503,0.5214,0.5293,0.4617,0.4823,0.4933,0.5106,0.4651,0.4717,0.396,0.4501,0.411,0.3894,0.4279,0.3583,0.3714,0.3535,0.3391,0.3668,0.4207,0.3761,0.3213,0.2942,0.3249,0.2823,0.318,0.258,0.3007,0.299,0.2742,0.2132,0.3172,0.2353,0.2907,0.2534,0.216,0.2177,0.2443,0.2066,0.2011,0.2812,0.1736,0.1654,0.2594,0.2043],"first_step_s":0.0917,"steps_per_s":53.17,"samples_per_s":6805.6,"loss_check":{"start":0.6936931610107422,"non_finite":0,"zero_steps":0,"distinct":60},"train_window":{"start":1795394066.799739,"end":1795394067.9969466},"param_places":{"embedding.weight":"Place(cpu)","fc.weight":"Place(cpu)","fc.bias":"Place(cpu)","conv.weight":"Place(cpu)","conv.bias":"Place(cpu)","conv_fc.weight":"Place(cpu)","conv_fc.bias":"Place(cpu)"},"logits_place":"Place(cpu)","logits_dtype":"float32","amp":{"enabled":false,"dtype":null},"accuracy":0.9023,"peak_gpu_mem_bytes":null,"peak_gpu_reserved_bytes":null,"compare_cpu":{"skipped":"the run itself was on the CPU","steps_per_s":null,"speedup":null,"error":null},"export":{"format":"json","inference_gpu":false,"max_abs_diff":9.5367431640625e-07,"argmax_agreement":1.0,"match":true,"seconds":0.6653,"error":null}}],"import_s":2.1858,"python":"3.11.2","paddle_version":"3.3.1","compiled_with_cuda":false,"cuda_version":"False","cudnn_version":"False","cuda_device_count":0,"cuda_device_count_error":null,"device_capabilities":[],"device_names":[],"default_device":"cpu","env":{"CUDA_VISIBLE_DEVICES":null,"NVIDIA_VISIBLE_DEVICES":null,"CUDA_DEVICE_ORDER":"PCI_BUS_ID"},"uid":1000,"pid":1,"shm":{"size_bytes":268435456,"free_bytes":268435456},"loaded_libraries":[],"loaded_when":"first-step","driver_check":null,"warnings":[],"total_s":4.1721}'

# Paddle's own lines, verbatim from compat_facts.md section 7 (row numbers).
VERSIONS_LINE = (  # row 14
    "W1121 10:00:00.000000  1234 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute "
    "Capability: 8.6, Driver API Version: 12.3, Runtime API Version: 11.8"
)
CUDA_MISMATCH = (  # row 15
    "WARNING: device: 0. The installed Paddle is compiled with CUDA 11.8, but CUDA runtime version "
    "in your machine is 11.2, which may cause serious incompatible bug. Please recompile or "
    "reinstall Paddle with compatible CUDA version."
)
CUDNN_MISMATCH = (  # row 17
    "WARNING: device: 0. The installed Paddle is compiled with CUDNN 8.6, but CUDNN version in "
    "your machine is 8.0, which may cause serious incompatible bug. Please recompile or reinstall "
    "Paddle with compatible CUDNN version."
)
ARCH_MISMATCH = (  # row 23
    "E0712 10:00:00.000000  1234 gpu_resources.cc:98] Mismatched GPU Architecture: The installed "
    "PaddlePaddle package was compiled for 75 80 86 89 ,but your current GPU is 120 Solution: "
    "Install the correct wheel package built for your GPU from the official PaddlePaddle website: "
    "https://www.paddlepaddle.org.cn/"
)
NO_GPU_EMPTY_CVD = "CUDA_VISIBLE_DEVICES is set to be empty. No GPU detected."  # row 7
DRIVER_TOO_OLD = (  # row 21
    "OSError: (External) CUDA error(35), CUDA driver version is insufficient for CUDA runtime "
    "version. [Hint: 'cudaErrorInsufficientDriver'. This indicates that the installed NVIDIA CUDA "
    "driver is older than the CUDA runtime library.] (at /paddle/paddle/phi/backends/gpu/cuda/"
    "cuda_info.cc:66)"
)
NO_DEVICE = (  # row 9
    "OSError: (External) CUDA error(100), no CUDA-capable device is detected. [Hint: "
    "'cudaErrorNoDevice'.] (at /paddle/paddle/phi/backends/gpu/cuda/cuda_info.cc:66)"
)
CCACHE_WARNING = (  # printed at every import of 3.3.1: not a GPU warning
    "/usr/local/lib/python3.11/dist-packages/paddle/utils/cpp_extension/extension_utils.py:712: "
    "UserWarning: No ccache found. Please be aware that recompiling all source files may be "
    "required."
)


def result(line: str = RECORDED_CPU_PASS) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(line)
    return doc


def as_result(doc: dict[str, Any]) -> SmokeResult:
    """A sample, handed to the rules as the records `parse_result` reads it into. The samples stay
    plain JSON so that a test can break them; the ones given here are whole lines, or hand edits
    that keep the protocol's types."""
    return from_dict(SmokeResult, doc, "result", numbers_as_text=False)


def as_nvml(doc: dict[str, Any]) -> NvmlSummary:
    """A sampler summary written as JSON (a saved one, or a test's), as the record."""
    return from_dict(NvmlSummary, doc, "nvml", numbers_as_text=False)


def on_gpu(doc: dict[str, Any], gpus: int = 1, cc: str = "8.6") -> dict[str, Any]:
    """The recorded CPU result as a CUDA build that trained on `gpus` GPUs would print it."""
    doc = copy.deepcopy(doc)
    template = doc["runs"][0]
    doc["runs"] = []
    for i in range(gpus):
        run = copy.deepcopy(template)
        device = f"gpu:{i}"
        run.update(
            device_requested=device,
            device_used=device,
            device_error=None,
            logits_place=f"Place({device})",
            steps_per_s=2400.0,
            peak_gpu_mem_bytes=25_000_000,
            peak_gpu_reserved_bytes=33_554_432,
        )
        run["param_places"] = dict.fromkeys(run["param_places"], f"Place({device})")
        run["checks"] = [dict(c, device=device) for c in run["checks"]]
        doc["runs"].append(run)
    doc.update(
        compiled_with_cuda=True,
        cuda_version="12.6",
        cudnn_version="9.5.1",
        cuda_device_count=gpus,
        device_capabilities=[cc] * gpus,
        default_device="gpu:0",
    )
    doc["warnings"] = [{"kind": "versions", "text": VERSIONS_LINE}]
    # The CPU recording mapped no NVIDIA library; a GPU run that says so contradicts itself
    # (no GPU computes without libcuda): what this one mapped is not recorded (tests that need
    # it add REAL_H100_LOADED).
    del doc["loaded_libraries"], doc["loaded_when"]
    return doc


def gpu_build_fell_back(device_error: str, **env: str) -> dict[str, Any]:
    """A CUDA build that saw no GPU: Paddle refused gpu:0 and trained on the CPU."""
    doc = result(RECORDED_CPU_BUILD_ASKED_GPU)
    doc.update(
        compiled_with_cuda=True, cuda_version="12.6", cudnn_version="9.5.1", cuda_device_count=0
    )
    doc["runs"][0]["device_error"] = device_error
    doc["env"].update(env)
    return doc


# The scripts in tests/smoke_scripts/ that misbehave, the finding each must give, and words of its
# message: run the same way in a real container and in a subprocess.
BAD_SCRIPTS = [
    ("crash.py", "smoke.crashed", "CUDA error(35)"),
    ("garbage.py", "smoke.bad-output", "printed 2 lines on stdout"),
    ("megabytes.py", "smoke.bad-output", "was stopped"),
]
BAD_SCRIPT_IDS = ["crash", "garbage", "megabytes"]


# Paddle 2.6.2 (sm_61-86) on the real H100 (docs/facts/real-gpu-host.md): its run_check line.
ARCH_NOT_SUPPORTED_H100 = (
    "W1122 10:00:00.000000  1234 gpu_resources.cc:106] The GPU compute capability in your current "
    "machine is 90, which is not supported by Paddle, it is recommended to install the "
    "corresponding wheel package according to the installation information on the official "
    "Paddle website."
)
CUDNN_914_LINE = "W1122 10:00:00.000000  1234 gpu_resources.cc:164] device: 0, cuDNN Version: 9.14."


def nvml_witness(
    doc: dict[str, Any],
    gpus: dict[int, tuple[int | None, int | None, int | None]],
    samples: int = 10,
    offset: float = 0.0,
) -> NvmlSummary:
    """A sampler summary as `NvmlSampler.summary()` writes it, with `samples` time-stamped rows
    per GPU spread over the first run's training window (shifted by `offset` seconds):
    {nvml index: (process memory MiB or None, device util % or None, process SM % or None)}."""
    window = doc["runs"][0]["train_window"]
    start, span = window["start"] + offset, window["end"] - window["start"]
    # NVML's millisecond stamps, kept inside the window (rounding must not push one out of it)
    times = [
        min(max(round(start + span * k / max(samples - 1, 1), 3), start), start + span)
        for k in range(samples)
    ]
    traces: dict[str, Any] = {}  # JSON's lists where the summary's type says tuples
    for index, (mib, util, sm) in gpus.items():
        memory = mib * 2**20 if mib is not None else None
        traces[str(index)] = {
            "util_max": util,
            "util_mean": util,
            "mem_used_max_bytes": memory or 0,
            "process_seen": memory is not None,
            "process_mem_max_bytes": memory,
            "process_query": "ok",
            "process_util_query": "ok" if sm is not None else "NVML_ERROR_NOT_SUPPORTED",
            "series": [[t, util, memory] for t in times],
            "process_util": [[t, sm] for t in times] if sm else [],
        }
    return as_nvml(
        {
            "status": "ok",
            "reason": None,
            "samples": samples,
            "interval_s": 0.05,
            "pids": [4242],
            "gpus": traces,
        }
    )


def broken(doc: dict[str, Any], op: str, problem: str, run: int = 0) -> dict[str, Any]:
    """`doc` with every check of `op` failed with `problem` (what ENVCHECK_SMOKE_CORRUPT gives)."""
    doc = copy.deepcopy(doc)
    for check in doc["runs"][run]["checks"]:
        if check["op"] == op:
            check.update(ok=False, problem=problem)
    return doc


def zero_loss(doc: dict[str, Any], run: int = 0) -> dict[str, Any]:
    """The 2.6.2-on-H100 curve: every loss exactly 0.0."""
    doc = copy.deepcopy(doc)
    r = doc["runs"][run]
    r.update(loss_start=0.0, loss_end=0.0, losses=[0.0] * r["steps"])
    r["loss_check"] = {"start": 0.0, "non_finite": 0, "zero_steps": r["steps"], "distinct": 1}
    return doc
