"""Files envcheck opens on its own are opened only if they are regular files, never waited on
(a FIFO blocks an open forever), and the files it appends to for GitHub are never written
through a link nor left with a cut-off table.

A FIFO planted where a file should be used to hang the run forever: each case runs in a process
of its own, whose timeout only turns such a hang into a failure (nothing here measures speed).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.contracts.errors import EnvcheckError
from envcheck.edges.userfiles import append_output
from envcheck.regular import read_regular
from tests import report_samples as samples
from tests.inprocess import ENV, envcheck_process
from tests.paddle_versions import VERSION_331_CU126, make_site

HANG = 60  # seconds: far past any of these runs; reaching it is the bug


def _doctor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    run = envcheck_process(
        "doctor", "--no-smoke", "--json", *args, env={**ENV, **env}, timeout=HANG
    )
    assert "Traceback" not in run.stderr, run.stderr
    return run


def test_read_regular_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file: a FIFO"):
        read_regular(fifo, 1024)


def test_read_regular_bounds_the_size(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(OSError, match="larger than 1024 bytes"):
        read_regular(big, 1024)
    assert read_regular(big, 2048) == b"x" * 2048


def test_a_fifo_at_the_paddle_version_file_is_an_error_fact(tmp_path: Path) -> None:
    site = make_site(tmp_path, VERSION_331_CU126, "paddlepaddle_gpu-3.3.1")
    version_file = site / "paddle" / "version" / "__init__.py"
    version_file.unlink()
    os.mkfifo(version_file)
    python = tmp_path / "python"
    answer = {"prefix": str(tmp_path), "path": [str(site)], "version": "3.11.2"}
    python.write_text(
        f"#!{sys.executable}\nimport json\nprint('envcheck-interpreter:' + json.dumps({answer!r}))\n"
    )
    python.chmod(0o755)
    doc = json.loads(_doctor("--python", str(python), env={}).stdout)
    paddle = doc["host"]["paddle"]
    assert paddle["status"] == "error" and "not a regular file" in paddle["reason"]


def _fifo_config(tmp_path: Path) -> Path:
    config = tmp_path / "docker-config"
    config.mkdir()
    os.mkfifo(config / "config.json")
    return config


@pytest.mark.parametrize(
    "extra",
    [{}, {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}, {"DOCKER_CONTEXT": "other"}],
    ids=["default", "docker-host", "docker-context"],
)
def test_a_fifo_at_the_docker_client_config_is_refused(
    tmp_path: Path, extra: dict[str, str]
) -> None:
    """The docker SDK opens config.json whatever chose the engine: refused before any client."""
    env = {"DOCKER_CONFIG": str(_fifo_config(tmp_path)), **extra}
    run = _doctor(env={"DOCKER_HOST": "", **env})
    assert "config.json" in run.stdout + run.stderr and "not a regular file" in run.stdout


def test_a_fifo_at_a_contexts_meta_json_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "docker-config"
    meta = config / "contexts" / "meta" / hashlib.sha256(b"planted").hexdigest()
    meta.mkdir(parents=True)
    os.mkfifo(meta / "meta.json")
    run = _doctor(
        env={"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "planted", "DOCKER_HOST": ""}
    )
    assert "meta.json" in run.stdout and "not a regular file" in run.stdout


def test_a_fifo_among_a_folders_reports_is_named_and_the_rest_merged(tmp_path: Path) -> None:
    report = samples.healthy()
    (tmp_path / "gpu-node-1.json").write_text(json.dumps(report.to_json()), encoding="utf-8")
    os.mkfifo(tmp_path / "planted.json")
    run = envcheck_process("report", str(tmp_path), timeout=HANG)
    assert run.returncode == 2, run.stderr
    assert "planted.json" in run.stderr and "not a regular file" in run.stderr
    assert "gpu-node-1" in run.stdout


@pytest.mark.parametrize("variable", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"])
def test_a_github_file_that_is_a_fifo_nobody_reads_is_not_waited_on(
    tmp_path: Path, variable: str
) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(samples.healthy().to_json()), encoding="utf-8")
    fifo = tmp_path / "github-file"
    os.mkfifo(fifo)
    env = {"GITHUB_ACTIONS": "true", variable: str(fifo)}
    run = _doctor("--facts", str(facts), env=env)
    assert json.loads(run.stdout)["exit_code"] == run.returncode
    assert "nothing is reading" in run.stderr


@pytest.mark.parametrize("what", ["the step summary", "the step outputs"])
def test_a_github_file_is_never_appended_through_a_link(tmp_path: Path, what: str) -> None:
    """`$GITHUB_STEP_SUMMARY -> ~/.bashrc` appended Markdown to the link's target."""
    target = tmp_path / "not-ours"
    target.write_text("keep\n")
    link = tmp_path / "summary.md"
    link.symlink_to(target)
    with pytest.raises(EnvcheckError, match="symbolic link"):
        append_output(str(link), "| table |\n", what=what)
    assert target.read_text() == "keep\n"


def test_a_full_disk_leaves_the_step_summary_as_it_was(tmp_path: Path) -> None:
    """ENOSPC midway left a cut-off table in `$GITHUB_STEP_SUMMARY`. A small tmpfs is
    not ours to mount here; `RLIMIT_FSIZE` fails the write the same way partway (EFBIG)."""
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step\n")
    code = (
        "import resource, signal, sys\n"
        "from envcheck.edges.userfiles import append_output\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))\n"
        "try:\n"
        f"    append_output({str(summary)!r}, '| row |\\n' * 50_000, what='the step summary')\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=HANG,
        check=False,
    )
    assert "cannot write the step summary" in run.stdout, run.stdout + run.stderr
    assert summary.read_text() == "## earlier step\n"


# -- files a user names: regular files only, never waited on -----------------------------------


def _matrix_with_a_fifo(tmp_path: Path) -> Path:
    from tests.paths import ROOT

    matrix = tmp_path / "matrix"
    matrix.mkdir()
    for source in (ROOT / "matrix").glob("*.toml"):
        (matrix / source.name).write_bytes(source.read_bytes())
    (matrix / "images.toml").unlink()
    os.mkfifo(matrix / "images.toml")
    return matrix


def test_a_fifo_named_as_a_matrix_toml_is_exit_2_not_a_hang(tmp_path: Path) -> None:
    """`path.read_bytes()` of a FIFO in the matrix folder waited for a writer forever."""
    matrix = _matrix_with_a_fifo(tmp_path)
    run = _doctor("--matrix", str(matrix), env={"ENVCHECK_CACHE_DIR": ""})
    assert run.returncode == 2, run.stderr
    assert "images.toml: cannot read: not a regular file: a FIFO" in run.stderr


@pytest.mark.parametrize(
    "flag",
    [("doctor", "--facts"), ("doctor", "--baseline"), ("report",), ("report", "--expect-hosts")],
    ids=["facts", "baseline", "report", "expect-hosts"],
)
def test_a_fifo_a_user_names_is_exit_2_not_a_hang(tmp_path: Path, flag: tuple[str, ...]) -> None:
    """Nothing writes to it: opened blocking, `doctor --facts FIFO` waited forever."""
    fifo = tmp_path / "named.json"
    os.mkfifo(fifo)
    report = tmp_path / "gpu-node-1.json"
    report.write_text(json.dumps(samples.healthy().to_json()), encoding="utf-8")
    if flag[0] == "doctor":
        extra = ("--facts", str(report)) if flag[1] == "--baseline" else ()
        run = _doctor(*extra, *flag[1:], str(fifo), env={})
    else:
        args = (
            ("report", str(fifo)) if len(flag) == 1 else ("report", str(report), flag[1], str(fifo))
        )
        run = envcheck_process(*args, timeout=HANG)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "named.json" in run.stderr and "not a regular file: a FIFO" in run.stderr
