"""`envcheck pull-image`: pull the image the doctor selects for this host (or the one named),
with checks before, a progress display during, and the digest proven after."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from envcheck.commands import add_choice_arguments
from envcheck.contracts.exitcodes import EXIT_CODES_HELP, ExitStatus

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment
    from envcheck.contracts.facts import HostFacts
    from envcheck.contracts.host_report import ImageChoice
    from envcheck.image.pull_plan import PullPlan, PullResult
    from envcheck.image.reference import Reference
    from envcheck.matrix.model import Matrix
    from envcheck.registry.documents import RemoteImage

JSON_SCHEMA_VERSION = 1


EXAMPLES = """examples:
  envcheck pull-image --dry-run            # the tag this host needs and why; pull nothing
  envcheck pull-image                      # pull it, a bar per layer, then prove the digest
  envcheck pull-image --json --quiet       # CI: one JSON document, no progress display
  envcheck pull-image --paddle 3.0.0 --registry baidu
  envcheck pull-image --image docker.io/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "pull-image",
        help="pull the Paddle image the doctor selects for this host (or --image REF)",
        description="Pull the Paddle image tag the doctor selects for this host, after checking "
        "its platform and CUDA against this machine; retry transient failures, fall back to the "
        "mirror registry, and prove the pulled digest.",
        epilog=f"{EXAMPLES}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_argument_group("what to pull")
    what.add_argument(
        "--image", metavar="REF", help="pull this image reference instead of the selected one"
    )
    add_choice_arguments(what, registry_note="; the tag's other registries are the mirrors")
    how = p.add_argument_group("how")
    how.add_argument(
        "--dry-run", action="store_true", help="print the choice and why; pull nothing"
    )
    how.add_argument(
        "--force",
        action="store_true",
        help="pull even if this host's driver cannot run the image's CUDA",
    )
    how.add_argument(
        "--json",
        action="store_true",
        help="print the result (reference, digest, size, seconds) as one JSON document",
    )
    how.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, env: Environment) -> int:
    """Under --json an error becomes the CLI's error document
    (envcheck.contracts.host_report.error_document)."""
    from envcheck.image.pull_plan import PullPlan, plan_pull
    from envcheck.image.reference import parse_reference
    from envcheck.render.sanitize import visible

    args.matrix = env.path(args.matrix) if args.matrix else None
    # The reference is validated before anything else touches the engine or a registry.
    named = parse_reference(args.image) if args.image else None
    host: HostFacts | None = None
    choice: ImageChoice | None = None
    if named is None:
        matrix: Matrix | None = _load_matrix(args, env)
        host, choice = _selected(args, matrix, env)  # type: ignore[arg-type]
        if choice.ref is None:
            return _no_image(choice)
        ref = parse_reference(choice.ref)
    else:
        ref = named
        # Mirrors and pins only exist for the matrix's own repositories: skip loading it (~0.2 s
        # of a pull's start-up) for any other image; the CUDA check loads it if it needs it.
        matrix = _matrix_if_it_knows(args, ref, env)
    plan = plan_pull(ref, matrix) if matrix else PullPlan(ref)
    if args.dry_run:
        return _dry_run(args, plan, choice, env)
    result = _pull(args, plan, matrix, host, env)
    for warning in result.warnings:  # stderr, --json or not: stdout is the result alone
        print(f"envcheck: warning: {visible(warning)}", file=env.stderr)
    from envcheck.edges.streams import reader_may_leave

    with reader_may_leave(env.stdout):  # `| head -1`: the image is pulled, exit 0 stands
        if args.json:
            _print_json({"schema_version": JSON_SCHEMA_VERSION, **result.to_json()}, env)
        else:
            from envcheck.render.progress import result_text

            print(result_text(result), file=env.stdout)
    return int(ExitStatus.OK)


def _load_matrix(args: argparse.Namespace, env: Environment) -> Matrix:
    from envcheck.matrix.load import load_matrix

    return load_matrix(args.matrix, env.env)


def _matrix_if_it_knows(
    args: argparse.Namespace, ref: Reference, env: Environment
) -> Matrix | None:
    """The matrix when `ref` is on one of its registries (for mirrors and pinned digests).
    Any other image is pulled without loading it: only the `[[registry]]` tables are read."""
    from envcheck.image.reference import is_valid_reference, parse_reference
    from envcheck.matrix.location import matrix_dir
    from envcheck.matrix.toml import tomllib

    try:
        doc = tomllib.loads((matrix_dir(args.matrix, env.env)[0] / "images.toml").read_text())
    except (OSError, ValueError):  # unreadable, not UTF-8, not TOML
        return _load_matrix(args, env)  # let the full load report what is wrong with the matrix
    tables = doc.get("registry")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        return _load_matrix(args, env)
    homes = [str(t.get("ref", "")) for t in tables]
    known = {
        (h.registry, h.repository) for h in map(parse_reference, filter(is_valid_reference, homes))
    }
    return _load_matrix(args, env) if (ref.registry, ref.repository) in known else None


def _selected(
    args: argparse.Namespace, matrix: Matrix, env: Environment
) -> tuple[HostFacts, ImageChoice]:
    from envcheck.image.choice import select_image
    from envcheck.probe.host import probe_host
    from envcheck.probe.interpreter import resolve_interpreter

    host = probe_host(env.env, resolve_interpreter(args.python, env.env))
    return host, select_image(host, matrix, paddle=args.paddle, registry=args.registry)


def _pull(
    args: argparse.Namespace,
    plan: PullPlan,
    matrix: Matrix | None,
    host: HostFacts | None,
    env: Environment,
) -> PullResult:
    from envcheck.engine.docker_adapter import connect
    from envcheck.probe.endpoint import resolve_endpoint
    from envcheck.pull.run import pull_image
    from envcheck.render.progress import make_display

    # daemon down or socket denied: exit 4 before any registry traffic
    client = connect(resolve_endpoint(env.env))
    check = None if args.force else _cuda_check(args, plan, matrix, host, env)
    return pull_image(
        plan,
        client=client,
        check=check,
        display=make_display("none" if args.quiet else "auto", env.stderr, env.env),
        variables=env.env,
    )


def _cuda_check(
    args: argparse.Namespace,
    plan: PullPlan,
    matrix: Matrix | None,
    host: HostFacts | None,
    env: Environment,
) -> Any:
    """Refuse an image whose CUDA (tag, or config env) this host's driver cannot run."""
    from envcheck.image.checks import ImageRefused, cuda_claims, cuda_refusal

    def check(remote: RemoteImage) -> None:
        claims = cuda_claims(remote.reference.tag or plan.requested.tag, remote.env)
        if not claims:
            return
        nonlocal host, matrix
        if host is None:  # probed only when an image claims a CUDA: most pulls never need it
            from envcheck.probe.host import probe_host
            from envcheck.probe.interpreter import resolve_interpreter

            host = probe_host(env.env, resolve_interpreter(args.python, env.env))
        matrix = matrix or _load_matrix(args, env)
        refusal = cuda_refusal(claims, host, matrix)
        if refusal:
            raise ImageRefused(
                f"{remote.reference}: {refusal}",
                hint="`envcheck pull-image` (no --image) picks a tag this driver runs; "
                "--force pulls it anyway",
            )

    return check


def _dry_run(
    args: argparse.Namespace, plan: PullPlan, choice: ImageChoice | None, env: Environment
) -> int:
    doc: dict[str, Any] = {
        "schema_version": JSON_SCHEMA_VERSION,
        "dry_run": True,
        "reference": str(plan.requested),
        "mirrors": [str(m) for m in plan.mirrors],
        "pinned_digest": plan.pinned_digest,
        "reason": choice.reason if choice else "named with --image",
        "kind": choice.kind if choice else None,
        "confirmed": choice.confirmed if choice else None,
        "rejected": [{"ref": r.ref, "reason": r.reason} for r in choice.rejected] if choice else [],
    }
    if args.json:
        _print_json(doc, env)
        return int(ExitStatus.OK)
    from envcheck.render.choice import rejected_lines, why_lines

    lines = [f"would pull {doc['reference']}"]
    lines += [f"  {line}" for line in (why_lines(choice) if choice else [f"why: {doc['reason']}"])]
    lines += [f"  mirror: {mirror}" for mirror in doc["mirrors"]]
    lines.append(
        f"  pinned digest: {plan.pinned_digest or 'none (the registry’s digest is recorded)'}"
    )
    lines += [f"  {line}" for line in (rejected_lines(choice) if choice else [])]
    env.stdout.write("".join(f"{line}\n" for line in lines))
    return int(ExitStatus.OK)


def _no_image(choice: ImageChoice) -> int:
    from envcheck.image.checks import ImageRefused

    raise ImageRefused(
        f"no image of Paddle {choice.paddle or '?'} runs on this host: {choice.reason}",
        hint="`envcheck doctor --explain` lists every tag and why it was rejected",
    )


def _print_json(doc: dict[str, Any], env: Environment) -> None:
    json.dump(doc, env.stdout, indent=2)
    env.stdout.write("\n")
