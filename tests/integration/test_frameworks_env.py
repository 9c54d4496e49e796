"""`envcheck doctor` on an interpreter whose site-packages hold torch 2.3.0 and Paddle 3.2.0
(cu126) with torch's NVIDIA wheels installed last (tests/framework_pins.py): the conflict is read
from that interpreter's dist-info folders, not from envcheck's own environment, and names both
pins and the resolution."""

from __future__ import annotations

import os
from pathlib import Path

from tests import framework_pins as fp
from tests.inprocess import doctor_process
from tests.paddle_versions import VERSION_331_CU126

VERSION_320_CU126 = (
    VERSION_331_CU126.replace("'3.3.1'", "'3.2.0'")
    .replace("minor            = '3'", "minor            = '2'")
    .replace("patch            = '1'", "patch            = '0'")
)


def test_torch_and_paddle_pins_in_one_environment(tmp_path: Path) -> None:
    site = fp.environment(tmp_path / "site-packages", fp.TORCH_230)
    (site / "paddle" / "version").mkdir(parents=True)
    (site / "paddle" / "version" / "__init__.py").write_text(VERSION_320_CU126)
    (tmp_path / "root").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {"PYTHONPATH": str(site), "ENVCHECK_DRIVER_ROOT": str(tmp_path / "root")}
    _, doc, _ = doctor_process(env, "--no-smoke")
    assert doc["host"]["paddle"]["version"] == "3.2.0"
    assert doc["host"]["nvidia_wheels"]["installed"]["nvidia-cudnn-cu12"] == "8.9.2.26"
    (f,) = [f for f in doc["findings"] if f["id"] == "paddle.framework-conflict"]
    assert f["severity"] == "fail"
    assert (
        "nvidia-cudnn-cu12 (torch: ==8.9.2.26, Paddle: ==9.5.1.17; installed 8.9.2.26)"
        in (f["message"])
    )
    assert "an environment each" in f["fix"]
