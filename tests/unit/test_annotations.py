"""`::error`/`::warning` annotations and the step summary: only under GITHUB_ACTIONS=true."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.contracts.findings import fail
from envcheck.render import annotations as ann
from envcheck.render.annotations import (
    ANNOTATIONS_PER_LEVEL,
    STEP_SUMMARY_LIMIT,
    emit_ci_outputs,
    escape_data,
    escape_property,
    github_annotations,
    workflow_command,
)
from envcheck.render.markdown import render_markdown
from tests import report_samples as samples
from tests.inprocess import Result, process_env, run_envcheck
from tests.paths import DATA

COMMAND = re.compile(r"^::(error|warning|notice)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def _unescape(text: str, *, prop: bool = False) -> str:
    """The runner's decoding (actions/runner `ActionCommand.Unescape`), as a single pass."""
    table = {"%25": "%", "%0D": "\r", "%0A": "\n"} | ({"%3A": ":", "%2C": ","} if prop else {})
    return re.sub("|".join(table), lambda m: table[m.group()], text)


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    m = COMMAND.match(line)
    assert m, line
    props = dict(p.split("=", 1) for p in m["props"].split(",")) if m["props"] else {}
    return m[1], {k: _unescape(v, prop=True) for k, v in props.items()}, _unescape(m["data"])


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    return summary


@pytest.mark.parametrize(
    ("builder", "verdict", "exit_code"),
    [(b, v, e) for _, b, v, e in samples.BY_VERDICT],
    ids=[i for i, *_ in samples.BY_VERDICT],
)
def test_one_annotation_per_problem_with_the_fix(
    builder: samples.Builder, verdict: str, exit_code: int
) -> None:
    report = builder()
    lines = github_annotations(report)
    problems = [f for f in report.findings if f.severity != "pass"]
    assert len(lines) == len(problems)
    for line, finding in zip(lines, sorted(problems, key=lambda f: f.severity != "fail")):
        level, props, message = _parse(line)
        assert level == {"fail": "error", "warn": "warning"}[finding.severity]
        assert props["title"] == f"envcheck {finding.id} on {report.host.machine.hostname}"
        assert message == f"{finding.message}\nFix: {finding.fix}"
        assert "\n" not in line


@given(st.text())
def test_escaping_round_trips_through_the_runners_decoding(text: str) -> None:
    assert "\n" not in escape_data(text) and "\r" not in escape_data(text)
    assert _unescape(escape_data(text)) == text
    escaped = escape_property(text)
    assert not set(":,\n\r") & set(escaped)
    assert _unescape(escaped, prop=True) == text


def test_title_with_colons_and_commas_is_one_property() -> None:
    line = workflow_command("error", "100% broken\nreally", title="envcheck: a, b")
    assert line == "::error title=envcheck%3A a%2C b::100%25 broken%0Areally"


def test_more_than_ten_failures_keep_ten_lines_and_name_the_rest() -> None:
    report = samples.report(
        tuple(fail(f"check.n{i}", f"broken {i}", fix="fix it", layer="env") for i in range(15))
    )
    lines = github_annotations(report)
    assert len(lines) == ANNOTATIONS_PER_LEVEL
    *_, last = lines
    _, props, message = _parse(last)
    assert props["title"] == "envcheck: 6 more"
    assert message.startswith("also: check.n9, check.n10") and message.count("check.n") == 6


@pytest.mark.parametrize(
    "value", [None, "false", "1", "True"], ids=["unset", "false", "one", "True"]
)
def test_nothing_for_github_unless_github_actions_is_true(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str | None
) -> None:
    summary = tmp_path / "summary.md"
    if value is None:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    else:
        monkeypatch.setenv("GITHUB_ACTIONS", value)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    stream = io.StringIO()
    emit_ci_outputs(
        samples.driver_upgraded_without_reboot(),
        markdown_path=None,
        stream=stream,
        env=process_env(),
    )
    assert stream.getvalue() == ""
    assert not summary.exists()


def test_markdown_file_is_written_anywhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    out = tmp_path / "summary.md"
    report = samples.cpu_wheel_in_image()
    emit_ci_outputs(report, markdown_path=str(out), stream=io.StringIO(), env=process_env())
    assert out.read_text(encoding="utf-8") == render_markdown(report)


def test_under_github_actions_summary_is_appended_and_annotations_printed(github: Path) -> None:
    github.write_text("# earlier step output\n", encoding="utf-8")
    report = samples.driver_upgraded_without_reboot()
    stream = io.StringIO()
    emit_ci_outputs(report, markdown_path=None, stream=stream, env=process_env())
    assert github.read_text(encoding="utf-8") == "# earlier step output\n" + render_markdown(report)
    assert stream.getvalue().splitlines() == github_annotations(report)


def test_passing_report_prints_no_annotation_but_still_summarises(github: Path) -> None:
    stream = io.StringIO()
    emit_ci_outputs(samples.healthy(), markdown_path=None, stream=stream, env=process_env())
    assert stream.getvalue() == ""
    assert "**pass**" in github.read_text(encoding="utf-8")


def test_summary_that_cannot_be_written_is_a_warning_not_a_crash(
    github: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing-dir" / "summary.md"))
    stream = io.StringIO()
    emit_ci_outputs(samples.healthy(), markdown_path=None, stream=stream, env=process_env())
    level, props, message = _parse(stream.getvalue().strip())
    assert level == "warning" and props["title"] == "envcheck"
    assert message.startswith("cannot write the step summary")


def test_step_summary_stays_under_githubs_one_mebibyte(
    github: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "STEP_SUMMARY_LIMIT", 2000)
    github.write_text("x" * 1500, encoding="utf-8")
    emit_ci_outputs(
        samples.driver_upgraded_without_reboot(),
        markdown_path=None,
        stream=io.StringIO(),
        env=process_env(),
    )
    text = github.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 2000
    assert text.endswith("the full report is in the artifacts)*\n")
    assert STEP_SUMMARY_LIMIT == 1024 * 1024


def test_step_outputs_for_the_steps_that_follow(
    github: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    outputs = tmp_path / "output"
    outputs.write_text("earlier=1\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    emit_ci_outputs(
        samples.cpu_wheel_in_image(), markdown_path=None, stream=io.StringIO(), env=process_env()
    )
    assert outputs.read_text(encoding="utf-8").splitlines() == [
        "earlier=1",
        "verdict=cpu-fallback",
        "headline=GPU host, static checks only",  # what the proof shows
        f"image={samples.IMAGE.ref}",
        f"image-digest={samples.IMAGE.digest}",
    ]


def test_step_outputs_that_cannot_be_written_are_a_warning(
    github: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "missing-dir" / "output"))
    stream = io.StringIO()
    emit_ci_outputs(samples.healthy(), markdown_path=None, stream=stream, env=process_env())
    level, _, message = _parse(stream.getvalue().strip())
    assert level == "warning" and message.startswith("cannot write the step outputs")


def _doctor(tmp_path: Path, *flags: str, env: dict[str, str]) -> Result:
    facts = tmp_path / "facts.json"
    report = samples.driver_upgraded_without_reboot()
    facts.write_text(json.dumps(report.to_json()), encoding="utf-8")
    return run_envcheck(
        ["doctor", "--facts", str(facts), "--expect-gpu", *flags], env={**os.environ, **env}
    )


def test_doctor_json_keeps_stdout_one_document_and_annotates_on_stderr(tmp_path: Path) -> None:
    """The real command: workflow commands on stderr (the runner reads both streams)."""
    summary = tmp_path / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
    }
    done = _doctor(tmp_path, "--json", env=env)
    doc = json.loads(done.stdout)  # exactly one JSON document, nothing around it
    assert doc["verdict"] != "pass" and done.returncode == doc["exit_code"] != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("::error ")]
    assert errors, done.stderr
    assert all(_parse(line)[0] == "error" for line in errors)
    assert f"(exit {doc['exit_code']})" in summary.read_text(encoding="utf-8")
    assert f"verdict={doc['verdict']}" in (tmp_path / "out").read_text(encoding="utf-8")


def test_doctor_prints_no_workflow_command_outside_github_actions(tmp_path: Path) -> None:
    env = {
        "GITHUB_ACTIONS": "",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
    }
    done = _doctor(tmp_path, env=env)
    assert done.returncode != 0
    assert "::error" not in done.stdout + done.stderr
    assert not (tmp_path / "summary.md").exists() and not (tmp_path / "output").exists()


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202egpu\x07"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_fleet_annotations_show_hostile_hostnames_never_obey_them() -> None:
    """Hostnames carried ESC/BEL/bidi into the "N more" annotation of a fleet."""
    from envcheck.contracts.saved_report import SavedReport
    from envcheck.render.annotations import fleet_annotations
    from envcheck.verdict.fleet import merge_reports

    reports = [samples.smoke_crashed(hostname=f"n{i}{HOSTILE}") for i in range(15)]
    summary = merge_reports([SavedReport(f"{i}.json", r.to_json()) for i, r in enumerate(reports)])
    lines = fleet_annotations(summary)
    assert len(lines) == ANNOTATIONS_PER_LEVEL and "6 more" in lines[-1]
    for line in lines:
        assert not UNSAFE.search(line), repr(line)
        assert "\\x1b" in line  # shown, escaped


def test_step_outputs_carry_no_control_characters(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    assert ann.append_step_outputs({"image": f"img{HOSTILE}"}, os.environ) is None
    assert not UNSAFE.search(out.read_text(encoding="utf-8"))


def test_one_annotation_per_root_cause_as_the_terminal_folds_them() -> None:
    """Before: the real H100 with Paddle 2.6.2 got an annotation for the cuDNN mismatch beside the
    arch one whose fix (another build) resolves it, so the same advice showed twice."""
    import json

    from envcheck.contracts.facts import host_from_document
    from envcheck.contracts.host_report import Report
    from envcheck.image.choice import select_image
    from envcheck.matrix.load import load_matrix
    from envcheck.render.markdown import render_markdown
    from envcheck.verdict.judge import Context, judge

    saved = DATA / "real-h100" / "f-gpu262-expect.json"
    host = host_from_document(json.loads(saved.read_text())["host"])
    matrix = load_matrix(None)
    image = select_image(host, matrix)
    report = Report(host, tuple(judge(Context(host, matrix, image))), image)
    assert any(f.remedy and f.remedy.resolved_by for f in report.findings)
    lines = github_annotations(report)
    assert not any("cudnn.major-mismatch on" in line for line in lines), lines
    root = next(line for line in lines if "paddle.arch-missing" in line)
    assert "Its fix also resolves: cudnn.major-mismatch" in root
    markdown = render_markdown(report)
    assert "**`cudnn.major-mismatch`**" not in markdown
    assert "Its fix also resolves `cudnn.major-mismatch`." in markdown
