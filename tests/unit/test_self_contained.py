"""The repository is self-contained: no code, docstring or document points outside it.

A user's clone has neither the workplace's shared folder nor its machine paths: what the project
relies on lives here: sourced facts in `docs/facts/` and beside the matrix, the house style in
`docs/STYLE.md`.
Recordings under `tests/data/` keep what the recorded machine printed (its paths included).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.paths import ROOT

# Built from parts, so that this file does not match itself.
OUTSIDE = re.compile(
    "|".join(
        re.escape(p)
        for p in ("../" + "shared", "/" + "work/", "shared" + "/facts", "shared" + "/STYLE")
    )
)


# A test file as the docs and the code cite it: `tests/unit/test_judge.py`.
CITED_TEST = re.compile(r"(?<![\w/.])tests/(?:\w+/)*test_\w+\.py")


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=30,
    )
    return [ROOT / name for name in out.stdout.decode().split("\0") if name]


def _texts() -> Iterator[tuple[str, str]]:
    """(path from the root, text) of each text file, the recordings under tests/data/ aside."""
    for path in _tracked():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("tests/data/") or not path.is_file():
            continue
        try:
            yield relative, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (an image)


def test_nothing_in_the_repository_points_outside_it() -> None:
    found = []
    for relative, text in _texts():
        found += [
            f"{relative}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), 1)
            if OUTSIDE.search(line)
        ]
    assert not found, "\n".join(found)


def test_the_documents_the_code_cites_are_here() -> None:
    cited = set()
    for path in _tracked():
        if path.suffix in (".py", ".md", ".toml") and path.is_file():
            cited |= set(
                re.findall(
                    r"(?<![\w/])docs/(?:facts/[\w.-]+\.md|STYLE\.md)", path.read_text("utf-8")
                )
            )
    assert cited, "nothing cites docs/: the pattern no longer matches the citations"
    assert sorted(c for c in cited if not (ROOT / c).is_file()) == []


def test_the_test_files_the_repository_cites_are_here() -> None:
    """Docs, comments and scripts name test files by path (`tests/unit/test_layers.py`): a file
    that moves to the other lane, or is renamed, takes its citations with it."""
    missing = [
        f"{relative}: {cited}"
        for relative, text in _texts()
        for cited in CITED_TEST.findall(text)
        if not (ROOT / cited).is_file()
    ]
    assert missing == []
