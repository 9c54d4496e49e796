"""`smoke_check`: plan the smoke, run it (container, else in-process), judge what came back.

    plan_smoke (pure, smoke/plan.py) -> run_container | run_in_process -> judge (pure,
    smoke/verdict/judge.py) -> findings + the report's `smoke` object (smoke/verdict/document.py)

Neither `docker` nor `paddle` is imported at module level; `paddle` is never imported in this
process at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envcheck.contracts.errors import EnvcheckError, EnvironmentProblem
from envcheck.contracts.facts import HostFacts
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.record import replace
from envcheck.contracts.smoke_report import ContainerInfo, NvmlSummary, SmokeDocument
from envcheck.contracts.smoke_result import TrainWindow
from envcheck.edges import activity
from envcheck.engine.docker_adapter import GpuRequestRefused
from envcheck.registry.errors import ManifestNotFound
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.parse import BadOutput, RawRun, parse_result
from envcheck.smoke.plan import Fallback, Outcome, Plan, in_process_plan, plan_smoke
from envcheck.smoke.runner.payload import WORKLOAD
from envcheck.smoke.verdict.document import smoke_document
from envcheck.smoke.verdict.failures import gpu_refused, image_unavailable
from envcheck.smoke.verdict.image_compat import image_compat_findings
from envcheck.smoke.verdict.judge import judge
from envcheck.smoke.verdict.loaded import loaded_findings

# Tests only: run another script file instead of workload.py (a crash, garbage, megabytes, a
# hang), in a real container or subprocess, to prove each failure path end to end.
SCRIPT_ENV = "ENVCHECK_SMOKE_SCRIPT"


def smoke_check(
    host: HostFacts, image: ImageChoice | None, options: SmokeOptions
) -> tuple[SmokeDocument, list[Finding]]:
    """The doctor's entry point: the report's `smoke` object and the smoke findings."""
    plan = plan_smoke(host, image, options)
    if plan.mode != "container" and plan.fallback and _container_demanded(options):
        hint = "start the engine (or fix its access), or drop the flag to let the doctor choose"
        if host.engine.denied:
            from envcheck.probe.engine import socket_access_fix

            socket = host.engine.host or ""
            hint = socket_access_fix(socket.removeprefix("unix://") if socket else None)
        raise EnvironmentProblem(
            f"{_demand(options)} needs a container, but {plan.fallback.reason}", hint=hint
        )
    findings: list[Finding] = []
    if plan.fallback and not options.in_process:
        findings.append(image_unavailable(plan, plan.fallback))
    outcome = None
    if plan.mode == "container":
        plan, outcome, early = _container_with_fallback(plan, host, image, options)
        findings += early
    if plan.mode == "in-process":
        outcome = run_in_process(plan, options)
    findings += judge(plan, outcome)
    findings += loaded_findings(host, plan, outcome.result if outcome else None)
    findings += image_compat_findings(host, outcome.raw.container if outcome else None)
    return smoke_document(plan, outcome), findings


def _container_with_fallback(
    plan: Plan, host: HostFacts, image: ImageChoice | None, options: SmokeOptions
) -> tuple[Plan, Outcome | None, list[Finding]]:
    try:
        client, image_id = acquire_image(plan, options)
    except EnvcheckError as e:
        if _container_demanded(options):
            raise  # that image tested, or a failure: never a quiet move to the host's Python
        detail = f"{e.message} ({e.hint})" if e.hint else e.message
        # one line in the report: the engine's last words (a missing tag: that it is missing,
        # the reference being in the line already); the whole error under --explain
        missing = isinstance(e, ManifestNotFound)
        cause = "tag not found" if missing else e.message.rsplit(": ", 1)[-1].strip('"')
        why = Fallback("image-unavailable", f"image {plan.image} unavailable ({cause})", detail)
        fallback = in_process_plan(host, image, options, fallback=why)
        return fallback, None, [image_unavailable(fallback, why)]
    try:
        return plan, run_container(client, plan, options, image_id), []
    except GpuRequestRefused as e:
        # Train anyway, without the GPU: the report shows the CPU run and the verdict names
        # the refusal as the cause of the fallback.
        plan = replace(plan, gpu_refused=_engine_words(e.message))
        activity.failed(
            f"the engine refused the GPU request ({plan.gpu_refused}): creating the smoke "
            "container again without a GPU, to train on the CPU"
        )
        return plan, run_container(client, plan, options, image_id), [gpu_refused(plan)]


def _container_demanded(options: SmokeOptions) -> bool:
    """--image REF or --no-pull: the user wants that image tested, or a failure (exit 2 or 4)."""
    return not options.in_process and (options.image is not None or not options.pull)


def _demand(options: SmokeOptions) -> str:
    return f"--image {options.image}" if options.image else "--no-pull"


def _engine_words(message: str) -> str:
    """The engine's own text, without our "starting …: the engine cannot provide GPUs:" prefix."""
    return message.rsplit("cannot provide GPUs: ", 1)[-1]


def acquire_image(plan: Plan, options: SmokeOptions) -> tuple[Any, str]:
    """Connect and make sure the image is here (pulled with a progress display if allowed)."""
    from envcheck.engine.docker_adapter import connect
    from envcheck.probe.endpoint import resolve_endpoint
    from envcheck.pull.ensure import ensure_image

    assert plan.image is not None
    # the probed engine (else the command's variables'); one client for image and container
    client = connect(options.endpoint or resolve_endpoint(options.variables))
    return client, ensure_image(
        plan.image,
        allow_pull=options.pull,
        quiet=options.quiet,
        client=client,
        matrix=options.matrix,
        stream=options.stderr,
        variables=options.variables,
    )


def script_path(variables: Mapping[str, str]) -> Path:
    override = variables.get(SCRIPT_ENV)
    return Path(override).resolve() if override else WORKLOAD


def workload_args(plan: Plan, options: SmokeOptions) -> list[str]:
    args = [arg for device in plan.device_args for arg in ("--device", device)]
    args += ["--steps", str(options.steps)]
    args += [
        flag
        for flag, on in (
            ("--amp", options.amp),
            ("--compare-cpu", options.compare_cpu),
            ("--export", options.export),
        )
        if on
    ]
    return args


def run_container(client: Any, plan: Plan, options: SmokeOptions, image_id: str | None) -> Outcome:
    from envcheck.smoke.runner.container_spec import (
        ContainerSpec,
        describe,
        hook_needs_writable_root,
    )

    assert plan.image is not None
    spec = ContainerSpec(
        # the image checked or pulled, by its id: a mirror's pull leaves no `plan.image` name
        image=image_id or plan.image,
        label=plan.image,
        args=tuple(workload_args(plan, options)),
        script=script_path(options.variables),
        timeout=options.timeout,
        gpu_ids=None if plan.gpu_refused else plan.gpu_ids,  # refused once: run without
    )
    try:
        raw, nvml = _run_spec(client, spec, options)
    except EnvironmentProblem as e:
        if spec.gpu_ids is None or not hook_needs_writable_root(e.message):
            raise
        spec = replace(spec, read_only=False)  # the GPU matters more than a read-only root
        raw, nvml = _run_spec(client, spec, options)
        raw = _container(raw, read_only_dropped=e.message)
    return outcome_of(_container(raw, image_id=image_id, limits=describe(spec)), nvml)


def _container(raw: RawRun, **more: Any) -> RawRun:
    """`raw` with more said of its container."""
    return replace(raw, container=replace(raw.container or ContainerInfo(), **more))


def _run_spec(client: Any, spec: Any, options: SmokeOptions) -> tuple[RawRun, NvmlSummary]:
    from envcheck.smoke.runner.container import SmokeContainer
    from envcheck.smoke.runner.sampler import NvmlSampler

    with (
        NvmlSampler(options.variables) as sampler,
        SmokeContainer(client, spec, variables=options.variables, stderr=options.stderr) as box,
    ):
        watch = sampler.watch if sampler.status == "ok" else None  # skip the extra inspect
        raw = box.run(on_start=watch)
    # asked of the engine after the removal, not assumed
    return _container(raw, removed=box.removed), sampler.summary()


def run_in_process(plan: Plan, options: SmokeOptions) -> Outcome:
    from envcheck.smoke.runner.inprocess import run_subprocess
    from envcheck.smoke.runner.sampler import NvmlSampler

    assert plan.python is not None
    with NvmlSampler(options.variables) as sampler:
        raw = run_subprocess(
            plan.python,
            script_path(options.variables),
            workload_args(plan, options),
            options.timeout,
            options.variables,  # the command's own: CUDA_VISIBLE_DEVICES is part of what is checked
            on_start=sampler.watch,
        )
    return outcome_of(raw, sampler.summary())


def outcome_of(raw: RawRun, nvml: NvmlSummary) -> Outcome:
    if raw.started_at is not None and raw.ended_at is not None:
        nvml = replace(nvml, run_window=TrainWindow(raw.started_at, raw.ended_at))
    if raw.timed_out or raw.stdout_overflow:
        return Outcome(raw, None, None, nvml)
    try:
        return Outcome(raw, parse_result(raw.stdout), None, nvml)
    except BadOutput as e:
        return Outcome(raw, None, str(e), nvml)
