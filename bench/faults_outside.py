"""The outside fault campaign, with its totals: `python bench/faults_outside.py`.

Runs tests/integration/test_faults_outside.py (live probes, the smoke's output, a fake engine, fake
registries read by envcheck and by the real dockerd, hostile fleets and GitHub files, a reader
that leaves, damaged state, SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 and a SIGKILL whose leftovers the next
run removes, the CI gate's shell steps under hostile inputs, facts documents without evidence, FIFOs
where a matrix file or a named input should be, the fix and its pip steps: pip killed half-way, a
full disk during the download, a hung step stopped, pip's variables pointing elsewhere, root fixing
a user's venv, a shared or externally managed interpreter) and prints one line per surface:
`fault campaign (engine): N cases, 0 tracebacks, 0 wrong exit codes, 0 injections, 0 leaks,
0 files damaged, 0 hangs`, then the sum. The exit status is pytest's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if __name__ == "__main__":
    suite = Path(__file__).resolve().parents[1] / "tests" / "integration" / "test_faults_outside.py"
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", str(suite), *sys.argv[1:]]))
