"""One remedy, run for real: on every fake GPU host the pip commands the doctor prints are the
steps `envcheck fix` plans (each a process of its own), and the printed commands of a CUDA-variant
switch, run as printed against a local package index, really change the environment. The pure
half (the plan, the steps, the last lines at 80 columns) is tests/unit/test_remedy.py."""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from envcheck.contracts.remedy import from_document
from tests import fix_env
from tests import scenarios as s
from tests.fakenv import profile_names
from tests.inprocess import ENV, doctor_process, envcheck_process

pytest_plugins = ("tests.fakenv",)


@pytest.mark.fakegpu
@pytest.mark.parametrize("profile", profile_names())
def test_on_every_fake_host_the_doctors_pip_commands_are_the_plan_fix_prints(
    fake_nvidia: Callable[[str], dict[str, str]], profile: str
) -> None:
    fake = fake_nvidia(profile)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake
    env["PYTHONPATH"] = fake["FAKE_NVIDIA_SITE_PACKAGES"]
    _, doctor, _ = doctor_process(env, "--no-smoke")
    fix = envcheck_process("fix", "--json", "--no-pull", env=env, timeout=300)
    assert "Traceback" not in fix.stderr, fix.stderr
    plan = json.loads(fix.stdout)["plan"]
    findings = [f for f in doctor["findings"] if f["severity"] != "pass" and f["remedy"]]
    advised = [
        step["argv"]
        for f in findings
        for step in from_document(f["remedy"], f["id"]).to_json()["steps"]
        if step["kind"] == "command" and step["runner"] == "pip" and not step["alternative"]
    ]
    planned = [s["argv"] for s in plan["steps"] if s["kind"] in ("install", "uninstall")]
    assert planned == [list(a) for a in dict.fromkeys(map(tuple, advised))]


def _variant_wheel(folder: Path, variant: str) -> Path:
    """A stub paddlepaddle-gpu 3.3.1 whose one file says which CUDA variant it is."""
    wheel = fix_env.stub_wheel(folder / variant, "paddlepaddle-gpu", "3.3.1")
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("paddle_variant.txt", variant)
    return _with_record(wheel)


def _with_record(wheel: Path) -> Path:
    """The RECORD lists every file (pip refuses a wheel whose RECORD misses one)."""
    with zipfile.ZipFile(wheel) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    record_name = next(n for n in files if n.endswith("RECORD"))
    lines = files[record_name].decode().splitlines()
    lines.insert(-1, f"paddle_variant.txt,,{len(files['paddle_variant.txt'])}")
    files[record_name] = ("\n".join(lines) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    wheel.write_bytes(buffer.getvalue())
    return wheel


def _variant(python: str) -> str:
    code = (
        "import sysconfig, pathlib; "
        "print(pathlib.Path(sysconfig.get_paths()['purelib'], 'paddle_variant.txt').read_text())"
    )
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def test_the_printed_pip_commands_switch_the_variant_against_a_local_index(
    tmp_path: Path,
) -> None:
    """The doctor's commands for the host above, run as printed (argv for argv) into a venv that
    holds the cu130 build: afterwards it holds the cu129 one. The install alone, as the doctor
    printed it before, leaves cu130 in place."""
    root = tmp_path / "index"
    for variant in ("cu130", "cu129"):
        fix_env.build_index(
            root, f"packages/stable/{variant}", [_variant_wheel(tmp_path / "w", variant)]
        )
    pip_env = {
        **ENV,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_CACHE_DIR": str(tmp_path / "cache"),
    }
    with fix_env.serve(root) as url:
        envs = {}
        for name in ("printed", "install-only"):
            python = fix_env.make_venv(tmp_path / name)
            fix_env.pip(
                python, "install", "paddlepaddle-gpu==3.3.1", "-i", f"{url}/packages/stable/cu130/"
            )
            assert _variant(python) == "cu130"
            envs[name] = python
        facts = s.REMEDY_HOSTS["h100-575-331-cu130"] | {
            "paddle": s.REMEDY_HOSTS["h100-575-331-cu130"]["paddle"] | {"python": envs["printed"]}
        }
        (tmp_path / "facts.json").write_text(json.dumps(facts))
        run = envcheck_process(
            "doctor",
            "--facts",
            str(tmp_path / "facts.json"),
            "--no-smoke",
            "--json",
            env={**ENV, "ENVCHECK_PADDLE_INDEX": url, "ENVCHECK_DRIVER_ROOT": str(tmp_path)},
        )
        doc = json.loads(run.stdout)
        commands = [
            step["argv"]
            for f in doc["findings"]
            if f["severity"] != "pass" and f["remedy"]
            for step in f["remedy"]["steps"]
            if step["kind"] == "command" and step["runner"] == "pip" and not step["alternative"]
        ]
        assert [c[3] for c in commands] == ["uninstall", "install"]
        assert commands[1][-1] == f"{url}/packages/stable/cu129/"
        for argv in commands:
            done = subprocess.run(
                argv, capture_output=True, text=True, env=pip_env, timeout=300, check=False
            )
            assert done.returncode == 0, done.stdout + done.stderr
        assert _variant(envs["printed"]) == "cu129"
        install = [envs["install-only"], *commands[1][1:]]
        kept = subprocess.run(
            install, capture_output=True, text=True, env=pip_env, timeout=300, check=False
        )
        assert "Requirement already satisfied" in kept.stdout
        assert _variant(envs["install-only"]) == "cu130"
