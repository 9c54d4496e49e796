"""What makes a printed command one a person can run as printed: the
judged interpreter by its absolute path, pinned releases that exist from indexes that hold them
(envcheck/verdict/known_packages.toml), and a line bash and zsh both take as written."""

from __future__ import annotations

import posixpath
import re
import shlex
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from envcheck.verdict.fixes import PipInstall, and_list, commands_in
from envcheck.verdict.known_packages import known_packages

_PLACEHOLDER = re.compile(r"<[A-Za-z][\w .|-]*>")
_GLOB = re.compile(r"[*?\[]")
_INDEX_OPTIONS = ("-i", "--index-url", "-f", "--find-links")


def commands_of(findings: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(finding id, command) of every command in a message or fix."""
    return [
        (str(f["id"]), c)
        for f in findings
        for text in (f.get("message") or "", f.get("fix") or "")
        for c in commands_in(str(text))
    ]


_DIAGNOSTICS = ("ls", "cat", "lspci", "dmesg", "uname")


def diagnostic(command: str) -> bool:
    """A command that only looks (`ls`, `cat`, `nvidia-smi -L`), or the doctor run again as it
    was: never a step of a fix."""
    words = shlex.split(command)
    words = words[1:] if words[:1] == ["sudo"] else words
    if not words:
        return True
    if words[0] in _DIAGNOSTICS or words[:2] == ["nvidia-smi", "-L"] or words == ["nvidia-smi"]:
        return True
    return words[:2] == ["envcheck", "doctor"] and not (set(words) & {"--expect-gpu", "--image"})


def dangling(command: str) -> bool:
    """A line that ends in a pipe or an operator waiting for more (`… |`, `… &&`)."""
    return command.rstrip().endswith(("|", "&&", "||", "\\"))


def shell_problems(command: str) -> list[str]:
    """What bash or zsh would do to this line that its author did not mean."""
    found = [f"{shell} -n: {err}" for shell in ("bash", "zsh") if (err := _syntax(shell, command))]
    if dangling(command):
        found.append("a dangling pipe or operator")
    if _PLACEHOLDER.search(command):
        found.append("a <placeholder> (a redirect in a shell)")
    lexer = shlex.shlex(command, posix=False, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as e:  # an unclosed quote: bash -n said so already
        return found + [str(e)]
    for token in tokens:
        if token[0] in "<>":
            found.append(f"a redirect {token!r}")
        elif token[0] not in "'\"" and _GLOB.search(token):
            found.append(f"unquoted glob {token!r} (zsh: no matches found)")
    return found


def _syntax(shell: str, command: str) -> str:
    run = subprocess.run(  # on stdin: a command may start with "-" (`--gpus all`)
        [shell, "-n"], input=command, capture_output=True, text=True, timeout=30, check=False
    )
    return run.stderr.strip() if run.returncode else ""


def pip_problems(command: str, python: str | None) -> list[str]:
    """A pip command line: the judged interpreter (absolute), `-m pip`, every install pinned to a
    release the recorded index holds, and the argv shlex reads is the one PipInstall writes."""
    if "-m pip" not in command:
        return []
    parts = and_list(shlex.split(command))
    found = []
    for argv in parts:
        if not posixpath.isabs(argv[0]) or (python and argv[0] != python):
            found.append(f"interpreter {argv[0]!r}, not the judged {python!r}")
        if argv[1:3] != ["-m", "pip"] or len(argv) < 5:
            found.append(f"not `PYTHON -m pip install|uninstall …`: {argv}")
        elif argv[3] == "install":
            found += _install_problems(argv[4:])
    if parts[-1][3:4] != ["install"]:  # a remedy's removal, its own step before the install
        return found
    removed = [a for p in parts if p[3:4] == ["uninstall"] for a in p[5:]]
    install = PipInstall(parts[-1][0], tuple(parts[-1][4:]), tuple(removed))
    if [list(a) for a in install.argvs()] != parts:
        found.append(f"shlex reads {parts}, PipInstall writes {install.argvs()}")
    return found


def _install_problems(args: list[str]) -> list[str]:
    known = known_packages()
    index = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in _INDEX_OPTIONS), None)
    values = {args[i + 1] for i, a in enumerate(args[:-1]) if a in _INDEX_OPTIONS}
    found = []
    if index is not None and index not in known.indexes:
        found.append(f"index {index} is not recorded in known_packages.toml")
    for arg in args:
        if arg.startswith("-") or arg in values:
            continue
        name, _, version = arg.partition("==")
        if not version:
            found.append(f"{arg}: not pinned")
        elif not (known.exists(name, version, index) or known.exists(name, version)):
            found.append(f"{arg}: no such release recorded ({index or 'PyPI'})")
    return found
