"""Refresh envcheck/verdict/known_packages.toml: the package names, versions and indexes a fix may
name.
Run by hand (it asks the registries over the network; nothing in envcheck or its tests does):

    python scripts/refresh_packages.py            # rewrite the file, with today's date
    python scripts/refresh_packages.py --check    # print what changed, write nothing

PyPI is asked through its JSON API (https://pypi.org/pypi/NAME/json): every release with at
least one file that is not yanked. Paddle's own indexes (www.paddlepaddle.org.cn/packages/...)
are asked through the simple API (PEP 503); where one does not answer, its recorded entries
are kept and marked with the date they were last seen, never guessed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "envcheck" / "known_packages.toml"
MATRIX = ROOT / "matrix" / "paddle.toml"
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


def pypi_versions(name: str) -> list[str]:
    with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=TIMEOUT_S) as r:
        doc = json.load(r)
    return sorted(
        (
            v
            for v, files in doc["releases"].items()
            if files and not all(f["yanked"] for f in files)
        ),
        key=_key,
    )


def index_versions(index: str, name: str) -> list[str] | None:
    """The versions of `name` on a simple index; None when the index does not answer."""
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/{name}/", timeout=TIMEOUT_S) as r:
            page = r.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return None
    stem = name.replace("-", "_")
    found = re.findall(rf">{re.escape(stem)}-([^-]+)-[^<]*\.whl<", page)
    return sorted(set(found), key=_key)


def matrix_indexes() -> dict[str, set[str]]:
    """{index: {name==version}} of every pip command of matrix/paddle.toml."""
    doc = tomllib.loads(MATRIX.read_text())
    found: dict[str, set[str]] = {}
    for build in doc.get("build", []):
        argv = shlex.split(build.get("pip", ""))
        index = next((argv[i + 1] for i, a in enumerate(argv) if a in ("-i", "-f")), None)
        pins = {a for a in argv if "==" in a}
        if index:
            found.setdefault(index, set()).update(pins)
    return found


def _key(version: str) -> list[object]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.+]", version)]


def render(pypi: dict[str, list[str]], indexes: dict[str, dict[str, object]], today: str) -> str:
    out = [
        "# The package names, versions and indexes a fix of envcheck may name; nothing else is",
        "# offered to install (tests/test_fix_commands.py checks every fix of every scenario).",
        "# Written by `python scripts/refresh_packages.py` (run by hand: it asks PyPI's JSON API and",
        "# Paddle's simple indexes); do not edit by hand.",
        f'refreshed = "{today}"',
        "",
    ]
    for name, versions in pypi.items():
        out += [
            f'[pypi."{name}"]',
            "versions = [" + ", ".join(f'"{v}"' for v in versions) + "]",
            "",
        ]
    for index, entry in indexes.items():
        out.append(f'[index."{index}"]')
        out.append("pins = [" + ", ".join(f'"{p}"' for p in entry["pins"]) + "]")  # type: ignore[union-attr]
        out.append(f'seen = "{entry["seen"]}"')
        out.append(f'how = "{entry["how"]}"')
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print the new file, write nothing")
    args = parser.parse_args(argv)
    today = datetime.date.today().isoformat()
    old = tomllib.loads(FILE.read_text()) if FILE.exists() else {}
    pypi = {name: pypi_versions(name) for name in PYPI}
    indexes: dict[str, dict[str, object]] = {}
    for index, pins in sorted(matrix_indexes().items()):
        names = {p.split("==")[0] for p in pins}
        asked = {n: index_versions(index, n) for n in names} if "/packages/" in index else {}
        if asked and all(v is not None for v in asked.values()):
            listed = {f"{n}=={v}" for n, vs in asked.items() for v in vs or ()}
            indexes[index] = {"pins": sorted(pins & listed), "seen": today, "how": "simple API"}
        else:
            kept = old.get("index", {}).get(index, {})
            indexes[index] = {
                "pins": sorted(pins),
                "seen": kept.get("seen", today),
                "how": kept.get("how", "the pins of matrix/paddle.toml (index not reachable)"),
            }
            print(
                f"refresh_packages: {index} did not answer; kept its matrix pins", file=sys.stderr
            )
    text = render(pypi, indexes, today)
    if args.check:
        print(text)
    else:
        FILE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
