"""Saved facts documents: well-typed but invalid values are named with their path (exit 2), never
a traceback deep in the judge."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from envcheck.commands.doctor import read_facts_document
from envcheck.contracts.errors import UsageError
from envcheck.contracts.facts import FactsError, HostFacts, host_from_document, to_dict
from tests import report_samples as samples
from tests.inprocess import envcheck, process_env
from tests.scenarios import write


def good() -> dict[str, Any]:
    doc: dict[str, Any] = to_dict(samples.host())
    doc["cudnn"]["candidates"] = [
        {"path": "/opt/libcudnn.so.9", "version": "9.5.1", "origin": "pip"}
    ]
    return doc


def changed(path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(good())
    *parents, last = path.split(".")
    node: Any = doc
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return doc


INVALID = [
    ("gpus.0.compute_capability", "x", "host.gpus[0].compute_capability: not a compute capability"),
    ("paddle.cuda", "abc", "host.paddle.cuda: not a dotted version"),
    ("paddle.version", "three", "host.paddle.version"),
    ("driver.version", "535.x", "host.driver.version: not a dotted version"),
    ("driver.cuda", "", "host.driver.cuda"),
    ("cudnn.candidates.0.path", KeyError, "host.cudnn.candidates[0].path: missing"),
    ("cudnn.version", "nine", "host.cudnn.version"),
    ("gpus.0.index", -1, "host.gpus[0].index: expected a number >= 0 and < 2\\*\\*63"),
    ("paddle.compiled_cuda_archs", [80, -90], "host.paddle.compiled_cuda_archs"),
    ("paddle.cuda", float("nan"), "host.paddle.cuda: expected a string"),
    ("gpus.0.memory_total_mib", 10**40, "host.gpus[0].memory_total_mib"),
    ("driver.status", "x" * 500, "host.driver.status: expected one of"),
    (
        "cudnn.origin",
        "conda",
        "host.cudnn.origin: expected one of pip, LD_LIBRARY_PATH, system, cuda-home, got 'conda'",
    ),
    ("cudnn.candidates.0.origin", "PIP", "host.cudnn.candidates[0].origin: expected one of"),
    ("cudnn.candidates.0.origin", None, "host.cudnn.candidates[0].origin: expected one of"),
]


@pytest.mark.parametrize(
    ("path", "value", "says"), INVALID, ids=[f"{p}={v!r:.12}" for p, v, _ in INVALID]
)
def test_an_invalid_value_is_named_with_its_path(path: str, value: Any, says: str) -> None:
    with pytest.raises(FactsError, match=says.replace("[", r"\[").replace("]", r"\]")) as e:
        host_from_document(changed(path, value))
    assert len(str(e.value)) < 200  # one line, whatever the value's size


def test_the_good_document_round_trips() -> None:
    assert host_from_document(good()) == from_good()


def from_good() -> HostFacts:
    return host_from_document(to_dict(host_from_document(good())))


def test_read_facts_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, changed("paddle.cuda", "abc"))
    with pytest.raises(UsageError, match=f"facts file {path}: host.paddle.cuda"):
        read_facts_document(path, process_env())


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\xff\xfe{}", "is not UTF-8"),
        (b"[" * 50_000, "nested too deeply"),
        (b'{"gpus": [{"index": ' + b"7" * 4301 + b"}]}", "Exceeds the limit"),
    ],
    ids=["not-utf8", "deep", "huge-int"],
)
def test_doctor_on_a_hostile_facts_file_is_exit_2_without_traceback(
    tmp_path: Path, content: bytes, says: str
) -> None:
    path = tmp_path / "facts.json"
    path.write_bytes(content)
    r = envcheck("doctor", "--facts", str(path), "--no-smoke")
    assert r.returncode == 2 and says in r.stderr and str(path) in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("gpus.0.compute_capability", "x", "host.gpus[0].compute_capability"),
        ("cuda_runtime.origin", "vendor", "host.cuda_runtime.origin: expected one of"),
    ],
    ids=["cc", "library-origin"],
)
def test_doctor_on_an_invalid_value_is_exit_2_naming_file_and_field(
    tmp_path: Path, field: str, value: str, named: str
) -> None:
    path = write(tmp_path, changed(field, value))
    r = envcheck("doctor", "--facts", path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"facts file {path}: {named}" in r.stderr


def test_closed_stdin_with_facts_from_stdin_is_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.inprocess import ENV

    closed_stdin = (
        "import os, sys; os.close(0); from envcheck.cli import main; "
        "sys.exit(main(['doctor', '--facts', '-']))"
    )
    r = subprocess.run(
        [sys.executable, "-c", closed_stdin],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        check=False,
    )
    assert r.returncode == 2 and "facts file - (stdin)" in r.stderr and "Traceback" not in r.stderr
