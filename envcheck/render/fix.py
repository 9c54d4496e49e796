"""`envcheck fix`'s text: the plan, what ran, the verification and the rollback, read from the
same document `--json` prints (one source for both)."""

from __future__ import annotations

import shlex
from typing import Any

from envcheck.render.sanitize import visible

OUTCOME_WORDS = {
    "nothing-to-fix": "nothing to fix: the doctor found nothing this command repairs",
    "manual-only": "only a person can fix what is left: the manual steps above",
    "planned": "dry run: nothing was changed; `--yes` applies the plan and verifies it",
    "fixed": "fixed: the plan was applied, the smoke proved it and pip check found nothing new",
    "partly-fixed": "partly fixed: one part was fixed and verified, another failed (see parts)",
    "failed": "failed: the interpreter was not changed; nothing to roll back",
    "rolled-back": "rolled back: the environment is back as it was (every kept file matches its "
    "kept copy byte for byte, pip freeze matches the record byte for byte, pip check finds nothing new)",
    "rollback-incomplete": "the rollback did NOT restore the recorded state: what differs is "
    "listed above",
}


def render_fix(doc: dict[str, Any], *, plan_shown: bool = False, steps_shown: bool = False) -> str:
    """The whole outcome; `plan_shown`: its plan was said before the first step (render_plan),
    `steps_shown`: each step was said as it ended, so neither is said again."""
    lines = [] if plan_shown else render_plan(doc)
    lines += _applied(doc, steps_shown)
    lines.append(f"result: {OUTCOME_WORDS[doc['outcome']]} (exit {doc['exit_code']})")
    return "".join(f"{line}\n" for line in lines)


def render_plan(doc: dict[str, Any]) -> list[str]:
    """The plan: the doctor's findings, the steps in order, every package that changes, the
    manual steps, the image, and where the state before it is recorded."""
    plan = doc["plan"]
    lines = [f"envcheck fix for {plan['python']}"]
    doctor = doc["doctor"]
    # No exit code of its own: this doctor ran no smoke, so after `doctor` said 6 (cpu-fallback)
    # it said 1 here; the one code is the result's, below.
    lines.append(f"doctor, static checks (no smoke): {doctor['verdict']}")
    lines += _findings(doctor)
    runs = [s for s in plan["steps"] if s["kind"] != "manual"]
    manual = [s for s in plan["steps"] if s["kind"] == "manual"]
    if runs:
        lines.append("plan (in order):")
        for n, step in enumerate(runs, 1):
            lines.append(f"  {n}. {step['kind']} [{step['why']}] {visible(step['changes'])}")
            lines.append(f"     $ {visible(shlex.join(step['argv']))}")
        if plan["expect"]:
            lines.append(_then(plan, runs))
        lines += _changes(doc)
    if manual:
        lines.append("manual steps (need root or a reboot; never run by envcheck), in order:")
        for n, step in enumerate(manual, 1):
            lines += _manual_lines(n, step)
    image = plan.get("image")
    if image is not None:
        said = {True: "present", False: "absent", None: "unknown"}[image["present"]]
        lines.append(f"image: {image['ref']}: {said} ({visible(image['why'])})")
    if "record" in doc:
        record = doc["record"]
        lines.append(f"recorded before: {visible(record['folder'])} (journal {record['journal']})")
    for note in doc.get("notes", []):
        lines.append(f"note: {visible(note)}")
    return lines


def _manual_lines(n: int, step: dict[str, Any]) -> list[str]:
    """A manual step: its remedy's steps, each command whole on a line of its own (`$ `), words
    as they are, an alternative under "or instead"; a step without one (an older document) as
    its words."""
    remedy = step.get("remedy")
    if not remedy or not remedy.get("steps"):
        return [f"  {n}. [{step['why']}] {visible(step['changes'])}"]
    lines = [f"  {n}. [{step['why']}]"]
    previous = False
    for part in remedy["steps"]:
        if part.get("alternative") and not previous:
            lines.append("     or instead:")
        previous = bool(part.get("alternative"))
        if part["kind"] == "command":
            lines.append(f"     $ {visible(part['shell'])}")
        else:
            lines.append(f"     {visible(part['text'])}")
    return lines


def _changes(doc: dict[str, Any]) -> list[str]:
    """Every package the install changes: the plan's and those pip's resolver adds."""
    lines: list[str] = []
    if doc.get("changes"):
        lines.append("packages that change (the plan's and pip's resolver's):")
        for c in doc["changes"]:
            before, after = c["before"] or "absent", c["after"] or "removed"
            asked = "" if c["requested"] else " (a dependency)"
            change = (
                f"{before} -> {after}" if before != after else f"{after}, removed and reinstalled"
            )
            lines.append(f"  {visible(c['name'])}: {visible(change)}{asked}")
    if doc.get("resolved_from"):
        lines.append(f"resolver: {visible(doc['resolved_from'])}")
    return lines


def _then(plan: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """Where the verification smokes run: the interpreter pip changed, then the pulled image."""
    pip = any(s["kind"] in ("install", "uninstall") for s in runs)
    where = [f"under {plan['python']}"] if pip else []
    where += [f"in the image {s['argv'][-1]}" for s in runs if s["kind"] == "pull"]
    undo = "the interpreter's changes are rolled back" if pip else "the fix fails"
    return (
        f"  then: a smoke training {' and '.join(where)} must train on the "
        f"{plan['expect'].upper()}, else {undo}"
    )


def _applied(doc: dict[str, Any], steps_shown: bool) -> list[str]:
    lines: list[str] = []
    for ran in [] if steps_shown else doc.get("applied", []):
        lines.append(
            f"ran: {visible(shlex.join(ran['argv']))} -> exit {ran['exit_code']} "
            f"({ran['seconds']} s)"
        )
    for v in doc.get("verifications", [doc["verification"]] if "verification" in doc else []):
        where = f" in {v['ran_in']}" if "ran_in" in v else ""
        lines.append(
            f"verification{where}: {v['verdict']} (exit {v['exit_code']}), proof {v['proof']}"
        )
        lines += _findings(v)
    if "failed" in doc:
        lines.append(f"failed: {visible(doc['failed'])}")
    for name, part in doc.get("parts", {}).items():
        lines.append(f"part {name}: {part['outcome']} (exit {part['exit_code']})")
    if "rollback" in doc:
        for ran in [] if steps_shown else doc["rollback"]["ran"]:
            lines.append(
                f"rollback: {visible(shlex.join(ran['argv']))} -> exit {ran['exit_code']} "
                f"({ran['seconds']} s)"
            )
        for what in doc["rollback"].get("differences", []):
            lines.append(f"  differs: {visible(what)}")
        for what in doc["rollback"].get("pip_check_new", []):
            lines.append(f"  pip check: {visible(what)}")
        after = doc["after_rollback"]
        lines.append(f"doctor after the rollback: {after['verdict']} (exit {after['exit_code']})")
        lines += _findings(after)
    return lines


def _findings(summary: dict[str, Any]) -> list[str]:
    return [f"  {f['severity']}  {f['id']}: {visible(f['message'])}" for f in summary["findings"]]
