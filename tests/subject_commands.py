"""Every envcheck command an output prints, and those that do not name the judged interpreter
with `--python` (a pasted `envcheck fix --yes` judges, and changes, whatever its shell means)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

_SPAN = re.compile(r"`([^`\n]+)`")
# a command outside backticks: `envcheck fix --yes` in a hint, a Markdown block, a JSON "shell"
_BARE = re.compile(r"\benvcheck (?:doctor|fix|pull-image) +-[^\s`'\"]+")
JUDGING = ("doctor", "fix", "pull-image")


def _strings(doc: Any) -> Iterator[str]:
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        if doc.get("kind") == "command" and isinstance(doc.get("argv"), list):
            yield shlex.join(doc["argv"])
        for value in doc.values():
            yield from _strings(value)
    elif isinstance(doc, list):
        if doc[:1] == ["envcheck"]:  # an argv (the report's meta.fix_command)
            yield shlex.join(doc)
        for value in doc:
            yield from _strings(value)


def _command_line(line: str) -> bool:
    """A line that is a command, not a title ("envcheck fix for /venv/bin/python")."""
    words = line.split()
    return words[:1] == ["envcheck"] and (len(words) < 3 or words[2].startswith("-"))


def envcheck_commands(output: str) -> list[str]:
    """The envcheck commands of a text, Markdown or JSON output: between backticks, alone on a
    line (the next steps, a shell block), an argv, or a bare one with flags inside a sentence."""
    try:
        texts = list(_strings(json.loads(output)))
    except ValueError:
        texts = [output]
    found: list[str] = []
    for text in texts:
        found += _SPAN.findall(text)
        found += [line.strip() for line in text.splitlines() if _command_line(line.strip())]
        # its first flag is all a bare one shows: `--python` there, the line or span is checked
        found += [c for c in _BARE.findall(_SPAN.sub("", text)) if not c.endswith(" --python")]
    commands = [c for c in found if c.split()[:1] == ["envcheck"] and c.split()[1:2] != []]
    return list(dict.fromkeys(commands))  # each once: a line is also a bare command


def uncarried(output: str, python: str) -> list[str]:
    """The judging envcheck commands of `output` that do not name `python` right after their
    subcommand, quoted as a shell reads it."""
    missing = []
    for command in envcheck_commands(output):
        try:
            words = shlex.split(command)
        except ValueError:
            missing.append(command)
            continue
        if words[1] in JUDGING and words[2:4] != ["--python", python]:
            missing.append(command)
    return missing
