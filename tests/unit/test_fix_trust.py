"""The fix's journal read back only when it is envcheck's own, on real files: written by
envcheck's own code, then changed the ways a person, a copy or a crash changes it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import UsageError
from envcheck.fix.runner import journal
from envcheck.fix.runner.journal import JournalStep
from envcheck.fix.runner.trust import inside, step_argv
from envcheck.render.sanitize import hide_credentials


def _written(prefix: Path) -> journal.Journal:
    """An open journal of the environment at `prefix`, as `fix --yes` writes it."""
    prefix.mkdir()
    folder = journal.ensure_home(str(prefix))
    record = folder / "records" / "r1"
    record.mkdir()
    journal.write_new(record / "freeze.txt", "pip==24.0\n")
    python = str(prefix / "bin" / "python")
    left = journal.open_journal(
        folder,
        python=python,
        prefix=str(prefix),
        record_folder=str(record),
        expect="cpu",
        pip_flags=(),
    )
    wheelhouse = str(record / "wheelhouse")
    left.steps = [
        JournalStep(step_argv(python, "uninstall", (), wheelhouse, ["paddlepaddle-gpu"]), "a"),
        JournalStep(step_argv(python, "install", (), wheelhouse, ["paddlepaddle==3.3.1"]), "b"),
    ]
    left.enter("apply")
    return left


def test_a_journal_envcheck_wrote_reads_back_with_its_steps(tmp_path: Path) -> None:
    left = _written(tmp_path / "venv")
    found = journal.unfinished(Path(left.path).parent, left.python)
    assert found is not None and [s.argv for s in found.steps] == [s.argv for s in left.steps]
    assert found.seals["freeze.txt"].startswith("sha256:")


def _doc(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _replace(path: Path, make: Callable[[], None]) -> None:
    path.rename(path.with_name("x"))
    make()


CHANGES: dict[str, tuple[Callable[[Path], object], str]] = {
    "a-step-edited": (
        lambda p: _doc(p, lambda d: d["steps"][0]["argv"].append("pip")),
        "its digest does not match",
    ),
    "cut-short": (lambda p: p.write_text(p.read_text()[:100]), "not a whole JSON document"),
    "a-symlink": (lambda p: _replace(p, lambda: p.symlink_to(p.with_name("x"))), "symbolic link"),
    "a-fifo": (lambda p: _replace(p, lambda: os.mkfifo(p)), "not a regular file: a FIFO"),
    "writable-by-others": (lambda p: p.chmod(0o666), "group or others may write it"),
    "another-owner": (lambda p: os.chown(p, 65534, 65534), "owned by uid 65534"),
    "too-large": (lambda p: os.truncate(p, 65 << 20), "larger than"),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_journal_changed_is_refused_with_exit_2(tmp_path: Path, name: str) -> None:
    left = _written(tmp_path / "venv")
    change, words = CHANGES[name]
    change(Path(left.path))
    with pytest.raises(UsageError) as e:
        journal.read_journal(Path(left.path).parent)
    assert words in e.value.message and "\n" not in e.value.message


def test_a_journal_copied_with_its_prefix_is_refused(tmp_path: Path) -> None:
    left = _written(tmp_path / "a")
    subprocess.run(["cp", "-a", str(tmp_path / "a"), str(tmp_path / "b")], check=True)
    with pytest.raises(UsageError, match="it was written for .*/a, not for .*/b"):
        journal.read_journal(journal.home(str(tmp_path / "b")))
    assert journal.read_journal(Path(left.path).parent) is not None


def test_a_path_whose_folder_leads_outside_the_prefix_is_outside(tmp_path: Path) -> None:
    prefix = tmp_path / "venv"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "lib" / "out").symlink_to("/etc")
    assert inside(str(prefix / "lib" / "x.py"), str(prefix))
    assert not inside(str(prefix / "lib" / "out" / "passwd"), str(prefix))
    assert not inside(str(prefix / ".." / "x"), str(prefix))
    assert not inside("relative/x", str(prefix))


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("-i https://user:tok@mirror.example/simple", "-i https://user:****@mirror.example/simple"),
        ("http://tok@127.0.0.1:9/x", "http://****@127.0.0.1:9/x"),
        ("https://mirror.example/simple", "https://mirror.example/simple"),
        ("file:///srv/wheels", "file:///srv/wheels"),
    ],
)
def test_an_indexs_credentials_are_masked(text: str, shown: str) -> None:
    assert hide_credentials(text) == shown
