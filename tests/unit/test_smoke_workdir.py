"""The in-process smoke's folder carries who made it, and the next run removes only the folders
whose makers are proven dead (a run killed with SIGKILL could not remove its own): never a live
run's, another user's, another PID namespace's, a link, or one without the marks."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcheck.smoke.runner import workdir


def _here() -> tuple[str, str]:
    here = workdir._boot_and_namespace()
    assert here is not None, "this test runs on Linux with /proc"
    return here


def _name(pid: int, start: str, *, boot: str | None = None, namespace: str | None = None) -> str:
    here = _here()
    return f"{workdir.PREFIX}{boot or here[0]}.{namespace or here[1]}.{pid}.{start}-x1y2z3"


@pytest.fixture
def live() -> Iterator[tuple[int, str]]:
    """A process that lives for the test: its PID and start time."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        start = workdir._start_time(str(proc.pid))
        assert start is not None
        yield proc.pid, start
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def dead() -> tuple[int, str]:
    """A process that lived and is gone (reaped): its PID and start time."""
    proc = subprocess.Popen(["sleep", "300"])
    start = workdir._start_time(str(proc.pid))
    proc.kill()
    proc.wait()
    assert start is not None
    return proc.pid, start


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "workload.py").write_text("print('the smoke')\n")
    return folder


def test_a_folder_of_a_run_that_died_is_removed(tmp_path: Path, dead: tuple[int, str]) -> None:
    folder = _folder(tmp_path, _name(*dead))
    assert workdir.remove_dead_workdirs(str(tmp_path)) == [str(folder)]
    assert not folder.exists()


def test_a_folder_of_a_live_run_is_kept(tmp_path: Path, live: tuple[int, str]) -> None:
    folder = _folder(tmp_path, _name(*live))
    assert workdir.remove_dead_workdirs(str(tmp_path)) == []
    assert (folder / "workload.py").exists()


def test_a_pid_reused_by_another_process_is_a_dead_maker(
    tmp_path: Path, live: tuple[int, str]
) -> None:
    """Same PID, another start time: the maker is gone and someone else holds its PID."""
    pid, start = live
    folder = _folder(tmp_path, _name(pid, str(int(start) - 1)))
    assert workdir.remove_dead_workdirs(str(tmp_path)) == [str(folder)]


def test_a_folder_of_another_boot_is_removed(tmp_path: Path, live: tuple[int, str]) -> None:
    boot = "0" * 12 if _here()[0] != "0" * 12 else "1" * 12
    folder = _folder(tmp_path, _name(*live, boot=boot))
    assert workdir.remove_dead_workdirs(str(tmp_path)) == [str(folder)]


def test_what_proves_nothing_is_never_touched(tmp_path: Path, dead: tuple[int, str]) -> None:
    elsewhere = _folder(tmp_path, _name(*dead, namespace="1"))  # a container sharing /tmp
    theirs = _folder(tmp_path, _name(dead[0], str(int(dead[1]) + 1)))
    os.chown(theirs, 65534, 65534)  # another user's (the suite runs as root)
    unmarked = _folder(tmp_path, f"{workdir.PREFIX}q8v1k2")  # an older envcheck's
    target = _folder(tmp_path, "not-ours")
    link = tmp_path / _name(dead[0], str(int(dead[1]) + 2))
    link.symlink_to(target)
    plain_file = tmp_path / _name(dead[0], str(int(dead[1]) + 3))
    plain_file.write_text("x")
    assert workdir.remove_dead_workdirs(str(tmp_path)) == []
    for kept in (elsewhere, theirs, unmarked, target):
        assert (kept / "workload.py").exists()
    assert link.is_symlink() and plain_file.exists()


def test_the_folder_a_run_makes_names_that_run(tmp_path: Path) -> None:
    made = Path(workdir.make_workdir())
    try:
        found = re.match(r"envcheck-smoke-([0-9a-f]{12})\.(\d+)\.(\d+)\.(\d+)-", made.name)
        assert found is not None, made.name
        assert int(found.group(3)) == os.getpid()
        assert found.group(4) == workdir._start_time("self")
        assert oct(made.stat().st_mode & 0o777) == "0o700"
        assert str(made) not in workdir.remove_dead_workdirs(str(made.parent))  # we are alive
        assert made.is_dir()
    finally:
        made.rmdir()
