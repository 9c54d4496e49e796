"""The smoke's training loop and its figures: batches through a DataLoader worker, the steps of
Adam (with AMP when asked), the loss curve's red flags, the peaks of Paddle's allocator, the
accuracy, and the same steps on the CPU for the speedup.

Part of the workload (see `workload.py`): Python 3.8 syntax, the standard library and `paddle`
(passed in) only.
"""

# Python 3.8 syntax on purpose (typing.Dict, %-formatting): old Paddle images run this file.
# ruff: noqa: UP006, UP031, UP035, UP045

from __future__ import annotations

import argparse
import math
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple

if TYPE_CHECKING:
    from envcheck.smoke.workload import classifier, output, protocol
else:
    try:  # beside the workload wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_classifier as classifier
        import envcheck_smoke_output as output
        import envcheck_smoke_protocol as protocol
    except ImportError:  # imported from the envcheck package (the host's tests)
        from envcheck.smoke.workload import classifier, output, protocol


# The batches come from host memory through a `paddle.io.DataLoader` worker process, as in a real
# run: collated in the worker, passed through /dev/shm, pinned and copied to the GPU. Python's
# default start method is kept, as a user gets it: fork (Linux, Python <= 3.13) has the first
# batch in ~0.05 s and all 60 with the worker's shutdown in ~0.3 s; spawn re-imports Paddle in
# the worker, ~2.2 s to the first batch (measured on 2 cores); forkserver, 3.14's default, likewise.
LOADER_WORKERS = 1


class DataFailed(Exception):
    """The DataLoader failed (its worker, shared memory): the run's error, phase "data"."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


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
        major = paddle.device.cuda.get_device_capability(device_index(device))[0]
        return "bfloat16" if major >= 8 else "float16"
    return "bfloat16"  # Paddle's CPU AMP lists are bf16 only


def train(
    paddle: Any,
    args: argparse.Namespace,
    amp: bool,
    after_first_step: Optional[Callable[[], None]] = None,
) -> Tuple[Any, Dict[str, Any]]:
    """`args.steps` steps of Adam on fresh batches; the model and the measured figures.
    `after_first_step` runs once the first step is done (inside the witness window, before the
    steps/s clock starts)."""
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
            if after_first_step is not None:  # the witness window covers it; steps/s does not
                after_first_step()
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
        "peak_gpu_mem_bytes": int(cuda.max_memory_allocated(device_index(device))),
        "peak_gpu_reserved_bytes": int(cuda.max_memory_reserved(device_index(device))),
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


def device_index(device: str) -> int:
    """`gpu:1` -> 1; a bare `gpu` is Paddle's device 0."""
    return int(device.split(":", 1)[1]) if ":" in device else 0
