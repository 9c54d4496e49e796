"""Pull progress displays (httpie style: one interface, several implementations).

- `RichDisplay`: a live panel on a terminal — one bar per layer (download, then extraction) and an
  overall bar with bytes, speed and ETA. `rich` is imported only when this display is made.
- `PlainDisplay`: CI logs — a line when a layer finishes a stage, an overall line every few seconds,
  each starting `envcheck: ` as every line envcheck writes on stderr does.
- `NullDisplay`: `--quiet`.
All write to stderr by default: stdout belongs to the result (`--json`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import IO, Any, ClassVar, Literal, Protocol

from envcheck.contracts.command_env import isatty
from envcheck.contracts.pull_events import LayerProgress, PullProgress
from envcheck.edges import activity
from envcheck.render.sanitize import rich_safe, visible

DisplayKind = Literal["auto", "rich", "plain", "none"]
LINE_PREFIX = "envcheck: "


class PullDisplay(Protocol):
    def start(self, reference: str, progress: PullProgress) -> None: ...

    def update(self, progress: PullProgress, layer: LayerProgress | None) -> None: ...

    def note(self, text: str) -> None: ...

    def stop(self) -> None: ...


def make_display(
    kind: DisplayKind = "auto",
    stream: IO[str] | None = None,
    variables: Mapping[str, str] = MappingProxyType({}),
) -> PullDisplay:
    """`auto`: rich on a terminal, plain lines otherwise (CI logs) and under NO_COLOR of the
    command's `variables` (rich's bars are escape sequences); on `stream`, the command's stderr
    (None: nowhere to show it)."""
    if kind == "none" or stream is None:
        return NullDisplay()
    if kind == "auto":
        kind = "rich" if isatty(stream) and "NO_COLOR" not in variables else "plain"
    return RichDisplay(stream) if kind == "rich" else PlainDisplay(stream)


class NullDisplay:
    def start(self, reference: str, progress: PullProgress) -> None:
        pass

    def update(self, progress: PullProgress, layer: LayerProgress | None) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass


class PlainDisplay:
    """Lines a CI log can keep: milestones per layer, the overall state every `interval` s."""

    # What each phase implies was reached: the engine sends progress to a slow watcher as "latest
    # state only" (moby distribution/xfer), so `Download complete` can be skipped for a layer
    # whose extraction starts at once — reaching `extracting` still means it was downloaded.
    _MILESTONES: ClassVar[dict[str, tuple[str, ...]]] = {
        "downloaded": ("downloaded",),
        "extracting": ("downloaded",),
        "complete": ("downloaded", "extracted"),
        "exists": ("already present",),
    }

    def __init__(
        self, stream: IO[str], interval: float = 5.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stream, self.interval, self.clock = stream, interval, clock
        self._said: dict[str, list[str]] = {}
        self._started = self._last = 0.0
        self._progress: PullProgress | None = None

    def start(self, reference: str, progress: PullProgress) -> None:
        self._started = self._last = self.clock()
        self._progress = progress
        total = progress.total_work // 2
        size = f", {human_bytes(total)} to download" if total else ""
        self._line(f"pulling {reference}: {len(progress.layers)} layer(s){size}")

    def update(self, progress: PullProgress, layer: LayerProgress | None) -> None:
        if layer is not None:
            said = self._said.setdefault(layer.id, [])
            for milestone in self._MILESTONES.get(layer.phase, ()):
                if milestone not in said:
                    said.append(milestone)
                    self._line(f"  layer {layer.id}: {milestone} ({human_bytes(layer.size)})")
            if layer.note and layer.note not in said:
                said.append(layer.note)
                self._line(f"  layer {layer.id}: {layer.note}")
        now = self.clock()
        if now - self._last >= self.interval:
            self._last = now
            self._line("  " + overall_text(progress, now - self._started))

    def note(self, text: str) -> None:
        self._line(text)

    def stop(self) -> None:
        if self._progress is not None:  # the last state, whatever the interval
            self._line("  " + overall_text(self._progress, self.clock() - self._started))
            self._progress = None
        self.stream.flush()

    def _line(self, text: str) -> None:
        # layer ids and notes are the engine's
        print(f"{LINE_PREFIX}{visible(text)}", file=self.stream, flush=True)


class RichDisplay:
    """A live panel: per-layer bars above an overall bar (bytes, speed, ETA)."""

    def __init__(self, stream: IO[str], console: Any = None) -> None:
        from rich.console import Console, Group
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.console = console or Console(file=stream)
        self.layers = Progress(
            TextColumn("  {task.description}"),
            BarColumn(bar_width=30),
            TextColumn("{task.fields[detail]}"),
            console=self.console,
        )
        self.overall = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=30),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.live = Live(
            Group(self.layers, self.overall),
            console=self.console,
            refresh_per_second=8,
            transient=False,
        )
        self._tasks: dict[str, Any] = {}
        self._overall: Any = None

    def start(self, reference: str, progress: PullProgress) -> None:
        # Called again for each retry: start the bars over.
        for task in list(self.layers.task_ids) + list(self.overall.task_ids):
            (self.layers if task in self.layers.task_ids else self.overall).remove_task(task)
        self._tasks.clear()
        activity.step_aside()  # the activity line yields the terminal to the bars until stop()
        self.console.print(f"pulling [bold]{rich_safe(reference)}[/]", highlight=False)
        for layer in progress.layers.values():
            self._task(layer)
        self._overall = self.overall.add_task("overall", total=(progress.total_work // 2) or None)
        self.live.start()

    def update(self, progress: PullProgress, layer: LayerProgress | None) -> None:
        if layer is not None:
            self.layers.update(
                self._task(layer),
                total=2 * (layer.size or 0) or None,
                completed=layer.work_done,
                description=_layer_label(layer),
                detail=_layer_detail(layer),
            )
        if self._overall is not None:
            self.overall.update(
                self._overall,
                total=(progress.total_work // 2) or None,
                completed=progress.work_done // 2,
            )

    def note(self, text: str) -> None:
        # soft_wrap: one line however long (rich folded an engine's error mid-word at the
        # terminal's width); the terminal wraps it, a copy of it stays whole
        if self.live.is_started:  # above the bars, which rich redraws below it
            self.console.print(visible(text), markup=False, highlight=False, soft_wrap=True)
            return
        # Before the bars (a registry that failed before any layer came): the activity's live
        # line is on the terminal, and a print from another console would land inside it.
        activity.step_aside()
        try:
            self.console.print(visible(text), markup=False, highlight=False, soft_wrap=True)
        finally:
            activity.step_back()

    def stop(self) -> None:
        # Always called (finally): leaves the terminal sane on errors and Ctrl-C.
        self.live.stop()
        activity.step_back()

    def _task(self, layer: LayerProgress) -> Any:
        if layer.id not in self._tasks:
            self._tasks[layer.id] = self.layers.add_task(
                _layer_label(layer),
                total=2 * (layer.size or 0) or None,
                detail=_layer_detail(layer),
            )
        return self._tasks[layer.id]


# -- shared text ------------------------------------------------------------------------------------
def overall_text(progress: PullProgress, elapsed: float) -> str:
    total = progress.total_work
    done = progress.work_done
    if not total:
        return f"overall: {progress.events} events, {elapsed:.0f} s"
    rate = done / 2 / elapsed if elapsed > 0 else 0.0
    eta = f", ETA {(total - done) / 2 / rate:.0f} s" if rate > 0 and done < total else ""
    return (
        f"overall {100 * done / total:.0f}% ({human_bytes(done // 2)} of {human_bytes(total // 2)}, "
        f"{human_bytes(int(rate))}/s{eta})"
    )


def _layer_label(layer: LayerProgress) -> str:
    words = {
        "waiting": "waiting",
        "downloading": "downloading",
        "verifying": "verifying",
        "downloaded": "downloaded",
        "extracting": "extracting",
        "complete": "done",
        "exists": "already present",
    }
    # a rich Progress description is markup: the engine's id and note must not be read as such
    return rich_safe(f"{layer.id} {layer.note or words[layer.phase]:<15}")


def _layer_detail(layer: LayerProgress) -> str:
    if layer.phase == "downloading":
        return f"{human_bytes(layer.downloaded)}/{human_bytes(layer.size)}"
    if layer.phase == "extracting":
        return f"{human_bytes(layer.extracted)}/{human_bytes(layer.size)}"
    return human_bytes(layer.size)


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"  # pragma: no cover


def result_text(result: Any) -> str:
    """One line for a `PullResult` (`envcheck.pull`): what, which digest, from where, how long."""
    where = f"from {result.registry}" + (" (mirror)" if result.mirror else "")
    if result.outcome == "present":
        return f"{result.reference} is already present with digest {result.digest}: nothing to pull"
    retried = f", after {len(result.failures)} failure(s)" if result.failures else ""
    fetched = (
        f"{human_bytes(result.downloaded)} downloaded"
        if result.downloaded
        else "every layer was already present"
    )
    of = f" of {human_bytes(result.size)}" if result.downloaded and result.size else ""
    return f"pulled {result.reference} {where}: {result.digest}, {fetched}{of} in {result.seconds:.1f} s{retried}"
