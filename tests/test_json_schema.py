"""The published JSON Schema (schema/doctor-report.schema.json) describes what `envcheck doctor
--json` really prints: real reports of this machine, fake GPU hosts, saved facts and error
documents are validated against it (issue #13 item 7)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests import scenarios as s
from tests.inprocess import envcheck, envcheck_process

pytest_plugins = ("tests.fakenv",)

SCHEMA = json.loads(
    (Path(__file__).parent.parent / "schema" / "doctor-report.schema.json").read_text()
)
ENV = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}


def _doctor(*args: str, fake: dict[str, str] | None = None) -> dict[str, Any]:
    """In-process, unless a fake driver must be loaded (`fake`: a process of its own)."""
    argv = ("doctor", "--json", *args)
    run = envcheck_process(*argv, env=ENV | fake, timeout=300) if fake else envcheck(*argv, env=ENV)
    return dict(json.loads(run.stdout))


def _valid(doc: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def test_the_schema_is_a_valid_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_schema_rejects_what_the_contract_forbids() -> None:
    report = _doctor("--no-smoke")
    for broken in (
        {**report, "verdict": "green"},
        {**report, "proof": "trust-me"},
        {k: v for k, v in report.items() if k != "proof"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            _valid(broken)


@pytest.mark.parametrize(
    "args",
    [["--no-smoke"], ["--in-process"], ["--no-smoke", "--expect-gpu"]],
    ids=["static", "in-process-smoke", "expect-gpu"],
)
def test_reports_of_this_machine(args: list[str]) -> None:
    _valid(_doctor(*args))


@pytest.mark.fakegpu
@pytest.mark.parametrize("profile", ["h100-580", "a100x2-535", "rm-mismatch", "mig-two-instances"])
def test_reports_of_fake_gpu_hosts(
    fake_nvidia: Callable[[str], dict[str, str]], profile: str
) -> None:
    fake = fake_nvidia(profile)
    _valid(_doctor("--no-smoke", fake=fake | {"PYTHONPATH": fake["FAKE_NVIDIA_SITE_PACKAGES"]}))


def test_a_saved_facts_report(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(
        json.dumps(
            s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU)
        )
    )
    _valid(_doctor("--facts", str(facts)))


@pytest.mark.parametrize(
    "args", [["--bogus"], ["--facts", "/no/such/file"], ["--python", "/no/such/python"]]
)
def test_error_documents(args: list[str]) -> None:
    doc = _doctor(*args)
    assert doc["verdict"] == "error"
    _valid(doc)
