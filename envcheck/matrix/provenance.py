"""Say where a matrix fact comes from in plain words: "Paddle's install docs", not `D-2.6`.

The rows cite source keys (`D-2.6`, `3P`, `NV-RN`, `Paddle#76558`; matrix/README.md). Those keys
stay in `--json` and `--explain`; messages a person reads say what kind of source it is.

The keys stay `str`: a row's `source` is a list of citation tags that grows with the fact sheet
(each new issue, PR or docs page is a new tag: `Paddle#78924`, `PR79314`, `NV-curanddx`), and
`archs_source` is a sentence quoting the evidence. What is closed is the kind a key names.
"""

from __future__ import annotations

import re
from typing import Literal

SourceKind = Literal[
    "measured from the wheel",
    "NVIDIA's documentation",
    "Paddle's install docs",
    "Paddle's issue tracker",
    "build files",
    "Paddle's source code",
]

# Key prefix -> what it is. Checked in order; the first match names the kind.
_KINDS: tuple[tuple[re.Pattern[str], SourceKind], ...] = (
    (re.compile(r"^(W-\d+|MEASURED)"), "measured from the wheel"),
    (re.compile(r"^NV"), "NVIDIA's documentation"),
    (re.compile(r"^(D-|PD-|OCR-|PX-|ERNIE|PFORM|DOCS#|CONDA|SETUP)"), "Paddle's install docs"),
    (re.compile(r"^(ISSUES|PR\d|Paddle\w*#|[A-Za-z]+#\d)"), "Paddle's issue tracker"),
    (re.compile(r"^(CMAKE|CUDA\.cmake|CUDART|GPURES)"), "build files"),
    (re.compile(r"^DYNLOAD"), "Paddle's source code"),
)


def _kinds(source: str) -> list[SourceKind]:
    kinds: list[SourceKind] = []
    for key in (k.strip() for k in source.split(",")):
        for pattern, kind in _KINDS:
            if pattern.match(key) and kind not in kinds:
                kinds.append(kind)
                break
    return kinds


def plain_source(source: str, confirmed: bool) -> str:
    """`("D-2.6, W-262", True)` -> "confirmed by Paddle's install docs and measured from the wheel";
    `("3P", False)` -> "reported by users, not in the official docs"."""
    kinds = _kinds(source)
    if not kinds:
        return "reported by users, not in the official docs"
    said = " and ".join(kinds)
    if confirmed:
        return f"confirmed by {said}" if kinds[0] != "measured from the wheel" else said
    return f"from {said}, not confirmed by an official source"
