"""The interpreter's part of a fix, as a transaction that cannot lose the environment.

    lock (inside the target) -> record (pip freeze, pip config, pip check) -> download (every
    wheel the install needs, into the record's wheelhouse) -> resolve (pip's dry run from the
    wheelhouse: every package that will change; an unasked change to an installed package is
    refused) -> keep (the files of everything removed or replaced, by their RECORD) -> apply
    (each step journaled before it runs, marked after, installs from the wheelhouse only) ->
    verify (a smoke in the target, and pip check raising nothing new) -> close the journal

Until the first step nothing has changed, and any failure says so. From the first step on, a
failure, a failed verification or a signal puts the record back from the kept files (no network)
and proves it by files: every RECORD hash of what was kept, the freeze, and pip check. The
rollback runs with signals deferred: SIGTERM, SIGINT or SIGHUP wait for it to finish. A run killed
outright (SIGKILL, a lost ssh session) leaves its journal open: the next run finds it and offers
`--rollback` or `--resume`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from packaging.utils import canonicalize_name

from envcheck.contracts.doctor_options import DoctorOptions
from envcheck.contracts.errors import EnvironmentProblem, UsageError
from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.host_report import Report
from envcheck.contracts.record import record, replace
from envcheck.contracts.remedy import envcheck_line
from envcheck.edges.signals import deferred, wait_for_signal
from envcheck.fix.outcome import (
    PIP_LOG,
    Change,
    FixOutcome,
    Part,
    PartOutcome,
    Ran,
    RecordInfo,
    Rollback,
    Summary,
)
from envcheck.fix.plan import PIP_OVERRIDE, FixPlan
from envcheck.fix.runner import apply, keep, pipstep
from envcheck.fix.runner.journal import (
    Journal,
    JournalStep,
    ensure_home,
    held,
    holder,
    open_journal,
    problem,
    unfinished,
    write_new,
)
from envcheck.fix.runner.site import Site, ask_site
from envcheck.fix.runner.trust import (
    KEPT_MANIFEST,
    NEVER_CHANGED,
    check_record,
    inside,
    record_text,
)

# Tests only: hold the named phase open (a step is `step-N`) so that a test can signal the run
# there, or change the world (stop the index) and let it go on by removing ENVCHECK_FIX_PAUSE_FILE.
PAUSE_ENV = "ENVCHECK_FIX_PAUSE"
PAUSE_FILE_ENV = "ENVCHECK_FIX_PAUSE_FILE"
PAUSE_S = 60.0


@record
class Io:
    """What the transaction reads and says, given by the command: its variables, its progress
    lines (quiet-aware), lines said whatever --quiet, pip's own lines, the doctor, and a
    question asked at the terminal (None where there is none to ask at)."""

    variables: Mapping[str, str]
    say: Callable[[str], None]
    tell: Callable[[str], None]
    echo: Callable[[str], None] | None
    diagnose: Callable[[DoctorOptions], Report]
    confirm: Callable[[str], bool] | None = None  # a yes/no question at a terminal; None: none
    show: Callable[[FixOutcome], None] | None = None  # the plan, said before its first step

    def run(
        self,
        argv: Sequence[str],
        record: str | None = None,
        *,
        stash: bool = True,
        step: bool = True,
    ) -> Ran:
        """One command, said in one line as it ends (what it did, how long it took; `step`
        false: only where it failed, a preparation said before the plan). A pip step
        of the fix whose record is `record` writes its output to the record's log (`pip.log`),
        not the terminal: where it fails, the log's last lines and its path are said. It holds
        the lock while it runs and (`stash`: a step that changes the target) keeps its
        temporary folders in the record (envcheck.fix.runner.pipstep); a download keeps pip's
        default, not to need the room of each wheel twice on the target's file system."""
        limit = apply.step_limit(self.variables)
        if record is None:
            self.say(f"envcheck fix: $ {' '.join(argv)}")
            ran = apply.run_command(argv, self.variables, self.echo, limit=limit)
            self.say(step_line(ran))
            return ran
        log = Path(record) / PIP_LOG  # the terminal shows one line a step
        try:
            with _Log(log) as write:
                write(f"$ {' '.join(argv)}")
                ran = apply.run_command(
                    argv,
                    {**self.variables, **(pipstep.variables(record) if stash else {})},
                    write,
                    limit=limit,
                    inherit=pipstep.inherited(),
                )
                write(f"-> exit {ran.code} after {ran.seconds:.1f} s\n")
        finally:
            pipstep.after_step(record)
        if step or ran.code != 0:
            self.say(step_line(ran))
        if ran.code != 0:
            for line in ran.tail.splitlines():
                self.say(f"    | {line}")
            self.say(f"    pip's whole output: {log}")
        return ran

    def pause(self, phase: str) -> None:
        if self.variables.get(PAUSE_ENV) == phase:
            self.tell(f"envcheck fix: paused at {phase}")
            wait_for_signal(PAUSE_S, while_exists=self.variables.get(PAUSE_FILE_ENV))


@record
class Request:
    doctor: DoctorOptions  # the doctor's choices, its `python` the resolved real interpreter
    pip_flags: tuple[str, ...] = ()
    allow: frozenset[str] = frozenset()  # canonical names a change may touch though unasked


class _Log:
    """The record's log, appended a line at a time. A log that cannot be written (a full disk:
    the rollback that frees it must still run) loses its lines, never the step: the step's
    last lines are kept by the step itself."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: TextIO | None = None

    def __enter__(self) -> Callable[[str], None]:
        with contextlib.suppress(OSError):
            self.file = open(self.path, "a", 1, encoding="utf-8", errors="replace")
        return self.write

    def write(self, line: str) -> None:
        if self.file is None:
            return
        try:
            self.file.write(f"{line}\n")
        except OSError:
            self.__exit__()

    def __exit__(self, *_: object) -> None:
        file, self.file = self.file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()


def step_line(ran: Ran) -> str:
    """A step as it ended: `  ✓ install paddlepaddle==3.3.1  1.2 s`, `✗` and its exit status
    where it failed."""
    mark, how = ("✓", "") if ran.code == 0 else ("✗", f" (exit {ran.code})")
    return f"  {mark} {step_words(ran.argv)}{how}  {ran.seconds:.1f} s"


def step_words(argv: Sequence[str]) -> str:
    """What a command does, in a few words: pip's verb and what it names (`install
    paddlepaddle==3.3.1`), the image a pull brings, else the command itself."""
    if len(argv) > 3 and tuple(argv[1:3]) == ("-m", "pip"):
        wanted, _ = apply.requirements(argv[4:])
        return " ".join([argv[3], *wanted])
    if "pull-image" in argv:
        return f"pull {argv[-1]}"
    return " ".join(argv)


def unfinished_words(journal: Journal) -> str:
    done = len(journal.done)
    return (
        f"an unfinished `envcheck fix` of {journal.prefix} (pid {journal.pid}, started "
        f"{journal.started}) stopped in its {journal.phase} phase with {done} of "
        f"{len(journal.steps)} step(s) done; its record is {journal.record}"
    )


def refuse_unfinished(folder: Path, python: str, *, running: bool = True) -> None:
    """Before anything else: an open journal is a fix still running (`running`: asked of its
    lock), or one that was killed; say which and stop."""
    pid = holder(folder) if running else None  # a fix that runs is writing its journal now
    if pid is not None:
        raise EnvironmentProblem(
            f"another `envcheck fix` (pid {pid}) is changing {folder.parent}",
            hint=f"wait for it to finish (its journal: {folder / 'journal.json'})",
        )
    journal = unfinished(folder, python)
    if journal is None:
        return
    raise EnvironmentProblem(
        unfinished_words(journal),
        hint=f"`{envcheck_line(python, 'fix', '--rollback')}` puts the recorded state back from "
        f"the record (no network); `{envcheck_line(python, 'fix', '--resume')}` finishes the "
        "steps not done and verifies them",
    )


Announce = Callable[[tuple[Change, ...], str, RecordInfo, Sequence[str]], None]


def apply_interpreter(
    plan: FixPlan, request: Request, io: Io, site: Site, announce: Announce | None = None
) -> tuple[Part, RecordInfo, tuple[Change, ...], str]:
    """The interpreter's transaction for `plan` (it has pip steps): (its part of the outcome,
    where its record is, every package it changed, which index answered in words). Once all is
    in hand, before the first change, `announce` is given what will change, which index
    answered, the record and the packages whose files were kept."""
    python = plan.python
    apply.refuse_externally_managed(python, request.pip_flags, io.variables)
    folder = ensure_home(site.prefix)
    with held(folder, site.prefix) as lock, pipstep.holding(lock):
        refuse_unfinished(folder, python, running=False)
        before = _record(python, folder, io)
        journal = open_journal(
            folder,
            python=python,
            prefix=site.prefix,
            record_folder=str(before),
            expect=plan.expect,
            pip_flags=request.pip_flags,
        )
        info = RecordInfo(str(before), journal.path)
        try:
            changes, said = _prepare(plan, request, io, journal, before)
        except BaseException:
            _drop_copies(journal)  # first: a wheelhouse cut by a full disk frees it
            journal.close("nothing-changed")
            raise
        if announce is not None:
            announce(changes, said, info, journal.kept)
        return _apply(journal, io, request.doctor), info, changes, said


def _record(python: str, folder: Path, io: Io) -> Path:
    """The state to come back to, on disk before anything changes."""
    io.pause("record")
    frozen = apply.freeze(python, io.variables)
    config = apply.pip_config(python, io.variables)
    broken = apply.pip_check(python, io.variables)
    where = folder / "records" / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    try:
        where.mkdir(mode=0o755)
    except OSError as e:
        raise problem(f"cannot write the fix's record in {where} (nothing was changed)", e) from e
    write_new(where / "freeze.txt", frozen)
    write_new(where / "pip-config.txt", config)
    write_new(where / "pip-check.txt", "".join(f"{p}\n" for p in sorted(broken)))
    write_new(where / "target.txt", f"{python}\n")
    return where


def _prepare(
    plan: FixPlan, request: Request, io: Io, journal: Journal, folder: Path
) -> tuple[tuple[Change, ...], str]:
    """Everything in hand before the first change: the wheels, what pip will change (refused
    where it touches an installed package unasked), the kept files, the journaled steps."""
    python, flags, matrix = plan.python, request.pip_flags, request.doctor.matrix
    wheelhouse = folder / "wheelhouse"
    journal.enter("download")
    io.pause("download")
    steps = [s for s in plan.runs if s.kind in ("uninstall", "install")]  # the pull is its own
    installs = [s for s in steps if s.kind == "install"]
    said = "; ".join(
        _download(python, [a for a in s.argv[4:] if a != PIP_OVERRIDE], wheelhouse, io, matrix)
        for s in installs
    )
    journal.enter("resolve")
    io.pause("resolve")
    installed = apply.versions(python, io.variables)
    local = ("--no-index", "--find-links", str(wheelhouse))
    commands: list[tuple[str, ...]] = []
    resolved: list[Change] = []
    for step in steps:
        if step.kind == "uninstall":
            commands.append(step.argv)
            continue
        wanted, _ = apply.requirements([a for a in step.argv[4:] if a != PIP_OVERRIDE])
        resolved += apply.dry_run(
            python, [*flags, *local, *wanted], io.variables, installed
        ).changes
        commands.append((python, "-m", "pip", "install", *flags, *local, *wanted))
    changes = merge_changes(plan, installed, resolved)
    refuse_unasked(changes, plan, installed, request.allow)
    journal.enter("keep")
    io.pause("keep")
    kept = sorted({c.name for c in changes if c.before is not None})
    site = ask_site(python, io.variables, kept)
    keep.keep(site.dists, folder / "kept", site.prefix, keep.editable_links(site, kept))
    journal.seal(KEPT_MANIFEST)
    added = sorted({c.name for c in changes if c.before is None})
    journal.kept, journal.added = kept, added
    journal.strays = _wheel_files(wheelhouse, added, site)
    changed = [p for d in site.dists for p, _, _ in d.files] + journal.strays
    pipstep.note_stash(str(folder), pipstep.roots_of(changed, (p for _, p in site.paths)))
    journal.steps = [
        JournalStep(tuple(argv), step.changes) for argv, step in zip(commands, steps, strict=True)
    ]
    journal.enter("apply")
    return changes, said


def _download(
    python: str, args: Sequence[str], wheelhouse: Path, io: Io, matrix: str | None
) -> str:
    """The build and every dependency into the wheelhouse; which index answered, in words. An
    index that does not answer is named, and nothing has changed."""
    fetch, said = where_from(python, args, io, matrix)
    again = (
        "check the network or the mirror (--paddle-index), then run "
        f"`{envcheck_line(python, 'fix', '--yes')}` again"
    )
    if fetch is None:
        raise EnvironmentProblem(f"{said}: nothing was changed", hint=again)
    wanted, _ = apply.requirements(fetch)
    argv = [python, "-m", "pip", "download", "--dest", str(wheelhouse), *apply.NETWORK, *fetch]
    io.say(
        f"envcheck fix: fetching {' '.join(wanted)} and its dependencies into the record "
        "(nothing changes before the plan is said)"
    )
    ran = io.run(argv, str(wheelhouse.parent), stash=False, step=False)
    if ran.code != 0:
        raise EnvironmentProblem(
            f"could not download {' '.join(wanted)} and its dependencies ({said}; pip exited "
            f"{ran.code}: {ran.last_line}): nothing was changed",
            hint=again,
        )
    return said


def where_from(
    python: str, args: Sequence[str], io: Io, matrix: str | None
) -> tuple[list[str] | None, str]:
    """The install's arguments pip fetches with, and which index answers, in words: the plan's
    own indexes where they answer. Where Paddle's index does not, and the pinned requirement is
    one build wherever it is published (the matrix `matrix` says: a CPU build, 2.6.2's cu118
    build on PyPI), pip's configured index (PyPI, a mirror) when its resolver finds it there.
    (None, why) when no index answers for it."""
    wanted, options = apply.requirements(args)
    project = canonicalize_name(wanted[0].split("==")[0]) if wanted else ""
    urls = apply.indexes(options)
    for url in urls:
        why = apply.probe_index(url, project, io.variables)
        if why is None:
            continue
        silent = f"the package index {url} {why}"
        if not wanted or not _one_build(wanted[0], matrix, io.variables):
            return None, silent
        fetch = apply.configured(args)
        ask = [*apply.NETWORK, "--ignore-installed", "--no-deps", *fetch]  # where the build is
        try:
            found = apply.dry_run(python, ask, io.variables, {}).sources
        except EnvironmentProblem as e:
            said = e.message.splitlines()[-1]
            return None, f"{silent}, and pip's configured index lacks {wanted[0]} ({said})"
        return fetch, (
            f"{silent}; pip's configured index holds {wanted[0]}, the one build published under "
            f"that name and version, and the fix takes it from there: {', '.join(found) or 'its resolver'}"
        )
    return list(args), f"answered by {', '.join(urls)}" if urls else "pip's configured index"


def _one_build(requirement: str, matrix: str | None, variables: Mapping[str, str]) -> bool:
    from envcheck.matrix.load import load_matrix  # only where an index did not answer
    from envcheck.matrix.scope import one_build

    return one_build(load_matrix(matrix, variables), requirement)


def merge_changes(
    plan: FixPlan, installed: Mapping[str, str], resolved: Iterable[Change]
) -> tuple[Change, ...]:
    """Every package the fix changes: the plan's removals and installs, then what pip's
    resolver adds (a dependency installed or changed)."""
    found: dict[str, Change] = {}
    for step in plan.runs:
        for name in map(canonicalize_name, step.packages):
            if step.kind == "uninstall":
                found[name] = Change(name, installed.get(name), None, True)
    for change in resolved:
        found[change.name] = replace(change, before=installed.get(change.name))
    for step in plan.runs:  # removed, then installed again at the version it had: still changed
        if step.kind != "install":
            continue
        wanted, _ = apply.requirements(step.argv[4:])
        for requirement in wanted:
            project, _, version = requirement.partition("==")
            key = canonicalize_name(project)
            if key in found and found[key].after is None and version:
                found[key] = replace(found[key], after=version)
    return tuple(sorted(found.values(), key=lambda c: c.name))


def refuse_unasked(
    changes: Iterable[Change], plan: FixPlan, installed: Mapping[str, str], allow: frozenset[str]
) -> None:
    """A package the environment holds, that the plan does not name, changed by pip's resolver:
    the user's pin, refused unless named with --allow-change. Nothing has changed yet."""
    named = {canonicalize_name(p) for p in plan.packages}
    unasked = [
        c for c in changes if c.before is not None and c.name not in named and c.name not in allow
    ]
    if not unasked:
        return
    said = "; ".join(f"{c.name} {c.before} -> {c.after}" for c in unasked)
    raise UsageError(
        f"pip would change package(s) this environment holds that the plan does not name: {said}."
        " envcheck fix does not change a package unasked: something here may need that version;"
        " nothing was changed",
        hint="to allow it, name each one: " + " ".join(f"--allow-change {c.name}" for c in unasked),
    )


def _wheel_files(wheelhouse: Path, added: Iterable[str], site: Site) -> list[str]:
    """Where the wheels of newly added distributions put their files: what an install cut short
    (a full disk) may leave behind with no RECORD to remove it by."""
    names = set(added)
    paths = dict(site.paths)
    found: list[str] = []
    for wheel in sorted(wheelhouse.glob("*.whl")):
        if canonicalize_name(wheel.name.split("-")[0]) not in names:
            continue
        try:
            with zipfile.ZipFile(wheel) as zf:
                members = zf.namelist()
        except (OSError, zipfile.BadZipFile):
            continue
        for member in members:
            if member.endswith("/"):
                continue
            top, _, rest = member.partition("/")
            base = paths.get("purelib", "")
            if top.endswith(".data"):
                kind, _, rest = rest.partition("/")
                if kind not in paths:
                    continue
                base = paths[kind]
            else:
                rest = member
            path = os.path.normpath(os.path.join(base, rest))
            if inside(path, site.prefix):  # no wheel installs outside; none is removed there
                found.append(path)
    return found


def _apply(journal: Journal, io: Io, doctor: DoctorOptions) -> Part:
    """The journaled steps, then the verification; the record put back on any failure."""
    ran: list[Ran] = []
    try:
        failed = _run_steps(journal, io, ran)
        journal.enter("verify")
    except KeyboardInterrupt:  # a signal between steps (never inside one): undo what ran
        rb = roll_back(journal, io)
        io.tell(interrupted_words(rb))
        raise
    except EnvironmentProblem as e:  # the journal could not be written (a full disk): undo
        return _back(journal, io, doctor, tuple(ran), e.message, int(ExitStatus.ENVIRONMENT))
    if failed is not None:
        what = f"`{' '.join(failed.argv)}` exited {failed.code}: {failed.last_line}"
        return _back(journal, io, doctor, tuple(ran), what, int(ExitStatus.ENVIRONMENT))
    return _verify(journal, io, doctor, tuple(ran))


def _run_steps(journal: Journal, io: Io, ran: list[Ran]) -> Ran | None:
    for n, step in enumerate(journal.steps, 1):
        if step.state == "done":
            continue
        step.state = "started"
        journal.save()
        io.pause(f"step-{n}")
        result = io.run(step.argv, journal.record)
        ran.append(result)
        step.state = "done" if result.code == 0 else "failed"
        if result.code != 0:
            _save_if_possible(journal)  # a full disk must not stop the rollback that frees it
            return result
        journal.save()
    return None


def _verify(journal: Journal, io: Io, doctor: DoctorOptions, ran: tuple[Ran, ...]) -> Part:
    try:  # a signal as soon as this is said is one during the verification
        io.say(
            f"envcheck fix: verifying: a smoke training under {journal.python} (on the "
            f"{(journal.expect or 'cpu').upper()})"
        )
        io.pause("verify")
        options = replace(
            doctor,
            python=journal.python,
            smoke=True,
            in_process=True,
            image=None,
            expect_gpu=journal.expect == "gpu",
            quiet=True,
        )
        verified = Summary.of(io.diagnose(options), journal.python)
        new = sorted(apply.pip_check(journal.python, io.variables) - _recorded_problems(journal))
    except KeyboardInterrupt:
        io.tell(
            "envcheck fix: interrupted during the verification: the environment is as planned "
            f"(every step applied), not verified; `{envcheck_line(journal.python, 'fix', '--resume')}`"
            f" verifies it, `{envcheck_line(journal.python, 'fix', '--rollback')}` puts the record "
            "back"
        )
        raise
    failed = verified.unproven(journal.expect, journal.python)
    if failed is not None:
        return _back(journal, io, doctor, ran, failed[1], failed[0], verified)
    if new:
        what = f"pip check finds new problems after the change: {'; '.join(new)}"
        return _back(journal, io, doctor, ran, what, int(ExitStatus.ENVIRONMENT), verified, new)
    journal.close("fixed")
    _drop_copies(journal)
    return Part("fixed", 0, ran, verified)


def _drop_copies(journal: Journal) -> None:
    """After a fix that holds, the wheelhouse and the kept files are only weight (a GPU build is
    gigabytes): the freeze, pip config and journal stay as the account of what changed."""
    for name in ("wheelhouse", "kept"):
        shutil.rmtree(Path(journal.record) / name, ignore_errors=True)


def _recorded_problems(journal: Journal) -> frozenset[str]:
    try:
        text = record_text(journal, "pip-check.txt")
    except UsageError:
        return frozenset()
    return frozenset(line for line in text.splitlines() if line)


def _back(
    journal: Journal,
    io: Io,
    doctor: DoctorOptions,
    ran: tuple[Ran, ...],
    failed: str,
    code: int,
    verified: Summary | None = None,
    new: Sequence[str] = (),
) -> Part:
    rb = roll_back(journal, io)
    after = Summary.of(io.diagnose(replace(doctor, python=journal.python, smoke=False, quiet=True)))
    outcome: PartOutcome = "rolled-back" if rb.complete else "rollback-incomplete"
    return Part(outcome, code, ran, verified, failed, rb, after, tuple(new))


def roll_back(journal: Journal, io: Io) -> Rollback:
    """The record put back and proven, with every ending signal deferred until it is: a signal
    during the rollback is raised once it has finished (and the journal is closed)."""
    done: list[Rollback] = []
    try:
        with deferred():
            journal.phase = "rollback"
            io.say(f"envcheck fix: rolling back to the record {journal.record}")
            _save_if_possible(journal)  # on a full disk the rollback itself makes room
            io.pause("rollback")
            rb = _restore(journal, io)
            journal.close("rolled-back" if rb.complete else "rollback-incomplete")
            if rb.complete:  # else the kept files are what a person restores by hand
                _drop_copies(journal)
            done.append(rb)
    except KeyboardInterrupt:
        if done:
            io.tell(
                "envcheck fix: a signal arrived during the rollback: it finished first; "
                + _state_words(done[0])
            )
        raise
    return done[0]


def _save_if_possible(journal: Journal) -> None:
    try:
        journal.save()
    except EnvironmentProblem:
        pass  # the next save says it, once there is room


def _restore(journal: Journal, io: Io) -> Rollback:
    python, folder = journal.python, Path(journal.record)
    recorded = record_text(journal, "freeze.txt")
    kept = keep.load(journal)  # both checked before the first change
    cut = pipstep.clean(journal.record, journal.prefix, io.tell)  # a cut step's stash: not ours
    old = apply.installed_versions(recorded)
    new = apply.installed_versions(apply.freeze(python, io.variables))
    # everything the fix touched goes, even at its recorded version (another build of it may
    # be there now), then the kept files come back: never a mix of two builds' files
    touched = set(journal.kept) | set(journal.added)
    drop = sorted(
        n for n in new if (old.get(n) != new[n] or n in touched) and n not in NEVER_CHANGED
    )
    ran: list[Ran] = []
    site = ask_site(python, io.variables, drop)
    roots = [path for _, path in site.paths]
    if drop:  # pip reads what to remove from their RECORD: no network
        argv = (python, "-m", "pip", "uninstall", "-y", *journal.pip_flags, *drop)
        ran.append(io.run(argv, journal.record))
        keep.prune_folders(_paths(site), roots)
    keeping = {k.path for k in kept}
    problems = cut + keep.remove_files((p for p in journal.strays if p not in keeping), roots)
    problems += keep.restore(kept, folder / "kept")
    problems += keep.differences(kept, folder / "kept")
    return _prove(journal, io, recorded, tuple(ran), problems)


def _prove(
    journal: Journal, io: Io, recorded: str, ran: tuple[Ran, ...], problems: list[str]
) -> Rollback:
    """Back as it was, by files: every kept file byte for byte (`problems` says which are not),
    every distribution at its recorded version, the freeze byte for byte, and nothing new from
    pip check."""
    python = journal.python
    old = apply.installed_versions(recorded)
    now = apply.freeze(python, io.variables)
    new = apply.installed_versions(now)
    site = ask_site(python, io.variables, journal.kept)
    differences = list(problems)
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            differences.append(
                f"{name}: recorded {old.get(name) or 'absent'}, now {new.get(name) or 'absent'}"
            )
    differences += [p for p in journal.strays if os.path.lexists(p) and p not in _paths(site)]
    differences += [f"{p}: pip's stash" for p in pipstep.leftovers(journal.record, journal.prefix)]
    broken = apply.pip_check(python, io.variables) - _recorded_problems(journal)
    return Rollback(ran, now == recorded, tuple(differences), tuple(sorted(broken)))


def _paths(site: Site) -> set[str]:
    return {path for d in site.dists for path, _, _ in d.files}


def _state_words(rb: Rollback) -> str:
    if rb.complete:
        return "the environment is as it was (its files match the record)"
    if rb.differences:  # "did not restore" only where a file or a version differs
        return "the rollback did NOT restore the record: " + "; ".join(
            [*rb.differences[:5], *rb.new_problems[:5]]
        )
    if rb.new_problems:
        return "every kept file is back as recorded, but pip check finds new problems: " + (
            "; ".join(rb.new_problems[:5])
        )
    return "every kept file is back as recorded, but pip freeze differs from the record"


def interrupted_words(rb: Rollback) -> str:
    if rb.complete:
        return (
            "envcheck fix: interrupted while applying: rolled back, the environment is as it was "
            "(its files match the record)"
        )
    return "envcheck fix: interrupted while applying: " + _state_words(rb)


def finish_unfinished(
    folder: Path, action: str, io: Io, doctor: DoctorOptions, python: str, prefix: str
) -> Part:
    """An open journal left by a killed fix: `rollback` puts its record back; `resume` runs the
    steps not done and verifies (rolling back if that fails)."""
    if unfinished(folder, python) is None:  # before the lock: no folder is made for nothing
        raise UsageError(
            f"--{action}: no unfinished `envcheck fix` of {prefix}",
            hint=f"nothing to finish: run `{envcheck_line(python, 'fix')}` to see the plan",
        )
    with held(folder, prefix) as lock, pipstep.holding(lock):
        journal = unfinished(folder, python)
        if journal is None:
            raise UsageError(
                f"--{action}: no unfinished `envcheck fix` of {prefix}",
                hint=f"nothing to finish: run `{envcheck_line(python, 'fix')}` to see the plan",
            )
        check_record(journal)  # a record gone or not the fix's: said before any change
        io.tell(f"envcheck fix: found {unfinished_words(journal)}; --{action}")
        if action == "rollback":
            rb = roll_back(journal, io)
            after = Summary.of(io.diagnose(replace(doctor, python=python, smoke=False)))
            outcome: PartOutcome = "rolled-back" if rb.complete else "rollback-incomplete"
            code = 0 if rb.complete else int(ExitStatus.ENVIRONMENT)
            return Part(outcome, code, (), None, None, rb, after)
        if journal.phase in ("rollback", "record", "download", "resolve", "keep"):
            raise UsageError(
                f"--resume: that fix stopped in its {journal.phase} phase, before a step it "
                "could finish ran, or while rolling back",
                hint=f"run `{envcheck_line(python, 'fix', '--rollback')}`",
            )
        problems = pipstep.clean(journal.record, prefix, io.tell)  # the cut step's stash first
        if problems:
            raise EnvironmentProblem(
                "--resume: what the cut pip step left cannot be removed: " + "; ".join(problems),
                hint=f"run `envcheck fix --python {python} --rollback`",
            )
        for step in journal.steps:
            if step.state != "done":
                step.state = "pending"  # a step cut short runs again: pip is idempotent
        return _apply(journal, io, doctor)
