"""Shell completion, the man page and `--help` examples, all from the real parser.

The committed completions/ and man/ files are regenerated here and must match byte for byte; each
must name every subcommand and every flag; bash's is sourced and asked, as bash asks it, for real
completions; envcheck itself never imports shtab (start-up stays what it was).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.cli import build_parser
from envcheck.commands import manual
from envcheck.contracts.errors import UsageError
from envcheck.contracts.exitcodes import EXIT_CODES, EXIT_CODES_HELP
from tests.inprocess import envcheck
from tests.paths import ROOT

SCRIPT = ROOT / "scripts" / "completions.py"
COMPLETIONS = {
    "bash": ROOT / "completions" / "envcheck.bash",
    "zsh": ROOT / "completions" / "_envcheck",
    "fish": ROOT / "completions" / "envcheck.fish",
    "man": ROOT / "man" / "envcheck.1",
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {
        opt for action in parser._actions for opt in action.option_strings if opt.startswith("--")
    }


def test_committed_files_are_what_the_parser_generates_now() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, (
        f"{run.stderr}\n(stale completions: run `python scripts/completions.py`)"
    )


def test_check_catches_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_completions", SCRIPT)
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    stale = tmp_path / "envcheck.fish"
    stale.write_text(
        COMPLETIONS["fish"].read_text(encoding="utf-8").replace("expect-hosts", "x"),
        encoding="utf-8",
    )
    monkeypatch.setitem(gen.FILES, "fish", stale)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.main(["--check"]) == 1


@pytest.mark.parametrize("kind", list(COMPLETIONS))
def test_every_subcommand_and_flag_is_there(kind: str) -> None:
    text = COMPLETIONS[kind].read_text(encoding="utf-8")
    if kind == "man":
        text = text.replace("\\-", "-")
    for name, parser in _commands().items():
        assert name in text
        for flag in _flags(parser):
            bare = flag[2:]
            assert (f"-l {bare}" if kind == "fish" else flag) in text, (kind, name, flag)
    assert "--version" in text or "-l version" in text


def _bash_complete(*words: str) -> list[str]:
    """What bash offers after `words` (the last one being completed), through the shipped file."""
    script = f"""
source {shlex.quote(str(COMPLETIONS["bash"]))}
COMP_WORDS=({" ".join(shlex.quote(w) for w in words)})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}
_shtab_envcheck envcheck "${{COMP_WORDS[-1]}}" "${{COMP_WORDS[-2]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    run = subprocess.run(
        ["bash", "--norc", "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd=ROOT,
    )
    return [line for line in run.stdout.splitlines() if line]


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        (("envcheck", ""), ["doctor", "fix", "pull-image", "report", "completion"]),
        (("envcheck", "pu"), ["pull-image"]),
        (("envcheck", "report", "--ex"), ["--expect-hosts"]),
        (("envcheck", "doctor", "--registry", ""), ["baidu", "baidu-legacy", "dockerhub"]),
        (("envcheck", "doctor", "--no-s"), ["--no-smoke"]),
        (("envcheck", "doctor", "--facts", "pyproject.to"), ["pyproject.toml"]),
        (("envcheck", "doctor", "--matrix", "matr"), ["matrix"]),
    ],
    ids=[
        "commands",
        "a-command",
        "report-flag",
        "registry-names",
        "doctor-flag",
        "a-file",
        "a-folder",
    ],
)
def test_bash_completes_for_real(words: tuple[str, ...], offered: list[str]) -> None:
    assert _bash_complete(*words) == offered


def test_envcheck_never_imports_shtab() -> None:
    code = "import sys, envcheck.cli; envcheck.cli.build_parser(); print('shtab' in sys.modules)"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.strip() == "False"


# ------------------------------------------------------------------------- --help examples


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    epilog = parser.epilog or ""
    assert epilog.startswith("examples:\n") and epilog.endswith(EXIT_CODES_HELP)
    block = epilog.split("\n\n", 1)[0].splitlines()[1:]
    return [line.strip() for line in block]


@pytest.mark.parametrize("name", ["doctor", "fix", "pull-image", "report"])
def test_help_shows_examples_that_the_parser_accepts_and_the_exit_codes(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = _commands()[name]
    examples = _examples(parser)
    assert len(examples) >= 4
    for line in examples:
        command = line.split("  #", 1)[0].split("|")[-1].split(">")[0]  # the envcheck part
        argv = shlex.split(command)
        assert argv[:2] == ["envcheck", name], line
        try:
            build_parser().parse_args(argv[1:])
        except UsageError as e:  # pragma: no cover - the message is the point
            pytest.fail(f"{line!r}: {e.message}")
    with pytest.raises(SystemExit):
        build_parser().parse_args([name, "--help"])
    out = capsys.readouterr().out
    assert "examples:\n  envcheck" in out and "exit codes:\n  0  pass" in out
    assert examples[0] in out  # printed as written (RawDescriptionHelpFormatter)


def test_the_wheel_installs_every_generated_file_where_its_shell_looks() -> None:
    from envcheck.matrix.toml import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shared = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert {ROOT / src for src in shared} == set(COMPLETIONS.values())
    assert shared["completions/envcheck.bash"] == "share/bash-completion/completions/envcheck"
    assert shared["man/envcheck.1"] == "share/man/man1/envcheck.1"


# ------------------------------------------------------ where users look


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_envcheck_completion_prints_the_committed_script(shell: str) -> None:
    """`envcheck completion SHELL`, as `gh` and `pip` do: a pipx install has no share/ on the
    shell's path, but it has the command."""
    run = envcheck("completion", shell)
    assert run.returncode == 0 and run.stderr == ""
    assert run.stdout == COMPLETIONS[shell].read_text(encoding="utf-8")


def test_an_unknown_shell_is_a_usage_error() -> None:
    run = envcheck("completion", "tcsh")
    assert run.returncode == 2 and "invalid choice: 'tcsh'" in run.stderr and run.stdout == ""


def test_the_wheel_ships_the_scripts_the_command_prints() -> None:
    from envcheck.matrix.toml import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["completions"] == "envcheck/_completions"


def _man_section(title: str) -> str:
    man = COMPLETIONS["man"].read_text(encoding="utf-8")
    return man.split(f"\n.SH {title}\n", 1)[1].split("\n.SH ", 1)[0].replace("\\-", "-")


def test_the_man_page_says_exit_status_environment_and_files_as_help_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    help_text = capsys.readouterr().out
    for title, entries in (
        ("EXIT STATUS", [(str(int(code)), words) for code, words in EXIT_CODES]),
        ("ENVIRONMENT", list(manual.ENVIRONMENT)),
        ("FILES", list(manual.FILES)),
    ):
        section = _man_section(title)
        for name, words in entries:
            assert f"\\fB{name}\\fR\n{words}" in section, (title, name)
            assert name in help_text and " ".join(words.split()) in " ".join(help_text.split())
    assert [int(code) for code, _ in EXIT_CODES] == [*range(8), 130]


def test_every_variable_envcheck_reads_is_documented() -> None:
    """An ENVCHECK_* setting the code reads and the manual does not name is one nobody finds."""
    import re

    read = {
        name
        for path in (ROOT / "envcheck").rglob("*.py")
        for name in re.findall(r"\"(ENVCHECK_[A-Z_]+)\"", path.read_text(encoding="utf-8"))
    }
    test_hooks = {  # the suite's, not users'
        "ENVCHECK_SMOKE_SCRIPT",
        "ENVCHECK_SMOKE_CORRUPT",
        "ENVCHECK_FIX_PAUSE",
        "ENVCHECK_FIX_PAUSE_FILE",
    }
    documented = {n for names, _ in manual.ENVIRONMENT for n in names.split(", ")}
    assert read - test_hooks <= documented
