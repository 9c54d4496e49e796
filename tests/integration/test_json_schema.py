"""The published JSON Schema (schema/doctor-report.schema.json) describes what `envcheck doctor
--json` really prints: real reports of this machine, fake GPU hosts, saved facts and error
documents are validated against it. Both published schemas are generated from the records they
describe (scripts/json_schema.py): a committed one that differs from what the records give fails
here, with the command that regenerates it."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest

from envcheck.contracts.record import fields
from envcheck.smoke.workload.protocol import LibraryOrigin, LibrarySource
from tests import scenarios as s
from tests.inprocess import envcheck, envcheck_process
from tests.paths import DATA, ROOT

pytest_plugins = ("tests.fakenv",)

GENERATOR = ROOT / "scripts" / "json_schema.py"
SCHEMA = json.loads((ROOT / "schema" / "doctor-report.schema.json").read_text())
ENV = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
REAL_H100 = sorted((DATA / "real-h100").glob("[a-z]-*.json"))


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


def test_the_schema_names_every_library_origin_and_source() -> None:
    """The published enums are the ones a saved facts file and the workload's line are checked
    against (envcheck/smoke/workload/protocol.py)."""
    assert SCHEMA["$defs"]["library_origin"]["enum"] == list(get_args(LibraryOrigin))
    assert SCHEMA["$defs"]["library_source"]["enum"] == list(get_args(LibrarySource))


@pytest.mark.parametrize("path", REAL_H100, ids=[p.stem for p in REAL_H100])
def test_the_real_h100_reports(path: Path) -> None:
    _valid(json.loads(path.read_text()))


def _gpu262() -> dict[str, Any]:
    """The real H100 run of paddlepaddle-gpu 2.6.2: origins, distributions, mapped libraries."""
    return dict(json.loads(next(p for p in REAL_H100 if p.stem == "f-gpu262-expect").read_text()))


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("host", "cudnn", "origin"), "conda"),
        (("host", "cudnn", "candidates", 0, "origin"), "vendor"),
        (("host", "paddle", "distributions"), "paddlepaddle-gpu"),
        (("smoke", "loaded_libraries", 0, "source"), "vendor"),
    ],
    ids=["origin", "candidate-origin", "distributions-not-a-list", "loaded-source"],
)
def test_the_schema_rejects_an_unknown_origin_or_source(
    where: tuple[str | int, ...], value: Any
) -> None:
    report = _gpu262()
    assert report["host"]["paddle"]["distributions"] == ["paddlepaddle-gpu"]
    assert report["smoke"]["loaded_libraries"] and report["host"]["cudnn"]["candidates"]
    _valid(report)
    broken = copy.deepcopy(report)
    node: Any = broken
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _valid(broken)


def _generator() -> Any:
    """scripts/json_schema.py as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("json_schema_script", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_schemas_are_what_the_records_generate() -> None:
    gen = _generator()
    for name, text in gen.generate().items():
        path = gen.FILES[name]
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is not what the records give: run"
            " `python scripts/json_schema.py` and commit the result"
        )


def test_check_catches_a_schema_the_records_no_longer_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = _generator()
    stale = tmp_path / "doctor-report.schema.json"
    stale.write_text(
        gen.FILES["doctor"].read_text(encoding="utf-8").replace('"gpus_present"', '"gpus"'),
        encoding="utf-8",
    )
    monkeypatch.setitem(gen.FILES, "doctor", stale)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.main(["--check"]) == 1
    assert "run `python scripts/json_schema.py`" in capsys.readouterr().err


def test_a_record_field_is_a_property_of_the_published_schema() -> None:
    """The schema follows the records: a field added to a record is in the generated schema."""
    from envcheck.contracts.json_schema import Defs
    from envcheck.contracts.smoke_report import SmokeRun

    properties = Defs().object_of(SmokeRun)["properties"]
    assert list(properties) == [f.name for f in fields(SmokeRun)]
    published = SCHEMA["$defs"]["SmokeRun"]["properties"]
    assert list(published) == list(properties)
    assert published["contradicted"] == {"type": ["boolean", "null"]}
