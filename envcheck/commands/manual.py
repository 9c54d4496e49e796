"""What `envcheck --help` and the man page (ENVIRONMENT, FILES) say about the variables envcheck
reads and the files it keeps: one source, so the two never disagree. The exit codes
live beside their enum (`envcheck.contracts.exitcodes.EXIT_CODES`). Standard library only: `--help`
imports it."""

from __future__ import annotations

ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("ENVCHECK_MATRIX", "the compatibility matrix folder, as --matrix (default: the shipped one)"),
    (
        "ENVCHECK_CACHE_DIR",
        (
            "where the parsed matrix is cached (default: $XDG_CACHE_HOME/envcheck, else "
            "~/.cache/envcheck); empty turns the cache off"
        ),
    ),
    (
        "ENVCHECK_FIX_STEP_LIMIT",
        (
            "seconds a pip step of `envcheck fix --yes` may run before it is taken as hung and "
            "killed with its process group (default: 3600)"
        ),
    ),
    (
        "ENVCHECK_PADDLE_INDEX",
        (
            "the base URL of a mirror of the Paddle package index: every pip command the doctor "
            "prints and `envcheck fix` runs names it "
            "(default: https://www.paddlepaddle.org.cn); `envcheck fix --paddle-index` takes precedence"
        ),
    ),
    ("ENVCHECK_HEARTBEAT_S", "seconds between `still …` lines in a log (default: 10)"),
    (
        "ENVCHECK_DRIVER_ROOT",
        (
            "read the NVIDIA driver from this folder (lib/libnvidia-ml.so.1, lib/libcuda.so.1, "
            "proc/driver/nvidia/version) instead of the system's"
        ),
    ),
    (
        "ENVCHECK_AUTH_HOSTS",
        "more hosts a registry may name as its token server, comma-separated",
    ),
    ("NO_COLOR", "plain text even on a terminal (https://no-color.org)"),
    (
        "DOCKER_HOST, DOCKER_CONTEXT, DOCKER_CONFIG, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH",
        "the Docker engine and its logins, read as the docker CLI reads them",
    ),
    (
        "CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES",
        "judged: the GPUs they hide from this process are reported",
    ),
    (
        "GITHUB_ACTIONS, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT",
        "under GitHub Actions: annotations, the Markdown step summary, the step outputs",
    ),
)

FILES: tuple[tuple[str, str], ...] = (
    (
        "$XDG_STATE_HOME/envcheck/owner.key (default: ~/.local/state/envcheck/owner.key)",
        "marks the smoke containers this user made, so that only their owner removes leftovers",
    ),
    (
        "PREFIX/.envcheck-fix/ (PREFIX: the target interpreter's sys.prefix, its real path)",
        (
            "what `envcheck fix --yes` keeps of an environment it changes, found by every user of "
            "it: `lock` (one fix at a time), `journal.json` (each step written before it runs; an "
            "open one is an unfinished fix: `--rollback` or `--resume`) and `records/` (pip "
            "freeze, pip config, pip check, the wheelhouse and the kept files of what is removed "
            "or replaced: the state a rollback restores, without the network)"
        ),
    ),
    (
        "$ENVCHECK_CACHE_DIR (default: ~/.cache/envcheck)",
        "the parsed matrix, reused while the matrix files are unchanged",
    ),
    (
        "$DOCKER_CONFIG/config.json (default: ~/.docker/config.json)",
        "the engine's context and the registry logins a pull uses",
    ),
    ("/proc/driver/nvidia/version", "the loaded NVIDIA kernel module, read"),
    (
        (
            "share/bash-completion/completions/envcheck, share/zsh/site-functions/_envcheck, "
            "share/fish/vendor_completions.d/envcheck.fish"
        ),
        "the shell completions the package installs (also printed by `envcheck completion SHELL`)",
    ),
)


def help_section(title: str, entries: tuple[tuple[str, str], ...]) -> str:
    """`environment:` and its entries as `--help` prints them (name, then the words indented,
    in lines under 80 columns)."""
    import textwrap

    return f"{title}:\n" + "\n".join(
        f"  {name}\n" + textwrap.fill(words, 78, initial_indent=" " * 6, subsequent_indent=" " * 6)
        for name, words in entries
    )


def help_sections() -> str:
    """The end of `envcheck --help`: its `environment:` and `files:` sections."""
    return f"{help_section('environment', ENVIRONMENT)}\n\n{help_section('files', FILES)}"
