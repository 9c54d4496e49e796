"""Every fix is said once, in envcheck/verdict/fixes.py: the rules, the proof, the fleet
and the smoke's verdict quote the catalogue and write no fix text of their own; each command the
catalogue prints runs as printed in bash and zsh."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from envcheck.contracts.facts import EngineFacts
from envcheck.contracts.remedy import Instruction, Remedy
from envcheck.verdict import fixes
from tests.fix_commands import diagnostic, shell_problems
from tests.paths import ROOT

PACKAGE = ROOT / "envcheck"
QUOTERS = (
    *sorted((PACKAGE / "verdict" / "rules").glob("*.py")),
    PACKAGE / "verdict" / "proof.py",
    PACKAGE / "verdict" / "fleet.py",
    PACKAGE / "smoke" / "verdict" / "failures.py",
    PACKAGE / "smoke" / "verdict" / "judge.py",
    PACKAGE / "smoke" / "verdict" / "causes.py",
)


def inline_fixes(source: str) -> list[int]:
    """Lines where a `fix=` is written as text (a string, an f-string, or either after `or` or
    in a conditional)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "fix":
            value = node.value
            values = (
                value.values
                if isinstance(value, ast.BoolOp)
                else [value.body, value.orelse]
                if isinstance(value, ast.IfExp)
                else [value]
            )
            if any(
                isinstance(v, ast.JoinedStr) or (isinstance(v, ast.Constant) and v.value)
                for v in values
            ):
                found.append(node.value.lineno)
    return found


def test_no_rule_writes_a_fix_of_its_own() -> None:
    found = [
        f"envcheck/{path.relative_to(PACKAGE)}:{line}"
        for path in QUOTERS
        for line in inline_fixes(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "say it in envcheck/verdict/fixes.py and quote it:\n" + "\n".join(found)


def test_the_walk_sees_an_inline_fix() -> None:
    assert inline_fixes('warn("x", "m", fix="reboot")') == [1]
    assert inline_fixes('warn("x", "m", fix=f"upgrade to {v}")') == [1]
    assert inline_fixes('warn("x", "m", fix=known or "read the log")') == [1]
    assert inline_fixes('warn("x", "m", fix=f"a {x}" if x else "b")') == [1]
    assert inline_fixes('warn("x", "m", fix=REBOOT_FIX)') == []


def host_sources() -> list[Path]:
    """The host's modules: the workload (its own folder) runs where envcheck is not installed and
    cannot quote the catalogue, so it is left out of the count."""
    return [p for p in PACKAGE.rglob("*.py") if "workload" not in p.relative_to(PACKAGE).parts]


def test_the_gpus_all_advice_is_said_once() -> None:
    texts = [p.read_text(encoding="utf-8") for p in host_sources()]
    assert sum(t.count("`--gpus all`") for t in texts) == 1  # fixes.GPUS_ALL


def test_the_count_leaves_out_the_workload_folder_and_nothing_else() -> None:
    workload = set((PACKAGE / "smoke" / "workload").rglob("*.py"))
    host = set(host_sources())
    assert workload, "the workload folder moved: say where the count should look"
    assert not host & workload
    assert host | workload == set(PACKAGE.rglob("*.py"))


CATALOGUE: list[tuple[str, str | Remedy]] = [
    *(
        (name, value)
        for name, value in vars(fixes).items()
        if name.isupper()
        and isinstance(value, (str, Remedy))
        and name.endswith(("_FIX", "GPUS_ALL", "_YET"))
    ),
    ("mig_instance_fix", fixes.mig_instance_fix(3)),
    ("visible_devices_fix", fixes.visible_devices_fix(2, "GPU-1, GPU-2")),
    ("engine_or_in_process_fix", fixes.engine_or_in_process_fix(EngineFacts(denied=True))),
    ("upgrade_driver_fix", fixes.upgrade_driver_fix("535.54.03", full_support=True)),
]


def commands_of(fix: str | Remedy) -> list[str]:
    """A remedy's commands as printed; the commands of words between backticks."""
    if isinstance(fix, Remedy):
        return [c.shell() for c in fix.commands]
    return fixes.commands_in(fix)


@pytest.mark.parametrize(("name", "text"), CATALOGUE, ids=[n for n, _ in CATALOGUE])
def test_every_catalogued_command_runs_as_printed(name: str, text: str | Remedy) -> None:
    problems = {c: shell_problems(c) for c in commands_of(text)}
    assert all(not p for p in problems.values()), problems


@pytest.mark.parametrize(("name", "text"), CATALOGUE, ids=[n for n, _ in CATALOGUE])
def test_no_catalogued_step_is_a_diagnostic_or_the_doctor_again(
    name: str, text: str | Remedy
) -> None:
    """A step changes something: never `ls`, `cat`, `nvidia-smi -L` or `envcheck doctor` as the
    fix (`envcheck doctor --expect-gpu`, the smoke a static run skipped, is a new proof)."""
    assert [c for c in commands_of(text) if diagnostic(c)] == []


def test_the_toolkit_is_installed_before_it_is_configured_and_reboot_comes_first() -> None:
    runtime = fixes.NVIDIA_RUNTIME_FIX.steps
    assert isinstance(runtime[0], Instruction) and "nvidia-container-toolkit" in runtime[0].text
    assert [c.shell() for c in fixes.NVIDIA_RUNTIME_FIX.commands] == [
        "sudo nvidia-ctk runtime configure --runtime=docker",
        "sudo systemctl restart docker",
    ]
    reboot = fixes.REBOOT_FIX.steps
    assert isinstance(reboot[0], Instruction) and reboot[0].text.startswith("reboot")
    assert all(s.alternative for s in reboot[1:]) and len(reboot) == 2
    assert fixes.REBOOT_FIX.commands[0].shell() == (
        "sudo sh -c 'rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia'"
    )
    assert fixes.DOCKER_GROUP_FIX.commands[0].shell() == "sudo usermod -aG docker $USER"
