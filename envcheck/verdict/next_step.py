"""What to type next (pure): the report's remedies as the steps a person takes, in order.

`envcheck fix` runs the target's pip commands of the findings' remedies (envcheck.fix.plan), so
the doctor names it once, in their place: `envcheck fix --yes` where it does everything, else it
first, then the steps it leaves to a person (root, a reboot, their shell) in the plan's order,
then the advice of the remaining warnings. Each command once.
"""

from __future__ import annotations

from collections.abc import Sequence

from envcheck.contracts.host_report import Report
from envcheck.contracts.record import record
from envcheck.contracts.remedy import Command, Instruction, RemedyStep, with_python
from envcheck.verdict.fixes import target_python
from envcheck.verdict.subject import subject_python

FIX_ARGV = ("envcheck", "fix", "--yes")


@record
class NextSteps:
    """`steps`: in order; `fix`: the `envcheck fix` command among them (None: nothing for it to
    run); `complete`: that command does everything the report asks."""

    steps: tuple[RemedyStep, ...]
    fix: Command | None = None

    @property
    def complete(self) -> bool:
        return self.fix is not None and self.steps == (self.fix,)


def fix_command(argv: Sequence[str], changes: Sequence[str]) -> Command:
    return Command(tuple(argv), "user", "; ".join(changes))


def next_steps(report: Report) -> NextSteps:
    """The report's next steps; the plan `envcheck fix` would make for the judged interpreter."""
    from envcheck.fix.plan import pip_commands, plan_fix

    plan = plan_fix(report, target_python(report.host))
    out: list[RemedyStep] = []
    fix = None
    if plan.runs:
        argv = tuple(str(a) for a in report.meta.get("fix_command") or FIX_ARGV)
        fix = fix_command(
            with_python(argv, subject_python(report.host)), [s.changes for s in plan.runs]
        )
        out.append(fix)
    planned = {s.why for s in plan.steps}
    for step in plan.manual:
        out += step.remedy.steps if step.remedy is not None else (Instruction(step.changes),)
    for f in report.findings:
        if f.severity == "pass" or f.id in planned or f.remedy is None:
            continue
        run = set(pip_commands(f)) if fix is not None else set()
        out += [s for s in f.remedy.steps if s not in run]
    return NextSteps(_once(out), fix)


def _once(steps: list[RemedyStep]) -> tuple[RemedyStep, ...]:
    """Each command once (the first time), each instruction once."""
    seen: set[str] = set()
    kept: list[RemedyStep] = []
    for s in steps:
        key = s.shell() if isinstance(s, Command) else s.text
        if key not in seen:
            seen.add(key)
            kept.append(s)
    return tuple(kept)
