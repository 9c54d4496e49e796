"""The in-container smoke against a bare `docker run --rm IMAGE python -c "import paddle"`.

Measured alternately in one run, after one unmeasured warm-up of each (page cache, image layers):

- bare:      `docker run --rm IMAGE python -c "import paddle"` (the docker CLI, wall time)
- smoke:     the smoke container's whole life through the SDK: sweep + create → start → the
             result read → removed (`SmokeContainer`), on an already connected client
- doctor:    `smoke_check(...)` as the doctor calls it: connect, image check, the above, judging

- baseline:  the same smoke container running the workload as it was at `--baseline REV` (default:
             before the smoke gained the text-CNN head, the DataLoader worker and the default Adam),
             read from git, beside today's: today's must stay within 1.2 x of it

Target: smoke <= 1.5 x bare on this machine. Prints the medians, the ratios, and the
smoke's own figures (steps/s, import and first-step seconds inside the container), and the
share of the smoke's wall time spent in the known-answer checks (target under 5 %;
the workload times them itself, `checks_s`, before and after training together).

    .venv/bin/python bench/bench_smoke.py [--rounds 7] [--image envcheck-test/paddle-cpu:3.3.1]
        [--baseline REV | --no-baseline]
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
from typing import Any

from envcheck.contracts.facts import EngineFacts, HostFacts, PaddleFacts
from envcheck.contracts.host_report import ImageChoice
from envcheck.engine.docker_adapter import connect
from envcheck.probe.endpoint import resolve_endpoint
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.parse import parse_result
from envcheck.smoke.runner.check import smoke_check
from envcheck.smoke.runner.container import SmokeContainer
from envcheck.smoke.runner.container_spec import ContainerSpec
from envcheck.smoke.runner.payload import WORKLOAD

TARGET_RATIO = 1.5
TARGET_CHECKS_SHARE = 0.05
# The workload before its text-CNN head (embedding -> mean -> dropout -> linear, batches made on the
# device, fused multi-tensor Adam): today's smoke must stay within TARGET_BASELINE_RATIO of it.
BASELINE_REV = "944dd38"
TARGET_BASELINE_RATIO = 1.2


def bare(image: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["docker", "run", "--rm", image, "python", "-c", "import paddle"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=300,
    )
    return time.perf_counter() - start


def smoke(
    client: Any, image: str, steps: int, script: Path = WORKLOAD
) -> tuple[float, dict[str, Any]]:
    spec = ContainerSpec(
        image=image, args=("--device", "cpu", "--steps", str(steps)), script=script, timeout=300
    )
    start = time.perf_counter()
    with SmokeContainer(client, spec, variables=os.environ, stderr=sys.stderr) as box:
        raw = box.run()
    elapsed = time.perf_counter() - start
    if raw.exit_code != 0 or not raw.stdout:
        raise SystemExit(
            f"the smoke failed: exit {raw.exit_code}, {raw.stdout_bytes} bytes of stdout, "
            f"log: {raw.stderr[-2000:]}"
        )
    parse_result(raw.stdout)  # the line keeps the protocol; its figures are read as JSON below
    doc: dict[str, Any] = json.loads(raw.stdout)
    return elapsed, doc


def doctor(image: str, steps: int) -> float:
    host = HostFacts(engine=EngineFacts(status="ok"), paddle=PaddleFacts(status="ok"))
    start = time.perf_counter()
    _, findings = smoke_check(
        host,
        ImageChoice(ref=image, kind="cpu"),
        SmokeOptions(quiet=True, steps=steps, timeout=300, variables=os.environ),
    )
    elapsed = time.perf_counter() - start
    assert [f.id for f in findings] == ["smoke.pass"], findings
    return elapsed


def baseline_script(rev: str, folder: str) -> Path:
    """The workload's script as it was at `rev` (beside today's modules, which travel with it),
    written under `folder` (mounted read-only). The script is `envcheck/smoke/workload/main.py`
    since the workload became a folder, `envcheck/smoke/workload.py` before."""
    path = Path(folder) / "workload.py"
    for name in ("envcheck/smoke/workload/main.py", "envcheck/smoke/workload.py"):
        shown = subprocess.run(
            ["git", "show", f"{rev}:{name}"],
            check=False,
            capture_output=True,
            timeout=30,
            cwd=Path(__file__).resolve().parent,
        )
        if shown.returncode == 0:
            path.write_bytes(shown.stdout)
            return path
    raise SystemExit(f"no workload script at {rev}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--image", default="envcheck-test/paddle-cpu:3.3.1")
    parser.add_argument("--steps", type=int, default=SmokeOptions().steps)
    parser.add_argument("--no-doctor", action="store_true", help="skip the smoke_check column")
    parser.add_argument("--baseline", default=BASELINE_REV, help="git revision of the baseline")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline column")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="envcheck-bench-") as folder:
        old = None if args.no_baseline else baseline_script(args.baseline, folder)
        return measure(args, old)


def measure(args: argparse.Namespace, old: Path | None) -> int:
    client = connect(resolve_endpoint(os.environ))
    bare(args.image), smoke(client, args.image, args.steps)  # warm-up, not measured
    if old is not None:
        smoke(client, args.image, args.steps, old)
    times: dict[str, list[float]] = {"bare": [], "baseline": [], "smoke": [], "doctor": []}
    inside: list[dict[str, Any]] = []
    inside_old: list[dict[str, Any]] = []
    for i in range(args.rounds):
        times["bare"].append(bare(args.image))
        if old is not None:  # alternated with today's, so both see the same load
            seconds, result = smoke(client, args.image, args.steps, old)
            times["baseline"].append(seconds)
            inside_old.append(result)
        seconds, result = smoke(client, args.image, args.steps)
        times["smoke"].append(seconds)
        inside.append(result)
        if not args.no_doctor:
            times["doctor"].append(doctor(args.image, args.steps))
        print(
            f"round {i + 1}/{args.rounds}: "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items() if v),
            file=sys.stderr,
        )

    med = {k: statistics.median(v) for k, v in times.items() if v}
    runs = [r["runs"][0] for r in inside]
    figures = {
        "rounds": args.rounds,
        "image": args.image,
        "median_s": {k: round(v, 3) for k, v in med.items()},
        "ratio_smoke_over_bare": round(med["smoke"] / med["bare"], 3),
        "ratio_doctor_over_bare": round(med["doctor"] / med["bare"], 3)
        if "doctor" in med
        else None,
        "target_ratio": TARGET_RATIO,
        "steps": args.steps,
        "median_steps_per_s": round(statistics.median(r["steps_per_s"] for r in runs), 1),
        "median_import_s_inside": round(statistics.median(r["import_s"] for r in inside), 3),
        "median_first_step_s": round(statistics.median(r["first_step_s"] for r in runs), 3),
        "median_total_s_inside": round(statistics.median(r["total_s"] for r in inside), 3),
        "median_checks_s": round(statistics.median(r["checks_s"] for r in runs), 4),
        "target_checks_share": TARGET_CHECKS_SHARE,
    }
    figures["checks_share_of_smoke"] = round(figures["median_checks_s"] / med["smoke"], 4)
    if inside_old:
        figures.update(
            baseline=args.baseline,
            ratio_smoke_over_baseline=round(med["smoke"] / med["baseline"], 3),
            target_baseline_ratio=TARGET_BASELINE_RATIO,
            median_total_s_inside_baseline=round(
                statistics.median(r["total_s"] for r in inside_old), 3
            ),
            median_steps_per_s_baseline=round(
                statistics.median(r["runs"][0]["steps_per_s"] for r in inside_old), 1
            ),
        )
    print(f"bare docker run + import paddle: {med['bare']:.2f} s (median of {args.rounds})")
    print(
        f"smoke container create→removed:  {med['smoke']:.2f} s  ratio {figures['ratio_smoke_over_bare']}"
        f" (target <= {TARGET_RATIO})"
    )
    if "doctor" in med:
        print(
            f"smoke_check (connect…judge):     {med['doctor']:.2f} s  ratio {figures['ratio_doctor_over_bare']}"
        )
    if "baseline" in med:
        print(
            f"smoke at {args.baseline} (baseline):     {med['baseline']:.2f} s  today {med['smoke']:.2f} s"
            f"  ratio {figures['ratio_smoke_over_baseline']} (target <= {TARGET_BASELINE_RATIO});"
            f" inside {figures['median_total_s_inside_baseline']} s → {figures['median_total_s_inside']} s,"
            f" {figures['median_steps_per_s_baseline']} → {figures['median_steps_per_s']} steps/s"
        )
    print(
        f"inside: import {figures['median_import_s_inside']} s, first step {figures['median_first_step_s']} s, "
        f"{figures['median_steps_per_s']} steps/s over {args.steps} steps"
    )
    print(
        f"known-answer checks: {figures['median_checks_s']} s of {med['smoke']:.2f} s smoke wall time"
        f" = {100 * figures['checks_share_of_smoke']:.1f}% (target < {100 * TARGET_CHECKS_SHARE:.0f}%)"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
