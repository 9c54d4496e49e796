"""One remedy, everywhere: the doctor's pip commands are the steps `envcheck fix` plans, each
printed command runs as printed, a CUDA-variant switch uninstalls first (and the printed commands
really change the environment), and the last lines at 80 columns say what to type."""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from collections.abc import Callable, Iterator
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
from tests import fix_env
from tests import scenarios as s
from tests.fakenv import profile_names
from tests.fix_commands import dangling, diagnostic, shell_problems
from tests.inprocess import ENV, doctor_process, envcheck_process
from tests.paths import DATA

pytest_plugins = ("tests.fakenv",)

MATRIX = load_matrix(None)
RECORDED = {
    **{p.stem: p for p in sorted((DATA / "hosts").glob("*.json"))},
    **{p.stem: p for p in sorted((DATA / "real-h100").glob("[a-f]-*.json"))},
}
# The scenarios of the issue: a CUDA-variant switch, a T4 on driver 418 with the CPU wheel.
SCENARIOS: dict[str, dict[str, Any]] = {
    "h100-575-331-cu130": s.host(
        driver=s.driver("575.51.03", "12.9"),
        gpus=[s.H100],
        paddle=s.PADDLE_331_CU126
        | {"cuda": "13.0", "cudnn": "9.13.0", "python": "/srv/venv/bin/python"},
    ),
    "t4-418-cpu-wheel": s.host(
        driver=s.driver("418.87.01", "10.1"),
        gpus=[s.T4],
        paddle=s.PADDLE_331_CPU | {"python": "/srv/venv/bin/python"},
    ),
    # three remedies at once: the pip fix, a reboot (or the module reload), the Toolkit
    "a100-reboot-toolkit-cpu-wheel": s.host(
        driver=s.driver("535.104.05", "12.2", kernel_module="530.30.02"),
        gpus=[s.A100],
        paddle=s.PADDLE_331_CPU | {"python": "/srv/venv/bin/python"},
        engine=s.ENGINE_PLAIN,
    ),
    "t4-418-gpu-wheel": s.host(
        driver=s.driver("418.87.01", "10.1"),
        gpus=[s.T4],
        paddle=s.PADDLE_331_CU126 | {"python": "/srv/venv/bin/python"},
    ),
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
    for name, doc in SCENARIOS.items():
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
        facts = SCENARIOS["h100-575-331-cu130"] | {
            "paddle": SCENARIOS["h100-575-331-cu130"]["paddle"] | {"python": envs["printed"]}
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
    facts.write_text(json.dumps(SCENARIOS["h100-575-331-cu130"]))
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
