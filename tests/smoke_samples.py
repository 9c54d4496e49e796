"""Recorded outputs of the smoke workload, and real Paddle log lines, for the judge's unit tests.

The two JSON lines were printed by `envcheck/smoke/workload.py --compare-cpu --export` in the
offline test image `envcheck-test/paddle-cpu:3.3.1` (Paddle 3.3.1 CPU, uid 1000, no network) on
the 2-core CI machine: `--device cpu`, and `--device gpu:0` (which a CPU build refuses). No GPU
exists here, so GPU results are *derived* from them by `on_gpu()` below, with the places,
capabilities and version line a CUDA build prints (compat_facts.md section 7, row 14).
"""

from __future__ import annotations

import copy
import json
from typing import Any

RECORDED_CPU_PASS = '{"schema":"envcheck-smoke/1","error":null,"runs":[{"device_requested":"cpu","device_error":null,"error":null,"device_used":"cpu","steps":60,"batch_size":128,"param_places":{"embedding.weight":"Place(cpu)","fc.weight":"Place(cpu)","fc.bias":"Place(cpu)"},"logits_place":"Place(cpu)","logits_dtype":"float32","amp":{"enabled":false,"dtype":null},"loss_start":0.69364,"loss_end":0.52454,"losses":[0.6936,0.6897,0.6968,0.6933,0.6915,0.6888,0.6826,0.6793,0.6903,0.6683,0.6738,0.682,0.6636,0.672,0.6489,0.6427,0.64,0.6554,0.641,0.6316,0.6131,0.6235,0.6182,0.6207,0.604,0.6258,0.6214,0.607,0.5846,0.6256,0.5474,0.5342,0.6438,0.5316,0.5532,0.4925,0.5887,0.534,0.5172,0.5708,0.4914,0.4892,0.6236,0.5248,0.4764,0.5469,0.4491,0.6288,0.4447,0.5528,0.5308,0.4985,0.4618,0.5414,0.3917,0.547,0.4785,0.5427,0.4641,0.5904],"accuracy":0.7861,"first_step_s":0.0833,"steps_per_s":102.45,"samples_per_s":13113.0,"peak_gpu_mem_bytes":null,"peak_gpu_reserved_bytes":null,"compare_cpu":{"skipped":"the run itself was on the CPU","steps_per_s":null,"speedup":null,"error":null},"export":{"format":"json","inference_gpu":false,"max_abs_diff":2.384185791015625e-07,"argmax_agreement":1.0,"match":true,"seconds":0.4201,"error":null}}],"import_s":2.4502,"python":"3.11.2","paddle_version":"3.3.1","compiled_with_cuda":false,"cuda_version":"False","cudnn_version":"False","cuda_device_count":0,"cuda_device_count_error":null,"device_capabilities":[],"device_names":[],"default_device":"cpu","env":{"CUDA_VISIBLE_DEVICES":null,"NVIDIA_VISIBLE_DEVICES":null,"CUDA_DEVICE_ORDER":"PCI_BUS_ID"},"uid":1000,"pid":1,"warnings":[],"total_s":3.56}'

RECORDED_CPU_BUILD_ASKED_GPU = '{"schema":"envcheck-smoke/1","error":null,"runs":[{"device_requested":"gpu:0","device_error":"ValueError: The device should not be <re.Match object; span=(0, 5), match=\'gpu:0\'>, since PaddlePaddle is not compiled with CUDA","error":null,"device_used":"cpu","steps":60,"batch_size":128,"param_places":{"embedding.weight":"Place(cpu)","fc.weight":"Place(cpu)","fc.bias":"Place(cpu)"},"logits_place":"Place(cpu)","logits_dtype":"float32","amp":{"enabled":false,"dtype":null},"loss_start":0.69364,"loss_end":0.52454,"losses":[0.6936,0.6897,0.6968,0.6933,0.6915,0.6888,0.6826,0.6793,0.6903,0.6683,0.6738,0.682,0.6636,0.672,0.6489,0.6427,0.64,0.6554,0.641,0.6316,0.6131,0.6235,0.6182,0.6207,0.604,0.6258,0.6214,0.607,0.5846,0.6256,0.5474,0.5342,0.6438,0.5316,0.5532,0.4925,0.5887,0.534,0.5172,0.5708,0.4914,0.4892,0.6236,0.5248,0.4764,0.5469,0.4491,0.6288,0.4447,0.5528,0.5308,0.4985,0.4618,0.5414,0.3917,0.547,0.4785,0.5427,0.4641,0.5904],"accuracy":0.7861,"first_step_s":0.1297,"steps_per_s":72.36,"samples_per_s":9262.2,"peak_gpu_mem_bytes":null,"peak_gpu_reserved_bytes":null,"compare_cpu":{"skipped":"the run itself was on the CPU","steps_per_s":null,"speedup":null,"error":null},"export":{"format":"json","inference_gpu":false,"max_abs_diff":2.384185791015625e-07,"argmax_agreement":1.0,"match":true,"seconds":0.5017,"error":null}}],"import_s":2.2034,"python":"3.11.2","paddle_version":"3.3.1","compiled_with_cuda":false,"cuda_version":"False","cudnn_version":"False","cuda_device_count":0,"cuda_device_count_error":null,"device_capabilities":[],"device_names":[],"default_device":"cpu","env":{"CUDA_VISIBLE_DEVICES":null,"NVIDIA_VISIBLE_DEVICES":null,"CUDA_DEVICE_ORDER":"PCI_BUS_ID"},"uid":1000,"pid":1,"warnings":[],"total_s":3.6833}'

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
    return json.loads(line)  # type: ignore[no-any-return]


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
