"""`envcheck fix --yes` with the real `paddlepaddle-gpu==2.6.2` from PyPI (issue 25, item 4).

A fake Tesla T4 on driver 470 (the C-ABI fakes, tests/fakenv/profiles/t4-470.toml: CUDA 11.4, the
CUDA 11 minor-version compatibility, cuDNN 8.9.6 on LD_LIBRARY_PATH) asked for Paddle 2.6.2: the
plan names that release's CUDA 11.8 build, `paddlepaddle-gpu==2.6.2`, which Paddle publishes on
PyPI, so its index is pip's configured one. A PEP 503 index on 127.0.0.1 serves it under that
path (`PIP_INDEX_URL`), beside Paddle's CPU path (`ENVCHECK_PADDLE_INDEX`) for the rollback of
the venv's CPU build. `fix --yes` removes the CPU build, installs the 2.8 GB GPU build, and the
verification smoke fails honestly (there is no GPU here); the rollback must bring `pip freeze
--all` back byte for byte. Prints the transcript (the same renderer as `envcheck fix`) and the
timings; asserts nothing: the figures are for people.

    .venv/bin/python bench/bench_fix_gpu_wheel.py [--work /tmp/bench-fix-gpu]

The wheel (~760 MB) is downloaded once into .cache/wheels/gpu (git-ignored); ~8 GB free disk
is needed (the wheel, the venv's 2.8 GB install, pip's unpacking).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import fakenv, fix_env  # the repo's own test helpers

GPU_WHEELS = ROOT / ".cache" / "wheels" / "gpu"
REQUIREMENT = "paddlepaddle-gpu==2.6.2"
PROFILE = "t4-470"
NEED_FREE = 8 << 30


def _say(text: str) -> None:
    print(text, flush=True)


def gpu_wheels() -> tuple[list[Path], float | None]:
    """The GPU wheel and its dependencies from PyPI, downloaded once (seconds, None: cached)."""
    if any(GPU_WHEELS.glob("paddlepaddle_gpu-2.6.2-*.whl")):
        return sorted(GPU_WHEELS.glob("*.whl")), None
    GPU_WHEELS.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "pip", "download", REQUIREMENT, "-d", str(GPU_WHEELS)]
    subprocess.run(cmd, check=True)
    return sorted(GPU_WHEELS.glob("*.whl")), time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", help="the work folder (default: a new temporary one)")
    args = parser.parse_args()
    free = shutil.disk_usage(ROOT).free
    _say(f"free disk under {ROOT}: {free / (1 << 30):.1f} GiB (needed: {NEED_FREE >> 30} GiB)")
    if free < NEED_FREE:
        _say("not enough free disk: nothing done")
        return 1
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-fix-gpu-"))
    wheels, downloaded = gpu_wheels()
    gpu = next(w for w in wheels if w.name.startswith("paddlepaddle_gpu-"))
    _say(
        f"wheel: {gpu.name}, {gpu.stat().st_size / 1e6:.0f} MB "
        + (f"(downloaded from PyPI in {downloaded:.1f} s)" if downloaded else "(cached)")
    )
    # Paddle's CPU path for the venv's own build (and its rollback), pip's index for the GPU one
    fix_env.build_index(work / "index", "packages/stable/cpu", fix_env.wheels())
    fix_env.build_index(work / "index", "simple", wheels)
    fake = fakenv.make_host(fakenv.build(work / "fakenv"), PROFILE, work / "host")
    with fix_env.serve(work / "index") as url:
        started = time.perf_counter()
        python = fix_env.make_venv(work / "venv")
        fix_env.pip(python, "install", "paddlepaddle==3.3.1", "-i", f"{url}/packages/stable/cpu/")
        _say(f"venv with the CPU build 3.3.1: {time.perf_counter() - started:.1f} s")
        before = fix_env.freeze(python)
        env = {
            **os.environ,
            **fake,
            "PYTHONPATH": os.pathsep.join([str(ROOT), fake["FAKE_NVIDIA_SITE_PACKAGES"]]),
            "ENVCHECK_PADDLE_INDEX": url,
            "PIP_INDEX_URL": f"{url}/simple/",
            "XDG_STATE_HOME": str(work / "state"),
        }
        fix = [sys.executable, "-m", "envcheck", "fix", "--python", python, "--paddle", "2.6.2"]
        fix += ["--no-pull", "--smoke-timeout", "300", "--json", "--yes"]
        _say(f"$ envcheck fix --python {python} --paddle 2.6.2 --no-pull --yes")
        started = time.perf_counter()
        run = subprocess.run(fix, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        took = time.perf_counter() - started
        after = fix_env.freeze(python)
    doc = json.loads(run.stdout)
    from envcheck.render.fix import render_fix

    _say(render_fix(doc).rstrip())
    _say(f"exit {run.returncode}; `envcheck fix --yes` took {took:.1f} s in all")
    for ran in doc.get("applied", []):
        _say(f"  step {ran['argv'][3]} {ran['argv'][-1]}: {ran['seconds']:.1f} s")
    for ran in doc.get("rollback", {}).get("ran", []):
        _say(f"  rollback {ran['argv'][3]}: {ran['seconds']:.1f} s")
    _say(f"pip freeze --all after == before, byte for byte: {after == before}")
    _say(f"({len(before.splitlines())} lines, {len(before.encode())} bytes)")
    _say(f"work folder: {work} (remove it when done)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
