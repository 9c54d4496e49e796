"""A fleet of 26 real-world reports: the recorded machines (tests/data/hosts, the lent H100's
six reports), the judge's and the remedies' scenarios and the public issues' hosts, each judged by
the shipped rules and matrix as `doctor --no-smoke` would, plus the hand-built common cases.

Most hosts have several problems (a CPU wheel and no NVIDIA runtime, an old driver and a missing
cuDNN): what the fleet dashboard counts and is measured on (tests/unit/test_fleet.py, the
Markdown summary in a browser).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.contracts.saved_report import SavedReport
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.matrix.model import Matrix
from envcheck.verdict.judge import Context, judge
from tests import report_samples as samples
from tests import scenarios as s
from tests.paths import DATA

# The public issues' machines (tests/unit/test_image_for_public_hosts.py cites each).
PUBLIC_HOSTS: dict[str, dict[str, Any]] = {
    "p40-535-cu126-wheel": s.host(
        driver=s.driver("535.104.05", "12.2"), gpus=[s.P40], paddle=s.PADDLE_331_CU126
    ),
    "gtx1080-570-cu126-wheel": s.host(
        driver=s.driver("570.124.06", "12.8"), gpus=[s.GTX1080], paddle=s.PADDLE_331_CU126
    ),
    "rtx4090-580-cu126-wheel": s.host(
        driver=s.driver("580.82.07", "13.0"), gpus=[s.RTX4090], paddle=s.PADDLE_331_CU126
    ),
    "h20-550-262-wheel": s.host(
        driver=s.driver("550.54.14", "12.4"), gpus=[s.H20], paddle=s.PADDLE_262_CU118
    ),
}


def recorded_hosts() -> dict[str, dict[str, Any]]:
    """The real machines' `host` objects: tests/data/hosts and the lent H100's reports."""
    found = {p.name: json.loads(p.read_text()) for p in sorted((DATA / "hosts").glob("*.json"))}
    for p in sorted((DATA / "real-h100").glob("[a-f]-*.json")):
        found[p.name] = json.loads(p.read_text())["host"]
    return found


def judged(host_doc: dict[str, Any], hostname: str, matrix: Matrix) -> Report:
    """The report `doctor --no-smoke` writes for this host, under `hostname`."""
    doc = json.loads(json.dumps(host_doc))
    doc["machine"] = doc.get("machine", {}) | {"hostname": hostname}
    host = host_from_document(doc)
    image = select_image(host, matrix)
    findings = judge(Context(host, matrix, image, needs_engine=True))
    return Report(host=host, findings=tuple(findings), image=image)


@cache
def real_fleet() -> tuple[SavedReport, ...]:
    """26 saved reports, one per host, named `gpu-node-001` … in the order listed."""
    matrix = load_matrix()
    docs = [*s.JUDGE_HOSTS.values(), *s.REMEDY_HOSTS.values(), *recorded_hosts().values()]
    docs += PUBLIC_HOSTS.values()
    names = [f"gpu-node-{i:03d}" for i in range(1, 27)]
    reports = [judged(doc, name, matrix) for doc, name in zip(docs, names)]
    built = (
        samples.healthy,
        samples.driver_upgraded_without_reboot,
        samples.cpu_wheel_in_image,
        samples.unconfirmed_image_tag,
        samples.smoke_crashed,
    )
    reports += [build(hostname=name) for build, name in zip(built, names[len(reports) :])]
    assert len(reports) == 26, len(reports)
    return tuple(SavedReport(f"{r.host.machine.hostname}.json", r.to_json()) for r in reports)
