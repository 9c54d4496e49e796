"""The probe's reading of Paddle's version file (envcheck/probe/paddle_build.py) against Paddle
itself: the venv's real CPU build, imported in a process of its own. The recorded version files of
other builds: tests/unit/test_probe_paddle.py."""

from __future__ import annotations

import subprocess
import sys

from envcheck.probe.interpreter import current_interpreter
from envcheck.probe.paddle_build import probe_paddle


def test_the_real_cpu_wheel_matches_paddles_own_answer() -> None:
    """The venv's real Paddle CPU build: the file read agrees with `paddle.version` imported."""
    facts = probe_paddle(current_interpreter())
    assert facts.status == "ok", facts.reason
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import paddle; print(paddle.version.full_version, paddle.version.cuda(), "
                "paddle.is_compiled_with_cuda())"
            ),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert facts.version == out[0]
    assert (facts.cuda is None) == (out[1] == "False") == (out[2] == "False")
    assert facts.package == "paddlepaddle"
