"""The GPU runner recipe (not buildable offline): what it copies exists, and what it runs is a
command line envcheck accepts."""

from __future__ import annotations

import json
import re

from envcheck.cli import build_parser
from tests.paths import ROOT

RUNNER = ROOT / "images" / "runner" / "Dockerfile"


def test_runner_copies_existing_paths_from_an_official_paddle_gpu_image() -> None:
    text = RUNNER.read_text()
    assert re.search(r"^FROM paddlepaddle/paddle:\S+-gpu-cuda", text, re.MULTILINE)
    for line in re.findall(r"^COPY (.+)$", text, re.MULTILINE):
        for source in line.split()[:-1]:
            assert (ROOT / source).exists(), source


def test_runner_default_command_is_accepted_by_the_cli() -> None:
    text = RUNNER.read_text()
    entry_line = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.MULTILINE)
    cmd_line = re.search(r"^CMD (\[.*\])$", text, re.MULTILINE)
    assert entry_line and cmd_line, text
    entry, cmd = json.loads(entry_line.group(1)), json.loads(cmd_line.group(1))
    assert entry == ["envcheck"]
    args = build_parser().parse_args(cmd)
    assert args.command == "doctor" and args.in_process and args.expect_gpu
