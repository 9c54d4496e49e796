"""What the fix's transaction tests share (tests/integration/test_fix_transaction.py and the
journal's and pip steps' tests beside it): local indexes, a template venv with the real CPU wheel,
the environment's files, and the fix run as a process (held at a phase by ENVCHECK_FIX_PAUSE).
Fixtures are loaded with `pytest_plugins = ("tests.fix_transactions",)`; a test file never imports
another test file."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.fix.runner import journal
from tests import fix_env
from tests.inprocess import ENV, run_envcheck

CPU_INDEX = "packages/stable/cpu"
PY = sys.executable
ARGS = ("--paddle", "3.3.1", "--no-pull")


@pytest.fixture(scope="module")
def stub_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Paddle's index layout holding an empty `paddlepaddle==3.3.1`: installs in a second, and
    its smoke cannot train (there is no `paddle` in it)."""
    root = tmp_path_factory.mktemp("stub-index")
    stub = fix_env.stub_wheel(root / "wheels", "paddlepaddle", "3.3.1")
    fix_env.build_index(root, CPU_INDEX, [stub])
    return root


@pytest.fixture(scope="module")
def stub_index(stub_root: Path) -> Iterator[str]:
    with fix_env.serve(stub_root) as url:
        yield url


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("real-index")
    fix_env.build_index(root, CPU_INDEX, fix_env.wheels())
    with fix_env.serve(root) as url:
        yield url


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the real Paddle CPU build and a stub `paddlepaddle-gpu` (both builds: the
    plan removes both), built once; each case gets a linked copy."""
    where = tmp_path_factory.mktemp("template") / "venv"
    python = fix_env.make_venv(where)
    folder = Path(fix_env.WHEELS)
    fix_env.pip(python, "install", "--no-index", "--find-links", str(folder), "paddlepaddle")
    gpu = fix_env.stub_wheel(where.parent / "stub", "paddlepaddle-gpu", "3.3.1")
    fix_env.pip(python, "install", "--no-deps", str(gpu))
    gpu.unlink()  # installed from a local wheel that is gone: no index could bring it back
    return where


def linked_copy(template: Path, where: Path) -> str:
    """The template at `where`, its files hard links (pip and the fix replace files, never write
    into them, so the template stays as it is)."""
    subprocess.run(["cp", "-al", str(template), str(where)], check=True)
    return str(where / "bin" / "python")


def files(venv: Path) -> dict[str, str]:
    """Every file of the venv and its sha256 (byte code and the fix's own folder aside)."""
    found = {}
    for path in sorted(venv.rglob("*")):
        rel = path.relative_to(venv).as_posix()
        if rel.startswith(journal.FOLDER) or "__pycache__" in rel:
            continue
        if path.is_dir() and not path.is_symlink():
            found[rel] = "folder"
        elif path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def variables(tmp_path: Path, index: str, **more: str) -> dict[str, str]:
    return ENV | {
        "ENVCHECK_PADDLE_INDEX": index,
        "PIP_CACHE_DIR": str(tmp_path / "pip-cache"),
        **more,
    }


def configured(env: dict[str, str], index: str) -> dict[str, str]:
    """pip's own configuration replaced by `index` alone: no pip.conf, no find-links, no PyPI."""
    mine = {k: v for k, v in env.items() if k not in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL")}
    return mine | {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": index}


def fix(env: dict[str, str], python: str, *args: str) -> tuple[int, dict[str, Any], str]:
    run = run_envcheck(["fix", "--json", "--quiet", "--python", python, *ARGS, *args], env=env)
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, json.loads(run.stdout), run.stderr


def fix_paused(env: dict[str, str], python: str, phase: str, *args: str) -> subprocess.Popen[str]:
    """`fix --yes` in a process of its own, returned once it says it is held at `phase`."""
    proc = subprocess.Popen(
        [PY, "-m", "envcheck", "fix", "--json", "--quiet", "--python", python, *ARGS, *args],
        env=env | {"ENVCHECK_FIX_PAUSE": phase},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.strip() == f"envcheck fix: paused at {phase}":
            return proc
    proc.wait(timeout=60)
    raise AssertionError(f"never paused at {phase}: {''.join(seen)}")


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in err, err
    return proc.returncode, out, err


# another user who may read everything (this machine's Pythons live under /root) and write nothing
AS_NOBODY = (
    "setpriv",
    "--reuid=nobody",
    "--regid=nogroup",
    "--clear-groups",
    "--inh-caps=+dac_read_search",
    "--ambient-caps=+dac_read_search",
)
