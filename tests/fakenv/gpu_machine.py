"""Run a command as if this machine had a real NVIDIA driver, without changing the machine.

    python -m tests.fakenv.gpu_machine [--profile a100x2-535] -- python -m pytest tests/unit

Inside a private mount namespace (`unshare -m`, root only; nothing is visible outside it):
- a copy of the loader cache, built with `ldconfig -C COPY -X` from the system's configuration
  plus a folder holding a fake host's libnvidia-ml.so.1 and libcuda.so.1, is bind-mounted over
  /etc/ld.so.cache: `dlopen("libnvidia-ml.so.1")` finds the driver where a packaged driver's
  copy would be found, with no LD_LIBRARY_PATH;
- a folder holding `nvidia/version` is bind-mounted over /proc/driver: the loaded kernel module.

`FAKE_NVIDIA_PROFILE` is exported, as the fake libraries answer from a profile (a real driver
needs nothing). /etc/ld.so.cache and /proc/driver of the machine itself are never written.
Used to show that tests which need "no driver" create that state themselves.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.fakenv import PROFILES, build, make_host

LDCONFIG = "/sbin/ldconfig"


def prepare(profile: str, work: Path) -> tuple[Path, Path, dict[str, str]]:
    """(loader cache copy, stand-in for /proc/driver, environment additions)."""
    fake = build(work / "build")
    host = make_host(fake, profile, work / "host")
    driver_dir = Path(host["LD_LIBRARY_PATH"].split(":")[0])
    conf = work / "ld.so.conf"
    conf.write_text(f"include /etc/ld.so.conf.d/*.conf\n{driver_dir}\n")
    cache = work / "ld.so.cache"
    subprocess.run([LDCONFIG, "-X", "-C", str(cache), "-f", str(conf)], check=True, timeout=120)
    proc_driver = work / "proc-driver"
    proc_driver.mkdir()
    root_version = Path(host["ENVCHECK_DRIVER_ROOT"]) / "proc" / "driver" / "nvidia"
    if root_version.is_dir():
        (proc_driver / "nvidia").mkdir()
        (proc_driver / "nvidia" / "version").write_bytes((root_version / "version").read_bytes())
    return cache, proc_driver, {"FAKE_NVIDIA_PROFILE": str(PROFILES / f"{profile}.toml")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--profile", default="a100x2-535", help="the fake host the 'real' driver is"
    )
    parser.add_argument("command", nargs="+", help="what to run (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="envcheck-gpu-machine-") as tmp:
        cache, proc_driver, extra = prepare(args.profile, Path(tmp))
        script = (
            f"mount --bind {shlex.quote(str(cache))} /etc/ld.so.cache"
            f" && mount --bind {shlex.quote(str(proc_driver))} /proc/driver"
            f" && exec {shlex.join(args.command)}"
        )
        env = {**os.environ, **extra}
        env.pop("LD_LIBRARY_PATH", None)  # the driver comes from the loader cache, as installed
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
