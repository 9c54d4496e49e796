"""One sanitiser for every value from outside that reaches a terminal, a log or a report file.

GPU names, hostnames, environment values, the smoke's own output, registry answers and saved
reports are not ours: they can carry ESC sequences (clear the screen, retitle the window, forge a
hyperlink), NUL, lone surrogates that cannot be encoded, bidi overrides that reorder what a
reviewer reads, or a newline followed by `::error::` that GitHub's runner takes as a workflow
command (actions/runner `ActionCommand.TryParseV2`: a line whose text, after leading spaces,
starts with `::`). Every renderer passes such values through `visible()` once, at the edge:

- C0 and C1 controls, DEL, ESC, NUL, lone surrogates, bidi controls and the Unicode line and
  paragraph separators become visible escapes (`\\x1b`, `\\n`, `\\u202e`): shown, never obeyed;
- a single value never spans lines (`keep_lines=True` keeps the line breaks of a text we composed,
  such as a log tail, but a line that would start a workflow command has its first `:` escaped);
- markup is never interpreted: rich output takes `Text` objects or `rich_safe()`; Markdown and
  XML escape their own syntax after this step.
"""

from __future__ import annotations

import re
from functools import cache

# C0 (but TAB/LF/CR are named below), DEL, C1, lone surrogates, bidi embeddings/overrides/isolates,
# LINE SEPARATOR and PARAGRAPH SEPARATOR, BOM/ZWNBSP and the XML-illegal noncharacters: none of
# them is printable (`str.isprintable`), which is what lets `visible()` pass a plain value as it is.
_UNSAFE = "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff\ufffe\uffff]"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_COMMAND_LINE = re.compile(r"^(\s*)::", re.MULTILINE)


@cache
def _unsafe(keep_lines: bool) -> re.Pattern[str]:
    """Compiled on first use: ~1 ms for the two (a class beyond Latin-1 builds a 64K-entry map),
    which a doctor whose every value is plain text never pays."""
    return re.compile(_UNSAFE.replace("\x00-\x1f", "\x00-\x09\x0b-\x1f") if keep_lines else _UNSAFE)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: object, *, keep_lines: bool = False) -> str:
    """`text` as one safe line (or, with keep_lines, safe lines) of printable characters."""
    value = text if isinstance(text, str) else str(text)
    if value.isprintable() and "::" not in value:
        return value  # nothing to escape: no unsafe character, no line, no command
    if keep_lines:
        value = value.replace("\r\n", "\n")
    return _COMMAND_LINE.sub(r"\1\\x3a:", _unsafe(keep_lines).sub(_escape, value))


def rich_safe(text: object, *, keep_lines: bool = False) -> str:
    """`visible()`, then rich's markup escaped: for the few places that print strings, not Text."""
    from rich.markup import escape

    return escape(visible(text, keep_lines=keep_lines))


# scheme://userinfo@ in a URL: an index's user name and token (`--paddle-index
# https://user:token@mirror/…`) are the user's secret, for pip, never for a terminal or a report
_CREDENTIALS = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s:]*)(:[^/@\s]*)?@")


def hide_credentials(text: str) -> str:
    """`text` with each URL's password (or its lone token) replaced by `****`, as pip shows it:
    `https://user:****@host/…`, `https://****@host/…`."""
    return _CREDENTIALS.sub(
        lambda m: f"{m[1]}{m[2]}:****@" if m[3] is not None else f"{m[1]}****@", text
    )
