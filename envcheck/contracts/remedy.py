"""A remedy: what to do about a finding, as data rather than prose.

A remedy is a sequence of ordered steps. Each step is either a complete command (an argv, who
runs it, what it changes) or a manual instruction in words. A command is runnable as printed:
everything it needs comes before it in the same remedy, so a renderer never cuts a fragment out
of a sentence, and `envcheck fix` runs the target's pip commands it finds here, not a second
plan of its own.

Who runs a command:
- "pip": the target interpreter's pip (`/venv/bin/python -m pip …`), which `envcheck fix` runs;
- "root": printed with `sudo` in front, never run by envcheck;
- "user": the person's own shell (`envcheck fix --yes`, `export …`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any, Literal, get_args

from envcheck.contracts.record import record

COMMAND = re.compile(r"`([^`\n]+)`")  # every command of a fix or message is between backticks
_VARIABLE = re.compile(r"\$[A-Z_]+")  # a variable the person's shell expands: `$USER`
Runner = Literal["pip", "root", "user"]
RUNNERS: tuple[Runner, ...] = get_args(Runner)


@record
class Command:
    """One complete command. `argv` is the command itself; a "root" command is printed with
    `sudo` in front. `alternative`: it replaces the steps before it (the reload of a kernel
    module instead of a reboot), printed under "or instead"."""

    argv: tuple[str, ...]
    runner: Runner
    changes: str  # what it changes, in words
    alternative: bool = False

    @property
    def words(self) -> tuple[str, ...]:
        """The argv a person types: with `sudo` for root."""
        return ("sudo", *self.argv) if self.runner == "root" else self.argv

    def shell(self) -> str:
        """The line to type, quoted for bash and zsh alike; `$USER` is left for the shell."""
        return " ".join(w if _VARIABLE.fullmatch(w) else shlex.quote(w) for w in self.words)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "command",
            "argv": list(self.argv),
            "runner": self.runner,
            "changes": self.changes,
            "alternative": self.alternative,
            "shell": self.shell(),
        }


@record
class Instruction:
    """A step only a person can do, in words (reboot, upgrade the driver, use a newer GPU)."""

    text: str
    alternative: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"kind": "manual", "text": self.text, "alternative": self.alternative}


RemedyStep = Command | Instruction


@record
class Remedy:
    """A finding's ordered steps; or, where another finding's remedy replaces what this one is
    about (a new Paddle build brings its own cuDNN), the id of that finding and no steps."""

    steps: tuple[RemedyStep, ...] = ()
    resolved_by: str | None = None
    goal: str | None = None  # what the steps achieve, in words ("install a build for sm_90")

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(s for s in self.steps if isinstance(s, Command))

    @property
    def pip(self) -> tuple[Command, ...]:
        """The commands `envcheck fix` runs itself: the target interpreter's pip."""
        return tuple(c for c in self.commands if c.runner == "pip")

    def prose(self) -> str:
        """The remedy in one sentence, every command between backticks: the fix line under a
        finding, and the `fix` key of the JSON for readers of the older schema."""
        if self.resolved_by is not None:
            return f"resolved by the fix for {self.resolved_by}"
        text = f"{self.goal}: " if self.goal and self.steps else (self.goal or "")
        for i, step in enumerate(self.steps):
            part = f"`{step.shell()}`" if isinstance(step, Command) else step.text
            if i == 0:
                text += part
            elif step.alternative and not self.steps[i - 1].alternative:
                text += f"; or instead: {part}"
            else:
                text += f"; then {part}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": [s.to_json() for s in self.steps],
            "resolved_by": self.resolved_by,
            "goal": self.goal,
        }


def aiming(goal: str, remedy: Remedy) -> Remedy:
    """`remedy` with what it achieves said in words before its steps."""
    return Remedy(remedy.steps, remedy.resolved_by, goal)


def say(text: str) -> Remedy:
    """A remedy of one manual instruction."""
    return Remedy((Instruction(text),))


def steps(*parts: RemedyStep | Remedy | None) -> Remedy:
    """A remedy of these steps, a remedy's own steps spliced in, None skipped."""
    out: list[RemedyStep] = []
    for part in parts:
        if isinstance(part, Remedy):
            out += part.steps
        elif part is not None:
            out.append(part)
    return Remedy(tuple(out))


def root(*argv: str, changes: str, alternative: bool = False) -> Command:
    return Command(tuple(argv), "root", changes, alternative)


def user(*argv: str, changes: str, alternative: bool = False) -> Command:
    return Command(tuple(argv), "user", changes, alternative)


def from_document(doc: object, where: str) -> Remedy:
    """A remedy read back from a saved report's JSON (`Remedy.to_json`)."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected an object")
    resolved = doc.get("resolved_by")
    if resolved is not None and not isinstance(resolved, str):
        raise ValueError(f"{where}.resolved_by: expected a string or null")
    raw = doc.get("steps", [])
    if not isinstance(raw, list):
        raise ValueError(f"{where}.steps: expected a list")
    goal = doc.get("goal")
    if goal is not None and not isinstance(goal, str):
        raise ValueError(f"{where}.goal: expected a string or null")
    found = tuple(_step(s, f"{where}.steps[{i}]") for i, s in enumerate(raw))
    return Remedy(found, resolved, goal)


def _step(doc: object, where: str) -> RemedyStep:
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected an object")
    alternative = bool(doc.get("alternative", False))
    if doc.get("kind") == "manual" and isinstance(doc.get("text"), str):
        return Instruction(doc["text"], alternative)
    argv, runner, changes = doc.get("argv"), doc.get("runner"), doc.get("changes")
    if (
        doc.get("kind") == "command"
        and isinstance(argv, list)
        and argv
        and all(isinstance(a, str) for a in argv)
        and runner in RUNNERS
        and isinstance(changes, str)
    ):
        return Command(tuple(argv), runner, changes, alternative)
    raise ValueError(f"{where}: expected a command (argv, runner, changes) or a manual step")


def as_remedy(fix: Remedy | str | None) -> Remedy | None:
    """A rule's fix: a remedy as it is; words as one manual instruction."""
    return say(fix) if isinstance(fix, str) else fix


# envcheck's commands that judge an interpreter: each takes `--python`
JUDGING = frozenset({"doctor", "fix", "pull-image"})


def with_python(argv: Sequence[str], python: str | None) -> tuple[str, ...]:
    """An envcheck command that judges an interpreter, with the `--python` that names `python`:
    pasted in another shell, under sudo or after `deactivate`, it judges the same one. Any other
    command, or one that names its interpreter already, as it is."""
    words = tuple(argv)
    if (
        not python
        or len(words) < 2
        or words[0] != "envcheck"
        or words[1] not in JUDGING
        or any(w == "--python" or w.startswith("--python=") for w in words)
    ):
        return words
    return (*words[:2], "--python", python, *words[2:])


def envcheck_line(python: str | None, *args: str) -> str:
    """`envcheck ARGS` as a person types it, with the `--python` of `python`, quoted for the
    shell: the hints that name a command in words."""
    return shlex.join(with_python(("envcheck", *args), python))


def in_words(text: str, python: str | None) -> str:
    """`text` with each envcheck command between its backticks carrying the `--python` of
    `python` (a hint, a finding's words)."""

    def carried(span: str) -> str:
        try:
            argv = shlex.split(span)
        except ValueError:  # not a command (an unclosed quote): left as written
            return span
        new = with_python(argv, python)
        return span if new == tuple(argv) else shlex.join(new)

    return COMMAND.sub(lambda m: f"`{carried(m.group(1))}`", text) if python else text
