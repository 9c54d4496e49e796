"""One remedy, everywhere: the doctor's pip commands are the steps `envcheck fix` plans, each
printed command runs as printed, a CUDA-variant switch uninstalls first, and the last lines at 80
columns say what to type. On the fake GPU hosts and against a local index, where the printed
commands really change an environment: tests/integration/test_remedy_runs.py."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import Report
from envcheck.contracts.remedy import Command, Instruction, Remedy, from_document
from envcheck.fix.plan import pip_commands, plan_fix
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.render.text import next_lines, render_plain, render_rich
from envcheck.verdict.fixes import target_python
from envcheck.verdict.judge import Context, judge
from envcheck.verdict.next_step import next_steps
from tests import scenarios as s
from tests.fix_commands import dangling, diagnostic, shell_problems
from tests.inprocess import ENV, envcheck_process
from tests.paths import DATA

MATRIX = load_matrix(None)
RECORDED = {
    **{p.stem: p for p in sorted((DATA / "hosts").glob("*.json"))},
    **{p.stem: p for p in sorted((DATA / "real-h100").glob("[a-f]-*.json"))},
}


def judged(document: dict[str, Any], *, expect_gpu: bool = False) -> Report:
    """The host judged as a doctor whose smoke runs in a container would (the engine checked)."""
    host = host_from_document(document)
    image = select_image(host, MATRIX)
    context = Context(host, MATRIX, image, expect_gpu=expect_gpu, needs_engine=True)
    findings = judge(context)
    return Report(host=host, findings=tuple(findings), image=image)


def recorded(path: Path) -> dict[str, Any]:
    """A recorded host's facts (a saved report's `host`)."""
    doc = json.loads(path.read_text())
    return dict(doc["host"] if "findings" in doc else doc)


def reports() -> Iterator[tuple[str, Report]]:
    for name, path in RECORDED.items():
        yield name, judged(recorded(path))
        yield f"{name}-expect-gpu", judged(recorded(path), expect_gpu=True)
    for name, doc in s.REMEDY_HOSTS.items():
        yield name, judged(doc)
        yield f"{name}-expect-gpu", judged(doc, expect_gpu=True)


REPORTS = dict(reports())


def doctor_pip(findings: list[Finding]) -> list[Command]:
    """The doctor's pip commands, in report order, each once: what `envcheck fix` runs."""
    return list(dict.fromkeys(c for f in findings for c in pip_commands(f)))


# -- the doctor's commands are the plan ---------------------------------------------------------


@pytest.mark.parametrize("name", REPORTS, ids=str)
def test_the_plan_is_made_of_the_doctors_own_commands(name: str) -> None:
    report = REPORTS[name]
    plan = plan_fix(report, target_python(report.host))
    pip_steps = [step for step in plan.steps if step.kind in ("install", "uninstall")]
    assert [step.command for step in pip_steps] == doctor_pip(list(report.findings))
    assert all(step.command is not None and step.argv == step.command.argv for step in pip_steps)


# -- every step complete ------------------------------------------------------------------------


@pytest.mark.parametrize("name", REPORTS, ids=str)
def test_every_step_is_complete(name: str) -> None:
    """bash and zsh parse each command; none is a diagnostic, the doctor again or a fragment
    ending in a pipe; no step points at "its fix above"."""
    report = REPORTS[name]
    remedies = [f.remedy for f in report.findings if f.remedy is not None]
    commands = [c.shell() for r in remedies for c in r.commands]
    assert {c: shell_problems(c) for c in commands if shell_problems(c)} == {}
    assert [c for c in commands if diagnostic(c) or dangling(c)] == []
    words = [s.text for r in remedies for s in r.steps if isinstance(s, Instruction)]
    assert [w for w in words if "fix is above" in w] == []


def test_the_toolkit_is_installed_before_configure_wherever_a_finding_asks_for_it() -> None:
    host = s.host(
        driver=s.driver("535.104.05", "12.2"),
        gpus=[s.A100],
        paddle=s.PADDLE_331_CU126,
        engine=s.ENGINE_PLAIN,
    )
    host_facts = host_from_document(host)
    image = select_image(host_facts, MATRIX)
    findings = judge(Context(host_facts, MATRIX, image, needs_engine=True))
    runtime = next(f.remedy for f in findings if f.id == "engine.no-nvidia-runtime")
    assert runtime is not None
    first = runtime.steps[0]
    assert isinstance(first, Instruction) and "nvidia-container-toolkit" in first.text
    assert runtime.commands[0].shell() == ("sudo nvidia-ctk runtime configure --runtime=docker")


# -- a variant switch uninstalls first, and the printed commands do what they say ---------------


def test_a_variant_switch_uninstalls_first_in_the_doctors_advice_too() -> None:
    """3.3.1 cu130 on a driver of CUDA 12.9: before, the doctor printed only
    `pip install paddlepaddle-gpu==3.3.1 -i …/cu129/`, which pip answers "Requirement already
    satisfied", while `envcheck fix` uninstalled first."""
    report = REPORTS["h100-575-331-cu130"]
    pip = doctor_pip(list(report.findings))
    assert [c.argv[3:] for c in pip][:1] == [("uninstall", "-y", "paddlepaddle-gpu")]
    assert pip[1].argv[3:5] == ("install", "paddlepaddle-gpu==3.3.1")
    assert pip[1].argv[-1].endswith("/cu129/")


# -- the last lines say what to type ------------------------------------------------------------


def _rendered(report: Report, rich: bool) -> list[str]:
    out = io.StringIO()
    (render_rich if rich else render_plain)(report, out, width=80)
    text = out.getvalue()
    return [line.rstrip() for line in _strip_ansi(text).splitlines()]


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


@pytest.mark.parametrize("rich", [False, True], ids=["plain", "rich"])
@pytest.mark.parametrize("name", REPORTS, ids=str)
def test_the_last_ten_lines_hold_the_verdict_and_what_to_type(name: str, rich: bool) -> None:
    report = REPORTS[name]
    lines = _rendered(report, rich)
    last = lines[-10:]
    todo = next_steps(report)
    assert any(line.startswith("Verdict: ") for line in last), "\n".join(lines[-14:])
    block = [line for line, _ in next_lines(report, 80)]
    assert lines[-len(block) :] == block if block else True
    typed = [line.strip() for line in block if line.startswith("  ") and not line.startswith("  #")]
    assert typed == [c.shell() for c in todo.steps if isinstance(c, Command)]
    assert len(typed) == len(set(typed))  # each command once
    assert all("`" not in line for line in typed)
    assert {c: shell_problems(c) for c in typed if shell_problems(c)} == {}
    assert [c for c in typed if diagnostic(c) or dangling(c)] == []
    # words wrap at 80 columns; only a word longer than the line (a URL) overflows, whole
    assert all(
        len(line) <= 80 or len(line.split()) == 2 for line in block if line.startswith("  #")
    )
    if report.verdict != "pass" and any(
        f.severity != "pass" and f.remedy and f.remedy.pip for f in report.findings
    ):
        assert any(t.startswith("envcheck fix") and t.endswith("--yes") for t in typed)


@pytest.mark.parametrize("wheel", ["cpu", "gpu"])
def test_a_t4_on_418_gets_one_driver_target_whatever_paddle_is_installed(wheel: str) -> None:
    """Before: with the CPU wheel, driver PASS and `envcheck doctor` as the command (a dead end);
    with the GPU wheel, >= 580.65.06 from the driver and >= 525.60.13 from `image.none`."""
    report = REPORTS[f"t4-418-{wheel}-wheel"]
    drivers = [f for f in report.findings if f.id == "driver.too-old"]
    assert len(drivers) == 1 and drivers[0].severity == "fail"
    assert "CUDA 12.6 needs >= 525.60.13" in drivers[0].message
    assert "CUDA 13.0 needs >= 580.65.06" in drivers[0].message
    assert drivers[0].fix == "upgrade the driver to 525.60.13 or newer"
    image = next(f for f in report.findings if f.id == "image.none")
    assert image.fix == "resolved by the fix for driver.too-old"
    typed = [c.shell() for c in next_steps(report).steps if isinstance(c, Command)]
    assert not any(t.startswith("envcheck doctor") for t in typed)


def test_a_remedy_reads_back_from_its_json() -> None:
    for report in REPORTS.values():
        for f in report.findings:
            if f.remedy is not None:
                assert from_document(f.remedy.to_json(), f.id) == f.remedy
    assert from_document({"steps": [], "resolved_by": "paddle.cpu-build"}, "x") == Remedy(
        resolved_by="paddle.cpu-build"
    )


def test_the_json_pip_command_names_the_judged_interpreter(tmp_path: Path) -> None:
    """Before: `image.pip_command` was the matrix row's bare `python -m pip …` while the text
    named the interpreter. A saved report read back keeps the row's own command."""
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(s.REMEDY_HOSTS["h100-575-331-cu130"]))
    env = {**ENV, "ENVCHECK_DRIVER_ROOT": str(tmp_path)}
    run = envcheck_process("doctor", "--facts", str(facts), "--no-smoke", "--json", env=env)
    image = json.loads(run.stdout)["image"]
    assert image["pip_command"] == (
        "/srv/venv/bin/python -m pip uninstall -y paddlepaddle-gpu && /srv/venv/bin/python -m pip "
        "install paddlepaddle-gpu==3.3.1 -i https://www.paddlepaddle.org.cn/packages/stable/cu129/"
    )
    assert image["matrix_pip_command"].startswith("python -m pip install paddlepaddle-gpu==3.3.1")
    saved = tmp_path / "report.json"
    saved.write_text(run.stdout)
    again = envcheck_process("doctor", "--facts", str(saved), "--no-smoke", "--json", env=env)
    assert json.loads(again.stdout)["image"]["pip_command"] == image["pip_command"]
