"""The subject carried into every envcheck command a report prints (pure).

A report judges one interpreter (`--python`, the active venv or conda environment, envcheck's
own: envcheck.probe.interpreter). A command it prints that runs envcheck again (`envcheck fix
--yes`, `envcheck doctor --expect-gpu`) names that interpreter with `--python`, whichever way it
was found: pasted in another shell, under sudo (which drops VIRTUAL_ENV) or after `deactivate`,
a bare `envcheck fix` would judge, and change, another one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from envcheck.contracts.facts import HostFacts
from envcheck.contracts.findings import Finding
from envcheck.contracts.record import replace
from envcheck.contracts.remedy import (
    Command,
    Instruction,
    Remedy,
    RemedyStep,
    in_words,
    with_python,
)


def subject_python(host: HostFacts, given: str | None = None) -> str | None:
    """The interpreter the report judged, as `--python` names it: the facts' absolute path, else
    the `--python` the command was given (None: neither, nothing to carry)."""
    python = host.paddle.python
    return python if python and posixpath.isabs(python) else given


def carry_subject(findings: Iterable[Finding], python: str | None) -> list[Finding]:
    """Every envcheck command of the findings (their remedies' commands, and those between
    backticks in their words) with the `--python` of `python`."""
    found = list(findings)
    if not python:
        return found
    return [_finding(f, python) for f in found]


def _finding(f: Finding, python: str) -> Finding:
    remedy = f.remedy
    if remedy is not None:
        goal = in_words(remedy.goal, python) if remedy.goal else remedy.goal
        remedy = Remedy(tuple(_step(s, python) for s in remedy.steps), remedy.resolved_by, goal)
    message = in_words(f.message, python)
    if remedy == f.remedy and message == f.message:
        return f
    return replace(f, message=message, remedy=remedy)


def _step(step: RemedyStep, python: str) -> RemedyStep:
    if isinstance(step, Command):
        return replace(step, argv=with_python(step.argv, python))
    if isinstance(step, Instruction):
        return replace(step, text=in_words(step.text, python))
    return step
