"""Drift: each fact changed in a saved baseline is reported, as a warning or with --strict-drift a failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import UsageError
from envcheck.contracts.facts import DriverFacts, GpuFacts, PaddleFacts
from envcheck.contracts.host_report import SCHEMA_VERSION, Report
from envcheck.contracts.record import replace
from envcheck.edges.baseline_file import load_baseline, save_baseline
from envcheck.verdict.drift import (
    BASELINE_KIND,
    FACTS,
    baseline_document,
    compare_baseline,
    parse_baseline,
)
from tests import report_samples as samples
from tests.inprocess import ENV, Result, process_env, run_envcheck

FACT_KEYS = [f.key for f in FACTS]


def _saved(tmp_path: Path, report: Report | None = None) -> dict[str, Any]:
    """A baseline as the doctor would have saved it, read back from disk."""
    path = tmp_path / "baseline.json"
    assert save_baseline(report or samples.healthy(), str(path), process_env())
    return load_baseline(str(path), process_env())


def test_baseline_holds_the_facts_that_matter() -> None:
    doc = baseline_document(samples.healthy())
    assert (
        doc["kind"] == BASELINE_KIND
        and doc["baseline_version"] == 1
        and doc["schema_version"] == SCHEMA_VERSION
    )
    assert doc["hostname"] == "gpu-node-1" and doc["created"].endswith("+00:00")
    assert doc["facts"] == {
        "driver": "535.104.05",
        "kernel-module": "535.104.05",
        "driver-cuda": "12.2",
        "cudart": "12.6",
        "cudnn": "9.5.1",
        "paddle": "3.0.0",
        "paddle-cuda": "12.6",
        "paddle-cudnn": "9.5",
        "image": samples.IMAGE.ref,
        "image-digest": samples.IMAGE.digest,
        "gpus": "0: NVIDIA A100-SXM4-80GB (sm 8.0), 1: NVIDIA A100-SXM4-80GB (sm 8.0)",
    }
    assert list(doc["facts"]) == FACT_KEYS


def test_unchanged_host_is_one_passing_drift_none(tmp_path: Path) -> None:
    (finding,) = compare_baseline(samples.healthy(), _saved(tmp_path), strict=True)
    assert (finding.id, finding.severity, finding.layer) == ("drift.none", "pass", "drift")
    assert "11 facts unchanged" in finding.message
    assert finding.observed["compared"] == FACT_KEYS


@pytest.mark.parametrize("strict", [False, True], ids=["warn", "strict"])
@pytest.mark.parametrize("key", FACT_KEYS)
def test_each_fact_changed_in_the_saved_baseline_is_reported(
    tmp_path: Path, key: str, strict: bool
) -> None:
    baseline = _saved(tmp_path)
    current = baseline["facts"][key]
    baseline["facts"][key] = "an-older-value"

    (finding,) = compare_baseline(samples.healthy(), baseline, strict=strict)

    assert finding.id == f"drift.{key}" and finding.layer == "drift"
    assert finding.severity == ("fail" if strict else "warn")
    assert f"was an-older-value, now {current}" in finding.message
    assert finding.fix and "--save-baseline" in finding.fix
    assert finding.observed == {"was": "an-older-value", "now": current, "strict": strict}


@pytest.mark.parametrize("strict", [False, True], ids=["warn", "strict"])
def test_drift_sets_the_verdict(tmp_path: Path, strict: bool) -> None:
    baseline = _saved(tmp_path)
    baseline["facts"]["driver"] = "530.30.02"
    report = samples.healthy()
    report = replace(
        report, findings=report.findings + tuple(compare_baseline(report, baseline, strict=strict))
    )
    assert (report.verdict, int(report.exit_status)) == (("fail", 1) if strict else ("warn", 0))


@pytest.mark.parametrize(
    ("change", "key", "was", "now"),
    [
        (
            {
                "driver": DriverFacts(
                    status="ok", version="550.54.14", cuda="12.4", kernel_module="550.54.14"
                )
            },
            "driver",
            "535.104.05",
            "550.54.14",
        ),
        (
            {
                "paddle": PaddleFacts(
                    status="ok", package="paddlepaddle", version="3.0.0", cuda=None, cudnn=None
                )
            },
            "paddle-cuda",
            "12.6",
            "none",
        ),
        (
            {"gpus": (GpuFacts(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"),)},
            "gpus",
            "0: NVIDIA A100-SXM4-80GB (sm 8.0), 1: NVIDIA A100-SXM4-80GB (sm 8.0)",
            "0: NVIDIA A100-SXM4-80GB (sm 8.0)",
        ),
        (
            {"driver": DriverFacts(status="absent", reason="no libnvidia-ml.so.1")},
            "driver",
            "535.104.05",
            "absent",
        ),
    ],
    ids=[
        "driver-upgraded",
        "cpu-wheel-replaced-gpu-wheel",
        "gpu-fell-off-the-bus",
        "driver-uninstalled",
    ],
)
def test_real_changes_on_the_host(
    tmp_path: Path, change: dict[str, Any], key: str, was: str, now: str
) -> None:
    findings = compare_baseline(samples.healthy(**change), _saved(tmp_path), strict=False)
    by_id = {f.id: f for f in findings}
    assert f"drift.{key}" in by_id
    assert (
        by_id[f"drift.{key}"].observed["was"] == was
        and by_id[f"drift.{key}"].observed["now"] == now
    )


@pytest.mark.parametrize("strict", [False, True], ids=["warn", "strict"])
def test_a_gpu_that_disappeared_is_a_failure_even_without_strict(
    tmp_path: Path, strict: bool
) -> None:
    one_left = samples.healthy(
        gpus=(GpuFacts(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"),)
    )
    (finding,) = compare_baseline(one_left, _saved(tmp_path), strict=strict)
    assert (finding.id, finding.severity) == ("drift.gpus", "fail")
    assert finding.observed["lost"] == ["1: NVIDIA A100-SXM4-80GB (sm 8.0)"]
    assert finding.message.startswith("1 GPU(s) disappeared (1: NVIDIA A100-SXM4-80GB (sm 8.0)): ")
    report = replace(one_left, findings=one_left.findings + (finding,))
    assert (report.verdict, int(report.exit_status)) == ("fail", 1)


def test_every_gpu_gone_is_a_failure_and_a_replaced_gpu_only_a_change(tmp_path: Path) -> None:
    (gone,) = compare_baseline(samples.healthy(gpus=()), _saved(tmp_path), strict=False)
    assert (gone.id, gone.severity, gone.observed["now"]) == ("drift.gpus", "fail", "none")
    assert len(gone.observed["lost"]) == 2
    swapped = tuple(
        GpuFacts(index=i, name="NVIDIA H100 80GB HBM3", compute_capability="9.0") for i in (0, 1)
    )
    (changed,) = compare_baseline(samples.healthy(gpus=swapped), _saved(tmp_path), strict=False)
    assert (changed.id, changed.severity) == (
        "drift.gpus",
        "warn",
    ) and "lost" not in changed.observed


def test_same_tag_new_digest_says_pin_by_digest(tmp_path: Path) -> None:
    moved = replace(samples.IMAGE, digest="sha256:" + "cd" * 32)
    report = replace(samples.healthy(), image=moved)
    (finding,) = compare_baseline(report, _saved(tmp_path), strict=False)
    assert finding.id == "drift.image-digest" and "pin the image by digest" in (finding.fix or "")


def test_facts_not_observed_now_are_not_compared(tmp_path: Path) -> None:
    """A run without smoke has no digest; a driver in error has no version: not drift."""
    report = replace(
        samples.healthy(driver=samples.MISMATCHED_DRIVER),
        image=replace(samples.IMAGE, digest=None),
    )
    (finding,) = compare_baseline(report, _saved(tmp_path), strict=True)
    assert finding.id == "drift.none"
    assert (
        "not observed on both sides: driver, kernel-module, driver-cuda, image-digest, gpus"
        in finding.message
    )


def test_fact_missing_from_an_older_baseline_is_not_compared(tmp_path: Path) -> None:
    baseline = _saved(tmp_path)
    del baseline["facts"]["gpus"]
    (finding,) = compare_baseline(samples.healthy(), baseline, strict=True)
    assert finding.id == "drift.none" and "gpus" not in finding.observed["compared"]


def test_save_baseline_only_after_a_passing_run(tmp_path: Path) -> None:
    assert save_baseline(
        samples.unconfirmed_image_tag(), str(tmp_path / "warn.json"), process_env()
    )
    assert not save_baseline(
        samples.driver_upgraded_without_reboot(), str(tmp_path / "fail.json"), process_env()
    )
    assert not save_baseline(
        samples.cpu_wheel_in_image(), str(tmp_path / "fallback.json"), process_env()
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["warn.json"]


def test_a_saved_good_report_serves_as_a_baseline(tmp_path: Path) -> None:
    path = tmp_path / "last-good.json"
    path.write_text(json.dumps(samples.healthy().to_json()), encoding="utf-8")
    baseline = load_baseline(str(path), process_env())
    assert baseline["facts"] == baseline_document(samples.healthy())["facts"]
    assert baseline["created"] == "2026-03-01T10:00:00+00:00"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "no such file"),
        ("{not json", "is not JSON"),
        ("[1, 2]", "not an envcheck baseline"),
        ('{"kind": "something-else"}', "not an envcheck baseline"),
        ('{"kind": "envcheck-baseline", "baseline_version": 99, "facts": {}}', "newer envcheck"),
        ('{"kind": "envcheck-baseline", "facts": {}}', 'no integer "baseline_version"'),
        ('{"kind": "envcheck-baseline", "baseline_version": 0, "facts": {}}', "the first envcheck"),
        (json.dumps(samples.healthy().to_json() | {"schema_version": 99}), "newer envcheck"),
        ('{"kind": "envcheck-baseline", "baseline_version": 1}', '"facts" is missing'),
        (
            '{"kind": "envcheck-baseline", "baseline_version": 1, "facts": {"driver": 535}}',
            "facts must be strings",
        ),
        (json.dumps(samples.driver_upgraded_without_reboot().to_json()), "not a good run"),
        ("\udcff", "is not JSON"),
    ],
    ids=[
        "missing",
        "corrupt",
        "list",
        "other-kind",
        "newer",
        "no-version",
        "version-before-the-first",
        "good-report-of-a-newer-envcheck",
        "no-facts",
        "number-fact",
        "failed-report",
        "not-utf8",
    ],
)
def test_bad_baseline_files_are_usage_errors_naming_the_file(
    tmp_path: Path, content: str | None, error: str
) -> None:
    path = tmp_path / "baseline.json"
    if content == "\udcff":
        path.write_bytes(b"\xff\xfe{")
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        load_baseline(str(path), process_env())
    assert str(path) in info.value.message and error in info.value.message
    assert info.value.hint and "--save-baseline" in info.value.hint
    assert int(info.value.status) == 2


def test_parse_baseline_accepts_its_own_output() -> None:
    doc = json.loads(json.dumps(baseline_document(samples.healthy())))
    assert parse_baseline(doc) == doc


def _doctor(facts: Path, *flags: str) -> Result:
    return run_envcheck(
        ["doctor", "--facts", str(facts), "--json", *flags], env={**ENV, "GITHUB_ACTIONS": ""}
    )


def test_doctor_saves_then_compares_a_baseline(tmp_path: Path) -> None:
    """The real command line: --save-baseline after a pass, then --baseline / --strict-drift."""
    facts, baseline = tmp_path / "facts.json", tmp_path / "baseline.json"
    facts.write_text(json.dumps(samples.healthy().to_json()), encoding="utf-8")
    first = _doctor(facts, "--save-baseline", str(baseline))
    assert first.returncode == 0, first.stderr
    assert json.loads(baseline.read_text(encoding="utf-8"))["facts"]["driver"] == "535.104.05"

    upgraded = samples.healthy(
        driver=DriverFacts(status="ok", version="550.54.14", cuda="12.4", kernel_module="550.54.14")
    )
    facts.write_text(json.dumps(upgraded.to_json()), encoding="utf-8")
    lenient = _doctor(facts, "--baseline", str(baseline))
    drift = {f["id"]: f for f in json.loads(lenient.stdout)["findings"] if f["layer"] == "drift"}
    assert lenient.returncode == 0 and drift["drift.driver"]["severity"] == "warn"
    assert "was 535.104.05, now 550.54.14" in drift["drift.driver"]["message"]

    strict = _doctor(facts, "--baseline", str(baseline), "--strict-drift")
    assert strict.returncode == 1 and json.loads(strict.stdout)["verdict"] == "fail"


def test_doctor_with_a_missing_baseline_exits_2_with_the_fix(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(samples.healthy().to_json()), encoding="utf-8")
    done = _doctor(facts, "--baseline", str(tmp_path / "nope.json"))
    assert (
        done.returncode == 2 and json.loads(done.stdout)["verdict"] == "error"
    )  # --json: a document
    assert "nope.json: no such file" in done.stderr and "--save-baseline" in done.stderr


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"v": True}, 'not an envcheck {name} (no integer "{key}")'),
        ({"v": 1000}, "written by a newer envcheck ({key} 1000 > {newest}); upgrade envcheck"),
        ({"v": -1}, "not an envcheck {name} ({key} -1: the first envcheck wrote is 1)"),
    ],
    ids=["boolean", "newer", "negative"],
)
def test_a_report_and_a_baseline_are_refused_in_the_same_words(
    change: dict[str, Any], words: str
) -> None:
    """Both kinds of saved document are checked by one `Versioned` (schema_version / kind / too
    new / never written), so a fleet and a drift check say the same of the same fault."""
    from envcheck.contracts.saved_report import REPORT, SavedReport, parse_report
    from envcheck.verdict.drift import BASELINE

    report = samples.healthy().to_json() | {"schema_version": change["v"]}
    baseline = baseline_document(samples.healthy()) | {"baseline_version": change["v"]}
    for kind, fails in (
        (REPORT, lambda: parse_report(SavedReport("r.json", report))),
        (BASELINE, lambda: parse_baseline(baseline)),
    ):
        expected = words.format(name=kind.name, key=kind.key, newest=kind.newest)
        with pytest.raises(ValueError) as info:
            fails()
        assert str(info.value) == expected
