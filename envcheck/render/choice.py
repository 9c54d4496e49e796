"""Why this image tag: one text for `envcheck doctor --explain` and `envcheck pull-image
--dry-run`. The selection's own reason carries the chain — the driver and the
newest CUDA it runs, whether every GPU's architecture is among the image's, the release chosen —
and every tag that was rejected says why. Lines without indent; each caller indents them."""

from __future__ import annotations

from envcheck.contracts.host_report import ImageChoice
from envcheck.matrix.provenance import plain_source
from envcheck.render.sanitize import visible


def why_lines(choice: ImageChoice) -> list[str]:
    """`why: …` and, for a tag no official source confirms, its standing in the words of the
    image line (one wording: not "UNCONFIRMED (third-party)" beside "from Paddle's
    install docs")."""
    lines = [f"why: {visible(choice.reason)}"] if choice.reason else []
    if choice.ref and not choice.confirmed and choice.source:
        lines.append(f"note: tag {plain_source(choice.source, False)}")
    if choice.ref and choice.kind == "gpu":
        facts = "; ".join(choice.arch_facts) or (
            "none of its build, release line or CUDA family: the toolkit's reach only"
        )
        lines.append(f"arch facts: {visible(facts)}")
    return lines


def rejected_lines(choice: ImageChoice) -> list[str]:
    return [f"rejected {visible(r.ref)}: {visible(r.reason)}" for r in choice.rejected]
