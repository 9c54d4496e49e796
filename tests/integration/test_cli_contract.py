"""The CLI's contract with scripts and CI gates: `--json` is always one JSON document (an error
document when the run could not judge), and a reader that leaves early never changes the exit
code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import scenarios as s
from tests.inprocess import ENV, envcheck, run_with_a_gone_reader
from tests.scenarios import write


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["doctor", "--json", "--bogus"], 2, "unknown flag '--bogus' for `envcheck doctor`"),
        (["doctor", "--json", "--gpus", "a,b"], 2, "--gpus"),
        (["doctor", "--json", "--facts", "/no/such/facts.json"], 2, "/no/such/facts.json"),
        (["doctor", "--json", "--no-smoke", "--python", "/no/such/python"], 2, "--python"),
        (["pull-image", "--json", "--image", "Not A Reference"], 2, ""),
        (["report", "--json"], 2, "required: FILE"),
    ],
    ids=["unknown-flag", "bad-gpus", "missing-facts", "bad-python", "bad-reference", "report-flag"],
)
def test_json_errors_are_one_error_document(args: list[str], code: int, words: str) -> None:
    r = envcheck(*args)
    assert r.returncode == code, r.stderr
    doc = json.loads(r.stdout)  # stdout is exactly one JSON document, even now
    assert doc["schema_version"] == 3 and doc["verdict"] == "error"
    assert doc["exit_code"] == doc["error"]["exit"] == code
    assert words in doc["error"]["message"] and "Traceback" not in r.stderr
    assert "envcheck: error:" in r.stderr  # and the one screen for the human


def test_without_json_errors_stay_on_stderr() -> None:
    r = envcheck("doctor", "--bogus")
    assert r.returncode == 2 and r.stdout == "" and "unknown flag '--bogus'" in r.stderr


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["text", "json"])
def test_a_reader_that_leaves_keeps_the_verdicts_exit_code(tmp_path: Path, mode: list[str]) -> None:
    """`envcheck doctor | head -1` on a failing host: still exit 1, no traceback."""
    facts = write(
        tmp_path,
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "doctor", "--facts", facts, *mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1, err
    assert "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["text", "json"])
def test_a_reader_that_leaves_stdout_and_stderr_keeps_the_verdicts_code(
    tmp_path: Path, mode: list[str]
) -> None:
    """`envcheck doctor … 2>&1 | head -1` exited 120 (the progress line's EPIPE)."""
    facts = write(
        tmp_path,
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU),
    )
    code, _ = run_with_a_gone_reader(["doctor", "--facts", facts, *mode], stderr_too=True)
    assert code == 1


@pytest.mark.parametrize("stderr_too", [False, True], ids=["stdout", "2>&1"])
def test_report_piped_to_head_keeps_the_fleets_code(tmp_path: Path, stderr_too: bool) -> None:
    """`envcheck report DIR | head -1` exited 4 instead of the fleet's 1."""
    from tests import report_samples as samples

    for build in (samples.healthy, samples.driver_upgraded_without_reboot):
        report = build()
        (tmp_path / f"{report.host.machine.hostname}.json").write_text(
            json.dumps(report.to_json()), encoding="utf-8"
        )
    code, err = run_with_a_gone_reader(["report", str(tmp_path)], stderr_too=stderr_too)
    assert code == 1, err
    assert "Traceback" not in err
