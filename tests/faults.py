"""The input fault campaign: hostile facts, matrix files, flags and streams, with a tally.

Shared by tests/integration/test_faults_input.py (which asserts every case) and
bench/faults_input.py (which runs the same cases and prints the campaign's totals). A case passes
when envcheck ends with the documented exit code, no traceback, never exit 3, and touched no file
outside the paths it named.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import stat
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcheck.contracts.errors import EnvcheckError
from envcheck.contracts.facts import FactsError, HostFacts, host_from_document, to_dict
from envcheck.contracts.findings import Finding
from envcheck.matrix.model import Matrix
from tests import inprocess
from tests.inprocess import Result, run_envcheck

REPO = Path(__file__).resolve().parents[1]
ENV = {**inprocess.ENV, "ENVCHECK_CACHE_DIR": ""}


@dataclass
class Tally:
    surface: str = "input"
    cases: int = 0
    tracebacks: int = 0
    wrong_exit: int = 0
    injections: int = 0  # a line of output that starts a workflow command, or an ESC byte
    leaks: int = 0  # files created outside the paths a case named
    damaged: int = 0  # files or device nodes changed that a case did not name
    hangs: int = 0  # a run that had to be killed (a FIFO where a file should be)
    failures: list[str] = field(default_factory=list)

    def record(
        self,
        name: str,
        *,
        traceback_seen: bool = False,
        wrong_exit: bool = False,
        injected: bool = False,
        leaks: int = 0,
        damaged: int = 0,
        hung: bool = False,
        detail: str = "",
    ) -> None:
        self.cases += 1
        self.tracebacks += traceback_seen
        self.wrong_exit += wrong_exit
        self.injections += injected
        self.leaks += leaks
        self.damaged += damaged
        self.hangs += hung
        if traceback_seen or wrong_exit or injected or leaks or damaged or hung:
            self.failures.append(f"{name}: {detail}")

    @property
    def faults(self) -> tuple[int, int, int, int, int, int]:
        return (
            self.tracebacks,
            self.wrong_exit,
            self.injections,
            self.leaks,
            self.damaged,
            self.hangs,
        )

    def line(self) -> str:
        return (
            f"fault campaign ({self.surface}): {self.cases} cases, {self.tracebacks} tracebacks, "
            f"{self.wrong_exit} wrong exit codes, {self.injections} injections, {self.leaks} leaks, "
            f"{self.damaged} files damaged, {self.hangs} hangs"
        )


TALLY = Tally()


# -- facts, field by field -----------------------------------------------------------------------


def full_facts() -> dict[str, Any]:
    """A host document with every layer filled, so every field can be broken."""
    from tests import report_samples

    doc: dict[str, Any] = to_dict(report_samples.host())
    doc["cudnn"]["candidates"] = [
        {"path": "/opt/libcudnn.so.9", "version": "9.5.1", "origin": "pip"}
    ]
    doc["cuda_runtime"]["candidates"] = [{"path": "/opt/libcudart.so.12", "version": "12.6"}]
    doc["cuda_driver"] = {"status": "ok", "version": "12.2", "device_count": 2}
    doc["engine"] = {
        "status": "ok",
        "version": "24.0.7",
        "runtimes": ["nvidia", "runc"],
        "nvidia_runtime": True,
    }
    doc["env"] = {"CUDA_VISIBLE_DEVICES": "0,1"}
    doc["paddle"]["compiled_cuda_archs"] = [80, 90]
    return doc


def field_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield prefix + (key,)
            yield from field_paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield prefix + (i,)
            yield from field_paths(value, prefix + (i,))


DELETE = object()


def with_value(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def judge_and_render(host: HostFacts, matrix: Matrix) -> None:
    """Everything a facts document reaches after loading: image choice, judge, every renderer."""
    from envcheck.contracts.host_report import Report
    from envcheck.image.choice import select_image
    from envcheck.render.annotations import github_annotations
    from envcheck.render.junit import junit_xml
    from envcheck.render.markdown import render_markdown
    from envcheck.render.text import render_plain, render_rich
    from envcheck.verdict.judge import Context, judge

    image = select_image(host, matrix)
    findings: list[Finding] = judge(
        Context(host=host, matrix=matrix, image=image, expect_gpu=True, needs_engine=True)
    )
    report = Report(host=host, findings=tuple(findings), image=image)
    render_plain(report, io.StringIO(), explain=True)
    render_rich(report, io.StringIO(), explain=True)
    render_markdown(report)
    junit_xml([report])
    github_annotations(report)
    json.dumps(report.to_json())


def facts_case(doc: Any, matrix: Matrix, name: str) -> None:
    """One hostile document: FactsError (exit 2) or a host that judges and renders cleanly."""
    try:
        host = host_from_document(doc)
        judge_and_render(host, matrix)
    except (FactsError, EnvcheckError):
        TALLY.record(name)
    except Exception:  # the campaign counts what would be exit 3, then fails the test
        TALLY.record(name, traceback_seen=True, detail=traceback.format_exc(limit=3))
        raise
    else:
        TALLY.record(name)


# -- the matrix, field by field ------------------------------------------------------------------

_FIELD = re.compile(r"^([a-z_]+) = (.+)$")
BROKEN_VALUES = ('"x"', '""', "-1", "12.10", '[1, "a"]', "true", "{ a = 1 }", "1979-05-27")


def matrix_mutations(root: Path, per_file: int = 12) -> Iterator[tuple[str, str, str]]:
    """(file, name, new text): the first fields of each file, each replaced or deleted."""
    for toml in sorted(root.glob("*.toml")):
        lines = toml.read_text(encoding="utf-8").splitlines()
        seen = 0
        for i, line in enumerate(lines):
            m = _FIELD.match(line)
            if not m or seen >= per_file:
                continue
            seen += 1
            for value in (*BROKEN_VALUES, None):
                changed = (
                    lines[:i]
                    + ([] if value is None else [f"{m.group(1)} = {value}"])
                    + lines[i + 1 :]
                )
                label = "deleted" if value is None else value
                yield (
                    toml.name,
                    f"{toml.name}:{i + 1}:{m.group(1)}={label}",
                    "\n".join(changed) + "\n",
                )


def matrix_case(folder: Path, file: str, text: str, name: str, host: HostFacts) -> None:
    from envcheck.contracts.errors import MatrixError
    from envcheck.matrix.load import load_matrix

    original = (folder / file).read_text(encoding="utf-8")
    (folder / file).write_text(text, encoding="utf-8")
    try:
        matrix = load_matrix(str(folder))
        judge_and_render(host, matrix)
    except (MatrixError, EnvcheckError):
        TALLY.record(name)
    except Exception:  # the campaign counts what would be exit 3, then fails the test
        TALLY.record(name, traceback_seen=True, detail=traceback.format_exc(limit=3))
        raise
    else:
        TALLY.record(name)
    finally:
        (folder / file).write_text(original, encoding="utf-8")


# -- the CLI: flags, hostile files, streams ------------------------------------------------------


@dataclass(frozen=True)
class CliCase:
    name: str
    args: tuple[str, ...]  # `{tmp}` is the case's own folder, `{facts}` a good facts file
    exit_code: int
    shell: str | None = None  # run through sh -c with this redirection suffix (streams)
    setup: Callable[[Path], None] | None = None
    stderr_has: str = ""
    env: tuple[tuple[str, str], ...] = ()


def _write(name: str, content: bytes) -> Callable[[Path], None]:
    def write(tmp: Path) -> None:
        (tmp / name).write_bytes(content)

    return write


def _saved_report(tmp: Path, hostname: str = "gpu-ü-1") -> None:
    from tests import report_samples

    (tmp / "r.json").write_text(json.dumps(report_samples.healthy(hostname=hostname).to_json()))


def _symlink(name: str, target: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / "target.txt").write_text("not ours\n")
        (tmp / name).symlink_to(target if target.startswith("/") else tmp / target)

    return make


def _machine(arch: str) -> Callable[[Path], None]:
    """The good facts, on a machine of another architecture, with no Paddle installed: no
    official build exists there, and nothing installed can train (a build from source that is
    installed would decide the verdict instead: tests/unit/test_platforms.py)."""

    def write(tmp: Path) -> None:
        doc = full_facts()
        doc["machine"]["arch"] = arch
        doc["paddle"] = {"status": "absent"}
        (tmp / "f.json").write_text(json.dumps(doc))

    return write


CLI_CASES: tuple[CliCase, ...] = (
    CliCase("flag: unknown", ("doctor", "--bogus"), 2, stderr_has="unknown flag '--bogus'"),
    CliCase("flag: unknown under --json", ("doctor", "--json", "--bogus"), 2),
    CliCase(
        "flag: --gpus letters",
        ("doctor", "--facts", "{facts}", "--gpus", "a,b"),
        2,
        stderr_has="--gpus",
    ),
    CliCase("flag: --gpus negative", ("doctor", "--facts", "{facts}", "--gpus", "-1"), 2),
    CliCase("flag: --smoke-timeout nan", ("doctor", "--smoke-timeout", "nan"), 2),
    CliCase("flag: --smoke-timeout huge", ("doctor", "--smoke-timeout", "9" * 5000), 2),
    CliCase(
        "flag: --image garbage", ("doctor", "--facts", "{facts}", "--image", "UPPER/\x1b[2J:tag"), 2
    ),
    CliCase("flag: --registry unknown", ("doctor", "--facts", "{facts}", "--registry", "nope"), 2),
    CliCase("flag: --paddle unknown", ("doctor", "--facts", "{facts}", "--paddle", "9.9.9"), 2),
    CliCase(
        "flag: --matrix missing", ("doctor", "--facts", "{facts}", "--matrix", "{tmp}/none"), 2
    ),
    CliCase("flag: --matrix is a file", ("doctor", "--facts", "{facts}", "--matrix", "{facts}"), 2),
    CliCase("flag: no command", (), 2),
    CliCase(
        "facts: missing", ("doctor", "--facts", "{tmp}/none.json"), 2, stderr_has="no such file"
    ),
    CliCase("facts: a directory", ("doctor", "--facts", "{tmp}"), 2),
    CliCase(
        "facts: not UTF-8",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b'{"a": "\xff"}'),
        stderr_has="not UTF-8",
    ),
    CliCase(
        "facts: nested 100k deep",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b"[" * 100_000),
        stderr_has="nested too deeply",
    ),
    CliCase(
        "facts: nested objects",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
    ),
    CliCase(
        "facts: 5000-digit integer",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b'{"gpus": [{"index": ' + b"1" * 5000 + b"}]}"),
    ),
    CliCase(
        "facts: compute_capability x",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write(
            "f.json",
            b'{"driver": {"status": "ok", "version": "535.1"}, '
            b'"gpus": [{"compute_capability": "x"}]}',
        ),
        stderr_has="host.gpus[0].compute_capability",
    ),
    CliCase(
        "facts: paddle.cuda abc",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b'{"paddle": {"status": "ok", "cuda": "abc"}}'),
        stderr_has="host.paddle.cuda",
    ),
    CliCase(
        "facts: candidate without path",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b'{"cudnn": {"candidates": [{"version": "9.1"}]}}'),
        stderr_has="candidates[0].path",
    ),
    CliCase(
        "facts: NaN version",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b'{"driver": {"version": NaN}}'),
    ),
    CliCase("facts: empty", ("doctor", "--facts", "{tmp}/f.json"), 2, setup=_write("f.json", b"")),
    CliCase(
        "facts: 17 MiB",
        ("doctor", "--facts", "{tmp}/f.json"),
        2,
        setup=_write("f.json", b" " * (17 * 2**20)),
    ),
    CliCase(
        "facts: markup and escapes",
        ("doctor", "--facts", "{tmp}/f.json", "--no-color"),
        0,
        setup=_write(
            "f.json",
            json.dumps(
                {
                    "machine": {"hostname": "h\n::error::x[/bold]\x1b[2J"},
                    "driver": {"status": "absent"},
                    "gpus": [],
                    "paddle": {},
                }
            ).encode(),
        ),
    ),
    CliCase(
        "baseline: nested",
        ("doctor", "--facts", "{facts}", "--baseline", "{tmp}/b.json"),
        2,
        setup=_write("b.json", b"[" * 100_000),
    ),
    CliCase(
        "baseline: not UTF-8",
        ("doctor", "--facts", "{facts}", "--baseline", "{tmp}/b.json"),
        2,
        setup=_write("b.json", b"\xfe\xff"),
    ),
    CliCase("output: --junit a directory", ("doctor", "--facts", "{facts}", "--junit", "{tmp}"), 2),
    CliCase(
        "output: --markdown in a missing folder",
        ("doctor", "--facts", "{facts}", "--markdown", "{tmp}/no/such/r.md"),
        2,
    ),
    CliCase(
        "output: --junit a symlink to a file",
        ("doctor", "--facts", "{facts}", "--junit", "{tmp}/link"),
        2,
        setup=_symlink("link", "target.txt"),
        stderr_has="symbolic link",
    ),
    CliCase(
        "output: --save-baseline a dangling symlink",
        ("doctor", "--facts", "{facts}", "--save-baseline", "{tmp}/link"),
        2,
        setup=_symlink("link", "gone"),
    ),
    CliCase(
        "output: --junit /dev/full", ("doctor", "--facts", "{facts}", "--junit", "/dev/full"), 4
    ),
    CliCase(
        "output: --junit a character device",
        ("doctor", "--facts", "{facts}", "--junit", "{tmp}/null"),
        0,
        setup=lambda tmp: os.mknod(tmp / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3)),
    ),
    CliCase("output: --markdown -", ("doctor", "--facts", "{facts}", "--markdown", "-"), 0),
    CliCase(
        "output: --markdown /dev/stdout",
        ("doctor", "--facts", "{facts}", "--markdown", "/dev/stdout"),
        0,
    ),
    CliCase("stream: stdout closed", ("doctor", "--facts", "{facts}"), 0, shell=">&-"),
    CliCase(
        "stream: stdout closed, --json", ("doctor", "--facts", "{facts}", "--json"), 0, shell=">&-"
    ),
    CliCase("stream: stderr closed, bad flag", ("doctor", "--bogus"), 2, shell="2>&-"),
    CliCase(
        "stream: stdin closed, --facts -",
        ("doctor", "--facts", "-"),
        2,
        shell="<&-",
        stderr_has="stdin",
    ),
    CliCase(
        "stream: stdout full",
        ("doctor", "--facts", "{facts}"),
        4,
        shell=">/dev/full",
        stderr_has="No space left",
    ),
    CliCase(
        "stream: stdout full, --json",
        ("doctor", "--facts", "{facts}", "--json"),
        4,
        shell=">/dev/full",
    ),
    CliCase(
        "stream: stdout full, bad flag, --json",
        ("doctor", "--json", "--bogus"),
        2,
        shell=">/dev/full",
    ),
    CliCase(
        "stream: stderr full",
        ("doctor", "--facts", "{facts}", "--junit", "{tmp}"),
        2,
        shell="2>/dev/full",
    ),
    CliCase(
        "stream: ASCII locale",
        ("doctor", "--facts", "{facts}", "--explain"),
        0,
        env=(("LC_ALL", "C"), ("PYTHONUTF8", "0"), ("PYTHONIOENCODING", "")),
    ),
    CliCase(
        "stream: ASCII locale, report",
        ("report", "{tmp}/r.json"),
        0,
        setup=_saved_report,
        env=(("LC_ALL", "C"), ("PYTHONUTF8", "0"), ("PYTHONIOENCODING", "")),
    ),
    # errors that help: the nearest command, the real range, the GPUs the host has
    CliCase("flag: mistyped command", ("doctr",), 2, stderr_has="did you mean `doctor`?"),
    CliCase(
        "flag: --smoke-timeout 0",
        ("doctor", "--smoke-timeout", "0"),
        2,
        stderr_has="must be more than 0 and at most 86400 seconds",
    ),
    CliCase(
        "flag: --gpus 5 on a two-GPU host",
        ("doctor", "--facts", "{facts}", "--gpus", "5"),
        2,
        stderr_has="no GPU 5 on this host, which has 2 GPUs (index 0, 1)",
    ),
    # Paddle publishes nothing for these machines: no amd64 image, no x86 wheel, exit 1.
    *(
        CliCase(
            f"facts: a {arch} machine",
            ("doctor", "--facts", "{tmp}/f.json", "--no-smoke"),
            1,
            setup=_machine(arch),
        )
        for arch in ("ppc64le", "s390x", "armv7l")
    ),
    CliCase(
        "report: hostname with a workflow command",
        ("report", "{tmp}/r.json"),
        0,
        setup=lambda tmp: _saved_report(tmp, "gpu\n::error::pwned\x1b[2J"),
    ),
)


def good_facts_text() -> str:
    """A host that passes the static checks (exit 0 without smoke): a GPU build on an A100."""
    return json.dumps(full_facts())


def snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        try:
            info = path.lstat()
        except OSError:
            continue
        out[str(path)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return out


def _devices() -> dict[str, tuple[int, int]]:
    return {
        p: (os.lstat(p).st_mode, os.lstat(p).st_rdev)
        for p in ("/dev/null", "/dev/full", "/dev/zero")
    }


def run_cli_case(case: CliCase, tmp: Path) -> subprocess.CompletedProcess[str] | Result:
    """Run one CLI case in `tmp` (its cwd), in-process unless it is about the process (its
    streams, its locale, `/dev/stdout`); record it in TALLY and return what it left."""
    facts = tmp / "good-facts.json"
    facts.write_text(good_facts_text())
    if case.setup:
        case.setup(tmp)
    args = [a.replace("{tmp}", str(tmp)).replace("{facts}", str(facts)) for a in case.args]
    env = {**ENV, **dict(case.env)}
    named = {a for a in args if a.startswith(str(tmp))}
    before, devices = snapshot(tmp), _devices()
    cmd = [sys.executable, "-m", "envcheck", *args]
    r: subprocess.CompletedProcess[str] | Result
    if not (case.shell or case.env or {"/dev/stdout", "/dev/stderr"} & set(args)):
        r = run_envcheck(args, env=env, cwd=tmp)  # a case about the process's streams: below
    elif case.shell:
        line = " ".join(_quote(c) for c in cmd) + f" {case.shell}"
        r = subprocess.run(
            ["sh", "-c", line],
            capture_output=True,
            text=True,
            errors="replace",
            cwd=tmp,
            env=env,
            timeout=120,
            check=False,
        )
    else:
        r = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            errors="replace",
            cwd=tmp,
            env=env,
            timeout=120,
            check=False,
        )
    after = snapshot(tmp)
    new = [p for p in after if p not in before and p not in named]
    changed = [
        p
        for p in before
        if p in after and after[p] != before[p] and p not in named and p != str(tmp)
    ]
    changed += [d for d, v in _devices().items() if v != devices[d]]
    seen_traceback = "Traceback" in r.stderr or r.returncode == 3
    wrong = r.returncode != case.exit_code or (case.stderr_has not in r.stderr)
    output = r.stdout + r.stderr  # no TTY and no GITHUB_ACTIONS: no ESC, no workflow command
    injected = "\x1b" in output or any(
        line.lstrip().startswith("::") for line in output.splitlines()
    )
    TALLY.record(
        case.name,
        traceback_seen=seen_traceback,
        wrong_exit=wrong,
        injected=injected,
        leaks=len(new),
        damaged=len(changed),
        detail=f"exit {r.returncode} (want {case.exit_code}); new {new}; changed {changed}; "
        f"stderr {r.stderr[-400:]!r}",
    )
    return r


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
