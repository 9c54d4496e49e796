"""Command line: parse, dispatch, map errors to exit codes. Nothing more.

Each subcommand lives in `envcheck/commands/<name>.py` with `register(subparsers)` and
`run(args, env) -> int`; heavy modules are imported inside `run`, never at start-up. `env` is the
`Environment` (streams, variables, folder) the command reads and writes: the process's, or a
test's (`main(argv, env)` runs in-process, tests/inprocess.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import NoReturn

from envcheck import __version__
from envcheck.commands.manual import help_sections
from envcheck.contracts.command_env import Environment
from envcheck.contracts.errors import EnvcheckError, UsageError
from envcheck.contracts.exitcodes import EXIT_CODES_HELP, ExitStatus
from envcheck.edges.signals import unwind_on_signals
from envcheck.edges.streams import discard_stdout, guard_stdio

COMMANDS = ("doctor", "fix", "pull_image", "report", "completion")
EXAMPLES = """examples:
  envcheck doctor                       the report, the image for this host, the smoke, the proof
  envcheck doctor --expect-gpu --json   a GPU CI gate: nothing trained on a GPU is a failure
  envcheck fix                          the repair plan; --yes applies, verifies, rolls back
  envcheck pull-image --dry-run         which image this host should train in, and why
  envcheck report reports/*.json        merge a fleet's reports into one table
  envcheck completion bash              the bash completion script (zsh, fish too)
  envcheck COMMAND --help               each command's flags and examples"""


class _Parser(argparse.ArgumentParser):
    """A bad flag is a `UsageError` (exit 2) like any other bad input, so that under `--json` it
    too gets its error document; argparse's own `error()` would print and exit."""

    def error(self, message: str) -> NoReturn:
        # One line and where to read more: the usage (7 rows for the doctor) buried the line
        # that says what was wrong, and a value's range is in that line already.
        raise UsageError(message, hint=f"see `{self.prog} --help`")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        flags = [word for word in extras if word.startswith("-") and word != "-"]
        if flags and self._subparsers is None:  # a command's own parser: the flags it knows
            _unknown_flag(flags[0], self)
        return parsed, extras


def _unknown_flag(word: str, parser: argparse.ArgumentParser) -> NoReturn:
    """`--expct-gpu`: the nearest flag of this command, in one line."""
    import difflib

    typed = word.split("=", 1)[0]
    known = [flag for flag in parser._option_string_actions if flag.startswith("--")]
    # Close in spelling, or the same letters swapped (--yse); never merely similar: `--bogus` is
    # not a misspelt `--gpus`, nor `--pull` a `--no-pull`.
    names = {flag[2:]: flag for flag in known}  # compared without the dashes all of them share
    swapped = [flag for flag in known if sorted(flag) == sorted(typed)]
    near = difflib.get_close_matches(typed[2:], list(names), n=1, cutoff=0.8)
    close = swapped or [names[name] for name in near]
    where = f"`{parser.prog}`"
    if close:
        raise UsageError(
            f"unknown flag {typed!r} for {where}: did you mean `{close[0]}`?",
            hint=f"see `{parser.prog} --help`",
        )
    raise UsageError(f"unknown flag {typed!r} for {where}", hint=f"see `{parser.prog} --help`")


class _TopParser(_Parser):
    """`envcheck`'s own parser: the end of its help (the variables and files, wrapped by
    textwrap: ~2 ms) is written when the help is shown, not for every command line."""

    def format_help(self) -> str:
        self.epilog = f"{EXAMPLES}\n\n{EXIT_CODES_HELP}\n\n{help_sections()}"
        return super().format_help()


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The command line's parser, with the subcommands of `commands` (modules of COMMANDS)."""
    parser = _TopParser(
        prog="envcheck",
        description="Can this machine really train PaddlePaddle models on its GPU? Proof, and the fix.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"envcheck {__version__} (paddle-envcheck)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in commands:
        import_module(f"envcheck.commands.{name}").register(sub)
    return parser


def _commands_for(argv: Sequence[str]) -> Sequence[str]:
    """The subcommands a parser of `argv` needs: the one it names first (the others' modules and
    parsers are ~5 ms of a doctor's start-up), else all of them (`--help`, a bad command,
    none: the full list is shown). A command's name is its module's, `-` for `_`."""
    named = [name for name in COMMANDS if argv[:1] == [name.replace("_", "-")]]
    return named or COMMANDS


def _check_command(argv: Sequence[str]) -> None:
    """A first word that is no command (`envcheck doctr`): the nearest command's name, in one
    line, rather than argparse's list of choices."""
    if not argv or argv[0].startswith("-"):
        return
    names = [name.replace("_", "-") for name in COMMANDS]
    if argv[0] in names:
        return
    import difflib

    close = difflib.get_close_matches(argv[0], names, n=1)
    known = f"the commands are {', '.join(names[:-1])} and {names[-1]}"
    if close:
        raise UsageError(
            f"unknown command {argv[0]!r}: did you mean `{close[0]}`?", hint=f"{known}"
        )
    raise UsageError(f"unknown command {argv[0]!r}", hint=f"{known}; see `envcheck --help`")


def main(argv: Sequence[str] | None = None, env: Environment | None = None) -> int:
    """Run one command line; `env=None`: in this process's environment, its stdio guarded."""
    own_process = env is None
    if env is None:
        env = Environment.from_process(guard_stdio)  # never a traceback on stdio
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in argv  # known before parsing: a bad flag under --json is a document too
    try:
        _check_command(argv)
        parser = build_parser(_commands_for(argv))
        args = _parse(parser, argv, env)
        if args is None:  # --help or --version, printed
            env.stdout.flush()
            return int(ExitStatus.OK)
        if not getattr(args, "command", None):
            parser.print_help(env.stderr)
            return _failed(
                env, ExitStatus.USAGE, "no command given", "see `envcheck --help`", wants_json
            )
        # SIGTERM unwinds like Ctrl-C, from before anything is made; once the verdict is written,
        # a late one no longer cuts the exit status short
        with unwind_on_signals(process_ends_after=own_process):
            status = int(args.run(args, env))
        env.stdout.flush()  # a full disk under stdout is exit 4 here, not at interpreter exit
        return status
    except EnvcheckError as e:
        return _failed(env, e.status, e.message, e.hint, wants_json)
    except KeyboardInterrupt as e:
        return _failed(env, ExitStatus.INTERRUPTED, _interrupted_words(e), None, wants_json)
    except BrokenPipeError:
        # a write outside the commands' own report (they keep their verdict's code): the reader
        # left before we could say anything, which is the environment, not a pass
        discard_stdout(env.stdout)
        return int(ExitStatus.ENVIRONMENT)
    except Exception as e:  # noqa: BLE001 - the one place a bug becomes exit 3
        import traceback

        traceback.print_exc(file=env.stderr)
        return _failed(
            env,
            ExitStatus.INTERNAL,
            f"internal error: {type(e).__name__}: {e}",
            "this is a bug in envcheck; please report it with the traceback above",
            wants_json,
        )


def _interrupted_words(e: KeyboardInterrupt) -> str:
    """`interrupted by SIGTERM: removed the smoke container envcheck-smoke-…`: the signal, and
    what the unwinding cleaned up (envcheck.edges.signals.cleaned_up), in one line."""
    from envcheck.edges.signals import Interrupted, cleaned

    name = signal_name(e.signum) if isinstance(e, Interrupted) else "Ctrl-C"
    done = cleaned()
    return f"interrupted by {name}" + (f": {'; '.join(done)}" if done else "")


def signal_name(signum: int) -> str:
    import signal

    return "Ctrl-C (SIGINT)" if signum == signal.SIGINT else signal.Signals(signum).name


def _parse(
    parser: argparse.ArgumentParser, argv: list[str], env: Environment
) -> argparse.Namespace | None:
    """The parsed flags, or None once `--help`/`--version` printed on `env.stdout` (argparse
    prints on sys.stdout and exits: both are kept to this call)."""
    try:
        with contextlib.redirect_stdout(env.stdout):
            return parser.parse_args(argv)
    except SystemExit:  # only --help and --version exit: a bad flag is a UsageError (_Parser)
        return None


def _failed(
    env: Environment, status: ExitStatus, message: str, hint: str | None, wants_json: bool
) -> int:
    """One screen on stderr; under --json, also the error document on stdout (the README's
    contract: stdout is one JSON document, whatever happened)."""
    from envcheck.render.sanitize import visible

    # registry and engine texts, image-config values, facts keys: shown, never obeyed
    print(f"envcheck: error: {visible(message, keep_lines=True)}", file=env.stderr)
    if hint:
        print(f"envcheck: hint: {visible(hint, keep_lines=True)}", file=env.stderr)
    if wants_json:
        from envcheck.contracts.host_report import error_document

        try:
            json.dump(error_document(int(status), message, hint), env.stdout, indent=2)
            env.stdout.write("\n")
            env.stdout.flush()
        except (BrokenPipeError, EnvcheckError):  # the reader left, or stdout is full (guarded)
            discard_stdout(env.stdout)
    return int(status)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
