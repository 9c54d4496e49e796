"""Reports, as one JSON line, what the smoke container is allowed to do (tests the lockdown)."""

from __future__ import annotations

import json
import os
import sys


def writable(path: str) -> bool:
    try:
        with open(path, "a"):
            return True
    except OSError:
        return False


def status_field(name: str) -> str | None:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return None


def first(paths: list[str]) -> str | None:
    for path in paths:
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            continue
    return None


with open("/proc/net/dev") as f:
    interfaces = sorted(line.split(":")[0].strip() for line in f.readlines()[2:])
shm = os.statvfs("/dev/shm")
tmp = os.statvfs("/tmp")
print(
    json.dumps(
        {
            "uid": os.getuid(),
            "gid": os.getgid(),
            "root_writable": writable("/envcheck-probe"),
            "tmp_writable": writable("/tmp/probe"),
            "script_writable": writable(sys.argv[0]),
            "script": sys.argv[0],
            "interfaces": interfaces,
            "cap_eff": status_field("CapEff"),
            "no_new_privs": status_field("NoNewPrivs"),
            "memory_limit": first(
                ["/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"]
            ),
            "pids_limit": first(["/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"]),
            "shm_bytes": shm.f_blocks * shm.f_frsize,
            "tmp_bytes": tmp.f_blocks * tmp.f_frsize,
            "home": os.environ.get("HOME"),
            "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
            "args": sys.argv[1:],
        }
    )
)
