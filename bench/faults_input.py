"""The input fault campaign, with its totals: `python bench/faults_input.py`.

Runs tests/integration/test_faults_input.py (facts fuzzed field by field, the matrix broken field
by field, bad flags, hostile files, closed/unencodable/full streams) and prints one line:
`fault campaign (input): N cases, 0 tracebacks, 0 wrong exit codes, 0 injections, 0 leaks,
0 files damaged`. The exit status is pytest's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if __name__ == "__main__":
    suite = Path(__file__).resolve().parents[1] / "tests" / "integration" / "test_faults_input.py"
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", str(suite), *sys.argv[1:]]))
