"""One pull through the engine: checks before, retries during, proof after.

Before: what the registry knows, asked through the engine (`inspect_distribution`: the daemon's
proxy, mirrors, insecure registries and the CLI's stored logins, as `docker pull` uses them) —
refuse a wrong platform, let the caller refuse a CUDA the driver cannot run, and do nothing when the
engine already has that digest. The image config (its CUDA env) is read by envcheck's own registry
client and is advisory: when that read fails, the CUDA is checked from the tag before the pull and
from the pulled image's config after it (a refused image is removed again), with a warning.
During: `docker.APIClient.pull(stream=True, decode=True)` (never the CLI), each event folded into
`PullProgress` and shown by a `PullDisplay`; transient failures (5xx, resets, timeouts) retried
with exponential backoff, then the mirror (Docker Hub ↔ Baidu) tried.
After: the engine must hold the image under the digest the registry (or the matrix pin) named —
a pull that broke halfway is never reported as pulled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from envcheck.contracts.errors import EnvcheckError
from envcheck.contracts.pull_events import PullProgress
from envcheck.contracts.record import field, record, replace
from envcheck.engine.docker_adapter import (
    PullFailed,
    inspect_distribution,
    pull_error,
    saved_login,
    translate_errors,
    translate_pull_errors,
)
from envcheck.image.checks import ImageRefused, platform_refusal
from envcheck.image.platforms import Platform, host_platform
from envcheck.image.pull_plan import ConfigSource, PullPlan, PullResult, nearest_tags
from envcheck.image.reference import Reference
from envcheck.pull.images import local_image, untag
from envcheck.registry.auth import AUTH_HOSTS_ENV
from envcheck.registry.documents import RemoteImage, env_mapping, parse_distribution
from envcheck.registry.errors import ManifestNotFound, RegistryError, RegistryUnavailable
from envcheck.registry.http.client import REQUEST_DEADLINE_S, RegistryClient
from envcheck.render.progress import PullDisplay, make_display

T = TypeVar("T")
ImageCheck = Callable[[RemoteImage], None]  # raises ImageRefused when the host cannot run it


@record
class RetryPolicy:
    """Tries per registry, for the engine's registry read and for the pull each; delays 1, 2, 4… s.
    `request_deadline`: how long one registry request (the engine's read, or one of envcheck's
    own advisory reads) may take in all (a trickle is a failure)."""

    attempts: int = 4
    base: float = 1.0
    cap: float = 8.0
    request_deadline: float = REQUEST_DEADLINE_S

    def delay(self, attempt: int) -> float:
        return min(self.cap, self.base * 2.0 ** (attempt - 1))


DEFAULT_RETRY = RetryPolicy()


# -- pulling ----------------------------------------------------------------------------------------
@record(frozen=False)
class _Run:
    client: Any
    display: PullDisplay
    check: ImageCheck | None
    retry: RetryPolicy
    platform: Platform
    sleep: Callable[[float], None]
    trusted_realms: str  # ENVCHECK_AUTH_HOSTS of the command's variables
    started: float = field(default_factory=time.monotonic)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    attempts: int = 0
    tries: int = 0  # every try of a registry read or pull, the first ones included
    waits: list[float] = field(default_factory=list)  # each wait between tries, as measured


def pull_image(
    plan: PullPlan,
    *,
    client: Any,
    display: PullDisplay | None = None,
    check: ImageCheck | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    platform: Platform | None = None,
    sleep: Callable[[float], None] = time.sleep,
    variables: Mapping[str, str] = MappingProxyType({}),
) -> PullResult:
    """Pull `plan.requested` (or a mirror) with `client` (a docker.DockerClient); `variables`:
    the command's (ENVCHECK_AUTH_HOSTS).

    Raises InvalidReference/ManifestNotFound (2), ImageRefused (1), RegistryAuthRequired,
    RegistryUnavailable, PullFailed and the engine's other EnvironmentProblems (4)."""
    run = _Run(
        client,
        display or make_display("none"),
        check,
        retry,
        platform or host_platform(),
        sleep,
        variables.get(AUTH_HOSTS_ENV, ""),
    )
    given_up: list[tuple[Reference, EnvcheckError]] = []
    try:
        for index, target in enumerate(plan.targets):
            try:
                return _pull_from(target, plan, run, mirror=index > 0)
            except (RegistryUnavailable, PullFailed, ManifestNotFound) as e:
                if isinstance(e, PullFailed) and not e.transient:
                    raise
                given_up.append((target, e))
                run.failures.append(f"{target.registry}: {e.message}")
                if index + 1 < len(plan.targets):
                    run.display.note(
                        f"{target.registry} failed ({e.message}); trying the mirror "
                        f"{plan.targets[index + 1].registry}"
                    )
    finally:
        run.display.stop()
    raise _final_error(given_up, plan, run)


def _pull_from(target: Reference, plan: PullPlan, run: _Run, *, mirror: bool) -> PullResult:
    remote, config_read = _inspect(target, plan, run)
    want = plan.pinned_digest or target.digest or remote.digest
    image_id = local_image(run.client, target, want)
    if image_id:
        config = _checked_locally(run, remote, image_id, config_read, pulled=())
        return _result(target, plan, run, remote, want, image_id, "present", mirror, config)
    source = target.with_digest(want) if plan.pinned_digest or target.digest else target
    progress = _retrying(lambda: _stream(run, source, remote), f"pull from {target.registry}", run)
    digest = want if source.digest else (progress.digest or want)
    image_id = local_image(run.client, target, digest)
    if not image_id:
        # The stream ended without an error event, yet no image carries the digest: a broken pull.
        raise PullFailed(
            f"the engine finished pulling {target} but holds no image with digest {digest}",
            hint="run the pull again; if it persists, check `docker system df` and the engine's log",
        )
    made = [source.with_digest(digest)]
    if source.digest and target.tag:
        with translate_errors(f"tagging {target}"):
            # so the tag finds the pinned image
            run.client.api.tag(image_id, target.name, target.tag)
    if target.tag:
        made.append(target.with_tag(target.tag))
    config = _checked_locally(run, remote, image_id, config_read, pulled=tuple(made))
    return replace(
        _result(target, plan, run, remote, digest, image_id, "pulled", mirror, config),
        downloaded=progress.downloaded,
    )


def _inspect(target: Reference, plan: PullPlan, run: _Run) -> tuple[RemoteImage, bool]:
    """What the engine says of `target` (the pin's digest when the tag moved on), its platform
    checked, its config read (advisory) and the caller's check run on it; and whether the config
    could be read."""
    remote = _engine_inspect(target, run)
    if plan.pinned_digest and remote.digest != plan.pinned_digest:
        run.display.note(
            f"{target} now points at {remote.digest}; pulling the digest the matrix pins, "
            f"{plan.pinned_digest}"
        )
        remote = replace(
            _engine_inspect(target.with_digest(plan.pinned_digest), run), reference=target
        )
    remote, config_read = _read_config(target, remote, run)
    if run.check is not None:
        run.check(remote)  # without the config: the tag's CUDA now, the config's after the pull
    return remote, config_read


def _engine_inspect(target: Reference, run: _Run) -> RemoteImage:
    def ask() -> RemoteImage:
        answer = inspect_distribution(
            run.client, str(target), target.registry, deadline=run.retry.request_deadline
        )
        return parse_distribution(answer, target)

    remote = _retrying(ask, f"reading {target.registry}", run)
    refusal = platform_refusal(remote.platforms, run.platform)
    if refusal:
        raise ImageRefused(
            f"{target}: {refusal}", hint="choose a tag built for this machine's platform"
        )
    return remote


def _read_config(target: Reference, remote: RemoteImage, run: _Run) -> tuple[RemoteImage, bool]:
    """Size, layers and config env of the digest the engine named, read by envcheck's own client
    (the engine does not tell them). Advisory: one try; a failure is a warning, never the end."""
    registry = RegistryClient.for_reference(
        target,
        credentials=saved_login(target.registry),
        deadline=run.retry.request_deadline,
        trusted_realms=run.trusted_realms,
    )
    try:
        read = registry.inspect(target.with_digest(remote.digest), run.platform)
    except (RegistryError, ManifestNotFound) as e:
        run.warnings.append(
            f"envcheck could not read the image config from {target.registry} itself ({e.message}); "
            "the engine pulls it, and its CUDA is checked from the tag before the pull and from "
            "the pulled image's config after it"
        )
        return remote, False
    return replace(
        remote, size=read.size, layers=read.layers, env=read.env, labels=read.labels
    ), True


def _checked_locally(
    run: _Run, remote: RemoteImage, image_id: str, config_read: bool, pulled: tuple[Reference, ...]
) -> ConfigSource | None:
    """Where the config's env was judged from. When the registry's could not be read, the engine's
    copy is: a refusal then removes the names this pull gave the image (`pulled`), so a refused
    image is not left behind; an image that was already present stays."""
    if config_read:
        return "registry"
    if run.check is None:
        return None
    with translate_errors(f"inspecting {remote.reference}"):
        config = run.client.api.inspect_image(image_id).get("Config") or {}
    env = config.get("Env") if isinstance(config, dict) else None
    local = replace(remote, env=env_mapping([e for e in env or [] if isinstance(e, str)]))
    try:
        run.check(local)
    except ImageRefused as e:
        for ref in pulled:
            untag(run.client, ref)
        whose = "the pulled image's config, removed again" if pulled else "the local image's config"
        raise ImageRefused(
            f"{e.message} (read from {whose}: the registry's could not be read)", hint=e.hint
        ) from e
    return "local image"


def _stream(run: _Run, source: Reference, remote: RemoteImage) -> PullProgress:
    run.attempts += 1
    progress = PullProgress(dict(remote.layers))
    run.display.start(str(source), progress)
    events: Iterator[dict[str, Any]] | None = None
    with translate_pull_errors(str(source), source.registry):
        events = run.client.api.pull(source.name, tag=source.reference, stream=True, decode=True)
        try:
            for event in events:
                run.display.update(progress, progress.apply(event))
                if progress.error:
                    break
        finally:
            close = getattr(events, "close", None)
            if close:
                close()  # on Ctrl-C too: drop the stream so the engine cancels the pull
    if progress.error:
        raise pull_error(progress.error, ref=str(source), registry=source.registry)
    for layer in progress.finish():  # no bar left "waiting" on a finished pull
        run.display.update(progress, layer)
    return progress


def _retrying(action: Callable[[], T], what: str, run: _Run) -> T:
    for attempt in range(1, run.retry.attempts + 1):
        run.tries += 1
        try:
            return action()
        except (RegistryUnavailable, PullFailed) as e:
            if not e.transient or not getattr(e, "retry", True) or attempt == run.retry.attempts:
                raise
            delay = run.retry.delay(attempt)
            run.failures.append(f"{what}, try {attempt}: {e.message}")
            run.display.note(
                f"{what} failed ({e.message}); try {attempt + 1}/{run.retry.attempts} "
                f"in {delay:g} s"
            )
            slept = time.monotonic()
            run.sleep(delay)
            run.waits.append(time.monotonic() - slept)
    raise AssertionError("unreachable")  # pragma: no cover


def _result(
    target: Reference,
    plan: PullPlan,
    run: _Run,
    remote: RemoteImage,
    digest: str,
    image_id: str,
    outcome: Literal["pulled", "present"],
    mirror: bool,
    config_source: ConfigSource | None,
) -> PullResult:
    return PullResult(
        reference=str(target),
        requested=str(plan.requested),
        registry=target.registry,
        digest=digest,
        image_id=image_id,
        size=remote.size,
        seconds=time.monotonic() - run.started,
        outcome=outcome,
        attempts=run.attempts,
        platform=str(run.platform),
        mirror=mirror,
        failures=tuple(run.failures),
        config_source=config_source,
        warnings=tuple(run.warnings),
    )


def _final_error(
    given_up: list[tuple[Reference, EnvcheckError]], plan: PullPlan, run: _Run
) -> EnvcheckError:
    first = given_up[0][1]  # the first registry's error is the one to show
    if isinstance(first, ManifestNotFound):
        # Said once: the registry's own 404 words repeat the reference twice over. The tags
        # offered are the registry's (what it holds), else the matrix's for that repository.
        ref = plan.requested
        near = _registry_tags(ref, run) or nearest_tags(ref.tag, plan.known_tags)
        where = f"{ref.registry}/{ref.repository}"
        hint = (
            f"the nearest tags in {where}: {', '.join(near)}" if near else "check the tag"
        ) + "; `envcheck pull-image --dry-run` shows the tag chosen for this host"
        return ManifestNotFound(f"tag not found: {ref}", hint=hint)
    tried = (
        "; ".join(f"{ref.registry}: {e.message}" for ref, e in given_up)
        if len(given_up) > 1
        else first.message
    )
    return type(first)(
        f"could not pull {plan.requested}: {tried}",
        hint=first.hint or f"check the network and the registry; {_tried(run)}",
    )


def _tried(run: _Run) -> str:
    """What envcheck tried, as it happened: how many tries and the waits between them, measured
    (never the policy's promise: an error waiting cannot help is not retried)."""
    if not run.waits:
        return (
            f"envcheck tried {run.tries} time(s) without retrying: waiting cannot help this error"
        )
    return (
        f"envcheck tried {run.tries} times, waiting {sum(run.waits):.1f} s in all between tries "
        f"(backoff: {', '.join(f'{w:.2g}' for w in run.waits)} s)"
    )


def _registry_tags(ref: Reference, run: _Run) -> list[str]:
    try:
        client = RegistryClient.for_reference(
            ref, timeout=5, deadline=10, trusted_realms=run.trusted_realms
        )
        tags = client.tags(ref.repository)
    except EnvcheckError:
        return []
    return nearest_tags(ref.tag, tags)
