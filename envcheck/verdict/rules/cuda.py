"""The CUDA driver API (cuInit) and the user-space libraries a Paddle process loads (cudart, cuDNN)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.record import replace
from envcheck.contracts.remedy import Instruction, Remedy, say, steps
from envcheck.contracts.versions import VersionParseError, release_of
from envcheck.verdict.fixes import (
    CUDA_INIT_FIX,
    RECORD_ON_THAT_HOST_FIX,
    command,
    cudart_install,
    cudnn_install,
    matrix_install,
    runtime_or_image_fix,
    target_python,
)
from envcheck.verdict.rules.env_vars import devices_hidden
from envcheck.verdict.rules.paddle import installed_build

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


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
            fix=CUDA_INIT_FIX,
            layer="cuda",
            error=c.error,
        )


def check_cuda_libraries(ctx: Context) -> Iterable[Finding]:
    rt = ctx.host.cuda_runtime
    if rt.status == "ok":
        note = f" ({rt.reason})" if rt.reason else ""
        yield passed(
            "cuda.runtime",
            f"CUDA runtime {rt.version}{_at(rt.path)}{note}",
            layer="cuda",
            version=rt.version,
            path=rt.path,
        )
    yield from _check_runtime_for_build(ctx)
    p = ctx.host.paddle
    if p.status != "ok" or not p.cuda:
        return
    # a saved report without the build's cuDNN: the matrix's row for this build says it
    row = None if p.cudnn else installed_build(ctx, p.cuda)
    compiled = p.cudnn or (row.cudnn if row else None)
    if not compiled:
        return
    p = replace(p, cudnn=compiled)
    dnn = ctx.host.cudnn
    if dnn.status == "unknown":  # a saved document without it: unknown is not absent
        yield warn(
            "cudnn.unverified",
            f"Paddle {p.version} is built with cuDNN {p.cudnn}; the facts do not record which "
            "cuDNN a Paddle process loads here: unverified",
            fix=_record_fix(ctx),
            layer="cuda",
            compiled=p.cudnn,
        )
        return
    if dnn.status != "ok" or not dnn.version:
        yield fail(
            "cudnn.missing",
            f"Paddle {p.version} is built with cuDNN {p.cudnn} but no libcudnn can be loaded",
            fix=_cudnn_fix(ctx, compiled),
            layer="cuda",
            compiled=p.cudnn,
        )
        return
    have, want = _release(dnn.version), _release(compiled)
    if have[0] != want[0]:
        yield fail(
            "cudnn.major-mismatch",
            f"cuDNN {dnn.version}{_at(dnn.path)} but Paddle {p.version} is built with cuDNN {p.cudnn}",
            fix=_cudnn_fix(ctx, compiled),
            layer="cuda",
            found=dnn.version,
            compiled=p.cudnn,
        )
    elif have[:2] < want[:2]:
        yield warn(
            "cudnn.too-old",
            f"cuDNN {dnn.version} is older than the {p.cudnn} Paddle was built with "
            '(Paddle warns: "may cause serious incompatible bug")',
            fix=_cudnn_fix(ctx, compiled),
            layer="cuda",
            found=dnn.version,
            compiled=p.cudnn,
        )
    else:
        yield passed(
            "cudnn.ok", f"cuDNN {dnn.version}{_at(dnn.path)}", layer="cuda", version=dnn.version
        )


def _check_runtime_for_build(ctx: Context) -> Iterable[Finding]:
    """A Paddle 2.x GPU build links libcudart.so.<major> (11.0, 12, 10.2) and fails at `import
    paddle` when no path provides it ("ImportError: libcudart.so.11.0: cannot open shared object
    file", Paddle#60906 for 2.5.2/2.6.0, Paddle#49280, Paddle#53775), whatever cuDNN is there.
    3.x brings its runtime through pip; a build the matrix measured as static (the 2.6.2 PyPI
    wheel, W-262: no libcudart in its NEEDED) needs none."""
    p, rt = ctx.host.paddle, ctx.host.cuda_runtime
    if p.status != "ok" or not p.cuda or not _links_cudart(ctx):
        return
    if rt.status == "unknown":  # a saved document without it
        yield warn(
            "cuda.runtime-unverified",
            f"Paddle {p.version} (CUDA {p.cuda}) loads libcudart at `import paddle`; the facts do "
            "not record which CUDA runtime a Paddle process finds here: unverified",
            fix=_record_fix(ctx),
            layer="cuda",
            compiled=p.cuda,
        )
        return
    major = _release(p.cuda)[0]
    found = [c.version for c in rt.candidates if c.version] or ([rt.version] if rt.version else [])
    if any(_release(v)[0] == major for v in found):
        return
    soname = _CUDART_SONAME.get(major, f"libcudart.so.{major}")
    seen = f"found only CUDA {', '.join(found)}" if found else (rt.reason or "none found")
    wheel = cudart_install(target_python(ctx.host), p.cuda)
    get = (
        steps(
            *wheel.commands(f"installs NVIDIA's CUDA {major} runtime into {wheel.python}"),
            Instruction("put its lib folder (nvidia/cuda_runtime/lib) on LD_LIBRARY_PATH"),
        )
        if wheel
        else say(f"install the CUDA {p.cuda} toolkit and put its lib64 on LD_LIBRARY_PATH")
    )
    yield fail(
        "cuda.runtime-missing",
        f"Paddle {p.version} (CUDA {p.cuda}) loads {soname} at `import paddle`, but no path "
        f'provides a CUDA {major} runtime ({seen}): "ImportError: {soname}: cannot open shared '
        'object file"',
        fix=runtime_or_image_fix(get, ctx.image),
        layer="cuda",
        compiled=p.cuda,
        found=found,
    )


_CUDART_SONAME = {10: "libcudart.so.10.2", 11: "libcudart.so.11.0", 12: "libcudart.so.12"}


def _links_cudart(ctx: Context) -> bool:
    p = ctx.host.paddle
    if p.with_pip_cuda_libraries or _release(p.version or "0")[0] >= 3:
        return False
    build = installed_build(ctx, p.cuda or "")
    return not (build is not None and build.cudart_static)


def _release(text: str) -> tuple[int, ...]:
    """Saved facts may hold anything: an unreadable version compares as 0.0.0."""
    try:
        return release_of(text)
    except VersionParseError:
        return (0, 0, 0)


def _cudnn_fix(ctx: Context, cudnn: str) -> Remedy:
    """`cudnn`: the build's, as recorded or as the matrix's row for it says."""
    p = ctx.host.paddle
    cuda, python = p.cuda or "", target_python(ctx.host)
    if p.with_pip_cuda_libraries:
        build = installed_build(ctx, cuda)
        again = matrix_install(build.pip, python, extra=("--force-reinstall",)) if build else None
        return command(
            again,
            f"reinstall {p.package or 'paddlepaddle-gpu'} {p.version} from its CUDA {cuda} index, "
            "so that pip brings its pinned cuDNN",
        )
    get = cudnn_install(python, cudnn, cuda)
    major = cuda.split(".")[0]
    return runtime_or_image_fix(
        steps(
            *get.commands(f"installs NVIDIA's cuDNN {cudnn} for CUDA {major} into {python}"),
            Instruction("put its lib folder (nvidia/cudnn/lib) on LD_LIBRARY_PATH"),
        )
        if get
        else say(f"install cuDNN {cudnn} for CUDA {major}"),
        ctx.image,
    )


def _record_fix(ctx: Context) -> str:
    """What decides an unrecorded library: its record from that host (a saved document), else
    the doctor's own probe, which runs where the facts are live."""
    if ctx.saved:
        return RECORD_ON_THAT_HOST_FIX
    return "run `envcheck doctor` on the host itself: its probe reads the libraries"


def _at(path: str | None) -> str:
    """ " at /usr/lib/…/libcudnn.so.8", or nothing: a saved report may not say where (never "None")."""
    return f" at {path}" if path else ""
