"""What the verdict rests on (pure): how far the doctor's evidence goes, and what `--expect-gpu`
makes of a run in which nothing trained on a GPU.

    gpu-trained  the smoke trained on a GPU, NVML saw that GPU work in the run's training window,
                 and every smoke check passed
    cpu-trained  the smoke trained, on the CPU only
    static       no smoke was asked for (--no-smoke, --facts): the facts were judged, training
                 was not proven
    none         a smoke was asked for and nothing trained (no engine, no image, no Paddle,
                 or the run failed), or Paddle's GPU claim was never witnessed by NVML
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from envcheck.contracts.findings import Finding, fail
from envcheck.contracts.host_report import UNPROVEN_ID, gpu_usable
from envcheck.contracts.remedy import steps
from envcheck.verdict.fixes import SMOKE_NOT_SKIPPED_FIX, SMOKE_ON_THIS_HOST_FIX, SMOKE_WITH_GPU_FIX

if TYPE_CHECKING:
    from envcheck.contracts.host_report import Verdict

Proof = Literal["gpu-trained", "cpu-trained", "static", "none"]
SMOKE_PASS_ID = "smoke.pass"
# The installed build's arch list is unknown (a nightly, or a build the matrix has no list of):
# only a training run on the GPU can prove it.
ARCH_UNVERIFIED_ID = "paddle.arch-unverified"


PROOF_WORDS: dict[Proof, str] = {
    "gpu-trained": "the smoke trained on the GPU and its checks passed",
    "cpu-trained": "the smoke trained on the CPU only",
    "static": "static checks only: training was not proven (no smoke run)",
    "none": "none: no smoke training ran",
}


def proof_words(
    proof: Proof, verdict: Verdict, findings: Sequence[Finding], gpus: int | None = None
) -> str:
    """The `Proof:` line. "none" says why: a run that trained on the CPU where a GPU was
    expected did complete (the real H100 with the CPU wheel read "no smoke training completed"
    under a loss that fell from 0.694 to 0.217). `gpus`: how many the host has; a GPU proof
    says how many of them trained (a Slurm step given 1 GPU of 8 proves 1)."""
    trained = proven_gpus(findings)
    if proof == "gpu-trained" and gpus and trained:
        return (
            f"the smoke trained on {len(trained)} of {gpus} GPUs ({', '.join(trained)}) "
            "and its checks passed"
        )
    if proof != "none":
        return PROOF_WORDS[proof]
    if verdict == "cpu-fallback":
        return "none: the smoke trained on the CPU, not on the GPU it was meant to use"
    if verdict == "wrong-results":
        return "none: the smoke's results were wrong"
    if _unwitnessed(findings):
        return "none: Paddle reports training on the GPU, but NVML did not witness it"
    if any(f.family == "smoke" and f.severity == "fail" and f.id != UNPROVEN_ID for f in findings):
        return "none: the smoke training failed"
    return PROOF_WORDS["none"]


def proof_headline(proof: Proof, findings: Sequence[Finding], gpu_host: bool) -> str:
    """What a passing report may claim, and no more: "trained on GPU 0" where the smoke trained
    there (NVML saw it), "CPU host, static checks only" where nothing trained on a host without
    a GPU. `gpu_host`: the host has a GPU (usable or not)."""
    where = "GPU host" if gpu_host else "CPU host"
    if proof == "gpu-trained":
        trained = [d.removeprefix("gpu:") for d in proven_gpus(findings)]
        if trained:
            return f"trained on GPU{'s' if len(trained) > 1 else ''} {', '.join(trained)}"
        return "trained on the GPU"
    if proof == "cpu-trained":
        return f"{where}, trained on the CPU only"
    if proof == "static":
        return f"{where}, static checks only"
    return f"{where}, nothing trained"


def proven_gpus(findings: Sequence[Finding]) -> list[str]:
    """The GPUs (`gpu:0`, as the smoke's Paddle numbered them) a passing smoke trained on."""
    passed = next((f for f in findings if f.id == SMOKE_PASS_ID and f.severity == "pass"), None)
    devices = (passed.observed.get("devices") or []) if passed else []
    return list(dict.fromkeys(str(d) for d in devices if str(d).startswith("gpu")))


def proof_of(findings: Sequence[Finding], *, smoke_asked: bool) -> Proof:
    if not smoke_asked:
        return "static"
    passed = next((f for f in findings if f.id == SMOKE_PASS_ID and f.severity == "pass"), None)
    if passed is None or any(f.family == "smoke" and f.severity == "fail" for f in findings):
        return "none"
    devices = passed.observed.get("devices") or []
    if not any(str(d).startswith("gpu") for d in devices):
        return "cpu-trained"
    return "none" if _unwitnessed(findings) else "gpu-trained"


def _unwitnessed(findings: Sequence[Finding]) -> list[str]:
    """The GPUs the smoke's pass claims and NVML did not see busy in their training window
    (a report saved before `witnessed` was recorded claims none unwitnessed)."""
    passed = next((f for f in findings if f.id == SMOKE_PASS_ID and f.severity == "pass"), None)
    if passed is None or "witnessed" not in passed.observed:
        return []
    seen = passed.observed["witnessed"] or []
    return [
        str(d)
        for d in passed.observed.get("devices") or []
        if str(d).startswith("gpu") and d not in seen
    ]


def expect_gpu_unproven(findings: Sequence[Finding], proof: Proof) -> Finding | None:
    """Under --expect-gpu, nothing trained on a GPU is a failure, never a warning nor a pass:
    the smoke's own failure when it has one, else this finding, which carries the smoke's reasons
    (no engine, image unavailable, no Paddle) and their fixes. Its exit code (exit_status_of):
    6 where the host has a GPU it could have trained on, 1 where it has none it can use (the
    driver's or the GPU's finding says why) or the run was static (--no-smoke, --facts without a
    recorded smoke): unverified."""
    if proof == "gpu-trained":
        return None
    usable = gpu_usable(findings)
    if proof == "static":
        return _static_unproven(findings) or fail(
            UNPROVEN_ID,
            "--expect-gpu: unverified GPU: static checks only (no smoke ran), and only a "
            "training run on the GPU proves it",
            fix=SMOKE_ON_THIS_HOST_FIX,
            layer="smoke",
            proof=proof,
            reasons=[],
        )
    if any(f.family == "smoke" and f.severity == "fail" for f in findings):
        return None  # the smoke already failed, with its own cause and exit code
    why = [f for f in findings if f.family == "smoke" and f.severity == "warn"]
    if proof == "cpu-trained":
        reason = "the smoke trained on the CPU only"
    elif unseen := _unwitnessed(findings):
        reason = (
            f"Paddle reports training on {', '.join(unseen)}, but NVML did not witness it"
            + "".join(f": {f.message}" for f in why if f.id == "smoke.gpu-unconfirmed")
        )
    else:
        reason = "; ".join(f.message for f in why) or "no smoke training ran"
    if not usable:
        reason += "; and this host has no GPU it can use (see the driver and GPU checks)"
    remedies = list(dict.fromkeys(f.remedy for f in why if f.remedy))
    return fail(
        UNPROVEN_ID,
        f"--expect-gpu: nothing trained on a GPU, so nothing proves this host can ({reason})",
        fix=steps(*remedies) if remedies else SMOKE_WITH_GPU_FIX,
        layer="smoke",
        proof=proof,
        reasons=[f.id for f in why],
    )


def _static_unproven(findings: Sequence[Finding]) -> Finding | None:
    """--expect-gpu without a smoke: a static verdict is not a pass when the installed build's arch
    coverage is unverified: nothing but a training run on the GPU can prove it."""
    unverified = [f for f in findings if f.id == ARCH_UNVERIFIED_ID and f.severity == "warn"]
    if not unverified:
        return None
    return fail(
        UNPROVEN_ID,
        "--expect-gpu: no smoke ran, and static checks cannot prove this build runs on the GPU "
        f"(arch coverage unverified: {'; '.join(f.message for f in unverified)})",
        fix=SMOKE_NOT_SKIPPED_FIX,
        layer="smoke",
        proof="static",
        reasons=[f.id for f in unverified],
    )
