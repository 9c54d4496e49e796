"""envcheck doctor --no-smoke --json against its baselines, measured alternately in one run.

Baselines: the nearest peer tool, `env-doctor check --json` (PyPI env-doctor), and Paddle's own
`python -c "import paddle; paddle.utils.run_check()"`. Prints every median (wall seconds, peak
RSS MB of the child) and the ratios. Targets (issue 2): wall <= 0.5x env-doctor and <= 0.15x
run_check; peak RSS <= 45 MB. Nothing here asserts: the figures are for people.

    .venv/bin/python bench/bench_doctor.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

BIN = os.path.dirname(sys.executable)


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one child, from its own rusage (os.wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0  # reaped by wait4
    return wall, usage.ru_maxrss / 1024


def commands() -> dict[str, list[str]]:
    cmds = {"envcheck": [os.path.join(BIN, "envcheck"), "doctor", "--no-smoke", "--json"]}
    env_doctor = shutil.which("env-doctor", path=BIN) or shutil.which("env-doctor")
    if env_doctor:
        cmds["env-doctor"] = [env_doctor, "check", "--json"]
    else:
        print(
            "env-doctor not installed (`pip install env-doctor`): that baseline is left out",
            file=sys.stderr,
        )
    cmds["run_check"] = [sys.executable, "-c", "import paddle; paddle.utils.run_check()"]
    return cmds


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    cmds = commands()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for argv in cmds.values():  # warm the page cache once, not measured
        run_once(argv)
    for _ in range(args.rounds):
        for name, argv in cmds.items():  # alternate, so load drifts hit every command alike
            samples[name].append(run_once(argv))
    wall = {n: statistics.median(w for w, _ in v) for n, v in samples.items()}
    rss = {n: statistics.median(r for _, r in v) for n, v in samples.items()}
    print(f"rounds: {args.rounds} (alternating), machine: {os.cpu_count()} cores")
    for name in cmds:
        print(f"  {name:<11} median wall {wall[name]:.3f} s   median peak RSS {rss[name]:.1f} MB")
    for base, target in (("env-doctor", 0.5), ("run_check", 0.15)):
        if base in wall:
            ratio = wall["envcheck"] / wall[base]
            print(f"  envcheck / {base:<10} wall ratio {ratio:.3f}  (target <= {target})")
    print(f"  envcheck peak RSS {rss['envcheck']:.1f} MB (target <= 45 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
