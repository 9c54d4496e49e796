"""`envcheck fix --yes` as a transaction that cannot lose the environment, driven with real pip,
real venvs and local indexes: the index gone mid-run, a full file system, SIGTERM, SIGINT, SIGHUP
and SIGKILL held at each phase (the test hook ENVCHECK_FIX_PAUSE), a symlinked target, a pinned
dependency and a pyenv-style shim. After each, the environment's files are the record's or the
plan's, never a mix, and the next run says which.

Most cases install a stub `paddlepaddle==3.3.1` (an empty wheel: tests/fix_env.py) whose
verification smoke can only fail, so every phase, the rollback included, runs in seconds; the
real CPU wheel is installed once per module into a template venv that each case links a copy of.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from envcheck.fix.runner import journal
from envcheck.fix.runner.apply import run_command
from tests import fix_env
from tests.fix_transactions import (
    ARGS,
    AS_NOBODY,
    CPU_INDEX,
    PY,
    configured,
    files,
    finish,
    fix,
    fix_paused,
    linked_copy,
    variables,
)
from tests.inprocess import ENV, run_envcheck

pytest_plugins = ("tests.fix_transactions",)  # stub_root, stub_index, real_index, template


# -- everything in hand before the first change ---------------------------------------------


def test_an_index_that_does_not_answer_is_named_and_nothing_changes(
    tmp_path: Path, template: Path
) -> None:
    """A black hole (a port that accepts and never answers) is given up on within seconds, by
    name, before anything is removed; the both-builds plan used to remove both first."""
    python = linked_copy(template, tmp_path / "venv")
    before = files(tmp_path / "venv")
    (tmp_path / "empty" / "simple").mkdir(parents=True)
    with socket.socket() as hole, fix_env.serve(tmp_path / "empty") as mirror:
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)
        url = f"http://127.0.0.1:{hole.getsockname()[1]}"
        code, doc, _ = fix(
            configured(variables(tmp_path, url), f"{mirror}/simple"), python, "--yes"
        )
    assert code == 4, doc
    assert f"the package index {url}/{CPU_INDEX}/ did not answer" in doc["error"]["message"]
    assert "pip's configured index lacks paddlepaddle==3.3.1" in doc["error"]["message"]
    assert "nothing was changed" in doc["error"]["message"]
    assert files(tmp_path / "venv") == before
    assert journal.unfinished(journal.home(str(tmp_path / "venv"))) is None


def test_where_paddles_index_does_not_answer_the_configured_index_serves_the_one_build(
    tmp_path: Path, template: Path
) -> None:
    """Paddle's index black-holed; pip's configured index (a mirror here, PyPI elsewhere) holds
    `paddlepaddle==3.3.1`, a CPU build, the one build published under that name and version.
    The dry run says which index answers before anything is promised; --yes takes it from
    there and verifies it."""
    python = linked_copy(template, tmp_path / "venv")
    root = tmp_path / "mirror"
    fix_env.build_index(root, "simple", fix_env.wheels())
    with socket.socket() as hole, fix_env.serve(root) as mirror:
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)
        url = f"http://127.0.0.1:{hole.getsockname()[1]}"
        env = configured(variables(tmp_path, url), f"{mirror}/simple")
        code, doc, _ = fix(env, python)
        said = doc["resolved_from"]
        assert f"the package index {url}/{CPU_INDEX}/ did not answer" in said, said
        assert "pip's configured index holds paddlepaddle==3.3.1" in said
        assert f"{mirror}/simple/paddlepaddle/paddlepaddle-3.3.1-" in said
        assert (code, doc["outcome"]) == (1, "planned")
        code, doc, _ = fix(env, python, "--yes")
    assert (code, doc["outcome"]) == (0, "fixed"), doc
    assert "pip's configured index holds paddlepaddle==3.3.1" in doc["resolved_from"]
    assert fix_env.freeze(python).count("paddlepaddle==3.3.1") == 1


def test_the_index_gone_mid_run_the_rollback_needs_no_network_and_is_proven_by_files(
    tmp_path: Path, template: Path, stub_root: Path
) -> None:
    """Both builds installed, the GPU one from a wheel since deleted. The plan removes both and
    installs a build whose smoke fails; the index is gone by the time the rollback runs. Every
    file comes back from the record (the GPU build's too), `bin/fleetrun` included."""
    venv = tmp_path / "venv"
    python = linked_copy(template, venv)
    before, frozen = files(venv), fix_env.freeze(python)
    hold = tmp_path / "hold"
    hold.touch()
    with fix_env.serve(stub_root) as url:
        env = variables(tmp_path, url, ENVCHECK_FIX_PAUSE_FILE=str(hold))
        proc = fix_paused(env, python, "step-1", "--yes")
    hold.unlink()  # the index is gone: go on
    code, out, _ = finish(proc)
    doc = json.loads(out)
    assert doc["outcome"] == "rolled-back" and code == doc["exit_code"] != 0, doc
    assert doc["rollback"]["files_match"] and doc["rollback"]["differences"] == []
    assert doc["rollback"]["freeze_matches"] and doc["rollback"]["pip_check_new"] == []
    assert [c["name"] for c in doc["changes"]] == ["paddlepaddle", "paddlepaddle-gpu"]
    assert files(venv) == before and fix_env.freeze(python) == frozen
    assert (venv / "bin" / "fleetrun").exists()
    closed = journal.read_journal(journal.home(str(venv)))
    assert closed is not None and closed.state == "rolled-back"


def test_a_pinned_dependency_pip_would_change_is_refused_unless_named(
    tmp_path: Path, real_index: str
) -> None:
    """protobuf 3.19.6 is pinned here; Paddle 3.3.1 needs >= 3.20.2, so pip would bring 7.x.
    The dry run shows it; --yes refuses it, changing nothing; --allow-change protobuf lets it
    go, and a failed verification puts 3.19.6 back from the record."""
    python = fix_env.make_venv(tmp_path / "venv")
    pin = fix_env.stub_wheel(tmp_path / "pins", "protobuf", "3.19.6")
    fix_env.pip(python, "install", "--no-deps", str(pin))
    pin.unlink()
    env = variables(tmp_path, real_index)
    code, doc, _ = fix(env, python)
    changes = {c["name"]: (c["before"], c["after"], c["requested"]) for c in doc["changes"]}
    assert changes["protobuf"] == ("3.19.6", "7.36.2", False)
    assert changes["paddlepaddle"] == (None, "3.3.1", True)
    assert "--yes would be refused" in doc["resolved_from"]
    assert "--allow-change protobuf" in doc["resolved_from"]

    before, frozen = files(tmp_path / "venv"), fix_env.freeze(python)
    code, doc, _ = fix(env, python, "--yes")
    assert code == 2 and "protobuf 3.19.6 -> 7.36.2" in doc["error"]["message"], doc
    assert doc["error"]["hint"].endswith("--allow-change protobuf")
    assert files(tmp_path / "venv") == before

    corrupt = env | {"ENVCHECK_SMOKE_CORRUPT": "matmul:zero"}
    code, doc, _ = fix(corrupt, python, "--yes", "--allow-change", "protobuf")
    assert (code, doc["outcome"]) == (7, "rolled-back"), doc
    assert doc["rollback"]["files_match"] and fix_env.freeze(python) == frozen  # 3.19.6, back
    assert files(tmp_path / "venv") == before


def test_a_file_system_that_fills_up_mid_install_is_put_back_by_files(
    tmp_path: Path, real_index: str
) -> None:
    """The target on a 420 MB tmpfs: the wheels fit, Paddle's 720 MB of files do not. pip stops
    half-way through extracting it; the rollback removes what came (the half-extracted files
    too, which no RECORD names) and the venv is file for file as it was."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=420m", "tmpfs", str(small)], check=True)
    try:
        python = fix_env.make_venv(small / "venv")
        before = files(small / "venv")
        code, doc, _ = fix(variables(tmp_path, real_index), python, "--yes")
        assert (code, doc.get("outcome")) == (4, "rolled-back"), doc
        assert "No space left on device" in doc["failed"], doc["failed"]
        assert doc["rollback"]["files_match"] and doc["rollback"]["differences"] == []
        assert files(small / "venv") == before
        assert not (small / "venv" / "lib" / "python3.11" / "site-packages" / "paddle").exists()
    finally:
        subprocess.run(["umount", "-l", str(small)], check=True)


# -- signals at each phase, the rollback included ---------------------------------------------


@pytest.mark.parametrize(
    ("phase", "sig"),
    [
        ("record", signal.SIGTERM),
        ("download", signal.SIGTERM),
        ("keep", signal.SIGINT),
        ("step-1", signal.SIGTERM),
        ("step-2", signal.SIGHUP),
        ("rollback", signal.SIGTERM),
        ("rollback", signal.SIGINT),
        ("rollback", signal.SIGHUP),
    ],
)
def test_a_signal_at_each_phase_leaves_the_record_and_says_so(
    tmp_path: Path, template: Path, stub_index: str, phase: str, sig: signal.Signals
) -> None:
    """Before the first step nothing has changed; from it on, the record comes back. A signal
    during the rollback waits for it to finish: it is never cut half-way."""
    venv = tmp_path / "venv"
    python = linked_copy(template, venv)
    before = files(venv)
    proc = fix_paused(variables(tmp_path, stub_index), python, phase, "--yes")
    proc.send_signal(sig)
    code, _, said = finish(proc)
    assert code == 130, said
    assert files(venv) == before
    if phase == "rollback":
        assert "a signal arrived during the rollback: it finished first" in said
        assert "the environment is as it was (its files match the record)" in said
    elif phase.startswith("step-"):
        assert "rolled back, the environment is as it was (its files match the record)" in said
    assert journal.unfinished(journal.home(str(venv))) is None
    code, doc, _ = fix(variables(tmp_path, stub_index), python)  # the next run plans afresh
    assert code == 1 and doc["outcome"] == "planned", doc


def test_a_signal_during_the_verification_leaves_the_plan_and_the_next_run_says_so(
    tmp_path: Path, stub_index: str
) -> None:
    python = fix_env.make_venv(tmp_path / "venv")
    before = files(tmp_path / "venv")
    proc = fix_paused(variables(tmp_path, stub_index), python, "verify", "--yes")
    proc.send_signal(signal.SIGTERM)
    code, _, said = finish(proc)
    assert code == 130 and "as planned (every step applied), not verified" in said
    assert "paddlepaddle==3.3.1" in fix_env.freeze(python).splitlines()  # the plan's files

    code, doc, _ = fix(variables(tmp_path, stub_index), python)
    assert code == 4 and "an unfinished `envcheck fix`" in doc["error"]["message"], doc
    assert "in its verify phase with 1 of 1 step(s) done" in doc["error"]["message"]
    assert "--rollback" in doc["error"]["hint"] and "--resume" in doc["error"]["hint"]

    code, doc, _ = fix(variables(tmp_path, stub_index), python, "--rollback")
    assert (code, doc["outcome"]) == (0, "rolled-back"), doc
    assert files(tmp_path / "venv") == before


@pytest.mark.parametrize("phase", ["step-1", "rollback"])
def test_after_sigkill_the_next_run_finds_the_journal_and_rolls_back(
    tmp_path: Path, template: Path, stub_index: str, phase: str
) -> None:
    """SIGKILL leaves no chance to clean up: the journal stays open, the kernel frees the lock,
    and the next run says so before anything else; --rollback puts the record back."""
    venv = tmp_path / "venv"
    python = linked_copy(template, venv)
    before = files(venv)
    env = variables(tmp_path, stub_index)
    proc = fix_paused(env, python, phase, "--yes")
    proc.kill()
    proc.wait(timeout=60)
    left = journal.unfinished(journal.home(str(venv)))
    assert left is not None and left.phase == ("apply" if phase == "step-1" else "rollback")

    code, doc, _ = fix(env, python, "--yes")
    assert code == 4 and "an unfinished `envcheck fix`" in doc["error"]["message"], doc
    code, doc, said = fix(env, python, "--rollback")
    assert "found an unfinished `envcheck fix`" in said
    assert (code, doc["outcome"]) == (0, "rolled-back"), doc
    assert doc["rollback"]["files_match"] and files(venv) == before
    code, doc, _ = fix(env, python, "--rollback")
    assert code == 2 and "no unfinished" in doc["error"]["message"]


def test_resume_runs_the_steps_not_done_then_verifies(
    tmp_path: Path, template: Path, stub_index: str
) -> None:
    """Killed after its first step (one build removed, the other not): --resume runs the rest
    from the record's wheelhouse, verifies, and, the smoke failing, puts the record back."""
    venv = tmp_path / "venv"
    python = linked_copy(template, venv)
    before = files(venv)
    env = variables(tmp_path, stub_index)
    proc = fix_paused(env, python, "step-2", "--yes")
    proc.kill()
    proc.wait(timeout=60)
    assert "paddlepaddle-gpu" not in fix_env.freeze(python)  # a mix, as the journal says
    code, doc, said = fix(env, python, "--resume")
    assert "found an unfinished `envcheck fix`" in said and "1 of 3 step(s) done" in said
    assert [r["argv"][3:5] for r in doc["applied"]] == [
        ["uninstall", "-y"],
        ["install", "--no-index"],
    ], doc
    assert doc["outcome"] == "rolled-back" and doc["rollback"]["files_match"], doc
    assert code == doc["exit_code"] != 0 and files(venv) == before


def test_fixed_requires_pip_check_to_raise_nothing_new(tmp_path: Path, real_index: str) -> None:
    """An application here needs numpy < 2; Paddle brings numpy 2 (pip installs it, warning).
    The smoke passes, but pip check now fails where it did not: that is no fix, it is undone."""
    python = fix_env.make_venv(tmp_path / "venv")
    app = fix_env.stub_wheel(tmp_path / "app", "old-app", "1.0", requires=["numpy<2"])
    fix_env.pip(python, "install", "--no-deps", str(app))
    before = files(tmp_path / "venv")
    code, doc, _ = fix(variables(tmp_path, real_index), python, "--yes")
    assert (code, doc["outcome"]) == (4, "rolled-back"), doc
    assert doc["verification"]["proof"] == "cpu-trained"
    assert doc["failed"].startswith("pip check finds new problems after the change: old-app")
    assert files(tmp_path / "venv") == before


# -- independent parts ------------------------------------------------------------------------


@pytest.mark.docker
def test_a_failed_pull_never_rolls_back_a_verified_interpreter(
    tmp_path: Path, real_index: str
) -> None:
    """The engine lacks the doctor's image and cannot pull it (no route to Docker Hub here): the
    interpreter's fix, verified, stays; the image's part fails on its own; the exit is the pull's
    (4) and `parts` says which part it is."""
    python = fix_env.make_venv(tmp_path / "venv")
    run = run_envcheck(
        ["fix", "--json", "--quiet", "--python", python, "--paddle", "3.3.1", "--yes"],
        env=variables(tmp_path, real_index),
    )
    doc = json.loads(run.stdout)
    assert (run.returncode, doc.get("outcome")) == (4, "partly-fixed"), doc
    parts = doc["parts"]
    assert (parts["interpreter"]["outcome"], parts["interpreter"]["exit_code"]) == ("fixed", 0)
    assert parts["interpreter"]["verification"]["proof"] == "cpu-trained"
    assert (parts["image"]["outcome"], parts["image"]["exit_code"]) == ("failed", 4)
    assert "pull-image" in parts["image"]["failed"] and "rollback" not in doc
    assert "paddlepaddle==3.3.1" in fix_env.freeze(python).splitlines()


# -- one lock per environment, its real path --------------------------------------------------


def test_a_symlinked_target_meets_the_same_lock_and_journal(
    tmp_path: Path, stub_index: str
) -> None:
    python = fix_env.make_venv(tmp_path / "venv")
    (tmp_path / "link").symlink_to(tmp_path / "venv")
    before = fix_env.freeze(python)
    env = variables(tmp_path, stub_index)
    real = str(tmp_path / "venv")
    with journal.held(journal.ensure_home(real), real):
        code, doc, _ = fix(env, str(tmp_path / "link" / "bin" / "python"), "--yes")
    assert code == 4 and "another `envcheck fix`" in doc["error"]["message"], doc
    assert fix_env.freeze(python) == before


def test_another_user_meets_the_same_lock(stub_index: str) -> None:
    """root's fix holds the environment (its journal open, its lock held); `nobody` running a fix
    of the same venv is told another fix is changing it, not that one was left unfinished."""
    base = Path(tempfile.mkdtemp(prefix="envcheck-two-users-"))
    try:
        base.chmod(0o755)
        # Debian's Python, which every user may run (access(2) ignores the capability above)
        venv = ["/usr/bin/python3", "-m", "venv", "--without-pip", str(base / "venv")]
        subprocess.run(venv, check=True, timeout=120)
        python = str(base / "venv" / "bin" / "python")
        prefix = str(base / "venv")
        folder = journal.ensure_home(prefix)
        with journal.held(folder, prefix):
            journal.open_journal(
                folder, python=python, prefix=prefix, record_folder="-", expect="cpu", pip_flags=()
            )
            run = subprocess.run(
                [
                    *AS_NOBODY,
                    PY,
                    "-m",
                    "envcheck",
                    "fix",
                    "--json",
                    "--python",
                    python,
                    *ARGS,
                    "--yes",
                ],
                env=ENV | {"HOME": str(base), "ENVCHECK_PADDLE_INDEX": stub_index},
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        doc = json.loads(run.stdout)
        assert run.returncode == 4 and "Traceback" not in run.stderr, run.stderr
        assert f"another `envcheck fix` (pid {os.getpid()}) is changing" in doc["error"]["message"]
    finally:
        shutil.rmtree(base)


# -- the interpreter that really runs ---------------------------------------------------------


def test_a_pyenv_style_shim_is_resolved_once_to_the_python_it_runs(
    tmp_path: Path, stub_index: str
) -> None:
    """A shim is a script that execs the real Python: the plan, the change and the verification
    name that Python, never the shim (which could run another one the next time)."""
    python = fix_env.make_venv(tmp_path / "venv")
    shim = tmp_path / "shims" / "python"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
    shim.chmod(0o755)
    _, doc, _ = fix(variables(tmp_path, stub_index), str(shim))
    assert doc["plan"]["python"] == python
    assert all(s["argv"][0] == python for s in doc["plan"]["steps"]), doc


# -- bounds, and what is echoed -------------------------------------------------------------


def test_a_hung_step_is_killed_with_its_process_group_after_its_bound(tmp_path: Path) -> None:
    """A step and the child it started, both ignoring SIGTERM: after the bound both are gone."""
    pidfile = tmp_path / "child.pid"
    code = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "c = subprocess.Popen(['sleep', '600']); open(sys.argv[1], 'w').write(str(c.pid)); "
        "print('started', flush=True); time.sleep(600)"
    )
    ran = run_command([PY, "-c", code, str(pidfile)], ENV, limit=3)
    assert ran.killed and ran.code == -signal.SIGKILL
    assert "killed after 3 s with its process group" in ran.tail
    child = Path(f"/proc/{pidfile.read_text()}/stat")
    assert _ends(child)


def _ends(stat: Path) -> bool:
    """The process is gone, or a zombie waiting for init to reap it (SIGKILL is delivered at
    once, the kernel's teardown takes a moment: waited for, never a measure of speed)."""
    for _ in range(600):
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def test_what_pip_relays_from_an_index_goes_to_the_log_never_raw_to_the_terminal(
    tmp_path: Path, stub_root: Path
) -> None:
    """An index whose link carries a terminal escape (a window title, a bidi override) in its
    query: pip prints the link as it is, into the record's log; the terminal gets one line a
    step, and nothing it shows carries the escape."""
    root = tmp_path / "index"
    project = root / CPU_INDEX / "paddlepaddle"
    project.mkdir(parents=True)
    wheel = next((stub_root / CPU_INDEX / "paddlepaddle").glob("*.whl"))
    (project / wheel.name).symlink_to(wheel)
    forged = "\x1b]0;owned\x07\u202e"
    (project / "index.html").write_text(
        f'<html><body><a href="{wheel.name}?{forged}">{wheel.name}</a></body></html>'
    )
    python = fix_env.make_venv(tmp_path / "venv")
    with fix_env.serve(root) as url:
        run = run_envcheck(
            ["fix", "--python", python, *ARGS, "--yes"], env=variables(tmp_path, url)
        )
    assert "Traceback" not in run.stderr, run.stderr
    assert "Downloading" not in run.stderr and "✓ install paddlepaddle==3.3.1" in run.stderr
    # pip printed the link (HTML dropped the BEL) into the log, as it is
    log = _record(tmp_path / "venv") / "pip.log"
    assert "whl?\x1b]0;owned\u202e" in log.read_text(), log.read_text()
    assert "\x1b" not in run.stderr + run.stdout and "\u202e" not in run.stderr + run.stdout


def _record(venv: Path) -> Path:
    """The one record a fix left in `venv`."""
    (folder,) = (journal.home(str(venv)) / "records").iterdir()
    return folder


def _fix_text(env: dict[str, str], python: str) -> list[str]:
    """`fix --yes` as a person sees it: its stdout and stderr in the order they were written."""
    run = subprocess.run(
        [PY, "-m", "envcheck", "fix", "--python", python, *ARGS, "--yes"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in run.stdout, run.stdout
    return run.stdout.splitlines()


def test_yes_says_its_plan_before_the_first_step_and_a_step_a_line(
    tmp_path: Path, stub_index: str
) -> None:
    """A fresh venv fixed against a local index: the plan (its steps, the packages that change,
    the record) comes before the first step runs, each step is one line as it ends, pip's own
    output is in the record's log, and the whole of it fits 40 lines."""
    python = fix_env.make_venv(tmp_path / "venv")
    lines = _fix_text(variables(tmp_path, stub_index), python)
    text = "\n".join(lines)
    steps = [n for n, line in enumerate(lines) if line.startswith(("  ✓ ", "  ✗ "))]
    assert steps, text
    before = lines[: steps[0]]
    assert "plan (in order):" in before, text
    assert "  paddlepaddle: absent -> 3.3.1" in before, text
    assert any(line.startswith("recorded before: ") for line in before), text
    assert lines[steps[0]].startswith("  ✓ install paddlepaddle==3.3.1  "), text
    assert text.count("plan (in order):") == 1, text  # said once, not again at the end
    assert not any(w in text for w in ("Collecting", "Downloading", "Successfully")), text
    assert (
        "Successfully installed paddlepaddle-3.3.1"
        in (_record(tmp_path / "venv") / "pip.log").read_text()
    )
    assert lines[-1].startswith("result: rolled back"), text  # the stub cannot train
    assert len(lines) <= 40, f"{len(lines)} lines:\n{text}"


def test_a_failing_step_shows_pips_last_lines_and_where_its_log_is(tmp_path: Path) -> None:
    """A wheel that pip downloads and resolves but refuses to install (a file of it would land
    outside the environment): the step's line says it failed, pip's own last lines follow, then
    the log that holds all of it; the environment is put back."""
    wheel = fix_env.stub_wheel(tmp_path / "wheels", "paddlepaddle", "3.3.1")
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("../../escaped.txt", "outside\n")
    root = tmp_path / "index"
    fix_env.build_index(root, CPU_INDEX, [wheel])
    python = fix_env.make_venv(tmp_path / "venv")
    with fix_env.serve(root) as url:
        lines = _fix_text(variables(tmp_path, url), python)
    text = "\n".join(lines)
    (n,) = [n for n, line in enumerate(lines) if line.startswith("  ✗ install paddlepaddle")]
    assert "(exit 1)" in lines[n], text
    log = _record(tmp_path / "venv") / "pip.log"
    assert f"    pip's whole output: {log}" in lines, text
    shown = [line.removeprefix("    | ") for line in lines[n + 1 :] if line.startswith("    | ")]
    assert shown and shown[-1] in log.read_text(), text
    assert any("outside" in line for line in shown), text  # pip's own words for why
    assert lines[-1].startswith("result: rolled back"), text


@pytest.mark.parametrize("bad", ["\x1b]0;owned\x07", "\u202e"])
def test_a_paddle_index_with_control_or_bidi_characters_is_refused_unechoed(
    tmp_path: Path, bad: str
) -> None:
    run = run_envcheck(["fix", "--paddle-index", f"https://mirror.example/{bad}x"], env=ENV)
    assert run.returncode == 2 and "--paddle-index" in run.stderr
    assert bad not in run.stderr and bad not in run.stdout


def test_the_fix_keeps_its_state_inside_the_target(tmp_path: Path, stub_index: str) -> None:
    """Record, journal and lock live in <prefix>/.envcheck-fix, whoever runs the fix; nothing is
    written under XDG_STATE_HOME (a read-only or 4,000-character one is no concern)."""
    python = fix_env.make_venv(tmp_path / "venv")
    state = "/" + "s" * 4045
    env = variables(tmp_path, stub_index, XDG_STATE_HOME=state)
    _, doc, _ = fix(env, python, "--yes")
    assert doc["outcome"] == "rolled-back", doc
    home = journal.home(str(tmp_path / "venv"))
    assert doc["record"]["folder"].startswith(f"{home}/records/")
    assert doc["record"]["journal"] == str(home / "journal.json")
    assert "$ " in Path(doc["record"]["pip_log"]).read_text()  # pip's steps, logged in the record
    assert (home / "lock").exists()
    shutil.rmtree(home)
