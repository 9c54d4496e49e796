"""The CI gate's steps run as the GitHub runner runs them, on this machine: the composite action
and the reusable workflow, their `run:` scripts under bash with the files the runner gives
(`GITHUB_OUTPUT`, `GITHUB_ENV`, `GITHUB_STEP_SUMMARY`), `${{ … }}` resolved in `env:`, `if:`
and `with:` only, and the outputs read back with the runner's own rules (`key=value` or
`key<<DELIMITER`, a later line replacing an earlier one). What the runner would take as a
workflow command (a line that starts with `::` once leading blanks are gone) is collected.

Steps that `uses:` another action (checkout, upload-artifact) are not run: their resolved
`with:` is kept, so a test can see what the upload would have taken.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.paths import ROOT

ACTION = ROOT / ".github" / "actions" / "envcheck" / "action.yml"
GATE = ROOT / ".github" / "workflows" / "gpu-gate.yml"


def load(path: Path) -> Any:
    # PyYAML reads the key `on` as True (YAML 1.1); workflows are looked up by "on".
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict) and True in doc:
        doc["on"] = doc.pop(True)
    return doc


def steps_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in doc:
        return list(doc["runs"]["steps"])
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def input_specs(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc["inputs"] if "runs" in doc else doc["on"]["workflow_call"]["inputs"])


def read_outputs(text: str) -> dict[str, str]:
    """`$GITHUB_OUTPUT` as the runner reads it (actions/runner `FileCommandManager`): `k=v`, or
    `k<<DELIM` then lines up to one that is exactly DELIM; a later key replaces an earlier one.
    A line of neither form, or a delimiter never found, fails the step: ValueError."""
    outputs: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            key, value = line[:equals], line[equals + 1 :]
        elif heredoc >= 0:
            key, delimiter = line[:heredoc], line[heredoc + 2 :]
            body: list[str] = []
            for more in lines:
                if more == delimiter:
                    break
                body.append(more)
            else:
                raise ValueError(f"matching delimiter not found: {delimiter!r}")
            value = "\n".join(body)
        else:
            raise ValueError(f"invalid format: {line!r}")
        if not key:
            raise ValueError(f"no name in {line!r}")
        outputs[key] = value
    return outputs


def commands(log: str) -> list[str]:
    """The lines the runner would read as workflow commands (`::name …::data`)."""
    return [
        line.lstrip() for line in re.split(r"\r\n|\r|\n", log) if line.lstrip().startswith("::")
    ]


_OURS = re.compile(r"::(error|warning) title=[^:\r\n]*::")


def forged(log: str) -> list[str]:
    """Workflow commands in `log` that are not the gate's or envcheck's own annotations (an
    `::error title=…::` line whose data is escaped onto that one line)."""
    return [line for line in commands(log) if not _OURS.match(line)]


class GateRun:
    """What one simulated job did: each step's outcome, the outputs, the log, the uploads."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}  # step id or name -> success / failure / skipped
        self.exit_codes: dict[str, int] = {}
        self.outputs: dict[str, dict[str, str]] = {}
        self.log = ""
        self.uses: dict[str, dict[str, str]] = {}  # step id or name -> its resolved `with:`

    @property
    def failed(self) -> bool:
        return "failure" in self.outcomes.values()

    @property
    def job_exit(self) -> int:
        """The exit status of the step that failed the job (0 when none did)."""
        return next((self.exit_codes[k] for k, v in self.outcomes.items() if v == "failure"), 0)


def run_job(
    path: Path,
    inputs: Mapping[str, str],
    tmp: Path,
    *,
    env: Mapping[str, str] = {},
    outputs: Mapping[str, Mapping[str, str]] = {},  # outputs of steps not run
    skip: tuple[str, ...] = (),
) -> GateRun:
    """Run the steps of the action or workflow at `path` in order, as the runner would; `skip`
    names steps given as already done (with `outputs`), e.g. the install."""
    doc = load(path)
    specs = input_specs(doc)
    given = {name: _default(spec) for name, spec in specs.items()}
    unknown = set(inputs) - set(given)
    assert not unknown, f"no such input: {unknown}"
    given.update(inputs)
    run = GateRun()
    run.outputs.update({k: dict(v) for k, v in outputs.items()})
    temp = tmp / "runner-temp"
    temp.mkdir(exist_ok=True)
    context = {"inputs": given, "run": run, "action_path": str(path.parent), "temp": str(temp)}
    for index, step in enumerate(steps_of(doc)):
        key = step.get("id") or step.get("name") or str(index)
        if key in skip:
            run.outcomes[key] = "success"
            continue
        if not _condition(step.get("if", "success()"), context):
            run.outcomes[key] = "skipped"
            continue
        if "uses" in step:
            run.uses[key] = {k: _render(str(v), context) for k, v in step.get("with", {}).items()}
            run.outcomes[key] = "success"
            continue
        _run_step(key, step, context, tmp, env)
    return run


def _default(spec: Mapping[str, Any]) -> str:
    value = spec.get("default", "")
    return str(value).lower() if isinstance(value, bool) else str(value)


def _run_step(
    key: str, step: dict[str, Any], context: dict[str, Any], tmp: Path, env: Mapping[str, str]
) -> None:
    run: GateRun = context["run"]
    files = {name: tmp / f"{key}.{name.lower()}" for name in ("GITHUB_OUTPUT", "GITHUB_ENV")}
    files["GITHUB_STEP_SUMMARY"] = tmp / "step_summary.md"
    for name, file in files.items():
        if name != "GITHUB_STEP_SUMMARY" or not file.exists():
            file.write_text("", encoding="utf-8")
    step_env = {k: _render(str(v), context) for k, v in step.get("env", {}).items()}
    script = tmp / f"{key}.sh"
    script.write_text(step["run"], encoding="utf-8")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],  # shell: bash
        check=False,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(tmp),
            "RUNNER_TEMP": context["temp"],
            "RUNNER_NAME": "gpu runner #3",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(tmp),
            **{name: str(file) for name, file in files.items()},
            **env,
            **step_env,
        },
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    run.log += done.stdout + done.stderr
    run.exit_codes[key] = done.returncode
    outcome = "success" if done.returncode == 0 else "failure"
    try:
        run.outputs[key] = read_outputs(files["GITHUB_OUTPUT"].read_text(encoding="utf-8"))
    except ValueError as e:
        run.log += f"\n(runner) unable to process file command 'output': {e}\n"
        outcome = "failure"
    run.outcomes[key] = outcome


_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _render(text: str, context: dict[str, Any]) -> str:
    return _EXPR.sub(lambda m: _value(m.group(1), context), text)


def _value(expr: str, context: dict[str, Any]) -> str:
    run: GateRun = context["run"]
    if expr.startswith("inputs."):
        return str(context["inputs"][expr.removeprefix("inputs.")])
    if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
        return run.outputs.get(m.group(1), {}).get(m.group(2), "")
    if expr == "github.action_path":
        return str(context["action_path"])
    if expr == "runner.temp":
        return str(context["temp"])
    if expr in {"job.workflow_repository", "job.workflow_sha"}:
        return expr  # only the checkout, which is not run, reads these
    raise AssertionError(f"the simulated runner cannot evaluate ${{{{ {expr} }}}}")


def _condition(expr: str, context: dict[str, Any]) -> bool:
    """The `if:` forms the gate uses: `always()`, `success()`, `a == 'b'`, `a != 'b'`, `&&`."""
    run: GateRun = context["run"]
    expr = _EXPR.sub(lambda m: m.group(1), expr)
    terms = [t.strip() for t in expr.split("&&")]
    if not any(t in {"always()", "failure()"} for t in terms) and run.failed:
        return False
    for term in terms:
        if term in {"always()", "success()"}:
            continue
        m = re.fullmatch(r"([\w.-]+)\s*(==|!=)\s*'([^']*)'", term)
        if m is None:
            raise AssertionError(f"the simulated runner cannot evaluate if: {expr}")
        left = _value(m.group(1), context)
        if (left == m.group(3)) != (m.group(2) == "=="):
            return False
    return True
