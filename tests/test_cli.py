"""The CLI as users and CI call it: a subprocess, its stdout, stderr and exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import scenarios as s

pytest_plugins = ("tests.fakenv",)  # fake_nvidia: the no-driver host, whatever this machine has

ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "NO_COLOR")
}


def envcheck(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env or ENV,
        timeout=timeout,
        check=False,
    )


def write(tmp_path: Path, doc: Any, name: str = "facts.json") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_version_and_module_entry_point() -> None:
    from envcheck import __version__

    r = envcheck("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"envcheck {__version__} (paddle-envcheck)"


def test_help_documents_every_exit_code() -> None:
    r = envcheck("doctor", "--help")
    assert r.returncode == 0
    for code in range(7):
        assert f"\n  {code}  " in r.stdout


def test_json_contract_for_a_saved_failing_host(tmp_path: Path) -> None:
    facts = write(
        tmp_path,
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU),
    )
    r = envcheck("doctor", "--facts", facts, "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)  # stdout is exactly one JSON document
    assert doc["schema_version"] == 2 and doc["verdict"] == "fail" and doc["smoke"] is None
    assert (
        doc["host"]["driver"].items()
        >= {"status": "ok", "version": "535.104.05", "cuda": "12.2"}.items()
    )
    assert doc["host"]["gpus"][0]["compute_capability"] == "8.0"
    assert doc["host"]["paddle"]["package"] == "paddlepaddle"
    ids = {f["id"]: f for f in doc["findings"]}
    assert (
        ids["paddle.cpu-build"]["severity"] == "fail"
        and "paddlepaddle-gpu" in ids["paddle.cpu-build"]["fix"]
    )
    assert set(ids["paddle.cpu-build"]) >= {"id", "severity", "message", "fix"}
    assert doc["image"]["ref"].startswith("docker.io/paddlepaddle/paddle:3.3.1-gpu-cuda12")


def test_a_whole_saved_report_is_accepted_as_facts(tmp_path: Path) -> None:
    first = envcheck(
        "doctor",
        "--facts",
        write(tmp_path, s.host(driver={"status": "absent"}, paddle=s.PADDLE_331_CPU)),
        "--json",
    )
    again = envcheck("doctor", "--facts", write(tmp_path, first.stdout, "report.json"), "--json")
    assert again.returncode == first.returncode == 0
    assert json.loads(again.stdout)["host"] == json.loads(first.stdout)["host"]


def test_facts_from_stdin_with_unknown_keys_ignored() -> None:
    doc = s.host(
        driver={"status": "absent", "future_field": 1}, paddle=s.PADDLE_331_CPU, new_layer={}
    )
    r = envcheck("doctor", "--facts", "-", "--json", stdin=json.dumps(doc))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "pass"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"driver": {"version": []}}', "host.driver.version"),
        ('{"gpus": [{"index": "zero"}]}', "host.gpus[0].index"),
        ("[1, 2]", "expected an object"),
    ],
    ids=["garbled", "wrong-type", "wrong-nested-type", "not-an-object"],
)
def test_bad_facts_file_is_one_screen_exit_2(tmp_path: Path, content: str, message: str) -> None:
    r = envcheck("doctor", "--facts", write(tmp_path, content), "--json")
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
    assert json.loads(r.stdout)["error"]["exit"] == 2  # --json: the error document, nothing else
    assert len(r.stderr.splitlines()) <= 5


def test_missing_facts_file(tmp_path: Path) -> None:
    r = envcheck("doctor", "--facts", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "cannot read facts file" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--gpus", "a,b"],
        ["doctor", "--registry", "quay"],
        ["doctor", "--smoke-timeout", "-3"],
        ["doctor", "--bogus"],
        ["doctor", "--paddle", "9.9.9", "--no-smoke"],
    ],
    ids=["gpus", "registry", "timeout", "unknown-flag", "unknown-release"],
)
def test_bad_flags_exit_2_without_traceback(args: list[str]) -> None:
    r = envcheck(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_broken_matrix_override_lists_every_problem(tmp_path: Path) -> None:
    (tmp_path / "gpus.toml").write_text('[[gpu]]\nnames = ["X"]\ncompute_capability = "eight"\n')
    r = envcheck("doctor", "--no-smoke", "--matrix", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "gpus.toml" in r.stderr and "compute_capability" in r.stderr


def test_env_override_of_the_matrix(tmp_path: Path) -> None:
    r = envcheck("doctor", "--no-smoke", env=ENV | {"ENVCHECK_MATRIX": str(tmp_path / "missing")})
    assert r.returncode == 2 and "matrix" in r.stderr


def test_plain_text_report_when_not_a_tty(tmp_path: Path) -> None:
    facts = write(
        tmp_path,
        s.host(
            driver={"status": "error", "error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH"},
            paddle=s.PADDLE_331_CU126,
        ),
    )
    r = envcheck("doctor", "--facts", facts, "--explain")
    assert r.returncode == 1
    assert "\x1b[" not in r.stdout  # no colour codes in a pipe
    assert "FAIL  driver.version-mismatch" in r.stdout and "fix: reboot" in r.stdout
    assert "Verdict: FAIL (exit 1)" in r.stdout


def test_no_driver_no_smoke_json(fake_nvidia: Callable[[str], dict[str, str]]) -> None:
    """No driver (the no-driver profile hides any real one), the .venv's Paddle CPU build."""
    r = envcheck("doctor", "--no-smoke", "--json", env={**ENV, **fake_nvidia("no-driver")})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["host"]["driver"]["status"] == "absent"
    assert (
        doc["host"]["paddle"]["package"] == "paddlepaddle" and doc["host"]["paddle"]["cuda"] is None
    )
    assert doc["image"]["ref"] == "docker.io/paddlepaddle/paddle:3.3.1"
    assert doc["verdict"] in ("pass", "warn")


def test_expect_gpu_without_a_driver_fails(fake_nvidia: Callable[[str], dict[str, str]]) -> None:
    r = envcheck(
        "doctor", "--no-smoke", "--json", "--expect-gpu", env={**ENV, **fake_nvidia("no-driver")}
    )
    assert r.returncode == 1
    ids = {f["id"]: f["severity"] for f in json.loads(r.stdout)["findings"]}
    assert ids["driver.missing"] == "fail"
