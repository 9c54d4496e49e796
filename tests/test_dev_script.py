"""scripts/dev never replaces a Docker that is already installed (issue #13 item 5): Debian's
docker.io conflicts with docker-ce, the usual Docker on NVIDIA servers, and apt would remove
docker-ce to install it. The script's own functions are run, with dpkg-query and PATH as the
machine kinds they stand for."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

DEV = Path(__file__).resolve().parent.parent / "scripts" / "dev"


def _apt_packages(tmp_path: Path, installed: list[str], commands: list[str]) -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dpkg = bin_dir / "dpkg-query"  # answers like dpkg-query -W -f='${Status}' PKG
    dpkg.write_text(
        "#!/bin/sh\nfor a; do pkg=$a; done\nfor p in "
        + " ".join(installed or ["none"])
        + '; do [ "$p" = "$pkg" ] && { printf "install ok installed"; exit 0; }; done\nexit 1\n'
    )
    (bin_dir / "grep").symlink_to(shutil.which("grep") or "/bin/grep")
    for name in commands:
        (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / name).chmod(0o755)
    dpkg.chmod(0o755)
    out = subprocess.run(
        ["/bin/bash", "-c", f"source {DEV}; apt_packages"],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout.split()


@pytest.mark.parametrize(
    ("installed", "commands"),
    [
        (["docker-ce", "docker-ce-cli"], []),
        (["docker.io"], []),
        ([], ["docker"]),
        ([], ["dockerd"]),
    ],
    ids=["docker-ce", "debian-docker-io", "static-cli", "static-engine"],
)
def test_an_installed_docker_is_never_replaced(
    tmp_path: Path, installed: list[str], commands: list[str]
) -> None:
    assert "docker.io" not in _apt_packages(tmp_path, installed, commands)


def test_a_machine_without_docker_gets_debians(tmp_path: Path) -> None:
    packages = _apt_packages(tmp_path, [], [])
    assert "docker.io" in packages and "docker-registry" in packages
