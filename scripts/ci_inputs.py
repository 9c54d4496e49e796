"""The inputs and outputs tables of docs/ci.md, written from the gate's own files.

    .venv/bin/python scripts/ci_inputs.py           # rewrite the tables in docs/ci.md
    .venv/bin/python scripts/ci_inputs.py --check   # exit 1 if docs/ci.md disagrees

The composite action (`.github/actions/envcheck/action.yml`) and the reusable workflow
(`.github/workflows/gpu-gate.yml`) say what they take; the docs repeat it between two markers,
so a new input, a changed default or description reaches the docs by running this, and the
suite (tests/integration/test_workflows.py) fails while they differ.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / ".github" / "actions" / "envcheck" / "action.yml"
WORKFLOW = ROOT / ".github" / "workflows" / "gpu-gate.yml"
DOC = ROOT / "docs" / "ci.md"
BEGIN = (
    "<!-- the tables below are written by scripts/ci_inputs.py from action.yml and gpu-gate.yml -->"
)
END = "<!-- end of the generated tables -->"


def _load(path: Path) -> Any:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in doc:  # YAML 1.1 reads the key `on` as True
        doc["on"] = doc.pop(True)
    return doc


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(spec: dict[str, Any]) -> str:
    value = spec.get("default", "")
    value = str(value).lower() if isinstance(value, bool) else str(value)
    return f"`{value}`" if value else "empty"


def tables(action: dict[str, Any], workflow: dict[str, Any]) -> str:
    """The Markdown between the markers: inputs (where each is taken, its default, what it
    means), then outputs."""
    a_in, w_in = action["inputs"], workflow["on"]["workflow_call"]["inputs"]
    a_out, w_out = action["outputs"], workflow["on"]["workflow_call"]["outputs"]
    lines = ["| input | workflow | action | default | meaning |", "|---|---|---|---|---|"]
    for name in [*a_in, *(n for n in w_in if n not in a_in)]:
        specs = [s for s in (w_in.get(name), a_in.get(name)) if s is not None]
        defaults = {_default(s) for s in specs}
        default = (
            defaults.pop()
            if len(defaults) == 1
            else (f"workflow {_default(w_in[name])}, action {_default(a_in[name])}")
        )
        lines.append(
            f"| `{name}` | {'✓' if name in w_in else ''} | {'✓' if name in a_in else ''} "
            f"| {default} | {_cell(specs[-1]['description'])} |"
        )
    lines += ["", "| output | workflow | action | meaning |", "|---|---|---|---|"]
    for name in [*a_out, *(n for n in w_out if n not in a_out)]:
        meaning = (a_out.get(name) or w_out[name])["description"]
        lines.append(
            f"| `{name}` | {'✓' if name in w_out else ''} | {'✓' if name in a_out else ''} "
            f"| {_cell(meaning)} |"
        )
    return "\n".join(lines)


def rewritten(doc: str, generated: str) -> str:
    """`doc` with what lies between the markers replaced by `generated`."""
    head, found, rest = doc.partition(BEGIN + "\n")
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise SystemExit(f"{DOC}: the markers are missing:\n{BEGIN}\n{END}")
    return f"{head}{BEGIN}\n{generated}\n{END}{tail}"


def main(argv: list[str]) -> int:
    doc = DOC.read_text(encoding="utf-8")
    new = rewritten(doc, tables(_load(ACTION), _load(WORKFLOW)))
    if "--check" in argv:
        if new != doc:
            print(f"{DOC} is stale: run python scripts/ci_inputs.py", file=sys.stderr)
            return 1
        return 0
    if new != doc:
        DOC.write_text(new, encoding="utf-8")
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
