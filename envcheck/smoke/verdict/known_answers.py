"""Were the numbers right? (pure) The known-answer checks and the loss curve of each run.

The workload computes every op class of the classifier on the run's device and with numpy from
the same inputs, before and after training (`checks`), and reports the full-precision loss curve's
red flags (`loss_check`). On a real H100 the PyPI paddlepaddle-gpu 2.6.2 build (sm_61–86 only)
returned exactly 0.0 from matmul and Conv2D and trained to a loss of 0.0 with exit 0
(docs/facts/real-gpu-host.md): placement and memory are no proof; right numbers are.
"""

from __future__ import annotations

import re

from envcheck.contracts.facts import to_dict
from envcheck.contracts.findings import Finding, fail
from envcheck.contracts.host_report import WRONG_RESULTS_ID
from envcheck.contracts.record import replace
from envcheck.contracts.remedy import Instruction, Remedy, aiming, as_remedy, say, steps, user
from envcheck.contracts.smoke_report import Witness
from envcheck.contracts.smoke_result import KnownAnswer, RunResult, SmokeResult, WorkloadError
from envcheck.smoke.plan import Plan
from envcheck.smoke.workload.protocol import scan_paddle_warnings
from envcheck.verdict.fixes import UNKNOWN_PYTHON, PipInstall, command, cudnn_install

INSTALL_GPU_PADDLE = "https://www.paddlepaddle.org.cn/en/install/quick"

# Which library computes each op on a GPU, for the cause.
LIBRARY = {"matmul": "cuBLAS", "conv1d": "cuDNN"}


def failed_checks(run: RunResult) -> list[KnownAnswer]:
    return [c for c in run.checks or () if not c.ok]


def errors_of(runs: list[RunResult]) -> list[WorkloadError]:
    """The errors of the crashed ones among `runs`."""
    return [r.error for r in runs if r.error is not None]


def loss_problems(run: RunResult) -> list[str]:
    """A loss that is NaN/Inf, starts at exactly 0.0, stays at 0.0 or never changes."""
    check = run.loss_check
    if run.error or not check:
        return []
    problems = []
    if check.non_finite:
        problems.append(f"{check.non_finite} of {run.steps} losses were NaN/Inf")
    if check.start == 0.0:
        problems.append("the loss started at exactly 0.0")
    if check.zero_steps == run.steps:
        problems.append("the loss stayed at exactly 0.0")
    elif check.distinct == 1 and not check.non_finite and (run.steps or 0) > 1:
        problems.append(f"the loss never changed in {run.steps} steps ({check.start})")
    return problems


def is_wrong(run: RunResult) -> bool:
    return bool(failed_checks(run) or loss_problems(run))


def wrong_results(
    plan: Plan,
    result: SmokeResult,
    runs: list[RunResult],
    witnesses: dict[str, Witness],
) -> Finding:
    """One finding for every run whose numbers were wrong, with the likely cause and its fix."""
    parts = [_run_text(r, witnesses.get(r.device_used)) for r in runs]
    cause, seen, fix = likely_cause(plan, result, runs)
    return fail(
        WRONG_RESULTS_ID,
        "the smoke computed wrong numbers without an error: " + "; ".join(parts) + f". {seen}",
        fix=fix,
        layer="smoke",
        cause=cause,
        failed_checks={r.device_used: [to_dict(c) for c in failed_checks(r)] for r in runs},
        loss_problems={r.device_used: loss_problems(r) for r in runs},
    )


def _run_text(run: RunResult, seen: Witness | None) -> str:
    wrong = failed_checks(run)
    by_op: dict[str, list[str]] = {}
    for check in wrong:
        by_op.setdefault(check.op, []).append(f"{check.problem} {check.phase}")
    ops = [f"{op} ({', '.join(dict.fromkeys(how))})" for op, how in by_op.items()]
    text = f"{run.device_used}: "
    if ops:
        text += f"{len(wrong)} of {len(run.checks or ())} known-answer checks failed: "
        text += ", ".join(ops)
    problems = loss_problems(run)
    if problems:
        text += ("; " if ops else "") + "; ".join(problems)
    if seen is not None and seen.state == "idle":
        text += (
            f" (and NVML saw GPU {seen.gpu} do no work while training: "
            f"{seen.util_text} in the training window — the kernels did not run)"
        )
    return text


def likely_cause(
    plan: Plan, result: SmokeResult, runs: list[RunResult]
) -> tuple[str, str, Remedy | str]:
    """(cause id, the facts that point to it, the fix), from Paddle's own lines and the ops."""
    kinds = {w.kind for w in result.warnings}
    texts = [w.text for w in result.warnings]
    ops = {c.op for r in runs for c in failed_checks(r)}
    if not any(r.device_used.startswith("gpu") for r in runs):
        return (
            "cpu-kernels",
            (
                f"Paddle {result.paddle_version}'s CPU kernels disagree with numpy on the same "
                "inputs: a damaged install or a CPU feature problem (oneDNN)"
            ),
            (
                f"reinstall Paddle in {where(plan)} (`python -m pip install --force-reinstall "
                'paddlepaddle`) and run `python -c "import paddle; paddle.utils.run_check()"`'
            ),
        )
    capabilities = ", ".join(c or "?" for c in result.device_capabilities or ()) or "unknown"
    build = (
        f"Paddle {result.paddle_version} (CUDA {result.cuda_version}, cuDNN {result.cudnn_version})"
    )
    arch = [t for t in texts if "arch-mismatch" in _kinds_of(t)]
    if arch or len(ops) >= 3:
        seen = (
            f"Paddle said: {arch[0]}"
            if arch
            else f"{len(ops)} op classes are wrong, not one library"
        )
        return (
            "arch",
            (
                f"{build} most likely has no kernels for this GPU's compute capability "
                f"({capabilities}): {seen}"
            ),
            install_fix(plan, f"a Paddle build with kernels for compute capability {capabilities}"),
        )
    loaded = _loaded_cudnn(texts)
    built = _major(result.cudnn_version)
    if "conv1d" in ops and (
        kinds & {"cudnn-mismatch", "cuda-cudnn-mismatch"} or (loaded and built and loaded != built)
    ):
        return (
            "cudnn-mismatch",
            f"the cuDNN loaded ({loaded or 'see the Paddle warnings'}) is not the one {build} was built for",
            cudnn_fix(plan, result),
        )
    if "matmul" in ops and kinds & {"cuda-mismatch", "cuda-cudnn-mismatch"}:
        return (
            "cublas-mismatch",
            f"the CUDA runtime/cuBLAS loaded is not the one {build} was built for",
            library_fix(plan, f"the CUDA {result.cuda_version} libraries the build expects"),
        )
    if kinds & {"driver-error"}:
        return (
            "driver",
            "the CUDA driver reported errors (a driver or CUDA compat-library mismatch)",
            (
                "make the driver's user-space libraries match the kernel module (`nvidia-smi` "
                "must work; remove a CUDA compat libcuda from LD_LIBRARY_PATH), or reboot after "
                "a driver update"
            ),
        )
    libraries = sorted({LIBRARY.get(op, "Paddle's own CUDA kernels") for op in ops}) or [
        "the kernels"
    ]
    return (
        "unexplained",
        f"{' and '.join(libraries)} gave wrong results on compute capability {capabilities} with {build}",
        steps(
            as_remedy(install_fix(plan, "the official Paddle build for this GPU and driver")),
            Instruction("if it persists, report it with the doctor's --json output"),
        ),
    )


def install_fix(plan: Plan, what: str) -> Remedy | str:
    if plan.mode == "container":
        if plan.gpu_image:
            run = user(
                "envcheck",
                "doctor",
                "--image",
                plan.gpu_image,
                changes=f"runs the smoke in the image the doctor chose, with {what}",
            )
            return aiming(f"use an image with {what}", steps(run))
        return f"use an image with {what}: a matching -gpu-cuda tag"
    if plan.pip_command:
        return aiming(f"install {what} in {plan.python}", command(plan.pip_command, what))
    return f"install {what} in {plan.python} ({INSTALL_GPU_PADDLE})"


def cudnn_fix(plan: Plan, result: SmokeResult) -> Remedy | str:
    """The cuDNN the build was made with: NVIDIA's wheel for it, or the doctor's build."""
    cudnn, cuda = result.cudnn_version or "", result.cuda_version or ""
    get = cudnn_install(plan.python or UNKNOWN_PYTHON, cudnn, cuda)
    return library_fix(plan, f"cuDNN {cudnn} (the one the build expects)", get)


def library_fix(plan: Plan, what: str, install: PipInstall | None = None) -> Remedy | str:
    """The library the build expects, or the doctor's build, which brings matching ones: the
    doctor's Paddle command is never labelled as installing a library (on the real H100 a cuDNN
    fix read "install cuDNN 8.6.0 …: `pip install paddlepaddle-gpu==3.3.1 …`")."""
    if plan.mode == "container":
        return install_fix(plan, what)
    get = (
        aiming(
            f"install {what} in {plan.python}",
            steps(
                *install.commands(f"installs {what} into {plan.python}"),
                Instruction("put its lib folder first on LD_LIBRARY_PATH"),
            ),
        )
        if install
        else say(f"install {what} in {plan.python}")
    )
    if not plan.pip_command:
        return get
    other = command(plan.pip_command, what).steps
    return replace(
        steps(
            get,
            Instruction(
                "replace the build with the one the doctor chose, which brings matching libraries",
                alternative=True,
            ),
            *(replace(c, alternative=True) for c in other),
        ),
        goal=get.goal,
    )


def where(plan: Plan) -> str:
    return f"the container {plan.image}" if plan.mode == "container" else f"{plan.python}"


def _kinds_of(text: str) -> set[str]:
    return {hit["kind"] for hit in scan_paddle_warnings(text)}


_CUDNN_LINE = re.compile(r"cuDNN Version: (\d+)")


def _loaded_cudnn(texts: list[str]) -> str | None:
    """The cuDNN major Paddle found at run time ("device: 0, cuDNN Version: 9.14.")."""
    for text in texts:
        match = _CUDNN_LINE.search(text)
        if match:
            return match.group(1)
    return None


def _major(version: str | None) -> str | None:
    text = version or ""
    return text.split(".")[0] if text[:1].isdigit() else None
