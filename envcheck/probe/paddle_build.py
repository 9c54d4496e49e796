"""The Paddle build of the target interpreter, read from files — never by importing Paddle.

Equivalent to `python -c "import paddle; paddle.version.show()"` without its ~1 s import and
315 MB: the generated `paddle/version/__init__.py` is plain assignments of literals
(compat_facts §6b; written by `write_version_py()` in Paddle's setup.py).
"""

from __future__ import annotations

import ast
import os
import re

from envcheck.contracts.facts import FactsError, PaddleFacts, from_dict, to_dict
from envcheck.contracts.record import replace
from envcheck.contracts.versions import VersionParseError, parse_arch_name
from envcheck.probe.interpreter import PADDLE_VERSION_FILE, Interpreter
from envcheck.regular import read_regular

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+?)\s*$", re.MULTILINE)
_MAX_VERSION_FILE = 256 * 1024  # the real ones are about 1 KB
_DISTS = {"paddlepaddle_gpu": "paddlepaddle-gpu", "paddlepaddle": "paddlepaddle"}


def parse_version_file(text: str) -> dict[str, object]:
    """The literal assignments of `paddle/version/__init__.py` (functions below them ignored)."""
    values: dict[str, object] = {}
    for name, source in _ASSIGN.findall(text):
        try:
            values[name] = ast.literal_eval(source)  # parses, never runs
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return values


def _flag(value: object) -> str | None:
    """Paddle writes 'False'/'None'/'0' for "not built with it"."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return None if text in ("", "False", "None", "0", "OFF") else text


def build_facts(
    values: dict[str, object],
    package: str | None,
    location: str,
    python: str | None,
    distributions: tuple[str, ...] = (),
) -> PaddleFacts:
    archs = values.get("compiled_cuda_archs")
    pip_libs = values.get("with_pip_cuda_libraries")
    return PaddleFacts(
        status="ok",
        package=package,
        version=_flag(values.get("full_version")),
        cuda=_flag(values.get("cuda_version")),
        cudnn=_flag(values.get("cudnn_version")),
        compiled_cuda_archs=_archs(archs) if isinstance(archs, list) else None,
        with_pip_cuda_libraries=(pip_libs == "ON") if isinstance(pip_libs, str) else None,
        nccl=_flag(values.get("nccl_version")),
        location=location,
        python=python,
        distributions=distributions,
    )


def _archs(written: list[object]) -> tuple[int, ...]:
    """`[75, 80, "100a", "120f"]` -> (75, 80, 100, 120): a suffixed name (CUDA 12.9+'s
    arch-specific `a` and family `f` targets) is the sm it runs on, not a name to drop."""
    found: list[int] = []
    for name in written:
        try:
            found.append(parse_arch_name(name))
        except VersionParseError:
            continue
    return tuple(found)


_REQUIRES = re.compile(
    r"^Requires-Dist:\s*(nvidia-[A-Za-z0-9_.-]+)\s*\(?==\s*([^\s;)]+)\)?\s*(?:;(.*))?$",
    re.MULTILINE,
)
_MAX_METADATA = 1024 * 1024


def cuda_requirements(site_dir: str) -> tuple[str, ...] | None:
    """`pip show -v paddlepaddle-gpu`'s nvidia-* requirements, pinned, that apply on this
    machine (their markers: `platform_system == 'Linux' and platform_machine == 'x86_64'`);
    None when the build's METADATA cannot be read."""
    try:
        entries = sorted(e for e in os.listdir(site_dir) if e.startswith("paddlepaddle_gpu-"))
    except OSError:
        return None
    metadata = [os.path.join(site_dir, e, "METADATA") for e in entries if e.endswith(".dist-info")]
    for path in metadata:
        try:
            text = read_regular(path, _MAX_METADATA).decode("utf-8", "replace")
        except OSError:
            continue
        return tuple(
            f"{name}=={version}"
            for name, version, marker in _REQUIRES.findall(text)
            if _applies(marker)
        )
    return None


def _applies(marker: str) -> bool:
    if not marker.strip():
        return True
    # imported here: only a pip-CUDA build's requirements need it
    from packaging.markers import InvalidMarker, Marker, UndefinedEnvironmentName

    try:
        return Marker(marker).evaluate()
    except (InvalidMarker, UndefinedEnvironmentName):
        return True


def installed_distributions(site_dir: str) -> list[str]:
    """`paddlepaddle` and/or `paddlepaddle-gpu` dist-info folders next to the `paddle` package."""
    found: list[str] = []
    try:
        entries = os.listdir(site_dir)
    except OSError:
        return found
    for entry in entries:
        if entry.endswith((".dist-info", ".egg-info")):
            name = entry.split("-", 1)[0].lower().replace(".", "_")
            if name in _DISTS:
                found.append(_DISTS[name])
    return sorted(set(found))


def probe_paddle(target: Interpreter) -> PaddleFacts:
    """`pip show paddlepaddle-gpu paddlepaddle` + `paddle.version.show()`, from the files, with
    why this interpreter is the one judged."""
    return replace(_probe_paddle(target), python_reason=target.why or None)


def _probe_paddle(target: Interpreter) -> PaddleFacts:
    python = target.python
    for site_dir in target.paths:
        version_file = os.path.join(site_dir, PADDLE_VERSION_FILE)
        try:
            text = read_regular(version_file, _MAX_VERSION_FILE).decode("utf-8", "replace")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:  # a FIFO, a folder, a huge file, no permission: not a version file
            return PaddleFacts(
                status="error",
                python=python,
                location=os.path.dirname(os.path.dirname(version_file)),
                reason=f"cannot read {version_file}: {e.strerror or e}",
            )
        dists = installed_distributions(site_dir)
        facts = build_facts(
            parse_version_file(text),
            _package(dists, text),
            os.path.dirname(os.path.dirname(version_file)),
            python,
            tuple(dists),
        )
        if facts.with_pip_cuda_libraries and facts.cuda:
            facts = replace(facts, cuda_requirements=cuda_requirements(site_dir))
        if facts.version is None and len(dists) <= 1:
            return _unreadable(facts, f"unreadable {version_file}")
        return with_fatbin_archs(validated(facts, version_file))
    return PaddleFacts(
        status="absent", python=python, reason="Paddle is not installed for this interpreter"
    )


# Where 2.x keeps its CUDA kernels: paddle/base (2.6), paddle/fluid (2.4, 2.5), paddle/libs.
_KERNEL_LIBRARIES = ("base/libpaddle.so", "fluid/libpaddle.so", "libs/libphi.so")


def with_fatbin_archs(facts: PaddleFacts) -> PaddleFacts:
    """A GPU build that records no compiled archs (2.x): the archs read from its libraries'
    `.nv_fatbin` headers (`cuobjdump --list-elf`, bounded: envcheck.probe.fatbin)."""
    if not facts.cuda or facts.compiled_cuda_archs or not facts.location:
        return facts
    # imported here: only this branch needs it, and a doctor seldom takes it
    from envcheck.probe.fatbin import library_archs

    paths = [os.path.join(facts.location, lib) for lib in _KERNEL_LIBRARIES]
    found = library_archs([p for p in paths if os.path.isfile(p)])
    if found is None or not found[0] and not found[1]:
        return facts
    sass, ptx = found
    return replace(facts, fatbin_archs=sass, fatbin_ptx=ptx)


def validated(facts: PaddleFacts, version_file: str) -> PaddleFacts:
    """`facts` checked as `--facts` checks a saved document (`cuda_version = 'abc'`, seven
    parts, `1e400`, `١٢.٦`): the judge parses these fields, so a bad one is an error fact here."""
    try:
        from_dict(PaddleFacts, to_dict(facts), "paddle")
    except FactsError as e:
        return _unreadable(facts, f"unreadable {version_file}: {e}")
    return facts


def _unreadable(facts: PaddleFacts, reason: str) -> PaddleFacts:
    return PaddleFacts(status="error", python=facts.python, location=facts.location, reason=reason)


def _package(dists: list[str], text: str) -> str | None:
    if len(dists) == 1:
        return dists[0]
    return (
        None
        if not dists
        else "paddlepaddle-gpu"
        if "cuda_version = 'False'" not in text
        else "paddlepaddle"
    )
