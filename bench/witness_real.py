"""Does NVML witness what a process did on a real GPU? Run on a machine with a driver and torch.

The smoke's proof rests on NVML: the workload's training window, stamped with the host's clock,
and per-process GPU memory and SM utilisation sampled by `envcheck.smoke.runner.sampler` and judged
by `envcheck.smoke.verdict.witness`. Paddle's GPU build cannot be installed offline, so torch (any
CUDA framework will do: NVML sees processes, not frameworks) plays three workloads:

  trains        a CUDA context and matrix products for the whole window   expected: busy
  context-idle  a CUDA context, then CPU work for the window (the silent   expected: idle
                fallback's pattern: memory on the GPU, no kernels)
  cpu-only      no CUDA at all                                             expected: unseen

    python bench/witness_real.py [--seconds 2] [--json FILE]

Prints one row per workload; exits 1 if a state differs from the expected one, 2 if there is no
driver or no torch (nothing was measured).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envcheck.contracts.facts import to_dict
from envcheck.contracts.smoke_result import TrainWindow
from envcheck.smoke.runner.sampler import NvmlSampler
from envcheck.smoke.verdict.witness import witness

EXPECTED = {"trains": "busy", "context-idle": "idle", "cpu-only": "unseen"}

# The child prints its window as one JSON line, in the host's wall clock, like the workload.
CHILD = r"""
import json, sys, time
case, seconds = sys.argv[1], float(sys.argv[2])
import torch
if case != "cpu-only":
    a = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
time.sleep(0.5)  # the sampler's first samples before the window
start = time.time()
n = 0
if case == "trains":
    while time.time() - start < seconds:
        b = a @ a
        torch.cuda.synchronize()
        n += 1
    check = float(b.sum().cpu())
else:
    x = torch.randn(512, 512)
    while time.time() - start < seconds:
        x = torch.tanh(x @ x)
        n += 1
    check = float(x.sum())
end = time.time()
print(json.dumps({"start": start, "end": end, "steps": n, "check": check}), flush=True)
time.sleep(0.3)
"""


def run_case(case: str, seconds: float) -> dict[str, object]:
    with NvmlSampler(os.environ) as sampler:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, case, str(seconds)], stdout=subprocess.PIPE, text=True
        )
        sampler.watch(child.pid)
        out, _ = child.communicate(timeout=120)
        time.sleep(1.1)  # NVML's utilisation lags up to a second (witness.UTIL_LAG_S)
        summary = sampler.summary()
    window = json.loads(out.strip().splitlines()[-1])
    seen = witness(summary, 0, TrainWindow(window["start"], window["end"]))
    gpu = summary.gpus.get("0")
    return {
        "case": case,
        "expected": EXPECTED[case],
        "state": seen.state,
        "witness": to_dict(seen),
        "window": window,
        "nvml_status": summary.status,
        "nvml_reason": summary.reason,
        "process_query": gpu.process_query if gpu else None,
        "process_util_query": gpu.process_util_query if gpu else None,
        "exit": child.returncode,
        "nvml": to_dict(summary),  # the sampler's whole record: tests replay the witness on it
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        print("no torch with CUDA here: nothing measured", file=sys.stderr)
        return 2
    rows = [run_case(case, args.seconds) for case in EXPECTED]
    if rows[0]["nvml_status"] != "ok":
        print(f"NVML unavailable: {rows[0]['nvml_reason']}", file=sys.stderr)
        return 2
    print(
        f"{'workload':<14}{'expected':<10}{'state':<10}{'samples':>8}{'proc MiB':>10}"
        f"{'util%':>7}{'proc SM%':>9}  queries"
    )
    for r in rows:
        w = r["witness"]
        assert isinstance(w, dict)
        mem = w["process_mem_max_bytes"]
        mem_text = f"{mem / 2**20:.0f}" if mem is not None else "-"
        print(
            f"{r['case']:<14}{r['expected']:<10}{r['state']:<10}{w['samples']:>8}"
            f"{mem_text:>10}"
            f"{w['util_max'] if w['util_max'] is not None else '-':>7}"
            f"{w['process_sm_max'] if w['process_sm_max'] is not None else '-':>9}"
            f"  {r['process_query']}/{r['process_util_query']}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["state"] == r["expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
