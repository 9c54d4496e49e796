"""The smoke's files: the workload script, and the modules that travel with it.

The workload runs where envcheck is not installed (inside the selected image, or under another
interpreter), so its own modules go with it: mounted read-only beside it in the container, copied
beside it for the in-process run. Each is placed under a name that no module Paddle imports could
have, and that an envcheck installed in that environment could not answer in its place.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "workload"
WORKLOAD = HERE / "main.py"
# (the file in envcheck, its name beside the workload): the workload imports each by that name
COMPANIONS: tuple[tuple[Path, str], ...] = tuple(
    (HERE / f"{module}.py", f"envcheck_smoke_{placed}.py")
    for module, placed in (
        ("protocol", "protocol"),
        ("classifier", "classifier"),
        ("export", "export"),
        ("libraries", "libraries"),
        ("output", "output"),
        ("training", "training"),
    )
)
