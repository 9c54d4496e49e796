"""envcheck's smoke training: the Paddle tutorial text classifier, trained for a few seconds.

Standalone on purpose: it runs as a script file inside the selected container (mounted read-only)
or in a subprocess of the target Python, so it imports only the standard library and `paddle`, and
keeps to Python 3.8 syntax (older Paddle images). Run in place, its folder is first on sys.path:
no module beside it may share a standard library name (a `numbers.py` there broke numpy). What it
shares with the host — the output schema, Paddle's log patterns, the test hook's name — lives in
`envcheck/smoke/protocol.py`, placed beside it as `envcheck_smoke_protocol.py`; envcheck itself
never imports this file (`paddle` is imported inside `main` anyway).

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
import re
import sys
import tempfile
import threading
import time
import traceback
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

if TYPE_CHECKING:
    from envcheck.smoke import protocol
    from envcheck.smoke.protocol import LibrarySource, PaddleWarning
else:
    try:  # beside the script wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_protocol as protocol
    except ImportError:  # imported as envcheck.smoke.workload (the host's tests)
        from envcheck.smoke import protocol


# The model and task of the Paddle text-classification tutorial, shrunk to seconds:
# https://www.paddlepaddle.org.cn/documentation/docs/en/practices/nlp/imdb_bow_classification.html
# 1,000 words: the default (unfused) Adam updates the whole embedding every step; at 5,000 words it
# cost 22 ms/step of CPU time against 10 at 1,000 (2 shared cores), and the task learns faster.
VOCAB = 1000
EMBED_DIM = 128
SEQ_LEN = 15  # odd, so "most token ids fall below VOCAB/2" never ties; short keeps CPU steps fast
BATCH = 128
EVAL_BATCH = 1024
LEARNING_RATE = 0.01  # measured on CPU: loss 0.69 -> ~0.49 in 60 steps, ~120 steps/s on 2 cores
DROPOUT = 0.1
# The text-CNN head of Paddle's CNN classifiers (Conv1D -> relu -> max over time -> Linear): a cuDNN
# convolution, forward and backward, on the training path of a GPU run. Over the first CONV_IN
# embedding dimensions of the first CONV_ROWS rows of each batch: Paddle's CPU conv loops over the
# samples (im2col + gemm), and the full 128-wide embedding of 128 rows cost 25 ms/step (steps/s
# 38 -> 6); this head costs ~2 ms/step of CPU time (a projection to 16 channels instead: ~5).
# The conv1d known-answer check runs this very op (channels, kernel, padding, layout).
CONV_IN = 16
CONV_OUT = 8
CONV_KERNEL = 3
CONV_ROWS = 8
# The batches come from host memory through a `paddle.io.DataLoader` worker process, as in a real
# run: collated in the worker, passed through /dev/shm, pinned and copied to the GPU. Python's
# default start method is kept, as a user gets it: fork (Linux, Python <= 3.13) has the first
# batch in ~0.05 s and all 60 with the worker's shutdown in ~0.3 s; spawn re-imports Paddle in
# the worker, ~2.2 s to the first batch (measured on 2 cores); forkserver, 3.14's default, likewise.
LOADER_WORKERS = 1
SHM_PATH = "/dev/shm"

# Known answers (issue 16): every op class of the classifier, computed by Paddle on the run's
# device and by numpy (float64) from the same inputs, before and after training.
CHECK_SEED = 16
CHECK_OPS = ("embedding", "matmul", "conv1d", "mean", "cross_entropy", "adam", "dropout")
# Largest |got - want| allowed, relative to max |want|. fp32 matmul/conv may run as TF32 on
# Ampere and newer (10-bit mantissa); under --amp they run in fp16/bf16.
TOLERANCE = {"float32": 1e-4, "tf32": 5e-3, "float16": 1e-2, "bfloat16": 4e-2}
DROPOUT_CHECK_P = 0.5
# Tests only: corrupt one result after Paddle computed it, so each failure path runs for real.
#   ENVCHECK_SMOKE_CORRUPT=matmul        one element of the matmul check is off
#   ENVCHECK_SMOKE_CORRUPT=conv1d:zero   the conv1d check returns all zeros (the H100 2.6.2 case)
#   ENVCHECK_SMOKE_CORRUPT=mean:nan      one element is NaN
#   ENVCHECK_SMOKE_CORRUPT=loss:zero     every training loss reads 0.0; `loss` alone: constant
#   ENVCHECK_SMOKE_CORRUPT=worker        the DataLoader worker raises on the second batch
#   ENVCHECK_SMOKE_CORRUPT=worker:kill   the DataLoader worker kills itself (SIGKILL) there
# Comma-separated for several. Never set outside tests: a corrupted run fails, as it must.


# What the process really mapped (issue 11), read from /proc/self/maps after the first training
# step: Paddle dlopen()s the CUDA runtime, cuBLAS and cuDNN lazily, on first use. A whole file name
# per match (libcudnn_ops_infer.so.8, libcublasLt.so.13.1.0.3, libcuda.so.580.159.04).
LOADED_NAME = re.compile(
    r"(?P<name>lib(?:cuda|nvidia-ml|cudart|cublas|cublasLt|cudnn(?:_[a-z_]+)?|nccl"
    r"|nvrtc(?:-builtins)?))\.so(?:\.[0-9][0-9.]*)?"
)
# The library's own version call, on the copy already mapped: (symbol, how it answers).
# libcuda's cuDriverGetVersion is the CUDA API it serves (13000), not the driver's version: the
# file name says that (libcuda.so.580.159.04). libnvidia-ml would need nvmlInit: file name only.
VERSION_CALLS = {
    "libcudart": ("cudaRuntimeGetVersion", "int-out"),
    "libcudnn": ("cudnnGetVersion", "size-return"),
    "libcublas": ("cublasGetProperty", "properties"),
    "libcublasLt": ("cublasLtGetProperty", "properties"),
    "libnccl": ("ncclGetVersion", "int-out"),
    "libnvrtc": ("nvrtcVersion", "two-ints"),
    "libcuda": ("cuDriverGetVersion", "int-out"),
}
# The CUDA forward-compat package installs libcuda under /usr/local/cuda-X.Y/compat:
# https://docs.nvidia.com/deploy/cuda-compatibility/#forward-compatibility
COMPAT_DIR = re.compile(r"/cuda[^/]*/compat(?:/|$)")
PIP_DIR = re.compile(r"/(?:site|dist)-packages/nvidia/")
CUDA_HOME_DIR = re.compile(r"^/usr/local/cuda[^/]*/")
# NVML's answers that name a broken driver state inside a container (nvml.h).
NVML_ERRORS = {
    3: "NVML_ERROR_NOT_SUPPORTED",
    4: "NVML_ERROR_NO_PERMISSION",
    9: "NVML_ERROR_DRIVER_NOT_LOADED",
    12: "NVML_ERROR_LIBRARY_NOT_FOUND",
    18: "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    999: "NVML_ERROR_UNKNOWN",
}


class StderrTee:
    """Copies fd 2 (Python *and* the C++ glog lines) to the real stderr while scanning it.

    A pipe at the file-descriptor level is the only way to see glog's output, which bypasses
    `sys.stderr`. Pumped by a thread so the host still sees the log live (and on a crash).
    With `stdout_too`, fd 1 joins the log until `stop()` gives it back.
    """

    def __init__(self, stdout_too: bool = False) -> None:
        self._read, write = os.pipe()
        self._saved = os.dup(2)
        self._stdout = os.dup(1) if stdout_too else None
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(write, 2)
        if stdout_too:
            os.dup2(write, 1)
        os.close(write)
        self.warnings: List[PaddleWarning] = []
        self._seen: Set[Tuple[str, str]] = set()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        pending = b""
        while True:
            chunk = os.read(self._read, 65536)
            if not chunk:
                break
            _write_all(self._saved, chunk)
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()[-protocol.MAX_LINE * 4 :]
            for raw in lines:
                self._note(raw.decode("utf-8", "replace"))
        self._note(pending.decode("utf-8", "replace"))

    def _note(self, line: str) -> None:
        hit = protocol.classify_line(line)
        if hit is None or len(self.warnings) >= protocol.MAX_WARNINGS:
            return
        key = (hit["kind"], hit["text"])
        if key not in self._seen:
            self._seen.add(key)
            self.warnings.append(hit)

    def stop(self) -> List[PaddleWarning]:
        """Give the descriptors back (closing every write end of the pipe) and drain it."""
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        if self._stdout is not None:
            os.dup2(self._stdout, 1)
            os.close(self._stdout)
        self._thread.join(timeout=2.0)  # drains what is left into the real stderr
        if not self._thread.is_alive():  # a child holding the pipe open keeps it pumping
            os.close(self._saved)
        return list(self.warnings)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def log(message: str) -> None:
    print(protocol.LOG_PREFIX + message, file=sys.stderr, flush=True)


# -- live progress for the host's display (issue 13.1): log lines only, apart from the training.
_SAID_AT = [0.0]


def say_step(step: int, steps: int, since: float) -> None:
    """At most one line a second while training, and the last step: `step 31/60, 95.2 steps/s`
    (dispatch rate: the device is not waited for, so the figure in the result stays the one)."""
    now = time.perf_counter()
    last = step + 1 == steps
    if step == 0 or (not last and now - _SAID_AT[0] < 1.0):
        _SAID_AT[0] = _SAID_AT[0] or now
        return
    _SAID_AT[0] = now
    rate = ", %.1f steps/s" % (step / (now - since)) if now > since else ""
    log("step %d/%d%s" % (step + 1, steps, rate))


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", action="append", default=None, help="cpu, gpu:N or gpu:all (repeatable)"
    )
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=BATCH)
    parser.add_argument("--amp", action="store_true", help="auto_cast + GradScaler")
    parser.add_argument("--compare-cpu", action="store_true", help="the same steps on CPU")
    parser.add_argument("--export", action="store_true", help="to_static + paddle.inference")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    args.device = args.device or ["cpu"]
    if args.steps < 2 or args.batch_size <= CONV_ROWS:
        parser.error("--steps must be >= 2 and --batch-size > %d" % CONV_ROWS)
    return args


def main(argv: Optional[List[str]] = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    tee = StderrTee(stdout_too=True)  # stray prints from Paddle go to the log, not our JSON line
    threading.excepthook = _record_thread_error
    result: Dict[str, Any] = {"schema": protocol.SCHEMA, "error": None, "runs": []}
    try:
        result.update(_smoke(args))
    except BaseException as e:  # noqa: BLE001 - report it in the JSON line, then exit non-zero
        result["error"] = _error_of(e, phase="setup")
    finally:
        result["warnings"] = tee.stop()
        result["total_s"] = round(time.perf_counter() - started, 4)
        _write_all(1, (json.dumps(result, separators=(",", ":")) + "\n").encode())
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
    log(
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
    out["driver_check"] = driver_check(_LOADED["loaded_libraries"])
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
    _LOADED.update(loaded_libraries=loaded_libraries(), loaded_when=when)
    log(
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
    log(protocol.SAY_DEVICE + "%s (asked for %s)" % (run["device_used"], asked))
    run["checks"] = []
    dtype = amp_dtype(paddle, run["device_used"]) if args.amp else None
    phase, spent = "check", time.perf_counter()
    try:  # known answers before and after: a GPU that computes zeros must not pass (issue 16)
        run["checks"] += known_answer_checks(paddle, run["device_used"], "before", dtype)
        spent -= time.perf_counter()
        phase = "train"
        model, trained = train(paddle, args, amp=args.amp)
        phase, spent = "check", spent + time.perf_counter()
        run["checks"] += known_answer_checks(paddle, run["device_used"], "after", dtype)
        run["checks_s"] = round(time.perf_counter() - spent, 4)
    except DataFailed as e:
        run["error"] = dict(_error_of(e.cause, phase="data"), thread_errors=list(_THREAD_ERRORS))
        return run
    except Exception as e:  # noqa: BLE001 - a CUDA error is an OSError, a bad arch a RuntimeError
        run["error"] = _error_of(e, phase=phase)
        return run
    log(
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
    except Exception as e:  # noqa: BLE001
        return {"error": _error_of(e, phase=phase)}


def build_model(paddle: Any) -> Any:
    nn = paddle.nn

    class TextClassifier(nn.Layer):  # type: ignore[misc,name-defined]
        """Embedding -> mean over tokens -> dropout -> Linear(2), as in the tutorial, plus the
        text-CNN head's logits on the first CONV_ROWS rows (see CONV_ROWS)."""

        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, EMBED_DIM)
            self.dropout = nn.Dropout(DROPOUT)
            self.fc = nn.Linear(EMBED_DIM, 2)
            self.conv = nn.Conv1D(CONV_IN, CONV_OUT, CONV_KERNEL, padding=CONV_KERNEL // 2)
            self.conv_fc = nn.Linear(CONV_OUT, 2)

        def forward(self, x: Any) -> Any:
            embedded = self.embedding(x)
            logits = self.fc(self.dropout(embedded.mean(axis=1)))
            words = embedded[:CONV_ROWS, :, :CONV_IN].transpose([0, 2, 1])  # NCL
            features = nn.functional.relu(self.conv(words)).max(axis=2)
            head = logits[:CONV_ROWS] + self.conv_fc(features)
            return paddle.concat([head, logits[CONV_ROWS:]], axis=0)

    return TextClassifier()


class HostBatches:
    """The training samples, in host memory, for `paddle.io.DataLoader` (a map-style dataset;
    module level, so a spawn or forkserver start method can pickle it)."""

    def __init__(self, count: int, seed: int, fault: Optional[str]) -> None:
        import numpy

        self.ids = numpy.random.RandomState(seed).randint(0, VOCAB, (count, SEQ_LEN))
        self.fault = fault
        self.fault_at = count // 2

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> Tuple[Any, Any]:
        import numpy

        if self.fault is not None and index == self.fault_at:
            worker_fault(self.fault)
        ids = self.ids[index].astype("int64")
        below = int((ids < VOCAB // 2).sum())
        return ids, numpy.array(int(below > SEQ_LEN // 2), dtype="int64")


def worker_fault(mode: str) -> None:
    """Tests only (protocol.CORRUPT_ENV `worker`): a worker that raises, or dies as the OOM killer does."""
    if mode == "kill":
        os.kill(os.getpid(), 9)
    raise RuntimeError("envcheck test fault: the DataLoader worker raised (%s)" % protocol.CORRUPT_ENV)


def host_batches(paddle: Any, args: argparse.Namespace) -> Iterator[Tuple[Any, Any]]:
    """`args.steps` batches through a DataLoader worker; any failure of it is a DataFailed."""
    data = HostBatches(args.steps * args.batch_size, args.seed, corruptions().get("worker"))
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


def make_batch(paddle: Any, size: int) -> Tuple[Any, Any]:
    """Synthetic but learnable: label 1 when most token ids fall below VOCAB/2. Made on device."""
    ids = paddle.randint(0, VOCAB, [size, SEQ_LEN], dtype="int64")
    below = (ids < VOCAB // 2).astype("int32").sum(axis=1)
    return ids, (below > SEQ_LEN // 2).astype("int64")


def amp_dtype(paddle: Any, device: str) -> str:
    """bf16 needs compute capability >= 8.0 (compat_facts 7 row 25); fp16 otherwise."""
    if device.startswith("gpu"):
        major = paddle.device.cuda.get_device_capability(_index(device))[0]
        return "bfloat16" if major >= 8 else "float16"
    return "bfloat16"  # Paddle's CPU AMP lists are bf16 only


def make_optimizer(paddle: Any, parameters: Any) -> Any:
    """The default Adam, as a user calls it (not the fused multi-tensor one)."""
    return paddle.optimizer.Adam(learning_rate=LEARNING_RATE, parameters=parameters)


def train(paddle: Any, args: argparse.Namespace, amp: bool) -> Tuple[Any, Dict[str, Any]]:
    """`args.steps` steps of Adam on fresh batches; the model and the measured figures."""
    paddle.seed(args.seed)
    device = str(paddle.get_device())
    dtype = amp_dtype(paddle, device) if amp else None
    t_build = time.perf_counter()
    model = build_model(paddle)
    optimizer = make_optimizer(paddle, model.parameters())
    scaler = paddle.amp.GradScaler(enable=dtype == "float16", init_loss_scaling=1024.0)
    losses: List[Any] = []
    logits: Any = None
    t_first = t_steps = t_build
    start = time.time()  # the host's NVML witness judges this span (the host's clock too)
    log(protocol.SAY_WINDOW_START + " %.3f" % start)
    for step, (ids, labels) in enumerate(host_batches(paddle, args)):
        with paddle.amp.auto_cast(enable=amp, dtype=dtype or "float16", level="O1"):
            logits = model(ids)
            loss = paddle.nn.functional.cross_entropy(logits.astype("float32"), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.clear_grad()
        losses.append(loss.detach())
        say_step(step, args.steps, t_steps)
        if step == 0:
            float(losses[0])  # wait for the device: the first step includes CUDA/cuDNN start-up
            t_first = time.perf_counter()
            if not _LOADED:  # the witness window covers it; steps/s does not
                _snapshot_loaded("first-step")
            t_steps = time.perf_counter()
    curve = [float(v) for v in paddle.stack(losses).numpy().tolist()]  # one sync, at the end
    elapsed = time.perf_counter() - t_steps
    end = time.time()
    log(protocol.SAY_WINDOW_END + " %.3f" % end)
    curve = _corrupt_curve(curve, corruptions().get("loss"))
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
        ids, labels = make_batch(paddle, EVAL_BATCH)
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
    ids, _ = make_batch(paddle, 256)
    with paddle.no_grad():
        expected = model(ids).numpy()
    spec = paddle.static.InputSpec([None, SEQ_LEN], "int64", name="x")
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


def corruptions() -> Dict[str, str]:
    """{op: mode} from protocol.CORRUPT_ENV (tests only); mode is "off" (default), "zero" or "nan"."""
    found: Dict[str, str] = {}
    for item in os.environ.get(protocol.CORRUPT_ENV, "").split(","):
        op, _, mode = item.strip().partition(":")
        if op:
            found[op] = mode or "off"
    return found


def corrupt(got: Any, mode: str) -> Any:
    """One wrong result, as a broken kernel would give it (after Paddle computed the real one)."""
    import numpy

    got = numpy.array(got, dtype="float64")
    if mode == "zero":
        return numpy.zeros_like(got)
    got.flat[0] = float("nan") if mode == "nan" else got.flat[0] + 1.0 + abs(got).max()
    return got


def known_answer_checks(paddle: Any, device: str, phase: str, amp: Optional[str]) -> List[Any]:
    """Each op class on `device` against numpy from the same inputs; raises what Paddle raises."""
    import numpy

    broken = corruptions()
    checks = []
    for op in CHECK_OPS:
        rng = numpy.random.RandomState(CHECK_SEED)
        got, want, kind = _CHECKS[op](paddle, numpy, rng, amp)
        if op in broken:
            got = corrupt(got, broken[op])
        checks.append(dict(compare(numpy, got, want, kind), op=op, phase=phase, device=device))
    return checks


def compare(numpy: Any, got: Any, want: Any, kind: str) -> Dict[str, Any]:
    """ok, or the first problem: shape, non-finite, all-zero, mismatch (beyond the tolerance)."""
    got = numpy.asarray(got, dtype="float64")
    want = numpy.asarray(want, dtype="float64")
    tolerance = TOLERANCE[kind] * max(float(numpy.abs(want).max()), 1e-6)
    out: Dict[str, Any] = {"dtype": kind, "tolerance": tolerance, "max_abs_diff": None}
    if got.shape != want.shape:
        return dict(out, ok=False, problem="shape %s, expected %s" % (got.shape, want.shape))
    if not numpy.isfinite(got).all():
        return dict(out, ok=False, problem="non-finite")
    diff = float(numpy.abs(got - want).max())
    out["max_abs_diff"] = diff
    if not got.any():
        return dict(out, ok=False, problem="all-zero")
    return dict(out, ok=diff <= tolerance, problem=None if diff <= tolerance else "mismatch")


def _autocast(paddle: Any, amp: Optional[str]) -> Any:
    """The training's auto_cast: under --amp, matmul and conv run in fp16/bf16."""
    return paddle.amp.auto_cast(enable=amp is not None, dtype=amp or "float16", level="O1")


def _kind_of(tensor: Any, fp32_kind: str) -> str:
    dtype = str(tensor.dtype).replace("paddle.", "")
    return dtype if dtype in ("float16", "bfloat16") else fp32_kind


def _check_embedding(paddle: Any, np: Any, rng: Any, amp: Optional[str]) -> Tuple[Any, Any, str]:
    table = rng.randn(64, 16).astype("float32")
    ids = rng.randint(0, 64, (8, 5)).astype("int64")
    got = paddle.nn.functional.embedding(paddle.to_tensor(ids), paddle.to_tensor(table))
    return got.numpy(), table[ids], "float32"


def _check_matmul(paddle: Any, np: Any, rng: Any, amp: Optional[str]) -> Tuple[Any, Any, str]:
    x, w, b = rng.randn(32, 64), rng.randn(64, 16), rng.randn(16)
    with _autocast(paddle, amp):
        got = paddle.nn.functional.linear(*(_t(paddle, a) for a in (x, w, b)))
    return got.astype("float32").numpy(), x.astype("float32") @ w.astype("float32") + b, _kind_of(got, "tf32")


def _check_conv1d(paddle: Any, np: Any, rng: Any, amp: Optional[str]) -> Tuple[Any, Any, str]:
    """The training's text-CNN convolution (CONV_IN -> CONV_OUT, NCL); cuDNN on a GPU."""
    x, b = rng.randn(4, CONV_IN, SEQ_LEN), rng.randn(CONV_OUT)
    w = rng.randn(CONV_OUT, CONV_IN, CONV_KERNEL)
    pad = CONV_KERNEL // 2
    with _autocast(paddle, amp):
        got = paddle.nn.functional.conv1d(*(_t(paddle, a) for a in (x, w, b)), padding=pad)
    xf, wf = x.astype("float32").astype("float64"), w.astype("float32").astype("float64")
    padded = np.pad(xf, ((0, 0), (0, 0), (pad, pad)))
    windows = np.stack([padded[:, :, k : k + x.shape[2]] for k in range(CONV_KERNEL)], axis=-1)
    want = np.einsum("nclk,ock->nol", windows, wf) + b.astype("float32")[None, :, None]
    return got.astype("float32").numpy(), want, _kind_of(got, "tf32")


def _check_mean(paddle: Any, np: Any, rng: Any, amp: Optional[str]) -> Tuple[Any, Any, str]:
    x = rng.randn(16, 12, 32).astype("float32")
    return _t(paddle, x).mean(axis=1).numpy(), x.astype("float64").mean(axis=1), "float32"


def _check_cross_entropy(
    paddle: Any, np: Any, rng: Any, amp: Optional[str]
) -> Tuple[Any, Any, str]:
    logits = (3 * rng.randn(32, 2)).astype("float32").astype("float64")
    labels = rng.randint(0, 2, 32).astype("int64")
    got = paddle.nn.functional.cross_entropy(_t(paddle, logits), paddle.to_tensor(labels))
    top = logits.max(axis=1)
    log_z = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
    return got.numpy().reshape(()), (log_z - logits[np.arange(32), labels]).mean(), "float32"


def _check_adam(paddle: Any, np: Any, rng: Any, amp: Optional[str]) -> Tuple[Any, Any, str]:
    """Two steps of the training's optimizer on a known gradient; compares the update itself."""
    start, grad = rng.randn(64).astype("float32"), rng.randn(64).astype("float32")
    init = paddle.nn.initializer.Assign(start)
    param = paddle.create_parameter([64], "float32", default_initializer=init)
    optimizer = make_optimizer(paddle, [param])
    for _ in range(2):
        (param * _t(paddle, grad)).sum().backward()
        optimizer.step()
        optimizer.clear_grad()
    beta1, beta2, eps, g = 0.9, 0.999, 1e-8, grad.astype("float64")
    m = v = np.zeros(64)
    p = start.astype("float64")
    for t in (1, 2):  # Paddle's Adam: bias correction folded into the learning rate
        m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
        lr = LEARNING_RATE * math.sqrt(1 - beta2**t) / (1 - beta1**t)
        p = p - lr * m / (np.sqrt(v) + eps * math.sqrt(1 - beta2**t))
    return param.numpy().astype("float64") - start, p - start, "float32"


def _check_dropout(paddle: Any, np: Any, rng: Any, amp: Optional[str]) -> Tuple[Any, Any, str]:
    """Same seed twice: the same mask; kept values scaled by 1/(1-p); about p of them dropped."""
    x = (rng.rand(64, 64) + 0.5).astype("float32")
    outs = []
    for _ in range(2):
        paddle.seed(CHECK_SEED)
        outs.append(paddle.nn.functional.dropout(_t(paddle, x), DROPOUT_CHECK_P).numpy())
    got, again = outs
    want = np.where(got != 0, x.astype("float64") / (1 - DROPOUT_CHECK_P), 0.0)
    dropped = float((got == 0).mean())
    if not (again == got).all():
        want = again  # the same seed gave another mask
    elif abs(dropped - DROPOUT_CHECK_P) > 0.1:  # 4096 draws: 0.1 is over 12 standard deviations
        want = np.where(got != 0, 0.0, x)  # a wrong drop rate: every value counts as wrong
    return got, want, "float32"


def _t(paddle: Any, array: Any) -> Any:
    return paddle.to_tensor(array.astype("float32"))


_CHECKS: Dict[str, Callable[[Any, Any, Any, Optional[str]], Tuple[Any, Any, str]]] = {
    "embedding": _check_embedding,
    "matmul": _check_matmul,
    "conv1d": _check_conv1d,
    "mean": _check_mean,
    "cross_entropy": _check_cross_entropy,
    "adam": _check_adam,
    "dropout": _check_dropout,
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
        return None, _one_line(e)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return ("%s: %s" % (type(e).__name__, text[0] if text else ""))[:protocol.MAX_LINE]


def _error_of(e: BaseException, phase: str) -> Dict[str, Any]:
    tail = traceback.format_exception(type(e), e, e.__traceback__)
    return {
        "phase": phase,
        "type": type(e).__name__,
        "message": str(e)[:2000],
        "traceback": "".join(tail)[-4000:],
    }


def loaded_libraries(maps: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> List[Dict[str, Any]]:
    """Every NVIDIA library mapped in this process, in load order: path, where it came from, and
    the raw answer of its own version call (the host decodes it). Never loads anything."""
    if maps is None:
        try:
            with open("/proc/self/maps") as f:
                maps = f.read()
        except OSError:  # not Linux: nothing to say, and the host says so
            return []
    env = dict(os.environ) if env is None else env
    found: List[Dict[str, Any]] = []
    seen: Set[str] = set()
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        if path.endswith(" (deleted)"):  # noqa: FURB188 - Python 3.8 has no removesuffix
            path = path[: -len(" (deleted)")]
        match = LOADED_NAME.fullmatch(os.path.basename(path))
        if match is None or path in seen:
            continue
        seen.add(path)
        name = match.group("name")
        entry = {"name": name, "path": path, "source": library_source(path, env)}
        entry.update(version_call(name, path))
        found.append(entry)
    return found


def library_source(path: str, env: Dict[str, str]) -> LibrarySource:
    """compat, pip, conda, LD_LIBRARY_PATH, cuda-home or system: the most telling first."""
    if COMPAT_DIR.search(path):
        return "compat"
    if PIP_DIR.search(path):
        return "pip"
    conda = (env.get("CONDA_PREFIX") or "").rstrip("/")
    if conda and path.startswith(conda + "/"):
        return "conda"
    folder = os.path.dirname(path)
    for entry in (env.get("LD_LIBRARY_PATH") or "").split(":"):
        if entry and os.path.realpath(entry) == folder:
            return "LD_LIBRARY_PATH"
    if CUDA_HOME_DIR.match(path):
        return "cuda-home"
    return "system"


def version_call(name: str, path: str) -> Dict[str, Any]:
    """{"call", "raw", "call_error"}: the library's own answer, from the mapped copy only
    (RTLD_NOLOAD: a path that is not already loaded is never loaded)."""
    family = "libcudnn" if name.startswith("libcudnn") else name
    if family not in VERSION_CALLS:
        return {"call": None, "raw": None, "call_error": None}
    symbol, how = VERSION_CALLS[family]
    out: Dict[str, Any] = {"call": symbol, "raw": None, "call_error": None}
    try:
        import ctypes

        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        fn = getattr(lib, symbol)
        out["raw"] = _ask_version(ctypes, fn, how)
    except (OSError, AttributeError, ValueError) as e:  # no such symbol, or an error code
        out["call_error"] = _one_line(e)
    return out


def _ask_version(ctypes: Any, fn: Any, how: str) -> Any:
    if how == "size-return":
        fn.restype = ctypes.c_size_t
        return int(fn())
    if how == "properties":  # libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2
        parts = []
        for prop in (0, 1, 2):
            value = ctypes.c_int(0)
            _status(fn(prop, ctypes.byref(value)))
            parts.append(value.value)
        return parts
    if how == "two-ints":
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        _status(fn(ctypes.byref(major), ctypes.byref(minor)))
        return [major.value, minor.value]
    value = ctypes.c_int(0)
    _status(fn(ctypes.byref(value)))
    return value.value


def _status(code: int) -> None:
    if code != 0:
        raise ValueError("returned error %d" % code)


def driver_check(libraries: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The driver's user space as this process sees it (in a container: what the NVIDIA runtime
    injected): nvmlInit's answer and the driver version NVML reports. Only for a process that
    mapped libcuda or libnvidia-ml, after training, so it changes nothing the training saw."""
    if not any(lib["name"] in ("libcuda", "libnvidia-ml") for lib in libraries):
        return None
    import ctypes

    nvml = next((lib["path"] for lib in libraries if lib["name"] == "libnvidia-ml"), None)
    out: Dict[str, Any] = {"library": nvml or "libnvidia-ml.so.1", "init": None,
                           "error": None, "driver_version": None}
    try:
        lib = ctypes.CDLL(out["library"])
    except OSError as e:
        out["error"] = _one_line(e)
        return out
    init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
    if init is None:
        out["error"] = "no nvmlInit in %s" % out["library"]
        return out
    out["init"] = int(init())
    if out["init"] != 0:
        out["error"] = NVML_ERRORS.get(out["init"], "NVML error %d" % out["init"])
        return out
    buffer = ctypes.create_string_buffer(96)
    if lib.nvmlSystemGetDriverVersion(buffer, ctypes.c_uint(96)) == 0:
        out["driver_version"] = buffer.value.decode("ascii", "replace")
    lib.nvmlShutdown()
    return out


if __name__ == "__main__":
    sys.exit(main())
