"""The README is what a newcomer reads first: short, every link there, the exit codes as the code
has them, every command one that envcheck accepts, and its sample report one that envcheck
prints on this machine."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from envcheck import __version__
from envcheck.cli import build_parser
from envcheck.contracts.exitcodes import EXIT_CODES
from tests.conftest import PADDLE_CPU
from tests.inprocess import run_envcheck
from tests.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_LINES = 150  # what a newcomer reads in two minutes


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README, re.DOTALL)


def _commands(tool: str) -> list[list[str]]:
    found = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == tool:
                found.append(words)
    return found


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= MAX_LINES


def test_the_readme_lists_every_exit_code_as_the_code_does() -> None:
    table = re.findall(r"^\| (\d+) \| (.+) \|$", README, re.MULTILINE)
    assert table == [(str(int(code)), words) for code, words in EXIT_CODES]


def test_every_link_in_the_readme_exists() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    for link in links:
        assert (ROOT / link).exists(), link


@pytest.mark.parametrize("doc", sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_relative_link_in_the_docs_exists(doc: Path) -> None:
    for link in re.findall(r"\]\(([^)#:]+)\)", doc.read_text(encoding="utf-8")):
        assert (doc.parent / link).exists(), f"{doc.name}: {link}"


def test_every_envcheck_command_in_the_readme_is_one_envcheck_accepts() -> None:
    commands = _commands("envcheck")
    assert {c[1] for c in commands} >= {"doctor", "fix", "pull-image", "report"}
    for words in commands:
        build_parser().parse_args(words[1:])  # argparse exits 2 on anything it refuses


def test_the_readme_wheel_is_the_one_pip_builds(tmp_path: Path) -> None:
    """`pip wheel --no-deps -w dist .` then `pip install dist/<the name the README gives>`."""
    (built,) = [w for w in _commands("pip") if w[1] == "wheel"]
    (named,) = [w[-1] for w in _commands("pip") if w[1] == "install" and w[-1].endswith(".whl")]
    assert named == f"dist/paddle_envcheck-{__version__}-py3-none-any.whl"
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", *[str(out) if w == "dist" else w for w in built[1:]]],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = out / Path(named).name
    with zipfile.ZipFile(wheel) as z:  # the file the README names, and a whole envcheck in it
        assert "envcheck/cli.py" in z.namelist()


@pytest.mark.docker
def test_the_readme_report_is_what_the_doctor_prints_here() -> None:
    """The sample report's checks, verdict and proof are those of `bash scripts/dev doctor`
    (the smoke in the locally built image) on this machine kind."""
    (sample,) = [b for b in _blocks("text") if b.startswith("envcheck ")]
    done = run_envcheck(["doctor", "--image", PADDLE_CPU, "--no-pull"])
    assert done.returncode == 0, done.stderr

    def ids(text: str) -> list[str]:
        return re.findall(r"^  (?:PASS|WARN|FAIL)  (\S+)", text, re.MULTILINE)

    def tail(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith(("Verdict:", "Proof:"))]

    assert ids(sample) == ids(done.stdout)
    assert tail(sample) == tail(done.stdout)
