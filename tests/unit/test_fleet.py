"""`envcheck report FILE…`: mixed verdicts, duplicates, and a corrupt file among good ones."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from junitparser import JUnitXml

from envcheck.contracts.facts import DriverFacts, GpuFacts
from envcheck.contracts.findings import fail, passed, warn
from envcheck.contracts.host_report import Report
from envcheck.contracts.saved_report import ReportDocumentError, SavedReport, parse_report
from envcheck.render.table import fleet_table_text, host_list, print_fleet_table
from envcheck.verdict.fleet import merge_reports
from envcheck.verdict.hostlist import HostListError, compress_host_list, parse_host_list
from envcheck.verdict.one_plan import resolved_by
from tests import report_samples as samples
from tests.fleet_samples import real_fleet
from tests.inprocess import run_envcheck
from tests.paths import DATA

FLEET = [
    samples.healthy,
    samples.unconfirmed_image_tag,
    samples.driver_upgraded_without_reboot,
    samples.cpu_wheel_in_image,
    samples.smoke_crashed,
]


def _saved(report: Report, source: str | None = None, mtime: float | None = None) -> SavedReport:
    return SavedReport(source or f"{report.host.machine.hostname}.json", report.to_json(), mtime)


def _write(folder: Path, report: Report, name: str | None = None) -> Path:
    path = folder / (name or f"{report.host.machine.hostname}.json")
    path.write_text(json.dumps(report.to_json()), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- merge (pure)


def test_mixed_verdicts_merge_into_counts_and_the_worst_exit_code() -> None:
    summary = merge_reports([_saved(build()) for build in FLEET])
    assert [h.hostname for h in summary.hosts] == [f"gpu-node-{i}" for i in range(1, 6)]
    assert summary.counts == {
        "pass": 1,
        "warn": 1,
        "fail": 2,
        "cpu-fallback": 1,
        "wrong-results": 0,
    }
    assert (summary.verdict, summary.exit_code) == ("cpu-fallback", 6)
    assert summary.layers == ("driver", "gpu", "paddle", "image", "smoke")
    assert summary.duplicates == ()


@pytest.mark.parametrize(
    ("builders", "verdict", "exit_code"),
    [
        ([samples.healthy], "pass", 0),
        ([samples.healthy, samples.unconfirmed_image_tag], "warn", 0),
        ([samples.healthy, samples.driver_upgraded_without_reboot], "fail", 1),
        ([samples.driver_upgraded_without_reboot, samples.smoke_crashed], "fail", 5),
        ([samples.smoke_crashed, samples.cpu_wheel_in_image], "cpu-fallback", 6),
    ],
    ids=[
        "all-pass",
        "a-warning",
        "one-incompatible",
        "smoke-beats-incompatible",
        "cpu-fallback-worst",
    ],
)
def test_summary_exit_code_is_the_highest(
    builders: list[samples.Builder], verdict: str, exit_code: int
) -> None:
    summary = merge_reports([_saved(b()) for b in builders])
    assert (summary.verdict, summary.exit_code) == (verdict, exit_code)


def test_layer_cell_is_the_worst_severity_of_that_layer() -> None:
    report = samples.report(
        (
            passed("smoke.trained", "ok", layer="smoke"),
            warn("smoke.slow", "slow", fix="check clocks", layer="smoke"),
            passed("driver.ok", "ok", layer="driver"),
        )
    )
    (host,) = merge_reports([_saved(report)]).hosts
    assert host.layer_severities() == {"smoke": "warn", "driver": "pass"}


@pytest.mark.parametrize(
    ("older", "newer", "kept"),
    [
        (
            {"meta": {"generated_at": "2026-03-01T09:00:00Z"}},
            {"meta": {"generated_at": "2026-03-01T10:00:00Z"}},
            "b",
        ),
        (
            {"meta": {"generated_at": "2026-03-02T09:00:00Z"}},
            {"meta": {"generated_at": "2026-03-01T10:00:00Z"}},
            "a",
        ),
        ({"mtime": 200.0}, {"mtime": 100.0}, "a"),
        ({}, {}, "b"),
    ],
    ids=[
        "newer-timestamp-second",
        "newer-timestamp-first",
        "no-timestamp-newer-mtime",
        "no-clue-last-given",
    ],
)
def test_duplicate_host_keeps_the_newest_report(
    older: dict[str, Any], newer: dict[str, Any], kept: str
) -> None:
    def saved(name: str, spec: dict[str, Any], build: Any) -> SavedReport:
        meta = spec.get("meta", {})
        report = build(hostname="gpu-node-7")
        doc = report.to_json()
        doc["meta"] = {"envcheck_version": "0.1.0", **meta}
        return SavedReport(name, doc, spec.get("mtime"))

    summary = merge_reports(
        [
            saved("a", older, samples.healthy),
            saved("b", newer, samples.driver_upgraded_without_reboot),
        ]
    )
    (host,) = summary.hosts
    assert host.source == kept
    assert host.verdict == ("pass" if kept == "a" else "fail")
    (dup,) = summary.duplicates
    assert (dup.hostname, dup.kept, dup.ignored) == (
        "gpu-node-7",
        kept,
        ("b",) if kept == "a" else ("a",),
    )


def test_reports_without_hostname_are_never_merged_together() -> None:
    doc = samples.healthy().to_json()
    doc["host"]["machine"]["hostname"] = None
    summary = merge_reports([SavedReport("x.json", doc), SavedReport("y.json", doc)])
    assert [h.source for h in summary.hosts] == ["x.json", "y.json"] and summary.duplicates == ()


def _doc(**changes: Any) -> dict[str, Any]:
    doc = samples.healthy().to_json()
    for key, value in changes.items():
        if value is ...:
            del doc[key]
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ([], "expected a JSON object, got list"),
        (_doc(schema_version=...), 'no integer "schema_version"'),
        (_doc(schema_version=99), "newer envcheck"),
        (_doc(schema_version=0), "not an envcheck report (schema_version 0: the first envcheck"),
        (_doc(verdict="great"), '"verdict" must be one of'),
        (_doc(exit_code="0"), '"exit_code" must be an integer'),
        (_doc(exit_code=42), '"exit_code" must be an integer 0-7'),
        (_doc(host=...), '"host" is missing'),
        (_doc(host={"driver": {"version": 535}, "gpus": "many"}), "host.gpus: expected a list"),
        (_doc(findings=None), '"findings" must be a list'),
        (_doc(findings=[{"id": "x", "message": "m", "severity": "bad"}]), "findings[0].severity"),
        (_doc(findings=[{"id": 3, "message": "m", "severity": "pass"}]), "findings[0].id"),
        (_doc(image={"ref": "a", "rejected": "nope"}), "image.rejected: expected a list"),
    ],
    ids=[
        "list",
        "no-schema",
        "newer-schema",
        "schema-before-the-first",
        "bad-verdict",
        "string-exit",
        "exit-42",
        "no-host",
        "bad-host",
        "no-findings",
        "bad-severity",
        "bad-id",
        "bad-image",
    ],
)
def test_invalid_documents_say_what_is_wrong(document: Any, error: str) -> None:
    with pytest.raises(ReportDocumentError) as info:
        parse_report(SavedReport("r.json", document))
    assert error in str(info.value)


def test_fleet_json_document() -> None:
    doc = merge_reports([_saved(b()) for b in FLEET[:3]]).to_json()
    assert doc["kind"] == "envcheck-fleet" and doc["exit_code"] == 1 and doc["verdict"] == "fail"
    node3 = doc["hosts"][2]
    assert node3["hostname"] == "gpu-node-3" and node3["layers"] == {
        "driver": "fail",
        "paddle": "pass",
    }
    assert node3["problems"][0]["id"] == "driver.version-mismatch" and node3["problems"][0]["fix"]
    json.dumps(doc)


# ----------------------------------------------------------------------------- table

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _table(text: str) -> list[str]:
    """The host table of a dashboard: from its header to the blank line after the last host."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("HOST "))
    return lines[head : lines.index("", head)]


def test_plain_table_has_the_dashboard_columns_one_line_per_host() -> None:
    text = fleet_table_text(merge_reports([_saved(b()) for b in FLEET]))
    lines = _table(text)
    assert lines[0].split() == [
        "HOST",
        "GPUS",
        "DRIVER",
        "CUDA",
        "PADDLE",
        "VERDICT",
        "EXIT",
        "PROBLEM",
    ]
    assert lines[1].split() == [
        "gpu-node-1",
        "2x",
        "A100-SXM4-80GB",
        "535.104.05",
        "12.2",
        "3.0.0",
        "cu12.6",
        "pass",
        "0",
    ]
    assert lines[3].split() == [
        "gpu-node-3",
        "2x",
        "A100-SXM4-80GB",
        "535.104.05",  # NVML failed: the loaded kernel module says which driver runs
        "-",
        "3.0.0",
        "cu12.6",
        "fail",
        "1",
        "driver.version-mismatch",
    ]
    assert lines[4].split()[-3:] == ["cpu-fallback", "6", "paddle.cpu-build"]
    assert text.splitlines()[-1] == (
        "5 hosts: 1 pass, 1 warn, 2 fail, 1 cpu-fallback, 0 wrong-results; exit 6"
    )
    at = lines[0].index("VERDICT")  # the verdict column is aligned
    assert [line[at:].split()[0] for line in lines[1:6]] == [
        "pass",
        "warn",
        "fail",
        "cpu-fallback",
        "fail",
    ]


def test_identical_problems_are_one_line_with_the_hosts_in_slurm_notation() -> None:
    fleet = [samples.driver_upgraded_without_reboot(hostname=f"gpu{i:03d}") for i in range(1, 13)]
    fleet += [samples.healthy(hostname="gpu013"), samples.smoke_crashed(hostname="login1")]
    summary = merge_reports([_saved(r) for r in fleet])
    (driver, smoke) = summary.problem_groups()
    assert (driver.id, len(driver.hosts), smoke.id, smoke.hosts) == (
        "driver.version-mismatch",
        12,
        "smoke.crashed",
        ("login1",),
    )
    lines = fleet_table_text(summary).splitlines()
    head = lines.index(
        "12 hosts: driver.version-mismatch → reboot the machine (or reload the nvidia "
        "kernel modules) after a driver upgrade"
    )
    assert lines[head + 1] == "  gpu[001-012]"
    assert lines[head + 2].startswith("  e.g. gpu001: NVML: Driver/library version mismatch")
    assert "1 host: smoke.crashed → see the smoke log" in lines
    groups = summary.to_json()["groups"]
    assert [(g["id"], g["count"]) for g in groups] == [
        ("driver.version-mismatch", 12),
        ("smoke.crashed", 1),
    ]
    assert groups[0]["hosts"] == [f"gpu{i:03d}" for i in range(1, 13)]


def test_hosts_that_never_reported_are_one_group() -> None:
    summary = merge_reports(
        [_saved(samples.healthy(hostname="gpu001"))], expected=[f"gpu{i:03d}" for i in range(1, 5)]
    )
    (group,) = summary.problem_groups()
    assert group.id == "fleet.not-reported" and group.hosts == ("gpu002", "gpu003", "gpu004")
    assert "  gpu[002-004]" in fleet_table_text(summary).splitlines()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


LONG_NAMES = [
    f"gpu{i:04d}.rack-{i % 40:02d}.training-cluster-east.example-corp.internal1"[:60]
    for i in range(10)
]


def _terminal(
    summary: Any, monkeypatch: pytest.MonkeyPatch, columns: int, *, verbose: bool = False
) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(columns))
    stream = _Tty()
    print_fleet_table(summary, stream, verbose=verbose)
    out = stream.getvalue()
    assert "\x1b[" in out  # coloured: it went through rich
    return ANSI.sub("", out).splitlines()


@pytest.mark.parametrize("columns", [120, 80])
def test_a_fleet_of_26_takes_one_line_per_host_problems_first(
    monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """At 80 columns 26 hosts took 2 lines each (3 with long names), and one 37-character
    name stacked every row at 120; as `sinfo`, one line per host, long names cut with `…`."""
    long_name = "a-very-long-node-name-in-rack12-gpu07"
    names = [f"gpu{i:03d}" for i in range(25)] + [long_name]
    summary = merge_reports([_saved(FLEET[i % 5](hostname=n)) for i, n in enumerate(names)])
    lines = _terminal(summary, monkeypatch, columns)
    table = _table("\n".join(lines))
    assert len(table) == 1 + 26  # the header, then one line per host
    assert all(len(line) <= columns for line in lines)
    (row,) = [line for line in table if line.startswith("a-")]
    shown = row.split()[0]
    assert "…" in shown and shown.endswith("gpu07") and len(shown) < len(long_name)
    # the root causes, one line each, come before the table, each id whole
    first_group = lines.index(next(line for line in lines if line.startswith("5 hosts: ")))
    assert first_group < lines.index(table[0])
    roots = summary.causes()
    assert lines[: len(roots)] == [
        line
        for line in lines
        if any(line.startswith(f"{len(c.hosts)} host") and f": {c.id} on " in line for c in roots)
    ]
    for i, host in enumerate(summary.hosts):  # each row's verdict and exit code are whole
        assert host.verdict in table[i + 1].split() and str(host.exit_code) in table[i + 1].split()


def test_long_host_names_wait_for_their_group_lists_to_be_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = merge_reports([_saved(b(hostname=name)) for b, name in zip(FLEET * 2, LONG_NAMES)])
    lines = _terminal(summary, monkeypatch, 120, verbose=True)
    table = _table("\n".join(lines))
    assert len(table) == 1 + 10
    # a DNS name is cut at its end: its first label, the node's own name, stays readable
    assert [row.split()[0][:8] for row in table[1:]] == [n[:8] for n in LONG_NAMES]
    assert all(row.split()[0].endswith("…") for row in table[1:])
    for name in LONG_NAMES:  # shortened in its row, whole in each of its groups' host lists
        groups = sum(name in g.hosts for g in summary.problem_groups())
        assert sum(line.strip().rstrip(",") == name for line in lines) == groups


def test_the_driver_column_shows_the_loaded_kernel_module_when_user_space_differs() -> None:
    upgraded = samples.healthy(
        hostname="gpu001",
        driver=DriverFacts(status="error", version="550.54.14", kernel_module="535.104.05"),
    )
    same = samples.healthy(
        hostname="gpu002",
        driver=DriverFacts(
            status="ok", version="535.104.05", cuda="12.2", kernel_module="535.104.05"
        ),
    )
    text = fleet_table_text(merge_reports([_saved(upgraded), _saved(same)]))
    rows = {line.split()[0]: line.split() for line in _table(text)[1:]}
    assert rows["gpu001"][3] == "535.104.05*" and "550.54.14" not in rows["gpu001"]
    assert rows["gpu002"][3] == "535.104.05"
    assert "* the loaded kernel module's version: the user-space driver differs" in text


def test_wide_terminal_keeps_one_line_per_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    stream = _Tty()
    summary = merge_reports([_saved(b()) for b in FLEET])
    print_fleet_table(summary, stream, verbose=True)
    lines = ANSI.sub("", stream.getvalue()).splitlines()
    assert lines[:6] == fleet_table_text(summary, verbose=True).splitlines()[:6]


def test_hostile_values_are_escaped_on_the_terminal_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    report = samples.driver_upgraded_without_reboot(hostname="evil\x1b]0;pwned\x07\n::error::x")
    stream = _Tty()
    print_fleet_table(merge_reports([_saved(report)]), stream, verbose=True)
    out = stream.getvalue()
    assert "\x1b]" not in out and "\x07" not in out and "\n::error" not in out
    assert "evil\\x1b]0;pwned\\x07\\n::error::x" in out


NAME = st.from_regex(r"[a-z]{1,4}(-[a-z]{1,3})?", fullmatch=True)


@given(
    st.lists(
        st.tuples(
            NAME, st.integers(0, 120), st.sampled_from([0, 2, 3, 4]), st.sampled_from(["", ".ex"])
        ),
        max_size=40,
    )
)
def test_compressed_host_lists_read_back_as_the_same_hosts(
    parts: list[tuple[str, int, int, str]],
) -> None:
    names = [f"{p}{str(n).zfill(w)}{suffix}" for p, n, w, suffix in parts] + ["login"]
    compressed = compress_host_list(names)
    assert sorted(parse_host_list(",".join(compressed))) == sorted(set(names))
    assert len(compressed) <= len(set(names))


@pytest.mark.parametrize(
    ("names", "compressed"),
    [
        (["gpu001", "gpu002", "gpu003", "gpu010", "login"], ["gpu[001-003,010]", "login"]),
        (["n9", "n10", "n11"], ["n[9-11]"]),
        (["gpu099", "gpu100"], ["gpu[099-100]"]),
        (["rack1-n1.ex", "rack1-n2.ex"], ["rack1-n[1-2].ex"]),
    ],
    ids=["padded-and-plain", "unpadded", "padding-kept-across-a-digit", "last-number-ranged"],
)
def test_host_lists_are_written_like_slurm(names: list[str], compressed: list[str]) -> None:
    assert compress_host_list(names) == compressed


def test_a_long_host_list_is_cut_between_names_with_the_count_left() -> None:
    names = tuple(f"node-{c}{i}" for c in "abcdefghij" for i in range(3))  # no common range
    text = host_list(names, 60)
    assert text.endswith(" more (`--json` lists them all)") and len(text) <= 60
    shown = text.split(" and ")[0].split(", ")
    left = int(text.split(" and ")[1].split()[0])
    assert all(part in names or part.startswith("node-") and "[" in part for part in shown)
    assert left + sum(len(parse_host_list(p)) for p in shown) == len(names)


# ----------------------------------------------------------------------------- the command


def _run(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None
) -> tuple[int, str, str]:
    """`envcheck report ARGV` in-process, under the variables as the test left them."""
    r = run_envcheck(["report", *argv], env=os.environ, stdin=stdin)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture(autouse=True)
def _not_on_github(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def test_report_command_merges_files_and_exits_with_the_worst(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(_write(tmp_path, b())) for b in FLEET]
    code, out, err = _run(capsys, *paths)
    assert code == 6 and err == ""
    assert all(f"gpu-node-{i}" in out for i in range(1, 6))


def test_corrupt_file_is_named_the_others_merged_and_exit_is_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = [str(_write(tmp_path, b())) for b in FLEET[:2]]
    corrupt = tmp_path / "gpu-node-9.json"
    corrupt.write_text(
        '{"schema_version": 1, "verdict": "pass"', encoding="utf-8"
    )  # cut off mid-upload
    code, out, err = _run(capsys, good[0], str(corrupt), good[1], str(tmp_path / "missing.json"))
    assert code == 2
    assert (
        f"envcheck: error: report {corrupt} is not JSON: Expecting ',' delimiter at line 1 column 40"
        in err
    )
    assert f"envcheck: error: cannot read report {tmp_path / 'missing.json'}: no such file" in err
    assert "hint: each FILE must be the output of `envcheck doctor --json`" in err
    assert "gpu-node-1" in out and "gpu-node-2" in out
    assert "2 hosts: 1 pass, 1 warn" in out


def test_wrong_document_is_named_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "package.json"
    other.write_text('{"name": "left-pad"}', encoding="utf-8")
    code, _, err = _run(capsys, str(_write(tmp_path, samples.healthy())), str(other))
    assert code == 2 and f'{other}: not an envcheck report (no integer "schema_version")' in err


def test_nothing_readable_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert code == 2 and out == ""
    assert "envcheck: error: no report could be read (2 file(s) failed)" in err


def test_duplicates_are_listed_under_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _write(
        tmp_path,
        samples.healthy(hostname="gpu-node-1", meta={"generated_at": "2026-01-01T00:00:00Z"}),
        "old.json",
    )
    new = _write(tmp_path, samples.cpu_wheel_in_image(hostname="gpu-node-1"), "new.json")
    code, out, _ = _run(capsys, str(old), str(new))
    assert code == 6
    assert f"duplicate gpu-node-1: kept {new} (newest), ignored {old}" in out


def test_a_folder_stands_for_its_json_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for b in FLEET:
        _write(tmp_path, b())
    (tmp_path / "notes.txt").write_text("not a report", encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _run(capsys, str(tmp_path), str(empty))
    assert code == 2 and f"{empty}: a folder with no *.json report in it" in err
    assert "5 hosts" in out


def test_json_output_is_one_document_with_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _write(tmp_path, samples.driver_upgraded_without_reboot())
    bad = tmp_path / "bad.json"
    bad.write_text("", encoding="utf-8")
    code, out, _ = _run(capsys, "--json", str(good), str(bad))
    doc = json.loads(out)
    assert code == doc["exit_code"] == 2
    assert [h["hostname"] for h in doc["hosts"]] == ["gpu-node-3"]
    assert doc["errors"] == [f"report {bad} is not JSON: Expecting value at line 1 column 1"]


def test_junit_and_markdown_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(_write(tmp_path, b())) for b in FLEET[:3]]
    junit, md = tmp_path / "fleet.xml", tmp_path / "fleet.md"
    code, *_ = _run(capsys, "--junit", str(junit), "--markdown", str(md), *paths)
    assert code == 1
    xml = JUnitXml.fromfile(str(junit))
    assert [s.hostname for s in xml] == [
        "gpu-node-1",
        "gpu-node-2",
        "gpu-node-3",
    ] and xml.failures == 1
    assert md.read_text(encoding="utf-8").startswith("## ❌ envcheck fleet: 3 hosts")


def test_github_actions_gets_annotations_per_failing_host_and_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    paths = [str(_write(tmp_path, b())) for b in FLEET]
    code, _, err = _run(capsys, *paths)
    assert code == 6
    titles = [line.split("::")[1] for line in err.splitlines() if line.startswith("::")]
    assert titles == [
        "error title=envcheck fail on gpu-node-3",
        "error title=envcheck cpu-fallback on gpu-node-4",
        "error title=envcheck fail on gpu-node-5",
        "warning title=envcheck warn on gpu-node-2",
    ]
    assert "envcheck fleet: 5 hosts" in summary.read_text(encoding="utf-8")
    assert (tmp_path / "output").read_text(encoding="utf-8") == "verdict=cpu-fallback\n"


def test_mixed_reports_from_fail_findings_only() -> None:
    report = samples.report(
        (
            fail(
                "env.cuda-visible-devices",
                "CUDA_VISIBLE_DEVICES is empty",
                fix="unset it",
                layer="env",
            ),
        )
    )
    (host,) = merge_reports([_saved(report)]).hosts
    problem = host.first_problem()
    assert problem is not None and problem.id == "env.cuda-visible-devices"


# ------------------------------------------------------------ hostile files among good ones


def _deeply_nested(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")


def _nested_just_under_the_parser_limit(path: Path) -> None:
    doc = samples.healthy(hostname="gpu-node-7").to_json()
    doc["meta"]["nest"] = doc["findings"][0]["observed"] = "DEEP"
    deep = "[" * 900 + "]" * 900  # json.dumps itself could not write it from a test's stack
    path.write_text(json.dumps(doc).replace('"DEEP"', deep), encoding="utf-8")


def _int_limit_error() -> str:
    """Python's own words for a 5000-digit integer (CVE-2020-10735), which 3.10 and 3.11 word
    differently."""
    try:
        int("9" * 5000)
    except ValueError as e:
        return str(e)
    raise AssertionError("this Python has no limit on integer string conversion")


@pytest.mark.parametrize(
    ("write", "error"),
    [
        (
            lambda p: p.write_bytes(b'{"schema_version": 1, "host": "\xff\xfe"}'),
            "is not JSON: byte 31 (b'\\xff') is not UTF-8",
        ),
        (_deeply_nested, "is not JSON we can read: nested too deeply"),
        (
            lambda p: p.write_text('{"schema_version": ' + "9" * 5000 + "}", encoding="utf-8"),
            f"is not JSON we can read: {_int_limit_error()}",
        ),
    ],
    ids=["not-utf8", "nested-100000-deep", "int-of-5000-digits"],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_one_hostile_file_is_named_and_the_others_still_merged(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    write: Callable[[Path], object],
    error: str,
    as_json: bool,
) -> None:
    bad = tmp_path / "gpu-node-9.json"
    write(bad)
    good = [str(_write(tmp_path, b())) for b in FLEET[:2]]
    code, out, err = _run(capsys, *(["--json"] if as_json else []), good[0], str(bad), good[1])
    assert code == 2
    assert f"envcheck: error: report {bad} {error}" in err and "Traceback" not in err
    assert "gpu-node-1" in out and "gpu-node-2" in out


def test_a_report_nested_just_under_the_parser_limit_still_merges_and_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    _nested_just_under_the_parser_limit(deep)
    md, junit = tmp_path / "fleet.md", tmp_path / "fleet.xml"
    code, out, err = _run(capsys, "--json", "--markdown", str(md), "--junit", str(junit), str(deep))
    assert (code, err) == (0, "")
    assert [h["hostname"] for h in json.loads(out)["hosts"]] == ["gpu-node-7"]


# ------------------------------------------------------------------ --expect-hosts


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("gpu-node-1\ngpu-node-2\n", ["gpu-node-1", "gpu-node-2"]),
        ("a, b c\n\n# the spare nodes\nd  # comment\n", ["a", "b", "c", "d"]),
        ("gpu[001-003,010]", ["gpu001", "gpu002", "gpu003", "gpu010"]),
        (
            "rack[1-2]-n[8-9].example",
            ["rack1-n8.example", "rack1-n9.example", "rack2-n8.example", "rack2-n9.example"],
        ),
        ("n[7]", ["n7"]),
        ("", []),
    ],
    ids=[
        "lines",
        "separators-and-comments",
        "slurm-range",
        "two-ranges-and-domain",
        "one-number",
        "empty",
    ],
)
def test_host_lists_read_like_slurm_writes_them(text: str, names: list[str]) -> None:
    assert parse_host_list(text) == names


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("gpu[3-1]", "line 1: '3-1' is not a range like 001-004"),
        ("gpu[a-b]", "line 1: 'a-b' is not a range like 001-004"),
        ("ok\ngpu[1-2", "line 2: cannot read '[' as host names"),
        ("gpu]", "line 1: cannot read ']' as host names"),
        ("-rf", "line 1: '-rf' is not a host name"),
        ("n[]", "line 1: '' is not a range like 001-004"),
        ("r[1-999]n[1-999]", "line 1: 'r[1-999]n[1-999]' names more than 100000 hosts"),
        ("n[0-999999999]", "line 1: 'n[0-999999999]' names more than 100000 hosts"),
        # each range under the limit, together 30 million names (2.1 GB before a check)
        ("n[" + ",".join(["0-99999"] * 300) + "]", "names more than 100000 hosts"),
        ("x" * 254, "is longer than a host name"),
        ("x" * 250 + "[1-99999]", "is longer than a host name"),
    ],
    ids=[
        "reversed",
        "letters",
        "unclosed",
        "stray-bracket",
        "flag-like",
        "empty-range",
        "product-too-big",
        "range-too-big",
        "many-ranges",
        "long-name",
        "long-names-ranged",
    ],
)
def test_bad_host_lists_say_where(text: str, error: str) -> None:
    with pytest.raises(HostListError, match=re.escape(error)):
        parse_host_list(text)


def test_expected_hosts_without_a_report_are_named_failures() -> None:
    summary = merge_reports(
        [_saved(samples.healthy())], expected=["gpu-node-1", "gpu-node-2", "gpu-node-2"]
    )
    assert summary.missing == ("gpu-node-2",)
    assert [(h.hostname, h.verdict, h.exit_code, h.reported) for h in summary.hosts] == [
        ("gpu-node-1", "pass", 0, True),
        ("gpu-node-2", "fail", 1, False),
    ]
    problem = summary.hosts[1].first_problem()
    assert problem is not None and problem.id == "fleet.not-reported"
    assert (summary.verdict, summary.exit_code) == ("fail", 1)
    assert summary.counts["missing"] == 1 and summary.counts["fail"] == 0


@pytest.mark.parametrize(
    ("builders", "exit_code"),
    [
        ([samples.healthy], 1),
        ([samples.smoke_crashed], 5),
        ([samples.cpu_wheel_in_image], 6),
    ],
    ids=["pass+missing=1", "smoke+missing=5", "cpu-fallback+missing=6"],
)
def test_missing_counts_as_a_failure_and_a_worse_reported_exit_wins(
    builders: list[samples.Builder], exit_code: int
) -> None:
    summary = merge_reports([_saved(b(hostname="a")) for b in builders], expected=["a", "b"])
    assert summary.exit_code == exit_code


def test_expected_names_match_reports_by_short_name_without_case() -> None:
    reports = [
        _saved(samples.healthy(hostname="GPU001.cluster.example")),
        _saved(samples.healthy(hostname="gpu002")),
    ]
    summary = merge_reports(reports, expected=["gpu001", "gpu002.cluster.example"])
    assert summary.missing == () and summary.exit_code == 0


def test_expect_hosts_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    _write(reports, samples.healthy(hostname="gpu001"))
    _write(reports, samples.unconfirmed_image_tag(hostname="gpu003"))
    expected = tmp_path / "nodes"
    expected.write_text("gpu[001-003]\n", encoding="utf-8")
    md, junit = tmp_path / "fleet.md", tmp_path / "fleet.xml"
    code, out, err = _run(
        capsys,
        "--expect-hosts",
        str(expected),
        "--markdown",
        str(md),
        "--junit",
        str(junit),
        str(reports),
    )
    assert code == 1
    assert err == "envcheck: error: gpu002: expected, but no report from it\n"
    row = next(line for line in out.splitlines() if line.startswith("gpu002"))
    assert re.fullmatch(r"gpu002 +- +- +- +- +fail +1 +fleet\.not-reported", row)
    assert "  e.g. gpu002: gpu002 was expected but no readable report" not in out  # a group of one:
    assert "  gpu002: gpu002 was expected but no readable report came from it" in out  # no "e.g."
    assert (
        "3 hosts: 1 pass, 1 warn, 0 fail, 0 cpu-fallback, 0 wrong-results, 1 missing; exit 1" in out
    )
    assert "gpu002" in md.read_text(encoding="utf-8")
    xml = JUnitXml.fromfile(str(junit))
    assert [s.hostname for s in xml] == ["gpu001", "gpu002", "gpu003"] and xml.failures == 1


def test_expect_hosts_from_stdin_and_in_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = _run(
        capsys,
        "--json",
        "--expect-hosts",
        "-",
        str(_write(tmp_path, samples.healthy())),
        stdin="gpu-node-1\ngpu-node-4\n",
    )
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1
    assert doc["missing"] == ["gpu-node-4"] and doc["verdict"] == "fail"
    assert [(h["hostname"], h["reported"]) for h in doc["hosts"]] == [
        ("gpu-node-1", True),
        ("gpu-node-4", False),
    ]


def test_report_dash_reads_the_commands_stdin_not_the_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # the process's: never the one read
    failing = samples.driver_upgraded_without_reboot()
    from_file = _run(capsys, str(_write(tmp_path, failing)))
    from_stdin = _run(capsys, "-", stdin=json.dumps(failing.to_json()))
    assert from_file[0] == 1 and from_file[2] == ""
    assert from_stdin == from_file


def test_no_report_at_all_with_expected_hosts_names_every_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = tmp_path / "nodes"
    expected.write_text("n1 n2", encoding="utf-8")
    bad = tmp_path / "n1.json"
    bad.write_text("", encoding="utf-8")
    code, out, err = _run(capsys, "--expect-hosts", str(expected), str(bad))
    assert code == 2  # an unreadable file is a broken collection step: exit 2 over 1
    assert "n1: expected, but no report from it" in err and "n2: expected" in err
    assert "2 hosts: 0 pass, 0 warn, 0 fail, 0 cpu-fallback, 0 wrong-results, 2 missing" in out


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"gpu[1-", "--expect-hosts {path}: line 1: cannot read '[' as host names"),
        (b"\xffgpu", "--expect-hosts {path}: byte 0 is not UTF-8"),
        (None, "--expect-hosts {path}: cannot read it: No such file or directory"),
    ],
    ids=["malformed", "not-utf8", "no-file"],
)
def test_a_bad_expect_hosts_file_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, error: str
) -> None:
    path = tmp_path / "nodes"
    if content is not None:
        path.write_bytes(content)
    code, out, err = _run(
        capsys, "--expect-hosts", str(path), str(_write(tmp_path, samples.healthy()))
    )
    assert code == 2 and out == ""
    assert f"envcheck: error: {error.format(path=path)}" in err


def test_the_fleet_says_how_many_gpus_a_smoke_proved_and_where_not_all() -> None:
    """The Slurm recipe asked for one GPU per node: 1 of 2 proven on each node."""
    one_of_two = passed("smoke.pass", "trained", layer="smoke", devices=["gpu:0"])
    both = passed("smoke.pass", "trained", layer="smoke", devices=["gpu:0", "gpu:1"])
    fleet = [
        samples.report((one_of_two,), hostname="gpu001"),
        samples.report((one_of_two,), hostname="gpu002"),
        samples.report((both,), hostname="gpu003"),
    ]
    summary = merge_reports([_saved(r) for r in fleet])
    assert summary.gpus_proven() == (4, 6, ("gpu001", "gpu002"))
    text = fleet_table_text(summary)
    assert "GPUs proven by a smoke: 4 of 6; fewer than all on gpu[001-002]" in text.splitlines()
    from envcheck.render.markdown import render_fleet_markdown

    assert "GPUs proven by a smoke: 4 of 6; fewer than all on gpu\\[001-002\\]." in (
        render_fleet_markdown(summary)
    )
    assert summary.to_json()["gpus"] == {
        "proven": 4,
        "total": 6,
        "not_all_proven": ["gpu001", "gpu002"],
    }


def test_a_host_list_asking_for_gigabytes_is_exit_2(tmp_path: Path) -> None:
    """`n[0-99999,0-99999,…]` in a 2.4 KB file ended in MemoryError."""
    hosts = tmp_path / "nodes.txt"
    hosts.write_text("n[" + ",".join(["0-99999"] * 300) + "]\n")
    (tmp_path / "reports").mkdir()
    _write(tmp_path / "reports", samples.healthy())
    run = run_envcheck(["report", "--expect-hosts", str(hosts), str(tmp_path / "reports")])
    assert run.returncode == 2, run.stderr
    assert "names more than 100000 hosts" in run.stderr and "Traceback" not in run.stderr


def test_a_bad_files_name_is_shown_never_obeyed(tmp_path: Path) -> None:
    """Report's per-file errors printed the file name raw (ESC, a `::warning::` line)."""
    _write(tmp_path, samples.healthy())
    (tmp_path / "x\n::warning::forged\x1b[2J.json").write_text("not json")
    run = run_envcheck(["report", str(tmp_path)])
    assert run.returncode == 2
    assert "forged" in run.stderr and "\x1b" not in run.stderr
    assert not any(line.startswith("::") for line in run.stderr.splitlines())


# ------------------------------------------------ telling hosts apart, root causes, 30 hosts

REAL_H100 = DATA / "real-h100" / "f-gpu262-expect.json"


def _real_h100_without_hostname() -> dict[str, Any]:
    """The recorded H100's report as a collector that strips host names would keep it."""
    doc: dict[str, Any] = json.loads(REAL_H100.read_text(encoding="utf-8"))
    doc["host"]["machine"].pop("hostname", None)
    return doc


def test_a_report_without_a_hostname_is_named_by_its_file() -> None:
    saved = SavedReport("reports/rack7/h100-spare.json", _real_h100_without_hostname())
    summary = merge_reports([saved])
    assert summary.hosts[0].label == "h100-spare.json"
    assert _table(fleet_table_text(summary))[1].startswith("h100-spare.json ")


def test_a_cut_host_or_gpu_name_keeps_the_part_that_tells_it_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Names that share their start (`gpu-node-0…`, `1x GeForce RTX …`) lose that, never the
    number or model that differs: at 60 columns every row still names its own node and GPU."""
    reports = []
    for i, model in enumerate(["GeForce RTX 3090", "GeForce RTX 4090"] * 6):
        gpu = GpuFacts(index=0, name=f"NVIDIA {model}", compute_capability="8.6")
        name = f"gpu-node-{i + 1:03d}.training-cluster.example.internal"
        reports.append(samples.healthy(hostname=name, gpus=(gpu,)))
    summary = merge_reports([_saved(r) for r in reports])
    rows = _table("\n".join(_terminal(summary, monkeypatch, 60)))[1:]
    assert len(rows) == 12
    for i, row in enumerate(rows):
        host = row.split()[0]
        assert f"{i + 1:03d}" in host and "…" in host
        assert ["3090", "4090"][i % 2] in row


def test_problem_groups_are_root_causes_with_their_action() -> None:
    """A follow-on finding ("resolved by the fix for …") is not a group of its own: the host is
    counted once, under the finding whose fix resolves it."""
    root = fail("paddle.arch-missing", "no sm_90 kernels", fix="pip install x", layer="paddle")
    follow = fail(
        "cudnn.major-mismatch", "cuDNN 9, build 8", fix=resolved_by(root.id), layer="cuda"
    )
    hosts = [samples.report((follow, root), hostname=f"gpu{i}") for i in range(3)]
    summary = merge_reports([_saved(r) for r in hosts])
    (cause,) = summary.causes()
    assert (cause.id, len(cause.hosts)) == ("paddle.arch-missing", 3)
    assert [v.fix for v in cause.variants] == ["pip install x"]
    text = fleet_table_text(summary)
    assert "resolved by" not in text
    assert "resolved by" in fleet_table_text(summary, verbose=True)  # every problem, there


def test_a_30_host_fleet_of_real_reports_fits_80_columns_in_40_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: 92 lines at 80 columns (each problem of the recorded H100 a group with its words,
    long fixes wrapped by the terminal); now one line per root cause, one per host, the totals."""
    mix = samples.FLEET_MIX
    saved = [_saved(mix[i % len(mix)](hostname=f"gpu-node-{i:03d}")) for i in range(1, 30)]
    saved.append(SavedReport("collected/h100-lent.json", _real_h100_without_hostname()))
    summary = merge_reports(saved)
    lines = _terminal(summary, monkeypatch, 80)
    assert len(summary.hosts) == 30
    assert len(lines) <= 40 and all(len(line) <= 80 for line in lines)
    rows = _table("\n".join(lines))[1:]
    assert [row.split()[0] for row in rows[:2]] == ["gpu-node-001", "gpu-node-002"]
    assert rows[-1].startswith("h100-lent")


def test_report_verbose_prints_every_problem_with_its_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "h100.json").write_text(json.dumps(_real_h100_without_hostname()))
    _write(reports, samples.healthy(hostname="gpu001"))
    _, short, _ = _run(capsys, str(reports))
    code, verbose, _ = _run(capsys, "--verbose", str(reports))
    assert code == 5
    # the recorded H100's problems each have a fix of their own: each is a cause, in both
    assert "1 host: smoke.loaded-cudnn-shadowed →" in short
    assert "h100.json: the host probe expected cuDNN 9.19.0" in verbose


# ------------------------------------------------------------- causes: every host that has one


def test_each_cause_counts_every_host_that_has_it_whatever_else_it_has() -> None:
    """Before: a host counted under its first problem only, so `paddle.cpu-build` on three
    hosts read "1 host" when two of them also had an older driver."""
    old = fail("driver.too-old", "driver 470", fix="upgrade the driver", layer="driver")
    cpu = fail("paddle.cpu-build", "CPU wheel", fix="pip install gpu", layer="paddle")
    runtime = warn("engine.no-nvidia-runtime", "no runtime", fix="install it", layer="engine")
    problems = {
        "gpu001": (old, cpu, runtime),
        "gpu002": (old, cpu),
        "gpu003": (cpu, runtime),
        "gpu004": (runtime,),
    }
    summary = merge_reports(
        [_saved(samples.report(found, hostname=name)) for name, found in problems.items()]
    )
    lines = fleet_table_text(summary).splitlines()
    assert lines[0] == "3 hosts: paddle.cpu-build → pip install gpu"
    assert lines[1] == "  gpu[001-003]"
    assert "2 hosts: driver.too-old → upgrade the driver" in lines
    assert "3 hosts: engine.no-nvidia-runtime → install it" in lines
    assert lines[lines.index("3 hosts: engine.no-nvidia-runtime → install it") + 1] == (
        "  gpu[001,003-004]"
    )


def _holding(summary: Any) -> dict[str, set[str]]:
    """Each check id -> the hosts whose saved report has it as a problem of its own (not one
    another finding's fix resolves), read from the JSON the fleet was merged from."""
    found: dict[str, set[str]] = {}
    for host in summary.to_json()["hosts"]:
        for problem in host["problems"]:
            if not (problem["fix"] or "").startswith("resolved by"):
                found.setdefault(problem["id"], set()).add(host["hostname"])
    return found


def test_over_26_real_reports_each_cause_counts_the_hosts_holding_it() -> None:
    summary = merge_reports(real_fleet())
    holding = _holding(summary)
    counted = {c.id: set(c.hosts) for c in summary.causes()}
    assert counted == holding
    causes = summary.to_json()["causes"]  # what a dashboard reads: the same counts
    assert {c["id"]: (c["count"], set(c["hosts"])) for c in causes} == {
        id_: (len(hosts), hosts) for id_, hosts in holding.items()
    }
    assert max(len(h) for h in holding.values()) >= 7  # a cause most hosts share
    text = fleet_table_text(summary)
    for id_, hosts in holding.items():
        n = len(hosts)
        assert (
            sum(
                line.startswith(f"{n} host{'' if n == 1 else 's'}: {id_}")
                for line in text.splitlines()
            )
            == 1
        ), id_


def test_one_finding_with_different_fixes_is_one_cause_with_its_fixes_below() -> None:
    """Before: `driver.too-old` made three groups (an upgrade floor per host, a pip line per
    interpreter), each "1 host"; now one cause of four hosts, each fix with its hosts under it."""
    summary = merge_reports(real_fleet())
    lines = fleet_table_text(summary).splitlines()
    assert sum(": driver.too-old" in line for line in lines) == 1
    head = lines.index("4 hosts: driver.too-old")
    assert lines[head + 1] == "  gpu-node-[002,007-008,010]"
    fixes = lines[head + 2 : head + 5]
    assert all(line.startswith("  → ") and line.endswith(")") for line in fixes), fixes
    assert "  → upgrade the driver to 525.60.13 or newer (gpu-node-[008,010])" in fixes


def test_26_real_reports_fit_80_columns_in_40_lines_every_host_told_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: 47 lines; the V100, the T4 and the P40 all read `1x Tesl…`, RTX 4090 and 5090
    `1x RTX …`, and `3.3.1 cu12.…` hid that the Paddle was the image's."""
    summary = merge_reports(real_fleet())
    lines = _terminal(summary, monkeypatch, 80)
    assert len(lines) <= 40 and all(len(line) <= 80 for line in lines)
    rows = {row.split()[0]: row for row in _table("\n".join(lines))[1:]}
    assert len(rows) == 26
    gpus = {name: rows[name].split("  ")[0].split(" ", 1)[1].strip() for name in rows}
    for name, model in [
        ("gpu-node-002", "T4"),
        ("gpu-node-005", "V100"),
        ("gpu-node-018", "P40"),
        ("gpu-node-004", "RTX 5090"),
        ("gpu-node-020", "RTX 4090"),
    ]:
        assert gpus[name].startswith(model), rows[name]
    image_paddle = [name for name, row in rows.items() if "cu12.9†" in row]
    assert image_paddle == ["gpu-node-011", "gpu-node-012", "gpu-node-013"]
    assert "† the Paddle of the image chosen: the host's Python has none" in lines
    # the causes come first, each one line naming its hosts, the failures first
    causes = summary.causes()
    assert lines[0].startswith(f"{len(causes[0].hosts)} hosts: {causes[0].id} on gpu-node-[")
