"""Reading the workload's output: the bounds, the strict one-JSON-line contract, Paddle's lines."""

from __future__ import annotations

import json
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.smoke.parse import (
    MAX_STDOUT,
    BadOutput,
    OutputCollector,
    log_tail,
    parse_result,
)
from envcheck.smoke.workload.protocol import LibrarySource, scan_paddle_warnings
from tests import smoke_samples as rec


@pytest.mark.parametrize(
    "line",
    [rec.RECORDED_CPU_PASS, rec.RECORDED_CPU_BUILD_ASKED_GPU],
    ids=["cpu", "cpu-build-asked-gpu"],
)
def test_recorded_lines_parse(line: str) -> None:
    doc = parse_result(line.encode() + b"\n")
    assert doc.runs[0].device_used == "cpu" and doc.uid == 1000


def _mapped(source: object) -> bytes:
    """A result whose one mapped library says it came from `source`."""
    lib = {
        "name": "libcudnn",
        "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9",
        "source": source,
        "call": "cudnnGetVersion",
        "raw": 91400,
        "call_error": None,
    }
    return json.dumps(rec.result() | {"loaded_libraries": [lib]}).encode()


def _mutated(**changes: object) -> bytes:
    doc = rec.result()
    doc["runs"][0].update(changes)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        (b"", "printed nothing on stdout"),
        (b"  \n\n", "printed nothing on stdout"),
        (b"hello\n" + rec.RECORDED_CPU_PASS.encode(), "printed 2 lines on stdout"),
        (b"Traceback (most recent call last):", "stdout is not JSON"),
        (b"[1, 2]", "not an object: list"),
        (b'{"schema": "other/1", "error": null, "runs": [], "warnings": []}', "unknown schema"),
        (  # another version's runs are not walked with this version's types first
            (
                b'{"schema": "envcheck-smoke/2", "error": null, "runs": [{"device": "gpu:0"}],'
                b' "warnings": []}'
            ),
            "unknown schema 'envcheck-smoke/2'",
        ),
        (
            rec.RECORDED_CPU_PASS.replace('"loss_end":0.21678', '"loss_end":NaN').encode(),
            "non-finite number NaN",
        ),
        (_mutated(steps=True), "runs[0].steps: expected an integer, got True"),
        (_mutated(param_places={}), "non-empty object of strings"),
        (_mutated(losses=[0.6, "x"]), "runs[0].losses[1]: expected a number, got 'x'"),
        (
            json.dumps(
                {k: v for k, v in rec.result().items() if k != "compiled_with_cuda"}
            ).encode(),
            "result: missing 'compiled_with_cuda'",
        ),
        (
            json.dumps(rec.result() | {"shm": {"size_bytes": "64m", "free_bytes": 0}}).encode(),
            "shm.size_bytes: expected an integer, got '64m'",
        ),
        (
            _mapped("vendor"),
            (
                "result.loaded_libraries[0].source: expected one of pip, LD_LIBRARY_PATH, system, "
                "cuda-home, compat, conda, got 'vendor'"
            ),
        ),
        (_mapped(None), "result.loaded_libraries[0].source: expected one of"),
        (_mapped(["pip"]), "loaded_libraries[0].source: expected one of pip, LD_LIBRARY_PATH"),
    ],
    ids=[
        "empty",
        "blank",
        "two-lines",
        "traceback",
        "array",
        "schema",
        "next-schema",
        "nan",
        "bool-steps",
        "no-places",
        "string-loss",
        "missing-key",
        "shm-size-text",
        "unknown-library-source",
        "null-library-source",
        "list-library-source",
    ],
)
def test_anything_but_the_one_json_line_is_bad_output(stdout: bytes, message: str) -> None:
    with pytest.raises(BadOutput) as caught:
        parse_result(stdout)
    assert message in str(caught.value)


def test_the_workload_spells_the_library_sources_as_the_records_do() -> None:
    """The workload's standalone copy (it runs where envcheck is not installed) and the records'
    own, kept apart so that the doctor's static tier never imports the smoke."""
    from envcheck.contracts import smoke_result

    assert get_args(smoke_result.LibrarySource) == get_args(LibrarySource)


@pytest.mark.parametrize("source", get_args(LibrarySource))
def test_every_library_source_the_workload_writes_parses(source: str) -> None:
    libraries = parse_result(_mapped(source)).loaded_libraries
    assert libraries is not None and libraries[0].source == source


def test_a_failed_run_needs_only_its_error() -> None:
    doc = rec.result()
    doc["runs"][0] = {
        "device_requested": "gpu:0",
        "device_used": "gpu:0",
        "device_error": None,
        "error": {"type": "OSError", "message": rec.DRIVER_TOO_OLD},
    }
    error = parse_result(json.dumps(doc).encode()).runs[0].error
    assert error and error.type == "OSError"


@given(st.binary(max_size=2000))
def test_arbitrary_bytes_are_a_result_or_bad_output_never_a_traceback(stdout: bytes) -> None:
    try:
        parse_result(stdout)
    except BadOutput:
        pass


@given(st.integers(min_value=0, max_value=len(rec.RECORDED_CPU_PASS) - 1))
def test_every_truncation_of_a_real_line_is_bad_output(cut: int) -> None:
    with pytest.raises(BadOutput):
        parse_result(rec.RECORDED_CPU_PASS[:cut].encode())


def test_collector_keeps_at_most_the_bound_and_flags_the_overflow() -> None:
    sink = OutputCollector()
    for _ in range(40):
        sink.feed_stdout(b"x" * 65536)  # 2.5 MiB
    assert len(sink.stdout()) == MAX_STDOUT and sink.stdout_bytes == 40 * 65536
    assert sink.overflow.is_set()


def test_collector_keeps_only_the_tail_of_stderr() -> None:
    sink = OutputCollector(stderr_tail=100)
    for i in range(1000):
        sink.feed_stderr(f"line {i}\n".encode())
    assert sink.stderr().endswith("line 999\n") and len(sink.stderr()) == 100


def test_log_tail_strips_paddles_colours_and_blank_lines() -> None:
    text = "\x1b[1m\x1b[35m--- Running PIR pass [inplace_pass]\x1b[0m\n\n" + "x" * 500 + "\n"
    assert log_tail(text) == ["--- Running PIR pass [inplace_pass]", "x" * 300]


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (rec.VERSIONS_LINE, "versions"),
        (
            "I0101 00:00:00.0 1 gpu_resources.cc:120] device: 0, cuDNN Version: 9.5.",
            "cudnn-version",
        ),
        (rec.CUDA_MISMATCH, "cuda-mismatch"),
        (rec.CUDNN_MISMATCH, "cudnn-mismatch"),
        (rec.ARCH_MISMATCH, "arch-mismatch"),
        (
            "OSError: (External) CUDA error(209), no kernel image is available for execution on the device.",
            "arch-mismatch",
        ),
        (rec.NO_GPU_EMPTY_CVD, "no-gpu"),
        (rec.NO_DEVICE, "no-gpu"),
        ("Cannot use GPU because you have installed CPU version PaddlePaddle.", "cpu-build"),
        (
            "ValueError: The device should not be 'gpu', since PaddlePaddle is not compiled with CUDA",
            "cpu-build",
        ),
        (rec.DRIVER_TOO_OLD, "driver-error"),
        (
            (
                "The third-party dynamic library (libcudnn.so) that Paddle depends on is not "
                "configured correctly. (error code is libcudnn.so: cannot open shared object file)"
            ),
            "library-missing",
        ),
        (
            "cublas bf16 gemm requires GPU compute capability >= 80,but received 75",
            "bf16-unsupported",
        ),
        (
            (
                "UserWarning: amp_guard can only be enabled on CUDAPlace, XPUPlace, and "
                "CustomPlace, current place is Place(cpu), so it makes no effect."
            ),
            "amp-no-effect",
        ),
        ("OSError: (External) CUDA error(2), out of memory.", "cuda-error"),
    ],
    ids=lambda v: v if len(v) < 30 else None,
)
def test_paddle_lines_are_recognised(line: str, kind: str) -> None:
    assert [w["kind"] for w in scan_paddle_warnings(line)] == [kind]


def test_ordinary_noise_is_not_a_warning_and_repeats_are_reported_once() -> None:
    text = "\n".join(
        [
            rec.CCACHE_WARNING,
            "envcheck-smoke: training on cpu",
            rec.CUDA_MISMATCH,
            rec.CUDA_MISMATCH,
        ]
    )
    assert [w["kind"] for w in scan_paddle_warnings(text)] == ["cuda-mismatch"]


def test_stdout_nested_past_the_recursion_limit_is_bad_output() -> None:
    """`[[[[…` a hundred thousand deep was a RecursionError out of the smoke."""
    with pytest.raises(BadOutput, match="nested too deeply"):
        parse_result(b"[" * 100_000 + b"]" * 100_000)


def test_the_host_stamps_when_it_started_and_reaped_the_run() -> None:
    """The interval a training window must lie in, on the clock the window uses: a window stamped
    elsewhere proves nothing about this run."""
    import time

    from envcheck.contracts.smoke_report import NvmlSummary
    from envcheck.contracts.smoke_result import TrainWindow
    from envcheck.smoke.parse import OutputCollector
    from envcheck.smoke.runner.check import outcome_of

    before = time.time()
    raw = OutputCollector().raw_run(0, time.monotonic(), timed_out=False)
    assert raw.started_at is not None and raw.ended_at is not None
    assert before - 1 <= raw.started_at <= raw.ended_at <= time.time()
    nvml = outcome_of(raw, NvmlSummary(status="unavailable")).nvml
    assert nvml.run_window == TrainWindow(raw.started_at, raw.ended_at)


def test_a_number_past_a_floats_range_is_bad_output() -> None:
    """A fault campaign's find: `max_abs_diff: 1e400` written as an integer raised OverflowError."""
    doc = rec.on_gpu(rec.result())
    doc["runs"][0]["checks"][0]["max_abs_diff"] = 10**400
    with pytest.raises(BadOutput, match="not a finite number"):
        parse_result(json.dumps(doc).encode())


# -- the one reader's rules the workload's line relies on ----------------------------------------
def test_an_optional_key_absent_is_none_and_none_is_written_absent() -> None:
    """An error from an older workload, without `phase` or `traceback`: read as None, and written
    back as the workload wrote it, without them."""
    from envcheck.contracts.facts import from_dict, to_dict
    from envcheck.contracts.smoke_result import WorkloadError

    doc = {"type": "OSError", "message": "CUDA error(35)"}
    error = from_dict(WorkloadError, doc, "error", numbers_as_text=False)
    assert (error.phase, error.traceback, error.thread_errors) == (None, None, None)
    assert to_dict(error) == doc


def test_a_number_is_kept_as_written_and_a_variant_is_told_by_its_keys() -> None:
    """`max_abs_diff: 0` stays 0 (the report repeats the workload's line); compare_cpu is the
    variant whose keys are there: skipped, compared, or failed on its own."""
    from envcheck.contracts.facts import to_dict
    from envcheck.contracts.smoke_result import CpuCompared, CpuSkipped, ExtraFailed

    doc = rec.result()
    doc["runs"][0]["checks"][0]["max_abs_diff"] = 0
    run = parse_result(json.dumps(doc).encode()).runs[0]
    assert run.checks and to_dict(run.checks[0])["max_abs_diff"] == 0
    assert isinstance(run.compare_cpu, CpuSkipped)
    compared = {
        "steps_per_s": 90.5,
        "first_step_s": 0.3,
        "loss_start": 0.69,
        "loss_end": 0.41,
        "speedup": 9.0,
        "skipped": None,
        "error": None,
    }
    failed = {"error": {"phase": "compare-cpu", "type": "OSError", "message": "m"}}
    for written, variant in ((compared, CpuCompared), (failed, ExtraFailed)):
        doc["runs"][0]["compare_cpu"] = written
        read = parse_result(json.dumps(doc).encode()).runs[0].compare_cpu
        assert isinstance(read, variant) and to_dict(read) == written


def test_a_time_series_row_has_its_three_values() -> None:
    from envcheck.contracts.facts import FactsError, from_dict
    from envcheck.contracts.smoke_report import GpuSummary

    row = from_dict(GpuSummary, {"series": [[1.5, 30, None]]}, "gpu", numbers_as_text=False)
    assert row.series == ((1.5, 30, None),)
    with pytest.raises(FactsError, match=r"gpu.series\[0\]: expected 3 items, got 2"):
        from_dict(GpuSummary, {"series": [[1.5, 30]]}, "gpu", numbers_as_text=False)
