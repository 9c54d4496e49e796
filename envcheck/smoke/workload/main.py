"""envcheck's smoke training: the Paddle tutorial text classifier, trained for a few seconds.

Standalone on purpose: it runs as a script file inside the selected container (mounted read-only)
or in a subprocess of the target Python, so it imports only the standard library, `paddle` and its
own modules, and keeps to Python 3.8 syntax (older Paddle images). Its modules travel with it
(`envcheck/smoke/runner/payload.py` lists them), each placed beside it under a name no module Paddle
imports could have: the protocol it shares with the host (`envcheck_smoke_protocol.py`), the
classifier and its known answers, the training loop and its figures, the export to inference, the
libraries the process mapped, its two output streams. This file is the entry: the arguments, what
Paddle is and sees, each device's run and the one JSON line. Run in
place, its folder is first on sys.path: no module beside it may share a standard library name (a
`numbers.py` there broke numpy). envcheck itself never imports this file (`paddle` is imported
inside `main` anyway).

    python workload.py --device gpu:0 --device gpu:1 [--amp] [--compare-cpu] [--export]

Contract: exactly one JSON line on stdout (schema `envcheck-smoke/1`), everything else on stderr.
Paddle itself prints to stdout now and then (e.g. `ReduceMeanCheckIfOneDNNSupport` from
`paddle.jit.save` in 3.3.1), so fd 1 is pointed at stderr for the whole run and the JSON goes to a
private copy of the original stdout.
"""

# Python 3.8 syntax on purpose (typing.Dict, %-formatting): old Paddle images run this file.
# ruff: noqa: UP006, UP031, UP035, UP045

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from envcheck.smoke.workload import classifier, export, libraries, output, protocol, training
else:
    try:  # beside the workload wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_classifier as classifier
        import envcheck_smoke_export as export
        import envcheck_smoke_libraries as libraries
        import envcheck_smoke_output as output
        import envcheck_smoke_protocol as protocol
        import envcheck_smoke_training as training
    except ImportError:  # imported from the envcheck package (the host's tests)
        from envcheck.smoke.workload import (
            classifier,
            export,
            libraries,
            output,
            protocol,
            training,
        )


SHM_PATH = "/dev/shm"


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", action="append", default=None, help="cpu, gpu:N or gpu:all (repeatable)"
    )
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=classifier.BATCH)
    parser.add_argument("--amp", action="store_true", help="auto_cast + GradScaler")
    parser.add_argument("--compare-cpu", action="store_true", help="the same steps on CPU")
    parser.add_argument("--export", action="store_true", help="to_static + paddle.inference")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    args.device = args.device or ["cpu"]
    if args.steps < 2 or args.batch_size <= classifier.CONV_ROWS:
        parser.error("--steps must be >= 2 and --batch-size > %d" % classifier.CONV_ROWS)
    return args


def main(argv: Optional[List[str]] = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    tee = output.StderrTee(stdout_too=True)  # Paddle's stray prints: to the log, not our JSON line
    threading.excepthook = _record_thread_error
    result: Dict[str, Any] = {"schema": protocol.SCHEMA, "error": None, "runs": []}
    try:
        result.update(_smoke(args))
    except BaseException as e:  # noqa: BLE001 - report it in the JSON line, then exit non-zero
        result["error"] = _error_of(e, phase="setup")
    finally:
        result["warnings"] = tee.stop()
        result["total_s"] = round(time.perf_counter() - started, 4)
        output.write_all(1, (json.dumps(result, separators=(",", ":")) + "\n").encode())
    failed = result["error"] is not None or any(run.get("error") for run in result["runs"])
    return 1 if failed else 0


def _smoke(args: argparse.Namespace) -> Dict[str, Any]:
    t0 = time.perf_counter()
    try:
        import paddle
    except ImportError as e:
        return {"error": _error_of(e, phase="import")}
    out: Dict[str, Any] = {"import_s": round(time.perf_counter() - t0, 4)}
    out.update(build_info(paddle))
    output.log(
        protocol.SAY_BUILD
        + "%s, compiled with CUDA: %s, GPUs seen: %s, default device %s"
        % (
            out["paddle_version"],
            out["compiled_with_cuda"],
            out["cuda_device_count"],
            out["default_device"],
        )
    )
    out["shm"] = shm_space()
    devices = expand_devices(args.device, out["cuda_device_count"])
    out["runs"] = [run_on(paddle, device, args) for device in devices]
    if not _LOADED:  # no training step ran (a crash before it): what was mapped by then
        _snapshot_loaded("end")
    out.update(_LOADED)
    out["driver_check"] = libraries.driver_check(_LOADED["loaded_libraries"])
    return out


# Filled once per process, after the first training step of the first run.
_LOADED: Dict[str, Any] = {}
# Exceptions that ended a thread: the DataLoader's reader thread re-raises its worker's exception
# there ("DataLoader worker(0) caught ValueError ..."), while the training loop only sees the
# queue closing. Printed as before, and kept for the run's error.
_THREAD_ERRORS: List[Dict[str, str]] = []
_PRINT_THREAD_ERROR = threading.excepthook


def _record_thread_error(args: Any) -> None:
    _THREAD_ERRORS.append(
        {
            "thread": getattr(args.thread, "name", "?"),
            "type": args.exc_type.__name__,
            "message": str(args.exc_value)[-2000:],
        }
    )
    _PRINT_THREAD_ERROR(args)


def shm_space() -> Optional[Dict[str, int]]:
    """/dev/shm as this process sees it (in a container: the engine's --shm-size tmpfs)."""
    try:
        st = os.statvfs(SHM_PATH)
    except OSError:
        return None
    return {"size_bytes": st.f_frsize * st.f_blocks, "free_bytes": st.f_frsize * st.f_bavail}


def _snapshot_loaded(when: str) -> None:
    _LOADED.update(loaded_libraries=libraries.loaded_libraries(), loaded_when=when)
    output.log(
        "loaded (%s): %s"
        % (
            when,
            ", ".join(lib["path"] for lib in _LOADED["loaded_libraries"]) or "no NVIDIA library",
        )
    )


def _first_step_loaded() -> None:
    if not _LOADED:  # the first run's first step: what Paddle has mapped by then
        _snapshot_loaded("first-step")


def expand_devices(asked: List[str], count: Optional[int]) -> List[str]:
    """`gpu:all` is every GPU Paddle sees, or `gpu:0` when it sees none (so the refusal is
    recorded instead of silently training nowhere)."""
    devices: List[str] = []
    for device in asked:
        if device == "gpu:all":
            devices += ["gpu:%d" % i for i in range(max(count or 0, 1))]
        else:
            devices.append(device)
    return devices


def build_info(paddle: Any) -> Dict[str, Any]:
    """What this Paddle is and sees: `paddle.version.show()` plus the devices (compat_facts 6a)."""
    count, count_error = _attempt(lambda: int(paddle.device.cuda.device_count()))
    capabilities = []
    names = []
    for index in range(count or 0):
        cc, _ = _attempt(partial(paddle.device.cuda.get_device_capability, index))
        capabilities.append("%d.%d" % tuple(cc) if cc else None)
        names.append(_attempt(partial(paddle.device.cuda.get_device_name, index))[0])
    return {
        "python": sys.version.split()[0],
        "paddle_version": str(paddle.__version__),
        "compiled_with_cuda": bool(paddle.is_compiled_with_cuda()),
        "cuda_version": str(_attempt(paddle.version.cuda)[0]),
        "cudnn_version": str(_attempt(paddle.version.cudnn)[0]),
        "cuda_device_count": count,
        "cuda_device_count_error": count_error,
        "device_capabilities": capabilities,
        "device_names": names,
        "default_device": str(paddle.get_device()),
        "env": {
            k: os.environ.get(k)
            for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
        },
        "uid": os.getuid() if hasattr(os, "getuid") else None,
        "pid": os.getpid(),
    }


def run_on(paddle: Any, asked: str, args: argparse.Namespace) -> Dict[str, Any]:
    """Train on `asked`; if Paddle refuses the device, train where Paddle falls back (and say so)."""
    run: Dict[str, Any] = {"device_requested": asked, "device_error": None, "error": None}
    _, run["device_error"] = _attempt(lambda: paddle.set_device(asked))
    run["device_used"] = str(paddle.get_device())
    output.log(protocol.SAY_DEVICE + "%s (asked for %s)" % (run["device_used"], asked))
    run["checks"] = []
    dtype = training.amp_dtype(paddle, run["device_used"]) if args.amp else None
    phase, spent = "check", time.perf_counter()
    try:  # known answers before and after: a GPU that computes zeros must not pass
        run["checks"] += classifier.known_answer_checks(paddle, run["device_used"], "before", dtype)
        spent -= time.perf_counter()
        phase = "train"
        model, trained = training.train(
            paddle, args, amp=args.amp, after_first_step=_first_step_loaded
        )
        phase, spent = "check", spent + time.perf_counter()
        run["checks"] += classifier.known_answer_checks(paddle, run["device_used"], "after", dtype)
        run["checks_s"] = round(time.perf_counter() - spent, 4)
    except training.DataFailed as e:
        run["error"] = dict(_error_of(e.cause, phase="data"), thread_errors=list(_THREAD_ERRORS))
        return run
    except Exception as e:  # noqa: BLE001 - a CUDA error is an OSError, a bad arch a RuntimeError
        run["error"] = _error_of(e, phase=phase)
        return run
    output.log(
        "known answers: %d/%d right"
        % (sum(1 for c in run["checks"] if c["ok"]), len(run["checks"]))
    )
    run.update(trained)
    if args.compare_cpu:
        run["compare_cpu"] = _extra(lambda: training.compare_cpu(paddle, args, run), "compare-cpu")
    if args.export:
        run["export"] = _extra(lambda: export.export(paddle, model, run["device_used"]), "export")
    return run


def _extra(fn: Callable[[], Dict[str, Any]], phase: str) -> Dict[str, Any]:
    """--compare-cpu and --export fail on their own, keeping the training figures."""
    try:
        return dict(fn(), error=None)
    except Exception as e:  # noqa: BLE001 - Paddle's error, kept in the JSON line as the extra's
        return {"error": _error_of(e, phase=phase)}


def _attempt(fn: Callable[[], Any]) -> Tuple[Any, Optional[str]]:
    """(value, None) or (None, "Type: first line of the message")."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - Paddle raises ValueError, OSError, RuntimeError...
        return None, protocol.one_line(e)


def _error_of(e: BaseException, phase: str) -> Dict[str, Any]:
    tail = traceback.format_exception(type(e), e, e.__traceback__)
    return {
        "phase": phase,
        "type": type(e).__name__,
        "message": str(e)[:2000],
        "traceback": "".join(tail)[-4000:],
    }


def _end(code: int) -> None:
    """End the process as soon as the result line is written (`output.write_all` to fd 1, not
    buffered): Paddle's interpreter shutdown (atexit hooks, the allocator, the CUDA context)
    takes ~0.3 s and tells nothing the result needs. The loader's worker has stopped with the
    loader; the container's end, or the in-process runner's group kill, reaps anything else."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _end(main())
