"""The Markdown summary as a person sees it: python-markdown → HTML styled like GitHub's job
summary → headless Chromium (Debian's `chromium`, installed by `scripts/dev`).

`measure(markdown)` loads the page and returns what the browser laid out: each table's width
against the room it has (a Fix column behind a horizontal scroll), every code span that wraps
over two lines (a check id broken at its hyphen), the page's text and height. `screenshot`
writes the picture docs/ci.md shows (`bench/bench_markdown.py`). Chromium starts with no
network, no sync, no first-run work and an empty profile each time.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import markdown as python_markdown  # type: ignore[import-untyped]  # it ships no types

WIDTH = 900  # CSS pixels: the content width of a job summary on a laptop-sized window
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
# The parts of GitHub's `markdown-body` stylesheet that decide the layout: a table is a block as
# wide as its content, at most the page, and scrolls sideways beyond that.
STYLE = """
body { margin: 0; background: #fff; }
.markdown-body { box-sizing: border-box; width: __WIDTH__px; padding: 16px 24px; color: #1f2328;
  font-family: -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  font-size: 14px; line-height: 1.5; word-wrap: break-word; }
.markdown-body h2 { font-size: 1.5em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; }
.markdown-body h3 { font-size: 1.25em; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }
.markdown-body td, .markdown-body th { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body code { padding: .2em .4em; font-size: 85%; border-radius: 6px;
  background: rgba(129, 139, 152, .12); font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.markdown-body li + li { margin-top: .25em; }
""".replace("__WIDTH__", str(WIDTH))
MEASURE = """
<script>
const body = document.querySelector('.markdown-body');
const out = {
  height: document.documentElement.scrollHeight,
  text: body.innerText,
  tables: [...body.querySelectorAll('table')].map(t => ({
    scroll: t.scrollWidth, room: t.clientWidth,
    header: [...t.querySelectorAll('th')].map(th => th.innerText)})),
  wrapped_code: [...body.querySelectorAll('code')]
    .filter(c => c.getClientRects().length > 1).map(c => c.innerText),
};
const pre = document.createElement('pre');
pre.id = 'envcheck-measure';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>
"""


def html_page(markdown: str, *, measure: bool = False) -> str:
    # python-markdown, unlike GitHub, parses Markdown inside an HTML block only when asked to
    text = markdown.replace("<details>", '<details markdown="1">')
    body = python_markdown.markdown(text, extensions=["tables", "md_in_html"])
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><style>{STYLE}</style></head>'
        f'<body><article class="markdown-body">{body}</article>{MEASURE if measure else ""}'
        "</body></html>"
    )


def chromium() -> str:
    """The browser's path; missing is a loud failure (`bash scripts/dev setup` installs it)."""
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError("chromium is not installed: run `bash scripts/dev setup` (as root)")
    return path


def _run(page: str, *flags: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp, "summary.html")
        index.write_text(page, encoding="utf-8")
        profile = Path(tmp, "profile")
        profile.mkdir()
        done = subprocess.run(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, index.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
        return done.stdout


def measure(markdown: str) -> dict[str, Any]:
    """What Chromium laid out for `markdown` (see the module's docstring)."""
    dom = _run(html_page(markdown, measure=True), "--dump-dom")
    found = re.search(r'<pre id="envcheck-measure">(.*?)</pre>', dom, flags=re.DOTALL)
    if found is None:
        raise RuntimeError(f"the page did not measure itself: {dom[-2000:]}")
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


def screenshot(markdown: str, png: Path) -> dict[str, Any]:
    """Write the page as `png`, as tall as its content; return its measurements."""
    laid_out = measure(markdown)
    size = f"--window-size={WIDTH},{laid_out['height']}"
    _run(html_page(markdown), size, f"--screenshot={png.resolve()}")
    return laid_out
