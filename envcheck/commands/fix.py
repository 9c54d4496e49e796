"""`envcheck fix`: the doctor's findings → a plan (dry run by default) → with --yes, applied to
the target interpreter, verified by a second smoke in it, and rolled back if that fails.

    diagnose (doctor, no smoke) -> plan_fix (pure) -> [--yes: lock, record, run, verify in-process,
    roll back on failure] -> one document (render/fix.py: text, or --json)
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import TYPE_CHECKING, Any

from envcheck import __version__
from envcheck.commands import add_choice_arguments
from envcheck.commands.doctor import positive_seconds
from envcheck.errors import UsageError
from envcheck.exitcodes import EXIT_CODES_HELP, ExitStatus

if TYPE_CHECKING:
    from envcheck.environment import Environment
    from envcheck.fix.apply import Ran, Record, Rollback
    from envcheck.fix.plan import FixPlan, Wheel
    from envcheck.report import Report

SCHEMA_VERSION = 1

EXAMPLES = """examples:
  envcheck fix                                  # the plan: what would change and why; nothing runs
  envcheck fix --yes                            # apply it, verify with a smoke, roll back on failure
  envcheck fix --python /opt/venv/bin/python --yes --json > fix.json
  envcheck fix --paddle 2.6.2 --pull --yes      # that release, and pull its image too
  envcheck fix --paddle-index https://mirror.example/paddle   # a mirror of Paddle's index"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "fix",
        help="repair what the doctor found: a plan (dry run), --yes applies and verifies it",
        description="Run the doctor, turn its findings into a plan (remove conflicting Paddle "
        "builds, install the pinned build for this host's driver and GPUs, pull the image; "
        "root-only steps printed, never run). Nothing changes without --yes; then the target is "
        "locked, its `pip freeze` recorded, the plan applied, a smoke run in it again, and the "
        "recorded state restored if the smoke does not prove the expected result. A dry run "
        "exits 0 when there is nothing to fix, 1 when only manual steps are left, else with the "
        "doctor's code.",
        epilog=f"{EXAMPLES}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_argument_group("what to fix")
    add_choice_arguments(what)
    what.add_argument(
        "--image", metavar="REF", help="the image to pull with --pull (default: the chosen one)"
    )
    what.add_argument(
        "--pull", action="store_true", help="also pull the image the doctor chose (pull-image)"
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
    how.add_argument(
        "--break-system-packages",
        action="store_true",
        help="pip's own PEP 668 override: allow an externally managed interpreter",
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
    out.add_argument("--quiet", action="store_true", help="no progress and no pip output on stderr")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, env: Environment) -> int:
    from envcheck.fix.plan import PIP_OVERRIDE, paddle_index_base, plan_fix
    from envcheck.probe.interpreter import resolve_interpreter

    base = _index_base(args.paddle_index or paddle_index_base(env.env))
    target = resolve_interpreter(args.python, env.env)
    report = _diagnose(args, env, target.python, smoke=False)
    flags = (PIP_OVERRIDE,) if args.break_system_packages else ()
    pull = (sys.executable, "-m", "envcheck", "pull-image") if args.pull else ()
    plan = plan_fix(report, target.python, index_base=base, pip_flags=flags, pull=pull)
    doc = _document(plan, report, dry_run=not args.yes)
    if not args.yes or not plan.runs:
        doc.update(_plan_only(plan, report))
    else:
        doc.update(_apply(args, env, plan, report, target.prefix, base))
    _print(args, doc, env)
    return int(doc["exit_code"])


def _index_base(url: str) -> str:
    if not url.startswith(("https://", "http://", "file://")) or any(c.isspace() for c in url):
        raise UsageError(
            f"--paddle-index {url!r} is not a URL",
            hint="give the base of Paddle's index or its mirror, e.g. https://www.paddlepaddle.org.cn",
        )
    return url.rstrip("/")


def _doctor_args(args: argparse.Namespace, python: str, *, smoke: bool) -> argparse.Namespace:
    """The doctor's own command line for this target: its parser, so its defaults hold."""
    from envcheck.commands import doctor

    parser = argparse.ArgumentParser(prog="envcheck")
    doctor.register(parser.add_subparsers())
    argv = ["doctor", "--python", python, "--registry", args.registry, "--quiet"]
    argv += ["--paddle", args.paddle] if args.paddle else []
    argv += ["--matrix", args.matrix] if args.matrix else []
    argv += ["--image", args.image] if args.image else []
    argv += (
        ["--in-process", "--smoke-timeout", str(args.smoke_timeout)] if smoke else ["--no-smoke"]
    )
    return parser.parse_args(argv)


def _diagnose(
    args: argparse.Namespace,
    env: Environment,
    python: str,
    *,
    smoke: bool,
    expect_gpu: bool = False,
) -> Report:
    from envcheck.commands.doctor import diagnose

    doctor_args = _doctor_args(args, python, smoke=smoke)
    doctor_args.expect_gpu = expect_gpu
    return diagnose(doctor_args, env)


def _document(plan: FixPlan, report: Report, *, dry_run: bool) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "envcheck_version": __version__,
        "dry_run": dry_run,
        "plan": plan.to_json(),
        "doctor": _summary(report),
    }


def _summary(report: Report) -> dict[str, Any]:
    return {
        "verdict": report.verdict,
        "exit_code": int(report.exit_status),
        "proof": report.proof,
        "findings": [
            {"id": f.id, "severity": f.severity, "message": f.message}
            for f in report.findings
            if f.severity != "pass"
        ],
    }


def _plan_only(plan: FixPlan, report: Report) -> dict[str, Any]:
    if plan.runs:  # a dry run of real changes: the state now, as the doctor judges it
        return {"outcome": "planned", "exit_code": int(report.exit_status)}
    if plan.manual:
        return {"outcome": "manual-only", "exit_code": int(ExitStatus.INCOMPATIBLE)}
    return {"outcome": "nothing-to-fix", "exit_code": int(ExitStatus.OK)}


def _apply(
    args: argparse.Namespace,
    env: Environment,
    plan: FixPlan,
    report: Report,
    prefix: str,
    base: str,
) -> dict[str, Any]:
    from envcheck.fix import apply
    from envcheck.fix.plan import PIP_OVERRIDE

    pip_flags = (PIP_OVERRIDE,) if args.break_system_packages else ()
    if any(s.kind in ("install", "uninstall") for s in plan.runs):
        apply.refuse_externally_managed(plan.python, pip_flags, env.env)
    folder = apply.state_dir(env.env)
    with apply.target_lock(prefix, folder / "locks"):
        rec = apply.record(plan.python, prefix, folder / "records", env.env)
        return _apply_locked(args, env, plan, report, rec, base, pip_flags)


def _apply_locked(
    args: argparse.Namespace,
    env: Environment,
    plan: FixPlan,
    report: Report,
    rec: Record,
    base: str,
    pip_flags: tuple[str, ...],
) -> dict[str, Any]:
    from envcheck.fix import apply

    runner = _runner(args, env)
    source = _installed_source(report, base)
    result: dict[str, Any] = {"record": rec.to_json()}

    def restore() -> Rollback:
        return apply.roll_back(
            plan.python, rec, runner, env.env, paddle_source=source, pip_flags=pip_flags
        )

    def back(failed: str, code: int) -> dict[str, Any]:
        rb = restore()
        after = _diagnose(args, env, plan.python, smoke=False)  # the doctor, once more
        return result | _rolled_back(rb, failed, code, after)

    try:
        done, failed = apply.run_steps(plan.runs, runner)
    except KeyboardInterrupt:  # after the running pip ended (deferred): undo what ran
        _say(env, _interrupted_words(restore()))
        raise
    result["applied"] = [r.to_json() for r in done]
    if failed is not None:
        last = (failed.tail.strip().splitlines() or [""])[-1]
        what = f"`{shlex.join(failed.argv)}` exited {failed.code}: {last}"
        return back(what, int(ExitStatus.ENVIRONMENT))
    try:
        _say(
            env,
            f"envcheck fix: verifying: a smoke training under {plan.python} (on the "
            f"{(plan.expect or 'cpu').upper()})",
            quiet=args.quiet,
        )
        verified = _diagnose(args, env, plan.python, smoke=True, expect_gpu=plan.expect == "gpu")
    except KeyboardInterrupt:
        _say(
            env,
            "envcheck fix: interrupted during the verification: the environment is as planned "
            "(every step applied), not verified; run `envcheck doctor` to verify it",
        )
        raise
    result["verification"] = _summary(verified)
    want = "gpu-trained" if plan.expect == "gpu" else "cpu-trained"
    if verified.exit_status == ExitStatus.OK and verified.proof == want:
        return result | {"outcome": "fixed", "exit_code": int(ExitStatus.OK)}
    code = int(verified.exit_status) or int(
        ExitStatus.CPU_FALLBACK if plan.expect == "gpu" else ExitStatus.SMOKE_FAILED
    )
    failures = [f.message for f in verified.findings if f.severity == "fail"]
    what = (
        f"the verification smoke: verdict {verified.verdict}, proof {verified.proof} "
        f"(expected {want})" + (f": {failures[0]}" if failures else "")
    )
    return back(what, code)


def _rolled_back(rb: Rollback, failed: str, code: int, after: Report) -> dict[str, Any]:
    return {
        "outcome": "rolled-back" if rb.freeze_matches else "rollback-incomplete",
        "exit_code": code,
        "failed": failed,
        "rollback": rb.to_json(),
        "after_rollback": _summary(after),
    }


def _interrupted_words(rb: Rollback) -> str:
    if rb.freeze_matches:
        return (
            "envcheck fix: interrupted while applying: rolled back, the environment is as it was "
            "(pip freeze matches the record)"
        )
    return "envcheck fix: interrupted while applying: the rollback did NOT restore the record"


def _installed_source(report: Report, base: str) -> Wheel | None:
    """Where the Paddle build installed before the fix came from (its index), for the rollback."""
    from envcheck.fix.plan import paddle_wheel

    p = report.host.paddle
    if p.status != "ok" or not p.version:
        return None
    try:
        return paddle_wheel(p.version, p.cuda, base)
    except ValueError:  # an unreadable version: pip's configured index
        return None


def _runner(args: argparse.Namespace, env: Environment) -> Any:
    from envcheck.fix import apply

    def echo(line: str) -> None:
        print(f"  | {line}", file=env.stderr)

    def run(argv: Any) -> Ran:
        _say(env, f"envcheck fix: $ {shlex.join(argv)}", quiet=args.quiet)
        return apply.run_command(argv, env.env, None if args.quiet else echo)

    return run


def _say(env: Environment, text: str, *, quiet: bool = False) -> None:
    if not quiet:
        print(text, file=env.stderr, flush=True)


def _print(args: argparse.Namespace, doc: dict[str, Any], env: Environment) -> None:
    from envcheck.streams import reader_may_leave

    with reader_may_leave(env.stdout):
        if args.json:
            json.dump(doc, env.stdout, indent=2)
            env.stdout.write("\n")
        else:
            from envcheck.render.fix import render_fix

            env.stdout.write(render_fix(doc))
