"""A record (envcheck/contracts/record.py) on the other Pythons the project supports, each a real
interpreter of this machine kind (pyenv's 3.10, 3.12 and 3.13): its fields come from its own
annotations everywhere, and `copy.replace` works where it exists. The record itself, on this
Python, beside the dataclass it stands for: tests/unit/test_record.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.paths import ROOT


@pytest.mark.parametrize("python", ["3.13", "3.12", "3.10"])
def test_records_have_their_fields_on_other_pythons(python: str) -> None:
    """A record's fields come from its own annotations on each Python the project supports
    (3.14 evaluates them lazily: annotationlib asks there); `copy.replace` where it exists."""
    found = sorted(Path.home().glob(f".pyenv/versions/{python}*/bin/python{python}"))
    if not found:  # this machine kind ships them under pyenv (its shims answer for none)
        pytest.fail(f"no Python {python} under ~/.pyenv/versions", pytrace=False)
    exe = str(found[-1])
    code = (
        "import copy, sys\n"
        "from envcheck.contracts.record import record, fields\n"
        "@record\n"
        "class R:\n"
        "    a: int\n"
        "    b: str = 'x'\n"
        "r = R(1)\n"
        "print([f.name for f in fields(R)], r.b)\n"
        "if sys.version_info >= (3, 13): print(copy.replace(r, b='y'))\n"
    )
    out = subprocess.run(
        [exe, "-c", code],
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert out[0] == "['a', 'b'] x"
    assert out[1:] == ([] if python in ("3.12", "3.10") else ["R(a=1, b='y')"])
