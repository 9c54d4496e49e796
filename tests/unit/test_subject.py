"""The subject: which interpreter the doctor and `fix` judge, why, and that every envcheck
command a report prints names it with `--python`."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import UsageError
from envcheck.probe.interpreter import resolve_interpreter
from envcheck.verdict.fixes import report_document
from tests import report_samples, scenarios
from tests.inprocess import ENV, run_envcheck
from tests.paths import DATA
from tests.subject_commands import uncarried

# A venv whose path needs quoting: a pasted command must still name it.
TRAIN = "/srv/train env/bin/python"


def _saved(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA / name).read_text())
    return doc


def _with_python(doc: dict[str, Any], python: str) -> dict[str, Any]:
    """The saved host, or report, as if it had judged `python`."""
    host = doc.get("host", doc)
    host = host | {"paddle": host.get("paddle", {}) | {"python": python}}
    return doc | {"host": host} if "host" in doc else host


# Every saved host and report the suite holds: the judge's scenarios, the remedies', the recorded
# real machines, and the hand-built reports with a smoke (whose commands a saved report keeps).
SAVED: dict[str, dict[str, Any]] = {
    **scenarios.JUDGE_HOSTS,
    **scenarios.REMEDY_HOSTS,
    **{p.stem: _saved(f"hosts/{p.name}") for p in sorted((DATA / "hosts").glob("*.json"))},
    **{
        p.stem: _saved(f"real-h100/{p.name}")
        for p in sorted((DATA / "real-h100").glob("[a-f]-*.json"))
    },
    **{
        f"report-{make.__name__}": report_document(make())
        for make in dict.fromkeys(report_samples.FLEET_MIX)
    },
}


def _outputs(tmp_path: Path, doc: dict[str, Any], *flags: str) -> list[str]:
    """What a person reads of the doctor's report on `doc`: the text, the JSON, the Markdown
    summary and the workflow annotations."""
    facts = scenarios.write(tmp_path, doc)
    text = run_envcheck(["doctor", "--facts", facts, *flags], env=ENV)
    markdown = tmp_path / "summary.md"
    ci = ENV | {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "out")}
    js = run_envcheck(
        ["doctor", "--facts", facts, "--json", "--markdown", str(markdown), *flags], env=ci
    )
    assert text.returncode not in (2, 3) and js.returncode == text.returncode, js.stderr
    return [text.stdout, js.stdout, js.stderr, markdown.read_text()]


def test_the_checker_sees_a_command_without_the_subject() -> None:
    line = "then `envcheck fix --yes`; or `envcheck doctor --python /other/bin/python`"
    assert uncarried(line, TRAIN) == [
        "envcheck fix --yes",
        "envcheck doctor --python /other/bin/python",
    ]
    assert uncarried("Next:\n  envcheck pull-image --dry-run\n", TRAIN) == [
        "envcheck pull-image --dry-run"
    ]
    carried = f"`envcheck fix --python {shlex.quote(TRAIN)} --yes`"
    assert uncarried(carried, TRAIN) == []


@pytest.mark.parametrize("name", SAVED)
@pytest.mark.parametrize("mode", [[], ["--expect-gpu"]], ids=["static", "expect-gpu"])
def test_every_envcheck_command_printed_names_the_judged_interpreter(
    name: str, mode: list[str], tmp_path: Path
) -> None:
    """A T4 on driver 418 judged for /srv/train env/bin/python was told `envcheck fix --yes`:
    pasted, it judges and changes another interpreter."""
    outputs = _outputs(tmp_path, _with_python(SAVED[name], TRAIN), "--no-smoke", *mode)
    assert [c for out in outputs for c in uncarried(out, TRAIN)] == []


def test_the_walk_meets_envcheck_commands() -> None:
    """The walk above is not empty: the T4 on driver 418 prints `envcheck fix` in each form."""
    doc = _with_python(scenarios.REMEDY_HOSTS["t4-418-cpu-wheel"], TRAIN)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        outputs = _outputs(Path(folder), doc, "--no-smoke")
    carried = f"envcheck fix --python {shlex.quote(TRAIN)} --yes"
    assert all(carried in out for out in outputs[:2]), outputs
    assert uncarried(
        "".join(outputs), "/elsewhere/bin/python"
    )  # the same commands, another subject


def test_the_paddle_line_says_which_interpreter_and_why(tmp_path: Path) -> None:
    doc = _with_python(scenarios.JUDGE_HOSTS["laptop-no-gpu"], "/home/u/train/bin/python")
    doc["paddle"]["python_reason"] = "the active venv"
    facts = scenarios.write(tmp_path, doc)
    text = run_envcheck(["doctor", "--facts", facts, "--no-smoke"]).stdout
    assert "in /home/u/train/bin/python (the active venv)" in text, text
    saved = run_envcheck(["doctor", "--facts", facts, "--no-smoke", "--json"]).stdout
    again = scenarios.write(tmp_path, json.loads(saved), "saved.json")  # a saved report, read back
    paddle = json.loads(run_envcheck(["doctor", "--facts", again, "--json"]).stdout)["host"][
        "paddle"
    ]
    assert paddle["python_reason"] == "the active venv"


def test_a_report_saved_before_the_reason_reads_and_says_nothing_of_it(tmp_path: Path) -> None:
    doc = _with_python(scenarios.JUDGE_HOSTS["laptop-no-gpu"], "/home/u/train/bin/python")
    facts = scenarios.write(tmp_path, doc)
    out = run_envcheck(["doctor", "--facts", facts, "--no-smoke"])
    assert out.returncode in (0, 1), out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("Paddle build:"))
    assert line.endswith("in /home/u/train/bin/python — ok") and "None" not in out.stdout, line


def test_an_absent_paddle_names_the_interpreter_looked_in(tmp_path: Path) -> None:
    paddle = {"status": "absent", "reason": "Paddle is not installed for this interpreter"}
    paddle |= {"python": "/opt/conda/envs/train/bin/python"}
    paddle |= {"python_reason": "the active conda environment"}
    facts = scenarios.write(tmp_path, scenarios.host(paddle=paddle))
    text = run_envcheck(["doctor", "--facts", facts, "--no-smoke"]).stdout
    line = next(x for x in text.splitlines() if x.startswith("Paddle build:"))
    assert line.endswith("— /opt/conda/envs/train/bin/python (the active conda environment)"), line


# -- which interpreter: the resolution itself (no other Python is asked here) ---------------------


def test_the_active_venv_that_runs_envcheck_is_taken_without_asking() -> None:
    target = resolve_interpreter(None, {"VIRTUAL_ENV": sys.prefix, "PATH": ""})
    assert (target.python, target.why) == (sys.executable, "the active venv")


def test_without_an_active_environment_envcheck_s_own_is_taken_where_it_has_paddle() -> None:
    """This venv holds Paddle's CPU build (the suite's set-up)."""
    target = resolve_interpreter(None, {"PATH": ""})
    assert (target.python, target.why) == (
        sys.executable,
        "envcheck's own interpreter, which has Paddle",
    )


@pytest.mark.parametrize("variable", ["VIRTUAL_ENV", "CONDA_PREFIX"])
def test_an_active_environment_that_is_gone_is_a_usage_error(variable: str, tmp_path: Path) -> None:
    """A venv deleted under its activated shell: one line naming the variable, not a traceback
    (and not envcheck's own venv judged instead)."""
    gone = str(tmp_path / "gone")
    with pytest.raises(UsageError) as e:
        resolve_interpreter(None, {variable: gone, "PATH": os.defpath})
    assert f"{variable}={gone}" in e.value.message and "no such file" in e.value.message
    assert "--python" in (e.value.hint or "")


def test_the_doctor_with_a_gone_venv_is_exit_2_in_one_line(tmp_path: Path) -> None:
    facts = ENV | {"VIRTUAL_ENV": str(tmp_path / "gone")}
    out = run_envcheck(["fix"], env=facts)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"VIRTUAL_ENV={tmp_path / 'gone'}" in out.stderr.splitlines()[0]


def test_a_relative_virtual_env_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="VIRTUAL_ENV='venv' is not an absolute path"):
        resolve_interpreter(None, {"VIRTUAL_ENV": "venv"})
