"""A pip step cut short, by SIGKILL of envcheck (and of its pip) or by a signal during a hung step,
with real pip, real venvs and the local wheels: the next run stops a pip step still running from
a killed fix before it reads or changes anything, removes pip's own stash and temporary folders,
and only then says the environment is back, proven by files (pip's stash counts as a difference).
Also: pip's own variables that would send an install elsewhere are neutralised for every step.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from envcheck.fix.runner import journal
from tests import fix_env
from tests.faults_pipsteps import gone, pip_of
from tests.fix_transactions import (
    AS_NOBODY,
    PY,
    files,
    finish,
    fix,
    fix_paused,
    linked_copy,
    real_index,
    stub_index,
    stub_root,
    template,
    variables,
)
from tests.inprocess import ENV

__all__ = ["real_index", "stub_index", "stub_root", "template"]  # fixtures used by name
SITE = Path("lib") / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _stashes(site: Path) -> list[str]:
    return sorted(p.name for p in site.iterdir() if p.name.startswith("~"))


def _until(what: str, ask: object, seconds: float = 600) -> object:
    """Poll `ask()` until it answers something true (a bound on a wait, never a measure)."""
    assert callable(ask)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = ask()
        if found:
            return found
        time.sleep(0.0005)
    raise AssertionError(f"never saw {what}")


def test_sigkill_of_envcheck_and_its_pip_while_pip_uninstalls_paddle_leaves_no_stash(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """Killed (envcheck and its pip, as a cgroup kill does) while pip uninstalls the real Paddle:
    pip's stash (`~addle/`, thousands of files) is in site-packages. The next --rollback removes
    it and the venv is byte for byte as before, `~` names included."""
    venv = tmp_path / "venv"
    python = linked_copy(template, venv)
    site = venv / SITE
    before = files(venv)
    hold = tmp_path / "hold"
    hold.touch()
    env = variables(tmp_path, stub_index)
    proc = fix_paused(env | {"ENVCHECK_FIX_PAUSE_FILE": str(hold)}, python, "step-2", "--yes")
    hold.unlink()  # step 2 removes the CPU build: the real Paddle, its `paddle/` folder
    pip = _until("pip uninstall", lambda: pip_of(python, "uninstall"))
    assert isinstance(pip, int)
    _until("pip's stash", lambda: _stashes(site))
    os.killpg(pip, signal.SIGKILL)
    proc.kill()
    proc.wait(timeout=60)
    _until("pip's end", lambda: gone(pip))
    assert any(s.startswith("~addle") for s in _stashes(site)), _stashes(site)  # the case

    code, doc, said = fix(env, python, "--rollback")
    assert (code, doc["outcome"]) == (0, "rolled-back"), doc
    assert "removed what the cut pip step left" in said and "~addle" in said, said
    assert doc["rollback"]["files_match"], doc["rollback"]
    assert _stashes(site) == []
    assert files(venv) == before


def test_sigkill_of_envcheck_while_pip_installs_the_next_run_stops_pip_before_rolling_back(
    tmp_path: Path, real_index: str
) -> None:
    """envcheck alone killed while its pip installs the real Paddle: pip goes on in its own
    session. The hinted --rollback finds the lock still held by that pip, stops it and waits for
    it before anything else, then puts the record back: no pip runs after it, and the venv is
    file for file as before."""
    venv = tmp_path / "venv"
    python = fix_env.make_venv(venv)
    site = venv / SITE
    before = files(venv)
    hold = tmp_path / "hold"
    hold.touch()
    env = variables(tmp_path, real_index)
    proc = fix_paused(env | {"ENVCHECK_FIX_PAUSE_FILE": str(hold)}, python, "step-1", "--yes")
    hold.unlink()
    pip = _until("pip install", lambda: pip_of(python, "install"))
    assert isinstance(pip, int)
    _until("Paddle's files arriving", (site / "paddle").exists)
    proc.kill()
    proc.wait(timeout=60)
    assert not gone(pip)  # the case: pip goes on without the fix that ran it

    code, doc, said = fix(env, python, "--rollback")
    assert "a pip step of a killed `envcheck fix` is still running" in said, said
    assert gone(pip) and pip_of(python, "install") is None
    assert (code, doc["outcome"]) == (0, "rolled-back"), doc
    assert doc["rollback"]["files_match"], doc["rollback"]
    assert files(venv) == before
    assert journal.unfinished(journal.home(str(venv))) is None


_HUNG = """
import subprocess, sys
from envcheck.edges.signals import unwind_on_signals
from envcheck.fix.runner.apply import run_command
step = (
    "import subprocess, time; c = subprocess.Popen(['sleep', '600']); "
    "print('started', c.pid, flush=True); time.sleep(600)"
)
with unwind_on_signals():
    try:
        ran = run_command([sys.executable, "-c", step], {}, print, limit=3600)
    except KeyboardInterrupt as e:
        print("interrupted:", e, flush=True)
        raise SystemExit(130)
    print("ended:", ran.code, ran.tail, flush=True)
"""


@pytest.mark.parametrize(
    ("signals", "stops"),
    [((signal.SIGTERM,), "SIGTERM"), ((signal.SIGINT, signal.SIGINT), "SIGINT")],
    ids=["sigterm", "second-ctrl-c"],
)
def test_a_stop_signal_during_a_hung_step_stops_its_process_group(
    signals: tuple[signal.Signals, ...], stops: str
) -> None:
    """A hung step under a bound of an hour: SIGTERM, or a second Ctrl-C, stops its process group
    and the run unwinds (the fix then rolls back) instead of waiting out the bound."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HUNG],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    started = proc.stdout.readline().split()
    assert started[:1] == ["started"], started
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(0.3)  # one signal, then the next: two presses, not one
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert f"interrupted: {stops}" in out, out
    assert _until("the step's child ended", lambda: gone(int(started[1])), 60)


@pytest.mark.parametrize("variable", ["PIP_TARGET", "PIP_PREFIX"])
def test_pip_variables_that_send_an_install_elsewhere_are_neutralised(
    tmp_path: Path, stub_index: str, variable: str
) -> None:
    """PIP_TARGET or PIP_PREFIX set in the environment (a user's shell, a CI image): every pip
    step still installs into the target venv, and nothing is written where it points."""
    python = fix_env.make_venv(tmp_path / "venv")
    elsewhere = tmp_path / "elsewhere"
    _, doc, _ = fix(variables(tmp_path, stub_index, **{variable: str(elsewhere)}), python, "--yes")
    assert doc["outcome"] == "rolled-back", doc  # the stub's smoke cannot train: undone
    installed = [r for r in doc["applied"] if r["argv"][3] == "install"]
    assert installed and installed[0]["exit_code"] == 0, doc["applied"]
    assert not elsewhere.exists(), sorted(elsewhere.rglob("*"))[:5]


def test_a_full_disk_before_the_first_step_frees_the_wheelhouse_and_closes_the_journal(
    tmp_path: Path, real_index: str
) -> None:
    """The target on a tmpfs: the wheels are downloaded, then the disk fills up (another writer)
    and the run is stopped before its first step. The wheelhouse goes first, which makes the room
    the journal needs to be closed: nothing changed, nothing left open, the disk has its room."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400m", "tmpfs", str(small)], check=True)
    try:
        python = fix_env.make_venv(small / "venv")
        before = files(small / "venv")
        env = variables(tmp_path, real_index)
        proc = fix_paused(env, python, "resolve", "--yes")
        fill = subprocess.run(
            ["dd", "if=/dev/zero", f"of={small / 'fill'}", "bs=64k"],
            capture_output=True,
            check=False,
        )
        assert b"No space left" in fill.stderr, fill.stderr  # the case: a full disk
        proc.send_signal(signal.SIGTERM)
        code, _, said = finish(proc)
        assert code == 130, said
        home = journal.home(str(small / "venv"))
        assert list(home.glob("records/*/wheelhouse")) == []
        assert journal.unfinished(home) is None, said
        assert files(small / "venv") == before
    finally:
        subprocess.run(["umount", "-l", str(small)], check=True)


# -- the target itself: what --yes refuses, said before ----------------------------------------

SHARED = Path(sys.base_prefix)  # the Python the tests' venv was made from: a pyenv build


def test_a_shared_interpreter_is_refused_by_yes_alone_and_the_dry_run_says_so(
    tmp_path: Path, stub_index: str
) -> None:
    """A Python outside any venv or conda prefix (a hard-linked copy of a pyenv build here) is
    every user's: the dry run says --yes would ask, `--yes` without a terminal refuses it before
    anything is written, and --shared-interpreter lets it go."""
    assert not (SHARED / "pyvenv.cfg").exists() and not (SHARED / "conda-meta").exists()
    subprocess.run(["cp", "-al", str(SHARED), str(tmp_path / "shared")], check=True)
    python = str(tmp_path / "shared" / "bin" / "python3")
    env = variables(tmp_path, stub_index)
    _, doc, _ = fix(env, python)
    assert "--yes would ask before changing it" in doc["resolved_from"], doc["resolved_from"]
    before = fix_env.freeze(python)
    code, doc, _ = fix(env, python, "--yes")
    assert code == 2, doc
    assert "outside any virtual environment or conda prefix" in doc["error"]["message"]
    assert "--shared-interpreter" in doc["error"]["hint"]
    assert fix_env.freeze(python) == before
    assert not (tmp_path / "shared" / journal.FOLDER).exists()
    _, doc, _ = fix(env, python, "--yes", "--shared-interpreter")
    assert doc["outcome"] == "rolled-back" and doc["rollback"]["files_match"], doc


def test_the_dry_run_on_an_externally_managed_interpreter_says_what_yes_refuses() -> None:
    """Debian's Python carries PEP 668's marker: the plan is shown, and with it that --yes will
    refuse it and what to do instead (nothing is run against it)."""
    python = "/usr/bin/python3"
    marker = Path(f"/usr/lib/python3.{sys.version_info[1]}/EXTERNALLY-MANAGED")
    assert marker.exists(), f"this machine's {python} is meant to be externally managed"
    _, doc, _ = fix(ENV, python)
    said = doc["resolved_from"]
    assert "--yes would be refused" in said and "externally managed" in said, doc
    assert "-m venv" in said


def test_what_sudo_wrote_is_given_back_so_the_owner_can_fix_again(stub_index: str) -> None:
    """A venv `nobody` owns, fixed by root as `sudo envcheck fix --yes` does (SUDO_UID and
    SUDO_GID set): the fix's folder and what pip wrote are nobody's again, and nobody's own
    `fix --yes` then runs its transaction to the end instead of meeting root's files."""
    base = Path(tempfile.mkdtemp(prefix="envcheck-sudo-"))
    try:
        base.chmod(0o755)
        venv = base / "venv"
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=300)
        nobody = pwd.getpwnam("nobody")
        subprocess.run(["chown", "-R", f"{nobody.pw_uid}:{nobody.pw_gid}", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        env = ENV | {"HOME": str(base), "ENVCHECK_PADDLE_INDEX": stub_index}
        sudo = env | {"SUDO_UID": str(nobody.pw_uid), "SUDO_GID": str(nobody.pw_gid)}
        _, doc, _ = fix(sudo, python, "--yes")
        assert doc["outcome"] == "rolled-back", doc  # the stub's smoke cannot train
        roots = [p for p in [venv, *venv.rglob("*")] if p.lstat().st_uid == 0]
        assert roots == [], roots[:5]
        run = subprocess.run(
            [*AS_NOBODY, PY, "-m", "envcheck", "fix", "--json", "--python", python]
            + ["--paddle", "3.3.1", "--no-pull", "--yes"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert "Traceback" not in run.stderr, run.stderr
        doc = json.loads(run.stdout)
        assert doc.get("outcome") == "rolled-back", doc
    finally:
        shutil.rmtree(base)
