"""`envcheck fix`: parse the command line and dispatch to envcheck.fix.runner.repair, which plans from
the doctor's findings and, with --yes, applies the plan as a transaction; then print its outcome
(render/fix.py: text, or --json)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from envcheck.commands import add_choice_arguments
from envcheck.commands.doctor import positive_seconds
from envcheck.contracts.exitcodes import EXIT_CODES_HELP

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment
    from envcheck.fix.outcome import FixOutcome
    from envcheck.fix.runner.repair import FixOptions
    from envcheck.fix.runner.transaction import Io

EXAMPLES = """examples:
  envcheck fix                                  # the plan: what would change and why; nothing runs
  envcheck fix --yes                            # apply it, verify with a smoke, roll back on failure
  envcheck fix --python /opt/venv/bin/python --yes --json > fix.json
  envcheck fix --paddle 2.6.2 --no-pull --yes   # that release; leave the container alone
  envcheck fix --paddle-index https://mirror.example/paddle   # a mirror of Paddle's index
  envcheck fix --yes --allow-change protobuf    # let pip change an installed protobuf too
  envcheck fix --rollback                       # put back what a killed fix recorded"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "fix",
        help="repair what the doctor found: a plan (dry run), --yes applies and verifies it",
        description="Run the doctor, turn its findings into a plan (remove conflicting Paddle "
        "builds, install the pinned build for this host's driver and GPUs, pull the image the "
        "doctor chose where the engine lacks it; root-only steps printed, never run). Nothing "
        "changes without --yes; then the target is locked, its `pip freeze` recorded, every "
        "wheel downloaded into the record before the first change, the files of what is "
        "removed or replaced kept there, each step journaled, a smoke run in it (and in the "
        "pulled image) again, and the recorded state put back from the record (no network) "
        "and proven by its files if a smoke or `pip check` does not hold. Record, journal "
        "and lock live in <prefix>/.envcheck-fix of the target. A dry run "
        "exits 0 when there is nothing to fix, 1 when only manual steps are left, else with the "
        "doctor's code.",
        epilog=f"{EXAMPLES}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_argument_group("what to fix")
    add_choice_arguments(what)
    what.add_argument(
        "--image", metavar="REF", help="the image to check and pull (default: the chosen one)"
    )
    what.add_argument(
        "--no-pull",
        action="store_true",
        help="leave the container alone: do not plan the pull of the image the doctor chose",
    )
    what.add_argument(
        "--paddle-index",
        metavar="URL",
        help="base URL of Paddle's package index or its mirror (default: ENVCHECK_PADDLE_INDEX, "
        "else https://www.paddlepaddle.org.cn)",
    )
    how = p.add_argument_group("how")
    mode = how.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    mode.add_argument("--yes", action="store_true", help="apply the plan, then verify it")
    mode.add_argument(
        "--rollback",
        action="store_true",
        help="an unfinished fix (killed, its session lost) was found: put back the state it "
        "recorded, from its record (no network)",
    )
    mode.add_argument(
        "--resume",
        action="store_true",
        help="an unfinished fix was found: run the steps it did not finish, then verify them",
    )
    how.add_argument(
        "--break-system-packages",
        action="store_true",
        help="pip's own PEP 668 override: allow an externally managed interpreter",
    )
    how.add_argument(
        "--shared-interpreter",
        action="store_true",
        help="allow --yes to change a Python outside any virtual environment or conda prefix "
        "(a system, pyenv or toolcache Python every user of it shares); without it, --yes asks "
        "at a terminal and refuses elsewhere",
    )
    how.add_argument(
        "--allow-change",
        metavar="NAME",
        action="append",
        default=[],
        help="a package this environment holds that pip's resolver would change though the "
        "plan does not name it (e.g. a pinned protobuf): refused unless named here (repeat "
        "for each)",
    )
    how.add_argument(
        "--smoke-timeout",
        metavar="SECONDS",
        type=positive_seconds,
        default=300.0,
        help="the verification smoke's limit (default: 300)",
    )
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="the plan and outcome as one document")
    out.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (pip's own output is in the record's pip.log)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, env: Environment) -> int:
    from envcheck.contracts.errors import EnvcheckError
    from envcheck.fix.runner.repair import fix_environment
    from envcheck.render.sanitize import hide_credentials

    shown: list[str] = []  # the plan, said before the first step (text output only)
    try:
        outcome = fix_environment(_options(args, env), _io(args, env, shown))
    except EnvcheckError as e:  # its words may name the index: said without its credentials
        e.message = hide_credentials(e.message)
        e.hint = None if e.hint is None else hide_credentials(e.hint)
        e.args = (e.message,)
        raise
    _print(args, outcome, env, bool(shown))
    return outcome.exit_code


def _options(args: argparse.Namespace, env: Environment) -> FixOptions:
    from packaging.utils import canonicalize_name

    from envcheck.contracts.doctor_options import DoctorOptions
    from envcheck.fix.plan import PIP_OVERRIDE
    from envcheck.fix.runner.repair import FixOptions

    doctor = DoctorOptions(
        python=args.python,
        matrix=env.path(args.matrix) if args.matrix else None,
        paddle=args.paddle,
        registry=args.registry,
        image=args.image,
        smoke=False,
        smoke_timeout=args.smoke_timeout,
        quiet=True,
    )
    return FixOptions(
        doctor,
        apply=args.yes,
        pull=not args.no_pull,
        pip_flags=(PIP_OVERRIDE,) if args.break_system_packages else (),
        allow=frozenset(canonicalize_name(n) for n in args.allow_change),
        unfinished="rollback" if args.rollback else "resume" if args.resume else "refuse",
        shared=args.shared_interpreter,
    )


def _io(args: argparse.Namespace, env: Environment, shown: list[str]) -> Io:
    """The transaction's voice: the plan on stdout before its first step (text output), then
    progress on stderr, one line a step, every one made visible (pip relays what an index
    sends, escape codes included)."""
    from envcheck.commands.doctor import diagnose
    from envcheck.contracts.record import replace
    from envcheck.fix.runner.transaction import Io
    from envcheck.matrix.mirror import PADDLE_INDEX_ENV, paddle_index
    from envcheck.render.sanitize import hide_credentials, visible

    variables = env.env
    if args.paddle_index:  # ENVCHECK_PADDLE_INDEX for this run: doctor, plan and steps agree
        base = paddle_index(args.paddle_index, "--paddle-index")
        variables = {**variables, PADDLE_INDEX_ENV: base}
        env = replace(env, env=variables)

    def tell(text: str) -> None:
        print(visible(hide_credentials(text)), file=env.stderr, flush=True)

    def say(text: str) -> None:
        if not args.quiet:
            tell(text)

    def echo(line: str) -> None:
        print(f"  | {visible(hide_credentials(line))}", file=env.stderr)

    def confirm(question: str) -> bool:
        print(visible(question), end="", file=env.stderr, flush=True)
        assert env.stdin is not None
        return env.stdin.readline().strip().lower() in ("y", "yes")

    def show(outcome: FixOutcome) -> None:
        from envcheck.edges.streams import reader_may_leave
        from envcheck.render.fix import render_plan

        if args.json:  # the one document, at the end
            return
        shown.append("plan")
        with reader_may_leave(env.stdout):
            lines = render_plan(_without_credentials(outcome.to_json()))
            env.stdout.write("".join(f"{line}\n" for line in lines))
            env.stdout.flush()

    from envcheck.contracts.command_env import isatty

    asks = env.stdin is not None and isatty(env.stdin) and isatty(env.stderr)
    return Io(
        variables,
        say,
        tell,
        None if args.quiet else echo,
        lambda options: diagnose(options, env),
        confirm if asks else None,
        show,
    )


def _without_credentials(value: Any) -> Any:
    """The outcome document with every index's credentials masked, wherever a URL is echoed
    (the plan's argv, the doctor's fixes, which index answered, pip's tail)."""
    from envcheck.render.sanitize import hide_credentials

    if isinstance(value, str):
        return hide_credentials(value)
    if isinstance(value, list):
        return [_without_credentials(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_credentials(v) for k, v in value.items()}
    return value


def _print(
    args: argparse.Namespace, outcome: FixOutcome, env: Environment, plan_shown: bool
) -> None:
    from envcheck.edges.streams import reader_may_leave

    doc = _without_credentials(outcome.to_json())
    with reader_may_leave(env.stdout):
        if args.json:
            json.dump(doc, env.stdout, indent=2)
            env.stdout.write("\n")
        else:
            from envcheck.render.fix import render_fix

            shown = plan_shown and not args.quiet  # each step said as it ended
            env.stdout.write(render_fix(doc, plan_shown=plan_shown, steps_shown=shown))
