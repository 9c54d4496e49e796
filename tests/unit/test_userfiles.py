"""Files the user names: reports are written without ever harming what is not ours, and
JSON documents are read without a traceback whatever their bytes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import EnvironmentProblem, UsageError
from envcheck.edges.userfiles import append_output, read_json, write_output
from tests import scenarios as s
from tests.inprocess import ENV, envcheck, envcheck_process, process_env
from tests.scenarios import write


def test_a_regular_file_is_replaced_atomically_with_the_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "report.xml"
    target.write_text("old")
    target.chmod(0o600)
    old_umask = os.umask(0o022)
    try:
        write_output(str(target), "new\n", flag="--junit", env=process_env())
    finally:
        os.umask(old_umask)
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["report.xml"]  # no temp file left


def test_a_character_device_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    """`--junit /dev/null` as root once turned /dev/null into a regular file. A private node
    of the same device stands in for it, so a regression cannot break this machine."""
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # needs root: fails loudly otherwise
    write_output(str(node), "<testsuites/>\n", flag="--junit", env=process_env())
    assert stat.S_ISCHR(node.lstat().st_mode) and os.major(node.lstat().st_rdev) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader waits before we write
    try:
        write_output(str(fifo), "# summary\n", flag="--markdown", env=process_env())
        got = os.read(reader, 1024)
    finally:
        os.close(reader)
    assert got == b"# summary\n" and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_fifo_nobody_reads_is_exit_2_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="nothing is reading it"):
        write_output(str(fifo), "x", flag="--markdown", env=process_env())


@pytest.mark.parametrize(
    "target", ["file", "missing", "dir"], ids=["to-file", "dangling", "to-dir"]
)
def test_a_symlink_is_never_replaced_nor_written_through(tmp_path: Path, target: str) -> None:
    dest = tmp_path / "dest"
    if target == "file":
        dest.write_text("not ours")
    elif target == "dir":
        dest.mkdir()
    link = tmp_path / "report.md"
    link.symlink_to(dest)
    with pytest.raises(UsageError, match="symbolic link"):
        write_output(str(link), "x", flag="--markdown", env=process_env())
    assert link.is_symlink() and os.readlink(link) == str(dest)
    assert target != "file" or dest.read_text() == "not ours"
    assert target != "missing" or not dest.exists()


def test_a_symlink_to_a_character_device_writes_the_device(tmp_path: Path) -> None:
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    link = tmp_path / "out"
    link.symlink_to(node)
    write_output(str(link), "x", flag="--junit", env=process_env())
    assert link.is_symlink() and stat.S_ISCHR(node.lstat().st_mode)


def test_a_directory_is_exit_2(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        write_output(str(tmp_path), "x", flag="--junit", env=process_env())


def test_no_space_is_exit_4() -> None:
    with pytest.raises(EnvironmentProblem, match="No space left"):
        write_output("/dev/full", "x", flag="--junit", env=process_env())


def test_a_folder_that_does_not_exist_is_exit_2(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--save-baseline"):
        write_output(
            str(tmp_path / "no" / "base.json"), "x", flag="--save-baseline", env=process_env()
        )


def test_the_step_summary_is_appended_never_replaced(tmp_path: Path) -> None:
    summary = tmp_path / "summary"
    summary.write_text("earlier step\n")
    append_output(str(summary), "ours\n", what="the step summary")
    assert summary.read_text() == "earlier step\nours\n"
    with pytest.raises(UsageError, match="directory"):
        append_output(str(tmp_path), "x", what="the step summary")


# -- through the CLI ---------------------------------------------------------------------------


@pytest.fixture
def facts(tmp_path: Path) -> str:
    return write(
        tmp_path,
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU),
    )


@pytest.mark.parametrize(
    ("path", "run"), [("-", envcheck), ("/dev/stdout", envcheck_process)], ids=["dash", "dev"]
)
def test_markdown_to_stdout_prints_it(facts: str, path: str, run: Callable[..., Any]) -> None:
    """`/dev/stdout` is the process's own: a process of its own shows it is recognised. The
    Markdown is then all that stdout holds, the text report gives way."""
    r = run("doctor", "--facts", facts, "--no-color", "--markdown", path)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("## ❌ envcheck: **fail**") and "Verdict: FAIL" not in r.stdout


def test_markdown_to_dev_stdout_redirected_to_a_file_lands_in_it(
    facts: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as f:
        code = subprocess.run(
            [
                sys.executable,
                "-m",
                "envcheck",
                "doctor",
                "--facts",
                facts,
                "--markdown",
                "/dev/stdout",
            ],
            stdout=f,
            stderr=subprocess.DEVNULL,
            env=ENV,
            timeout=120,
            check=False,
        ).returncode
    text = out.read_text()
    assert code == 1 and text.startswith("## ❌ envcheck") and "Verdict:" not in text


def test_junit_to_a_character_device_leaves_it_a_device(facts: str, tmp_path: Path) -> None:
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    r = envcheck("doctor", "--facts", facts, "--junit", str(node))
    assert r.returncode == 1, r.stderr
    assert stat.S_ISCHR(node.lstat().st_mode)


@pytest.mark.parametrize("flag", ["--junit", "--markdown"])
def test_a_directory_given_to_a_report_flag_is_exit_2(
    facts: str, tmp_path: Path, flag: str
) -> None:
    r = envcheck("doctor", "--facts", facts, flag, str(tmp_path))
    assert r.returncode == 2 and "is a directory" in r.stderr and "Traceback" not in r.stderr


# -- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"driver": {"version": "\xff\xfe"}}', "is not JSON: byte 24 .* is not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"gpus": [{"index": ' + b"9" * 5000 + b"}]}", "Exceeds the limit"),
        (b"{", "is not JSON"),
        (b"", "is not JSON"),
    ],
    ids=["not-utf8", "deep-nesting", "huge-int", "truncated", "empty"],
)
def test_a_hostile_document_is_a_usage_error(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=says) as e:
        read_json(str(path), what="--facts", env=process_env())
    assert str(path) in e.value.message


def test_a_document_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"a": [1, 2]}))
    assert read_json(str(path), what="--facts", env=process_env()) == {"a": [1, 2]}
