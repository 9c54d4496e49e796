"""`envcheck doctor --no-smoke --json` against the physical floor of a doctor, alternated runs.

The floor is what no doctor can beat on a GPU host: a bare interpreter that calls `cuInit`
through ctypes. Beside it: `python -c pass`, and a bare interpreter that loads NVML (`nvmlInit`,
one device's name), the memory floor. Prints each command's median wall time, CPU time (of its
whole tree: what load on the machine changes least) and peak RSS (the largest process of its
tree), the doctor/floor ratio and the doctor's RSS above NVML's.
Targets: wall <= 1.3x the floor with a GPU, <= 0.1 s without one; peak RSS within
5 MB of the NVML floor. Nothing here asserts: the figures are for people.

Where it runs (--host):
  auto  a real NVIDIA driver when this machine has one (/proc/driver/nvidia/version), else fake
  real  this machine's driver, as it is (run it unchanged on a real GPU host; on a machine
        without one, the doctor alone, against the 0.1 s target)
  fake  the C-ABI fake libraries of tests/fakenv (gcc builds them) on --profile, whose cuInit
        and nvmlInit take the profile's latencies (the lent H100's: 0.2 s and <= 0.1 s)
  none  no driver: ENVCHECK_DRIVER_ROOT is an empty folder, even on a GPU host

    .venv/bin/python bench/bench_doctor.py [--host auto] [--rounds 21] [--cuinit-ms 200]
    .venv/bin/python bench/bench_doctor.py --host none
    .venv/bin/python bench/bench_doctor.py --peers   # also env-doctor and Paddle's run_check
    .venv/bin/python bench/bench_doctor.py --baseline ../main   # and another tree's doctor

The doctor measured is this tree's, run as the `envcheck` command runs it (envcheck/__main__.py)
by the interpreter running the bench, with its bytecode cached as an installed wheel has it
(`--source`: compiled on every run, as under PYTHONDONTWRITEBYTECODE=1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

TREE = Path(__file__).resolve().parent.parent
FLOOR = "import ctypes, sys; sys.exit(ctypes.CDLL('libcuda.so.1').cuInit(0))"  # 0: CUDA_SUCCESS
NVML = (
    "import pynvml\n"
    "try:\n"
    "    pynvml.nvmlInit(); pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))\n"
    "except pynvml.NVMLError:\n"
    "    pass"
)


# Runs one command; prints its wall time, peak RSS, CPU time and exit status. A process records
# the peak RSS of the one that spawned it (exec keeps the old address space's high-water mark),
# so the bench's own ~30 MB would hide the figures: this small runner (~8 MB) spawns it.
RUNNER = """
import os, sys, time
null = os.open(os.devnull, os.O_WRONLY)
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime,
      os.waitstatus_to_exitcode(status))
"""


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB: the largest process of its tree, CPU seconds of the tree)."""
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", RUNNER, *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    doctor = "envcheck.__main__" in " ".join(argv)
    if int(out[3]) not in ((0, 1) if doctor else (0,)):  # a doctor's verdict may be a fail (1)
        sys.exit(f"{' '.join(argv)[:200]}: exit status {out[3]}: that is no measurement")
    return float(out[0]), float(out[1]), float(out[2])


# The doctor as the `envcheck` command runs it (envcheck/__main__.py, without runpy), of a tree.
DOCTOR = (
    "import sys; sys.path.insert(0, {tree!r}); sys.argv[0] = 'envcheck'; import envcheck.__main__"
)


def commands(peers: bool, baseline: str | None) -> dict[str, list[str]]:
    py = sys.executable
    args = ["doctor", "--no-smoke", "--json"]
    cmds = {
        "doctor": [py, "-c", DOCTOR.format(tree=str(TREE)), *args],
        "floor": [py, "-c", FLOOR],
        "nvml": [py, "-c", NVML],
        "bare": [py, "-c", "pass"],
    }
    if baseline:
        cmds["baseline"] = [py, "-c", DOCTOR.format(tree=os.path.abspath(baseline)), *args]
    if peers:
        env_doctor = shutil.which("env-doctor", path=os.path.dirname(py)) or shutil.which(
            "env-doctor"
        )
        if env_doctor:
            cmds["env-doctor"] = [env_doctor, "check", "--json"]
        cmds["run_check"] = [py, "-c", "import paddle; paddle.utils.run_check()"]
    return cmds


def host_env(
    host: str, profile: str, latencies: dict[str, int], work: Path, bytecode: bool
) -> dict[str, str]:
    """The environment of every command: this tree first on PYTHONPATH, and the host asked for."""
    env = dict(os.environ)
    if bytecode:  # as from an installed wheel: pip compiles it, so no run pays for compiling
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    path = [str(TREE)]
    if host == "none":
        (work / "no-driver").mkdir()
        env["ENVCHECK_DRIVER_ROOT"] = str(work / "no-driver")
    elif host == "fake":
        sys.path.insert(0, str(TREE))
        from tests import fakenv

        fake = fakenv.make_host(fakenv.build(work / "build"), profile, work / "host")
        fake["FAKE_NVIDIA_PROFILE"] = _with_latencies(fake["FAKE_NVIDIA_PROFILE"], latencies, work)
        env.update(fake)
        path.append(fake["FAKE_NVIDIA_SITE_PACKAGES"])  # the target's pip CUDA libraries
    env["PYTHONPATH"] = os.pathsep.join(path + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


def _with_latencies(profile: str, latencies: dict[str, int], work: Path) -> str:
    """A copy of the profile whose [cuda]/[nvml] init_latency_ms are the ones asked for."""
    if not latencies:
        return profile
    lines, section = [], ""
    for line in Path(profile).read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]")
        if section in latencies and stripped.startswith("init_latency_ms"):
            continue
        lines.append(line)
        if stripped == f"[{section}]" and section in latencies:
            lines.append(f"init_latency_ms = {latencies[section]}")
    copy = work / "profile.toml"
    copy.write_text("\n".join(lines) + "\n")
    return str(copy)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", choices=("auto", "real", "fake", "none"), default="auto")
    parser.add_argument("--profile", default="h100-580-lent", help="fake host profile")
    parser.add_argument("--cuinit-ms", type=int, help="fake cuInit latency (default: profile's)")
    parser.add_argument("--nvml-init-ms", type=int, help="fake nvmlInit latency (profile's)")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--peers", action="store_true", help="also env-doctor and run_check")
    parser.add_argument("--baseline", metavar="TREE", help="also the doctor of another source tree")
    parser.add_argument(
        "--source",
        action="store_true",
        help="compile every module on every run, as under PYTHONDONTWRITEBYTECODE (default: "
        "bytecode cached in a private folder after the warm-up run, as an installed wheel has)",
    )
    args = parser.parse_args()
    host = args.host
    if host == "auto":
        host = "real" if os.path.exists("/proc/driver/nvidia/version") else "fake"
    latencies = {
        k: v for k, v in (("cuda", args.cuinit_ms), ("nvml", args.nvml_init_ms)) if v is not None
    }
    with tempfile.TemporaryDirectory(prefix="bench-doctor-") as work:
        env = host_env(host, args.profile, latencies, Path(work), not args.source)
        cmds = commands(args.peers, args.baseline)
        if host == "none":
            del cmds["floor"]  # no libcuda to call
        elif host == "real" and not floor_runs(cmds["floor"], env):
            print(
                "this machine's libcuda.so.1 does not answer cuInit: no floor; measured as a"
                " host without a driver"
            )
            del cmds["floor"]
        report(measure(cmds, env, args.rounds), host, args)
    return 0


def floor_runs(argv: list[str], env: dict[str, str]) -> bool:
    """The floor's `cuInit` succeeds here (a real GPU-less machine has no libcuda to call)."""
    return subprocess.run(argv, env=env, capture_output=True, check=False).returncode == 0


def measure(
    cmds: dict[str, list[str]], env: dict[str, str], rounds: int
) -> dict[str, list[tuple[float, float, float]]]:
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cmds}
    for argv in cmds.values():  # warm the page cache once, not measured
        run_once(argv, env)
    for _ in range(rounds):
        for name, argv in cmds.items():  # alternate, so load drifts hit every command alike
            samples[name].append(run_once(argv, env))
    return samples


def iqr(values: Iterable[float]) -> float:
    """The interquartile range: the spread of the middle half, which one slow run leaves be."""
    q1, _, q3 = statistics.quantiles(values, n=4)
    return q3 - q1


def report(
    samples: dict[str, list[tuple[float, float, float]]], host: str, args: argparse.Namespace
) -> None:
    wall, rss, cpu = (
        {n: statistics.median(s[i] for s in v) for n, v in samples.items()} for i in range(3)
    )
    where = f"fake {args.profile}" if host == "fake" else host
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"host: {where}; {args.rounds} alternated rounds; {os.cpu_count()} cores, load {load}")
    for name, runs in samples.items():
        print(
            f"  {name:<11} median wall {wall[name]:.3f} s (IQR {iqr(s[0] for s in runs):.3f})"
            f"  CPU {cpu[name]:.3f} s  peak RSS {rss[name]:.1f} MB"
        )
    doctors = [name for name in ("doctor", "baseline") if name in wall]
    for name in doctors:
        if "floor" in wall:
            # Per round: the doctor and the floor ran back to back, under the same load.
            ratios = [d[0] / f[0] for d, f in zip(samples[name], samples["floor"])]
            print(
                f"  {name} / floor  wall {wall[name] / wall['floor']:.2f}x  (per round: median"
                f" {statistics.median(ratios):.2f}x, IQR {iqr(ratios):.2f}; target <= 1.3x)"
            )
        else:
            print(f"  {name} without a driver {wall[name]:.3f} s  (target <= 0.1 s)")
    for name in doctors:
        print(f"  {name} - nvml  peak RSS {rss[name] - rss['nvml']:+.1f} MB  (target <= 5 MB)")
    for peer in ("baseline", "env-doctor", "run_check"):
        if peer in wall:
            print(f"  doctor / {peer:<10} wall {wall['doctor'] / wall[peer]:.3f}")


if __name__ == "__main__":
    sys.exit(main())
