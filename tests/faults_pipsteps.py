"""The outside fault campaign's cases of a fix's pip steps (surface `fix`): pip killed half-way
(with envcheck, or envcheck alone while pip goes on), a full disk during the download, a hung
step stopped by SIGTERM or a second Ctrl-C, pip's variables pointing elsewhere, root fixing a
user's venv, a shared or an externally managed interpreter.

Real pip, real venvs, local indexes on loopback (a stub `paddlepaddle==3.3.1`, and the real CPU
wheels `scripts/dev setup` downloads), started once per process.
"""

from __future__ import annotations

import contextlib
import hashlib
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

from tests import fix_env
from tests.faults_outside import HANG_S, TALLIES, ProcessCase, injected
from tests.inprocess import ENV

CPU_INDEX = "packages/stable/cpu"
SITE = Path("lib") / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
_FIX = ("--paddle", "3.3.1", "--no-pull")
_STUB_FAILS = (5,)  # the stub installs, its smoke cannot train (no Paddle in it): rolled back
_SERVED = contextlib.ExitStack()  # the indexes live as long as the process
_URLS: dict[str, str] = {}
_TEMPLATES: dict[str, Path] = {}


def _index(kind: str) -> str:
    """`stub`: an empty paddlepaddle 3.3.1; `real`: the real CPU wheels and their dependencies."""
    if kind not in _URLS:
        root = Path(tempfile.mkdtemp(prefix=f"envcheck-faults-{kind}-index-"))
        if kind == "stub":
            wheels = [fix_env.stub_wheel(root / "wheels", "paddlepaddle", "3.3.1")]
        else:
            wheels = fix_env.wheels()
        fix_env.build_index(root, CPU_INDEX, wheels)
        _URLS[kind] = _SERVED.enter_context(fix_env.serve(root))
    return _URLS[kind]


def _template(kind: str) -> Path:
    """`plain`: a venv with pip; `paddle`: with the real Paddle CPU build, made once."""
    if kind not in _TEMPLATES:
        where = Path(tempfile.mkdtemp(prefix=f"envcheck-faults-{kind}-")) / "venv"
        python = fix_env.make_venv(where)
        if kind == "paddle":  # and a stub GPU build: the plan removes both, the CPU one second
            wheels = str(fix_env.WHEELS)
            fix_env.pip(python, "install", "--no-index", "--find-links", wheels, "paddlepaddle")
            gpu = fix_env.stub_wheel(where.parent / "stub", "paddlepaddle-gpu", "3.3.1")
            fix_env.pip(python, "install", "--no-deps", str(gpu))
        _TEMPLATES[kind] = where
    return _TEMPLATES[kind]


def _venv(tmp: Path, kind: str = "plain") -> Path:
    """A linked copy of a template under `tmp/out` (pip replaces files, never writes into them)."""
    target = tmp / "out" / "venv"
    subprocess.run(["cp", "-al", str(_template(kind)), str(target)], check=True)
    return target


def _env(tmp: Path, index: str) -> dict[str, str]:
    return {
        "HOME": str(tmp / "out" / "home"),
        "ENVCHECK_PADDLE_INDEX": _index(index),
        "PIP_CACHE_DIR": str(tmp / "out" / "pip-cache"),
        "PIP_CONFIG_FILE": os.devnull,
    }


def _fix_argv(python: str, *more: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "envcheck", "fix", "--python", python, *_FIX, *more)


# -- one command each ---------------------------------------------------------------------------


def _elsewhere(tmp: Path) -> dict[str, str]:
    """pip's own variables pointing outside the venv: anything written there is a leak."""
    _venv(tmp)
    return _env(tmp, "stub") | {
        "PIP_TARGET": str(tmp / "target"),
        "PIP_PREFIX": str(tmp / "prefix"),
        "PIP_USER": "1",
        "PYTHONUSERBASE": str(tmp / "user"),
    }


def _shared(tmp: Path) -> dict[str, str]:
    """A hard-linked copy of the Python the tests' venv was made from: outside any venv."""
    subprocess.run(["cp", "-al", sys.base_prefix, str(tmp / "out" / "shared")], check=True)
    return _env(tmp, "stub")


def _untouched_shared(tmp: Path, output: str) -> str | None:
    if (tmp / "out" / "shared" / ".envcheck-fix").exists():
        return "damaged: --yes alone wrote into a shared interpreter"
    return None


def _full_download(tmp: Path) -> dict[str, str]:
    _venv(tmp)
    (tmp / "out" / "small").mkdir()
    return _env(tmp, "real") | {"FIX_SMALL": str(tmp / "out" / "small")}


_DOWNLOAD_FULL = (  # the record fits; Paddle's 186 MB wheel does not. What the fix left on the
    # tmpfs is looked at before the namespace (and the tmpfs) goes
    "unshare",
    "-m",
    "sh",
    "-c",
    'S="$FIX_SMALL"; mount -t tmpfs -o size=120m tmpfs "$S" && cp -a "$S/../venv" "$S/venv" && '
    '{ "$0" -m envcheck fix --python "$S/venv/bin/python" '
    + " ".join(_FIX)
    + " --yes --json --quiet; "
    'c=$?; ls -d "$S"/venv/.envcheck-fix/records/*/wheelhouse 2>/dev/null && echo LEFT-WHEELHOUSE; '
    'grep -q \'"state": "open"\' "$S/venv/.envcheck-fix/journal.json" && echo LEFT-OPEN; exit $c; }',
    sys.executable,
)


def _download_freed(tmp: Path, output: str) -> str | None:
    if "LEFT-WHEELHOUSE" in output:
        return "leak: the failed download's wheelhouse stays on the full disk"
    if "LEFT-OPEN" in output:
        return "damaged: the journal of a fix that changed nothing is left open"
    return None


def _sudo(tmp: Path) -> dict[str, str]:
    """A venv `nobody` owns, where nobody may reach it (access(2) ignores the capability that
    lets nobody read the test's own folders): outside the case's folder, removed by its check."""
    base = Path(tempfile.mkdtemp(prefix="envcheck-faults-sudo-"))
    base.chmod(0o755)
    (tmp / "out" / "base").write_text(str(base))
    venv = base / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=300)
    nobody = pwd.getpwnam("nobody")
    subprocess.run(["chown", "-R", f"{nobody.pw_uid}:{nobody.pw_gid}", str(venv)], check=True)
    env = _env(tmp, "stub")
    sudo = {"SUDO_UID": str(nobody.pw_uid), "SUDO_GID": str(nobody.pw_gid)}
    python = str(venv / "bin" / "python")
    subprocess.run(  # root's fix, as `sudo envcheck fix --yes` runs it: before the case
        _fix_argv(python, "--yes", "--quiet"),
        env=ENV | env | sudo,
        capture_output=True,
        timeout=HANG_S * 10,
        check=False,
    )
    return env | {"FIX_VENV": python}


_AS_NOBODY = (
    "setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+dac_read_search "
    "--ambient-caps=+dac_read_search"
)
_THE_OWNER = (  # after root's fix, the venv's owner: its own fix runs through
    "sh",
    "-c",
    "exec "
    + _AS_NOBODY
    + ' "$0" -m envcheck fix --python "$FIX_VENV" '
    + " ".join(_FIX)
    + " --yes --json --quiet",
)


def _owned(tmp: Path, output: str) -> str | None:
    base = Path((tmp / "out" / "base").read_text())
    venv = base / "venv"
    roots = [p for p in [venv, *venv.rglob("*")] if p.lstat().st_uid == 0]
    shutil.rmtree(base)
    if roots:
        return f"damaged: root still owns {len(roots)} file(s) in the user's venv: {roots[:3]}"
    if "cannot write" in output or "Permission denied" in output:
        return "damaged: the owner's fix met root's files"
    return None


def _managed_said(tmp: Path, output: str) -> str | None:
    if "--yes would be refused" not in output or "externally managed" not in output:
        return "damaged: the dry run does not say that --yes refuses an externally managed Python"
    return None


def pipstep_cases() -> list[ProcessCase]:
    venv = "{tmp}/out/venv/bin/python"
    return [
        ProcessCase(
            "fix",
            "pip-target-prefix-user-in-the-environment",
            ("fix", "--python", venv, *_FIX, "--yes"),
            _STUB_FAILS,
            _elsewhere,
        ),
        ProcessCase(
            "fix",
            "shared-interpreter-yes-alone",
            ("fix", "--python", "{tmp}/out/shared/bin/python3", *_FIX, "--yes"),
            (2,),
            _shared,
            check=_untouched_shared,
            stderr_has="outside any virtual environment or conda prefix",
        ),
        ProcessCase(
            "fix",
            "externally-managed-dry-run",
            ("fix", "--python", "/usr/bin/python3", *_FIX, "--json"),
            (0, 1, 4, 5, 6),
            lambda tmp: _env(tmp, "stub"),
            check=_managed_said,
        ),
        ProcessCase(
            "fix",
            "download-out-of-space",
            (),
            (4,),
            _full_download,
            argv=_DOWNLOAD_FULL,
            check=_download_freed,
        ),
        ProcessCase(
            "fix",
            "sudo-then-the-owner",
            (),
            _STUB_FAILS,
            _sudo,
            check=_owned,
            argv=(*_THE_OWNER, sys.executable),
        ),
    ]


# -- pip cut half-way -------------------------------------------------------------------------


def pip_of(python: str, verb: str) -> int | None:
    needle = f"{python}\0-m\0pip\0{verb}\0".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "cmdline").read_bytes().startswith(needle):
                    return int(entry.name)
    return None


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in "ZX"


def _tree(venv: Path) -> dict[str, str]:
    found = {}
    for path in sorted(venv.rglob("*")):
        rel = path.relative_to(venv).as_posix()
        if rel.startswith(".envcheck-fix") or "__pycache__" in rel:
            continue
        if path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[rel] = "folder"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


KILLS = ("both-while-pip-uninstalls", "envcheck-alone-while-pip-installs")


def pip_killed_case(name: str, tmp: Path) -> None:
    """`fix --yes` killed at a pip step (`both-…`: envcheck and its pip, as a cgroup kill does;
    `envcheck-alone-…`: pip goes on in its own session), then the hinted `--rollback`: the venv
    as it was, no `~` stash, no pip still running after it, no traceback, exit 0."""
    (tmp / "out").mkdir(exist_ok=True)
    both = name.startswith("both")
    venv = _venv(tmp, "paddle" if both else "plain")
    python = str(venv / "bin" / "python")
    site = venv / SITE
    before = _tree(venv)
    hold = tmp / "hold"
    hold.touch()
    env = ENV | _env(tmp, "stub" if both else "real")
    step = "step-2" if both else "step-1"  # the CPU build's removal; the install
    proc = subprocess.Popen(
        _fix_argv(python, "--yes", "--quiet"),
        env=env | {"ENVCHECK_FIX_PAUSE": step, "ENVCHECK_FIX_PAUSE_FILE": str(hold)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if f"paused at {step}" in line:
            break
    hold.unlink()
    verb = "uninstall" if both else "install"
    deadline = time.monotonic() + HANG_S * 5
    pip = None
    while time.monotonic() < deadline and pip is None:
        pip = pip_of(python, verb)
    seen = False
    while pip is not None and time.monotonic() < deadline and not seen:
        if both:
            seen = any(p.name.startswith("~") for p in site.iterdir())
        else:
            seen = (site / "paddle").exists()
            time.sleep(0.01)
    if both and pip is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pip, signal.SIGKILL)
    proc.kill()
    proc.communicate()
    run = subprocess.run(
        _fix_argv(python, "--rollback", "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S * 5,
        check=False,
    )
    after_pip = pip is not None and not gone(pip)
    doc = json.loads(run.stdout or "{}")
    stash = [p.name for p in site.iterdir() if p.name.startswith("~")]
    TALLIES["fix"].record(
        f"sigkill-{name}",
        traceback_seen="Traceback" in run.stderr or run.returncode == 3,
        wrong_exit=not seen or run.returncode != 0 or doc.get("outcome") != "rolled-back",
        injected=injected(run.stdout + run.stderr),
        leaks=len(stash),
        damaged=int(_tree(venv) != before) + int(after_pip),
        detail=f"cut at {verb}: {seen}; exit {run.returncode}; stash {stash}; pip still running "
        f"{after_pip}; {run.stderr[-600:]!r}",
    )


_HUNG = """
import subprocess, sys
from envcheck.edges.signals import unwind_on_signals
from envcheck.fix.runner.apply import run_command
step = "import subprocess, time; c = subprocess.Popen(['sleep', '600']); print(c.pid, flush=True); time.sleep(600)"
with unwind_on_signals():
    try:
        run_command([sys.executable, "-c", step], {}, print, limit=3600)
    except KeyboardInterrupt:
        raise SystemExit(130)
"""
STOPS = {"sigterm": (signal.SIGTERM,), "second-ctrl-c": (signal.SIGINT, signal.SIGINT)}


def hung_step_case(name: str) -> None:
    """A hung step under an hour's bound: SIGTERM or a second Ctrl-C ends it and its child now."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HUNG], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    for signum in STOPS[name]:
        proc.send_signal(signum)
        time.sleep(0.3)
    try:
        _, err = proc.communicate(timeout=HANG_S)
        hung = False
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        hung = True
    deadline = time.monotonic() + HANG_S
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    TALLIES["fix"].record(
        f"hung-step-{name}",
        traceback_seen="Traceback" in err,
        wrong_exit=not hung and proc.returncode != 130,
        leaks=int(not gone(child)),
        hung=hung,
        detail=f"exit {proc.returncode}; child gone {gone(child)}; {err[-300:]!r}",
    )
