"""Slurm host lists: `gpu[001-004,010]` read into names and names written back as ranges.

What `--expect-hosts` reads (`scontrol show hostnames` output, a hand-written list, a node list
with ranges) and how the fleet dashboard names many hosts in one line. Pure text in, text out;
the list is user input, so a malformed or huge one is a HostListError that says where.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


class HostListError(ValueError):
    """An --expect-hosts list that cannot be read as host names; the message says where."""


_HOSTLIST_TOKEN = re.compile(r"(?:[^\s,\[\]]|\[[^\]]*\])+")
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_EXPECTED_HOSTS = 100_000
MAX_NAME = 253  # a DNS name's limit (RFC 1035 2.3.4 less the root's dot)


def parse_host_list(text: str) -> list[str]:
    """Host names, one or more a line (spaces or commas between), `#` comments, and Slurm's
    ranges (`gpu[001-004,010]`, as `scontrol show hostnames` would expand them)."""
    names: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        rest = _HOSTLIST_TOKEN.sub("", line).replace(",", "").strip()
        if rest:
            raise HostListError(f"line {lineno}: cannot read {rest[:40]!r} as host names")
        for token in _HOSTLIST_TOKEN.findall(line):
            names += _expand_ranges(token, lineno)
            if len(names) > MAX_EXPECTED_HOSTS:
                raise HostListError(f"line {lineno}: more than {MAX_EXPECTED_HOSTS} hosts")
    return names


def _expand_ranges(token: str, lineno: int) -> list[str]:
    """The names `token` stands for, counted before any is made: a 2.4 KB list of ranges once
    asked for 2.1 GB. At most MAX_EXPECTED_HOSTS names of at most MAX_NAME characters."""
    names, length = [""], 0
    too_many = f"line {lineno}: {token[:40]!r} names more than {MAX_EXPECTED_HOSTS} hosts"
    for m in re.finditer(r"([^\[]*)(?:\[([^\]]*)\])?", token):
        text, ranges = m[1], m[2]
        budget = MAX_EXPECTED_HOSTS // len(names)
        parts = [""] if ranges is None else _range_parts(ranges, lineno, budget, too_many)
        length += len(text) + max(len(part) for part in parts)
        if length > MAX_NAME:
            raise HostListError(f"line {lineno}: {token[:40]!r} is longer than a host name")
        names = [name + text + part for name in names for part in parts]
    for name in names:
        if not _HOST_NAME.fullmatch(name):
            raise HostListError(f"line {lineno}: {name[:40]!r} is not a host name")
    return names


def _range_parts(ranges: str, lineno: int, budget: int, too_many: str) -> list[str]:
    """The numbers of `001-004,010`, at most `budget` of them (HostListError `too_many`)."""
    spans: list[tuple[int, int, int]] = []
    count = 0
    for item in ranges.split(","):
        m = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", item.strip())
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise HostListError(f"line {lineno}: {item.strip()[:40]!r} is not a range like 001-004")
        first, last = int(m[1]), int(m[2] if m[2] is not None else m[1])
        count += last - first + 1
        if count > budget:
            raise HostListError(too_many)
        spans.append((first, last, len(m[1])))
    return [str(n).zfill(width) for first, last, width in spans for n in range(first, last + 1)]


_NUMBERED = re.compile(r"(.*?)(\d+)(\D*)")


def compress_host_list(names: Iterable[str]) -> list[str]:
    """`gpu001 gpu002 gpu003 gpu010 login` -> `["gpu[001-003,010]", "login"]`, as Slurm writes
    them: what `parse_host_list` (and `srun -w`, `--expect-hosts`) reads back. The last number in
    a name is the one ranged; names are kept in the order they first appear."""
    return [text for text, _ in compressed_host_list(names)]


def compressed_host_list(names: Iterable[str]) -> list[tuple[str, int]]:
    """`compress_host_list` with how many hosts each part names."""
    runs: dict[tuple[str, str], list[str]] = {}  # (prefix, suffix) -> the digits, as written
    order: list[tuple[str, str] | str] = []
    for name in dict.fromkeys(names):
        m = _NUMBERED.fullmatch(name)
        if m is None:
            order.append(name)
            continue
        key = (m[1], m[3])
        if key not in runs:
            runs[key] = []
            order.append(key)
        runs[key].append(m[2])
    return [
        (item, 1) if isinstance(item, str) else (_ranged(*item, runs[item]), len(runs[item]))
        for item in order
    ]


def _ranged(prefix: str, suffix: str, numbers: list[str]) -> str:
    if len(numbers) == 1:
        return f"{prefix}{numbers[0]}{suffix}"
    spans: list[list[str]] = []  # [first, last] as written; a span keeps its first's padding
    for digits in sorted(numbers, key=lambda d: (int(d), len(d))):
        span = spans[-1] if spans else None
        if (
            span
            and int(digits) == int(span[1]) + 1
            and digits == str(int(digits)).zfill(len(span[0]))
        ):
            span[1] = digits
        else:
            spans.append([digits, digits])
    return f"{prefix}[{','.join(a if a == b else f'{a}-{b}' for a, b in spans)}]{suffix}"
