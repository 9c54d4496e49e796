"""JUnit times are measured: a smoke's test cases carry the seconds of the smoke check that
judged them (Paddle's real CPU build training in process here), never a `0` nobody measured."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.inprocess import envcheck


def test_the_smoke_cases_carry_the_smoke_checks_time(tmp_path: Path) -> None:
    out = tmp_path / "envcheck.xml"
    run = envcheck("doctor", "--in-process", "--json", "--junit", str(out), "--quiet")
    doc = json.loads(run.stdout)
    measured = doc["meta"]["check_seconds"]
    smoke = [f["id"] for f in doc["findings"] if f["family"] == "smoke"]
    assert smoke and doc["smoke"]["duration_s"] > 0, run.stderr
    for check in smoke:  # the training ran inside the check: its time holds the run's
        assert measured[check] >= doc["smoke"]["duration_s"]
    cases = {c.get("name"): c.get("time", "") for c in ET.parse(out).getroot().iter("testcase")}
    assert {name: float(time) for name, time in cases.items()} == pytest.approx(measured, abs=1e-6)
