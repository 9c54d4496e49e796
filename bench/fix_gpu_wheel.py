"""`envcheck fix --yes` with the real `paddlepaddle-gpu==2.6.2` (759 MB wheel, ~2.8 GB installed)
on a fake Tesla T4 host (tests/fakenv `t4-470`), served by a PEP 503 index on 127.0.0.1.

The plan installs the CUDA 11.8 build pip's configured index carries (PyPI's paddlepaddle-gpu
2.6.2); the index here is that configuration (PIP_INDEX_URL). No GPU is here, so the verification
smoke fails honestly and the rollback must bring the venv back byte for byte. Prints the outcome,
each step's seconds and whether the freeze matches. Too big for the suite (issue 25).

    .venv/bin/python bench/fix_gpu_wheel.py [--wheels DIR]   # DIR: downloaded once with pip
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import fakenv, fix_env

ROOT = Path(__file__).resolve().parent.parent


def download(folder: Path) -> list[Path]:
    if not list(folder.glob("paddlepaddle_gpu-2.6.2-*.whl")):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "-d", str(folder),
             "--index-url", "https://pypi.org/simple", "paddlepaddle-gpu==2.6.2"],
            check=True,
        )  # fmt: skip
    return sorted(folder.glob("*.whl"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--wheels", type=Path, default=ROOT / ".cache" / "gpu-wheels")
    args = parser.parse_args()
    args.wheels.mkdir(parents=True, exist_ok=True)
    files = download(args.wheels)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fix_env.build_index(work / "index", "simple", files)
        python = fix_env.make_venv(work / "venv")
        before = fix_env.freeze(python)
        host = fakenv.make_host(fakenv.build(work / "fake"), "t4-470", work / "host")
        with fix_env.serve(work / "index") as url:
            env = {**os.environ, **host, "XDG_STATE_HOME": str(work / "state")}
            env["PYTHONPATH"] = f"{host['FAKE_NVIDIA_SITE_PACKAGES']}{os.pathsep}{ROOT}"
            env |= {
                "PIP_INDEX_URL": f"{url}/simple/",
                "PIP_EXTRA_INDEX_URL": "",
                "PIP_FIND_LINKS": "",
            }
            argv = [sys.executable, "-m", "envcheck", "fix", "--python", python]
            argv += ["--paddle", "2.6.2", "--yes", "--json", "--quiet"]
            started = time.perf_counter()
            run = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - started
        doc = json.loads(run.stdout)
        print(f"exit {run.returncode}, outcome {doc.get('outcome')}, {seconds:.1f} s in all")
        for step in doc["plan"]["steps"]:
            print(f"  plan: {step['kind']} [{step['why']}] {' '.join(step['argv'])}")
        for ran in doc.get("applied", []) + doc.get("rollback", {}).get("ran", []):
            print(
                f"  ran: {' '.join(ran['argv'])[:140]} -> {ran['exit_code']} ({ran['seconds']} s)"
            )
        print(f"  failed: {doc.get('failed')}")
        print(f"  freeze after == before: {fix_env.freeze(python) == before}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
