"""`pip install .` must give a working envcheck with its matrix inside the wheel."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from envcheck import __version__
from tests.paths import ROOT


def test_wheel_ships_the_matrix_and_the_entry_point(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("paddle_envcheck-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "matrix").glob("*.toml")}
    assert shipped and {f"envcheck/_matrix/{n}" for n in shipped} <= names
    assert "envcheck/smoke/workload/main.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "envcheck = envcheck.entry:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_loads_its_own_matrix(tmp_path: Path) -> None:
    """Installed into a bare target dir and run from elsewhere: the shipped matrix is found."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(tmp_path / "t"),
            str(ROOT),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from envcheck.matrix.load import load_matrix; print(load_matrix().path)",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "t"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    assert out.startswith(str(tmp_path / "t")) and out.endswith("_matrix")


# -------------------------------------------------- our own PyPI name, pinned everywhere

DISTRIBUTION = "paddle-envcheck"
# Where users copy an install from: the README, the deploy recipes, the workflows and the action.
USER_FACING = [
    ROOT / "README.md",
    *sorted((ROOT / "deploy").rglob("*")),
    *sorted((ROOT / ".github").rglob("*")),
]
PINNED = [
    f"{DISTRIBUTION}=={__version__}",
    rf"{DISTRIBUTION} @ git\+https://\S+@v{re.escape(__version__)}",
    rf"\S*paddle_envcheck-{re.escape(__version__)}-py3-none-any\.whl",
]
# Where something installs envcheck: a `pip install` argument naming it, or the value of an
# envcheck-spec input or ENVCHECK_SPEC variable (on its line, or the YAML default/value under it).
_PIP = re.compile(r"pip install ([^\n`;&|]*)")
_SPEC = re.compile(
    r"(?:envcheck-spec|ENVCHECK_SPEC)\b[^\n]*\n(?:[ \t]+(?:description|type):[^\n]*\n"
    r"(?:[ \t]{6,}[^:\n]*\n)*)*[ \t]+(?:default|value):[ \t]*(?P<spec>[^\n#]*)"
    r"|envcheck-spec:[ \t]+(?P<inline>[^\n#]+)"
)


def _install_specs(text: str) -> list[str]:
    specs = []
    for m in _PIP.finditer(text):
        try:
            words = shlex.split(m[1], comments=True)
        except ValueError:  # a quote closed on the next line: the line is not a whole command
            words = m[1].split()
        specs += [w for w in words if "envcheck" in w.lower() and not w.startswith(("-", "$"))]
    for m in _SPEC.finditer(text):
        spec = (m["spec"] if m["spec"] is not None else m["inline"]).strip().strip("'\"")
        if spec and not spec.startswith(("$", ">-", "|")):
            specs.append(spec)
    return specs


@pytest.mark.parametrize(
    "text",
    [
        "run: pip install envcheck && envcheck report reports/",
        "pip install --quiet envcheck==0.0.9",
        "envcheck-spec:\n  description: x\n  type: string\n  default: envcheck\n",
        "- name: ENVCHECK_SPEC\n  value: envcheck\n",
        "pip install paddle-envcheck",
        'pip install "paddle-envcheck @ git+https://github.com/o/envcheck"',
    ],
    ids=[
        "bare-pip",
        "other-projects-version",
        "workflow-default",
        "k8s-env",
        "ours-unpinned",
        "git-untagged",
    ],
)
def test_the_check_catches_an_unpinned_or_foreign_install(text: str) -> None:
    specs = _install_specs(text)
    assert specs and not all(any(re.fullmatch(p, s) for p in PINNED) for s in specs), specs


def _yaml_specs(node: Any) -> list[str]:
    """Spec values in a YAML document: an `envcheck-spec` input's default, an ENVCHECK_SPEC env."""
    specs: list[str] = []
    if isinstance(node, dict):
        spec = node.get("envcheck-spec")
        if isinstance(spec, dict) and spec.get("default"):
            specs.append(str(spec["default"]))
        if node.get("name") == "ENVCHECK_SPEC" and "value" in node:
            specs.append(str(node["value"]))
        for value in node.values():
            specs += _yaml_specs(value)
    elif isinstance(node, list):
        for item in node:
            specs += _yaml_specs(item)
    return specs


def _specs_in(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    specs = _install_specs(text)
    if path.suffix in {".yml", ".yaml"}:
        specs += [s for doc in yaml.safe_load_all(text) for s in _yaml_specs(doc)]
    return specs


def test_yaml_defaults_are_seen() -> None:
    old = "inputs:\n  envcheck-spec:\n    description: >-\n      a: b\n    default: envcheck\n"
    assert _yaml_specs(yaml.safe_load(old)) == ["envcheck"]


def test_every_install_example_is_our_distribution_pinned_to_this_version() -> None:
    found: dict[str, list[str]] = {}
    for path in USER_FACING:
        if path.is_file():
            for spec in _specs_in(path):
                found.setdefault(spec, []).append(str(path.relative_to(ROOT)))
    wrong = {s: where for s, where in found.items() if not any(re.fullmatch(p, s) for p in PINNED)}
    assert not wrong, f"install specs that are not {DISTRIBUTION} pinned to {__version__}: {wrong}"
    assert f"{DISTRIBUTION}=={__version__}" in found  # the check saw the examples at all


def test_the_distribution_is_named_in_pyproject_and_in_envcheck_version() -> None:
    assert re.search(
        rf'^name = "{DISTRIBUTION}"',
        (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
        re.MULTILINE,
    )
    out = subprocess.run(
        [sys.executable, "-m", "envcheck", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out == f"envcheck {__version__} ({DISTRIBUTION})\n"
