"""The house rules that a machine can check: ruff check and ruff format over the tree, mypy --strict
over envcheck/, tests/, bench/ and scripts/ (the `files` of pyproject.toml's [tool.mypy])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_ruff_is_clean() -> None:
    done = run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_is_clean_on_the_package_tests_and_scripts() -> None:
    done = run("mypy", "--no-incremental")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_clean() -> None:
    """`ruff format` is the house's one layout (the smoke workload keeps Python 3.8 syntax and is
    excluded in pyproject.toml)."""
    done = run("ruff", "format", "--check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr
