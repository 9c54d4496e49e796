"""Wrapping prose without ever breaking a command inside it.

A fix reads "reinstall the GPU build: `pip uninstall -y paddlepaddle && python -m pip install …`".
rich wraps at any space, so at 80 columns the command broke after `-i` and a copied command ran
half of itself. Here a span between backticks, with the punctuation glued to it, is one
unbreakable word: it moves whole to the next line when it does not fit, and a command longer than
the line gets a line of its own and overflows (the terminal soft-wraps it; a copy keeps it whole).
The renderers then print the lines as they are (rich with `soft_wrap=True`: no wrap of its own).
"""

from __future__ import annotations

import re

from envcheck.contracts.remedy import COMMAND
from envcheck.verdict.fixes import commands_in

# A command with what is glued to it ("(`cmd`),"), else a plain word.
_TOKEN = re.compile(r"[^\s`]*(?:`[^`\n]*`[^\s`]*)+|\S+")
__all__ = ["COMMAND", "commands_in", "wrap"]


def wrap(text: str, width: int | None, first: str = "", rest: str = "") -> list[str]:
    """`text` as lines of at most `width` columns where words allow, starting with `first` and
    continuing with `rest` (indents); its own line breaks kept (a log tail), a command never cut.
    `width` None: no wrapping, only the indents."""
    lines: list[str] = []
    for n, paragraph in enumerate(text.split("\n")):
        lead = first if n == 0 else rest
        if width is None:
            lines.append(lead + paragraph)
            continue
        tokens = _TOKEN.findall(paragraph)
        line = lead + paragraph[: len(paragraph) - len(paragraph.lstrip())]  # a traceback's indent
        filled = False
        for token in tokens:
            if filled and len(line) + 1 + len(token) > width:
                lines.append(line)
                line, filled = rest, False
            line += (" " if filled else "") + token
            filled = True
        lines.append(line)
    return lines
