"""Real targets for `envcheck fix`: throwaway venvs, a PEP 503 index on 127.0.0.1 holding the real
Paddle CPU wheel and its dependencies (the ones `scripts/dev setup` downloads), and a tiny stub
wheel that makes a second distribution *present* (the real paddlepaddle-gpu is 2.8 GB)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any

from envcheck.verdict.fixes import and_list, commands_in

ROOT = Path(__file__).resolve().parent.parent
# the wheels `scripts/dev setup` downloads (a worktree may point at its main checkout's)
WHEELS = Path(os.environ.get("ENVCHECK_TEST_WHEELS") or ROOT / ".cache" / "wheels")


def wheels() -> list[Path]:
    found = sorted(WHEELS.glob("*.whl"))
    assert any(w.name.startswith("paddlepaddle-") for w in found), (
        f"no Paddle wheel in {WHEELS}: run `scripts/dev setup` (or set ENVCHECK_TEST_WHEELS)"
    )
    return found


def make_venv(where: Path) -> str:
    """A fresh venv with pip; its python, by absolute path."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return str(where / "bin" / "python")


def pip(python: str, *args: str) -> str:
    run = subprocess.run(
        [python, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def freeze(python: str) -> str:
    return pip(python, "freeze", "--all")


def _name(wheel: Path) -> str:
    return re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()


def build_index(root: Path, path: str, files: list[Path]) -> None:
    """`root/<path>/<project>/<file>`: what http.server lists is a PEP 503 simple index."""
    for wheel in files:
        project = root / path / _name(wheel)
        project.mkdir(parents=True, exist_ok=True)
        link = project / wheel.name
        if not link.exists():
            link.symlink_to(wheel)


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """http://127.0.0.1:PORT serving `root` until the block ends."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def stub_wheel(folder: Path, name: str, version: str, requires: Sequence[str] = ()) -> Path:
    """A valid, empty wheel: installing it only adds `name`'s dist-info (its presence), and its
    `requires` (Requires-Dist lines) for `pip check` to hold it to."""
    dist = f"{name.replace('-', '_')}-{version}"
    needs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + needs,
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: envcheck-tests\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},sha256={_digest(text)},{len(text.encode())}" for path, text in files.items()]
    files[f"{dist}.dist-info/RECORD"] = "\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name_in_zip, text in files.items():
            zf.writestr(name_in_zip, text)
    return path


def _digest(text: str) -> str:
    raw = hashlib.sha256(text.encode()).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# -- what the doctor advises and what the plan installs --------------------------------------


def paddle_installs(argvs: Iterable[Sequence[str]]) -> set[tuple[str, str | None]]:
    """(package==version, index or links page) of every Paddle install among `argvs`."""
    found: set[tuple[str, str | None]] = set()
    for argv in argvs:
        if list(argv[1:4]) != ["-m", "pip", "install"]:
            continue
        for requirement in (a for a in argv[4:] if a.startswith("paddlepaddle")):
            where = next((v for a, v in pairwise(argv) if a in INDEX_OPTIONS), None)
            found.add((requirement, where))
    return found


INDEX_OPTIONS = ("-i", "--index-url", "-f", "--find-links")


def advised(fixes: Iterable[str | None]) -> set[tuple[str, str | None]]:
    """What the doctor's printed fixes install: each command between backticks."""
    commands = [c for fix in fixes if fix for c in commands_in(fix)]
    return paddle_installs(argv for c in commands for argv in and_list(shlex.split(c)))


def planned(steps: Iterable[dict[str, Any]]) -> set[tuple[str, str | None]]:
    return paddle_installs(s["argv"] for s in steps if s["kind"] == "install")
