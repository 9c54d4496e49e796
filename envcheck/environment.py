"""What a command may know of the world it runs in: its streams, variables and working folder.

`envcheck.cli.main(argv, env)` hands one `Environment` to the command, which writes only to
`env.stdout`/`env.stderr`, reads `-` from `env.stdin`, takes the variables that steer the CLI
(NO_COLOR, TERM, GITHUB_*, ENVCHECK_MATRIX, ENVCHECK_HEARTBEAT_S, DOCKER_HOST, …) from `env.env`
and opens relative paths from `env.cwd`. `Environment.from_process()` is the real one; a test
builds another around `io.StringIO`s and runs a command in-process (tests/inprocess.py), as
httpie's commands take theirs.

The probes that load the NVIDIA libraries (NVML in this process, the CUDA child) still meet the
driver the process meets: `dlopen` reads the process's LD_LIBRARY_PATH and ENVCHECK_DRIVER_ROOT,
and a library loaded into this process stays loaded. A host described by a fake driver is
therefore always a subprocess of its own.

Standard library only: `envcheck --version` pays for this module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TextIO

PROCESS_CWD = Path(os.curdir)  # the process's folder, as the kernel resolves it (even deleted)


@dataclass(frozen=True)
class Environment:
    stdin: TextIO | None  # None: closed (`envcheck doctor --facts - <&-`)
    stdout: TextIO
    stderr: TextIO
    env: Mapping[str, str]
    cwd: Path

    @classmethod
    def from_process(cls) -> Environment:
        """This process's streams (after `streams.guard_stdio`), variables and folder."""
        return cls(sys.stdin, sys.stdout, sys.stderr, os.environ, PROCESS_CWD)

    def path(self, name: str) -> str:
        """A path the user named, to open from this process. Kept as written (messages name it
        so) when it is absolute, `-`, or the folder is the process's own; else under `cwd`."""
        if name == "-" or os.path.isabs(name) or self.cwd == PROCESS_CWD:
            return name
        return str(self.cwd / name)

    def color(self) -> bool:
        """Colour on stdout: a terminal, and no NO_COLOR (https://no-color.org)."""
        return "NO_COLOR" not in self.env and isatty(self.stdout)

    def live(self, stream: TextIO) -> bool:
        """A live display on `stream`: a terminal whose TERM can redraw a line."""
        return isatty(stream) and self.env.get("TERM") != "dumb"


def isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or closed
        return False
