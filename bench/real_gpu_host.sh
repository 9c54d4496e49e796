#!/usr/bin/env bash
# Record what envcheck says on a real NVIDIA GPU host, offline: the fixtures in
# tests/data/real-h100/ were made with this script on a lent H100 (no Docker, no network).
#
#   bash bench/real_gpu_host.sh OUTDIR [PADDLE_WHEEL] [BASELINE_SRC]
#
# OUTDIR        where the reports, the witness table and the test log go
# PADDLE_WHEEL  PyPI's CPU `paddlepaddle` wheel, installed (no deps) into this Python for the
#               runs that inspect and smoke-train it; without it only the no-Paddle runs happen
# BASELINE_SRC  an older envcheck source tree, timed side by side with this one
#
# Needs: python3 with envcheck's dependencies (docker, nvidia-ml-py, rich, packaging) importable,
# torch with CUDA (for bench/witness_real.py), gcc (for the fake libraries of the tests).
set -u
out=${1:?usage: real_gpu_host.sh OUTDIR [PADDLE_WHEEL] [BASELINE_SRC]}
wheel=${2:-}
baseline=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"
py=$(command -v python3)

doctor() { # NAME ARGS...: the JSON report, the text report, the exit code
	local name=$1
	shift
	python3 -m envcheck doctor --quiet "$@" --json >"$out/$name.json" 2>"$out/$name.stderr"
	echo "$?" >"$out/$name.rc"
	NO_COLOR=1 COLUMNS=100 python3 -m envcheck doctor --quiet "$@" >"$out/$name.txt" 2>&1
	local text=$?
	printf '%-28s exit %s (text run: %s)\n' "$name" "$(cat "$out/$name.rc")" "$text"
}

{
	echo "envcheck $(python3 -m envcheck --version) from $src"
	nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader
	uname -r
	python3 --version
} | tee "$out/machine.txt"

doctor a-static-nopaddle --no-smoke
doctor b-expect-gpu-nopaddle --in-process --expect-gpu
python3 bench/witness_real.py --json "$out/witness.json" | tee "$out/witness.txt"

if [ -n "$wheel" ]; then
	python3 -m pip install -q --no-index --no-deps --no-compile "$wheel" >"$out/pip.log" 2>&1 ||
		{ echo "paddle install failed"; cat "$out/pip.log"; }
	python3 -c "import paddle; print(paddle.__version__, paddle.is_compiled_with_cuda())" \
		>"$out/paddle.txt" 2>&1
	cat "$out/paddle.txt"
	doctor c-static-cpu-paddle --no-smoke --python "$py"
	doctor d-expect-gpu-cpu-paddle --in-process --expect-gpu --python "$py"
	doctor e-smoke-cpu-paddle --in-process --python "$py"
fi

if [ -n "$baseline" ]; then # doctor --no-smoke, this tree vs the baseline, alternated
	python3 - "$src" "$baseline" <<'EOF' | tee "$out/timing.txt"
import os, statistics, subprocess, sys, time
trees = {"this": sys.argv[1], "baseline": sys.argv[2]}
times = {name: [] for name in trees}
for _ in range(9):
    for name, tree in trees.items():
        env = dict(os.environ, PYTHONPATH=tree)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "envcheck", "doctor", "--no-smoke", "--json"],
                       env=env, capture_output=True, check=False)
        times[name].append(time.perf_counter() - start)
new, old = (statistics.median(times[n]) for n in ("this", "baseline"))
print(f"doctor --no-smoke --json, median of 9 alternated: this {new:.3f} s, "
      f"baseline {old:.3f} s, ratio {new / old:.2f}")
EOF
fi
