"""The house's layers as contracts over the whole import graph (issues #14.2, #26.2).

Every module of `envcheck` belongs to exactly one layer (the first pattern of `LAYERS` that
matches it): a new module cannot escape the contracts by default. Each contract forbids a layer
to reach another, or a third-party package, through any chain of runtime imports — a function's
lazy import included; `if TYPE_CHECKING:` imports (types only) are not imports at run time.
The graph is read from the source with `ast`, as import-linter would, without importing it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "envcheck"
THIRD_PARTY = ("rich", "docker", "pynvml", "requests", "urllib3")

# (layer, module patterns), first match wins: the folder tree read as the architecture.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli", (r"envcheck\.(cli|__main__|entry)", r"envcheck\.commands(\..*)?")),
    ("base", (r"envcheck\.digest",)),  # standard-library helpers every layer may use
    ("render", (r"envcheck\.render(\..*)?",)),
    # what travels into the container or the target interpreter: Python 3.8, no envcheck
    # what the host and the workload agree on (the package's __init__ comes with it)
    ("protocol", (r"envcheck\.smoke\.workload(\.protocol)?",)),
    ("workload", (r"envcheck\.smoke\.workload(\..*)?",)),
    ("contract", (r"envcheck", r"envcheck\.contracts(\..*)?")),
    ("matrix", (r"envcheck\.matrix(\..*)?",)),
    ("probe", (r"envcheck\.probe(\..*)?",)),
    (
        "runner",  # runs the smoke: the engine, a subprocess, the NVML sampler
        (
            r"envcheck\.smoke\.(runner(\..*)?|check)",
            r"envcheck\.engine(\..*)?",
            r"envcheck\.pull\.(ensure|images|run)",
            r"envcheck\.registry\.(client|transport)",
            # runs the target's pip, keeps and restores its files, its journal and lock
            r"envcheck\.fix\.(apply|keep|journal|site|transaction|repair)",
        ),
    ),
    ("edge", (r"envcheck\.edges(\..*)?",)),  # the process's own I/O: files, streams, signals
    (
        "rule",  # pure: facts and matrix in, findings, choices and plans out
        (
            r"envcheck\.(verdict|image)(\..*)?",
            r"envcheck\.smoke(\.(options|plan|parse))?",
            r"envcheck\.smoke\.verdict(\..*)?",
            r"envcheck\.fix(\.(plan|outcome))?",
            r"envcheck\.pull(\.(events|plan))?",
            r"envcheck\.registry(\.(auth|documents|errors))?",
        ),
    ),
)


@dataclass(frozen=True)
class Contract:
    layers: tuple[str, ...]
    forbidden: tuple[str, ...]  # layers, or third-party packages
    reason: str


CONTRACTS = (
    Contract(
        ("base",),
        (
            "cli",
            "render",
            "workload",
            "protocol",
            "contract",
            "matrix",
            "probe",
            "runner",
            "edge",
            "rule",
        ),
        "a helper every layer may use depends on no part of envcheck",
    ),
    Contract(
        ("rule", "matrix"),
        ("probe", "runner", "edge", "render", "cli", *THIRD_PARTY),
        "a verdict is a pure function of (facts, matrix): it judges a saved report as a live host",
    ),
    Contract(
        ("render",),
        ("probe", "runner", "cli", "docker", "pynvml", "requests", "urllib3"),
        "a renderer turns a verdict into text: it never probes, pulls or runs the smoke",
    ),
    Contract(
        ("contract",),
        ("rule", "matrix", "probe", "runner", "edge", "render", "cli", *THIRD_PARTY),
        "the shared types (facts, findings, report) depend on nothing that uses them",
    ),
    Contract(
        ("workload", "protocol"),
        ("cli", "render", "contract", "matrix", "probe", "runner", "edge", "rule", *THIRD_PARTY),
        "the workload runs where envcheck is not installed (an image's Python 3.8)",
    ),
    Contract(
        ("probe",),
        ("rule", "runner", "render", "cli", "rich"),
        "a probe reads one part of the host into facts (the engine's through the Engine API): it "
        "judges nothing and prints nothing",
    ),
    Contract(
        ("cli", "base", "render", "contract", "matrix", "probe", "runner", "edge", "rule"),
        ("workload",),
        "the host imports the workload's protocol only: the rest of it runs in the container",
    ),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    if module.split(".")[0] in THIRD_PARTY:
        return module.split(".")[0]
    for layer, patterns in LAYERS:
        if any(re.fullmatch(p, module) for p in patterns):
            return layer
    return None


def runtime_imports(source: str, module: str, is_package: bool) -> set[str]:
    """The modules `source` imports when it runs (resolved relative imports included), not
    those under `if TYPE_CHECKING:`."""
    tree = ast.parse(source)
    typing_only = {
        id(node)
        for stmt in ast.walk(tree)
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
        for node in ast.walk(stmt)
    }
    here = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = here.split(".")[: len(here.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found.add(target)
            # `from envcheck.smoke.runner import container` imports envcheck.smoke.runner.container
            found |= {f"{target}.{alias.name}" for alias in node.names}
    return found


@cache
def graph() -> dict[str, frozenset[str]]:
    """Each envcheck module's direct runtime imports: envcheck modules and third-party roots."""
    known = modules()
    edges = {}
    for name, path in known.items():
        found = runtime_imports(path.read_text(), name, path.name == "__init__.py")
        edges[name] = frozenset(
            m if m in known else m.split(".")[0]
            for m in found
            if m in known or m.split(".")[0] in THIRD_PARTY
        )
    return edges


def chains_to(start: str, forbidden: Iterable[str]) -> list[list[str]]:
    """The shortest import chain from `start` to each module of a forbidden layer it reaches:
    every violation is named, not only the nearest (an added `import rich` beside an added
    adapter import is reported too)."""
    banned, edges = set(forbidden), graph()
    paths, seen, chains = [[start]], {start}, []
    while paths:
        path = paths.pop(0)
        for nxt in sorted(edges.get(path[-1], ())):
            if nxt in seen:
                continue
            seen.add(nxt)
            if layer_of(nxt) in banned:
                chains.append([*path, nxt])
            else:
                paths.append([*path, nxt])
    return chains


def test_every_module_belongs_to_one_layer() -> None:
    unclassified = [m for m in modules() if layer_of(m) is None]
    assert unclassified == [], f"give each a layer in LAYERS: {unclassified}"


@pytest.mark.parametrize(
    "contract",
    CONTRACTS,
    ids=["base", "rules-pure", "renderers", "contracts", "workload", "probes", "host-workload"],
)
def test_contract_holds_over_the_whole_import_graph(contract: Contract) -> None:
    broken = [
        " -> ".join(chain)
        for module in modules()
        if layer_of(module) in contract.layers
        for chain in chains_to(module, contract.forbidden)
    ]
    assert broken == [], f"{contract.reason}:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("module", "line", "layer"),
    [
        # the examples of #26.2 that the hand list let through
        ("envcheck.smoke.verdict.pieces", "import envcheck.engine.docker_adapter", "runner"),
        ("envcheck.smoke.verdict.pieces", "import rich", "rich"),
        ("envcheck.matrix.schema", "from envcheck.engine.docker_adapter import LABEL", "runner"),
        ("envcheck.contracts.host_report", "from envcheck.verdict.proof import Proof", "rule"),
        # transitively: a rule that imports a pure module which (lazily) imports an adapter
        (
            "envcheck.verdict.judge",
            "def f():\n    from envcheck.edges.userfiles import read_json",
            "edge",
        ),
        # the host reaching into the workload beyond its protocol
        (
            "envcheck.smoke.runner.inprocess",
            "from envcheck.smoke.workload import output",
            "workload",
        ),
    ],
    ids=["rule-adapter", "rule-rich", "matrix-adapter", "contract-rule", "lazy", "host-workload"],
)
def test_the_contracts_see_a_reintroduced_violation(module: str, line: str, layer: str) -> None:
    path = modules()[module]
    source = path.read_text() + "\n" + line + "\n"
    direct = runtime_imports(source, module, path.name == "__init__.py")
    reached = {layer_of(m if m in modules() else m.split(".")[0]) for m in direct}
    assert layer in reached
    forbidden = [c for c in CONTRACTS if layer_of(module) in c.layers and layer in c.forbidden]
    assert forbidden, f"no contract forbids {layer} to {module}"


def test_type_only_imports_are_not_runtime_imports() -> None:
    typed = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from envcheck.probe import x\n"
    )
    assert "envcheck.probe" not in runtime_imports(typed, "envcheck.verdict.judge", False)
    relative = "from .protocol import LOG_PREFIX\n"
    assert "envcheck.smoke.workload.protocol" in runtime_imports(
        relative, "envcheck.smoke.workload.main", False
    )
