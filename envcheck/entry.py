"""The `envcheck` command itself (the console script, `python -m envcheck`): a probing doctor's
CUDA child starts here, before anything else is imported, then `envcheck.cli.main` runs.

`cuInit` (~0.2 s on an H100) is the slowest thing the doctor waits for, and importing the CLI
(argparse alone is ~10 ms on a busy two-core machine) would only delay it: envcheck/probe/early.py
guesses from the command line whether it will be needed, the doctor's host probe adopts it, and
a child nobody adopted is reaped on the way out. `envcheck.cli.main` called directly (tests,
in-process) starts its probe in the doctor, and otherwise runs exactly as here.
"""

from __future__ import annotations

import os
import sys

from envcheck.probe.early import discard_early, start_early


def main() -> int:
    argv = sys.argv[1:]
    # the process's variables, the very mapping `Environment.from_process()` hands the command
    # (the doctor adopts a child started on them): envcheck.contracts.command_env costs ~10 ms of
    # imports this early, before the CUDA child is on its way
    start_early(argv, os.environ)
    try:
        from envcheck.cli import main as run

        return run(argv)
    finally:
        discard_early()
