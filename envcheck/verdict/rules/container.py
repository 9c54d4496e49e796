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
    if img.ref is None:
        yield _no_image(ctx)
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


def _no_image(ctx: Context) -> Finding:
    """No image of the target release for this host. A FAIL where an image is the subject, or
    where nothing else can train (no readable Paddle installed); else advice: the installed build
    decides, and the smoke trains it in-process."""
    img = ctx.image
    assert img is not None
    platform = unpublished_platform(ctx.host.machine.arch)
    if platform is not None:
        id_ = "image.no-official-build"
        message = (
            f"{_UNPUBLISHED} {platform}: Paddle publishes its images for linux/amd64 only and "
            "its wheels for x86_64 and aarch64 only"
        )
        fix: str = (img.reason or OTHER_RELEASE_FIX).removeprefix(f"{_UNPUBLISHED} {platform}: ")
        observed: dict[str, object] = {"platform": platform}
    else:
        reasons = "; ".join(f"{r.ref}: {r.reason}" for r in img.rejected[:4])
        id_ = "image.none"
        why = reasons or (img.reason or "").split("; ")[0]
        message = f"no image of Paddle {img.paddle} can run on this host" + (f": {why}" * bool(why))
        fix = img.reason or OTHER_RELEASE_FIX
        observed = {"rejected": [r.ref for r in img.rejected]}
    if not ctx.installed_decides:
        return fail(id_, message, fix=fix, layer="image", **observed)
    p = ctx.host.paddle
    build = f"{p.package or 'paddle'} {p.version}" + (f" (CUDA {p.cuda})" if p.cuda else "")
    return warn(
        id_,
        f"{message}; advice only: the installed {build} is what trains here, and it decides "
        "the verdict",
        fix=None if _installed_is_the_advice(ctx) else fix,
        layer="image",
        **observed,
    )


def _installed_is_the_advice(ctx: Context) -> bool:
    """The advice would install what is installed: the CPU wheel on a host without a usable
    GPU (an aarch64 or ppc64le box training on its CPU)."""
    return not ctx.host.paddle.cuda and not ctx.gpus
