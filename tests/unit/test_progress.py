"""The pull displays, fed the engine's recorded events."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from envcheck.contracts.pull_events import PullProgress
from envcheck.render.progress import (
    NullDisplay,
    PlainDisplay,
    PullDisplay,
    RichDisplay,
    human_bytes,
    make_display,
    overall_text,
)
from tests.pull_samples import EVENTS
from tests.terminal import Tty, screen

LAYERS = ("3355b48ca0d4", "1e332d71d083", "e46a45083e9a", "c1555271ee9d")


def feed(display: PullDisplay, progress: PullProgress) -> None:
    display.start("127.0.0.1:5000/envcheck-test/busybox:layers", progress)
    for event in EVENTS:
        display.update(progress, progress.apply(event))
    display.stop()


def test_plain_lines_name_every_layer_once_per_milestone() -> None:
    out = io.StringIO()
    ticks = iter(range(0, 1000, 2))  # a clock that moves 2 s per reading
    feed(PlainDisplay(out, interval=5.0, clock=lambda: float(next(ticks))), PullProgress())
    lines = out.getvalue().splitlines()
    assert lines[0] == "envcheck: pulling 127.0.0.1:5000/envcheck-test/busybox:layers: 0 layer(s)"
    assert (
        "  layer 3355b48ca0d4: already present (? )".strip() not in lines
    )  # sizes are known by then
    for layer in LAYERS[1:]:
        assert sum(f"layer {layer}: downloaded" in l for l in lines) == 1
        assert sum(f"layer {layer}: extracted" in l for l in lines) == 1
    assert any(l.startswith("envcheck:   overall ") for l in lines)


def test_rich_panel_has_a_bar_per_layer_and_an_overall_bar() -> None:
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    sizes = {f"sha256:{layer}": 4195775 for layer in LAYERS}
    feed(RichDisplay(out, console=console), PullProgress(sizes))
    text = out.getvalue()
    for layer in LAYERS:
        assert layer in text
    final = text.split("pulling")[-1]
    assert re.search(
        r"overall .*12\.6/12\.6 MB", final
    )  # 3 layers fetched; the one present costs nothing
    assert "done" in final and "already present" in final


def test_auto_is_plain_off_a_terminal_and_quiet_is_silent() -> None:
    assert isinstance(make_display("auto", io.StringIO()), PlainDisplay)
    assert isinstance(make_display("none"), NullDisplay)


def test_overall_text_has_bytes_speed_and_eta() -> None:
    progress = PullProgress({"sha256:" + "a" * 64: 10_000_000})
    progress.apply(
        {
            "id": "a" * 12,
            "status": "Downloading",
            "progressDetail": {"current": 5_000_000, "total": 10_000_000},
        }
    )
    assert overall_text(progress, 2.0) == "overall 25% (2.5 MB of 10.0 MB, 1.2 MB/s, ETA 6 s)"
    assert human_bytes(999) == "999 B" and human_bytes(None) == "?"


def test_a_skipped_download_complete_is_still_reported() -> None:
    # The engine sends a slow watcher only the latest state: `Download complete` may never come.
    out = io.StringIO()
    display, progress = PlainDisplay(out, interval=1e9), PullProgress()
    display.start("r", progress)
    for status in ("Pulling fs layer", "Downloading", "Extracting", "Pull complete"):
        display.update(
            progress,
            progress.apply(
                {"id": "abc", "status": status, "progressDetail": {"current": 5, "total": 10}}
            ),
        )
    lines = out.getvalue().splitlines()
    assert [l for l in lines if "layer abc" in l] == [
        "envcheck:   layer abc: downloaded (10 B)",
        "envcheck:   layer abc: extracted (10 B)",
    ]


def test_a_pull_of_layers_already_present_downloads_nothing_and_leaves_no_bar_waiting() -> None:
    """All layers present (a retagged image): the engine says `Already exists` for some and nothing
    at all for others; it was "268.8 MB in 1.0 s" with stale "waiting" bars."""
    from envcheck.image.pull_plan import PullResult
    from envcheck.render.progress import result_text

    sizes = {f"sha256:{layer}": 70_000_000 for layer in LAYERS}
    progress = PullProgress(sizes)
    for event in (
        {"status": "Pulling from envcheck-test/busybox", "id": "layers"},
        {"status": "Already exists", "id": LAYERS[0]},
        {"status": "Already exists", "id": LAYERS[1]},
        {"status": "Digest: sha256:" + "d" * 64},
        {"status": "Status: Downloaded newer image"},
    ):
        progress.apply(event)
    assert {layer.id for layer in progress.finish()} == set(LAYERS[2:])
    assert {layer.phase for layer in progress.layers.values()} == {"exists"}
    assert (progress.downloaded, progress.total_work) == (0, 0)
    result = PullResult(
        reference="r",
        requested="r",
        registry="127.0.0.1:5000",
        digest="sha256:" + "d" * 64,
        image_id="sha256:" + "e" * 64,
        size=280_000_000,
        seconds=1.0,
        outcome="pulled",
        attempts=1,
        platform="linux/amd64",
        downloaded=progress.downloaded,
    )
    text = result_text(result)
    assert "every layer was already present" in text and "280" not in text


def test_a_fetched_layer_counts_its_bytes_once_the_pull_ends() -> None:
    progress = PullProgress({f"sha256:{LAYERS[0]}": 1000, f"sha256:{LAYERS[1]}": 500})
    progress.apply(
        {"id": LAYERS[0], "status": "Downloading", "progressDetail": {"current": 10, "total": 1000}}
    )
    progress.apply({"id": LAYERS[1], "status": "Already exists"})
    assert [layer.id for layer in progress.finish()] == [
        LAYERS[0]
    ]  # its `Pull complete` was skipped
    assert progress.layers[LAYERS[0]].phase == "complete" and progress.downloaded == 1000
    assert progress.work_done == progress.total_work == 2000


# -- on stderr beside the activity line ------------------------------------------------------------
def _live_activity(out: io.StringIO) -> Any:
    from rich.console import Console

    from envcheck.render.activity import RichActivity

    shown = RichActivity(out)
    shown.console = shown.live.console = Console(
        file=out, force_terminal=True, width=100, color_system=None
    )
    return shown


def test_every_plain_pull_line_carries_the_envcheck_prefix() -> None:
    out = io.StringIO()
    display = PlainDisplay(out, interval=0.0)
    feed(display, PullProgress())
    display.note("127.0.0.1:1 failed (connection refused); trying the mirror 127.0.0.1:5000")
    lines = out.getvalue().splitlines()
    assert lines and all(line.startswith("envcheck: ") for line in lines), lines


def test_the_mirror_retry_line_never_lands_inside_the_spinner_line() -> None:
    """Before the bars start (the first registry failed before any layer came), the note used to
    be printed by the pull's console into the activity's live line: `⠸ pulling … (1 s)127.0…`."""
    from rich.console import Console

    from envcheck.edges import activity

    out = Tty()
    note = "127.0.0.1:1 failed (connection refused); trying the mirror 127.0.0.1:5000"
    with activity.showing(_live_activity(out)) as shown:
        activity.phase("pulling 127.0.0.1:1/envcheck-test/x:1 from 127.0.0.1:1")
        shown.live.refresh()  # type: ignore[attr-defined]  # the spinner has drawn its line
        pull = RichDisplay(out, console=Console(file=out, force_terminal=True, width=100))
        pull.note(note)
        pull.stop()
    assert note in screen(out.getvalue()), screen(out.getvalue())


def test_a_failed_step_is_never_marked_done() -> None:
    from envcheck.edges import activity

    out = Tty()
    with activity.showing(_live_activity(out)):
        activity.phase("pulling 127.0.0.1:5000/envcheck-test/absent:1 from 127.0.0.1:5000")
        activity.failed("manifest unknown")
        activity.phase("smoke: starting /usr/bin/python3")
        activity.phase("smoke: importing Paddle")
    lines = screen(out.getvalue())
    assert not [line for line in lines if line.startswith("✓ pulling")], lines
    (failed,) = [line for line in lines if line.startswith("✗ pulling")]
    assert failed.endswith(": manifest unknown")
    assert not any("smoke:" in line for line in lines), lines  # done phases leave nothing


def _doctor_phases(display: Any) -> None:
    from envcheck.edges import activity

    with activity.showing(display) as shown:
        activity.phase("probing the host (driver, CUDA, Paddle, engine)")
        activity.phase("smoke: importing Paddle in the container")
        refresh = getattr(getattr(shown, "live", None), "refresh", None)
        if refresh:
            refresh()  # the spinner has drawn its line
        activity.detail("step 31/60, 95.2 steps/s")
        activity.phase("smoke: training on cpu (asked for gpu:0)")


def test_progress_on_a_terminal_leaves_the_screen_to_the_report() -> None:
    """Before: each finished phase stayed as a green `✓` line, ten above a healthy report (a
    training that fell back to the CPU among them); now the live line goes when the work is."""
    out = Tty()
    _doctor_phases(_live_activity(out))
    assert "smoke: importing Paddle" in out.getvalue()  # it was shown, live
    assert [line for line in screen(out.getvalue()) if line] == []


def test_no_color_progress_has_no_escape_sequence_at_all() -> None:
    """Before: under NO_COLOR the live line still sent `ESC[1m`, `ESC[2m` and cursor moves."""
    from envcheck.contracts.command_env import Environment
    from envcheck.render.activity import make_activity_display

    out = Tty()
    env = Environment(io.StringIO(), Tty(), out, {"NO_COLOR": "1", "TERM": "xterm"}, Path("/"))
    _doctor_phases(make_activity_display("auto", env))
    assert "smoke: importing Paddle in the container" in out.getvalue()
    assert "\x1b" not in out.getvalue()
    assert [line for line in screen(out.getvalue()) if line] == []


def test_no_color_pull_progress_is_plain_lines() -> None:
    """Before: a pull under NO_COLOR drew rich's bars, escape sequences and colours."""
    from envcheck.render.progress import PlainDisplay, RichDisplay, make_display

    assert isinstance(make_display("auto", Tty(), {"NO_COLOR": "1"}), PlainDisplay)
    assert isinstance(make_display("auto", Tty(), {}), RichDisplay)
