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
from envcheck.contracts.exitcodes import EXIT_CODES_HELP, ExitStatus

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment
    from envcheck.contracts.host_report import Report
    from envcheck.fix.apply import Ran, Record, Rollback
    from envcheck.fix.plan import FixPlan, ImageState, Wheel

SCHEMA_VERSION = 1

EXAMPLES = """examples:
  envcheck fix                                  # the plan: what would change and why; nothing runs
  envcheck fix --yes                            # apply it, verify with a smoke, roll back on failure
  envcheck fix --python /opt/venv/bin/python --yes --json > fix.json
  envcheck fix --paddle 2.6.2 --no-pull --yes   # that release; leave the container alone
  envcheck fix --paddle-index https://mirror.example/paddle   # a mirror of Paddle's index"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "fix",
        help="repair what the doctor found: a plan (dry run), --yes applies and verifies it",
        description="Run the doctor, turn its findings into a plan (remove conflicting Paddle "
        "builds, install the pinned build for this host's driver and GPUs, pull the image the "
        "doctor chose where the engine lacks it; root-only steps printed, never run). Nothing "
        "changes without --yes; then the target is locked, its `pip freeze` recorded, the plan "
        "applied, a smoke run in it (and in the pulled image) again, and the recorded state "
        "restored if a smoke does not prove the expected result. A dry run "
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
        "--pull",
        action="store_true",
        help="deprecated, does nothing: the pull is planned whenever the engine lacks the image",
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
    from envcheck.fix.plan import PIP_OVERRIDE, plan_fix
    from envcheck.probe.interpreter import resolve_interpreter

    env = _with_index(args, env)
    target = resolve_interpreter(args.python, env.env)
    report = _diagnose(args, env, target.python, smoke=False)
    flags = (PIP_OVERRIDE,) if args.break_system_packages else ()
    if args.pull:
        _say(
            env,
            "envcheck: warning: --pull is deprecated and does nothing: the pull of the "
            "image the doctor chose is planned whenever the engine lacks it (--no-pull: never)",
        )
    pull = () if args.no_pull else _pull_argv(args)
    image = _image_state(args, env, report)
    plan = plan_fix(report, target.python, pip_flags=flags, pull=pull, image=image)
    doc = _document(plan, report, dry_run=not args.yes)
    if not args.yes or not plan.runs:
        doc.update(_plan_only(plan, report))
    else:
        doc.update(_apply(args, env, plan, report, target.prefix))
    _print(args, doc, env)
    return int(doc["exit_code"])


def _with_index(args: argparse.Namespace, env: Environment) -> Environment:
    """--paddle-index is ENVCHECK_PADDLE_INDEX for this run: the matrix is loaded with it, so the
    doctor's advice, the plan and the rollback name the same index (envcheck.matrix.mirror)."""
    from envcheck.contracts.record import replace
    from envcheck.matrix.mirror import PADDLE_INDEX_ENV, paddle_index

    if not args.paddle_index:
        return env
    base = paddle_index(args.paddle_index, "--paddle-index")
    return replace(env, env={**env.env, PADDLE_INDEX_ENV: base})


def _pull_argv(args: argparse.Namespace) -> tuple[str, ...]:
    """The existing pull (`envcheck pull-image`: its checks, retries, progress and digest proof),
    run as a step like pip: what follows is `--image REF`."""
    argv = (sys.executable, "-m", "envcheck", "pull-image", "--registry", args.registry)
    return (*argv, *(("--matrix", args.matrix) if args.matrix else ()))


def _image_state(args: argparse.Namespace, env: Environment, report: Report) -> ImageState | None:
    """Whether the engine holds the image the doctor chose, asked of the engine itself (never
    guessed from a name); None when the doctor chose no image."""
    from envcheck.fix.plan import ImageState

    ref = report.image.ref if report.image is not None else None
    if not ref:
        return None
    if args.no_pull:
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
        found = probe_image(ref, resolve_endpoint(env.env), timeout=10)
    except (OSError, ValueError) as e:
        return ImageState(ref, None, f"not planned: the engine did not say ({e})")
    if found:
        return ImageState(ref, True, f"the engine holds it as {found[:19]}")
    return ImageState(ref, False, "the engine does not hold it")


def _doctor_args(
    args: argparse.Namespace, python: str, *, smoke: bool, image: str | None = None
) -> argparse.Namespace:
    """The doctor's own command line for this target: its parser, so its defaults hold. `image`:
    the smoke runs in that (pulled) image, never pulling it again; else in the target."""
    from envcheck.commands import doctor

    parser = argparse.ArgumentParser(prog="envcheck")
    doctor.register(parser.add_subparsers())
    argv = ["doctor", "--python", python, "--registry", args.registry, "--quiet"]
    argv += ["--paddle", args.paddle] if args.paddle else []
    argv += ["--matrix", args.matrix] if args.matrix else []
    argv += ["--image", image or args.image] if image or args.image else []
    if not smoke:
        argv += ["--no-smoke"]
    else:
        argv += ["--no-pull"] if image else ["--in-process"]
        argv += ["--smoke-timeout", str(args.smoke_timeout)]
    return parser.parse_args(argv)


def _diagnose(
    args: argparse.Namespace,
    env: Environment,
    python: str,
    *,
    smoke: bool,
    expect_gpu: bool = False,
    image: str | None = None,
) -> Report:
    from envcheck.commands.doctor import diagnose

    doctor_args = _doctor_args(args, python, smoke=smoke, image=image)
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
            {"id": f.id, "severity": f.severity, "message": f.message, "fix": f.fix}
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
) -> dict[str, Any]:
    """The interpreter is locked and recorded only where a step changes it (a pull-only plan
    leaves it alone)."""
    from envcheck.fix import apply
    from envcheck.fix.plan import PIP_OVERRIDE

    pip_flags = (PIP_OVERRIDE,) if args.break_system_packages else ()
    if not plan.pip:
        return _apply_steps(args, env, plan, report, None, pip_flags)
    apply.refuse_externally_managed(plan.python, pip_flags, env.env)
    folder = apply.state_dir(env.env)
    with apply.target_lock(prefix, folder / "locks"):
        rec = apply.record_state(plan.python, prefix, folder / "records", env.env, plan.packages)
        return _apply_steps(args, env, plan, report, rec, pip_flags)


def _apply_steps(
    args: argparse.Namespace,
    env: Environment,
    plan: FixPlan,
    report: Report,
    rec: Record | None,
    pip_flags: tuple[str, ...],
) -> dict[str, Any]:
    from envcheck.fix import apply

    runner = _runner(args, env)
    source = _installed_source(args, env, report, plan.python) if rec else None
    result: dict[str, Any] = {"record": rec.to_json()} if rec else {}

    def restore() -> Rollback | None:
        if rec is None:  # nothing of the interpreter changed; a pulled image is only a cache
            return None
        return apply.roll_back(
            plan.python, rec, runner, env.env, paddle_source=source, pip_flags=pip_flags
        )

    def back(failed: str, code: int) -> dict[str, Any]:
        rb = restore()
        if rb is None:
            return result | {"outcome": "failed", "exit_code": code, "failed": failed}
        after = _diagnose(args, env, plan.python, smoke=False)  # the doctor, once more
        return result | _rolled_back(rb, failed, code, after)

    try:
        done, failed = apply.run_steps(plan.runs, runner)
    except KeyboardInterrupt:  # after the running step ended (deferred): undo what ran
        _say(env, _interrupted_words(restore()))
        raise
    result["applied"] = [r.to_json() for r in done]
    if failed is not None:
        last = (failed.tail.strip().splitlines() or [""])[-1]
        what = f"`{shlex.join(failed.argv)}` exited {failed.code}: {last}"
        return back(what, int(ExitStatus.ENVIRONMENT))
    want = "gpu-trained" if plan.expect == "gpu" else "cpu-trained"
    result["verifications"] = []
    # the target interpreter where pip changed it, then the pulled image
    for image in ([None] if plan.pip else []) + ([plan.pulled] if plan.pulled else []):
        verified = _verify(args, env, plan, image)
        result["verification"] = _summary(verified) | {"ran_in": image or plan.python}
        result["verifications"].append(result["verification"])
        if verified.exit_status != ExitStatus.OK or verified.proof != want:
            code = int(verified.exit_status) or int(
                ExitStatus.CPU_FALLBACK if plan.expect == "gpu" else ExitStatus.SMOKE_FAILED
            )
            what = (  # its findings are the verification's own, said there
                f"the verification smoke in {image or plan.python}: verdict {verified.verdict}, "
                f"proof {verified.proof} (expected {want})"
            )
            return back(what, code)
    return result | {"outcome": "fixed", "exit_code": int(ExitStatus.OK)}


def _verify(args: argparse.Namespace, env: Environment, plan: FixPlan, image: str | None) -> Report:
    """The smoke again, in the target interpreter (`image` None) or in the pulled image."""
    where = f"in the image {image}" if image else f"under {plan.python}"
    try:
        _say(
            env,
            f"envcheck fix: verifying: a smoke training {where} (on the "
            f"{(plan.expect or 'cpu').upper()})",
            quiet=args.quiet,
        )
        return _diagnose(
            args, env, plan.python, smoke=True, expect_gpu=plan.expect == "gpu", image=image
        )
    except KeyboardInterrupt:
        _say(
            env,
            "envcheck fix: interrupted during the verification: the environment is as planned "
            "(every step applied), not verified; run `envcheck doctor` to verify it",
        )
        raise


def _rolled_back(rb: Rollback, failed: str, code: int, after: Report) -> dict[str, Any]:
    return {
        "outcome": "rolled-back" if rb.freeze_matches else "rollback-incomplete",
        "exit_code": code,
        "failed": failed,
        "rollback": rb.to_json(),
        "after_rollback": _summary(after),
    }


def _interrupted_words(rb: Rollback | None) -> str:
    if rb is None:
        return "envcheck fix: interrupted while applying: the interpreter was not changed"
    if rb.freeze_matches:
        return (
            "envcheck fix: interrupted while applying: rolled back, the environment is as it was "
            "(pip freeze matches the record)"
        )
    return "envcheck fix: interrupted while applying: the rollback did NOT restore the record"


def _installed_source(
    args: argparse.Namespace, env: Environment, report: Report, python: str
) -> Wheel | None:
    """Where the Paddle build installed before the fix came from (its matrix row's index), for
    the rollback; None: pip's configured index."""
    from envcheck.fix.plan import Wheel
    from envcheck.matrix.builds import build_for
    from envcheck.matrix.load import load_matrix
    from envcheck.verdict.fixes import matrix_install

    p = report.host.paddle
    if p.status != "ok" or not p.version:
        return None
    try:
        build = build_for(load_matrix(args.matrix, env.env), p.version, p.cuda)
    except ValueError:  # an unreadable version
        return None
    install = matrix_install(build.pip, python) if build else None
    return Wheel.of(install, p.cuda) if install else None


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
    from envcheck.edges.streams import reader_may_leave

    with reader_may_leave(env.stdout):
        if args.json:
            json.dump(doc, env.stdout, indent=2)
            env.stdout.write("\n")
        else:
            from envcheck.render.fix import render_fix

            env.stdout.write(render_fix(doc))
