"""The baseline file of the drift check, at the edge: `--baseline FILE` read through the one
hostile-proof JSON reader, `--save-baseline FILE` written through the one file writer. What a
baseline holds and how it is compared is pure (`envcheck.verdict.drift`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from envcheck.contracts.errors import UsageError
from envcheck.contracts.host_report import Report
from envcheck.edges.userfiles import read_json, write_output
from envcheck.verdict.drift import baseline_document, parse_baseline

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment


def load_baseline(path: str, env: Environment) -> dict[str, Any]:
    """Read `--baseline FILE`: a baseline written by --save-baseline, or a saved `--json` report
    of a good run (teams already archive those). Missing or corrupt → UsageError (exit 2)."""
    hint = "write one with `envcheck doctor --save-baseline FILE` after a good run"
    doc = read_json(path, what="--baseline", hint=hint, env=env)
    try:
        return parse_baseline(doc)
    except ValueError as e:
        raise UsageError(f"--baseline {path}: {e}", hint=hint) from e


def save_baseline(report: Report, path: str, env: Environment) -> bool:
    """`--save-baseline FILE`: write the baseline if this run passed (exit 0, warnings allowed).

    Returns whether it was written: a failed run is never a baseline, or the next run would
    compare against the very breakage the gate exists to catch.
    """
    if int(report.exit_status) != 0:
        return False
    text = json.dumps(baseline_document(report), indent=2, sort_keys=False) + "\n"
    write_output(path, text, flag="--save-baseline", env=env)
    return True
