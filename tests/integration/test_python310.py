"""envcheck on Python 3.10, the Python inside Paddle's official images (compat_facts §3b), where a
CI job or a Kubernetes pod runs it: installed from the source tree into a fresh 3.10 venv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT


def find_python310() -> str | None:
    """$PYTHON310, else a real 3.10 (pyenv's shims answer "command not found" for versions not
    selected, so they are not asked)."""
    if os.environ.get("PYTHON310"):
        return os.environ["PYTHON310"]
    candidates = sorted(Path.home().glob(".pyenv/versions/3.10*/bin/python3.10"))
    candidates += [Path(p) for p in ("/usr/bin/python3.10", "/usr/local/bin/python3.10")]
    return next((str(c) for c in candidates if c.is_file()), None)


@pytest.fixture(scope="module")
def envcheck310(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = find_python310()
    if python is None:
        pytest.fail(
            "no Python 3.10: this machine kind ships one under pyenv; elsewhere set PYTHON310"
        )
    venv = tmp_path_factory.mktemp("py310") / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(ROOT)],
        check=True,
        timeout=600,
        capture_output=True,
    )
    return venv / "bin" / "envcheck"


def test_doctor_with_an_in_process_smoke_of_another_interpreter(envcheck310: Path) -> None:
    """envcheck on 3.10 judges and smoke-trains the Paddle of this 3.11 venv (`--python`)."""
    run = subprocess.run(
        [str(envcheck310), "doctor", "--json", "--in-process", "--python", sys.executable],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert (
        doc["host"]["paddle"]["version"] == "3.3.1"
        and doc["host"]["paddle"]["python"] == sys.executable
    )
    assert {f["id"]: f["severity"] for f in doc["findings"]}["smoke.pass"] == "pass"


def test_pull_image_dry_run(envcheck310: Path) -> None:
    run = subprocess.run(
        [str(envcheck310), "pull-image", "--dry-run", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["reference"].startswith("docker.io/paddlepaddle/paddle:3.3.1")


def test_fleet_reads_the_doctors_trailing_z_timestamps(envcheck310: Path) -> None:
    """`meta.generated_at` ends in Z; 3.10's fromisoformat refuses that, which lost the time of
    every report (the fleet's newest-per-host, the baseline's `created`, JUnit's timestamp)."""
    python = envcheck310.with_name("python")
    code = "from envcheck.contracts.saved_report import report_time; print(report_time({'generated_at': '2024-05-01T10:00:00Z'}))"
    run = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "2024-05-01 10:00:00+00:00"
