"""Train -> serve: the trained model exported with `paddle.jit.to_static`, reloaded with
`paddle.inference` and compared with the model's own answers (`--export`).

Part of the workload (see `workload.py`): Python 3.8 syntax, the standard library, `paddle`
(passed in) and numpy (a dependency of every Paddle wheel) only.
"""

# Python 3.8 syntax on purpose (typing.Dict): old Paddle images run this file.
# ruff: noqa: UP006, UP035

from __future__ import annotations

import os
import tempfile
import time
from typing import TYPE_CHECKING, Any, Dict

if TYPE_CHECKING:
    from envcheck.smoke.workload import classifier, training
else:
    try:  # beside the workload wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_classifier as classifier
        import envcheck_smoke_training as training
    except ImportError:  # imported from the envcheck package (the host's tests)
        from envcheck.smoke.workload import classifier, training


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
        config.enable_use_gpu(256, training.device_index(device))
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
