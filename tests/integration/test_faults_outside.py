"""The outside fault campaign: live probes, the smoke's output, a misbehaving engine,
fake registries (read by envcheck and by the real dockerd), hostile fleets and GitHub files, a
reader that leaves, damaged state, and the signals a terminal or scheduler sends.

Every case asserts the six counts are zero for it; the last test prints the totals per surface
(`pytest -s`, or `python bench/faults_outside.py`).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import faults_outside as fo
from tests import faults_pipsteps as fps

PROCESS_CASES = fo.process_cases()
SMOKE_OUTPUTS = list(fo.smoke_output_cases())


@pytest.fixture
def peers() -> Iterator[fo.Peers]:
    yield fo.PEERS
    fo.PEERS.close()


def _no_new_failures(surface: str, before: int) -> None:
    failures = fo.TALLIES[surface].failures
    assert len(failures) == before, failures[before:]


@pytest.mark.parametrize(
    "case", PROCESS_CASES, ids=[f"{c.surface}-{c.name}" for c in PROCESS_CASES]
)
def test_process_case(case: fo.ProcessCase, tmp_path: Path, peers: fo.Peers) -> None:
    before = len(fo.TALLIES[case.surface].failures)
    fo.run_process_case(case, tmp_path)
    _no_new_failures(case.surface, before)


@pytest.mark.parametrize("name", list(fo.REGISTRY_ANSWERS))
def test_registry_client_case(name: str) -> None:
    before = len(fo.TALLIES["registry"].failures)
    fo.registry_case(name, fo.REGISTRY_ANSWERS[name])
    _no_new_failures("registry", before)


def test_smoke_outputs() -> None:
    assert len(SMOKE_OUTPUTS) > 100
    for name, stdout in SMOKE_OUTPUTS:
        fo.smoke_output_case(name, stdout)
    _no_new_failures("smoke-output", 0)


@pytest.mark.parametrize("name", list(fo.KNOWN_PACKAGES_FILES))
def test_known_packages_case(name: str, tmp_path: Path) -> None:
    before = len(fo.TALLIES["package-data"].failures)
    fo.known_packages_case(name, fo.KNOWN_PACKAGES_FILES[name], tmp_path)
    _no_new_failures("package-data", before)


@pytest.mark.docker
@pytest.mark.parametrize("signum", fo.SIGNALS, ids=[s.name for s in fo.SIGNALS])
def test_signal_case(signum: signal.Signals, tmp_path: Path) -> None:
    before = len(fo.TALLIES["signals"].failures)
    fo.signal_case(signum, tmp_path)
    _no_new_failures("signals", before)


@pytest.mark.docker
def test_sigkill_leftover_case(tmp_path: Path) -> None:
    before = len(fo.TALLIES["signals"].failures)
    fo.sigkill_leftover_case(tmp_path)
    _no_new_failures("signals", before)


GATE_INPUTS = list(fo.gate_input_cases())


@pytest.mark.parametrize(
    ("kind", "name", "hostile"), GATE_INPUTS, ids=["-".join(c) for c in GATE_INPUTS]
)
def test_gate_input_case(kind: str, name: str, hostile: str, tmp_path: Path) -> None:
    before = len(fo.TALLIES["gate"].failures)
    fo.gate_input_case(kind, name, hostile, tmp_path)
    _no_new_failures("gate", before)


@pytest.mark.parametrize("name", fps.KILLS)
def test_pip_killed_case(name: str, tmp_path: Path) -> None:
    before = len(fo.TALLIES["fix"].failures)
    fps.pip_killed_case(name, tmp_path)
    _no_new_failures("fix", before)


@pytest.mark.parametrize("name", list(fps.STOPS))
def test_hung_step_case(name: str) -> None:
    before = len(fo.TALLIES["fix"].failures)
    fps.hung_step_case(name)
    _no_new_failures("fix", before)


def test_zz_campaign_totals(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last (file order): per surface, every count but the cases' is zero."""
    with capsys.disabled():
        print("\n" + fo.totals())
    for tally in fo.TALLIES.values():
        assert tally.cases > 0, tally.surface
        assert tally.faults == (0, 0, 0, 0, 0, 0), tally.failures
