"""The files a user names (`--facts`, `--baseline`, saved reports) are regular files holding
what was observed: `{}` is no evidence, a device or folder is refused at once, `-` is stdin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import report_samples as samples
from tests.inprocess import envcheck


def _facts(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("doc", "missing"),
    [
        ({}, "no driver, gpus and paddle sections"),
        ({"machine": {"hostname": "gpu-01"}, "gpus": []}, "no driver and paddle sections"),
        ({"driver": {"status": "absent"}, "gpus": []}, "no paddle section:"),
        ({"host": {}, "findings": []}, "no driver, gpus and paddle sections"),
    ],
    ids=["empty", "no-driver-no-paddle", "no-paddle", "empty-report"],
)
def test_a_facts_document_without_what_was_observed_is_exit_2(
    tmp_path: Path, doc: object, missing: str
) -> None:
    """Before: `{}` read as "everything unknown" and judged PASS, exit 0: a gate with no
    evidence went green."""
    run = envcheck("doctor", "--facts", _facts(tmp_path, doc), "--json")
    assert run.returncode == 2, run.stderr
    assert missing in run.stderr and "Traceback" not in run.stderr
    assert json.loads(run.stdout)["exit_code"] == 2


def test_a_saved_report_is_still_a_facts_document(tmp_path: Path) -> None:
    doc = samples.driver_upgraded_without_reboot().to_json()
    assert envcheck("doctor", "--facts", _facts(tmp_path, doc)).returncode == 1
    assert envcheck("doctor", "--facts", "-", stdin=json.dumps(doc)).returncode == 1


def test_a_link_to_a_regular_file_is_read(tmp_path: Path) -> None:
    """The user named the link; reading through it harms nothing (`latest.json -> …`)."""
    link = tmp_path / "latest.json"
    link.symlink_to(_facts(tmp_path, samples.healthy().to_json()))
    assert envcheck("doctor", "--facts", str(link)).returncode == 0


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/dev/zero", "a character device"), ("{tmp}", "a directory")],
    ids=["dev-zero", "folder"],
)
@pytest.mark.parametrize("flag", ["--facts", "--baseline"])
def test_what_is_not_a_regular_file_is_refused_before_a_byte_is_read(
    tmp_path: Path, path: str, kind: str, flag: str
) -> None:
    """`/dev/zero` was read up to the 16 MiB limit before it was refused."""
    named = path.replace("{tmp}", str(tmp_path))
    facts = ("--facts", _facts(tmp_path, samples.healthy().to_json()))
    run = envcheck("doctor", *(facts if flag == "--baseline" else ()), flag, named)
    assert run.returncode == 2
    assert f"not a regular file: {kind}" in run.stderr
    assert "pass `-` and send the document on stdin" in run.stderr


def test_a_saved_report_that_is_a_device_is_named_among_the_fleet(tmp_path: Path) -> None:
    good = tmp_path / "gpu-node-1.json"
    good.write_text(json.dumps(samples.healthy().to_json()), encoding="utf-8")
    run = envcheck("report", str(good), "/dev/zero")
    assert run.returncode == 2 and "/dev/zero" in run.stderr
    assert "not a regular file: a character device" in run.stderr
