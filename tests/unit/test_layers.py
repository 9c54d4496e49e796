"""The house's layers as contracts over the whole import graph.

Every module of `envcheck` belongs to exactly one layer: its folder's (`LAYERS`, each layer a set
of folders), or the one `MODULES` names with its reason. A new folder or top-level module belongs
to none until it is named, so it cannot escape the contracts by default. Each contract forbids a
layer to reach another, or a third-party package, through any chain of runtime imports — a
function's lazy import included; `if TYPE_CHECKING:` imports (types only) are not imports at run
time. Some contracts are written as what a layer may import (`may_import`): anything else is
forbidden, a layer added later included.
The graph is read from the source with `ast`, as import-linter would, without importing it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "envcheck"
THIRD_PARTY = ("rich", "docker", "pynvml", "requests", "urllib3")

# Each layer is a set of folders (packages): a module belongs to its folder's layer, a folder's
# `__init__` included. A folder is one layer; a new folder, or a new module at the top, belongs
# to none until it is named here, so nothing escapes the contracts by default.
LAYERS: dict[str, frozenset[str]] = {
    "cli": frozenset({"envcheck.commands"}),
    "render": frozenset({"envcheck.render"}),
    # what travels into the container or the target interpreter: Python 3.8, no envcheck
    "workload": frozenset({"envcheck.smoke.workload"}),
    "contract": frozenset({"envcheck.contracts"}),
    "matrix": frozenset({"envcheck.matrix"}),
    "probe": frozenset({"envcheck.probe"}),
    # runs the smoke, pulls, reads registries, runs the target's pip: the engine, subprocesses,
    # the network, the NVML sampler
    "runner": frozenset(
        {
            "envcheck.smoke.runner",
            "envcheck.fix.runner",
            "envcheck.engine",
            "envcheck.pull",
            "envcheck.registry.http",
        }
    ),
    "edge": frozenset({"envcheck.edges"}),  # the process's own I/O: files, streams, signals
    # pure: facts and matrix in, findings, choices and plans out
    "rule": frozenset(
        {
            "envcheck.verdict",
            "envcheck.verdict.rules",
            "envcheck.image",
            "envcheck.smoke",
            "envcheck.smoke.verdict",
            "envcheck.registry",
            "envcheck.fix",
        }
    ),
}

# The modules whose layer is not their folder's, each for a reason.
MODULES: dict[str, str] = {
    # the top folder holds the entry points, the version and one standard-library helper
    "envcheck": "contract",  # the version
    "envcheck.__main__": "cli",
    "envcheck.cli": "cli",
    "envcheck.entry": "cli",
    "envcheck.digest": "base",  # standard-library helpers every layer may use
    "envcheck.regular": "base",
    # what the host and the workload agree on (the package's __init__ comes with it): the
    # workload's modules import it by a relative name inside the container, so it stays there
    "envcheck.smoke.workload": "protocol",
    "envcheck.smoke.workload.protocol": "protocol",
}

ALL_LAYERS = frozenset({*LAYERS, *MODULES.values()})


@dataclass(frozen=True)
class Contract:
    layers: tuple[str, ...]
    forbidden: tuple[str, ...]  # layers, or third-party packages
    reason: str


def may_import(layers: tuple[str, ...], allowed: Iterable[str], reason: str) -> Contract:
    """An outbound contract: `layers` may reach `allowed` (and themselves), nothing else."""
    permitted = {*layers, *allowed}
    everything = ALL_LAYERS | set(THIRD_PARTY)
    return Contract(layers, tuple(sorted(everything - permitted)), reason)


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
    may_import(
        ("render",),
        # the edge: the streams and files it writes; rich: its tables and bars
        ("base", "contract", "protocol", "matrix", "rule", "edge", "rich"),
        "a renderer turns a verdict into text: it never probes, pulls or runs the smoke",
    ),
    may_import(
        ("edge",),
        # rule: what a file read at the edge holds is checked by a pure function (the baseline)
        ("base", "contract", "protocol", "matrix", "rule"),
        "the process's own I/O (files, streams, signals) serves every layer above it: it never "
        "probes, runs, renders or dispatches, and needs no third-party package",
    ),
    may_import(
        ("runner",),
        # render: the live pull progress and the sanitizer of a container's output, shown while
        # it runs; the command could hand the runner its display instead
        (
            "base",
            "contract",
            "protocol",
            "matrix",
            "rule",
            "probe",
            "edge",
            "render",
            *THIRD_PARTY,
        ),
        "a runner does the I/O a command asks for (the engine, a registry, a child, pip): it "
        "never dispatches a command, and reaches the workload through its protocol only",
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


def folder_of(module: str) -> str:
    """The package a module lives in: itself for a package's `__init__`."""
    path = modules().get(module)
    return module if path is not None and path.name == "__init__.py" else module.rpartition(".")[0]


def layer_of(module: str) -> str | None:
    if module.split(".")[0] in THIRD_PARTY:
        return module.split(".")[0]
    if module in MODULES:
        return MODULES[module]
    folder = folder_of(module)
    return next((layer for layer, folders in LAYERS.items() if folder in folders), None)


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


def chains_to(
    start: str, forbidden: Iterable[str], edges: Mapping[str, frozenset[str]] | None = None
) -> list[list[str]]:
    """The shortest import chain from `start` to each module of a forbidden layer it reaches in
    `edges` (the package's graph by default): every violation is named, not only the nearest (an
    added `import rich` beside an added adapter import is reported too)."""
    banned, edges = set(forbidden), graph() if edges is None else edges
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


def broken(contract: Contract, edges: Mapping[str, frozenset[str]] | None = None) -> list[str]:
    """Every import chain that breaks `contract`, each as `a -> b -> c`."""
    return [
        " -> ".join(chain)
        for module in modules()
        if layer_of(module) in contract.layers
        for chain in chains_to(module, contract.forbidden, edges)
    ]


def test_every_module_belongs_to_one_layer() -> None:
    unclassified = [m for m in modules() if layer_of(m) is None]
    assert unclassified == [], f"give each a layer in LAYERS or MODULES: {unclassified}"


def test_each_folder_is_one_layer_and_every_name_is_real() -> None:
    named = [folder for folders in LAYERS.values() for folder in folders]
    assert sorted(named) == sorted(set(named)), "a folder is named in two layers"
    folders = {folder_of(m) for m in modules()}
    assert set(named) <= folders, f"no such folder: {set(named) - folders}"
    assert set(MODULES) <= set(modules()), f"no such module: {set(MODULES) - set(modules())}"


CONTRACT_IDS = [
    "base",
    "rules-pure",
    "renderers",
    "edges",
    "runners",
    "contracts",
    "workload",
    "probes",
    "host-workload",
]


@pytest.mark.parametrize("contract", CONTRACTS, ids=CONTRACT_IDS)
def test_contract_holds_over_the_whole_import_graph(contract: Contract) -> None:
    assert broken(contract) == [], f"{contract.reason}:\n" + "\n".join(broken(contract))


@pytest.mark.parametrize(
    ("module", "line", "layer"),
    [
        # what a hand-kept list of forbidden imports once let through
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


def injected(module: str, line: str) -> dict[str, frozenset[str]]:
    """The package's import graph as if `line` were added to `module`."""
    path, known = modules()[module], modules()
    source = path.read_text() + "\n" + line + "\n"
    added = {
        m if m in known else m.split(".")[0]
        for m in runtime_imports(source, module, path.name == "__init__.py")
        if m in known or m.split(".")[0] in THIRD_PARTY
    }
    return {**graph(), module: graph()[module] | added}


@pytest.mark.parametrize(
    ("contract_id", "module", "line", "chain"),
    [
        (
            "renderers",
            "envcheck.render.text",
            "from envcheck.probe.nvml import probe_nvml",
            "envcheck.render.text -> envcheck.probe.nvml",
        ),
        (
            "renderers",
            "envcheck.render.junit",
            "def f():\n    from envcheck.pull.run import pull_image",
            "envcheck.render.junit -> envcheck.pull.run",
        ),
        (
            "renderers",
            "envcheck.render.table",
            "import docker",
            "envcheck.render.table -> docker",
        ),
        (
            "edges",
            "envcheck.edges.streams",
            "from envcheck.render.sanitize import visible",
            "envcheck.edges.streams -> envcheck.render.sanitize",
        ),
        (
            "edges",
            "envcheck.edges.userfiles",
            "import rich",
            "envcheck.edges.userfiles -> rich",
        ),
        # through a pure module the edge may use
        (
            "edges",
            "envcheck.verdict.drift",
            "from envcheck.engine.docker_adapter import LABEL",
            " -> ".join(
                (
                    "envcheck.edges.baseline_file",
                    "envcheck.verdict.drift",
                    "envcheck.engine.docker_adapter",
                )
            ),
        ),
        (
            "runners",
            "envcheck.pull.run",
            "from envcheck.commands.doctor import main",
            "envcheck.pull.run -> envcheck.commands.doctor",
        ),
        (
            "runners",
            "envcheck.registry.http.client",
            "from envcheck.smoke.workload import training",
            "envcheck.registry.http.client -> envcheck.smoke.workload.training",
        ),
    ],
    ids=[
        "render-probe",
        "render-runner-lazy",
        "render-docker",
        "edge-render",
        "edge-rich",
        "edge-transitive",
        "runner-cli",
        "runner-workload",
    ],
)
def test_an_outbound_contract_catches_an_injected_upward_import(
    contract_id: str, module: str, line: str, chain: str
) -> None:
    contract = CONTRACTS[CONTRACT_IDS.index(contract_id)]
    assert broken(contract) == []
    assert chain in broken(contract, injected(module, line))


def test_type_only_imports_are_not_runtime_imports() -> None:
    typed = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from envcheck.probe import x\n"
    )
    assert "envcheck.probe" not in runtime_imports(typed, "envcheck.verdict.judge", False)
    relative = "from .protocol import LOG_PREFIX\n"
    assert "envcheck.smoke.workload.protocol" in runtime_imports(
        relative, "envcheck.smoke.workload.main", False
    )
