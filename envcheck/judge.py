"""Pure rules: (facts, matrix, image choice) -> findings. Nothing here probes or prints.

Each check is a small function with a stable id family. A check whose prerequisite is unknown
(e.g. no driver answered) returns nothing rather than guessing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from envcheck.compat import arch_supported, cc_below, driver_support
from envcheck.facts import GpuFacts, HostFacts, usable_gpus
from envcheck.findings import Finding, fail, passed, warn
from envcheck.fixes import NVIDIA_RUNTIME_FIX, engine_fix, gpu_pip_command, replace_cpu_build
from envcheck.matrix.model import Matrix, PaddleBuild
from envcheck.matrix.provenance import plain_source
from envcheck.report import ImageChoice
from envcheck.versions import VersionParseError, parse_dotted, release_of, sm_of
from envcheck.visible_devices import read_visible_devices

REBOOT_FIX = (
    "reboot, or reload the kernel module without rebooting: "
    "`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia` "
    "(the driver package was upgraded but the old module is still loaded)"
)


@dataclass(frozen=True)
class Context:
    host: HostFacts
    matrix: Matrix
    image: ImageChoice | None
    expect_gpu: bool = False
    needs_engine: bool = False  # the smoke will run in a container

    @property
    def gpus(self) -> tuple[GpuFacts, ...]:
        return usable_gpus(self.host)

    @property
    def pip_fix(self) -> str:
        return gpu_pip_command(self.image) or (
            "python -m pip install paddlepaddle-gpu  (pick the CUDA build for your driver: `envcheck doctor --explain`)"
        )


Check = Callable[[Context], Iterable[Finding]]


# -- driver --------------------------------------------------------------------------------
_NVML_ERRORS: dict[str, tuple[str, str, str]] = {
    "NVML_ERROR_DRIVER_NOT_LOADED": (
        "driver.not-loaded",
        "the NVIDIA kernel module is not loaded (NVML: Driver Not Loaded)",
        (
            "load it: `sudo modprobe nvidia`; if that fails, see `sudo dmesg | grep -i nvrm` "
            "(Secure Boot blocking an unsigned module, or the module missing for this kernel: "
            "reinstall the driver for `uname -r`)"
        ),
    ),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": (
        "driver.version-mismatch",
        (
            "driver/library version mismatch: the loaded kernel module is older than the user-space "
            "driver (a driver upgrade is waiting for a reboot)"
        ),
        REBOOT_FIX,
    ),
    "NVML_ERROR_NO_PERMISSION": (
        "driver.no-permission",
        "no permission to talk to the GPU driver (NVML: Insufficient Permissions)",
        (
            "check `ls -l /dev/nvidia*`: the device files must be readable and writable by your "
            "user (add it to the `video` group, or fix NVreg_DeviceFileMode); in a container, pass "
            "the GPU with `--gpus all`"
        ),
    ),
}


def check_driver(ctx: Context) -> Iterable[Finding]:
    d = ctx.host.driver
    if d.status == "ok":
        yield passed(
            "driver.present",
            f"NVIDIA driver {d.version} (supports CUDA up to {d.cuda or '?'})",
            layer="driver",
            version=d.version,
            cuda=d.cuda,
        )
        if d.kernel_module and d.version and d.kernel_module != d.version:
            yield fail(
                "driver.version-mismatch",
                f"kernel module {d.kernel_module} differs from the user-space driver {d.version}",
                fix=REBOOT_FIX,
                layer="driver",
                kernel_module=d.kernel_module,
                version=d.version,
            )
        return
    if d.status == "absent":
        message = "no NVIDIA driver (libnvidia-ml.so.1 not found)"
        if ctx.expect_gpu:
            yield fail("driver.missing", message, fix=_install_driver_fix(ctx), layer="driver")
        else:
            yield passed(
                "driver.missing", f"{message}: this host can only run the CPU build", layer="driver"
            )
        return
    if d.status == "error":
        id_, message, fix = _NVML_ERRORS.get(
            d.error or "",
            (
                "driver.error",
                f"NVML failed: {d.error or d.reason}",
                "run `nvidia-smi` to see the driver's own message; reinstall the driver if it fails too",
            ),
        )
        if d.kernel_module and d.version:
            message += f" (kernel module {d.kernel_module}, user space {d.version})"
        yield fail(
            id_,
            message,
            fix=fix,
            layer="driver",
            error=d.error,
            reason=d.reason,
            kernel_module=d.kernel_module,
        )


def _install_driver_fix(ctx: Context) -> str:
    floor = ctx.matrix.minor_compat_for("12.0")
    at_least = f" {floor.min_driver} or newer" if floor else ""
    return f"install the NVIDIA driver{at_least} (https://www.nvidia.com/Download/index.aspx), then reboot"


# -- GPUs ----------------------------------------------------------------------------------
def check_gpus(ctx: Context) -> Iterable[Finding]:
    if ctx.host.driver.status != "ok":
        return
    if not ctx.host.gpus:
        sev = fail if ctx.expect_gpu else warn
        yield sev(
            "gpu.none",
            "the driver answered but reports no GPU",
            fix="check `nvidia-smi -L` and `lspci | grep -i nvidia`; a GPU may have fallen off the bus "
            "(`sudo dmesg | grep -i xid`)",
            layer="gpu",
        )
        return
    for g in ctx.host.gpus:
        yield from _check_one_gpu(ctx, g)


def _check_one_gpu(ctx: Context, g: GpuFacts) -> Iterable[Finding]:
    label = f"GPU {g.index} {g.name or '?'}"
    release = ctx.matrix.release(_target_paddle(ctx))
    if (
        g.compute_capability
        and release
        and cc_below(g.compute_capability, release.min_compute_capability)
    ):
        yield fail(
            "gpu.cc-too-low",
            f"{label} has compute capability {g.compute_capability}; Paddle {release.version} "
            f"needs more than {release.min_compute_capability}",
            fix="use a newer GPU, or Paddle 2.5 (the last release documented for compute capability > 3.5)",
            layer="gpu",
            index=g.index,
            compute_capability=g.compute_capability,
        )
    elif g.mig_mode and g.mig_instances == 0:
        yield fail(
            "gpu.mig-no-instances",
            f"{label} is in MIG mode with no GPU instance: nothing can run on it",
            fix=f"create instances (`sudo nvidia-smi mig -i {g.index} -cgi <profile> -C`) or disable MIG "
            f"(`sudo nvidia-smi -i {g.index} -mig 0`, then reset the GPU)",
            layer="gpu",
            index=g.index,
        )
    else:
        yield passed(
            f"gpu.{g.index}",
            f"{label}, compute capability {g.compute_capability or '?'}, "
            f"{g.memory_total_mib or '?'} MiB",
            layer="gpu",
            index=g.index,
            compute_capability=g.compute_capability,
        )


def _target_paddle(ctx: Context) -> str:
    if ctx.image and ctx.image.paddle:
        return ctx.image.paddle
    return ctx.matrix.newest_release().version


# -- CUDA driver API and libraries ---------------------------------------------------------
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
    elif c.status == "error" and ctx.host.driver.status == "ok" and not _no_device(ctx):
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
            fix=_cudnn_fix(p.cudnn, p.cuda, p.with_pip_cuda_libraries),
            layer="cuda",
            compiled=p.cudnn,
        )
        return
    have, want = _release(dnn.version), _release(p.cudnn)
    if have[0] != want[0]:
        yield fail(
            "cudnn.major-mismatch",
            f"cuDNN {dnn.version} ({dnn.path}) but Paddle {p.version} is built with cuDNN {p.cudnn}",
            fix=_cudnn_fix(p.cudnn, p.cuda, p.with_pip_cuda_libraries),
            layer="cuda",
            found=dnn.version,
            compiled=p.cudnn,
        )
    elif have[:2] < want[:2]:
        yield warn(
            "cudnn.too-old",
            f"cuDNN {dnn.version} is older than the {p.cudnn} Paddle was built with "
            '(Paddle warns: "may cause serious incompatible bug")',
            fix=_cudnn_fix(p.cudnn, p.cuda, p.with_pip_cuda_libraries),
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


def _cudnn_fix(cudnn: str, cuda: str, pip_libs: bool | None) -> str:
    major = _release(cudnn)[0]
    cu = _release(cuda)[0]
    if pip_libs:
        return (
            "reinstall Paddle so pip brings its pinned cuDNN: `python -m pip install --force-reinstall "
            "paddlepaddle-gpu` with the index of your CUDA build"
        )
    return (
        f"install cuDNN {cudnn} for CUDA {cu}: `python -m pip install nvidia-cudnn-cu{cu}=={major}.*` and put "
        f"its lib folder on LD_LIBRARY_PATH, or use the official image (`envcheck pull-image`)"
    )


# -- Paddle build --------------------------------------------------------------------------
_BOTH_DISTRIBUTIONS = frozenset({"paddlepaddle", "paddlepaddle-gpu"})


def check_paddle(ctx: Context) -> Iterable[Finding]:
    yield from _check_image_archs(ctx)
    p = ctx.host.paddle
    if p.status == "absent":
        yield warn(
            "paddle.missing",
            f"Paddle is not installed for {p.python or 'this Python'}",
            fix=ctx.pip_fix,
            layer="paddle",
            python=p.python,
        )
        return
    if p.status != "ok":
        if p.status == "error":
            yield warn(
                "paddle.unreadable",
                f"could not read the Paddle build: {p.reason}",
                fix=ctx.pip_fix,
                layer="paddle",
            )
        return
    if _BOTH_DISTRIBUTIONS.issubset(p.distributions):
        yield fail(
            "paddle.both-installed",
            "both paddlepaddle and paddlepaddle-gpu are installed: they overwrite each other's files",
            fix=f"`python -m pip uninstall -y paddlepaddle paddlepaddle-gpu`, then `{ctx.pip_fix}`",
            layer="paddle",
        )
    if not p.cuda:
        yield from _check_cpu_build(ctx)
        return
    yield passed(
        "paddle.build",
        f"{p.package or 'paddle'} {p.version}, CUDA {p.cuda}, cuDNN {p.cudnn}",
        layer="paddle",
        version=p.version,
        cuda=p.cuda,
        cudnn=p.cudnn,
    )
    yield from _check_driver_for_build(ctx, p.cuda, f"Paddle {p.version} (CUDA {p.cuda})")
    yield from _check_archs(ctx)


def _check_cpu_build(ctx: Context) -> Iterable[Finding]:
    p = ctx.host.paddle
    if ctx.gpus or ctx.expect_gpu:
        yield fail(
            "paddle.cpu-build",
            f"{p.package or 'paddlepaddle'} {p.version} is the CPU-only build on a host with "
            f"{len(ctx.gpus)} GPU(s): training will silently run on the CPU",
            fix=replace_cpu_build(ctx.image),
            layer="paddle",
            package=p.package,
            version=p.version,
        )
    else:
        yield passed(
            "paddle.build",
            f"{p.package or 'paddlepaddle'} {p.version} (CPU build) on a host without GPU",
            layer="paddle",
            package=p.package,
            version=p.version,
        )


def _check_driver_for_build(ctx: Context, cuda: str, what: str) -> Iterable[Finding]:
    d = ctx.host.driver
    if d.status != "ok" or not d.version:
        return
    support = driver_support(d.version, d.cuda, cuda, ctx.matrix)
    if support.level == "full":
        yield passed(
            "driver.cuda",
            f"driver {d.version} runs {what}",
            layer="driver",
            driver=d.version,
            cuda=cuda,
        )
    elif support.level == "minor-compat":
        yield warn(
            "driver.minor-compat",
            f"driver {d.version} supports CUDA {d.cuda}, older than {what}: it runs through "
            f"minor-version compatibility ({support.reason}); PTX JIT and newer-driver APIs fail"
            f"{_paddle_driver_note(ctx, cuda, d.version)}",
            fix=f"upgrade the driver to {support.full_driver} or newer for full support",
            layer="driver",
            driver=d.version,
            driver_cuda=d.cuda,
            cuda=cuda,
        )
    else:
        yield fail(
            "driver.too-old",
            f"driver {d.version} (CUDA {d.cuda or '?'}) is too old for {what}: {support.reason} "
            '(Paddle: "CUDA driver version is insufficient for CUDA runtime version")',
            fix=f"upgrade the driver to {support.minimum_driver} or newer, or install a build for an "
            f"older CUDA: `{ctx.pip_fix}`",
            layer="driver",
            driver=d.version,
            cuda=cuda,
            minimum_driver=support.minimum_driver,
        )


def _paddle_driver_note(ctx: Context, cuda: str, driver: str) -> str:
    """Paddle's own documented floor, where stricter than NVIDIA's (3.x cu126: 550.54.14), as a
    note: NVIDIA's minor-version compatibility decides (issue 10.4)."""
    build = _matrix_build(ctx, cuda)
    floor = build.paddle_min_driver if build else None
    try:
        if not floor or parse_dotted(driver).version >= parse_dotted(floor).version:
            return ""
    except VersionParseError:
        return ""
    return (
        f"; note: Paddle's install docs ask for >= {floor} for this build, stricter than "
        "NVIDIA's rule"
    )


def _check_archs(ctx: Context) -> Iterable[Finding]:
    """The installed build against every GPU: its own list (3.x `compiled_cuda_archs`), else the
    matrix's list for that wheel, else (2.x) at least what its CUDA toolkit can target: a cu117
    wheel cannot hold sm_90 (Paddle#58971). Unknown coverage is said, never passed silently."""
    p = ctx.host.paddle
    gpus = [g for g in ctx.gpus if g.compute_capability]
    if not gpus or not p.cuda:
        return
    archs, origin, verified = _installed_archs(ctx)
    build = _matrix_build(ctx, p.cuda)
    absent = build.archs_absent if build and not p.compiled_cuda_archs else ()
    for g in gpus:
        cc = g.compute_capability or ""
        try:
            sm = sm_of(cc)
        except VersionParseError:  # saved facts may hold anything; the GPU check reports it
            continue
        missing = sm in absent or (archs is not None and not arch_supported(cc, archs))
        if missing:
            listed = " ".join(map(str, archs or ()))
            because = (
                f"a public report shows sm_{sm} missing from this build ({origin})"
                if sm in absent
                else f"Paddle {p.version} (CUDA {p.cuda}) {origin}: {listed}"
            )
            yield fail(
                "paddle.arch-missing",
                f'GPU {g.index} {g.name} is sm_{sm} but {because}: "no kernel image is available '
                'for execution on the device"',
                fix=f"install a build compiled for sm_{sm}: `{ctx.pip_fix}`",
                layer="paddle",
                index=g.index,
                compute_capability=cc,
                compiled=list(archs or ()),
                archs_verified=verified,
            )
        elif not verified:
            yield warn(
                "paddle.arch-unverified",
                f"GPU {g.index} {g.name} (sm_{sm}): arch coverage unverified: Paddle {p.version} "
                f"(CUDA {p.cuda}) does not record its compiled archs and the matrix has no list "
                f"for it; {origin} includes sm_{sm}, the build itself may not",
                fix=f"prove it with the smoke training (`envcheck doctor`), or install a build with a "
                f"known list: `{ctx.pip_fix}`",
                layer="paddle",
                index=g.index,
                compute_capability=cc,
            )


def _installed_archs(ctx: Context) -> tuple[tuple[int, ...] | None, str, bool]:
    """(archs, where they come from, whether they are the build's own list)."""
    from envcheck.matrix.builds import plain_archs_source

    p = ctx.host.paddle
    if p.compiled_cuda_archs:
        return (
            tuple(p.compiled_cuda_archs),
            "was compiled for (its own paddle/version record)",
            True,
        )
    build = _matrix_build(ctx, p.cuda or "")
    if build is not None and build.archs:
        how = plain_archs_source(build.archs_source or build.source)
        return build.archs, f"was compiled for ({how})", True
    toolkit = _toolkit_archs(ctx, p.cuda or "")
    if toolkit is None:
        return None, "records no archs, and its CUDA is unknown to the matrix", False
    return toolkit, f"can at most contain what CUDA {p.cuda} can target", False


def _toolkit_archs(ctx: Context, cuda: str) -> tuple[int, ...] | None:
    try:
        row = ctx.matrix.archs_for_cuda(cuda)
    except ValueError:  # packaging's InvalidVersion: a saved facts file may hold anything
        return None
    return row.archs if row else None


def _matrix_build(ctx: Context, cuda: str) -> PaddleBuild | None:
    """The matrix's row for the installed wheel (same release, CUDA major.minor), if any."""
    from envcheck.matrix.builds import build_for

    p = ctx.host.paddle
    if not p.version or not cuda:
        return None
    try:
        return build_for(ctx.matrix, p.version, cuda)
    except (ValueError, VersionParseError):
        return None


def _check_image_archs(ctx: Context) -> Iterable[Finding]:
    """The chosen GPU image's build: with no known arch list, the verdict says "arch coverage
    unverified" (issue 10.1) instead of passing on the toolkit's reach alone."""
    from envcheck.matrix.builds import runnable_archs

    img = ctx.image
    if img is None or img.ref is None or img.kind != "gpu" or not img.paddle or not img.cuda:
        return
    try:
        archs = runnable_archs(ctx.matrix, img.paddle, img.cuda)
    except (ValueError, VersionParseError):
        return
    if archs is None or not archs.verified:
        origin = archs.origin if archs else f"CUDA {img.cuda} is unknown to the matrix"
        yield warn(
            "image.arch-unverified",
            f"{img.tag}: arch coverage unverified: {origin}",
            fix="the smoke training in this image proves it (`envcheck doctor` without --no-smoke)",
            layer="image",
            tag=img.tag,
            archs_source=archs.source if archs else None,
        )


# -- environment ---------------------------------------------------------------------------
def check_visible_devices(ctx: Context) -> Iterable[Finding]:
    value = ctx.host.env.get("CUDA_VISIBLE_DEVICES")
    if value is None or not ctx.gpus:
        return
    seen = read_visible_devices(value, ctx.gpus)
    c = ctx.host.cuda_driver
    driver_sees = c.device_count if c.status == "ok" else 0 if _no_device(ctx) else None
    if driver_sees == 0 or (driver_sees is None and seen.visible == 0):
        why = (
            seen.stopped
            if seen.visible == 0 and seen.stopped
            else (f"cuInit found no device, although NVML sees {len(ctx.gpus)} GPU(s)")
        )
        uuids = ", ".join(g.uuid for g in ctx.gpus if g.uuid)
        yield fail(
            "env.cuda-visible-devices",
            f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU ({why}): Paddle will say "
            '"CUDA_VISIBLE_DEVICES is set to be empty. No GPU detected."',
            fix=f"`unset CUDA_VISIBLE_DEVICES`, or list devices: `export CUDA_VISIBLE_DEVICES="
            f"{','.join(str(i) for i in range(len(ctx.gpus)))}`"
            + (f" (or full UUIDs as NVML reports them: {uuids})" if uuids else ""),
            layer="env",
            value=value,
            driver_device_count=driver_sees,
        )
    else:
        yield passed(
            "env.cuda-visible-devices",
            f"CUDA_VISIBLE_DEVICES={value}",
            layer="env",
            value=value,
            driver_device_count=driver_sees,
        )


def _no_device(ctx: Context) -> bool:
    """cuInit's CUDA_ERROR_NO_DEVICE where NVML sees GPUs: the variable hid them (one cause, one
    finding: env.cuda-visible-devices, not also cuda.init-failed with driver advice)."""
    c = ctx.host.cuda_driver
    return (
        c.error == "CUDA_ERROR_NO_DEVICE"
        and "CUDA_VISIBLE_DEVICES" in ctx.host.env
        and bool(ctx.gpus)
    )


def check_nvidia_visible_devices(ctx: Context) -> Iterable[Finding]:
    value = ctx.host.env.get("NVIDIA_VISIBLE_DEVICES")
    if (
        value is not None
        and value.strip() in ("", "void", "none")
        and ctx.host.driver.status != "ok"
    ):
        yield warn(
            "env.nvidia-visible-devices",
            f"NVIDIA_VISIBLE_DEVICES={value!r}: this container was started without GPUs",
            fix="start the container with `--gpus all` (or NVIDIA_VISIBLE_DEVICES=all with the NVIDIA runtime)",
            layer="env",
            value=value,
        )


# -- container engine ----------------------------------------------------------------------
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
            fix=f"{engine_fix(e)}; or run the smoke with --in-process",
            layer="engine",
            reason=e.reason,
        )


# -- image ---------------------------------------------------------------------------------
def check_image(ctx: Context) -> Iterable[Finding]:
    img = ctx.image
    if img is None:
        return
    if img.ref is None:
        reasons = "; ".join(f"{r.ref}: {r.reason}" for r in img.rejected[:4])
        yield fail(
            "image.none",
            f"no image of Paddle {img.paddle} can run on this host: {reasons}",
            fix=img.reason or "upgrade the driver, or choose another release with --paddle",
            layer="image",
            rejected=[r.ref for r in img.rejected],
        )
        return
    note = "" if img.confirmed else f" (tag {plain_source(img.source or '', False)})"
    yield passed(
        "image.selected",
        f"{img.ref}{note}",
        layer="image",
        ref=img.ref,
        kind=img.kind,
        confirmed=img.confirmed,
    )


def check_expected_gpu(ctx: Context) -> Iterable[Finding]:
    """--expect-gpu on facts that say nothing of the driver (a partial saved host): the other
    driver and GPU checks already fail every state they know."""
    if ctx.expect_gpu and ctx.host.driver.status == "unknown":
        yield fail(
            "gpu.expected",
            "a GPU was expected (--expect-gpu) but nothing shows a usable one",
            fix=_install_driver_fix(ctx),
            layer="gpu",
        )


CHECKS: tuple[Check, ...] = (
    check_driver,
    check_gpus,
    check_cuda_driver_api,
    check_cuda_libraries,
    check_paddle,
    check_visible_devices,
    check_nvidia_visible_devices,
    check_engine,
    check_image,
    check_expected_gpu,
)


def judge(ctx: Context) -> list[Finding]:
    return [finding for check in CHECKS for finding in check(ctx)]
