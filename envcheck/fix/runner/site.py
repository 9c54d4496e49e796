"""What the target interpreter says of itself, asked once: its real executable (a pyenv shim or a
wrapper script resolved to the Python it runs), its real prefix (where the fix keeps its lock,
journal and record), its install folders, and the files of its distributions by their `RECORD`.

The question runs in the target (any Python 3.8+, the standard library only), bounded in time, in
a session of its own so a timeout kills whatever it started.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Collection, Mapping
from typing import Any

from packaging.utils import canonicalize_name

from envcheck.contracts.errors import EnvironmentProblem
from envcheck.contracts.record import record

ASK_TIMEOUT_S = 60.0
_MARK = "envcheck-site:"
_ASK = """
import json, os, sys, sysconfig
try:
    from importlib import metadata
except ImportError:
    metadata = None
wanted = json.loads(sys.argv[1])
dists = []
seen = set()
for d in (metadata.distributions() if metadata else ()):
    name = d.metadata["Name"] or ""
    key = name.lower().replace("_", "-").replace(".", "-")
    if (wanted is not None and key not in wanted) or key in seen:
        continue
    seen.add(key)
    files = []
    for f in d.files or ():
        h = f.hash
        files.append([os.path.normpath(str(f.locate())), h.mode if h else None, h.value if h else None])
    dists.append({"name": name, "version": d.version, "files": files})
paths = sysconfig.get_paths()
print("envcheck-site:" + json.dumps({
    "executable": os.path.realpath(sys.executable) if os.path.islink(sys.executable)
    and not os.path.isfile(os.path.join(sys.prefix, "pyvenv.cfg")) else sys.executable,
    "prefix": os.path.realpath(sys.prefix),
    "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
    "paths": {k: paths.get(k) for k in ("purelib", "platlib", "scripts", "data")},
    "dists": dists,
}))
"""


@record
class Dist:
    """One installed distribution and its files: (absolute path, hash mode, urlsafe b64 digest),
    the hash None where `RECORD` gives none (the RECORD itself, byte code)."""

    name: str  # canonical
    version: str
    files: tuple[tuple[str, str | None, str | None], ...]


@record
class Site:
    executable: str  # the Python that runs: a shim or wrapper resolved once
    prefix: str  # its sys.prefix, real path
    venv: bool
    paths: tuple[tuple[str, str], ...]  # sysconfig's purelib, platlib, scripts, data
    dists: tuple[Dist, ...]

    def dist(self, name: str) -> Dist | None:
        return next((d for d in self.dists if d.name == canonicalize_name(name)), None)

    def path(self, key: str) -> str:
        return dict(self.paths)[key]


def ask_site(python: str, variables: Mapping[str, str], names: Collection[str] | None = ()) -> Site:
    """The target's own answer, with the files of the distributions in `names` (None: all)."""
    wanted = None if names is None else sorted(canonicalize_name(n) for n in names)
    try:
        run = subprocess.run(
            [python, "-c", _ASK, json.dumps(wanted)],
            capture_output=True,
            timeout=ASK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env=dict(variables),
            start_new_session=True,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise EnvironmentProblem(f"{python} did not say what it holds: {e}") from e
    for line in reversed(run.stdout.decode("utf-8", "surrogateescape").splitlines()):
        if line.startswith(_MARK):
            try:
                return _site(json.loads(line[len(_MARK) :]))
            except (ValueError, KeyError, TypeError) as e:
                raise EnvironmentProblem(f"{python} gave an unreadable answer: {e}") from e
    tail = run.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no answer"]
    raise EnvironmentProblem(f"{python} did not say what it holds ({tail[0][:300]})")


def _site(doc: dict[str, Any]) -> Site:
    dists = tuple(
        Dist(
            canonicalize_name(d["name"]),
            str(d["version"]),
            tuple((str(p), mode, value) for p, mode, value in d["files"]),
        )
        for d in doc["dists"]
    )
    paths = tuple((k, str(v)) for k, v in doc["paths"].items() if v)
    return Site(str(doc["executable"]), str(doc["prefix"]), bool(doc["venv"]), paths, dists)
