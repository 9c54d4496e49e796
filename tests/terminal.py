"""A terminal screen, enough of one to read back what rich's live displays drew: printable text,
carriage return, new line, erase line (`ESC[2K`), cursor up (`ESC[nA`); other escapes ignored.
A line another writer printed into the middle of a live line shows here as it does to a person."""

from __future__ import annotations

import io
import re

_ESCAPE = re.compile(r"\x1b\[(\??)(\d*)([A-Za-z])")


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def screen(output: str) -> list[str]:
    """The lines left on the screen once `output` was written to a fresh terminal."""
    lines: list[str] = [""]
    row = col = 0
    at = 0
    while at < len(output):
        escape = _ESCAPE.match(output, at)
        if escape:
            private, number, command = escape.groups()
            if not private and command == "K" and number == "2":
                lines[row] = ""
            elif not private and command == "A":
                row = max(0, row - int(number or 1))
            at = escape.end()
            continue
        char = output[at]
        at += 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + char + line[col + 1 :]
            col += 1
    return [line.rstrip() for line in lines]
