"""`envcheck report` merging 1,000 saved reports, against reading the same files with `json`.

The fleet is written once into a temporary folder: 1,000 `doctor --json` documents with
60-character host names, a full GPU smoke section each (the recorded workload output of
tests/smoke_samples.py, as a GPU run reports it: ~10 KB a file), one host in three with a problem
(driver/library mismatch, CPU wheel, crashed smoke, unconfirmed tag). Then, alternately, after one
unmeasured warm-up of each (page cache):

- baseline:  a fresh `python -c` that `json.load`s every file and does nothing else: the floor
             any merge pays (interpreter start-up, reading, parsing)
- table:     `envcheck report DIR > /dev/null` (the dashboard as a log gets it)
- json:      `envcheck report --json DIR > /dev/null`

Prints each median wall time beside its ratio to the baseline. Target: the merge
under 2 s. Nothing here asserts: the figures are for people.

    .venv/bin/python bench/bench_fleet.py [--rounds 7] [--hosts 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/ holds the report builders the suite uses

from tests import report_samples as samples
from tests import smoke_samples

TARGET_S = 2.0
BIN = os.path.dirname(sys.executable)
BASELINE = (
    "import glob, json, sys\nfor p in glob.glob(sys.argv[1] + '/*.json'):\n    json.load(open(p))"
)
PROBLEMS = [
    samples.unconfirmed_image_tag,
    samples.driver_upgraded_without_reboot,
    samples.cpu_wheel_in_image,
    samples.smoke_crashed,
]


def write_fleet(folder: Path, hosts: int) -> int:
    smoke = smoke_samples.on_gpu(smoke_samples.result())
    size = 0
    for i in range(hosts):
        build = PROBLEMS[i // 3 % len(PROBLEMS)] if i % 3 == 0 else samples.healthy
        name = f"gpu{i:04d}.rack-{i % 40:02d}.training-cluster-east.example-corp.internal1"[:60]
        doc = build(hostname=name).to_json() | {"smoke": smoke}
        text = json.dumps(doc, indent=2)
        (folder / f"{name}.json").write_text(text, encoding="utf-8")
        size += len(text)
    return size


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one child, from its own rusage (os.wait4).
    On a shared machine the CPU time is the steadier figure; the wall time is what a user waits."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0  # reaped by wait4
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hosts", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="envcheck-fleet-") as tmp:
        folder = Path(tmp)
        size = write_fleet(folder, args.hosts)
        envcheck = os.path.join(BIN, "envcheck")
        cmds = {
            "baseline": [sys.executable, "-c", BASELINE, tmp],
            "table": [envcheck, "report", tmp],
            "json": [envcheck, "report", "--json", tmp],
        }
        samples_s: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
        for argv in cmds.values():  # warm the page cache once, not measured
            run_once(argv)
        for _ in range(args.rounds):
            for name, argv in cmds.items():  # alternate, so load drifts hit every command alike
                samples_s[name].append(run_once(argv))
    median = {name: statistics.median(w for w, _ in v) for name, v in samples_s.items()}
    cpu = {name: statistics.median(c for _, c in v) for name, v in samples_s.items()}
    print(
        f"{args.hosts} reports, {size / 1e6:.1f} MB; rounds: {args.rounds} (alternating); "
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  {'':<22} {'median wall':>11}   {'x baseline':>10}   {'median CPU':>10}   {'x baseline':>10}"
    )
    labels = {
        "baseline": "baseline (json.load)",
        "table": "envcheck report",
        "json": "envcheck report --json",
    }
    for name, label in labels.items():
        print(
            f"  {label:<22} {median[name]:>9.3f} s   {median[name] / median['baseline']:>9.2f}x"
            f"   {cpu[name]:>8.3f} s   {cpu[name] / cpu['baseline']:>9.2f}x"
        )
    worst = max(median["table"], median["json"])
    print(
        f"  target: merge under {TARGET_S:.1f} s -> {'met' if worst < TARGET_S else 'NOT met'} ({worst:.3f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
