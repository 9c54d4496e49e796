"""The smoke's entry point: the engine's image for a reference, pulled when it is missing."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any

from envcheck.contracts.errors import EnvcheckError, EnvironmentProblem
from envcheck.edges import activity
from envcheck.image.pull_plan import plan_pull
from envcheck.image.reference import parse_reference
from envcheck.pull.images import present
from envcheck.pull.run import pull_image
from envcheck.registry.errors import ManifestNotFound
from envcheck.render.progress import make_display

if TYPE_CHECKING:
    from envcheck.matrix.model import Matrix


def ensure_image(
    ref: str,
    *,
    allow_pull: bool,
    quiet: bool,
    client: Any,
    matrix: Matrix | None = None,
    stream: IO[str] | None = None,
    variables: Mapping[str, str] = MappingProxyType({}),
) -> str:
    """The engine's image id for `ref`, pulling it (with a progress display on `stream` unless
    `quiet`) when it is missing and `allow_pull`. `client`: a connected docker.DockerClient
    (`docker_adapter.connect` of the command's engine). `matrix`: the caller's loaded matrix, whose mirrors and pin plan the
    pull (default: the shipped one, loaded here). `stream`: the command's stderr (None: no
    display); `variables`: the command's. Raises EnvcheckError subclasses only."""
    parsed = parse_reference(ref)  # InvalidReference (exit 2) before any engine call
    image_id = present(client, ref)
    if image_id:
        return image_id
    if not allow_pull:
        raise EnvironmentProblem(
            f"image {ref} is not present and pulling is off (--no-pull)",
            hint=f"pull it first: `envcheck pull-image --image {ref}`",
        )
    plan = plan_pull(parsed, matrix if matrix is not None else _shipped_matrix())
    activity.phase(f"pulling {ref} from {parsed.registry}: this engine does not have it yet")
    display = make_display("none" if quiet else "auto", stream, variables)
    try:
        result = pull_image(plan, client=client, display=display, variables=variables)
    except EnvcheckError as e:
        # never marked done when the next phase begins; a missing tag is said in full once, by
        # the error line that follows (the phase already names the reference)
        activity.failed("tag not found" if isinstance(e, ManifestNotFound) else e.message)
        raise
    return result.image_id


def _shipped_matrix() -> Matrix | None:
    from envcheck.matrix.load import load_matrix

    try:
        return load_matrix(None)
    except EnvcheckError:
        return None  # mirrors and pins are a bonus here: the pull itself does not need them
