"""Refresh envcheck/verdict/known_packages.toml: the package names, versions and indexes a fix may
name.
Run by hand (it asks the registries over the network; nothing in envcheck or its tests does):

    python scripts/refresh_packages.py            # rewrite the file, with today's date
    python scripts/refresh_packages.py --check    # print the new file, write nothing

PyPI is asked through its JSON API (https://pypi.org/pypi/NAME/json): every release with at
least one file that is not yanked. Paddle's own indexes (www.paddlepaddle.org.cn/packages/...)
are asked through the simple API (PEP 503); where one does not answer, its recorded entries
are kept and marked with the date they were last seen, never guessed.

PyPI must answer for every name: offline, or answered with something that is not its JSON (an
HTML captive portal, a proxy's error page, a document without `releases`), the script says which
name and why in one line, writes nothing and exits 4. The file is written whole or not at all,
and only after it has been read back as TOML.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomllib's backport, as envcheck/matrix/toml.py
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "envcheck" / "verdict" / "known_packages.toml"  # what known_packages.py reads
MATRIX = ROOT / "matrix" / "paddle.toml"
PYPI_API = "https://pypi.org/pypi"
PYPI = (
    "nvidia-cudnn-cu11",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-cuda-runtime-cu11",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu13",
    "paddlepaddle",
    "paddlepaddle-gpu",
)
TIMEOUT_S = 30
MAX_ANSWER = 64 * 1024 * 1024  # paddlepaddle-gpu's JSON is a few MB; a bound for a hostile peer
EXIT_ENVIRONMENT = 4  # envcheck's own code for "could not act: registry unreachable"


class RefreshError(Exception):
    """A registry that did not answer, or answered with something that is not its API."""


def pypi_versions(name: str, api: str = PYPI_API) -> list[str]:
    """Every release of `name` on PyPI with at least one file that is not yanked."""
    url = f"{api.rstrip('/')}/{name}/json"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
            body = r.read(MAX_ANSWER + 1)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise RefreshError(f"PyPI did not answer for {name} ({url}): {_reason(e)}") from e
    if len(body) > MAX_ANSWER:
        raise RefreshError(f"PyPI's answer for {name} ({url}) is larger than {MAX_ANSWER} bytes")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as e:  # HTML, a proxy's page, not UTF-8
        raise RefreshError(f"PyPI's answer for {name} ({url}) is not JSON: {_start(body)}") from e
    releases = doc.get("releases") if isinstance(doc, dict) else None
    if not isinstance(releases, dict):
        raise RefreshError(f"PyPI's answer for {name} ({url}) has no `releases` object")
    return sorted((v for v, files in releases.items() if _has_files(files)), key=_key)


def _has_files(files: Any) -> bool:
    """A release with a file that is not yanked (a malformed entry counts as no file)."""
    if not isinstance(files, list):
        return False
    return any(isinstance(f, dict) and f.get("yanked") is not True for f in files)


def index_versions(index: str, name: str) -> list[str] | None:
    """The versions of `name` on a simple index; None when the index does not answer."""
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/{name}/", timeout=TIMEOUT_S) as r:
            page = r.read(MAX_ANSWER).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    stem = name.replace("-", "_")
    found = re.findall(rf">{re.escape(stem)}-([^-<>]+)-[^<]*\.whl<", page)
    return sorted(set(found), key=_key)


def matrix_indexes(matrix: Path = MATRIX) -> dict[str, set[str]]:
    """{index: {name==version}} of every pip command of matrix/paddle.toml."""
    doc = tomllib.loads(matrix.read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}
    for build in doc.get("build", []):
        argv = shlex.split(build.get("pip", ""))
        index = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-i", "-f")), None)
        pins = {a for a in argv if "==" in a}
        if index:
            found.setdefault(index, set()).update(pins)
    return found


def _key(version: str) -> list[tuple[int, int | str]]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.+]", version)]


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: quotes, backslashes and control characters escaped (a
    version holding a `"` wrote a file no TOML reader could read)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _array(items: list[str]) -> str:
    return "[" + ", ".join(toml_string(i) for i in items if _writable(i)) + "]"


def _writable(text: str) -> bool:
    """Not a lone surrogate (from a JSON `\\ud800`): no UTF-8 file can hold one."""
    return not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def render(pypi: dict[str, list[str]], indexes: dict[str, dict[str, Any]], today: str) -> str:
    out = [
        "# The package names, versions and indexes a fix of envcheck may name; nothing else is",
        "# offered to install (tests/integration/test_fix_commands.py checks every fix of every",
        "# scenario).",
        "# Written by `python scripts/refresh_packages.py` (run by hand: it asks PyPI's JSON API and",
        "# Paddle's simple indexes); do not edit by hand.",
        f"refreshed = {toml_string(today)}",
        "",
    ]
    for name, versions in pypi.items():
        out += [f"[pypi.{toml_string(name)}]", f"versions = {_array(versions)}", ""]
    for index, entry in indexes.items():
        if not _writable(index):
            continue
        out += [
            f"[index.{toml_string(index)}]",
            f"pins = {_array(sorted(entry['pins']))}",
            f"seen = {toml_string(str(entry['seen']))}",
            f"how = {toml_string(str(entry['how']))}",
            "",
        ]
    return "\n".join(out)


def recorded(file: Path) -> dict[str, Any]:
    """The file as it stands (its indexes' last-seen dates), or nothing if it cannot be read."""
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    indexes = doc.get("index")
    return {"index": indexes} if isinstance(indexes, dict) else {}


def refresh(api: str, matrix: Path, old: dict[str, Any], today: str) -> str:
    pypi = {name: pypi_versions(name, api) for name in PYPI}
    indexes: dict[str, dict[str, Any]] = {}
    for index, pins in sorted(matrix_indexes(matrix).items()):
        names = {p.split("==")[0] for p in pins}
        asked = {n: index_versions(index, n) for n in names} if "/packages/" in index else {}
        if asked and all(v is not None for v in asked.values()):
            listed = {f"{n}=={v}" for n, vs in asked.items() for v in vs or ()}
            indexes[index] = {"pins": sorted(pins & listed), "seen": today, "how": "simple API"}
        else:
            kept = old.get("index", {}).get(index, {})
            kept = kept if isinstance(kept, dict) else {}
            indexes[index] = {
                "pins": sorted(pins),
                "seen": kept.get("seen", today),
                "how": kept.get("how", "the pins of matrix/paddle.toml (index not reachable)"),
            }
            print(
                f"refresh_packages: {index} did not answer; kept its matrix pins", file=sys.stderr
            )
    return render(pypi, indexes, today)


def write_whole(file: Path, text: str) -> None:
    """`file` replaced by `text` at once: a reader sees the old file or the new, never half."""
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, file)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print the new file, write nothing")
    parser.add_argument("--pypi", default=PYPI_API, help=f"PyPI's JSON API (default {PYPI_API})")
    parser.add_argument("--matrix", type=Path, default=MATRIX, help="the matrix's paddle.toml")
    parser.add_argument("--output", type=Path, default=FILE, help="the file to refresh")
    args = parser.parse_args(argv)
    today = datetime.date.today().isoformat()
    try:
        text = refresh(args.pypi, args.matrix, recorded(args.output), today)
    except RefreshError as e:
        print(f"refresh_packages: error: {e}; nothing written", file=sys.stderr)
        return EXIT_ENVIRONMENT
    tomllib.loads(text)  # never write what the reader could not read (a bug here: a traceback)
    if args.check:
        print(text)
    else:
        write_whole(args.output, text)
        print(f"refresh_packages: wrote {args.output}", file=sys.stderr)
    return 0


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None) or error
    return str(getattr(reason, "strerror", None) or reason)


def _start(body: bytes) -> str:
    """The first characters of an answer, printable, to say what came instead of JSON."""
    text = body[:60].decode("utf-8", "replace")
    return repr(re.sub(r"\s+", " ", text).strip())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
