"""Old-vs-new `envcheck doctor --json --no-smoke`: every fake profile (tests/fakenv, a fresh process
per host) and every recorded host (the suite's saved hosts and the real H100's reports, with
`--facts`), judged by this tree and by another checkout side by side. Prints each host whose
verdict, exit code or finding severities differ; nothing else. Nothing here asserts: the list is
for the closing note, where each change is justified.

    .venv/bin/python bench/verdict_diff.py ../old-checkout
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import fakenv
from tests import scenarios as s


def doctor(tree: Path, args: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """The doctor of `tree` (its package first on the path), as a process of its own."""
    env = {**env, "PYTHONPATH": str(tree), "COLUMNS": "200"}
    argv = [sys.executable, "-m", "envcheck", "doctor", "--json", "--no-smoke", *args]
    done = subprocess.run(
        argv, check=False, env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    try:
        doc: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        return {
            "exit": done.returncode,
            "verdict": "?",
            "findings": {},
            "error": done.stderr[-300:],
        }
    findings = {f["id"]: f["severity"] for f in doc.get("findings", [])}
    return {"exit": done.returncode, "verdict": doc.get("verdict"), "findings": findings}


def recorded_hosts(work: Path) -> dict[str, Path]:
    """Every saved host the suite judges, written out as a facts file."""
    hosts: dict[str, Path] = {}
    for name, doc in (s.JUDGE_HOSTS | s.REMEDY_HOSTS).items():
        path = work / f"{name}.json"
        path.write_text(json.dumps(doc))
        hosts[name] = path
    for path in sorted((ROOT / "tests" / "data").rglob("*.json")):
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and ("host" in doc or "driver" in doc):
            hosts[str(path.relative_to(ROOT / "tests" / "data"))] = path
    return hosts


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    said = []
    if (old["exit"], old["verdict"]) != (new["exit"], new["verdict"]):
        said.append(
            f"{old['verdict']} (exit {old['exit']}) -> {new['verdict']} (exit {new['exit']})"
        )
    for id_ in sorted(set(old["findings"]) | set(new["findings"])):
        a, b = old["findings"].get(id_, "-"), new["findings"].get(id_, "-")
        if a != b and "fail" in (a, b) or a != b and "-" not in (a, b):
            said.append(f"  {id_}: {a} -> {b}")
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="the other checkout (its envcheck/ is judged)")
    args = parser.parse_args()
    old_tree, new_tree = args.old.resolve(), ROOT
    base = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="verdict-diff-") as tmp:
        work = Path(tmp)
        runs: list[tuple[str, list[str], dict[str, str]]] = []
        build = fakenv.build(work / "build")
        for profile in fakenv.profile_names():
            env = base | fakenv.make_host(build, profile, work / "hosts" / profile)
            runs.append((f"fake {profile}", [], env))
        for name, path in recorded_hosts(work).items():
            runs.append((f"saved {name}", ["--facts", str(path)], base))
        changed = 0
        for name, argv, env in runs:
            said = differences(doctor(old_tree, argv, env, work), doctor(new_tree, argv, env, work))
            if said:
                changed += 1
                print(f"{name}: " + "\n".join(said))
        print(f"{changed} of {len(runs)} hosts changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
