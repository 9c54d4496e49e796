"""What the engine already holds, asked by name or by digest, and taking a name away again."""

from __future__ import annotations

from typing import Any

from envcheck.contracts.errors import EnvcheckError
from envcheck.engine.docker_adapter import translate_errors
from envcheck.image.reference import Reference


def _inspect(client: Any, name: str, what: str) -> dict[str, Any] | None:
    """The engine's `docker image inspect NAME`, or None when it has no such image."""
    import docker.errors

    try:
        with translate_errors(f"inspecting {what}"):
            info: dict[str, Any] = client.api.inspect_image(name)
            return info
    except EnvcheckError as e:
        if isinstance(e.__cause__, docker.errors.NotFound):
            return None
        raise


def present(client: Any, ref: str) -> str | None:
    """The engine's image id for `ref`, or None when it has no such image."""
    info = _inspect(client, ref, ref)
    return None if info is None else str(info["Id"])


def local_image(client: Any, ref: Reference, digest: str) -> str | None:
    """The engine's image id for `ref` if it holds that exact digest, else None."""
    info = _inspect(client, f"{ref.name}@{digest}", str(ref))
    if info is None:
        return None
    names = {ref.familiar_name, ref.name}
    digests = {
        d.rpartition("@")[2] for d in info.get("RepoDigests") or [] if d.rpartition("@")[0] in names
    }
    return str(info["Id"]) if digest in digests else None


def untag(client: Any, ref: Reference) -> None:
    """`docker rmi REF`: the name goes; the image too when no other name holds it."""
    import docker.errors

    try:
        with translate_errors(f"removing {ref}"):
            client.api.remove_image(str(ref))
    except EnvcheckError as e:
        if not isinstance(e.__cause__, docker.errors.NotFound):
            raise
