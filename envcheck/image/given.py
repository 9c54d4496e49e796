"""`--image REF` described by what is known of it: the matrix's row when REF is a tag
of an official repository the matrix lists, else nothing (kind, CUDA, Paddle unknown). Never the
tag the doctor would have chosen: a user's `trainer:2024-05` is not "gpu, CUDA 12.9, confirmed".
Pure."""

from __future__ import annotations

from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.record import replace
from envcheck.image.choice import image_choice
from envcheck.matrix.model import Matrix

GIVEN = "given with --image"


def given_image(ref: str, matrix: Matrix, choice: ImageChoice) -> ImageChoice:
    """The user's image; of the doctor's choice only the host's own pip command is kept (it is
    about the judged interpreter, not the image)."""
    # imported here: only this branch needs it, and a doctor seldom takes it
    from envcheck.image.reference import parse_reference

    parsed = parse_reference(ref)
    for registry, repository in matrix.registries.items():
        known = parse_reference(repository)
        if (known.registry, known.repository) != (parsed.registry, parsed.repository):
            continue
        for image in matrix.images:
            if image.tag == parsed.tag:
                known_tag = image_choice(matrix, image, registry, f"{GIVEN}: an official tag", ())
                # the user's reference as given: the matrix's digest pins another name
                return replace(known_tag, ref=ref, digest=None, pip_command=choice.pip_command)
    return ImageChoice(
        ref=ref,
        tag=parsed.tag,
        pip_command=choice.pip_command,
        reason=f"{GIVEN}: not a tag the matrix knows",
        confirmed=False,
    )
