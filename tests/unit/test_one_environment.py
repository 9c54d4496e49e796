"""One environment, honoured by every layer.

A command knows the world through the `Environment` it is handed
(envcheck/contracts/command_env.py): its streams, its variables, its folder.
`envcheck/contracts/command_env.py` is the one module that reads the process's own
(`Environment.from_process()`), with the entry point for the probe it starts early; the source is
walked here for any other read of the process's variables or write to its streams, direct or through
a default that reads them. An in-process run then proves that an injected variable reaches the
report; in the integration lane, that it reaches the CUDA probe's child on a fake driver
(test_probe_cuda.py) and that the leftover sweep's messages go to the injected stderr
(test_smoke_sweep.py).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess import ENV, run_envcheck
from tests.paths import ROOT

PACKAGE = ROOT / "envcheck"
# The process's edge: the only readers of its variables and streams. The entry point hands
# `os.environ` to the probe it starts before envcheck.contracts.command_env is imported.
EDGES = ("contracts/command_env.py", "entry.py")
# Programs of their own, run where no `Environment` exists: the CUDA probe's child (`python -I
# -S` by path: it imports nothing of envcheck) and the workload (in the container or the target
# interpreter: Python 3.8, no envcheck). Their process's variables and stdio are their input
# and output; the parent hands them the command's variables (cuda_spawn, smoke/inprocess).
OWN_PROGRAMS = ("probe/_cuda_child.py", "smoke/workload/*.py")

PROCESS_ATTRIBUTES = {
    ("os", "environ"),
    ("os", "environb"),
    ("os", "getenv"),
    ("os", "getenvb"),
    ("os", "putenv"),
    ("os", "unsetenv"),
    ("sys", "stdin"),
    ("sys", "stdout"),
    ("sys", "stderr"),
    ("sys", "__stdin__"),
    ("sys", "__stdout__"),
    ("sys", "__stderr__"),
    ("path", "expanduser"),  # os.path.expanduser reads HOME
}
# calls that read the process's variables or write its stdout unless told otherwise
NEEDS_KEYWORD = {
    "print": "file",  # print() writes to sys.stdout
    "which": "path",  # shutil.which() searches the process's PATH
    "run": "env",  # subprocess.run/Popen/…: the child inherits the process's variables
    "Popen": "env",
    "call": "env",
    "check_call": "env",
    "check_output": "env",
}
SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}


def process_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) for each read of the process's variables or streams in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
            owner = ast.unparse(node.value).rpartition(".")[2]  # `os.path` -> `path`
            if (owner, node.attr) in PROCESS_ATTRIBUTES:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "sys", "os.path"):
            names = {a.name for a in node.names}
            banned = {attr for mod, attr in PROCESS_ATTRIBUTES if mod in node.module}
            found += [(node.lineno, f"from {node.module} import {n}") for n in names & banned]
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            called_on = (
                func.value.id
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                else None
            )
            if name in SUBPROCESS_CALLS and called_on != "subprocess":
                continue  # another object's run(): not subprocess's
            if name == "which" and called_on != "shutil":
                continue
            if name == "print" and not isinstance(func, ast.Name):
                continue  # a console's print(): it writes to its own file
            keyword = NEEDS_KEYWORD.get(name)
            if keyword and keyword not in {k.arg for k in node.keywords}:
                found.append((node.lineno, f"{name}() without {keyword}="))
    return sorted(found)


def checked_modules() -> list[Path]:
    own = {p for pattern in OWN_PROGRAMS for p in PACKAGE.glob(pattern)}
    edges = {PACKAGE / name for name in EDGES}
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p not in edges and p not in own]


def test_only_the_edge_reads_the_process_variables_and_streams() -> None:
    found = [
        f"envcheck/{path.relative_to(PACKAGE)}:{line}: {what}"
        for path in checked_modules()
        for line, what in process_reads(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "take it from the command's Environment (env.env, env.stderr):\n" + "\n".join(found)
    )


def test_the_edge_and_the_programs_of_their_own_exist() -> None:
    """A rename must not turn the exemptions into silent no-ops."""
    assert all(process_reads((PACKAGE / name).read_text()) != [] for name in EDGES)
    assert all(list(PACKAGE.glob(pattern)) for pattern in OWN_PROGRAMS)


@pytest.mark.parametrize(
    "line",
    [
        "import os\nx = os.environ.get('HOME')",
        "import os\nx = os.getenv('HOME')",
        "from os import environ",
        "import sys\nprint('x', file=sys.stderr)",
        "print('to the process stdout')",
        "import os\nos.path.expanduser('~')",
        "import shutil\nshutil.which('python3')",
        "import subprocess\nsubprocess.run(['true'], check=True)",
    ],
    ids=[
        "environ",
        "getenv",
        "from-os",
        "sys-stderr",
        "bare-print",
        "expanduser",
        "which",
        "inherit",
    ],
)
def test_the_walk_sees_each_kind_of_read(line: str) -> None:
    assert process_reads(line) != []


def test_the_walk_lets_the_injected_ones_pass() -> None:
    ok = (
        "print('x', file=env.stderr)\nshutil.which('p', path=env.env.get('PATH'))\n"
        "subprocess.run(['true'], env=dict(env.env))\nclient.run('x')\n"
    )
    assert process_reads(ok) == []


# -- in process: the injected environment reaches the report, the child and the streams ---------


def doctor_json(variables: dict[str, str]) -> dict[str, Any]:
    run = run_envcheck(["doctor", "--no-smoke", "--json"], env=variables)
    assert "Traceback" not in run.stderr, run.stderr
    doc: dict[str, Any] = json.loads(run.stdout)
    return doc


def test_an_injected_cuda_visible_devices_is_in_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report listed the process's GPU variables, not the command's."""
    for name in ("CUDA_VISIBLE_DEVICES", "FLAGS_selected_gpus"):
        monkeypatch.delenv(name, raising=False)  # the process has neither
    injected = {**ENV, "CUDA_VISIBLE_DEVICES": "", "FLAGS_selected_gpus": "1"}
    env = doctor_json(injected)["host"]["env"]
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["FLAGS_selected_gpus"] == "1"
