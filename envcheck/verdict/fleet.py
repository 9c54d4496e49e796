"""Fleets: many saved doctor reports (`--json`) merged into one host × layer × verdict summary.

What a team runs after a matrix of runner jobs, a Kubernetes Job per GPU node or `srun` over a
Slurm partition. Pure: reports in, summary out; each document is checked by
`envcheck.contracts.saved_report`, and reading files is the `report` command's job. A host that
reported twice (a re-run job, two artifacts) counts once, with its newest report; identical problems
of many hosts make one group, one line of the dashboard.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from envcheck.contracts.facts import HostFacts, MachineFacts
from envcheck.contracts.findings import LAYERS, Finding, Severity, fail
from envcheck.contracts.host_report import SCHEMA_VERSION, VERDICTS, Report, Verdict
from envcheck.contracts.record import field, record
from envcheck.contracts.saved_report import HostReport, SavedReport, parse_report
from envcheck.verdict.fixes import UNREPORTED_HOST_FIX
from envcheck.verdict.proof import proven_gpus

LAYER_ORDER = tuple(name for name, _ in LAYERS)  # the doctor's own layer order


@record
class Duplicate:
    hostname: str
    kept: str
    ignored: tuple[str, ...]


@record
class ProblemGroup:
    """Hosts that failed (or warned on) the same check with the same fix: one line of the fleet
    dashboard (`12 hosts: driver.version-mismatch → reboot …`), not twelve."""

    id: str
    severity: Severity
    fix: str | None
    hosts: tuple[str, ...]  # labels, in the fleet's order
    message: str  # the first host's, as an example: messages carry per-host values


@record
class Variant:
    """One of a cause's fixes and the hosts it is for."""

    fix: str | None
    hosts: tuple[str, ...]  # labels, in the fleet's order


@record
class Cause:
    """A root cause of the fleet: one check, every host that has it, and its fixes."""

    id: str
    severity: Severity  # the worst any of its hosts has
    hosts: tuple[str, ...]  # labels, in the fleet's order
    variants: tuple[Variant, ...]  # the most common fix first
    message: str  # the first host's, as an example: messages carry per-host values


@record
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
    def verdict(self) -> Verdict:
        return max((h.verdict for h in self.hosts), key=VERDICTS.index, default="pass")

    def gpus_proven(self) -> tuple[int, int, tuple[str, ...]]:
        """GPUs a passing smoke trained on, of the GPUs the hosts have, and the hosts where it
        trained on fewer than all of them (a Slurm step given one GPU of eight)."""
        proven = total = 0
        partial: list[str] = []
        for host in self.hosts:
            have, trained = len(host.report.host.gpus), len(proven_gpus(host.report.findings))
            total += have
            proven += min(trained, have)
            if have and trained < have:
                partial.append(host.label)
        return proven, total, tuple(partial)

    def problem_groups(self) -> tuple[ProblemGroup, ...]:
        """Every problem of the fleet, identical ones (same check, severity and fix) together;
        failures first, then the most widespread. A host is in every group it has a problem of."""
        members: dict[tuple[str, Severity, str | None], list[tuple[HostReport, Finding]]] = {}
        for host in self.hosts:
            seen: set[tuple[str, Severity, str | None]] = set()
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

    def causes(self, *, every: bool = False) -> tuple[Cause, ...]:
        """The fleet's root causes, one per check: each counts every host that has it, whatever
        else that host has (a host with three root causes is in three), and its different fixes
        (another interpreter's path, another driver floor) are its variants. Failures first,
        then the most widespread; a follow-on problem (its fix is another's) is no cause, unless
        `every` (`--verbose`: every problem of every host)."""
        found: dict[str, list[tuple[HostReport, Finding]]] = {}
        for host in self.hosts:
            for f in root_problems(host, every=every):
                found.setdefault(f.id, []).append((host, f))
        causes = [_cause(id, members) for id, members in found.items()]
        return tuple(sorted(causes, key=lambda c: (c.severity != "fail", -len(c.hosts), c.id)))

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
            "gpus": dict(zip(("proven", "total", "not_all_proven"), _gpus_json_of(self))),
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
            "causes": [  # the dashboard's lines: each root cause, every host holding it
                {
                    "id": c.id,
                    "severity": c.severity,
                    "count": len(c.hosts),
                    "hosts": list(c.hosts),
                    "fixes": [{"fix": v.fix, "hosts": list(v.hosts)} for v in c.variants],
                    "message": c.message,
                }
                for c in self.causes()
            ],
            "duplicates": [
                {"hostname": d.hostname, "kept": d.kept, "ignored": list(d.ignored)}
                for d in self.duplicates
            ],
        }


def root_problems(host: HostReport, *, every: bool = False) -> list[Finding]:
    """The host's problems that are causes, one per check: every failure or warning whose fix
    is its own (not "resolved by the fix for …"); the follow-on ones where every problem is one,
    or with `every`."""
    problems = [f for f in host.report.findings if f.severity != "pass"]
    roots = problems if every else [f for f in problems if f.follows is None] or problems
    chosen: dict[str, Finding] = {}
    for f in sorted(roots, key=lambda f: f.severity != "fail"):  # failing on one GPU fails it
        chosen.setdefault(f.id, f)
    return list(chosen.values())


def _cause(id: str, members: list[tuple[HostReport, Finding]]) -> Cause:
    by_fix: dict[str | None, list[str]] = {}
    for host, f in members:
        by_fix.setdefault(f.fix, []).append(host.label)
    variants = sorted(by_fix.items(), key=lambda kv: -len(kv[1]))  # stable: first seen first
    severity: Severity = "fail" if any(f.severity == "fail" for _, f in members) else "warn"
    return Cause(
        id,
        severity,
        tuple(h.label for h, _ in members),
        tuple(Variant(fix, tuple(hosts)) for fix, hosts in variants),
        members[0][1].message,
    )


def _gpus_json_of(summary: FleetSummary) -> tuple[int, int, list[str]]:
    proven, total, partial = summary.gpus_proven()
    return proven, total, list(partial)


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
    counts: dict[str, int] = {v: sum(h.verdict == v for h in kept) for v in VERDICTS}
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
            fix=UNREPORTED_HOST_FIX,
            layer="fleet",
            hostname=name,
        )
        report = Report(HostFacts(machine=MachineFacts(hostname=name)), (finding,), proof="none")
        absent.append(HostReport("(no report)", name, "fail", 1, report, reported=False))
    return absent


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
