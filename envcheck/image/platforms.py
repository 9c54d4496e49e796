"""OCI platforms (pure): what an image offers and what this machine runs, as the engine matches
them when it picks a manifest from an index ("no matching manifest for linux/amd64")."""

from __future__ import annotations

from envcheck.contracts.record import record


@record
class Platform:
    os: str
    architecture: str
    variant: str | None = None

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


def host_platform(machine: str | None = None) -> Platform:
    """This machine as an OCI platform: `uname -m` x86_64 → linux/amd64."""
    import platform as _platform

    arch = (machine or _platform.machine()).lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}.get(
        arch, arch
    )
    variant = "v8" if arch == "arm64" else "v7" if arch == "arm" else None
    return Platform("linux", arch, variant)


def platform_runs(platforms: tuple[Platform, ...], want: Platform) -> bool:
    return any(p.os == want.os and p.architecture == want.architecture for p in platforms)
