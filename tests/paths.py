"""Where the tests find the checkout: its root, and the recordings under tests/data.

Both lanes (tests/unit, tests/integration) and the helpers beside this module use these rather
than counting the parents of their own file, so a test file can change lanes as it is.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
