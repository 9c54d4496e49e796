"""The engine's pull stream, folded into per-layer progress; and what its error words mean.

`POST /images/create` streams JSON events (docker.APIClient.pull(stream=True, decode=True)):
`{"id": "<12 hex of the layer digest>", "status": "Downloading", "progressDetail":
{"current": n, "total": m}}`, then `Verifying Checksum`, `Download complete`, `Extracting` (current
and total count *compressed* bytes), `Pull complete` — or `Already exists` for a layer the engine
has; then `Digest: sha256:…` and `Status: …` without an id. A failure mid-stream is an event with
`error`/`errorDetail` (the HTTP status stays 200). Recorded for real in
docs/facts/docker-offline.md and tests/integration/test_pull.py.
Pure: no I/O, so the rules are tested on recorded events. A contract: the pull folds the events,
the engine adapter sorts its errors with `classify_engine_error`, the progress display reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from envcheck.contracts.record import record
from envcheck.digest import short_id

Phase = Literal[
    "waiting", "downloading", "verifying", "downloaded", "extracting", "complete", "exists"
]
DONE_PHASES = ("complete", "exists")

_PHASES: dict[str, Phase] = {
    "Pulling fs layer": "waiting",
    "Waiting": "waiting",
    "Downloading": "downloading",
    "Verifying Checksum": "verifying",
    "Download complete": "downloaded",
    "Extracting": "extracting",
    "Pull complete": "complete",
    "Already exists": "exists",
}


@record(frozen=False)
class LayerProgress:
    id: str  # the engine's short id: the first 12 hex of the compressed layer's digest
    size: int | None = None  # compressed bytes (from the registry's manifest, else the engine)
    phase: Phase = "waiting"
    downloaded: int = 0
    extracted: int = 0
    note: str | None = None  # "Retrying in 5 seconds": the engine's own per-layer retry
    fetched: bool = False  # the engine downloaded it in this pull (not `Already exists`)

    @property
    def done(self) -> bool:
        return self.phase in DONE_PHASES

    @property
    def work_done(self) -> int:
        """Bytes of work: download and extraction each count the compressed size once."""
        if self.done:
            return 2 * (self.size or 0)
        if self.phase in ("downloaded", "verifying"):
            return self.size or self.downloaded
        return self.downloaded + self.extracted


class PullProgress:
    """All layers of one pull, updated event by event."""

    def __init__(self, layer_sizes: Mapping[str, int] | None = None) -> None:
        # Sizes keyed by the engine's short id, known before the pull from the registry manifest,
        # so the overall bar has its total from the first event.
        self.layers: dict[str, LayerProgress] = {
            short_id(d): LayerProgress(short_id(d), size) for d, size in (layer_sizes or {}).items()
        }
        self.digest: str | None = None
        self.status: str | None = None
        self.error: str | None = None
        self.events = 0

    @property
    def total_work(self) -> int:
        """Bytes of work still to be done by this pull: layers the engine already has cost none
        (counting them made a pull of present layers read "268.8 MB in 1.0 s")."""
        return 2 * sum(layer.size or 0 for layer in self._to_fetch())

    @property
    def work_done(self) -> int:
        return sum(layer.work_done for layer in self._to_fetch())

    @property
    def downloaded(self) -> int:
        """Compressed bytes this pull downloaded."""
        return sum(
            layer.size or layer.downloaded for layer in self.layers.values() if layer.fetched
        )

    def _to_fetch(self) -> list[LayerProgress]:
        return [layer for layer in self.layers.values() if layer.phase != "exists"]

    def finish(self) -> list[LayerProgress]:
        """The stream ended without an error: a layer the engine never mentioned was one it had
        (it reports each layer it downloads), a layer it fetched is in place. Returns the layers
        this changed, so no bar is left "waiting" on a finished pull."""
        changed = []
        for layer in self.layers.values():
            if not layer.done:
                layer.phase = "complete" if layer.fetched else "exists"
                layer.note = None
                if layer.fetched and layer.size:
                    layer.downloaded = layer.extracted = layer.size
                changed.append(layer)
        return changed

    def apply(self, event: Mapping[str, Any]) -> LayerProgress | None:
        """Fold one event in; return the layer it changed, if any."""
        self.events += 1
        if not isinstance(event, Mapping):  # `[1]`, `"x"`: not an event; the engine's, not ours
            return None
        if event.get("error") or event.get("errorDetail"):
            detail = event.get("errorDetail")
            message = detail.get("message") if isinstance(detail, Mapping) else None
            self.error = str(event.get("error") or message or "unknown error")
            return None
        status = str(event.get("status") or "")
        if status.startswith("Digest: "):
            self.digest = status.removeprefix("Digest: ").strip()
            return None
        if status.startswith("Status: ") or "Image is up to date" in status:
            self.status = status.removeprefix("Status: ").strip()
            return None
        layer_id = event.get("id")
        phase = _PHASES.get(status)
        if not layer_id or (phase is None and not status.startswith("Retrying")):
            return None  # "Pulling from …" (id = the tag) and unknown words
        detail = event.get("progressDetail")
        return self._update(
            str(layer_id), status, phase, detail if isinstance(detail, Mapping) else {}
        )

    def _update(
        self, layer_id: str, status: str, phase: Phase | None, detail: Mapping[str, Any]
    ) -> LayerProgress:
        layer = self.layers.setdefault(layer_id, LayerProgress(layer_id))
        if phase is None:  # "Retrying in N seconds": the engine retries this layer itself
            layer.note, layer.phase, layer.downloaded = status, "waiting", 0
            return layer
        layer.phase, layer.note = phase, None
        layer.fetched = layer.fetched or phase not in ("waiting", "exists")
        total = detail.get("total")
        if isinstance(total, int) and total > 0 and not layer.size:
            layer.size = total
        current = detail.get("current")
        if isinstance(current, int):
            if phase == "downloading":
                layer.downloaded = current
            elif phase == "extracting":
                layer.extracted = current
        if phase in ("downloaded", "extracting") and layer.size:
            layer.downloaded = layer.size
        if layer.done and layer.size:
            layer.downloaded = layer.extracted = layer.size
        return layer


# -- what the engine's error words mean ----------------------------------------------------------
ErrorKind = Literal["no-space", "auth", "platform", "not-found", "transient", "other"]

# Checked in this order: "no space left" can come with a 500; "denied" before "not found".
_KINDS: tuple[tuple[ErrorKind, tuple[str, ...]], ...] = (
    ("no-space", ("no space left on device",)),
    (
        "auth",
        (
            "unauthorized",
            "authentication required",
            "access denied",
            "denied:",
            "no basic auth credentials",
            "401 unauthorized",
            "403 forbidden",
            "requested access to the resource is denied",
        ),
    ),
    ("platform", ("no matching manifest for",)),
    ("not-found", ("manifest unknown", "not found", "name unknown", "repository does not exist")),
    (
        "transient",
        (
            "connection refused",
            "connection reset",
            "eof",
            "timeout",
            "timed out",
            "tls handshake",
            "500 internal server error",
            "502 bad gateway",
            "503 service unavailable",
            "504 gateway",
            "status: 500",
            "status: 502",
            "status: 503",
            "status: 504",
            "toomanyrequests",
            "429",
            "no such host",
            "network is unreachable",
            "broken pipe",
            "context deadline exceeded",
            "temporary failure",
            "server misbehaving",
            "unexpected http status: 5",
        ),
    ),
)


def classify_engine_error(text: str) -> ErrorKind:
    """Sort an engine error message into what envcheck does next (retry? which screen?)."""
    lowered = text.lower()
    for kind, needles in _KINDS:
        if any(n in lowered for n in needles):
            return kind
    return "other"
