"""Field checks of the matrix files (pure): a TOML value as written -> the value the row record
holds, or `Bad` with the problem in words. Each field of a row record in `envcheck.matrix.model`
names its check in its metadata (`field(metadata={"check": dotted})`); `from_dict`'s row reader
(`envcheck.contracts.facts.read_fields`) runs it. The TOML is written by hand, so a check is
strict where a saved facts document is lenient: `cuda = 12.10` is refused, not read as "12.1"."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.contracts.versions import (
    VersionParseError,
    parse_arch_name,
    parse_compute_capability,
    parse_dotted,
)


class Bad(ValueError):
    pass


Check = Callable[[Any], Any]


def type_name(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", list: "array", dict: "table"}.get(
        type(value), type(value).__name__
    )


def text(value: Any) -> str:
    if isinstance(value, float):  # cuda = 12.10 would silently become 12.1
        raise Bad(f'expected a quoted string, got float {value!r} (write "{value}")')
    if not isinstance(value, str):
        raise Bad(f"expected a string, got {type_name(value)} {value!r}")
    if not value.strip():
        raise Bad("empty string")
    return value


def dotted(value: Any) -> str:
    try:
        _parse_dotted(text(value))
    except VersionParseError as e:
        raise Bad(str(e)) from e
    return str(value)


def pep440(value: Any) -> str:
    try:
        cached_version(text(value))
    except InvalidVersion as e:
        raise Bad(f"not a PEP 440 version: {value!r}") from e
    return str(value)


# The same few strings ("NV-RN", "12.9", "3.3.1") recur hundreds of times: parse each once.
_parse_dotted = functools.lru_cache(maxsize=1024)(parse_dotted)
cached_version = functools.lru_cache(maxsize=1024)(Version)


def cc(value: Any) -> str:
    try:
        parse_compute_capability(text(value))
    except VersionParseError as e:
        raise Bad(f'{e} (expected "major.minor", e.g. "8.6")') from e
    return str(value)


def specifier(value: Any) -> str:
    """A PEP 440 version specifier (">=3.9,<3.14", "==3.10.*"), read as the rules read it: a value
    `SpecifierSet` refuses would scope nothing at run time."""
    written = text(value)
    try:
        clauses = SpecifierSet(written)
    except InvalidSpecifier as e:  # its message names the clause: "Invalid specifier: '<three'"
        raise Bad(
            f'not a version specifier: {value!r} ({e}; e.g. ">=3.9,<3.14" or "==3.10.*")'
        ) from e
    if not clauses:  # "," would match every version
        raise Bad(f"not a version specifier: {value!r} (no clause)")
    return str(value)


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Bad(f"expected true or false, got {type_name(value)} {value!r}")
    return value


def integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Bad(f"expected a positive integer, got {type_name(value)} {value!r}")
    return value


def archs(value: Any) -> tuple[int, ...]:
    """`[61, 70, 75]`: the sm numbers as Paddle prints them (`compiled for 75 80 86 89`); a name
    with CUDA 12.9+'s suffix, as a build string writes it (`"100a"`, `"120f"`), is its sm."""
    if not isinstance(value, list) or not value:
        raise Bad(f"expected a non-empty array of sm numbers, got {value!r}")
    read = [_sm(v) for v in value]
    bad = [v for v, sm in zip(value, read) if sm is None or not 10 <= sm <= 999]
    if bad:
        raise Bad(f'not sm numbers (e.g. 86 for sm_86, or "120f"): {bad!r}')
    return tuple(sm for sm in read if sm is not None)


def _sm(value: Any) -> int | None:
    try:
        return parse_arch_name(value)
    except VersionParseError:
        return None


PLATFORMS = ("linux/amd64", "linux/arm64")


def platforms(value: Any) -> tuple[str, ...]:
    """`["linux/amd64"]`: the OCI platforms the tag is published for."""
    platforms = texts(value)
    bad = [p for p in platforms if p not in PLATFORMS]
    if bad:
        raise Bad(f"unknown platforms {bad!r} (known: {', '.join(PLATFORMS)})")
    return platforms


def texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise Bad(f"expected a non-empty array of strings, got {value!r}")
    return tuple(text(v) for v in value)


def one_of(*choices: str) -> Check:
    def check(value: Any) -> str:
        if value not in choices:
            raise Bad(f"expected one of {', '.join(choices)}, got {value!r}")
        return str(value)

    return check


def matching(pattern: str, what: str) -> Check:
    regex = re.compile(pattern)

    def check(value: Any) -> str:
        if not regex.fullmatch(text(value)):
            raise Bad(f"not {what}: {value!r}")
        return str(value)

    return check


WHEEL_PLATFORMS = ("linux/amd64", "linux/arm64", "windows/amd64")  # where a wheel's list was seen
wheel_platform = one_of(*WHEEL_PLATFORMS)
docker_tag = matching(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", "a Docker tag")
digest = matching(r"sha256:[0-9a-f]{64}", "a sha256:<64 hex> digest")
repository = matching(
    r"[a-z0-9]+([.-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+", "an image repository"
)
row_id = matching(r"[a-z0-9][a-z0-9.-]{0,63}", "a lower-case id")


_PCI_DEVICE = re.compile(r"[0-9a-f]{4}")


def pci_devices(value: Any) -> dict[str, str]:
    """`{ "1b80" = "GeForce GTX 1080" }`: PCI device ids of vendor 10de (four lower-case hex
    digits, as sysfs and `lspci -nn` write them) and the product each one is."""
    if not isinstance(value, dict) or not value:
        raise Bad(
            f'expected a table of device ids, e.g. {{ "1b80" = "GeForce GTX 1080" }}, got {value!r}'
        )
    bad = [k for k in value if not _PCI_DEVICE.fullmatch(k)]
    if bad:
        raise Bad(f"not PCI device ids (four lower-case hex digits, e.g. 1b80): {bad!r}")
    return {k: text(v) for k, v in value.items()}


def packages(value: Any) -> dict[str, str]:
    """`{ Ubuntu = "nvidia-driver-580" }`: a distribution and the package (or setting) of it."""
    if not isinstance(value, dict) or not value:
        raise Bad(f"expected a table of distribution = package, got {value!r}")
    return {text(k): text(v) for k, v in value.items()}


year_month = matching(r"20\d\d-(0[1-9]|1[0-2])", "a year and month (YYYY-MM)")
