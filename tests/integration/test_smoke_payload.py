"""The workload's payload is whole: the script and its modules, placed as the runners place them,
run where envcheck cannot be imported (inside an image, under another interpreter)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.smoke.parse import parse_result
from envcheck.smoke.runner.payload import COMPANIONS, WORKLOAD

# Runs the staged workload as `python workload.py` would, with every `envcheck` import refused.
WITHOUT_ENVCHECK = """
import runpy, sys
sys.modules["envcheck"] = None  # `import envcheck...` raises ImportError from here on
sys.argv = sys.argv[1:]
sys.path.insert(0, sys.argv[0].rpartition("/")[0])
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def stage(folder: Path) -> Path:
    script = folder / "workload.py"
    shutil.copyfile(WORKLOAD, script)
    for source, placed in COMPANIONS:
        shutil.copyfile(source, folder / placed)
    return script


def run_staged(folder: Path, missing: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """Three CPU steps of the staged workload with `envcheck` unimportable (`missing`: one
    module left out of the payload)."""
    script = stage(folder)
    if missing:
        (folder / missing).unlink()
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_ENVCHECK, str(script), "--device", "cpu", "--steps", "3"],
        cwd=folder,
        check=False,
        capture_output=True,
        timeout=180,
    )


@pytest.mark.parametrize(
    "path", [WORKLOAD, *(source for source, _ in COMPANIONS)], ids=lambda p: p.name
)
def test_every_file_of_the_payload_parses_as_python_3_8(path: Path) -> None:
    """Old Paddle images run Python 3.8: a 3.10 construct there is a SyntaxError in the image."""
    ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))


def test_the_placed_names_are_unique_and_never_a_standard_module() -> None:
    placed = [name.removesuffix(".py") for _, name in COMPANIONS]
    assert len(set(placed)) == len(placed)
    assert not set(placed) & sys.stdlib_module_names


def test_the_staged_workload_trains_without_envcheck(tmp_path: Path) -> None:
    proc = run_staged(tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    run = parse_result(proc.stdout).runs[0]
    assert run.device_used == "cpu" and run.error is None
    assert run.checks and all(check.ok for check in run.checks)


@pytest.mark.parametrize("missing", [name for _, name in COMPANIONS])
def test_a_payload_missing_a_module_fails_there(tmp_path: Path, missing: str) -> None:
    """The check above can fail: without one companion, the import falls back to envcheck,
    which is not there."""
    proc = run_staged(tmp_path, missing)
    assert proc.returncode != 0 and b"ModuleNotFoundError" in proc.stderr
