"""The integration lane: what needs the machine `scripts/dev setup` prepares, or takes seconds.

The real Docker engine and local registry, the Slurm cluster, pip installs into real venvs,
Paddle's training, headless Chromium, the fake NVIDIA driver (a fresh process per host),
envcheck as a process of its own (signals, pipes, entry points), wheel builds, Python 3.10.
"""
