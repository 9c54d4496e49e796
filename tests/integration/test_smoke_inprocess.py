"""`--in-process`: the real workload in a subprocess of the host's Python (Paddle 3.3.1 CPU), and
the bad scripts that prove a crash, garbage, megabytes or a hang each end as a clean finding."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import EnvironmentProblem
from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.facts import from_dict, to_dict
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import exit_status_of, verdict_of
from envcheck.contracts.smoke_report import SmokeDocument
from envcheck.edges.signals import Interrupted, unwind_on_signals
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.runner.check import smoke_check
from envcheck.smoke.runner.inprocess import _run, run_subprocess
from tests.smoke_host import CPU_CHOICE, NO_GPU_HOST, SCRIPTS, pid_alive, processes_mentioning
from tests.smoke_samples import BAD_SCRIPT_IDS, BAD_SCRIPTS

pytest_plugins = ("tests.smoke_fixtures", "tests.fakenv")  # no_driver: hides a real driver

IN_PROCESS = SmokeOptions(in_process=True, timeout=180)


def check(**options: Any) -> tuple[dict[str, Any], list[Finding]]:
    """The report's smoke section as JSON, and the findings."""
    # the test process's variables, live: the fixtures' no_driver and smoke_script set them
    opts = SmokeOptions(
        **{"in_process": True, "timeout": 180.0, "variables": os.environ, **options}
    )
    doc, findings = smoke_check(NO_GPU_HOST, CPU_CHOICE, opts)
    return to_dict(doc), findings


def test_in_process_cpu_smoke_that_learns_is_a_pass(no_driver: Path) -> None:
    doc, findings = check()
    assert [f.id for f in findings] == ["smoke.pass"] and verdict_of(findings) == "pass"
    assert doc is not None and doc["mode"] == "in-process" and doc["python"] == sys.executable
    run = doc["runs"][0]
    assert run["device_used"] == "cpu" and run["loss_end"] < run["loss_start"]
    assert doc["nvml"]["status"] == "unavailable"  # no driver (no_driver): recorded, not fatal
    # a saved report of this schema reads its smoke back as it was written
    again = from_dict(SmokeDocument, doc, "smoke", numbers_as_text=False)
    assert json.dumps(to_dict(again)) == json.dumps(doc)


def test_in_process_with_expect_gpu_is_cpu_fallback_naming_the_cpu_build(no_driver: Path) -> None:
    doc, findings = check(expect_gpu=True)
    assert [f.id for f in findings] == ["smoke.cpu-fallback"]
    fallback = findings[0]
    # No driver on this host: the fix names the GPU build, after the driver, never the CPU wheel.
    assert fallback.observed["cause"] == "cpu-build" and "paddlepaddle-gpu" in (fallback.fix or "")
    assert "pip install paddlepaddle " not in (fallback.fix or "")
    assert (
        exit_status_of(findings) == ExitStatus.CPU_FALLBACK
        and doc
        and doc["status"] == "cpu-fallback"
    )


@pytest.mark.parametrize(
    ("script", "finding", "words"),
    BAD_SCRIPTS,
    ids=BAD_SCRIPT_IDS,
)
def test_bad_scripts_are_exit_5_with_a_clean_message(
    smoke_script: Callable[[str], Path], script: str, finding: str, words: str
) -> None:
    smoke_script(script)
    doc, findings = check()
    assert [f.id for f in findings] == [finding], findings
    assert words in findings[0].message
    assert (
        exit_status_of(findings) == ExitStatus.SMOKE_FAILED and doc and doc["status"] == finding[6:]
    )


def test_hanging_script_is_killed_at_the_timeout_with_its_children(
    smoke_script: Callable[[str], Path],
) -> None:
    smoke_script("hang.py")
    doc, findings = check(timeout=4.0)
    assert [f.id for f in findings] == ["smoke.timeout"]
    assert "waiting for a GPU that never answers" in findings[0].message  # the log tail
    said = re.search(r"child pid (\d+)", "\n".join(doc["log_tail"]) if doc else "")
    assert said, doc
    child = int(said.group(1))
    deadline = time.monotonic() + 5
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(child), "the hung script's child survived the kill"


def test_megabytes_are_not_kept_in_memory() -> None:
    raw = run_subprocess(sys.executable, SCRIPTS / "megabytes.py", [], 60, os.environ)
    assert raw.stdout_overflow and len(raw.stdout) == 256 * 1024 and raw.exit_code != 0


def test_missing_target_python_is_an_environment_problem() -> None:
    with pytest.raises(
        EnvironmentProblem, match="cannot start the target Python /nonexistent/python"
    ):
        check(python="/nonexistent/python")


@pytest.mark.parametrize(
    ("flags", "code", "verdict"),
    [((), 0, "pass"), (("--expect-gpu",), 6, "cpu-fallback")],
    ids=["cpu", "expect-gpu"],
)
def test_doctor_in_process(
    flags: tuple[str, ...], code: int, verdict: str, no_driver: Path
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--json", "--in-process", *flags],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(proc.stdout)
    assert (proc.returncode, report["verdict"]) == (code, verdict)
    assert report["smoke"]["mode"] == "in-process" and report["smoke"]["python"] == sys.executable


@pytest.mark.parametrize(
    ("stream", "script"),
    [("feed_stdout", "megabytes.py"), ("feed_stderr", "hang.py")],
    ids=["stdout", "stderr"],
)
def test_a_bug_while_reading_the_output_is_raised_at_once_not_a_smoke_verdict(
    monkeypatch: pytest.MonkeyPatch, stream: str, script: str
) -> None:
    """The reader once swallowed everything: envcheck's own bug became a truncated log,
    then a smoke failure (exit 5) blamed on the host. It must reach the CLI (exit 3), and at once:
    a child still writing (its pipe now undrained) or hung is not waited for until the
    smoke's timeout (an hour here); before, stdout's failure waited for it and stderr's was
    never seen."""
    from envcheck.smoke.parse import OutputCollector

    def broken(self: OutputCollector, chunk: bytes) -> None:
        raise KeyError("a bug in envcheck")

    monkeypatch.setattr(OutputCollector, stream, broken)
    started: list[int | None] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            run_subprocess(
                sys.executable, SCRIPTS / script, [], 3600, os.environ, on_start=started.append
            )
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            raised.append(e)

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(timeout=60)  # a bound on a hang, not a timing: the run ends without waiting
    try:
        assert not reader.is_alive(), "the run waited for the hung child after a reader's bug"
        assert len(raised) == 1 and isinstance(raised[0], KeyError), raised
    finally:
        if reader.is_alive() and started and started[0]:
            os.killpg(started[0], signal.SIGKILL)  # the child of the run that failed the test


class _FolderThatSignals(os.PathLike[str]):
    """A working folder whose path, read by Popen as it starts the child, sends this process
    SIGUSR1: the signal comes at the one moment envcheck.edges.signals defers it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __fspath__(self) -> str:
        os.kill(os.getpid(), signal.SIGUSR1)
        return str(self.path)


def test_a_signal_while_the_child_starts_takes_the_child_with_it(tmp_path: Path) -> None:
    """A signal deferred while Popen started the training child was raised as the deferring
    block ended, before the cleanup held the child: it trained on, orphaned, until its next
    write found no reader (tests/integration/test_signals.py caught it once the exit got faster)."""
    marker = f"envcheck-orphan-check-{tmp_path.name}"
    argv = [sys.executable, "-c", "import time; time.sleep(60)", marker]
    with pytest.raises(Interrupted), unwind_on_signals():
        _run(argv, _FolderThatSignals(tmp_path), 60.0, None, dict(os.environ))  # type: ignore[arg-type]
    assert processes_mentioning(marker) == []


def test_a_reaped_smoke_leaves_no_member_of_its_process_group_running() -> None:
    """The workload's own children (DataLoader workers) are in its group: after the reap none of
    them runs, and one that ended unreaped (a zombie of a parent not ours) is not counted."""
    from envcheck.smoke.runner import inprocess

    script = "import os, time\nif os.fork() == 0:\n    time.sleep(60)\nelse:\n    time.sleep(60)\n"
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        for _ in range(500):
            if inprocess._group_alive(proc.pid):
                break
        assert inprocess._group_alive(proc.pid)
    finally:
        inprocess._reap(proc)
    assert not inprocess._group_alive(proc.pid)
