"""The target's pip, run by the fix (the I/O): refuse an externally managed interpreter, record
`pip freeze` and `pip config list`, download a build and its dependencies into a wheelhouse, ask
the resolver what an install would change (`--dry-run --report`), run a step, and `pip check`.

pip runs in a session of its own (a Ctrl-C at the terminal does not reach it) under
`signals.deferred()`: a first Ctrl-C waits for the running pip to finish, never cuts it half-way;
a second one, or SIGTERM (a scheduler's last word before its SIGKILL), stops the step's process
group at once, as does outliving its bound, and the fix rolls back. pip's own variables that send
an install elsewhere or change what it installs (PIP_TARGET, PIP_PREFIX, PIP_USER, …) are
neutralised for every pip command. Only the target's pip is ever run; never `sudo`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from envcheck.contracts.errors import EnvironmentProblem, UsageError
from envcheck.contracts.record import record
from envcheck.edges.signals import deferred, stop_asked
from envcheck.fix.outcome import Change, Ran
from envcheck.fix.plan import PIP_OVERRIDE

if TYPE_CHECKING:
    import urllib.request

ASK_TIMEOUT_S = 30.0
STEP_LIMIT_S = 3600.0  # a pip step that runs longer is hung: killed with its process group
READ_LIMIT_S = 120.0  # a read-only pip command (freeze, config, check, a dry run)
INDEX_TIMEOUT_S = 5.0  # an index that does not answer the first request in this is given up on
TAIL_LINES = 20  # a failed step's last lines, shown with where its whole log is
LIMIT_ENV = "ENVCHECK_FIX_STEP_LIMIT"  # seconds; a smaller bound for a slow or hung pip
# Set to pip's "no" for every pip command: an environment variable outranks pip.conf, so where the
# user's environment or configuration sets one of these the install still goes into the target's
# own site-packages, with the plan's packages and nothing else.
NEUTRAL = {
    **{f"PIP_{name}": "" for name in ("TARGET", "PREFIX", "ROOT", "SRC", "REPORT")},
    **{f"PIP_{name}": "" for name in ("REQUIREMENT", "CONSTRAINT", "EDITABLE")},
    **{
        f"PIP_{name}": "0"
        for name in (
            "USER",
            "UPGRADE",
            "FORCE_REINSTALL",
            "IGNORE_INSTALLED",
            "NO_DEPS",
            "DRY_RUN",
        )
    },
}
QUIET_PIP = {**NEUTRAL, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
# pip's own bounds on the network: a black-holed index is given up on in seconds, not minutes
NETWORK = ("--timeout", "10", "--retries", "1")
_VALUED = {
    *("-i", "--index-url", "-f", "--find-links", "--extra-index-url", "-c", "--constraint"),
    *("-d", "--dest", "--timeout", "--retries", "--report"),
}
_ASK = (
    "import json, os, sys, sysconfig; m = os.path.join(sysconfig.get_path('stdlib'), "
    "'EXTERNALLY-MANAGED'); print(json.dumps({'prefix': sys.prefix, 'venv': sys.prefix != "
    "sys.base_prefix, 'marker': m if os.path.isfile(m) else None}))"
)


def refuse_externally_managed(
    python: str, pip_flags: Sequence[str], variables: Mapping[str, str]
) -> None:
    """PEP 668: a distribution's interpreter outside a venv is its package manager's; pip's own
    override (`--break-system-packages`) is the user's to give, never ours."""
    info = _ask(python, variables)
    if info["venv"] or not info["marker"] or PIP_OVERRIDE in pip_flags:
        return
    raise UsageError(
        f"{python} is externally managed (PEP 668: {info['marker']}); envcheck fix will not "
        "install into it",
        hint=f"use a virtual environment (`{python} -m venv /path/to/venv`, then "
        f"--python /path/to/venv/bin/python), or pass pip's own override {PIP_OVERRIDE}",
    )


def _ask(python: str, variables: Mapping[str, str]) -> dict[str, Any]:
    try:
        out = subprocess.run(
            [python, "-c", _ASK],
            capture_output=True,
            text=True,
            timeout=ASK_TIMEOUT_S,
            check=True,
            stdin=subprocess.DEVNULL,
            env=dict(variables),
        ).stdout
        answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        raise EnvironmentProblem(f"{python} did not say where it installs: {e}") from e
    return answer


def step_limit(variables: Mapping[str, str]) -> float:
    try:
        limit = float(variables.get(LIMIT_ENV, STEP_LIMIT_S))
    except ValueError:
        return STEP_LIMIT_S
    return limit if limit > 0 else STEP_LIMIT_S


def run_command(
    argv: Sequence[str],
    variables: Mapping[str, str],
    echo: Callable[[str], None] | None = None,
    *,
    limit: float = STEP_LIMIT_S,
    inherit: Sequence[int] = (),
) -> Ran:
    """Run one step to its end (or its bound): its own session, output kept (its tail) and
    echoed line by line; past `limit` seconds, or on a signal that asks to stop (a second
    Ctrl-C, SIGTERM), it is killed with everything it started. `inherit`: file descriptors the
    step keeps open (the environment's lock: held as long as the step runs)."""
    started = time.monotonic()
    lines: list[str] = []
    killed = False
    why = f"after {limit:g} s"
    with deferred():
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**variables, **QUIET_PIP},
            pass_fds=tuple(inherit),
        )
        assert proc.stdout is not None
        pending = b""
        with proc.stdout:
            while True:
                left = started + limit - time.monotonic()
                asked = stop_asked()
                if left <= 0 or asked is not None:
                    if asked is not None:
                        why = f"on {signal.Signals(asked).name}, asked to stop"
                    killed = _kill_group(proc.pid)
                    break
                ready, _, _ = select.select([proc.stdout], [], [], min(left, 0.2))
                if not ready:
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                *complete, pending = (pending + chunk).split(b"\n")
                for raw in complete:
                    line = raw.decode("utf-8", "replace").rstrip("\r")
                    lines.append(line)
                    del lines[:-200]
                    if echo is not None:
                        echo(line)
        code = proc.wait()
    if killed:
        hung = " (hung)" if why.startswith("after") else ""
        lines.append(f"envcheck: killed {why} with its process group{hung}")
    tail = "\n".join(lines[-TAIL_LINES:])
    return Ran(tuple(argv), code, round(time.monotonic() - started, 3), tail, killed)


def _kill_group(pid: int) -> bool:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def capture(argv: Sequence[str], variables: Mapping[str, str], *, ok: Sequence[int] = (0,)) -> str:
    """A read-only pip command's stdout, exactly (`pip freeze`, `pip config list`)."""
    try:
        run = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="surrogateescape",
            check=False,
            stdin=subprocess.DEVNULL,
            env={**variables, **QUIET_PIP},
            timeout=READ_LIMIT_S,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as e:
        raise EnvironmentProblem(f"`{' '.join(argv)}` did not end in {READ_LIMIT_S:g} s") from e
    except OSError as e:
        raise EnvironmentProblem(f"`{' '.join(argv)}` could not run: {e}") from e
    if run.returncode not in ok:
        raise EnvironmentProblem(
            f"`{' '.join(argv)}` failed ({run.returncode}): {run.stderr.strip()[-400:]}",
            hint="envcheck fix records the target's packages before changing them; "
            "make its pip work first",
        )
    return run.stdout


def freeze(python: str, variables: Mapping[str, str]) -> str:
    return capture([python, "-m", "pip", "freeze", "--all"], variables)


def pip_config(python: str, variables: Mapping[str, str]) -> str:
    return capture([python, "-m", "pip", "config", "list"], variables)


def pip_check(python: str, variables: Mapping[str, str]) -> frozenset[str]:
    """What `pip check` finds wrong (one line each); empty when it finds nothing."""
    out = capture([python, "-m", "pip", "check"], variables, ok=(0, 1))
    return frozenset(
        line.strip()
        for line in out.splitlines()
        if line.strip() and not line.startswith("No broken requirements")
    )


def requirements(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """An install's arguments (after `pip install`) split into (requirements, options)."""
    wanted: list[str] = []
    options: list[str] = []
    it = iter(args)
    for arg in it:
        if arg in _VALUED:
            options += [arg, next(it, "")]
        elif arg.startswith("-"):
            options.append(arg)
        else:
            wanted.append(arg)
    return wanted, options


_WHERE = ("-i", "--index-url", "-f", "--find-links", "--extra-index-url")


def indexes(args: Sequence[str]) -> list[str]:
    """The indexes and links pages an install's arguments name."""
    it = iter(args)
    return [next(it, "") for arg in it if arg in _WHERE[:4]]


def configured(args: Sequence[str]) -> list[str]:
    """An install's arguments without the indexes they name: what pip then looks in is the
    user's own configuration (pip.conf, PIP_INDEX_URL; PyPI where none is set)."""
    kept: list[str] = []
    it = iter(args)
    for arg in it:
        if arg in _WHERE:
            next(it, "")
        else:
            kept.append(arg)
    return kept


def probe_index(
    url: str, project: str, variables: Mapping[str, str], timeout: float = INDEX_TIMEOUT_S
) -> str | None:
    """Whether the index at `url` answers for `project` (its PEP 503 page), in seconds rather
    than pip's minutes of retries: None when it does, else why not. The command's proxy
    variables apply, as they do to its pip."""
    page = url if url.endswith(".html") else f"{url.rstrip('/')}/{canonicalize_name(project)}/"
    import urllib.error  # the HTTP client loads only where an index is asked (a plan installs)

    if urllib.parse.urlsplit(page).scheme not in ("http", "https"):
        return None  # a local folder or file: pip reads it, nothing to wait for
    try:
        with _opener(page, variables).open(_request(page), timeout=timeout) as answer:
            answer.read(1)
    except urllib.error.HTTPError as e:
        return f"answered {e.code} for {page}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, TimeoutError):
            return f"did not answer within {timeout:g} s"
        return f"did not answer ({reason})"
    return None


def _request(url: str) -> urllib.request.Request:
    """The page asked as pip asks it: a `user:token@` in the URL sent as HTTP basic auth (urllib
    would take it for part of the host name, and the index would seem not to answer)."""
    import base64
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return urllib.request.Request(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{parts.port}" if parts.port else ""
    user = urllib.parse.unquote(parts.username)
    secret = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{secret}".encode()).decode()
    plain = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return urllib.request.Request(plain, headers={"Authorization": f"Basic {token}"})


def _opener(url: str, variables: Mapping[str, str]) -> urllib.request.OpenerDirector:
    import urllib.request

    lowered = {k.lower(): v for k, v in variables.items()}
    proxies = {s: lowered[f"{s}_proxy"] for s in ("http", "https") if lowered.get(f"{s}_proxy")}
    host = urllib.parse.urlsplit(url).hostname or ""
    skip = [n.strip().lstrip(".") for n in lowered.get("no_proxy", "").split(",") if n.strip()]
    bypass = any(n == "*" or host == n or host.endswith(f".{n}") for n in skip)
    return urllib.request.build_opener(urllib.request.ProxyHandler({} if bypass else proxies))


@record
class Resolution:
    """What `pip install ARGS` would change, as its resolver said, and where it would fetch each
    requested distribution from (the file's URL, as the report's `download_info` gives it)."""

    changes: tuple[Change, ...]
    sources: tuple[str, ...] = ()


def dry_run(
    python: str,
    args: Sequence[str],
    variables: Mapping[str, str],
    installed: Mapping[str, str],
) -> Resolution:
    """What `pip install ARGS` would change in the target, as its resolver says
    (`--dry-run --report`), against `installed` ({canonical name: version})."""
    with tempfile.TemporaryDirectory(prefix="envcheck-fix-") as folder:
        report = os.path.join(folder, "report.json")
        argv = [python, "-m", "pip", "install", "--dry-run", "--quiet", "--report", report, *args]
        capture(argv, variables)
        with open(report, encoding="utf-8") as f:
            doc = json.load(f)
    changes, sources = [], []
    for item in doc.get("install", []):
        meta = item.get("metadata", {})
        name, version = canonicalize_name(str(meta.get("name", ""))), str(meta.get("version", ""))
        if installed.get(name) != version:
            changes.append(Change(name, installed.get(name), version, bool(item.get("requested"))))
        url = item.get("download_info", {}).get("url") if isinstance(item, dict) else None
        if item.get("requested") and isinstance(url, str):
            sources.append(url)
    return Resolution(tuple(sorted(changes, key=lambda c: c.name)), tuple(sources))


def versions(python: str, variables: Mapping[str, str]) -> dict[str, str]:
    """{canonical name: version} of every distribution the target holds (`pip list`), a build
    installed from a file or a URL included."""
    try:
        listed = json.loads(capture([python, "-m", "pip", "list", "--format=json"], variables))
        return {canonicalize_name(d["name"]): str(d["version"]) for d in listed}
    except (ValueError, KeyError, TypeError) as e:
        raise EnvironmentProblem(f"`{python} -m pip list` gave an unreadable answer: {e}") from e


def installed_versions(frozen: str) -> dict[str, str]:
    """{canonical name: version} of `pip freeze --all`: `name==version`, or for a distribution
    installed from a URL or a file (`name @ file:///…whl`) the `@ …` that says where from."""
    found: dict[str, str] = {}
    for raw in frozen.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "-e ")):
            continue
        name, sep, version = line.partition("==")
        if not sep:
            name, sep, where = line.partition(" @ ")
            version = f"@ {where}" if sep else ""
        if sep:
            found[canonicalize_name(name.strip())] = version.strip()
    return found
