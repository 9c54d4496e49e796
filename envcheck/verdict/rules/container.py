"""The container path: the engine that will run the smoke, and the image chosen for it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.image.given import GIVEN
from envcheck.matrix.compat import unpublished_platform
from envcheck.matrix.provenance import plain_source
from envcheck.verdict.fixes import NVIDIA_RUNTIME_FIX, OTHER_RELEASE_FIX, engine_or_in_process_fix

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context

_UNPUBLISHED = "no official build of Paddle for"


def check_engine(ctx: Context) -> Iterable[Finding]:
    e = ctx.host.engine
    if e.status == "ok":
        if ctx.gpus and not e.nvidia_runtime:
            yield warn(
                "engine.no-nvidia-runtime",
                f"Docker {e.version} has no NVIDIA runtime or CDI device (runtimes: "
                f"{', '.join(e.runtimes) or 'none'}): containers cannot get a GPU",
                fix=NVIDIA_RUNTIME_FIX,
                layer="engine",
                runtimes=list(e.runtimes),
            )
        else:
            gpu = "with the NVIDIA runtime" if e.nvidia_runtime else "without GPU support"
            api = f" (API {e.api_version})" if e.api_version else ""
            yield passed(
                "engine.ok", f"Docker {e.version}{api} {gpu}", layer="engine", version=e.version
            )
    elif ctx.needs_engine:
        yield warn(
            "engine.unreachable",
            f"no container engine: {e.reason or e.status}",
            fix=engine_or_in_process_fix(e),
            layer="engine",
            reason=e.reason,
        )


def check_image(ctx: Context) -> Iterable[Finding]:
    img = ctx.image
    if img is None:
        return
    if img.ref is None and (platform := unpublished_platform(ctx.host.machine.arch)):
        yield fail(
            "image.no-official-build",
            f"{_UNPUBLISHED} {platform}: Paddle publishes its images for "
            "linux/amd64 only and its wheels for x86_64 and aarch64 only",
            fix=(img.reason or OTHER_RELEASE_FIX).removeprefix(f"{_UNPUBLISHED} {platform}: "),
            layer="image",
            platform=platform,
        )
        return
    if img.ref is None:
        reasons = "; ".join(f"{r.ref}: {r.reason}" for r in img.rejected[:4])
        yield fail(
            "image.none",
            f"no image of Paddle {img.paddle} can run on this host"
            + (f": {reasons}" * bool(reasons)),
            fix=img.reason or OTHER_RELEASE_FIX,
            layer="image",
            rejected=[r.ref for r in img.rejected],
        )
        return
    if img.reason and img.reason.startswith(GIVEN):  # what is known of the user's image
        note = f" ({img.reason})"
    else:
        note = "" if img.confirmed else f" (tag {plain_source(img.source or '', False)})"
    archs = f"; {img.arch_note}" if img.arch_note else ""
    yield passed(
        "image.selected",
        f"{img.ref}{note}{archs}",
        layer="image",
        ref=img.ref,
        kind=img.kind,
        confirmed=img.confirmed,
    )
