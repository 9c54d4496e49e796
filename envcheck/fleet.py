"""Fleets: many saved doctor reports (`--json`) merged into one host × layer × verdict summary.

What a team runs after a matrix of runner jobs, a Kubernetes Job per GPU node or `srun` over a
Slurm partition. Pure: documents in, summary out; reading files is the `report` command's job.
A host that reported twice (a re-run job, two artifacts) counts once, with its newest report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, get_args

from envcheck.exitcodes import ExitStatus
from envcheck.facts import FactsError, HostFacts, MachineFacts, from_dict, host_from_document
from envcheck.findings import LAYERS, Finding, Layer, fail
from envcheck.report import SCHEMA_VERSION, ImageChoice, Report

LAYER_ORDER = tuple(name for name, _ in LAYERS)  # the doctor's own layer order

VERDICT_ORDER = ("pass", "warn", "fail", "cpu-fallback", "wrong-results")  # worst last
SEVERITY_ORDER = ("pass", "warn", "fail")
TIMESTAMP_KEYS = ("generated_at", "finished_at", "started_at", "timestamp")  # in `meta`
MAX_EXIT_CODE = int(ExitStatus.WRONG_RESULTS)  # the worst verdict; 130 leaves no report


class ReportDocumentError(ValueError):
    """A saved report is not one envcheck can merge; the message says why."""


@dataclass(frozen=True)
class SavedReport:
    """A document as read from `source`; `mtime` breaks ties when reports carry no timestamp."""

    source: str
    document: Any
    mtime: float | None = None


@dataclass(frozen=True)
class HostReport:
    source: str
    hostname: str | None
    verdict: str  # as that host's envcheck said (the document's, not recomputed)
    exit_code: int
    report: Report
    timestamp: datetime | None = None
    mtime: float | None = None
    reported: bool = True  # False: an expected host with no report (see not_reported)

    @property
    def label(self) -> str:
        """The host's name, or the file it came from when its report names no host."""
        return self.hostname or f"? ({self.source})"

    def layer_severities(self) -> dict[str, str]:
        """The worst severity per layer: `{"driver": "fail", "smoke": "pass", …}`."""
        worst: dict[str, str] = {}
        for f in self.report.findings:
            if SEVERITY_ORDER.index(f.severity) >= SEVERITY_ORDER.index(worst.get(f.layer, "pass")):
                worst[f.layer] = f.severity
        return worst

    def first_problem(self) -> Finding | None:
        problems = [f for f in self.report.findings if f.severity != "pass"]
        problems.sort(key=lambda f: f.severity != "fail")
        return problems[0] if problems else None


@dataclass(frozen=True)
class Duplicate:
    hostname: str
    kept: str
    ignored: tuple[str, ...]


@dataclass(frozen=True)
class ProblemGroup:
    """Hosts that failed (or warned on) the same check with the same fix: one line of the fleet
    dashboard (`12 hosts: driver.version-mismatch → reboot …`), not twelve."""

    id: str
    severity: str
    fix: str | None
    hosts: tuple[str, ...]  # labels, in the fleet's order
    message: str  # the first host's, as an example: messages carry per-host values


@dataclass(frozen=True)
class FleetSummary:
    hosts: tuple[HostReport, ...]  # one per host, sorted by hostname
    duplicates: tuple[Duplicate, ...] = ()
    layers: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def missing(self) -> tuple[str, ...]:
        """Expected hosts that never reported (each is also in `hosts`, as a failure)."""
        return tuple(h.hostname or "" for h in self.hosts if not h.reported)

    @property
    def exit_code(self) -> int:
        """The highest exit code of the merged reports (7 wrong results > 6 CPU fallback > 5 smoke
        > 1); an expected host that never reported counts as a failed check (1)."""
        return max((h.exit_code for h in self.hosts), default=0)

    @property
    def verdict(self) -> str:
        return max((h.verdict for h in self.hosts), key=VERDICT_ORDER.index, default="pass")

    def problem_groups(self) -> tuple[ProblemGroup, ...]:
        """Every problem of the fleet, identical ones (same check, severity and fix) together;
        failures first, then the most widespread."""
        members: dict[tuple[str, str, str | None], list[tuple[HostReport, Finding]]] = {}
        for host in self.hosts:
            seen: set[tuple[str, str, str | None]] = set()
            for f in host.report.findings:
                key = (f.id, f.severity, f.fix)
                if f.severity != "pass" and key not in seen:  # one per host, even if per GPU
                    seen.add(key)
                    members.setdefault(key, []).append((host, f))
        ordered = sorted(
            members.items(), key=lambda kv: (kv[0][1] != "fail", -len(kv[1]), kv[0][0])
        )
        return tuple(
            ProblemGroup(id, severity, fix, tuple(h.label for h, _ in group), group[0][1].message)
            for (id, severity, fix), group in ordered
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "envcheck-fleet",
            "schema_version": SCHEMA_VERSION,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "counts": self.counts,
            "layers": list(self.layers),
            "hosts": [_host_json(h) for h in self.hosts],
            "missing": list(self.missing),
            "groups": [
                {
                    "id": g.id,
                    "severity": g.severity,
                    "fix": g.fix,
                    "count": len(g.hosts),
                    "hosts": list(g.hosts),
                    "message": g.message,
                }
                for g in self.problem_groups()
            ],
            "duplicates": [
                {"hostname": d.hostname, "kept": d.kept, "ignored": list(d.ignored)}
                for d in self.duplicates
            ],
        }


def _host_json(host: HostReport) -> dict[str, Any]:
    return {
        "hostname": host.hostname,
        "source": host.source,
        "reported": host.reported,
        "verdict": host.verdict,
        "exit_code": host.exit_code,
        "timestamp": host.timestamp.isoformat() if host.timestamp else None,
        "layers": host.layer_severities(),
        "image": host.report.image.ref if host.report.image else None,
        "problems": [
            {
                "id": f.id,
                "severity": f.severity,
                "layer": f.layer,
                "message": f.message,
                "fix": f.fix,
            }
            for f in host.report.findings
            if f.severity != "pass"
        ],
    }


def merge_reports(
    saved: Iterable[SavedReport | HostReport], expected: Sequence[str] | None = None
) -> FleetSummary:
    """Merge parsed reports (documents are parsed here; a bad one raises ReportDocumentError).

    With `expected` (the hosts that should have reported: a Slurm node list, the GPU nodes of a
    Kubernetes cluster), each one without a report joins the fleet as a named failure.
    """
    hosts = [s if isinstance(s, HostReport) else parse_report(s) for s in saved]
    kept, duplicates = _newest_per_host(hosts)
    counts = {v: sum(h.verdict == v for h in kept) for v in VERDICT_ORDER}
    if expected is not None:
        absent = not_reported(expected, kept)
        counts["missing"] = len(absent)
        kept += absent
    kept.sort(key=lambda h: (h.hostname is None, h.hostname or h.source))
    return FleetSummary(tuple(kept), tuple(duplicates), _layers(kept), counts)


def same_host_key(name: str) -> str:
    """Host names compared as DNS does (no case) and by their first label: Slurm's `gpu001`
    is the node whose kernel says `gpu001.cluster.example`."""
    return name.split(".", 1)[0].lower()


def not_reported(expected: Sequence[str], hosts: Sequence[HostReport]) -> list[HostReport]:
    """One failed host per expected name that no report's hostname matches."""
    seen = {same_host_key(h.hostname) for h in hosts if h.hostname}
    absent: list[HostReport] = []
    for name in dict.fromkeys(expected):  # a name listed twice is one host
        if same_host_key(name) in seen:
            continue
        seen.add(same_host_key(name))
        finding = fail(
            "fleet.not-reported",
            f"{name} was expected but no readable report came from it: its doctor did not run, "
            "crashed before writing JSON, or its report was not collected",
            # The same words for every missing host: they make one line of the dashboard.
            fix="on that host, run `envcheck doctor --json` by hand and read its stderr "
            "(the job's log, or `kubectl logs` of its pod)",
            layer="fleet",
            hostname=name,
        )
        report = Report(HostFacts(machine=MachineFacts(hostname=name)), (finding,), proof="none")
        absent.append(HostReport("(no report)", name, "fail", 1, report, reported=False))
    return absent


class HostListError(ValueError):
    """An --expect-hosts list that cannot be read as host names; the message says where."""


_HOSTLIST_TOKEN = re.compile(r"(?:[^\s,\[\]]|\[[^\]]*\])+")
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_EXPECTED_HOSTS = 100_000


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
    names = [""]
    for m in re.finditer(r"([^\[]*)(?:\[([^\]]*)\])?", token):
        text, ranges = m[1], m[2]
        parts = [""] if ranges is None else _range_parts(ranges, lineno)
        if len(names) * len(parts) > MAX_EXPECTED_HOSTS:
            raise HostListError(
                f"line {lineno}: {token[:40]!r} names more than {MAX_EXPECTED_HOSTS} hosts"
            )
        names = [name + text + part for name in names for part in parts]
    for name in names:
        if not _HOST_NAME.fullmatch(name):
            raise HostListError(f"line {lineno}: {name[:40]!r} is not a host name")
    return names


def _range_parts(ranges: str, lineno: int) -> list[str]:
    parts: list[str] = []
    for item in ranges.split(","):
        m = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", item.strip())
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise HostListError(f"line {lineno}: {item.strip()[:40]!r} is not a range like 001-004")
        last = m[2] if m[2] is not None else m[1]
        if int(last) - int(m[1]) >= MAX_EXPECTED_HOSTS:
            raise HostListError(f"line {lineno}: the range {item.strip()} has too many hosts")
        parts += [str(n).zfill(len(m[1])) for n in range(int(m[1]), int(last) + 1)]
    return parts


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


def _newest_per_host(hosts: list[HostReport]) -> tuple[list[HostReport], list[Duplicate]]:
    groups: dict[str, list[tuple[int, HostReport]]] = {}
    for order, host in enumerate(hosts):
        # Reports without a hostname cannot be the same host as anything: keep each one.
        groups.setdefault(host.hostname or f"\0{order}", []).append((order, host))
    kept: list[HostReport] = []
    duplicates: list[Duplicate] = []
    for name, group in groups.items():
        group.sort(key=lambda pair: _age_key(pair[1], pair[0]))
        newest = group[-1][1]
        kept.append(newest)
        if len(group) > 1:
            ignored = tuple(h.source for _, h in group[:-1])
            duplicates.append(Duplicate(name, newest.source, ignored))
    return kept, duplicates


def _age_key(host: HostReport, order: int) -> tuple[float, float, int]:
    """Newest = latest report timestamp, then latest file mtime, then last given on the line."""
    stamp = host.timestamp.timestamp() if host.timestamp else float("-inf")
    return (stamp, host.mtime if host.mtime is not None else float("-inf"), order)


def _layers(hosts: Sequence[HostReport]) -> tuple[str, ...]:
    seen = {f.layer for h in hosts for f in h.report.findings}
    known = [layer for layer in LAYER_ORDER if layer in seen]
    return tuple(known + sorted(seen - set(LAYER_ORDER)))


def parse_report(saved: SavedReport) -> HostReport:
    """Validate one saved `envcheck doctor --json` document; ReportDocumentError says what is wrong."""
    doc = saved.document
    if not isinstance(doc, dict):
        raise ReportDocumentError(f"expected a JSON object, got {type(doc).__name__}")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportDocumentError('not an envcheck report (no integer "schema_version")')
    if version > SCHEMA_VERSION:
        raise ReportDocumentError(
            f"written by a newer envcheck (schema_version {version} > {SCHEMA_VERSION}); upgrade envcheck"
        )
    verdict = doc.get("verdict")
    if verdict not in VERDICT_ORDER:
        raise ReportDocumentError(
            f'"verdict" must be one of {", ".join(VERDICT_ORDER)}, got {verdict!r}'
        )
    exit_code = doc.get("exit_code")
    if (
        not isinstance(exit_code, int)
        or isinstance(exit_code, bool)
        or not 0 <= exit_code <= MAX_EXIT_CODE
    ):
        raise ReportDocumentError(
            f'"exit_code" must be an integer 0-{MAX_EXIT_CODE}, got {exit_code!r}'
        )
    if not isinstance(doc.get("host"), dict):
        raise ReportDocumentError('"host" is missing or not an object')
    try:
        host = host_from_document(doc["host"])
        image = _image(doc.get("image"))
    except FactsError as e:
        raise ReportDocumentError(str(e)) from e
    meta = object_field(doc, "meta")
    report = Report(
        host, _findings(doc.get("findings")), image, object_field(doc, "smoke") or None, meta
    )
    return HostReport(
        source=saved.source,
        hostname=host.machine.hostname,
        verdict=verdict,
        exit_code=exit_code,
        report=report,
        timestamp=report_time(meta),
        mtime=saved.mtime,
    )


def _findings(items: Any) -> tuple[Finding, ...]:
    if not isinstance(items, list):
        raise ReportDocumentError('"findings" must be a list')
    return tuple(_finding(item, i) for i, item in enumerate(items))


def _finding(item: Any, i: int) -> Finding:
    where = f"findings[{i}]"
    if not isinstance(item, dict):
        raise ReportDocumentError(f"{where}: expected an object")
    for key in ("id", "message"):
        if not isinstance(item.get(key), str):
            raise ReportDocumentError(f"{where}.{key}: expected a string")
    if item.get("severity") not in SEVERITY_ORDER:
        raise ReportDocumentError(
            f"{where}.severity: expected pass, warn or fail, got {item.get('severity')!r}"
        )
    fix, layer, observed = item.get("fix"), item.get("layer", "host"), item.get("observed", {})
    if fix is not None and not isinstance(fix, str):
        raise ReportDocumentError(f"{where}.fix: expected a string or null")
    if layer not in get_args(Layer):
        raise ReportDocumentError(f"{where}.layer: expected one of {', '.join(get_args(Layer))}")
    return Finding(
        id=item["id"],
        severity=item["severity"],
        message=item["message"],
        fix=fix,
        layer=layer,
        observed=observed if isinstance(observed, dict) else {},
    )


def _image(data: Any) -> ImageChoice | None:
    if not isinstance(data, dict) or data.get("ref") is None:
        return None
    return from_dict(ImageChoice, data, "image")


def object_field(doc: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`doc[key]` when it is a JSON object, else `{}`: optional parts of a saved report."""
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def report_time(meta: Mapping[str, Any]) -> datetime | None:
    """When the doctor ran, from its `meta` (aware, UTC if the text had no zone)."""
    for key in TIMESTAMP_KEYS:
        value = meta.get(key)
        if isinstance(value, str):
            try:
                # The doctor writes a trailing Z, which fromisoformat reads only from 3.11 on.
                stamp = datetime.fromisoformat(
                    value[:-1] + "+00:00" if value.endswith("Z") else value
                )
            except ValueError:
                continue
            return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)  # naive = UTC
    return None
