"""Drift: what changed on a runner since its last good run.

A GPU runner that passed yesterday breaks today because something moved under it: the driver
was upgraded without a reboot, the image tag now points at another digest, a CPU wheel replaced
the GPU one. `--save-baseline FILE` records the facts that matter after a pass; `--baseline FILE`
compares the current run with it and reports each change (`drift.<fact>`), as a warning or,
with `--strict-drift`, as a failure. A GPU that disappeared is a failure either way.

A value in the baseline is one of: the fact as printed by the system; `"none"` when the layer was
found but the field is empty (a CPU build of Paddle has no CUDA: that *is* a fact); `"absent"`
when the layer itself was not found; `null` when it could not be observed (a probe error, a run
without smoke has no digest). Only facts known on both sides are compared, so a run with other
flags does not cry wolf; a layer that broke is the business of its own checks, not of drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from envcheck import __version__
from envcheck.contracts.facts import FactsError, HostFacts, host_from_document
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.host_report import SCHEMA_VERSION, Report
from envcheck.contracts.record import record
from envcheck.contracts.saved_report import REPORT, object_field, report_time
from envcheck.contracts.versioned import Versioned
from envcheck.verdict.fixes import RELOAD_MODULE

BASELINE_KIND = "envcheck-baseline"
BASELINE_VERSION = 1
BASELINE = Versioned("baseline", "baseline_version", BASELINE_VERSION, kind=BASELINE_KIND)

REBASELINE = "once the new state is validated, re-run with --save-baseline FILE to accept it"


@record
class Fact:
    key: str  # the `drift.<key>` id and the key in the baseline's `facts`
    label: str  # "driver version was X, now Y"
    fix: str


FACTS: tuple[Fact, ...] = (
    Fact(
        "driver",
        "NVIDIA driver",
        f"a driver upgrade needs a reboot (or {RELOAD_MODULE}) before CUDA works again; "
        f"{REBASELINE}",
    ),
    Fact(
        "kernel-module",
        "NVIDIA kernel module",
        "the loaded kernel module changed: check `cat /proc/driver/nvidia/version` matches the "
        f"user-space driver (`nvidia-smi`), reboot if not; {REBASELINE}",
    ),
    Fact("driver-cuda", "driver's CUDA version", f"follows the driver; {REBASELINE}"),
    Fact(
        "cudart",
        "CUDA runtime (libcudart)",
        "another libcudart is loaded now: check LD_LIBRARY_PATH and the pip `nvidia-*` wheels "
        f"in the environment; {REBASELINE}",
    ),
    Fact(
        "cudnn",
        "cuDNN",
        f"another libcudnn is loaded now: check LD_LIBRARY_PATH and the pip wheels; {REBASELINE}",
    ),
    Fact(
        "paddle",
        "PaddlePaddle version",
        f"Paddle was reinstalled or upgraded: pin the version in your requirements; {REBASELINE}",
    ),
    Fact(
        "paddle-cuda",
        "Paddle's CUDA build",
        "a different Paddle build is installed (`none` means a CPU wheel): reinstall "
        f"`paddlepaddle-gpu` for your CUDA from the Paddle package index; {REBASELINE}",
    ),
    Fact("paddle-cudnn", "Paddle's cuDNN build", f"follows the Paddle build; {REBASELINE}"),
    Fact(
        "image",
        "smoke image",
        f"the selected image changed (new Paddle version, matrix or --image); {REBASELINE}",
    ),
    Fact(
        "image-digest",
        "smoke image digest",
        "the same tag now points at other content: pin the image by digest "
        f"(`REF@sha256:…`) in your jobs; {REBASELINE}",
    ),
    Fact(
        "gpus",
        "GPUs",
        "the GPUs changed (replaced, fell off the bus, MIG reconfigured): check `nvidia-smi -L` "
        f"and `dmesg | grep -i xid`; {REBASELINE}",
    ),
)


def baseline_document(report: Report) -> dict[str, Any]:
    """The facts that matter for drift, with where and when they were seen."""
    image = report.image
    return {
        "kind": BASELINE_KIND,
        "baseline_version": BASELINE_VERSION,
        "schema_version": SCHEMA_VERSION,
        "envcheck_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": report.host.machine.hostname,
        "verdict": report.verdict,
        "facts": facts_of(
            report.host, image.ref if image else None, image.digest if image else None
        ),
    }


def facts_of(host: HostFacts, image_ref: str | None, image_digest: str | None) -> dict[str, Any]:
    driver_seen = _layer(host.driver.status)
    paddle_seen = _layer(host.paddle.status)
    return {
        "driver": driver_seen(host.driver.version),
        "kernel-module": driver_seen(host.driver.kernel_module),
        "driver-cuda": driver_seen(host.driver.cuda),
        "cudart": _layer(host.cuda_runtime.status)(host.cuda_runtime.version),
        "cudnn": _layer(host.cudnn.status)(host.cudnn.version),
        "paddle": paddle_seen(host.paddle.version),
        "paddle-cuda": paddle_seen(host.paddle.cuda),
        "paddle-cudnn": paddle_seen(host.paddle.cudnn),
        "image": image_ref,
        "image-digest": image_digest,
        "gpus": _gpus(host) if host.driver.status == "ok" else None,
    }


def _layer(status: str) -> Callable[[str | None], str | None]:
    def value(field: str | None) -> str | None:
        if status == "ok":
            return field if field else "none"
        return "absent" if status == "absent" else None

    return value


def _gpus(host: HostFacts) -> str:
    return (
        ", ".join(
            f"{g.index}: {g.name or 'unknown'}"
            + (f" (sm {g.compute_capability})" if g.compute_capability else "")
            for g in sorted(host.gpus, key=lambda g: g.index)
        )
        or "none"
    )


def compare_baseline(report: Report, baseline: Mapping[str, Any], *, strict: bool) -> list[Finding]:
    """One `drift.<fact>` finding per changed fact; `drift.none` (pass) when nothing changed."""
    was_facts = baseline.get("facts", {})
    image = report.image
    now_facts = facts_of(report.host, image.ref if image else None, image.digest if image else None)
    since = baseline.get("created") or "the baseline"
    findings: list[Finding] = []
    compared: list[str] = []
    for fact in FACTS:
        was, now = was_facts.get(fact.key), now_facts[fact.key]
        if was is None or now is None:
            continue
        compared.append(fact.key)
        if str(was) != str(now):
            lost = _gpus_lost(str(was), str(now)) if fact.key == "gpus" else []
            findings.append(_changed(fact, str(was), str(now), since, strict or bool(lost), lost))
    if findings:
        return findings
    return [
        passed(
            "drift.none",
            f"no drift since {since}: {len(compared)} facts unchanged"
            + _not_compared(now_facts, was_facts, compared),
            layer="drift",
            compared=compared,
            baseline_created=baseline.get("created"),
        )
    ]


def _changed(
    fact: Fact, was: str, now: str, since: str, strict: bool, lost: list[str] | None = None
) -> Finding:
    make = fail if strict else warn
    gone = f"{len(lost)} GPU(s) disappeared ({'; '.join(lost)}): " if lost else ""
    return make(
        f"drift.{fact.key}",
        f"{gone}{fact.label} was {was}, now {now} (baseline from {since})",
        fix=fact.fix,
        layer="drift",
        was=was,
        now=now,
        strict=strict,
        **({"lost": lost} if lost else {}),
    )


_GPU_ENTRY = re.compile(r"(?:^|, )(\d+: )")


def _gpus_lost(was: str, now: str) -> list[str]:
    """The baseline's GPUs (`index: name (sm x)`, as `_gpus` wrote them) that are gone now.
    A GPU that fell off the bus is a failure with or without --strict-drift: the jobs sized for
    N GPUs will not run on N-1. A GPU replaced by another model is a change, not a loss."""
    before, after = _gpu_entries(was), _gpu_entries(now)
    if len(after) >= len(before):
        return []
    remaining = list(after)
    lost = []
    for entry in before:
        if entry in remaining:
            remaining.remove(entry)
        else:
            lost.append(entry)
    return lost[: len(before) - len(after)]


def _gpu_entries(text: str) -> list[str]:
    if text in ("none", ""):
        return []
    starts = [m.start(1) for m in _GPU_ENTRY.finditer(text)]
    if not starts:
        return [text]
    return [text[a:b].removesuffix(", ") for a, b in zip(starts, [*starts[1:], len(text)])]


def _not_compared(now: Mapping[str, Any], was: Mapping[str, Any], compared: list[str]) -> str:
    skipped = [f.key for f in FACTS if f.key not in compared and (now[f.key] or was.get(f.key))]
    return f" (not observed on both sides: {', '.join(skipped)})" if skipped else ""


def parse_baseline(doc: Any) -> dict[str, Any]:
    """Validate a baseline document (or turn a saved good report into one); ValueError if not."""
    if isinstance(doc, dict) and "findings" in doc and "host" in doc:
        return _from_report(doc)
    BASELINE.version_of(doc)
    baseline: dict[str, Any] = doc  # a JSON object, as version_of checked
    facts = baseline.get("facts")
    if not isinstance(facts, dict):
        raise ValueError('"facts" is missing or not an object')
    bad = [k for k, v in facts.items() if v is not None and not isinstance(v, str)]
    if bad:
        raise ValueError(f"facts must be strings or null: {', '.join(sorted(bad))}")
    return baseline


def _from_report(doc: dict[str, Any]) -> dict[str, Any]:
    REPORT.version_of(doc)  # a report of a newer envcheck may mean its facts otherwise
    if doc.get("verdict") not in ("pass", "warn"):
        raise ValueError(
            f"this saved report is not a good run (verdict {doc.get('verdict')!r}): "
            "a baseline must come from a run that passed"
        )
    try:
        host = host_from_document(doc)
    except FactsError as e:
        raise ValueError(f"invalid saved report: {e}") from e
    image = object_field(doc, "image")
    ref, digest = image.get("ref"), image.get("digest")
    meta = object_field(doc, "meta")
    return {
        "kind": BASELINE_KIND,
        "baseline_version": BASELINE_VERSION,
        "schema_version": doc.get("schema_version"),
        "created": _created(meta),
        "hostname": host.machine.hostname,
        "verdict": doc.get("verdict"),
        "facts": facts_of(
            host, ref if isinstance(ref, str) else None, digest if isinstance(digest, str) else None
        ),
    }


def _created(meta: Mapping[str, Any]) -> str | None:
    when = report_time(meta)
    return when.isoformat(timespec="seconds") if when else None
