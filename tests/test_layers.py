"""The house's layers (issue #14.2): rule modules are pure — they import no adapter (engine,
registry, probes, the in-container workload, file I/O) and no renderer. The imports are read
from the source, so a new violation fails here before it spreads. `if TYPE_CHECKING:` imports
(types only) are allowed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "envcheck"

RULES = (
    "assessment",
    "compat",
    "drift",
    "errors",
    "exitcodes",
    "facts",
    "findings",
    "fixes",
    "fleet",
    "given_image",
    "hostlist",
    "image_checks",
    "judge",
    "one_plan",
    "platforms",
    "proof",
    "pull/__init__",
    "pull/events",
    "pull/plan",
    "registry/__init__",
    "registry/auth",
    "registry/documents",
    "registry/errors",
    "report",
    "saved_report",
    "rules/__init__",
    "rules/archs",
    "rules/container",
    "rules/cuda",
    "rules/driver",
    "rules/environment",
    "rules/gpus",
    "rules/paddle",
    "select",
    "versions",
    "visible_devices",
    "matrix/builds",
    "matrix/model",
    "matrix/provenance",
    "smoke/causes",
    "smoke/document",
    "smoke/failures",
    "smoke/known_answers",
    "smoke/loaded",
    "smoke/options",
    "smoke/plan",
    "smoke/verdict",
    "smoke/witness",
)
ADAPTERS_AND_RENDERERS = (
    "envcheck.cli",
    "envcheck.commands",
    "envcheck.docker_adapter",
    "envcheck.probe",
    "envcheck.pull.ensure",
    "envcheck.pull.images",
    "envcheck.pull.run",
    "envcheck.registry.client",
    "envcheck.registry.transport",
    "envcheck.render",
    "envcheck.signals",
    "envcheck.smoke.attach",
    "envcheck.smoke.container",
    "envcheck.smoke.container_spec",
    "envcheck.smoke.inprocess",
    "envcheck.smoke.workload",
    "envcheck.streams",
    "envcheck.userfiles",
    "docker",
    "pynvml",
    "requests",
    "rich",
)


def _runtime_imports(tree: ast.Module) -> list[str]:
    skipped = {
        id(node)
        for stmt in ast.walk(tree)
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
        for node in ast.walk(stmt)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


@pytest.mark.parametrize("module", RULES)
def test_rule_modules_import_no_adapter_and_no_renderer(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    bad = [
        m
        for m in _runtime_imports(tree)
        if any(m == p or m.startswith(p + ".") for p in ADAPTERS_AND_RENDERERS)
    ]
    assert bad == [], f"envcheck/{module}.py imports {bad}"


def test_the_walker_sees_a_violation() -> None:
    tree = ast.parse("import os\nfrom envcheck.registry.client import RegistryClient\n")
    assert "envcheck.registry.client" in _runtime_imports(tree)
    typed = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from envcheck.probe import x\n"
    )
    assert "envcheck.probe" not in _runtime_imports(typed)


def test_every_module_of_the_judges_rules_is_walked() -> None:
    on_disk = {f"rules/{p.stem}" for p in (PACKAGE / "rules").glob("*.py")}
    assert on_disk <= set(RULES), f"add {sorted(on_disk - set(RULES))} to RULES"


@pytest.mark.parametrize("package", ["pull", "registry"])
def test_every_module_of_the_pull_and_the_registry_is_walked_or_an_adapter(package: str) -> None:
    """These packages hold both pure modules (documents, policy, plans) and I/O: each module is
    named on one side, so a new one cannot escape the walk by default."""
    on_disk = {p.stem for p in (PACKAGE / package).glob("*.py")}
    walked = {m.partition("/")[2] for m in RULES if m.startswith(f"{package}/")}
    io = {
        m.rpartition(".")[2] for m in ADAPTERS_AND_RENDERERS if m.startswith(f"envcheck.{package}.")
    }
    assert on_disk <= walked | io, f"envcheck/{package}/: classify {sorted(on_disk - walked - io)}"
