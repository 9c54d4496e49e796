"""A healthy host's doctor, its container smoke included, as a person sees it in an 80×24 tmux
pane: stdout and stderr on the one terminal, the progress line and the report together.

Before: about 35 rows (ten `✓` lines of finished phases above a 24-row report, a passed smoke's
words over seven rows); a healthy `flutter doctor` is about 12. Now the progress goes when the
work is done and a passed check takes at most two rows. The real engine, the offline Paddle image
and the real CPU Paddle; the host has no driver (as in test_activity.py), so the CPU training is
the healthy outcome.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import ROOT

IMAGE = "envcheck-test/paddle-cpu:3.3.1"
COLUMNS, ROWS = 80, 24
DONE = "envcheck-pane-done"

pytest_plugins = ("tests.fakenv",)  # no_driver
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_driver")]


@pytest.fixture
def pane() -> Iterator[str]:
    """A detached tmux server and 80×24 session of this test's own; its name."""
    assert shutil.which("tmux"), "tmux is needed (scripts/dev setup installs it)"
    name = f"envcheck-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["tmux", "-L", name, "new-session", "-d", "-s", name, "-x", str(COLUMNS), "-y", str(ROWS)],
        check=True,
        timeout=30,
    )
    subprocess.run(["tmux", "-L", name, "set", "-g", "history-limit", "5000"], check=True)
    try:
        yield name
    finally:
        subprocess.run(["tmux", "-L", name, "kill-server"], check=False, timeout=30)


def _run_in(pane: str, folder: Path, *argv: str) -> list[str]:
    """The rows `envcheck ARGV` left in the pane (its scrollback included), up to its end mark;
    what it runs is a script in `folder`, so that the pane's command line is one short row."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "NO_COLOR"))}
    env["TERM"] = "xterm-256color"
    script = folder / "doctor.sh"
    exports = "".join(f"export {shlex.quote(f'{k}={v}')}\n" for k, v in env.items())
    run = shlex.join([sys.executable, "-m", "envcheck", *argv])
    script.write_text(f"{exports}cd {shlex.quote(str(ROOT))}\n{run}\necho {DONE} $?\n")
    keys = f"sh {shlex.quote(str(script))}"
    subprocess.run(["tmux", "-L", pane, "send-keys", "-t", pane, keys, "Enter"], check=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        lines = _lines(pane)
        if any(line.startswith(f"{DONE} ") for line in lines):
            break
        time.sleep(1)
    else:
        pytest.fail("the doctor did not finish in 300 s:\n" + "\n".join(_lines(pane)))
    end = next(i for i, line in enumerate(lines) if line.startswith(f"{DONE} "))
    start = max(i for i, line in enumerate(lines[:end]) if line.endswith(keys))  # the prompt's
    assert lines[end] == f"{DONE} 0", "\n".join(lines)
    return [row for line in lines[start + 1 : end] for row in _wrapped(line)]


def _lines(pane: str) -> list[str]:
    """The pane's lines, its scrollback included, each whole (`-J`: rows a long line wrapped
    over are joined back)."""
    shown = subprocess.run(
        ["tmux", "-L", pane, "capture-pane", "-p", "-J", "-S", "-", "-t", pane],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    return [line.rstrip() for line in shown.splitlines()]


def _wrapped(line: str) -> list[str]:
    """The rows `line` takes at COLUMNS (each character one column: the report's are)."""
    return [line[i : i + COLUMNS] for i in range(0, len(line), COLUMNS)] or [""]


def test_a_healthy_host_with_its_container_smoke_fits_one_screen(pane: str, tmp_path: Path) -> None:
    rows = _run_in(pane, tmp_path, "doctor", "--image", IMAGE)
    text = "\n".join(rows)
    assert "Verdict: PASS (exit 0)" in text and "smoke.pass" in text, text
    assert "✓" not in text  # no finished phase left on the screen
    # the command's own row and the prompt after it are on the screen too
    assert len(rows) + 2 <= ROWS, text
