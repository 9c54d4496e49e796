"""`envcheck report FILE…`: merge saved doctor reports into one fleet table and exit code.

Run after a matrix of runner jobs, a Kubernetes Job per GPU node or `srun` over a Slurm
partition. A file that cannot be read (not UTF-8, not JSON, nested too deeply, an integer over
Python's 4300-digit limit, not a report) is named on stderr and left out; the others are still
merged, and the command then exits 2 so a broken collection step is not mistaken for a fleet.
With `--expect-hosts`, every listed host without a report is a named failure (exit at least 1).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.commands import check_outputs, stdout_format
from envcheck.contracts.errors import UsageError
from envcheck.contracts.exitcodes import EXIT_CODES_HELP, ExitStatus

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment
    from envcheck.contracts.saved_report import HostReport

FILE_HINT = "each FILE must be the output of `envcheck doctor --json` (or a folder of them)"
HOSTS_HINT = (
    "--expect-hosts FILE: host names, spaces, commas or new lines between them, Slurm ranges "
    "like gpu[001-064], # comments; '-' reads stdin (`scontrol show hostnames | envcheck report "
    "--expect-hosts - DIR`)"
)


EXAMPLES = """examples:
  envcheck report reports/                 # every *.json in the folder: one row per host
  envcheck report --expect-hosts nodes.txt reports/   # a listed host with no report fails
  scontrol show hostnames "$SLURM_JOB_NODELIST" | envcheck report --expect-hosts - reports/
  envcheck report --json reports/ > fleet.json        # the merged summary, problems grouped
  envcheck report --markdown summary.md --junit fleet.xml reports/"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="merge saved `doctor --json` reports into one fleet dashboard",
        description=(  # printed as written (RawDescriptionHelpFormatter): lines under 80
            "Merge saved `envcheck doctor --json` reports (files, or folders of *.json) into one\n"
            "dashboard: host, GPUs, driver, CUDA, Paddle, verdict and first failing check per\n"
            "host, then identical problems grouped with their fix. Exit with the highest exit\n"
            "code among the reports; 2 if any file was unreadable."
        ),
        epilog=f"{EXAMPLES}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="saved reports, or folders of *.json")
    p.add_argument("--json", action="store_true", help="print the merged summary as JSON")
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="every problem of every host with its hosts and one host's words, each whole "
        "(default: one line per root cause, cut to the terminal)",
    )
    p.add_argument("--markdown", metavar="FILE", help="also write the summary as Markdown")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML: a test suite per host")
    p.add_argument(
        "--expect-hosts",
        metavar="FILE",
        help="hosts that must have reported, one or more a line (Slurm ranges like gpu[001-064] "
        "allowed; '-' = stdin): each one without a report is a failure",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, env: Environment) -> int:
    from envcheck.render.annotations import emit_fleet_ci_outputs
    from envcheck.verdict.fleet import merge_reports

    check_outputs(args, env, ("markdown", "junit"))  # before reading a thousand reports
    to_stdout = stdout_format(args, env, ("markdown", "junit"))
    expected = read_expected_hosts(env.path(args.expect_hosts), env) if args.expect_hosts else None
    paths, errors = expand_paths(args.files, env)
    hosts, unreadable = read_reports(paths, env)
    errors += unreadable
    from envcheck.render.sanitize import visible

    for error in errors:  # a file name or a report's text: shown, never obeyed
        print(f"envcheck: error: {visible(error)}", file=env.stderr)
    if not hosts and expected is None:
        raise UsageError(f"no report could be read ({len(errors)} file(s) failed)", hint=FILE_HINT)
    if errors:
        print(f"envcheck: hint: {FILE_HINT}; the other reports were merged", file=env.stderr)
    summary = merge_reports(hosts, expected)
    for name in summary.missing:
        print(f"envcheck: error: {visible(name)}: expected, but no report from it", file=env.stderr)
    from envcheck.edges.streams import reader_may_leave

    with reader_may_leave(env.stdout):  # `| head -1`: the fleet's exit code stands
        if args.json:
            doc = summary.to_json() | {"errors": errors}
            doc["exit_code"] = _exit_code(summary.exit_code, errors)
            print(json.dumps(doc, indent=2), file=env.stdout)
        elif to_stdout is None:
            from envcheck.render.table import print_fleet_table

            print_fleet_table(summary, env.stdout, verbose=args.verbose)
    if args.junit:
        from envcheck.render.junit import write_fleet_junit

        write_fleet_junit([h.report for h in summary.hosts], env.path(args.junit), env)
    markdown = env.path(args.markdown) if args.markdown else None
    emit_fleet_ci_outputs(summary, markdown_path=markdown, stream=env.stderr, env=env)
    return _exit_code(summary.exit_code, errors)


def _exit_code(worst: int, errors: list[str]) -> int:
    return int(ExitStatus.USAGE) if errors else worst


def expand_paths(names: list[str], env: Environment) -> tuple[list[tuple[Path, bool]], list[str]]:
    """A folder stands for its `*.json` files: thousands of node reports overflow a command
    line. Relative names are under `env.cwd`; `-` is `env.stdin`. Each path comes with whether
    it was found in a folder (read only if a regular file: a FIFO there would hang the run)."""
    paths: list[tuple[Path, bool]] = []
    errors: list[str] = []
    for name in names:
        path = Path(env.path(name))
        if name == "-" or not path.is_dir():
            paths.append((path, False))
        elif found := sorted(path.glob("*.json")):
            paths += [(p, True) for p in found]
        else:
            errors.append(f"{path}: a folder with no *.json report in it")
    return paths, errors


def read_expected_hosts(name: str, env: Environment) -> list[str]:
    """The names in --expect-hosts FILE (`-`: `env.stdin`); an unreadable or malformed list is
    exit 2."""
    from envcheck.edges.userfiles import read_bytes
    from envcheck.verdict.hostlist import HostListError, parse_host_list

    try:
        return parse_host_list(read_bytes(name, env.stdin).decode("utf-8"))
    except OSError as e:
        raise UsageError(
            f"--expect-hosts {name}: cannot read it: {e.strerror or e}", hint=HOSTS_HINT
        ) from e
    except UnicodeDecodeError as e:
        raise UsageError(
            f"--expect-hosts {name}: byte {e.start} is not UTF-8", hint=HOSTS_HINT
        ) from e
    except HostListError as e:
        raise UsageError(f"--expect-hosts {name}: {e}", hint=HOSTS_HINT) from e


def read_reports(
    paths: list[tuple[Path, bool]], env: Environment
) -> tuple[list[HostReport], list[str]]:
    """Parse every file (`-`: `env.stdin`, which has no mtime); return the good reports and one
    error line per bad file."""
    from envcheck.contracts.saved_report import ReportDocumentError, SavedReport, parse_report
    from envcheck.edges.userfiles import read_json

    hosts: list[HostReport] = []
    errors: list[str] = []
    for path, _ in paths:  # a named file and a folder's are read alike: regular files only
        try:
            document = read_json(str(path), what="report", env=env)
            mtime = None if str(path) == "-" else path.stat().st_mtime
            hosts.append(parse_report(SavedReport(str(path), document, mtime)))
        except OSError as e:
            errors.append(f"{path}: cannot read it: {e.strerror or e}")
        except UsageError as e:  # read_json names the path and says what is wrong
            errors.append(e.message)
        except RecursionError:  # a document nested just under the parser's limit
            errors.append(f"{path}: nested too deeply to be a report")
        except ReportDocumentError as e:
            errors.append(f"{path}: {e}")
    return hosts, errors
