"""`envcheck fix` as independent transactions: the doctor's findings -> a plan -> with `apply`,
the interpreter's transaction (envcheck.fix.runner.transaction), then the image's (a pull verified by a
smoke in it). A failed pull never rolls back a verified interpreter; the outcome gives each part
its result and the exit code that of the part that failed.

The target is resolved once to the Python that really runs (a pyenv shim or a wrapper script
asked for its `sys.executable`): that interpreter is the one planned for, changed and verified.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Literal

from envcheck.contracts.doctor_options import DoctorOptions
from envcheck.contracts.errors import EnvcheckError, EnvironmentProblem, UsageError
from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.host_report import Report
from envcheck.contracts.record import record, replace
from envcheck.contracts.remedy import in_words
from envcheck.fix.outcome import Change, FixOutcome, Outcome, Part, RecordInfo, Summary, overall
from envcheck.fix.plan import FixPlan, ImageState, plan_fix
from envcheck.fix.runner import apply, owner, pipstep
from envcheck.fix.runner.journal import home
from envcheck.fix.runner.site import Site, ask_site
from envcheck.fix.runner.transaction import (
    Announce,
    Io,
    Request,
    apply_interpreter,
    finish_unfinished,
    merge_changes,
    refuse_unasked,
    refuse_unfinished,
    where_from,
)
from envcheck.probe.interpreter import resolve_interpreter

Unfinished = Literal["refuse", "rollback", "resume"]


@record
class FixOptions:
    doctor: DoctorOptions
    apply: bool = False  # --yes
    pull: bool = True  # plan the pull of the doctor's image where the engine lacks it
    pip_flags: tuple[str, ...] = ()
    allow: frozenset[str] = frozenset()
    unfinished: Unfinished = "refuse"
    shared: bool = False  # --shared-interpreter: a Python outside any venv or conda prefix


def real_target(python: str | None, io: Io) -> tuple[Site, str]:
    """The interpreter that really runs, asked once (a shim resolved to its Python), found as
    the doctor finds it, and why it is the one (`--python`, the active venv, …)."""
    given = resolve_interpreter(python, io.variables)
    return ask_site(given.python, io.variables, ()), given.why


def fix_environment(options: FixOptions, io: Io) -> FixOutcome:
    site, why = real_target(options.doctor.python, io)
    doctor = replace(
        options.doctor, python=site.executable, python_reason=why or None, smoke=False, quiet=True
    )
    try:
        with owner.given_back(site.prefix):  # what root writes into a user's venv is theirs
            return _fix(options, io, site, doctor)
    except EnvcheckError as e:  # its hint's `envcheck fix --yes` fixes this very interpreter
        e.hint = in_words(e.hint, site.executable) if e.hint else e.hint
        raise


def _fix(options: FixOptions, io: Io, site: Site, doctor: DoctorOptions) -> FixOutcome:
    python = site.executable
    folder = home(site.prefix)
    pipstep.settle(folder, io.tell)  # a pip step a killed fix left running: stopped, never raced
    if options.unfinished != "refuse":
        part = finish_unfinished(folder, options.unfinished, io, doctor, python, site.prefix)
        report = io.diagnose(doctor)
        outcome, code = overall(part, None)
        return FixOutcome(
            FixPlan(python, ()), Summary.of(report), False, outcome, code, interpreter=part
        )
    refuse_unfinished(folder, python)  # before anything else
    report = io.diagnose(doctor)
    plan = plan_fix(
        report,
        python,
        pip_flags=options.pip_flags,
        pull=_pull_argv(doctor) if options.pull else (),
        image=image_state(options, report, io),
    )
    if not options.apply or not plan.runs:
        return _dry_run(plan, report, options, io, site)
    request = Request(doctor, options.pip_flags, options.allow)
    interpreter: Part | None = None
    info: RecordInfo | None = None
    changes: tuple[Change, ...] = ()
    said: str | None = None
    if plan.pip:  # PEP 668 first: its refusal names pip's own override
        apply.refuse_externally_managed(python, options.pip_flags, io.variables)
        confirm_shared(site, options.shared, io)
        interpreter, info, changes, said = apply_interpreter(
            plan, request, io, site, _announcer(plan, report, io)
        )
    elif io.show is not None:  # a pull alone: its plan said before it runs
        io.show(FixOutcome(plan, Summary.of(report), False, "planned", int(report.exit_status)))
    image = _image_part(plan, doctor, io) if plan.pulled else None
    outcome, code = overall(interpreter, image)
    return FixOutcome(
        plan,
        Summary.of(report),
        False,
        outcome,
        code,
        changes,
        said,
        info,
        interpreter,
        image,
    )


def _announcer(plan: FixPlan, report: Report, io: Io) -> Announce | None:
    """The plan as the dry run says it (its steps, every package that changes, the record and
    what was kept), given to `io.show` before the first step."""
    show = io.show
    if show is None:
        return None

    def announce(
        changes: tuple[Change, ...], said: str, info: RecordInfo, kept: Sequence[str]
    ) -> None:
        notes = (f"kept before the first change: the files of {', '.join(kept)}",) if kept else ()
        code = int(report.exit_status)
        show(
            FixOutcome(
                plan, Summary.of(report), False, "planned", code, changes, said, info, notes=notes
            )
        )

    return announce


SHARED_FLAG = "--shared-interpreter"


def shared_words(site: Site) -> str | None:
    """Why the target is an interpreter shared by everything that runs it (outside any venv or
    conda prefix: a system, pyenv or toolcache Python), in words; None for a venv or conda env."""
    if site.venv or os.path.isdir(os.path.join(site.prefix, "conda-meta")):
        return None
    return (
        f"{site.executable} is outside any virtual environment or conda prefix (its prefix "
        f"{site.prefix} is shared by everything that runs it)"
    )


def confirm_shared(site: Site, allowed: bool, io: Io) -> None:
    """A shared interpreter is changed only when asked for by name (--shared-interpreter), or
    confirmed at a terminal; `--yes` alone refuses it before anything is written."""
    why = shared_words(site)
    if why is None or allowed:
        return
    if io.confirm is not None and io.confirm(f"envcheck fix: {why}; change it anyway? [y/N] "):
        return
    raise UsageError(
        f"{why}: envcheck fix does not change it unasked; nothing was changed",
        hint=f"use a virtual environment (`{site.executable} -m venv /path/to/venv`, then "
        f"--python /path/to/venv/bin/python), or pass {SHARED_FLAG} with --yes",
    )


def _dry_run(plan: FixPlan, report: Report, options: FixOptions, io: Io, site: Site) -> FixOutcome:
    """The plan, and every package it would change as pip's resolver says, asked of the index
    now: which one answers is said before anything is promised."""
    outcome: Outcome
    if plan.runs:
        outcome, code = "planned", int(report.exit_status)
    elif plan.manual:
        outcome, code = "manual-only", int(ExitStatus.INCOMPATIBLE)
    else:
        outcome, code = "nothing-to-fix", int(ExitStatus.OK)
    changes, said = _resolve(plan, options, io) if plan.pip else ((), None)
    refused = _refused(plan, options, io, site) if plan.pip else None
    if refused is not None:
        said = f"{said}; {refused}" if said else refused
    return FixOutcome(plan, Summary.of(report), True, outcome, code, changes, said)


def _refused(plan: FixPlan, options: FixOptions, io: Io, site: Site) -> str | None:
    """What `--yes` would refuse about the target itself, said by the dry run: an externally
    managed interpreter (PEP 668), a shared one."""
    try:
        apply.refuse_externally_managed(plan.python, options.pip_flags, io.variables)
    except UsageError as e:
        return f"--yes would be refused: {e.message} ({e.hint})"
    why = shared_words(site)
    if why is not None and not options.shared:
        return f"--yes would ask before changing it, and refuse without a terminal: {why} (pass {SHARED_FLAG} with --yes to allow it)"
    return None


def _resolve(plan: FixPlan, options: FixOptions, io: Io) -> tuple[tuple[Change, ...], str]:
    installed = apply.versions(plan.python, io.variables)
    resolved: list[Change] = []
    said: list[str] = []
    for step in (s for s in plan.runs if s.kind == "install"):
        args = [a for a in step.argv[4:] if a not in options.pip_flags]
        fetch, where = where_from(plan.python, args, io, options.doctor.matrix)
        said.append(where)
        if fetch is None:
            return merge_changes(plan, installed, resolved), "; ".join(said)
        try:
            resolved += apply.dry_run(
                plan.python, [*options.pip_flags, *fetch], io.variables, installed
            ).changes
        except EnvironmentProblem as e:  # a dry run says what its resolver could not do
            return merge_changes(plan, installed, resolved), f"pip could not resolve: {e.message}"
    changes = merge_changes(plan, installed, resolved)
    words = "; ".join(said)
    try:
        refuse_unasked(changes, plan, installed, options.allow)
    except UsageError as e:
        words += f"; --yes would be refused: {e.message} ({e.hint})"
    return changes, words


def _pull_argv(doctor: DoctorOptions) -> tuple[str, ...]:
    """The existing pull (`envcheck pull-image`: its checks, retries, progress and digest proof),
    run as a step like pip: what follows is `--image REF`."""
    argv: tuple[str, ...] = (sys.executable, "-m", "envcheck", "pull-image")
    argv += ("--registry", doctor.registry)
    argv += ("--python", doctor.python) if doctor.python else ()
    return (*argv, *(("--matrix", doctor.matrix) if doctor.matrix else ()))


def image_state(options: FixOptions, report: Report, io: Io) -> ImageState | None:
    """Whether the engine holds the image the doctor chose, asked of the engine itself (never
    guessed from a name); None when the doctor chose no image."""
    ref = report.image.ref if report.image is not None else None
    if not ref:
        return None
    if not options.pull:
        return ImageState(ref, None, "not asked: --no-pull")
    engine = report.host.engine
    if engine.status != "ok":
        where = engine.host or "the default socket"
        return ImageState(
            ref,
            None,
            f"not planned: no Docker engine answered at {where} ({engine.reason or engine.status})"
            ", so whether it holds the image is unknown",
        )
    from envcheck.probe.endpoint import resolve_endpoint
    from envcheck.probe.engine import probe_image

    try:
        found = probe_image(ref, resolve_endpoint(io.variables), timeout=10)
    except (OSError, ValueError) as e:
        return ImageState(ref, None, f"not planned: the engine did not say ({e})")
    if found:
        return ImageState(ref, True, f"the engine holds it as {found[:19]}")
    return ImageState(ref, False, "the engine does not hold it")


def _image_part(plan: FixPlan, doctor: DoctorOptions, io: Io) -> Part:
    """The pull, then a smoke in the pulled image: its own transaction (a pulled image is only a
    cache: nothing to roll back), whatever the interpreter's outcome."""
    step = next(s for s in plan.runs if s.kind == "pull")
    ran = io.run(step.argv)
    if ran.code != 0:
        what = f"`{' '.join(ran.argv)}` exited {ran.code}: {ran.last_line}"
        return Part("failed", int(ExitStatus.ENVIRONMENT), (ran,), None, what)
    image = plan.pulled
    io.say(
        f"envcheck fix: verifying: a smoke training in the image {image} (on the "
        f"{(plan.expect or 'cpu').upper()})"
    )
    try:
        options = replace(doctor, smoke=True, in_process=False, pull=False, image=image, quiet=True)
        verified = Summary.of(io.diagnose(replace(options, expect_gpu=plan.expect == "gpu")), image)
    except KeyboardInterrupt:
        io.tell("envcheck fix: interrupted during the verification of the pulled image")
        raise
    failed = verified.unproven(plan.expect, image or plan.python)
    if failed is not None:
        return Part("failed", failed[0], (ran,), verified, failed[1])
    return Part("fixed", 0, (ran,), verified)
