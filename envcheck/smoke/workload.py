"""envcheck's smoke training: the Paddle tutorial text classifier, trained for a few seconds.

Standalone on purpose: it runs as a script file inside the selected container (mounted read-only)
or in a subprocess of the target Python, so it imports only the standard library, `paddle` and its
own modules, and keeps to Python 3.8 syntax (older Paddle images). Its modules travel with it
(`envcheck/smoke/payload.py` lists them), each placed beside it under a name no module Paddle
imports could have: the protocol it shares with the host (`envcheck_smoke_protocol.py`), the
classifier and its known answers, the libraries the process mapped, its two output streams. Run in
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
import math
import os
import sys
import tempfile
import threading
import time
import traceback
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple

if TYPE_CHECKING:
    from envcheck.smoke import protocol
    from envcheck.smoke import workload_classifier as classifier
    from envcheck.smoke import workload_libraries as libraries
    from envcheck.smoke import workload_output as output
else:
    try:  # beside the workload wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_classifier as classifier
        import envcheck_smoke_libraries as libraries
        import envcheck_smoke_output as output
        import envcheck_smoke_protocol as protocol
    except ImportError:  # imported from the envcheck package (the host's tests)
        from envcheck.smoke import protocol
        from envcheck.smoke import workload_classifier as classifier
        from envcheck.smoke import workload_libraries as libraries
        from envcheck.smoke import workload_output as output


# The batches come from host memory through a `paddle.io.DataLoader` worker process, as in a real
# run: collated in the worker, passed through /dev/shm, pinned and copied to the GPU. Python's
# default start method is kept, as a user gets it: fork (Linux, Python <= 3.13) has the first
# batch in ~0.05 s and all 60 with the worker's shutdown in ~0.3 s; spawn re-imports Paddle in
# the worker, ~2.2 s to the first batch (measured on 2 cores); forkserver, 3.14's default, likewise.
LOADER_WORKERS = 1
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
        protocol.SAY_BUILD + "%s, compiled with CUDA: %s, GPUs seen: %s, default device %s"
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


class DataFailed(Exception):
    """The DataLoader failed (its worker, shared memory): the run's error, phase "data"."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _snapshot_loaded(when: str) -> None:
    _LOADED.update(loaded_libraries=libraries.loaded_libraries(), loaded_when=when)
    output.log(
        "loaded (%s): %s"
        % (when, ", ".join(lib["path"] for lib in _LOADED["loaded_libraries"]) or "no NVIDIA library")
    )


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
    dtype = amp_dtype(paddle, run["device_used"]) if args.amp else None
    phase, spent = "check", time.perf_counter()
    try:  # known answers before and after: a GPU that computes zeros must not pass (issue 16)
        run["checks"] += classifier.known_answer_checks(paddle, run["device_used"], "before", dtype)
        spent -= time.perf_counter()
        phase = "train"
        model, trained = train(paddle, args, amp=args.amp)
        phase, spent = "check", spent + time.perf_counter()
        run["checks"] += classifier.known_answer_checks(paddle, run["device_used"], "after", dtype)
        run["checks_s"] = round(time.perf_counter() - spent, 4)
    except DataFailed as e:
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
        run["compare_cpu"] = _extra(lambda: compare_cpu(paddle, args, run), "compare-cpu")
    if args.export:
        run["export"] = _extra(lambda: export(paddle, model, run["device_used"]), "export")
    return run


def _extra(fn: Callable[[], Dict[str, Any]], phase: str) -> Dict[str, Any]:
    """--compare-cpu and --export fail on their own, keeping the training figures."""
    try:
        return dict(fn(), error=None)
    except Exception as e:  # noqa: BLE001 - Paddle's error, kept in the JSON line as the extra's
        return {"error": _error_of(e, phase=phase)}




def host_batches(paddle: Any, args: argparse.Namespace) -> Iterator[Tuple[Any, Any]]:
    """`args.steps` batches through a DataLoader worker; any failure of it is a DataFailed."""
    fault = classifier.corruptions().get("worker")
    data = classifier.HostBatches(args.steps * args.batch_size, args.seed, fault)
    loader = paddle.io.DataLoader(
        data, batch_size=args.batch_size, drop_last=True, num_workers=LOADER_WORKERS
    )
    iterator = None
    try:
        iterator = iter(loader)
        yield from iterator
    except Exception as e:  # Paddle raises SystemError, OSError, RuntimeError...: all re-raised
        reader = getattr(iterator, "_thread", None)  # re-raises the worker's error: let it finish
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=2.0)
        raise DataFailed(e) from e




def amp_dtype(paddle: Any, device: str) -> str:
    """bf16 needs compute capability >= 8.0 (compat_facts 7 row 25); fp16 otherwise."""
    if device.startswith("gpu"):
        major = paddle.device.cuda.get_device_capability(_index(device))[0]
        return "bfloat16" if major >= 8 else "float16"
    return "bfloat16"  # Paddle's CPU AMP lists are bf16 only




def train(paddle: Any, args: argparse.Namespace, amp: bool) -> Tuple[Any, Dict[str, Any]]:
    """`args.steps` steps of Adam on fresh batches; the model and the measured figures."""
    paddle.seed(args.seed)
    device = str(paddle.get_device())
    dtype = amp_dtype(paddle, device) if amp else None
    t_build = time.perf_counter()
    model = classifier.build_model(paddle)
    optimizer = classifier.make_optimizer(paddle, model.parameters())
    scaler = paddle.amp.GradScaler(enable=dtype == "float16", init_loss_scaling=1024.0)
    losses: List[Any] = []
    logits: Any = None
    t_first = t_steps = t_build
    start = time.time()  # the host's NVML witness judges this span (the host's clock too)
    output.log(protocol.SAY_WINDOW_START + " %.3f" % start)
    for step, (ids, labels) in enumerate(host_batches(paddle, args)):
        with paddle.amp.auto_cast(enable=amp, dtype=dtype or "float16", level="O1"):
            logits = model(ids)
            loss = paddle.nn.functional.cross_entropy(logits.astype("float32"), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.clear_grad()
        losses.append(loss.detach())
        output.say_step(step, args.steps, t_steps)
        if step == 0:
            float(losses[0])  # wait for the device: the first step includes CUDA/cuDNN start-up
            t_first = time.perf_counter()
            if not _LOADED:  # the witness window covers it; steps/s does not
                _snapshot_loaded("first-step")
            t_steps = time.perf_counter()
    curve = [float(v) for v in paddle.stack(losses).numpy().tolist()]  # one sync, at the end
    elapsed = time.perf_counter() - t_steps
    end = time.time()
    output.log(protocol.SAY_WINDOW_END + " %.3f" % end)
    curve = _corrupt_curve(curve, classifier.corruptions().get("loss"))
    out = figures(args, curve, t_first - t_build, elapsed)
    out.update(
        loss_check=loss_check(curve),
        train_window={"start": start, "end": end},
        param_places={name: str(p.place) for name, p in model.named_parameters()},
        logits_place=str(logits.place),
        logits_dtype=str(logits.dtype).replace("paddle.", ""),
        amp={"enabled": amp, "dtype": dtype},
        accuracy=evaluate(paddle, model),
    )
    out.update(peak_memory(paddle, device))
    return model, out


def _corrupt_curve(curve: List[float], mode: Optional[str]) -> List[float]:
    """Tests only (protocol.CORRUPT_ENV `loss`): a loss that reads 0.0 (`loss:zero`) or never moves."""
    if mode is None:
        return curve
    return [0.0 if mode == "zero" else curve[0]] * len(curve)


def figures(
    args: argparse.Namespace, curve: List[float], first_step_s: float, elapsed: float
) -> Dict[str, Any]:
    steps_per_s = (args.steps - 1) / elapsed if elapsed > 0 else None
    return {
        "steps": args.steps,
        "batch_size": args.batch_size,
        "loss_start": _finite(curve[0], 5),
        "loss_end": _finite(sum(curve[-5:]) / len(curve[-5:]), 5),
        "losses": [_finite(v, 4) for v in curve],
        "first_step_s": round(first_step_s, 4),
        "steps_per_s": round(steps_per_s, 2) if steps_per_s else None,
        "samples_per_s": round(steps_per_s * args.batch_size, 1) if steps_per_s else None,
    }


def peak_memory(paddle: Any, device: str) -> Dict[str, Optional[int]]:
    """Paddle's allocator peaks (the NVML sampler on the host sees the process's total)."""
    if not device.startswith("gpu"):
        return {"peak_gpu_mem_bytes": None, "peak_gpu_reserved_bytes": None}
    cuda = paddle.device.cuda
    return {
        "peak_gpu_mem_bytes": int(cuda.max_memory_allocated(_index(device))),
        "peak_gpu_reserved_bytes": int(cuda.max_memory_reserved(_index(device))),
    }


def evaluate(paddle: Any, model: Any) -> float:
    model.eval()
    with paddle.no_grad():
        ids, labels = classifier.make_batch(paddle, classifier.EVAL_BATCH)
        hits = (model(ids).argmax(axis=1) == labels).astype("float32").mean()
    model.train()
    return round(float(hits), 4)


def compare_cpu(paddle: Any, args: argparse.Namespace, run: Dict[str, Any]) -> Dict[str, Any]:
    """The same steps on the CPU of the same container, for the GPU/CPU speedup."""
    if run["device_used"] == "cpu":
        return {"skipped": "the run itself was on the CPU", "steps_per_s": None, "speedup": None}
    paddle.set_device("cpu")
    try:
        _, cpu = train(paddle, args, amp=False)
    finally:
        paddle.set_device(run["device_used"])
    speedup = None
    if cpu["steps_per_s"] and run["steps_per_s"]:
        speedup = round(run["steps_per_s"] / cpu["steps_per_s"], 2)
    keep = ("steps_per_s", "first_step_s", "loss_start", "loss_end")
    return dict({k: cpu[k] for k in keep}, speedup=speedup, skipped=None)


def export(paddle: Any, model: Any, device: str) -> Dict[str, Any]:
    """Train -> serve: `paddle.jit.to_static` + save, reload with `paddle.inference`, compare.

    https://www.paddlepaddle.org.cn/documentation/docs/en/guides/jit/basic_usage_en.html
    """
    import numpy  # a dependency of every Paddle wheel

    t0 = time.perf_counter()
    model.eval()
    ids, _ = classifier.make_batch(paddle, 256)
    with paddle.no_grad():
        expected = model(ids).numpy()
    spec = paddle.static.InputSpec([None, classifier.SEQ_LEN], "int64", name="x")
    prefix = os.path.join(tempfile.mkdtemp(prefix="envcheck-export-"), "model")
    try:  # 3.x needs full_graph=True for input_spec to count (it warns and ignores it otherwise)
        static = paddle.jit.to_static(model, input_spec=[spec], full_graph=True)
    except TypeError:  # older Paddle: no full_graph, always whole-graph
        static = paddle.jit.to_static(model, input_spec=[spec])
    paddle.jit.save(static, prefix)
    # Paddle >= 3.0 writes the PIR program as .json; 2.x writes .pdmodel.
    program = prefix + ".json" if os.path.exists(prefix + ".json") else prefix + ".pdmodel"
    config = paddle.inference.Config(program, prefix + ".pdiparams")
    if device.startswith("gpu"):
        config.enable_use_gpu(256, _index(device))
    else:
        config.disable_gpu()
    config.disable_glog_info()  # dozens of "Running PIR pass" lines would bury the log tail
    predictor = paddle.inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.copy_from_cpu(ids.numpy())
    predictor.run()
    got = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    diff = float(numpy.abs(got - expected).max())
    agree = float((got.argmax(axis=1) == expected.argmax(axis=1)).mean())
    return {
        "format": os.path.splitext(program)[1].lstrip("."),
        "inference_gpu": bool(config.use_gpu()),
        "max_abs_diff": diff,
        "argmax_agreement": agree,
        "match": diff <= 1e-3 and agree == 1.0,
        "seconds": round(time.perf_counter() - t0, 4),
    }


def loss_check(curve: List[float]) -> Dict[str, Any]:
    """The full-precision loss curve's red flags (the rounded `losses` can repeat by chance)."""
    finite = [v for v in curve if math.isfinite(v)]
    return {
        "start": curve[0] if math.isfinite(curve[0]) else None,
        "non_finite": len(curve) - len(finite),
        "zero_steps": sum(1 for v in finite if v == 0.0),
        "distinct": len(set(finite)),
    }


def _finite(value: float, digits: int) -> Optional[float]:
    """JSON has no NaN: a diverged loss is written as null (and judged "not learning")."""
    return round(value, digits) if math.isfinite(value) else None


def _index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


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




if __name__ == "__main__":
    sys.exit(main())
