"""The recorded package versions a fix may pin (envcheck/verdict/known_packages.toml) and the
script that refreshes them (scripts/refresh_packages.py), against a fake PyPI on loopback."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envcheck.matrix.toml import tomllib
from envcheck.verdict import known_packages as kp
from tests.paths import ROOT
from tests.servers import Answer, FakeRegistry, free_port

SCRIPT = ROOT / "scripts" / "refresh_packages.py"


def script_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("refresh_packages", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the file envcheck reads -----------------------------------------------------------------------
def test_the_shipped_file_loads_whole_with_every_name_the_script_asks_for() -> None:
    known = kp.load_known_packages(kp.FILE)
    assert known.problem is None and known.refreshed
    assert set(script_module().PYPI) <= set(known.pypi)
    assert known.exists("paddlepaddle", "3.3.1") and known.indexes


def test_the_script_refreshes_the_file_envcheck_reads() -> None:
    # It wrote envcheck/known_packages.toml, which nothing reads.
    assert script_module().FILE == kp.FILE


DAMAGED = {
    "missing": None,
    "not-toml": b'refreshed = "2026-11-24\n[pypi',
    "not-utf8": b'refreshed = "\xff"\n',
    "no-index": b'refreshed = "2026-11-24"\n[pypi."paddlepaddle"]\nversions = ["3.3.1"]\n',
    "versions-a-number": b'refreshed = "x"\n[pypi."paddlepaddle"]\nversions = 3\n[index]\n',
    "pins-of-numbers": b'refreshed = "x"\n[pypi]\n[index."https://i/"]\npins = [1, 2]\n',
    "refreshed-a-date": b"refreshed = 2026-11-24\n[pypi]\n[index]\n",
    "empty": b"",
}


@pytest.mark.parametrize("content", list(DAMAGED.values()), ids=list(DAMAGED))
def test_a_missing_or_damaged_file_is_known_as_nothing_never_a_traceback(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "known_packages.toml"
    if content is not None:
        path.write_bytes(content)
    known = kp.load_known_packages(path)
    assert known.problem is not None and known.problem.startswith(f"{path}: ")
    assert (known.pypi, known.indexes) == ({}, {})
    assert not known.exists("paddlepaddle", "3.3.1")
    assert known.newest("nvidia-cudnn-cu12", "9.") is None


# -- the script --------------------------------------------------------------------------------
INDEX = "/packages/stable/cu126/"


def pypi_doc(*versions: str) -> bytes:
    return json.dumps(
        {"releases": {v: [{"yanked": False, "filename": "x.whl"}] for v in versions}}
    ).encode()


@pytest.fixture
def fake_pypi() -> Iterator[dict[tuple[str, str], Answer]]:
    """Routes a test fills; served by a fake PyPI (JSON API and a simple index) on loopback."""
    routes: dict[tuple[str, str], Answer] = {}
    server = FakeRegistry(routes)
    routes[("GET", "addr")] = Answer(body=server.addr.encode())  # for the test to read back
    yield routes
    server.close()


def refresh(
    tmp_path: Path, routes: dict[tuple[str, str], Answer] | None, *extra: str
) -> subprocess.CompletedProcess[str]:
    addr = routes[("GET", "addr")].body.decode() if routes else f"127.0.0.1:{free_port()}"
    matrix = tmp_path / "paddle.toml"
    pip = f"python -m pip install paddlepaddle-gpu==3.3.1 -i http://{addr}{INDEX}"
    matrix.write_text(f'[[build]]\npip = "{pip}"\n')
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--pypi", f"http://{addr}/pypi", "--matrix", str(matrix)]
        + ["--output", str(tmp_path / "known.toml"), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_version_holding_a_quote_is_written_as_toml_that_reads_back(
    tmp_path: Path, fake_pypi: dict[tuple[str, str], Answer]
) -> None:
    odd = ['1.0"evil', "2.0\\x", "3.0\x1b[2J", "4.0\x7f"]
    fake_pypi[("GET", "/pypi/")] = Answer(body=pypi_doc("3.3.1", *odd))
    page = b'<a href="x">paddlepaddle_gpu-3.3.1-cp311-cp311-linux_x86_64.whl</a>'
    fake_pypi[("GET", INDEX)] = Answer(body=page, content_type="text/html")
    run = refresh(tmp_path, fake_pypi)
    assert run.returncode == 0, run.stderr
    written = tomllib.loads((tmp_path / "known.toml").read_text(encoding="utf-8"))
    assert sorted(written["pypi"]["paddlepaddle"]["versions"]) == sorted(["3.3.1", *odd])
    index = next(iter(written["index"].values()))
    assert index["pins"] == ["paddlepaddle-gpu==3.3.1"] and index["how"] == "simple API"
    assert kp.load_known_packages(tmp_path / "known.toml").problem is None


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (None, "PyPI did not answer for nvidia-cudnn-cu11 (http://127.0.0.1:"),
        (Answer(body=b"<html><body>Sign in</body></html>", content_type="text/html"),
         "is not JSON: '<html><body>Sign in</body></html>'"),
        (Answer(body=b'{"info": {}}'), "has no `releases` object"),
        (Answer(body=b"[1, 2]"), "has no `releases` object"),
        (Answer(body=b'{"releases": []}'), "has no `releases` object"),
        (Answer(status=503, body=b"down"), "PyPI did not answer for nvidia-cudnn-cu11"),
    ],
    ids=["offline", "html", "no-releases", "a-list", "releases-a-list", "http-503"],
)  # fmt: skip
def test_pypi_offline_or_not_its_json_is_one_line_exit_4_and_nothing_written(
    tmp_path: Path, fake_pypi: dict[tuple[str, str], Answer], answer: Answer | None, words: str
) -> None:
    (tmp_path / "known.toml").write_text("before\n")
    if answer is not None:
        fake_pypi[("GET", "/pypi/")] = answer
    run = refresh(tmp_path, fake_pypi if answer is not None else None)
    assert run.returncode == 4 and "Traceback" not in run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith("refresh_packages: error: ") and line.endswith("; nothing written")
    assert words in line
    assert (tmp_path / "known.toml").read_text() == "before\n"
    assert {p.name for p in tmp_path.iterdir()} == {"known.toml", "paddle.toml"}
