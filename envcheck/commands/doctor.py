"""`envcheck doctor`: probe (or read saved facts) → judge → choose the image → smoke → render."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from envcheck import __version__
from envcheck.commands import add_choice_arguments, check_outputs, stdout_format
from envcheck.contracts.errors import UsageError
from envcheck.contracts.exitcodes import EXIT_CODES_HELP

# Only what `register` needs at start-up: `run` starts the CUDA child before it imports the rest
# (the imports overlap its cuInit), and `--no-smoke --json` never imports the smoke, rich or the
# docker SDK.
if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment
    from envcheck.contracts.doctor_options import DoctorOptions
    from envcheck.contracts.facts import HostFacts
    from envcheck.contracts.findings import Finding
    from envcheck.contracts.host_report import ImageChoice, Report
    from envcheck.matrix.model import Matrix
    from envcheck.probe.endpoint import Endpoint
    from envcheck.probe.host import HostProbe
    from envcheck.probe.interpreter import Interpreter
    from envcheck.smoke.options import SmokeOptions
    from envcheck.verdict.recorded import RecordedSmoke


EXAMPLES = """examples:
  envcheck doctor                          # the report, the image for this host, a smoke training
  envcheck doctor --json > report.json     # one JSON document on stdout (CI, fleets)
  envcheck doctor --expect-gpu             # a GPU CI runner: no usable GPU is a failure
  envcheck doctor --no-smoke --explain     # judge only; every rejected image tag and why
  envcheck doctor --facts saved.json       # judge a saved report or `host` object
  envcheck doctor --paddle 2.6.2 --registry baidu-legacy
  envcheck doctor --gpus 0,2 --amp --compare-cpu --export
  envcheck doctor --baseline good.json --strict-drift   # a CI gate: a changed fact fails"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="inspect the GPU stack, judge it, choose the image, run the smoke training",
        description="Inspect the NVIDIA driver, GPUs, CUDA, cuDNN and the Paddle build; judge them "
        "against the compatibility matrix; choose the image tag for this host; run a smoke "
        "training inside it and prove where it ran.",
        epilog=f"{EXAMPLES}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--json", action="store_true", help="print one JSON document on stdout, nothing else"
    )
    out.add_argument(
        "--no-color", action="store_true", help="no colour, the same layout (also NO_COLOR)"
    )
    out.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (by default: a live line on a terminal, plain lines "
        "and a heartbeat every 10 s otherwise, --json included)",
    )
    out.add_argument(
        "--explain", action="store_true", help="list every rejected image tag with its reason"
    )
    out.add_argument(
        "--junit", metavar="FILE", help="write a JUnit XML report (one test case per check)"
    )
    out.add_argument(
        "--markdown",
        metavar="FILE",
        help="write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY under GitHub Actions)",
    )
    src = p.add_argument_group("what to judge")
    src.add_argument(
        "--facts",
        metavar="FILE",
        help="judge a saved `host` object or report instead of probing ('-' = stdin)",
    )
    add_choice_arguments(src)
    src.add_argument(
        "--no-host-paddle",
        action="store_true",
        help="judge no Paddle on this host: the smoke's image holds the Paddle that trains "
        "(a CI runner's own venv is not the training interpreter)",
    )
    src.add_argument(
        "--expect-gpu",
        action="store_true",
        help="this host must train on a GPU: no usable GPU is a failure",
    )
    smoke = p.add_argument_group("smoke training")
    smoke.add_argument("--no-smoke", action="store_true", help="skip the smoke training")
    smoke.add_argument(
        "--in-process",
        action="store_true",
        help="run the smoke in a subprocess of --python, not in a container",
    )
    smoke.add_argument(
        "--image", metavar="REF", help="run the smoke in this image instead of the chosen one"
    )
    smoke.add_argument(
        "--no-pull", action="store_true", help="never pull: a missing image is an error"
    )
    smoke.add_argument(
        "--gpus",
        metavar="LIST",
        help="GPU indices to smoke-train on, e.g. 0,2 (default: all visible)",
    )
    smoke.add_argument(
        "--amp", action="store_true", help="also train under automatic mixed precision"
    )
    smoke.add_argument(
        "--compare-cpu",
        action="store_true",
        help="also run the same steps on CPU and report the speedup",
    )
    smoke.add_argument(
        "--export",
        action="store_true",
        help="also export with to_static and check paddle.inference predictions",
    )
    smoke.add_argument(
        "--smoke-timeout",
        metavar="SECONDS",
        type=positive_seconds,
        default=300.0,
        help="kill the smoke after this many seconds (default: 300)",
    )
    drift = p.add_argument_group("drift (CI gate)")
    drift.add_argument(
        "--baseline", metavar="FILE", help="compare with the facts of the last good run"
    )
    drift.add_argument(
        "--strict-drift", action="store_true", help="a changed fact is a failure, not a warning"
    )
    drift.add_argument(
        "--save-baseline",
        metavar="FILE",
        help="after a pass, save this run's facts as the baseline",
    )
    p.set_defaults(run=run)


def positive_seconds(text: str) -> float:
    """Seconds more than 0 (a zero timeout would kill the smoke before it starts) and at most a
    day; a bad value's error says that range, whatever it was (`abc` once got "not a number")."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most 86400 seconds (24 hours), got {text}"
        )
    return value


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        gpus = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--gpus takes indices like 0,2, got {text!r}") from None
    if not gpus or any(g < 0 for g in gpus):
        raise UsageError(f"--gpus takes non-negative indices like 0,2, got {text!r}")
    return gpus


def check_gpus_exist(gpus: tuple[int, ...] | None, host: HostFacts) -> None:
    """`--gpus 5` on a host whose driver lists one GPU is refused before anything runs (the
    engine would fail the container later with a device error). GPUs the driver cannot list yet
    (a reboot pending) cannot be checked: the flag is taken as given."""
    from envcheck.contracts.facts import unlisted_gpus

    listed = sorted({g.index for g in host.gpus})
    if not gpus or (not listed and unlisted_gpus(host)):
        return
    missing = sorted({g for g in gpus if g not in listed})
    if not missing:
        return
    indices = ",".join(map(str, gpus))
    if listed:
        count = f"{len(listed)} GPU{'s' * (len(listed) != 1)}"
        have = f"has {count} (index {', '.join(map(str, listed))})"
    else:
        have = "has no NVIDIA GPU the driver lists"
    raise UsageError(
        f"--gpus {indices}: no GPU {', '.join(map(str, missing))} on this host, which {have}",
        hint="pass indices that `nvidia-smi -L` lists, or drop --gpus to use every GPU",
    )


def run(args: argparse.Namespace, env: Environment) -> int:
    # The CUDA driver child first: its cuInit (~0.2 s on an H100) is the slowest probe, and the
    # imports and the other probes overlap it. Whatever happens next, it is reaped.
    _resolve_paths(args, env)
    check_outputs(args, env, OUTPUT_FLAGS)  # before any probe: not after the smoke
    options = options_of(args, env)
    with _host_probe(options, env) as probe:
        from envcheck.edges import activity
        from envcheck.render.activity import make_activity_display

        to_stdout = stdout_format(args, env, OUTPUT_FLAGS)
        # Progress on stderr while the slow parts run (a live line on a terminal, lines and a
        # heartbeat in a log, under --json too); stopped before the report takes stdout.
        with activity.showing(make_activity_display("none" if args.quiet else "auto", env)):
            report = _diagnose(options, env, probe)
    _render(args, report, env, text=to_stdout is None)
    _save_baseline(args, report, env)
    return int(report.exit_status)


def diagnose(options: DoctorOptions, env: Environment) -> Report:
    """The doctor's report for `options`, not rendered: `envcheck fix` plans from it and verifies
    with it. File paths in `options` are taken as they are (resolve them from `env.cwd` first)."""
    with _host_probe(options, env) as probe:
        return _diagnose(options, env, probe)


def options_of(args: argparse.Namespace, env: Environment) -> DoctorOptions:
    """The parsed `doctor` command line as options (its file paths resolved by `_resolve_paths`)."""
    from envcheck.contracts.doctor_options import DoctorOptions

    return DoctorOptions(
        python=args.python,
        matrix=args.matrix,
        paddle=args.paddle,
        registry=args.registry,
        image=args.image,
        facts=args.facts,
        expect_gpu=args.expect_gpu,
        smoke=not args.no_smoke,
        in_process=args.in_process,
        pull=not args.no_pull,
        gpus=args.gpus,
        amp=args.amp,
        compare_cpu=args.compare_cpu,
        export=args.export,
        smoke_timeout=args.smoke_timeout,
        quiet=args.quiet,
        baseline=args.baseline,
        strict_drift=args.strict_drift,
        host_paddle=not args.no_host_paddle,
    )


@contextmanager
def _host_probe(options: DoctorOptions, env: Environment) -> Iterator[HostProbe | None]:
    """The host probe on the command's variables, its NVML and CUDA children started (None under
    `--facts`: nothing is probed); reaped on the way out, whatever happened."""
    if options.facts:
        yield None
        return
    from envcheck.probe.host import adopt

    probe = adopt(env.env)  # the one envcheck.entry started before the imports, else a new one
    try:
        yield probe
    finally:
        probe.settle()


PATH_FLAGS = ("facts", "matrix", "junit", "markdown", "baseline", "save_baseline")
OUTPUT_FLAGS = ("junit", "markdown", "save_baseline")


def _resolve_paths(args: argparse.Namespace, env: Environment) -> None:
    """Every file flag, opened from `env.cwd` (`--python` is a command, looked up on PATH)."""
    for flag in PATH_FLAGS:
        if getattr(args, flag):
            setattr(args, flag, env.path(getattr(args, flag)))


def _diagnose(args: DoctorOptions, env: Environment, probe: HostProbe | None) -> Report:
    """`probe`: the host probe whose CUDA child runs (None: `--facts`, nothing is probed)."""
    # Imported here, not at start-up: `envcheck --version` and `--help` build every parser.
    from envcheck.contracts.record import replace
    from envcheck.edges import activity
    from envcheck.probe.endpoint import resolve_endpoint
    from envcheck.probe.interpreter import resolve_interpreter

    started = time.perf_counter()
    gpus = parse_gpus(args.gpus)
    # The targets, resolved once: the Paddle probe and the smoke judge the same interpreter, the
    # engine probe and the smoke's client the same engine.
    target = None if probe is None else resolve_interpreter(args.python, env.env)
    if target is not None and args.python_reason:  # `envcheck fix` resolved it, and says why
        target = replace(target, why=args.python_reason)
    endpoint = None if probe is None else resolve_endpoint(env.env)
    if probe is not None and target is not None:
        activity.phase("probing the host (driver, CUDA, Paddle, engine)")
        probe.start(target, engine=endpoint)  # NVML, libraries, engine: while cuInit runs
    from envcheck.contracts.host_report import Report
    from envcheck.matrix.load import load_matrix
    from envcheck.verdict.judge import Context, timed_judge
    from envcheck.verdict.proof import expect_gpu_unproven, proof_of

    matrix = load_matrix(args.matrix, env.env)
    host, recorded = (
        (probe.facts(), None) if probe is not None else read_facts_document(args.facts or "-", env)
    )
    check_gpus_exist(gpus, host)
    host = _without_host_paddle(args, host)
    image = _choose_image(args, host, matrix)
    smoke_runs = args.smoke and not args.facts
    ctx = Context(
        host=host,
        matrix=matrix,
        image=image,
        expect_gpu=args.expect_gpu,
        needs_engine=smoke_runs and not args.in_process,
        image_subject=args.image is not None or not args.host_paddle,
        saved=args.facts is not None,
    )
    findings, seconds = timed_judge(ctx, clock=time.perf_counter)
    smoke_doc = None
    if smoke_runs:
        from envcheck.smoke.runner.check import smoke_check

        smoke_started = time.perf_counter()
        smoke_doc, smoke_findings = smoke_check(
            host, image, _smoke_options(args, gpus, target, endpoint, matrix, env)
        )
        # each smoke finding is judged from that one run (pull, start, training): its time
        seconds |= dict.fromkeys(
            (f.id for f in smoke_findings), time.perf_counter() - smoke_started
        )
        findings += smoke_findings
    if recorded is not None:  # a saved report judged again keeps what its smoke saw
        findings += recorded.findings
        smoke_doc = recorded.smoke
    proof = recorded.proof if recorded else proof_of(findings, smoke_asked=smoke_runs)
    judged = time.perf_counter()
    unproven = expect_gpu_unproven(findings, proof) if args.expect_gpu else None
    if unproven is not None:
        seconds[unproven.id] = time.perf_counter() - judged
        findings.append(unproven)
    if args.baseline:
        drift_started = time.perf_counter()
        drifted = _drift(args.baseline, args.strict_drift, host, image, env)
        seconds |= dict.fromkeys((f.id for f in drifted), time.perf_counter() - drift_started)
        findings += drifted
    from envcheck.verdict.one_plan import settle

    findings = settle(findings)  # the smoke's fixes meet the judge's: one plan
    from envcheck.contracts.remedy import with_python
    from envcheck.verdict.subject import carry_subject, subject_python

    subject = subject_python(host, args.python)  # every envcheck command printed names it
    findings = carry_subject(findings, subject)
    return Report(
        host=host,
        findings=tuple(findings),
        image=image,
        smoke=smoke_doc,
        proof=proof,
        meta=_meta(matrix.path, started, matrix.newest_source)
        | {
            "fix_command": list(with_python(_fix_argv(args), subject)),
            "check_seconds": _rounded(seconds),
        },
    )


def _without_host_paddle(options: DoctorOptions, host: HostFacts) -> HostFacts:
    """--no-host-paddle: the host's interpreter is not the one that trains (the smoke's image
    holds that Paddle), so its Paddle is neither probed into the verdict nor judged."""
    if options.host_paddle:
        return host
    if options.in_process:
        raise UsageError(
            "--no-host-paddle with --in-process: the in-process smoke trains with this host's "
            "Paddle",
            hint="name the training interpreter with --python, or let the smoke run in an image",
        )
    from envcheck.contracts.facts import PaddleFacts
    from envcheck.contracts.record import replace

    reason = "not judged (--no-host-paddle): the smoke's image holds the Paddle that trains"
    return replace(host, paddle=PaddleFacts(status="unknown", reason=reason))


def _fix_argv(options: DoctorOptions) -> list[str]:
    """The `envcheck fix` that repairs what this doctor judged: its release and matrix, as this
    command line named them (the interpreter judged is added with the report's other commands)."""
    argv = ["envcheck", "fix"]
    for flag, value in (
        ("--paddle", options.paddle),
        ("--matrix", options.matrix),
    ):
        argv += [flag, value] if value else []
    return [*argv, "--yes"]


def read_facts_document(path: str, env: Environment) -> tuple[HostFacts, RecordedSmoke | None]:
    """`--facts FILE` (`-` = stdin): the host, and the smoke outcome when the document is a saved
    report. Any unreadable, non-JSON or invalid document is a UsageError (exit 2) naming the file
    and the field (non-UTF-8, too deep, huge ints, invalid values). Here, at the edge:
    `envcheck.contracts.facts` stays pure."""
    from envcheck.contracts.facts import FactsError, MissingSections, host_from_document
    from envcheck.contracts.saved_report import ReportDocumentError
    from envcheck.edges.userfiles import read_json
    from envcheck.verdict.recorded import recorded_smoke

    hint = "pass a saved `envcheck doctor --json` report or its `host` object"
    doc = read_json(path, what="facts file", hint=hint, env=env)
    try:
        return host_from_document(doc), recorded_smoke(doc)
    except MissingSections as e:
        raise UsageError(f"facts file {path}: {e}", hint=hint) from e
    except (FactsError, ReportDocumentError) as e:
        raise UsageError(
            f"facts file {path}: {e}",
            hint="fix the value, or remove the key (missing means unknown)",
        ) from e


def _choose_image(args: DoctorOptions, host: HostFacts, matrix: Matrix) -> ImageChoice:
    from envcheck.image.choice import select_image

    choice = select_image(host, matrix, paddle=args.paddle, registry=args.registry)
    if args.image:
        from envcheck.image.given import given_image

        # a bad reference is exit 2 before anything runs
        return given_image(args.image, matrix, choice)
    return choice


def _smoke_options(
    args: DoctorOptions,
    gpus: tuple[int, ...] | None,
    target: Interpreter | None,
    endpoint: Endpoint | None,
    matrix: Matrix,
    env: Environment,
) -> SmokeOptions:
    """The smoke's options, carrying the targets resolved once: the interpreter, the engine, the
    loaded matrix (a missing image is pulled with the mirrors of the matrix it was chosen from),
    the command's stderr (the pull's progress, the sweep's removals) and its variables."""
    from envcheck.smoke.options import SmokeOptions

    python = target.python if target else args.python
    return SmokeOptions(
        image=args.image,
        in_process=args.in_process,
        python=python,
        gpus=gpus,
        endpoint=endpoint,
        expect_gpu=args.expect_gpu,
        pull=args.pull,
        amp=args.amp,
        compare_cpu=args.compare_cpu,
        export=args.export,
        timeout=args.smoke_timeout,
        quiet=args.quiet,
        matrix=matrix,
        stderr=env.stderr,
        variables=env.env,
    )


def _drift(
    path: str, strict: bool, host: HostFacts, image: ImageChoice, env: Environment
) -> list[Finding]:
    from envcheck.contracts.host_report import Report
    from envcheck.edges.baseline_file import load_baseline
    from envcheck.verdict.drift import compare_baseline

    baseline = load_baseline(path, env)
    return compare_baseline(Report(host=host, findings=(), image=image), baseline, strict=strict)


def _rounded(seconds: dict[str, float]) -> dict[str, float]:
    """Each check's measured seconds, to the microsecond: what JUnit shows as its time."""
    return {check: round(s, 6) for check, s in seconds.items()}


def _meta(matrix_path: str, started: float, newest_source: str | None = None) -> dict[str, Any]:
    return {
        "envcheck_version": __version__,
        "matrix": matrix_path,
        "matrix_newest_source": newest_source,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "elapsed_s": round(time.perf_counter() - started, 3),
    }


def _render(args: argparse.Namespace, report: Report, env: Environment, *, text: bool) -> None:
    """The report on stdout (JSON, or the text report when `text`: no file flag took stdout),
    then the files."""
    from envcheck.edges.streams import reader_may_leave

    # `| head -1`: the files below are still written, the code kept
    with reader_may_leave(env.stdout):
        if args.json or text:
            from envcheck.contracts.command_env import isatty

            color = not args.no_color and env.color()
            _render_stdout(args, report, env.stdout, color=color, terminal=isatty(env.stdout))
    if args.junit:
        from envcheck.render.junit import write_junit

        write_junit(report, args.junit, env)
    if args.markdown or env.env.get("GITHUB_ACTIONS") == "true":
        from envcheck.render.annotations import emit_ci_outputs

        # the runner reads workflow commands from stderr too, and stdout may be the JSON document
        emit_ci_outputs(report, markdown_path=args.markdown, stream=env.stderr, env=env)


def _render_stdout(
    args: argparse.Namespace, report: Report, out: TextIO, *, color: bool, terminal: bool
) -> None:
    if args.json:  # one write: json.dump writes each token on its own (~850 calls)
        from envcheck.verdict.fixes import report_document

        out.write(json.dumps(report_document(report), indent=2) + "\n")
    elif color or terminal:
        from envcheck.render.text import render_rich

        # NO_COLOR changes the colour, never the layout: a terminal gets the same lines
        render_rich(report, out, explain=args.explain, color=color)
    else:
        from envcheck.render.text import render_plain

        render_plain(report, out, explain=args.explain)


def _save_baseline(args: argparse.Namespace, report: Report, env: Environment) -> None:
    if not args.save_baseline:
        return
    from envcheck.edges.baseline_file import save_baseline

    if not save_baseline(report, args.save_baseline, env):
        print(f"envcheck: baseline not saved: the verdict is {report.verdict}", file=env.stderr)
