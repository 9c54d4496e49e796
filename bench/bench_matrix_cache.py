"""Does the matrix cache (envcheck/matrix/cache.py) matter on the paths users run?

`envcheck doctor --no-smoke --json` on a GPU-less host (no driver: the doctor's whole run is
the floor it could shave) and on the fake GPU host of tests/fakenv (the lent H100's latencies:
cuInit, the slowest probe, overlaps the matrix load). Each host runs the doctor with the cache
warm (a private ENVCHECK_CACHE_DIR, filled by the warm-up run) and off (ENVCHECK_CACHE_DIR=""),
alternated round by round, so load drifts hit both alike. Prints the median wall and CPU time
of each, and the ratio with / without. Nothing here asserts: the figures are for people.

    .venv/bin/python bench/bench_matrix_cache.py [--rounds 15] [--hosts none fake]

The doctor measured is this tree's, run as the `envcheck` command runs it, with its bytecode
cached as an installed wheel has it (see bench_doctor.py, whose runner this bench reuses).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_doctor import DOCTOR, TREE, host_env, run_once


def measure(host: str, rounds: int, work: Path) -> dict[str, list[tuple[float, float, float]]]:
    env = host_env(host, "h100-580-lent", {}, work, True)
    cache = work / "cache"
    envs = {
        "cache": {**env, "ENVCHECK_CACHE_DIR": str(cache)},
        "no cache": {**env, "ENVCHECK_CACHE_DIR": ""},
    }
    argv = [sys.executable, "-c", DOCTOR.format(tree=str(TREE)), "doctor", "--no-smoke", "--json"]
    for variables in envs.values():  # warm: the page cache, the bytecode, the matrix cache
        run_once(argv, variables)
    assert any(cache.iterdir()), "the warm-up run left no cache entry: nothing would be measured"
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in envs}
    for _ in range(rounds):
        for name, variables in envs.items():
            samples[name].append(run_once(argv, variables))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--hosts", nargs="+", choices=("none", "fake"), default=["none", "fake"])
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{args.rounds} alternated rounds; {os.cpu_count()} cores, load {load}")
    for host in args.hosts:
        with tempfile.TemporaryDirectory(prefix="bench-matrix-cache-") as work:
            samples = measure(host, args.rounds, Path(work))
        wall = {n: statistics.median(s[0] for s in v) for n, v in samples.items()}
        cpu = {n: statistics.median(s[2] for s in v) for n, v in samples.items()}
        where = "no driver" if host == "none" else "fake GPU host (h100-580-lent)"
        print(f"doctor --no-smoke --json, {where}:")
        for name in samples:
            print(f"  {name:<9} median wall {wall[name]:.3f} s  CPU {cpu[name]:.3f} s")
        print(
            f"  cache / no cache  wall {wall['cache'] / wall['no cache']:.3f}x"
            f" ({(wall['no cache'] - wall['cache']) * 1000:+.1f} ms saved)"
            f"  CPU {cpu['cache'] / cpu['no cache']:.3f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
