"""The engine's pull stream, recorded from the real engine (Docker 20.10), for the tests that fold
it into progress (tests/unit/test_pull_events.py) and draw it (tests/unit/test_progress.py)."""

from __future__ import annotations

import json
from typing import Any

from tests.paths import DATA

# A 4-layer pull of envcheck-test/busybox:layers, one layer already present (Downloading and
# Extracting events thinned to two per layer).
EVENTS: list[dict[str, Any]] = json.loads((DATA / "pull_events_busybox_layers.json").read_text())
DIGEST = "sha256:3de01dcdf677b726c5d1fb71e9ac36aad0e9b38e873970aa5bb26a7107ec8bab"
