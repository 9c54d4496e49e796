"""`envcheck fix --dry-run` next to `envcheck doctor --no-smoke`, measured alternately in one run.

The plan is the doctor's report plus a pure function and one more question to the target, so the
dry run should cost at most 0.1 s more. Prints each median (wall seconds) and the
difference; nothing here asserts: the figures are for people. Both run with bytecode caching on
(PYTHONDONTWRITEBYTECODE removed), as an installed envcheck runs: without it every module is
compiled on every run, and `fix`, which loads a few more modules, pays for that twice (measured:
+0.09 s instead of +0.03 s).

    .venv/bin/python bench/bench_fix.py [--rounds 15] [--python /path/to/venv/bin/python]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--python", help="the target interpreter (default: this one)")
    args = parser.parse_args()
    target = ["--python", args.python] if args.python else []
    envcheck = [sys.executable, "-m", "envcheck"]
    cmds = {
        "doctor --no-smoke": [*envcheck, "doctor", "--no-smoke", "--json", *target],
        "fix --dry-run": [*envcheck, "fix", "--dry-run", "--json", *target],
    }
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    for argv in cmds.values():  # warm the page cache once, not measured
        run_once(argv)
    for _ in range(args.rounds):
        for name, argv in cmds.items():  # alternate, so load drifts hit both alike
            samples[name].append(run_once(argv))
    medians = {name: statistics.median(s) for name, s in samples.items()}
    for name, median in medians.items():
        print(f"{name:20} median {median:.3f} s over {args.rounds} rounds")
    extra = medians["fix --dry-run"] - medians["doctor --no-smoke"]
    print(f"fix --dry-run costs {extra:+.3f} s over the doctor (goal: at most +0.100 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
