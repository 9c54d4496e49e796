"""The CUDA driver API (cuInit) and the user-space libraries a Paddle process loads (cudart, cuDNN)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.findings import Finding, fail, passed, warn
from envcheck.fixes import command, cudnn_install, matrix_install, target_python
from envcheck.rules.environment import devices_hidden
from envcheck.rules.paddle import installed_build
from envcheck.versions import VersionParseError, release_of

if TYPE_CHECKING:
    from envcheck.judge import Context


def check_cuda_driver_api(ctx: Context) -> Iterable[Finding]:
    c = ctx.host.cuda_driver
    if c.status == "ok":
        yield passed(
            "cuda.driver-api",
            f"cuInit OK: driver API {c.version}, {c.device_count} device(s)",
            layer="cuda",
            version=c.version,
            device_count=c.device_count,
        )
    elif c.status == "error" and ctx.host.driver.status == "ok" and not devices_hidden(ctx):
        yield fail(
            "cuda.init-failed",
            f"the CUDA driver API failed: {c.error} ({c.reason})",
            fix="run `nvidia-smi`; if it works but CUDA does not, check that /dev/nvidia-uvm exists "
            "(`sudo modprobe nvidia-uvm`) and that no stub libcuda.so shadows the driver's",
            layer="cuda",
            error=c.error,
        )


def check_cuda_libraries(ctx: Context) -> Iterable[Finding]:
    rt = ctx.host.cuda_runtime
    if rt.status == "ok":
        note = f" ({rt.reason})" if rt.reason else ""
        yield passed(
            "cuda.runtime",
            f"CUDA runtime {rt.version} at {rt.path}{note}",
            layer="cuda",
            version=rt.version,
            path=rt.path,
        )
    p = ctx.host.paddle
    if p.status != "ok" or not p.cuda or not p.cudnn:
        return
    dnn = ctx.host.cudnn
    if dnn.status != "ok" or not dnn.version:
        yield fail(
            "cudnn.missing",
            f"Paddle {p.version} is built with cuDNN {p.cudnn} but no libcudnn can be loaded",
            fix=_cudnn_fix(ctx),
            layer="cuda",
            compiled=p.cudnn,
        )
        return
    have, want = _release(dnn.version), _release(p.cudnn)
    if have[0] != want[0]:
        yield fail(
            "cudnn.major-mismatch",
            f"cuDNN {dnn.version} ({dnn.path}) but Paddle {p.version} is built with cuDNN {p.cudnn}",
            fix=_cudnn_fix(ctx),
            layer="cuda",
            found=dnn.version,
            compiled=p.cudnn,
        )
    elif have[:2] < want[:2]:
        yield warn(
            "cudnn.too-old",
            f"cuDNN {dnn.version} is older than the {p.cudnn} Paddle was built with "
            '(Paddle warns: "may cause serious incompatible bug")',
            fix=_cudnn_fix(ctx),
            layer="cuda",
            found=dnn.version,
            compiled=p.cudnn,
        )
    else:
        yield passed(
            "cudnn.ok", f"cuDNN {dnn.version} at {dnn.path}", layer="cuda", version=dnn.version
        )


def _release(text: str) -> tuple[int, ...]:
    """Saved facts may hold anything: an unreadable version compares as 0.0.0."""
    try:
        return release_of(text)
    except VersionParseError:
        return (0, 0, 0)


def _cudnn_fix(ctx: Context) -> str:
    p = ctx.host.paddle
    cudnn, cuda, python = p.cudnn or "", p.cuda or "", target_python(ctx.host)
    if p.with_pip_cuda_libraries:
        build = installed_build(ctx, cuda)
        again = matrix_install(build.pip, python, extra=("--force-reinstall",)) if build else None
        return "reinstall Paddle so pip brings its pinned cuDNN: " + command(
            again,
            f"reinstall {p.package or 'paddlepaddle-gpu'} {p.version} from its CUDA {cuda} index",
        )
    get = cudnn_install(python, cudnn, cuda)
    how = f": `{get.shell()}` and put its lib folder on LD_LIBRARY_PATH" if get else ""
    return (
        f"install cuDNN {cudnn} for CUDA {cuda.split('.')[0]}{how}, "
        "or use the official image (`envcheck pull-image`)"
    )
