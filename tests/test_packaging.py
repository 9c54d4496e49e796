"""`pip install .` must give a working envcheck with its matrix inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_the_matrix_and_the_entry_point(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, timeout=300, capture_output=True)
    (wheel,) = tmp_path.glob("envcheck-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "matrix").glob("*.toml")}
    assert shipped and {f"envcheck/_matrix/{n}" for n in shipped} <= names
    assert "envcheck/smoke/workload.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "envcheck = envcheck.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_loads_its_own_matrix(tmp_path: Path) -> None:
    """Installed into a bare target dir and run from elsewhere: the shipped matrix is found."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(tmp_path / "t"),
                    str(ROOT)], check=True, timeout=300, capture_output=True)
    out = subprocess.run(
        [sys.executable, "-c", "from envcheck.matrix.load import load_matrix; print(load_matrix().path)"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "t"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()
    assert out.startswith(str(tmp_path / "t")) and out.endswith("_matrix")
