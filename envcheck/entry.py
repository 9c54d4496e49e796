"""The `envcheck` command itself (the console script, `python -m envcheck`): a probing doctor's
CUDA child starts here, before anything else is imported, then `envcheck.cli.main` runs.

`cuInit` (~0.2 s on an H100) is the slowest thing the doctor waits for, and importing the CLI
(argparse alone is ~10 ms on a busy two-core machine) would only delay it: the host probe
guesses from the command line whether it will be needed (envcheck/probe/host.py), the doctor
adopts it, and a probe nobody adopted is reaped on the way out (#27.2). `envcheck.cli.main`
called directly (tests, in-process) starts its probe in the doctor, as before.
"""

from __future__ import annotations

import os
import sys

from envcheck.probe.host import discard_early, start_early


def main() -> int:
    argv = sys.argv[1:]
    # the process's variables, the very mapping `Environment.from_process()` hands the command
    # (the doctor adopts a probe started on them): envcheck.environment costs ~10 ms of imports
    # this early, before the CUDA child is on its way
    start_early(argv, os.environ)
    try:
        from envcheck.cli import main as run

        return run(argv)
    finally:
        discard_early()
