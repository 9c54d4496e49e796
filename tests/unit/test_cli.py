"""The CLI as users and CI call it: its stdout, stderr and exit code. In this process
(tests/inprocess.py) unless the test is about the process: the entry point of each command. On
the fake no-driver host, which only a fresh process can load: test_doctor_fakegpu.py
(tests/integration)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import sys
from pathlib import Path

import pytest

from envcheck.cli import _commands_for, build_parser, main
from envcheck.contracts.command_env import Environment
from envcheck.contracts.errors import UsageError
from tests import report_samples as samples
from tests import scenarios as s
from tests.inprocess import ENV, Result, envcheck, envcheck_process, run_envcheck
from tests.scenarios import write


def test_version_and_module_entry_point() -> None:
    from envcheck import __version__

    r = envcheck_process("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"envcheck {__version__} (paddle-envcheck)"


def test_help_documents_every_exit_code() -> None:
    r = envcheck("doctor", "--help")
    assert r.returncode == 0
    for code in range(7):
        assert f"\n  {code}  " in r.stdout


def test_json_contract_for_a_saved_failing_host(tmp_path: Path) -> None:
    facts = write(
        tmp_path,
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU),
    )
    r = envcheck("doctor", "--facts", facts, "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)  # stdout is exactly one JSON document
    assert doc["schema_version"] == 3 and doc["verdict"] == "fail" and doc["smoke"] is None
    assert (
        doc["host"]["driver"].items()
        >= {"status": "ok", "version": "535.104.05", "cuda": "12.2"}.items()
    )
    assert doc["host"]["gpus"][0]["compute_capability"] == "8.0"
    assert doc["host"]["paddle"]["package"] == "paddlepaddle"
    ids = {f["id"]: f for f in doc["findings"]}
    assert (
        ids["paddle.cpu-build"]["severity"] == "fail"
        and "paddlepaddle-gpu" in ids["paddle.cpu-build"]["fix"]
    )
    assert set(ids["paddle.cpu-build"]) >= {"id", "severity", "message", "fix"}
    assert doc["image"]["ref"].startswith("docker.io/paddlepaddle/paddle:3.3.1-gpu-cuda12")


def test_a_whole_saved_report_is_accepted_as_facts(tmp_path: Path) -> None:
    first = envcheck(
        "doctor",
        "--facts",
        write(tmp_path, s.host(driver={"status": "absent"}, paddle=s.PADDLE_331_CPU)),
        "--json",
    )
    again = envcheck("doctor", "--facts", write(tmp_path, first.stdout, "report.json"), "--json")
    assert again.returncode == first.returncode == 0
    assert json.loads(again.stdout)["host"] == json.loads(first.stdout)["host"]


def test_facts_from_stdin_with_unknown_keys_ignored() -> None:
    doc = s.host(
        driver={"status": "absent", "future_field": 1}, paddle=s.PADDLE_331_CPU, new_layer={}
    )
    r = envcheck("doctor", "--facts", "-", "--json", stdin=json.dumps(doc))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "pass"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"driver": {"version": []}}', "host.driver.version"),
        ('{"gpus": [{"index": "zero"}]}', "host.gpus[0].index"),
        ("[1, 2]", "expected an object"),
    ],
    ids=["garbled", "wrong-type", "wrong-nested-type", "not-an-object"],
)
def test_bad_facts_file_is_one_screen_exit_2(tmp_path: Path, content: str, message: str) -> None:
    r = envcheck("doctor", "--facts", write(tmp_path, content), "--json")
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
    assert json.loads(r.stdout)["error"]["exit"] == 2  # --json: the error document, nothing else
    assert len(r.stderr.splitlines()) <= 5


def test_missing_facts_file(tmp_path: Path) -> None:
    r = envcheck("doctor", "--facts", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "cannot read facts file" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--gpus", "a,b"],
        ["doctor", "--registry", "quay"],
        ["doctor", "--smoke-timeout", "-3"],
        ["doctor", "--bogus"],
        ["doctor", "--paddle", "9.9.9", "--no-smoke"],
    ],
    ids=["gpus", "registry", "timeout", "unknown-flag", "unknown-release"],
)
def test_bad_flags_exit_2_without_traceback(args: list[str]) -> None:
    r = envcheck(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--no-smoke", "--json"],
        ["doctor", "--bogus"],
        ["pull-image", "--dry-run", "--paddle", "3.3.1"],
        ["pull_image"],
        ["fix", "--help"],
        ["report", "a.json"],
        ["completion", "zsh"],
        ["--json", "doctor"],
        ["--help"],
        [],
    ],
    ids=lambda argv: " ".join(argv) or "nothing",
)
def test_the_parser_of_one_command_reads_argv_as_the_whole_one(argv: list[str]) -> None:
    """`main` builds only the subcommand argv names; what it prints, parses or refuses is
    what the parser of every subcommand does."""

    def parse(parser: argparse.ArgumentParser) -> tuple[str, str]:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                args = parser.parse_args(argv)
        except (SystemExit, UsageError) as e:
            return out.getvalue(), f"{type(e).__name__}: {e}"
        return out.getvalue(), repr(sorted(vars(args).items()))

    assert parse(build_parser(_commands_for(argv))) == parse(build_parser())


def test_broken_matrix_override_lists_every_problem(tmp_path: Path) -> None:
    (tmp_path / "gpus.toml").write_text('[[gpu]]\nnames = ["X"]\ncompute_capability = "eight"\n')
    r = envcheck("doctor", "--no-smoke", "--matrix", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "gpus.toml" in r.stderr and "compute_capability" in r.stderr


def test_env_override_of_the_matrix(tmp_path: Path) -> None:
    r = envcheck("doctor", "--no-smoke", env=ENV | {"ENVCHECK_MATRIX": str(tmp_path / "missing")})
    assert r.returncode == 2 and "matrix" in r.stderr


def test_plain_text_report_when_not_a_tty(tmp_path: Path) -> None:
    facts = write(
        tmp_path,
        s.host(
            driver={"status": "error", "error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH"},
            paddle=s.PADDLE_331_CU126,
        ),
    )
    r = envcheck("doctor", "--facts", facts, "--explain")
    assert r.returncode == 1
    assert "\x1b[" not in r.stdout  # no colour codes in a pipe
    assert "FAIL  driver.version-mismatch" in r.stdout and "fix: reboot" in r.stdout
    assert "Verdict: FAIL (exit 1)" in r.stdout


def test_report_and_pull_image_through_the_entry_point(tmp_path: Path) -> None:
    """One run of each other command as a process: `python -m envcheck` dispatches them."""
    saved = write(tmp_path, samples.healthy().to_json(), "host.json")
    r = envcheck_process("report", "--json", saved)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hosts"][0]["source"] == saved
    r = envcheck_process("pull-image", "--dry-run", "--json", "--image", "busybox:1.36")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["reference"] == "docker.io/library/busybox:1.36"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_in_process_run_reads_its_environment_not_the_process(tmp_path: Path) -> None:
    """The folder, the variables and the terminal are the Environment's: a relative --facts is
    found under its cwd, NO_COLOR and GITHUB_ACTIONS are its own (this process has neither)."""
    assert "GITHUB_ACTIONS" not in ENV and Path.cwd() != tmp_path
    failing = s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_331_CPU)
    write(tmp_path, failing)
    summary = tmp_path / "summary.md"
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}

    def doctor(env: dict[str, str]) -> tuple[int, str, str]:
        out, err = _Terminal(), io.StringIO()
        where = Environment(io.StringIO(), out, err, env, tmp_path)
        code = main(["doctor", "--facts", "facts.json"], where)
        return code, out.getvalue(), err.getvalue()

    code, out, err = doctor(ENV | github)
    assert code == 1 and "\x1b[" in out  # a terminal: colour
    assert "::error title=envcheck" in err and "envcheck" in summary.read_text()
    code, out, err = doctor(ENV | {"NO_COLOR": "1"})
    assert code == 1 and "\x1b[" not in out and "Verdict: FAIL" in out
    assert "::error" not in err


def test_an_in_process_run_leaves_the_process_as_it_found_it(tmp_path: Path) -> None:
    """No stream swapped, no signal handler left behind: in-process tests do not leak."""
    before = (sys.stdin, sys.stdout, sys.stderr, signal.getsignal(signal.SIGTERM))
    for argv in (["--help"], ["--version"], ["doctor", "--bogus"], ["report", str(tmp_path)]):
        run_envcheck(argv)
    r = run_envcheck(["doctor", "--help"])
    assert r.returncode == 0 and "--facts" in r.stdout  # argparse's own printing, captured
    assert (sys.stdin, sys.stdout, sys.stderr, signal.getsignal(signal.SIGTERM)) == before


# -- errors that help: one line, what was wrong and what to do, before any probe --------------------
def _said(run: Result) -> tuple[str, list[str]]:
    """(the error, the other lines) of a refused command line: nothing but those on stderr."""
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and lines[0].startswith("envcheck: error: "), run.stderr
    return lines[0].removeprefix("envcheck: error: "), lines[1:]


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["doctor", "--expct-gpu"], "--expect-gpu"),
        (["doctor", "--smoke-timout=30"], "--smoke-timeout"),
        (["report", "--markdwn", "x.md", "r.json"], "--markdown"),
        (["fix", "--yse"], "--yes"),
    ],
    ids=["doctor", "with-a-value", "report", "fix"],
)
def test_a_mistyped_flag_gets_did_you_mean(argv: list[str], meant: str) -> None:
    """Before: `unrecognized arguments: --expct-gpu` and the top command's usage."""
    error, rest = _said(run_envcheck(argv))
    command = f"envcheck {argv[0]}"
    typed = argv[1].split("=")[0]
    assert error.startswith(f"unknown flag {typed!r} ")
    assert error.endswith(f"for `{command}`: did you mean `{meant}`?"), error
    assert rest == [f"envcheck: hint: see `{command} --help`"]


@pytest.mark.parametrize(
    ("argv"), [["doctor", "--bogus"], ["fix", "--pull"]], ids=["bogus", "pull"]
)
def test_a_flag_like_none_gets_no_guess(argv: list[str]) -> None:
    """`--bogus` is no misspelt `--gpus`, nor `--pull` a `--no-pull` (its opposite)."""
    error, _ = _said(run_envcheck(argv))
    assert error == f"unknown flag {argv[1]!r} for `envcheck {argv[0]}`"


def test_a_bad_value_is_one_line_with_the_range_not_the_usage() -> None:
    """Before: `not a number: 'abc'` and the doctor's usage, 7 rows of flags."""
    error, rest = _said(run_envcheck(["doctor", "--smoke-timeout", "abc"]))
    assert error == (
        "argument --smoke-timeout: must be more than 0 and at most 86400 seconds (24 hours), "
        "got abc"
    )
    assert rest == ["envcheck: hint: see `envcheck doctor --help`"]


@pytest.mark.parametrize(
    ("flag", "path", "words"),
    [
        ("--markdown", "{tmp}", "it is a directory"),
        ("--junit", "{tmp}/no/such/folder/x.xml", "no folder"),
        ("--save-baseline", "{tmp}/link", "it is a symbolic link"),
    ],
    ids=["markdown-a-folder", "junit-in-no-folder", "baseline-a-link"],
)
def test_an_output_that_cannot_be_written_fails_before_any_probe(
    tmp_path: Path, flag: str, path: str, words: str
) -> None:
    """Before: `--markdown DIR` ran the whole doctor, its smoke included, then failed."""
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    target = path.format(tmp=tmp_path)
    for command in (["doctor", flag, target], ["report", flag, target, str(tmp_path)]):
        if command[0] == "report" and flag == "--save-baseline":
            continue
        run = run_envcheck(command)
        error, _ = _said(run)
        assert error.startswith(
            (f"cannot write {flag} {target}", f"refusing to write {flag} {target}")
        )
        assert words in error
        assert "probing" not in run.stderr and run.stdout == ""


def test_expect_gpu_on_a_cpu_only_machine_says_so_and_asks_for_no_driver(tmp_path: Path) -> None:
    """Before: `install the NVIDIA driver`, and `paddlepaddle 3.3.1 is the CPU-only build on a
    host with 0 NVIDIA GPU(s)`: advice for a machine that has no GPU to drive."""
    cpu_only = s.host(
        driver={"status": "absent", "error": "NVML_ERROR_LIBRARY_NOT_FOUND", "gpus_present": 0},
        paddle=s.PADDLE_331_CPU,
    )
    run = run_envcheck(["doctor", "--facts", write(tmp_path, cpu_only), "--expect-gpu", "--json"])
    doc = json.loads(run.stdout)
    problems = {f["id"]: f for f in doc["findings"] if f["severity"] != "pass"}
    assert run.returncode == 1 and "paddle.cpu-build" not in problems
    assert "CPU-only machine" in problems["driver.missing"]["message"]
    assert "install the NVIDIA driver" not in run.stdout and "0 NVIDIA GPU(s)" not in run.stdout
    assert "on a machine with an NVIDIA GPU" in problems["driver.missing"]["fix"]
