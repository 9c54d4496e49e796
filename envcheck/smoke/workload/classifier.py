"""The smoke's model and task, and the known answers each of its ops must give.

The text classifier of Paddle's tutorial, shrunk to seconds (its shapes, layers, data and
optimizer), and, for every op class it runs, the same op computed by Paddle on the run's device and
by numpy in float64 from the same inputs: a device that computes zeros must not pass.
"""

# Python 3.8 syntax on purpose (typing.Dict, %-formatting): old Paddle images run this file.
# ruff: noqa: UP006, UP031, UP035, UP045

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from envcheck.smoke.workload import protocol
else:
    try:  # beside the workload wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_protocol as protocol
    except ImportError:  # imported from the envcheck package (the host's tests)
        from envcheck.smoke.workload import protocol


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

# Known answers: every op class of the classifier, computed by Paddle on the run's
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
    """Tests only (protocol.CORRUPT_ENV `worker`): a worker that raises, or dies as the OOM
    killer does."""
    if mode == "kill":
        os.kill(os.getpid(), 9)
    raise RuntimeError(
        "envcheck test fault: the DataLoader worker raised (%s)" % protocol.CORRUPT_ENV
    )


def make_batch(paddle: Any, size: int) -> Tuple[Any, Any]:
    """Synthetic but learnable: label 1 when most token ids fall below VOCAB/2. Made on device."""
    ids = paddle.randint(0, VOCAB, [size, SEQ_LEN], dtype="int64")
    below = (ids < VOCAB // 2).astype("int32").sum(axis=1)
    return ids, (below > SEQ_LEN // 2).astype("int64")


def make_optimizer(paddle: Any, parameters: Any) -> Any:
    """The default Adam, as a user calls it (not the fused multi-tensor one)."""
    return paddle.optimizer.Adam(learning_rate=LEARNING_RATE, parameters=parameters)


def corruptions() -> Dict[str, str]:
    """{op: mode} from protocol.CORRUPT_ENV (tests only); mode is "off" (default), "zero" or
    "nan"."""
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
    want = x.astype("float32") @ w.astype("float32") + b
    return got.astype("float32").numpy(), want, _kind_of(got, "tf32")


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
