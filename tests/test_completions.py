"""Shell completion, the man page and `--help` examples, all from the real parser (#13.7).

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
from envcheck.errors import UsageError
from envcheck.exitcodes import EXIT_CODES_HELP

ROOT = Path(__file__).resolve().parent.parent
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


def test_committed_files_are_what_the_parser_generates_now():
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


def test_check_catches_a_stale_file(tmp_path, monkeypatch):
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
def test_every_subcommand_and_flag_is_there(kind):
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
        (("envcheck", ""), ["doctor", "fix", "pull-image", "report"]),
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
def test_bash_completes_for_real(words, offered):
    assert _bash_complete(*words) == offered


def test_envcheck_never_imports_shtab():
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
def test_help_shows_examples_that_the_parser_accepts_and_the_exit_codes(name, capsys):
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


def test_the_wheel_installs_every_generated_file_where_its_shell_looks():
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shared = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert {ROOT / src for src in shared} == set(COMPLETIONS.values())
    assert shared["completions/envcheck.bash"] == "share/bash-completion/completions/envcheck"
    assert shared["man/envcheck.1"] == "share/man/man1/envcheck.1"
