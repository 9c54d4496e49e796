"""deploy/slurm/envcheck.sbatch on a real Slurm: sbatch, one doctor per node, the merged report.

The cluster is Debian's slurm-wlm, started by `scripts/dev setup`: slurmctld and three slurmd on
this machine, each slurmd in its own UTS namespace (its node's hostname) and mount namespace.
The node with the `no-shared-fs` feature cannot see the shared folder that holds envcheck's
venv, as a node whose shared filesystem failed to mount: its doctor cannot run at all, and the
merged report must name it. The doctors run with `--no-smoke` (a GPU-less machine: the smoke
would prove nothing more here) and judge the real CPU Paddle of this checkout's .venv.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from tests.paths import ROOT

SBATCH = ROOT / "deploy" / "slurm" / "envcheck.sbatch"
STATE = Path(os.environ.get("ENVCHECK_DEV_STATE", "/var/tmp/envcheck-dev"))
SLURM_DIR = STATE / "slurm"
SHARED_VENV = SLURM_DIR / "shared" / "envcheck-venv"  # hidden on the no-shared-fs node
JOB_TIMEOUT = 300  # seconds: a stuck cluster fails the test instead of hanging the suite

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def slurm_env() -> dict[str, str]:
    conf = SLURM_DIR / "slurm.conf"
    if not conf.is_file() or shutil.which("sbatch") is None:
        pytest.fail(f"no Slurm test cluster ({conf}, sbatch): run `bash scripts/dev setup` as root")
    return os.environ | {"SLURM_CONF": str(conf)}


def _slurm(env: dict[str, str], *argv: str) -> str:
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, check=True, timeout=30
    ).stdout


@pytest.fixture(scope="module")
def nodes(slurm_env: dict[str, str]) -> dict[str, str]:
    """node name → its feature (`shared-fs` or `no-shared-fs`), as slurmctld knows them."""
    lines = _slurm(slurm_env, "sinfo", "-h", "-N", "-o", "%N %f %T").split()
    found = {lines[i]: lines[i + 1] for i in range(0, len(lines), 3)}
    states = set(lines[2::3])
    assert states <= {"idle", "mixed", "allocated", "completing"}, f"nodes not usable: {lines}"
    assert sorted(found.values()).count("no-shared-fs") == 1 and len(found) >= 2, found
    return found


@pytest.fixture(scope="module")
def job(
    slurm_env: dict[str, str], nodes: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, str, Path]:
    """Submit the sbatch to every node and wait for it: (sbatch exit code, job id, job folder)."""
    work = tmp_path_factory.mktemp("slurm-job")
    env = slurm_env | {
        "ENVCHECK_VENV": str(SHARED_VENV),
        "PADDLE_PYTHON": sys.executable,
        "ENVCHECK_DOCTOR_FLAGS": "--no-smoke",
    }
    done = subprocess.run(
        ["sbatch", "--parsable", "--wait", f"--nodes={len(nodes)}", f"--chdir={work}", str(SBATCH)],
        env=env,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        check=False,
    )
    job_id = done.stdout.strip().split(";")[0]
    assert job_id.isdigit(), f"sbatch did not submit: {done.stdout!r} {done.stderr!r}"
    return done.returncode, job_id, work


def test_every_node_that_could_run_wrote_its_own_report(
    job: tuple[int, str, Path], nodes: dict[str, str]
) -> None:
    _, job_id, work = job
    reports = work / "envcheck-reports" / job_id
    for node, feature in nodes.items():
        if feature == "shared-fs":
            doc = json.loads((reports / f"{node}.json").read_text(encoding="utf-8"))
            # The doctor probed the node it ran on (its own hostname), not the submit host.
            assert doc["host"]["machine"]["hostname"] == node
            assert doc["exit_code"] >= 1  # --expect-gpu on a machine without a GPU
        else:
            assert not (reports / f"{node}.json").exists()
            assert "envcheck: command not found" in (reports / f"{node}.stderr").read_text(
                encoding="utf-8"
            )
    assert sorted((reports / "expected-hosts.txt").read_text(encoding="utf-8").split()) == sorted(
        nodes
    )


def _expected_exit(reports: Path, nodes: dict[str, str]) -> int:
    """The worst node's exit code, a node without a report counting as a failure (1)."""
    codes = [
        json.loads((reports / f"{n}.json").read_text(encoding="utf-8"))["exit_code"]
        if f == "shared-fs"
        else 1
        for n, f in nodes.items()
    ]
    return max(codes)


def test_the_recipe_asks_for_every_gpu_of_each_node() -> None:
    """`--gpus-per-node=1` proved one GPU of eight. Whole nodes, and a step that asks for
    all the GPUs Slurm gave the job on its node (a step gets no GPU it does not ask for)."""
    text = SBATCH.read_text(encoding="utf-8")
    directives = re.findall(r"^#SBATCH (\S+)", text, flags=re.MULTILINE)
    assert "--exclusive" in directives
    assert not [d for d in directives if d.startswith(("--gpus", "--gres"))], directives
    assert 'gpus="${ENVCHECK_GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-0}}"' in text
    assert 'srun --ntasks-per-node=1 --kill-on-bad-exit=0 "${step_gpus[@]}"' in text


def test_each_doctor_saw_every_gpu_of_its_node(
    job: tuple[int, str, Path], nodes: dict[str, str], slurm_env: dict[str, str]
) -> None:
    _, job_id, work = job
    for node, feature in nodes.items():
        if feature != "shared-fs":
            continue
        show = _slurm(slurm_env, "scontrol", "show", "node", node)
        have = int(re.search(r"Gres=gpu:(\d+)", show)[1])  # type: ignore[index]
        doc = json.loads((work / "envcheck-reports" / job_id / f"{node}.json").read_text())
        visible = doc["host"]["env"].get("CUDA_VISIBLE_DEVICES") or ""
        assert len(visible.split(",")) == have, (node, visible, have)


def test_the_job_exits_with_the_worst_nodes_code(
    job: tuple[int, str, Path], nodes: dict[str, str], slurm_env: dict[str, str]
) -> None:
    code, job_id, work = job
    expected = _expected_exit(work / "envcheck-reports" / job_id, nodes)
    assert code == expected  # sbatch --wait exits with the job's exit code
    show = _slurm(slurm_env, "scontrol", "show", "job", job_id)
    assert f"ExitCode={expected}:0" in show and "JobState=FAILED" in show


def test_the_merged_table_names_the_node_that_never_reported(
    job: tuple[int, str, Path], nodes: dict[str, str]
) -> None:
    code, job_id, work = job
    log = (work / f"envcheck-{job_id}.out").read_text(encoding="utf-8")
    broken = next(n for n, f in nodes.items() if f == "no-shared-fs")
    for node, feature in nodes.items():
        row = next(line for line in log.splitlines() if line.startswith(f"{node} "))
        if feature == "no-shared-fs":
            assert re.fullmatch(rf"{node} .* fail +1 +fleet\.not-reported", row), row
        else:
            assert "fleet.not-reported" not in row
    assert f"1 missing; exit {code}" in log
    assert f"envcheck: error: {broken}: expected, but no report from it" in log
    assert f"--- {broken}: no report; its stderr" in log and "envcheck: command not found" in log


def test_markdown_summary_and_junit_cover_every_node(
    job: tuple[int, str, Path], nodes: dict[str, str]
) -> None:
    code, job_id, work = job
    reports = work / "envcheck-reports" / job_id
    markdown = (reports / "summary.md").read_text(encoding="utf-8")
    assert markdown.startswith(f"## ❌ envcheck fleet: {len(nodes)} hosts")
    assert f"1 missing (exit {code})" in markdown.splitlines()[0]
    assert all(f"| {node} |" in markdown for node in nodes)
    xml = JUnitXml.fromfile(str(reports / "envcheck.junit.xml"))
    suites = {suite.hostname: suite for suite in xml}
    assert sorted(suites) == sorted(nodes)
    broken = next(n for n, f in nodes.items() if f == "no-shared-fs")
    assert [case.name for case in suites[broken]] == ["fleet.not-reported"]
    assert suites[broken].failures == 1
