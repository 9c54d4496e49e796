"""Why this image tag: one text for `envcheck doctor --explain` and `envcheck pull-image
--dry-run` (issue 13.3). The selection's own reason carries the chain — the driver and the
newest CUDA it runs, whether every GPU's architecture is among the image's, the release chosen —
and every tag that was rejected says why. Lines without indent; each caller indents them."""

from __future__ import annotations

from envcheck.render.sanitize import visible
from envcheck.report import ImageChoice

UNCONFIRMED_NOTE = "note: the matrix marks this tag UNCONFIRMED (seen only in third-party material)"


def why_lines(choice: ImageChoice) -> list[str]:
    """`why: …` and the UNCONFIRMED note, when there is a choice to explain."""
    lines = [f"why: {visible(choice.reason)}"] if choice.reason else []
    if choice.ref and not choice.confirmed:
        lines.append(UNCONFIRMED_NOTE)
    return lines


def rejected_lines(choice: ImageChoice) -> list[str]:
    return [f"rejected {visible(r.ref)}: {visible(r.reason)}" for r in choice.rejected]
