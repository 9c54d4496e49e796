"""The job summary as a person sees it: the Markdown of the recorded real H100 (Paddle 2.6.2,
`--expect-gpu`: five failures, a crashed GPU smoke) and of a fleet of 26 real-world reports
(tests/fleet_samples.py), rendered with
python-markdown and laid out by headless Chromium (tests/browser.py, as the suite does), written
as the pictures docs/ci.md and docs/fleet.md show:

    docs/job-summary.png     one host
    docs/fleet-summary.png   a fleet: its root causes, host ranges, each cause's fixes

Prints, per picture, each table's laid-out width against the room it has (wider means a
horizontal scroll) and the check ids the browser broke over two lines. Nothing is asserted here
(tests/integration/test_markdown_browser.py asserts).

    .venv/bin/python bench/bench_markdown.py [--out docs]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/ holds the browser helper and the report builders

from envcheck.render.markdown import render_fleet_markdown
from envcheck.verdict.fleet import merge_reports
from tests.browser import screenshot
from tests.fleet_samples import real_fleet

REAL_H100 = ROOT / "tests" / "data" / "real-h100" / "f-gpu262-expect.json"
CHECK_ID = re.compile(r"[a-z0-9]+(?:\.[a-z0-9-]+)+")


def host_markdown() -> str:
    """The recorded H100 judged again by today's envcheck (its recorded smoke kept), as
    `envcheck doctor --facts f-gpu262-expect.json --expect-gpu --markdown -` prints it."""
    from tests.inprocess import run_envcheck

    run = run_envcheck(["doctor", "--facts", str(REAL_H100), "--expect-gpu", "--markdown", "-"])
    if not run.stdout.startswith("## "):
        raise SystemExit(f"no Markdown from the doctor (exit {run.returncode}): {run.stderr}")
    return run.stdout


def fleet_markdown() -> str:
    return render_fleet_markdown(merge_reports(real_fleet()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, markdown in (("job-summary", host_markdown()), ("fleet-summary", fleet_markdown())):
        png = args.out / f"{name}.png"
        laid_out = screenshot(markdown, png)
        widths = ", ".join(f"{t['scroll']}/{t['room']} px" for t in laid_out["tables"] if t["room"])
        broken = [c for c in laid_out["wrapped_code"] if CHECK_ID.fullmatch(c)]
        print(
            f"{png}: {laid_out['height']} px tall; tables (laid out/room): {widths}; "
            f"check ids broken: {len(broken)}"
        )


if __name__ == "__main__":
    main()
