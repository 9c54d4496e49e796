"""The displays of `envcheck.edges.activity`: what envcheck is doing, on stderr, while it is slow.

- `RichActivity` (a terminal): one live line — spinner, the phase, its latest detail (the workload's
  own log line: Paddle imported, `step 31/60, 95.2 steps/s`…) and the seconds it has taken —
  redrawn four times a second and gone when the work is done: the report is the screen's (a
  finished phase left a `✓` line, ten of them above a healthy report; a phase that fell back is
  no success to tick). Only a failed phase stays, marked `✗` with why.
- `BareActivity` (a terminal under NO_COLOR): the same line without a single escape sequence,
  redrawn with a carriage return and cleared with spaces.
- `PlainActivity` (a CI log, any stderr that is not a terminal): one line per phase and per
  detail, and `still <phase> (N s)` when nothing was said for `heartbeat` seconds
  (`ENVCHECK_HEARTBEAT_S`, default 10), so a hung smoke never looks like a dead job.
- `activity.NULL`: `--quiet`.
Outside text (the workload's lines) goes through the sanitiser and is never read as markup.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from envcheck.contracts.errors import UsageError
from envcheck.edges.activity import NULL, ActivityDisplay
from envcheck.render.sanitize import visible

if TYPE_CHECKING:  # the pull's progress bars are not the doctor's: only the name of a kind
    from envcheck.contracts.command_env import Environment
    from envcheck.render.progress import DisplayKind

HEARTBEAT_ENV = "ENVCHECK_HEARTBEAT_S"
HEARTBEAT_S = 10.0
MAX_DETAIL = 160  # a workload line can be long (every library path it mapped)


def make_activity_display(kind: DisplayKind, env: Environment) -> ActivityDisplay:
    """On `env.stderr`. `auto`: live on a terminal, plain lines otherwise; `none`: nothing
    (--quiet)."""
    if kind == "none":
        return NULL
    if kind == "auto":
        kind = "rich" if env.live(env.stderr) else "plain"
    if kind == "rich":
        return BareActivity(env.stderr) if "NO_COLOR" in env.env else RichActivity(env.stderr)
    return PlainActivity(env.stderr, heartbeat_interval(env.env))


def heartbeat_interval(environ: Mapping[str, str]) -> float:
    """`ENVCHECK_HEARTBEAT_S` of the command's variables (seconds between heartbeat lines in a
    log), else 10."""
    text = environ.get(HEARTBEAT_ENV)
    if text is None:
        return HEARTBEAT_S
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.05 <= value <= 3600:
        raise UsageError(
            f"{HEARTBEAT_ENV}={visible(text)[:40]!r}: not a number of seconds",
            hint=f"give {HEARTBEAT_ENV} seconds between 0.05 and 3600, or unset it",
        )
    return value


def _short(text: str) -> str:
    text = visible(text)
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


class PlainActivity:
    """Lines a CI log keeps: `envcheck: <phase>`, `envcheck:   <detail>`, and heartbeats."""

    def __init__(
        self,
        stream: IO[str],
        heartbeat: float = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.heartbeat, self.clock = stream, heartbeat, clock
        self._lock = threading.Lock()
        self._phase = ""
        self._phase_started = self._last = clock()
        self._paused = False
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def phase(self, text: str) -> None:
        with self._lock:
            self._phase, self._phase_started = _short(text), self.clock()
        self._line(f"envcheck: {self._phase}")
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._beat, name="envcheck-heartbeat", daemon=True
            )
            self._thread.start()

    def detail(self, text: str) -> None:
        self._line(f"envcheck:   {_short(text)}")

    def failed(self, why: str) -> None:
        self._line(  # why whole: an engine's error cut at 160 characters hid the registry's end
            f"envcheck: {self._phase}: failed: {visible(why)}"
            if self._phase
            else f"envcheck: {visible(why)}"
        )

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _beat(self) -> None:
        while not self._stopped.wait(min(1.0, self.heartbeat / 4)):
            now = self.clock()
            if not self._paused and now - self._last >= self.heartbeat:
                self._line(f"envcheck: still {self._phase} ({now - self._phase_started:.0f} s)")

    def _line(self, text: str) -> None:
        with self._lock:
            self._last = self.clock()
            try:
                print(text, file=self.stream, flush=True)
            except (OSError, ValueError):
                pass  # stderr closed or full: progress is not worth failing the run for


class RichActivity:
    """One live line on the terminal; finished phases stay above it with their time."""

    def __init__(self, stream: IO[str], clock: Callable[[], float] = time.monotonic) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        self.clock = clock
        self.console = Console(file=stream, highlight=False)
        self._spinner = Spinner("dots")
        self._phase = ""
        self._detail = ""
        self._since = clock()
        self._running = False
        self.live = Live(
            self,
            console=self.console,
            refresh_per_second=4,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=True,
        )

    def __rich__(self) -> Any:
        from rich.text import Text

        text = Text(self._phase, style="bold")
        if self._detail:
            text.append(f" — {self._detail}")
        text.append(f" ({self.clock() - self._since:.0f} s)", style="dim")
        self._spinner.text = text
        return self._spinner

    def phase(self, text: str) -> None:
        self._phase, self._detail, self._since = _short(text), "", self.clock()
        if not self._running:
            self.resume()
        else:  # drawn as it begins: a phase shorter than a refresh tick is still seen once
            self.live.refresh()

    def detail(self, text: str) -> None:
        self._detail = _short(text)

    def failed(self, why: str) -> None:
        """`✗ <phase> (2.1 s): <why>` above the live line; the phase is over, never marked ✓."""
        self.console.print(
            f"[red]✗[/] {_escaped(self._phase)} [dim]({self.clock() - self._since:.1f} s)[/]: "
            f"{_escaped(visible(why))}",
            soft_wrap=True,
        )
        self._phase, self._detail = "", ""
        self.pause()

    def pause(self) -> None:
        if self._running:
            self._running = False
            self.live.stop()

    def resume(self) -> None:
        if not self._running and self._phase:
            self._running = True
            self.live.start()

    def stop(self) -> None:
        self.pause()


class BareActivity:
    """The live line without escape sequences (NO_COLOR: https://no-color.org asks for no colour;
    a terminal that shows raw `ESC[2m` asked for less still): `\r`, the line, spaces over what
    the last one left; redrawn each second so that the seconds count, cleared at the end."""

    def __init__(self, stream: IO[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.clock = stream, clock
        self._lock = threading.Lock()
        self._phase = self._detail = ""
        self._since = clock()
        self._shown = 0  # the characters the line now on the screen has
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def phase(self, text: str) -> None:
        self._phase, self._detail, self._since = _short(text), "", self.clock()
        self.resume()

    def detail(self, text: str) -> None:
        self._detail = _short(text)
        self._draw()

    def failed(self, why: str) -> None:
        """`✗ <phase> (2.1 s): <why>` on a line that stays."""
        line = f"✗ {self._phase} ({self.clock() - self._since:.1f} s): {visible(why)}"
        self._phase = self._detail = ""
        self._write(f"\r{' ' * self._shown}\r{line}\n", 0)
        self.pause()

    def pause(self) -> None:
        self._stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._thread = None
        self._write(f"\r{' ' * self._shown}\r", 0)

    def resume(self) -> None:
        self._draw()
        if self._thread is None and self._phase:
            self._stopped = threading.Event()
            self._thread = threading.Thread(target=self._tick, name="envcheck-line", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self.pause()

    def _tick(self) -> None:
        stopped = self._stopped
        while not stopped.wait(1.0):
            self._draw()

    def _draw(self) -> None:
        if not self._phase:
            return
        text = self._phase + (f" — {self._detail}" if self._detail else "")
        text += f" ({self.clock() - self._since:.0f} s)"
        text = text[: self._width() - 1]
        self._write(f"\r{text}{' ' * max(0, self._shown - len(text))}", len(text))

    def _width(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return 80

    def _write(self, text: str, shown: int) -> None:
        with self._lock:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):
                return  # stderr closed or full: progress is not worth failing the run for
            self._shown = shown


def _escaped(text: str) -> str:
    from envcheck.render.sanitize import rich_safe

    return rich_safe(text)
