"""`envcheck fix` end to end: real venvs, real pip, the real Paddle CPU wheel served by a PEP 503
index on 127.0.0.1 (tests/fix_env.py), the real in-process smoke as the verification, and the
C-level fake NVIDIA hosts (tests/fakenv) for the GPU plans."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from envcheck.fix.runner import journal
from envcheck.smoke.workload.protocol import CORRUPT_ENV
from tests import fakenv, fix_env
from tests.inprocess import ENV, envcheck_process, run_envcheck
from tests.paths import ROOT
from tests.subject_commands import uncarried

pytest_plugins = ("tests.fakenv",)

CPU_INDEX = "packages/stable/cpu"
SCHEMAS = ROOT / "schema"


def _validator() -> jsonschema.Draft202012Validator:
    """The published schema, its reference to the doctor's error document resolved locally."""
    docs = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.schema.json")}
    registry: Registry = Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc)) for doc in docs.values()
    )
    return jsonschema.Draft202012Validator(docs["fix-report.schema.json"], registry=registry)


VALIDATOR = _validator()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Paddle's index layout on 127.0.0.1, holding the real CPU wheel and its dependencies."""
    root = tmp_path_factory.mktemp("paddle-index")
    fix_env.build_index(root, CPU_INDEX, fix_env.wheels())
    with fix_env.serve(root) as url:
        yield url


@pytest.fixture
def variables(index: str, tmp_path: Path) -> dict[str, str]:
    """Each test's own state and pip cache: pips of concurrent runs never share a cache entry."""
    return ENV | {
        "ENVCHECK_PADDLE_INDEX": index,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "PIP_CACHE_DIR": str(tmp_path / "pip-cache"),
    }


def fix(variables: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    run = run_envcheck(["fix", "--json", "--quiet", *args], env=variables)
    assert "Traceback" not in run.stderr, run.stderr
    doc = json.loads(run.stdout)
    VALIDATOR.validate(doc)
    return run.returncode, doc


def argvs(doc: dict[str, Any]) -> list[list[str]]:
    return [s["argv"] for s in doc["plan"]["steps"]]


def test_a_venv_without_paddle_gets_the_pinned_cpu_build_and_a_passing_smoke(
    tmp_path: Path, variables: dict[str, str], index: str
) -> None:
    python = fix_env.make_venv(tmp_path / "venv")
    before = fix_env.freeze(python)
    code, doc = fix(variables, "--python", python, "--paddle", "3.3.1", "--no-pull")
    assert (code, doc["outcome"], doc["dry_run"]) == (0, "planned", True)
    assert argvs(doc) == [
        [
            python,
            "-m",
            "pip",
            "install",
            "paddlepaddle==3.3.1",
            "-i",
            f"{index}/{CPU_INDEX}/",
        ]
    ]
    assert doc["plan"]["steps"][0]["why"] == "paddle.missing" and doc["plan"]["expect"] == "cpu"
    assert fix_env.freeze(python) == before  # a dry run changes nothing

    code, doc = fix(variables, "--python", python, "--paddle", "3.3.1", "--no-pull", "--yes")
    assert (code, doc["outcome"]) == (0, "fixed"), doc
    assert doc["verification"]["proof"] == "cpu-trained" and doc["verification"]["exit_code"] == 0
    assert "paddlepaddle==3.3.1" in fix_env.freeze(python).splitlines()
    assert Path(doc["record"]["freeze"]).read_text() == before

    code, doc = fix(variables, "--python", python, "--paddle", "3.3.1", "--no-pull")
    assert (code, doc["outcome"], doc["plan"]["steps"]) == (0, "nothing-to-fix", [])


def test_a_failing_verification_restores_the_exact_freeze(
    tmp_path: Path, variables: dict[str, str]
) -> None:
    python = fix_env.make_venv(tmp_path / "venv")
    before = fix_env.freeze(python)
    # the verification smoke's matmul reads zeros: Paddle "computes" wrong results (the
    # command's variables reach the smoke's child)
    corrupt = {**variables, CORRUPT_ENV: "matmul:zero"}
    code, doc = fix(corrupt, "--python", python, "--paddle", "3.3.1", "--no-pull", "--yes")
    assert code == 7 and doc["outcome"] == "rolled-back", {
        k: doc.get(k) for k in ("error", "failed", "applied", "verification")
    }
    assert doc["verification"]["verdict"] == "wrong-results"
    assert doc["rollback"]["freeze_matches"] is True
    assert fix_env.freeze(python) == before  # byte for byte
    assert [f["id"] for f in doc["after_rollback"]["findings"]] == ["paddle.missing"]
    assert doc["failed"] == (  # the finding is the verification's, not said twice
        f"the verification smoke in {python}: verdict wrong-results, proof none"
        " (expected cpu-trained)"
    )


def test_both_builds_installed_the_wrong_one_goes_first(
    tmp_path: Path, variables: dict[str, str], index: str
) -> None:
    python = fix_env.make_venv(tmp_path / "venv")
    paddle = next(w for w in fix_env.wheels() if w.name.startswith("paddlepaddle-"))
    gpu_stub = fix_env.stub_wheel(tmp_path / "stub", "paddlepaddle-gpu", "3.3.1")
    fix_env.pip(python, "install", "--no-deps", str(paddle), str(gpu_stub))
    code, doc = fix(variables, "--python", python, "--paddle", "3.3.1", "--no-pull")
    pip = [python, "-m", "pip"]
    assert argvs(doc) == [
        [*pip, "uninstall", "-y", "paddlepaddle-gpu"],
        [*pip, "uninstall", "-y", "paddlepaddle"],
        [*pip, "install", "paddlepaddle==3.3.1", "-i", f"{index}/{CPU_INDEX}/"],
    ]
    assert {s["why"] for s in doc["plan"]["steps"]} == {"paddle.both-installed"}
    assert code == doc["doctor"]["exit_code"] == 1  # a dry run: the doctor's verdict of now


def test_a_pep668_interpreter_is_refused_with_the_override_named(
    tmp_path: Path, variables: dict[str, str]
) -> None:
    """A copy of this Python's base installation (not a venv) with the distributor's marker."""
    python = _system_like_python(tmp_path / "sys")
    code, doc = fix(variables, "--python", python, "--paddle", "3.3.1", "--no-pull", "--yes")
    assert code == 2 and "--break-system-packages" in doc["error"]["hint"]
    assert "PEP 668" in doc["error"]["message"]
    _, doc = fix(
        variables, "--python", python, "--paddle", "3.3.1", "--no-pull", "--break-system-packages"
    )
    assert all("--break-system-packages" in a for a in argvs(doc))  # pip's flag, on every pip step


def _system_like_python(prefix: Path) -> str:
    stdlib = Path(sysconfig.get_path("stdlib"))
    lib = prefix / "lib" / stdlib.name
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        (lib / entry.name).symlink_to(entry)
    (lib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=use apt\n")
    (prefix / "bin").mkdir()
    binary = prefix / "bin" / "python3"
    shutil.copy2(os.path.realpath(getattr(sys, "_base_executable", sys.executable)), binary)
    return str(binary)


def test_two_fixes_of_one_target_cannot_interleave(
    tmp_path: Path, variables: dict[str, str]
) -> None:
    python = fix_env.make_venv(tmp_path / "venv")
    before = fix_env.freeze(python)
    prefix = str(tmp_path / "venv")
    with journal.held(journal.ensure_home(prefix), prefix):
        code, doc = fix(variables, "--python", python, "--paddle", "3.3.1", "--no-pull", "--yes")
    assert code == 4 and "another `envcheck fix`" in doc["error"]["message"]
    assert fix_env.freeze(python) == before


def test_bad_flags_are_usage_errors() -> None:
    run = run_envcheck(["fix", "--paddle-index", "not a url"], env=ENV)
    assert run.returncode == 2 and "--paddle-index" in run.stderr
    run = run_envcheck(["fix", "--smoke-timeout", "-1"], env=ENV)
    assert run.returncode == 2 and "--smoke-timeout" in run.stderr
    run = run_envcheck(["fix", "--yes", "--dry-run"], env=ENV)
    assert run.returncode == 2 and "not allowed with" in run.stderr


# -- GPU hosts: fake drivers (a process of their own) -----------------------------------------


@pytest.fixture
def gpu_host(fake_nvidia: Callable[[str], dict[str, str]], variables: dict[str, str]) -> Any:
    def make(profile: str) -> dict[str, str]:
        fake = fake_nvidia(profile)
        return variables | fake | {"PYTHONPATH": fake["FAKE_NVIDIA_SITE_PACKAGES"]}

    return make


def fix_process(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    run = envcheck_process("fix", "--json", "--quiet", *args, env=env, timeout=600)
    assert "Traceback" not in run.stderr, run.stderr
    doc = json.loads(run.stdout)
    VALIDATOR.validate(doc)
    return run.returncode, doc


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("profile", "paddle", "cuda"),
    [
        ("a100x2-535", "3.3.1", "129"),  # CUDA 12.2 driver: 12.9 through minor-version compat
        ("h100-580", "3.3.1", "130"),
        ("t4-470", "3.2.2", "118"),  # CUDA 11.4 driver: no 3.3.1 build runs, 3.2.2's cu118 does
    ],
)
def test_a_gpu_host_gets_the_gpu_build_of_its_driver_from_its_index(
    gpu_host: Any, index: str, profile: str, paddle: str, cuda: str
) -> None:
    """This venv's Paddle is the CPU build: on a GPU host it goes, the GPU build of the CUDA the
    driver runs comes from that CUDA's index."""
    code, doc = fix_process(gpu_host(profile))
    python = os.path.abspath(sys.executable)
    assert argvs(doc)[:2] == [
        [python, "-m", "pip", "uninstall", "-y", "paddlepaddle"],
        [
            python,
            "-m",
            "pip",
            "install",
            f"paddlepaddle-gpu=={paddle}",
            "-i",
            f"{index}/packages/stable/cu{cuda}/",
        ],
    ]
    assert doc["plan"]["steps"][0]["why"] == "paddle.cpu-build"
    assert doc["plan"]["expect"] == "gpu" and code == doc["doctor"]["exit_code"]


@pytest.mark.fakegpu
@pytest.mark.docker
def test_a_gpu_image_the_engine_cannot_give_a_gpu_is_not_pulled(gpu_host: Any) -> None:
    """This engine lacks the GPU image and has no NVIDIA runtime: a pull could never pass its
    smoke (and its failure would roll back the interpreter's good fix), so it is not planned;
    the report says why, and the toolkit is a manual step."""
    _, doc = fix_process(gpu_host("a100x2-535"))
    image = doc["plan"]["image"]
    assert image["ref"].endswith("-gpu-cuda12.9-cudnn9.9") and image["present"] is False
    assert "not pulled: this engine cannot give a container a GPU" in image["why"]
    kinds = {s["why"]: s["kind"] for s in doc["plan"]["steps"]}
    assert "pull" not in kinds.values() and kinds["engine.no-nvidia-runtime"] == "manual"


@pytest.mark.fakegpu
def test_a_driver_that_needs_a_reboot_is_a_manual_step_and_the_gpu_plan_stands(
    gpu_host: Any,
) -> None:
    """The pending reboot is a manual step, never run. The GPU it hides is still there (counted
    on the PCI bus), so this venv's CPU build is replaced by the GPU build, as on any GPU
    host: after the reboot the user does not find the wrong wheel."""
    code, doc = fix_process(gpu_host("rm-mismatch"))
    steps = doc["plan"]["steps"]
    manual = [s for s in steps if s["kind"] == "manual"]
    assert len(manual) == 1 and manual[0]["argv"] == [] and "reboot" in manual[0]["changes"]
    assert manual[0]["why"] == "driver.version-mismatch"
    installs = [s["argv"] for s in steps if s["kind"] == "install"]
    assert len(installs) == 1 and "paddlepaddle-gpu==3.3.1" in installs[0]
    assert code == 1 == doc["doctor"]["exit_code"] and doc["outcome"] == "planned"


@pytest.mark.fakegpu
def test_a_gpu_build_the_index_lacks_is_refused_before_anything_changes(
    gpu_host: Any, tmp_path: Path, index: str
) -> None:
    """Applied on a fake A100 against the local index, which holds no GPU build: the build is
    looked for before the first change (it used to be after the uninstalls), the index that
    lacks it is named, nothing changed, the exit says the environment (4)."""
    python = fix_env.make_venv(tmp_path / "venv")
    before = fix_env.freeze(python)
    code, doc = fix_process(gpu_host("a100x2-535"), "--python", python, "--yes")
    assert (
        code == 4 and f"the package index {index}/packages/stable/cu129/" in doc["error"]["message"]
    ), doc
    assert "nothing was changed" in doc["error"]["message"]
    assert fix_env.freeze(python) == before


def _fix_process(variables: dict[str, str], python: str) -> subprocess.Popen[str]:
    """`fix --yes` in a process of its own."""
    argv = ["fix", "--python", python, "--paddle", "3.3.1", "--no-pull", "--yes"]
    return subprocess.Popen(
        [sys.executable, "-m", "envcheck", *argv],
        env=variables,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _fix_until(
    variables: dict[str, str], python: str, start: str, words: str
) -> tuple[int | None, str]:
    """`fix --yes` in a process of its own, sent SIGTERM at the first stderr line that starts
    with `start` and holds `words`: (its exit status, all it said on stderr)."""
    proc = _fix_process(variables, python)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith(start) and words in line:
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.communicate(timeout=600)[1]
    return proc.returncode, "".join(seen) + (rest or "")


def _installing(venv: Path) -> bool:
    """The fix's install step runs: its record's log holds the step's command and pip's first
    line after it (pip's output goes there, not to the terminal)."""
    for log in (journal.home(str(venv)) / "records").glob("*/pip.log"):
        _, step, after = log.read_text().partition(" -m pip install --no-index ")
        if step and after.count("\n") >= 2:
            return True
    return False


def test_sigterm_while_pip_installs_waits_for_it_then_rolls_back(
    tmp_path: Path, variables: dict[str, str]
) -> None:
    """A signal never cuts pip half-way: the running step ends, then the recorded freeze comes
    back and the run says so, with the interrupted exit status (130)."""
    python = fix_env.make_venv(tmp_path / "venv")
    before = fix_env.freeze(python)
    proc = _fix_process(variables, python)
    for _ in range(6000):  # a wait for the step to start, bounded; never a measure of speed
        if _installing(tmp_path / "venv") or proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    said = proc.communicate(timeout=600)[1]
    assert proc.returncode == 130, said
    assert "rolled back, the environment is as it was" in said
    assert fix_env.freeze(python) == before


def test_sigterm_during_the_verification_leaves_the_plan_applied_and_says_so(
    tmp_path: Path, variables: dict[str, str]
) -> None:
    python = fix_env.make_venv(tmp_path / "venv")
    code, said = _fix_until(variables, python, "envcheck fix: verifying", "smoke training")
    assert code == 130, said
    assert "the environment is as planned (every step applied), not verified" in said, said
    assert "paddlepaddle==3.3.1" in fix_env.freeze(python).splitlines()


@pytest.mark.fakegpu
def test_on_every_fake_host_only_the_target_runs_and_never_sudo(gpu_host: Any) -> None:
    """Whatever a host needs, a step run by `fix` is the target's pip (or envcheck's own pull);
    root's work (driver, module, docker group, toolkit) is a manual step with no argv."""
    python = os.path.abspath(sys.executable)
    for profile in fakenv.profile_names():
        _, doc = fix_process(gpu_host(profile))
        for step in doc["plan"]["steps"]:
            argv = step["argv"]
            assert "sudo" not in argv, (profile, step)
            if step["kind"] == "manual":
                assert argv == [], (profile, step)
            elif step["kind"] == "pull":
                assert argv[1:4] == ["-m", "envcheck", "pull-image"], (profile, step)
            else:
                assert argv[:3] == [python, "-m", "pip"], (profile, step)


@pytest.mark.fakegpu
@pytest.mark.parametrize("profile", fakenv.profile_names())
def test_on_every_fake_host_the_plan_installs_what_the_doctor_advises(
    gpu_host: Any, index: str, profile: str
) -> None:
    """The doctor's printed fixes and the plan quote one derivation (the matrix row of the image
    the doctor chose), here with a mirror (the local index): the same package==version and URL."""
    _, doc = fix_process(gpu_host(profile))
    said = fix_env.advised(f["fix"] for f in doc["doctor"]["findings"])
    assert said == fix_env.planned(doc["plan"]["steps"]), profile
    wheel = doc["plan"]["wheel"]
    if wheel is not None:
        where = wheel["index"] or wheel["find_links"]
        assert said == {(wheel["requirement"], where)} and where.startswith(index), profile


# -- the container: the doctor's image, pulled where the engine lacks it ----------------------


@pytest.fixture
def lacked_image(docker_client: Any, registry: Any) -> Iterator[str]:
    """The local registry's Paddle CPU image under a name this engine has never held: pushed,
    then untagged here (only the name goes: the shared image stays for other tests)."""
    from tests.conftest import PADDLE_CPU

    ref = registry.ref(f"envcheck-test/fix-pull-{uuid.uuid4().hex[:10]}:3.3.1")
    docker_client.images.get(registry.ref(PADDLE_CPU)).tag(ref)
    docker_client.images.push(ref)
    docker_client.images.remove(ref)
    yield ref
    if any(ref in i.tags for i in docker_client.images.list()):
        docker_client.images.remove(ref)  # the name only, never by id


@pytest.mark.docker
def test_the_image_the_engine_lacks_is_pulled_and_verified_by_a_smoke_in_it(
    docker_client: Any, lacked_image: str, variables: dict[str, str]
) -> None:
    """The engine is asked (not the name guessed): it lacks the image, so the plan pulls it with
    pull-image; --yes pulls it and the verification smoke trains in it. The interpreter (already
    right) is neither locked nor recorded."""
    from envcheck.pull.images import present

    python = os.path.abspath(sys.executable)
    code, doc = fix(variables, "--python", python, "--image", lacked_image)
    assert doc["plan"]["image"] == {
        "ref": lacked_image,
        "present": False,
        "why": "the engine does not hold it",
    }
    (step,) = doc["plan"]["steps"]
    assert step["kind"] == "pull" and step["argv"][1:4] == ["-m", "envcheck", "pull-image"]
    assert step["argv"][-2:] == ["--image", lacked_image] and doc["outcome"] == "planned"
    assert present(docker_client, lacked_image) is None  # a dry run pulls nothing

    code, doc = fix(variables, "--python", python, "--image", lacked_image, "--yes")
    assert (code, doc["outcome"]) == (0, "fixed"), doc
    assert present(docker_client, lacked_image) is not None
    assert [(v["ran_in"], v["proof"]) for v in doc["verifications"]] == [
        (lacked_image, "cpu-trained")
    ]
    assert "record" not in doc  # pip changed nothing: the interpreter was left alone

    code, doc = fix(variables, "--python", python, "--image", lacked_image)
    assert (code, doc["outcome"], doc["plan"]["image"]["present"]) == (0, "nothing-to-fix", True)


def test_with_no_engine_the_pull_is_not_planned_and_the_report_says_why(
    variables: dict[str, str], tmp_path: Path
) -> None:
    python = os.path.abspath(sys.executable)
    dead = variables | {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    image = "127.0.0.1:5000/envcheck-test/paddle-cpu:3.3.1"
    _, doc = fix(dead, "--python", python, "--image", image)
    assert [s for s in doc["plan"]["steps"] if s["kind"] == "pull"] == []
    said = doc["plan"]["image"]
    assert (said["ref"], said["present"]) == (image, None)
    assert said["why"].startswith("not planned: no Docker engine answered at unix://")
    text = run_envcheck(["fix", "--python", python, "--image", image], env=dead).stdout
    assert f"image: {image}: unknown (not planned: no Docker engine answered" in text


def test_no_pull_leaves_the_container_alone(variables: dict[str, str]) -> None:
    python = os.path.abspath(sys.executable)
    run = run_envcheck(["fix", "--python", python, "--no-pull", "--json"], env=variables)
    doc = json.loads(run.stdout)
    assert doc["plan"]["image"]["present"] is None and doc["plan"]["image"]["why"].endswith(
        "--no-pull"
    )
    assert [s for s in doc["plan"]["steps"] if s["kind"] == "pull"] == []


def test_pull_is_no_flag_of_fix_the_pull_is_planned_without_asking() -> None:
    """`fix --pull` once asked for the pull; since the plan pulls whenever the engine lacks the
    image it did nothing, and no release ever had it: an unknown flag like any other."""
    run = run_envcheck(["fix", "--pull"])
    assert run.returncode == 2 and run.stdout == ""
    assert (
        "unknown flag '--pull' for `envcheck fix`\n" in run.stderr and "Traceback" not in run.stderr
    )


# -- what only a person can do -----------------------------------------------------------------


@pytest.mark.fakegpu
@pytest.mark.docker  # the toolkit's step is planned where an engine answers without it
def test_a_driver_too_old_for_every_build_leaves_only_manual_steps(gpu_host: Any) -> None:
    """A T4 on driver 470 (CUDA 11.4, tests/fakenv/profiles/t4-470.toml) asked for Paddle 3.3.1:
    no build of it runs there, so nothing is installed or pulled. What is left is a person's, in
    the order to do it: the driver upgrade (root, a reboot) first, the NVIDIA Container Toolkit,
    and last "then run the doctor again" for the GPU build that will fit. The plan-only outcome
    is exit 1, in JSON (schema-valid) and in text."""
    env = gpu_host("t4-470")
    code, doc = fix_process(env, "--paddle", "3.3.1")
    steps = doc["plan"]["steps"]
    assert (code, doc["outcome"], doc["exit_code"]) == (1, "manual-only", 1), doc
    assert [(s["kind"], s["why"], s["argv"]) for s in steps] == [
        ("manual", "image.none", []),  # the cu118 wheel runs on 470, no image does
        ("manual", "engine.no-nvidia-runtime", []),
        ("manual", "paddle.cpu-build", []),
    ]
    assert "upgrade the NVIDIA driver to >= 525.60.13" in steps[0]["changes"]
    assert "nvidia-ctk runtime configure" in steps[1]["changes"]
    assert f"then `envcheck fix --python {sys.executable} --yes`" in steps[2]["changes"]
    assert (doc["plan"]["wheel"], doc["plan"]["expect"], doc["plan"]["image"]) == (None, None, None)

    run = envcheck_process("fix", "--paddle", "3.3.1", env=env, timeout=600)
    lines = run.stdout.splitlines()
    start = lines.index("manual steps (need root or a reboot; never run by envcheck), in order:")
    headers = [line for line in lines[start + 1 :] if line[:3].strip().rstrip(".").isdigit()]
    assert headers == [f"  {n}. [{s['why']}]" for n, s in enumerate(steps, 1)]
    assert "     $ sudo nvidia-ctk runtime configure --runtime=docker" in lines
    assert "plan (in order):" not in lines and run.returncode == 1
    assert (
        lines[-1] == "result: only a person can fix what is left: the manual steps above (exit 1)"
    )


@pytest.mark.docker
def test_the_engine_is_asked_for_the_image_by_its_name(docker_client: Any, registry: Any) -> None:
    """One GET to the engine, the answer the docker SDK's inspect gives: the id, or None."""
    from envcheck.probe.endpoint import resolve_endpoint
    from envcheck.probe.engine import _sdk_image_id, probe_image
    from tests.conftest import PADDLE_CPU

    ref = registry.ref(PADDLE_CPU)
    endpoint = resolve_endpoint(ENV)
    assert probe_image(ref, endpoint) == docker_client.api.inspect_image(ref)["Id"]
    assert probe_image(registry.ref("envcheck-test/never-pushed:1"), endpoint) is None
    # the SDK's transport (TLS, ssh:// engines) gives the same answers, without docker_adapter
    assert _sdk_image_id(ref, endpoint, 5) == probe_image(ref, endpoint)
    assert _sdk_image_id(registry.ref("envcheck-test/never-pushed:1"), endpoint, 5) is None


def test_with_a_venv_activated_the_fix_plans_into_it_and_names_it(
    tmp_path: Path, variables: dict[str, str], index: str
) -> None:
    """`(train)` active, envcheck installed elsewhere: the fix planned an install into
    envcheck's own venv. It plans into the activated one, says why, and every envcheck command
    it prints names it."""
    python = fix_env.make_venv(tmp_path / "train")
    active = {k: v for k, v in variables.items() if k != "CONDA_PREFIX"}
    active["VIRTUAL_ENV"] = str(tmp_path / "train")
    code, doc = fix(active, "--paddle", "3.3.1", "--no-pull")
    assert (code, doc["outcome"], doc["plan"]["python"]) == (0, "planned", python), doc
    assert argvs(doc)[0][:4] == [python, "-m", "pip", "install"]
    text = run_envcheck(["fix", "--paddle", "3.3.1", "--no-pull"], env=active).stdout
    assert uncarried(text, python) == [], text
