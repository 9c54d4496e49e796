"""The gate cannot be talked into green: the composite action and the reusable workflow, their
real shell steps run as the runner runs them (tests/gate_steps.py), fed hostile inputs, with the
real envcheck judging a host that fails.

Before: the doctor step echoed its command line raw (a line break in `image` printed a
`::stop-commands::` or `::error::` line of the caller's choosing) and wrote its outputs as
`key=value` lines (a line break in `artifact-name` added `exit-code=0`, which replaced the
doctor's 1: the failing step was skipped and the job passed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests import report_samples as samples
from tests.gate_steps import ACTION, GATE, GateRun, forged, run_job

ENVCHECK = Path(sys.executable).parent / "envcheck"
# What a workflow author may pass on from a pull request's title or branch name.
HOSTILE = {
    "workflow-commands": "x\n::stop-commands::pwned\n::error::forged on its own line",
    "forged-outputs": "x\nexit-code=0\nverdict=pass\nstem=x",
    "carriage-return": "x\r::add-mask::forged",
    "substitutions": "$(touch PWNED)`touch PWNED`${IFS}$((1))",
    "quotes": "'\"; exit 0; echo \"'",
    "command-first": "::warning::at the start of the value",
}
ACTION_INPUTS = (
    "paddle-version",
    "image",
    "registry",
    "training-python",
    "baseline",
    "report-dir",
    "artifact-name",
    "extra-flags",
)
GATE_INPUTS = ("paddle-version", "image", "registry", "baseline", "artifact-name", "extra-flags")
CASES = [
    pytest.param(path, name, value, id=f"{path.stem}-{name}-{kind}")
    for path, names in ((ACTION, ACTION_INPUTS), (GATE, GATE_INPUTS))
    for name in names
    for kind, value in HOSTILE.items()
]


def _failing_host(tmp_path: Path) -> str:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(samples.driver_upgraded_without_reboot().to_json()))
    return f"--facts {facts} --no-smoke"


def _gate(path: Path, tmp_path: Path, **inputs: str) -> GateRun:
    flags = _failing_host(tmp_path)
    extra = inputs.pop("extra-flags", "")
    return run_job(
        path,
        {"extra-flags": f"{flags} {extra}", **inputs},
        tmp_path,
        outputs={"install": {"envcheck": str(ENVCHECK)}},
        skip=("install",),
    )


@pytest.mark.parametrize("path", [ACTION, GATE], ids=["action", "gpu-gate"])
def test_a_failing_host_fails_the_gate_with_the_doctors_exit_code(
    path: Path, tmp_path: Path
) -> None:
    """The reference the hostile cases are held to: the real doctor exits 1 on this host, the
    failing step exits 1, and the upload takes the reports."""
    run = _gate(path, tmp_path)
    assert run.outputs["doctor"]["exit-code"] == "1"
    assert run.job_exit == 1 and run.outcomes["doctor"] == "success"
    assert forged(run.log) == []
    upload = run.uses[
        "Upload the reports" if path == ACTION else "Upload the JSON, JUnit and Markdown reports"
    ]
    assert upload["path"].endswith(f"{run.outputs['doctor']['stem']}.*")


@pytest.mark.parametrize(("path", "name", "value"), CASES)
def test_a_hostile_input_never_turns_the_gate_green_nor_commands_the_runner(
    path: Path, name: str, value: str, tmp_path: Path
) -> None:
    run = _gate(path, tmp_path, **{name: value})
    assert run.failed and run.job_exit != 0, run.log
    assert run.outputs.get("doctor", {}).get("exit-code") != "0", run.outputs
    assert forged(run.log) == [], run.log
    assert not list(tmp_path.rglob("PWNED")), "an input was run as a command"
    assert all(not p.read_text() for p in tmp_path.glob("*.github_env"))
    doctor = run.outputs.get("doctor", {})
    if "\n" in value or "\r" in value:
        if name != "extra-flags":  # a line break there separates flags, as a space does
            assert run.job_exit == 2 and "holds a line break" in run.log
    else:  # a one-line value is data all the way: the outputs say what it was
        assert set(doctor) >= {"exit-code", "stem", "artifact-name"}
        if name == "artifact-name":
            assert doctor["artifact-name"] == value


@pytest.mark.parametrize("path", [ACTION, GATE], ids=["action", "gpu-gate"])
@pytest.mark.parametrize("name", ["envcheck-spec", "python"])
@pytest.mark.parametrize("kind", ["workflow-commands", "carriage-return", "substitutions"])
def test_the_install_step_takes_hostile_inputs_as_data(
    path: Path, name: str, kind: str, tmp_path: Path
) -> None:
    """The interpreter and pip requirement reach python and pip as one argument each; a line
    break is refused before either runs (pip would echo it back, one line a command)."""
    value = HOSTILE[kind]
    inputs = {name: value} if name == "python" else {name: value, "python": sys.executable}
    run = run_job(path, inputs, tmp_path)
    assert run.failed and run.job_exit != 0, run.log
    assert run.outcomes.get("install") == "failure" and "doctor" not in run.exit_codes
    assert forged(run.log) == [], run.log
    assert not list(tmp_path.rglob("PWNED"))
