"""What a command may know of the world it runs in: its streams, variables and working folder.

`envcheck.cli.main(argv, env)` hands one `Environment` to the command, which writes only to
`env.stdout`/`env.stderr`, reads `-` from `env.stdin`, takes the variables that steer the CLI
(NO_COLOR, TERM, GITHUB_*, ENVCHECK_MATRIX, ENVCHECK_HEARTBEAT_S, DOCKER_HOST, …) from `env.env`
and opens relative paths from `env.cwd`. `Environment.from_process()` is the real one; a test
builds another around `io.StringIO`s and runs a command in-process (tests/inprocess.py), as
httpie's commands take theirs.

Every child envcheck starts (the CUDA probe's, the target interpreter, the in-process smoke,
pip) runs on `env.env`, so it meets the command's CUDA_VISIBLE_DEVICES and LD_LIBRARY_PATH. NVML
alone is loaded into this process: its file is chosen under the command's ENVCHECK_DRIVER_ROOT,
but `dlopen` searches the process's own LD_LIBRARY_PATH and a library loaded stays loaded, so a
host described by a fake NVML is always a subprocess of its own.

This module is the process's edge: nothing else in envcheck reads `os.environ` or writes to
`sys.stdout`/`sys.stderr` (tests/unit/test_one_environment.py walks the source for it), but the
entry point, whose early CUDA probe gets the same `os.environ` before this module is imported; so an
injected `Environment` is honoured by every layer, the probes' children and the smoke's included.

Standard library only: `envcheck --version` pays for this module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TextIO

from envcheck.contracts.record import record

# The process's stdout and stderr (None: closed) made safe to write:
# envcheck.edges.streams.guard_stdio.
Guard = Callable[[TextIO | None, TextIO | None], tuple[TextIO, TextIO]]
PROCESS_CWD = Path(os.curdir)  # the process's folder, as the kernel resolves it (even deleted)


@record
class Environment:
    """What a command reads and writes: its streams, its variables and its folder."""

    stdin: TextIO | None  # None: closed (`envcheck doctor --facts - <&-`)
    stdout: TextIO
    stderr: TextIO
    env: Mapping[str, str]
    cwd: Path

    @classmethod
    def from_process(cls, guard: Guard) -> Environment:
        """This process's streams, guarded by `guard` (`streams.guard_stdio`: closed,
        unencodable or full stdout/stderr are never a traceback) and installed as the
        process's own, so that the interpreter's last flush meets them too; its variables and
        folder."""
        sys.stdout, sys.stderr = guard(sys.stdout, sys.stderr)
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


def home(variables: Mapping[str, str]) -> str:
    """The user's home folder: HOME of `variables`, else the password database's (as
    `os.path.expanduser("~")` does, without reading the process's variables)."""
    if variables.get("HOME"):
        return variables["HOME"]
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:  # no entry for this user (a container's arbitrary uid)
        return "/"


def isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or closed
        return False
