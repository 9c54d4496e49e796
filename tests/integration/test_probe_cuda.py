"""The CUDA driver API probe (cuda_driver) and the cudart/cuDNN probe (cuda_libs) against the
fake libraries, one interpreter per host profile (tests/fakenv), plus this machine's real loader
cache (a CUDA 13.0 toolkit here) and the pure parsers."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.contracts.facts import LibraryCandidate
from envcheck.probe import _cuda_child, cuda_driver, cuda_libs
from envcheck.smoke.workload.protocol import LibraryOrigin
from tests.inprocess import ENV, run_envcheck

if TYPE_CHECKING:
    from tests.fakenv import FakeBuild

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia, probed_host

Probed = Callable[[str], dict[str, Any]]

# (profile, libcuda version, device count)
HEALTHY = [
    ("a100x2-535", "12.2", 2),
    ("t4-470", "11.4", 1),
    ("h100-580", "13.0", 1),
    ("rtx5090-570", "12.8", 1),
    ("jetson-orin", "12.6", 1),
    ("mig-two-instances", "12.2", 2),
]

# (profile, CUresult name, version cuDriverGetVersion still gave, words of the reason)
FAILURES = [
    ("driver-not-loaded", "CUDA_ERROR_NO_DEVICE", "12.2", "kernel module is not loaded"),
    ("no-permission", "CUDA_ERROR_NO_DEVICE", "12.2", "no usable GPU"),
    ("mig-no-instances", "CUDA_ERROR_NO_DEVICE", "12.2", "MIG is on without instances"),
    ("rm-mismatch", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "12.4", "without a reboot"),
    ("cuda-stub", "CUDA_ERROR_STUB_LIBRARY", None, "stubs"),
]

# profile -> (cudart version, origin, where), (cuDNN version, origin, where)
LIBRARIES = {
    "a100x2-535": (
        ("12.6", "pip", "nvidia/cuda_runtime/lib/libcudart.so.12"),
        ("9.5.1", "pip", "nvidia/cudnn/lib/libcudnn.so.9"),
    ),
    "t4-470": (
        ("11.8", "LD_LIBRARY_PATH", "ld/libcudart.so.11.0"),
        ("8.9.6", "LD_LIBRARY_PATH", "ld/libcudnn.so.8"),
    ),
    "h100-580": (
        ("13.0", "pip", "nvidia/cu13/lib/libcudart.so.13"),
        ("9.13.0", "pip", "nvidia/cudnn/lib/libcudnn.so.9"),
    ),
    "rtx5090-570": (
        ("12.9", "pip", "nvidia/cuda_runtime/lib/libcudart.so.12"),
        ("9.9.0", "pip", "nvidia/cudnn/lib/libcudnn.so.9"),
    ),
    "no-driver-pip": (
        ("12.6", "pip", "nvidia/cuda_runtime/lib/libcudart.so.12"),
        ("9.5.1", "pip", "nvidia/cudnn/lib/libcudnn.so.9"),
    ),
}


@pytest.mark.fakegpu
@pytest.mark.parametrize(("profile", "version", "count"), HEALTHY, ids=[r[0] for r in HEALTHY])
def test_cuda_driver_of_a_working_driver(
    probed_host: Probed, profile: str, version: str, count: int
) -> None:
    facts = probed_host(profile)["cuda_driver"]
    assert (facts["status"], facts["version"], facts["device_count"]) == ("ok", version, count)
    assert facts["error"] is None
    assert facts["library"].endswith(
        "/driver/libcuda.so." + probed_host(profile)["driver"]["version"]
    )


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("profile", "error", "version", "words"), FAILURES, ids=[r[0] for r in FAILURES]
)
def test_cuinit_failure_is_named_by_its_curesult(
    probed_host: Probed, profile: str, error: str, version: str | None, words: str
) -> None:
    facts = probed_host(profile)["cuda_driver"]
    assert (facts["status"], facts["error"], facts["version"]) == ("error", error, version)
    assert words in facts["reason"]
    assert facts["device_count"] is None


@pytest.mark.fakegpu
def test_hanging_cuinit_times_out_and_keeps_the_library_facts(probed_host: Probed) -> None:
    facts = probed_host("cuinit-hang")
    driver = facts["cuda_driver"]
    assert (driver["status"], driver["error"]) == ("error", "timeout")
    assert "cuInit did not return within 1 s" in driver["reason"]
    assert driver["version"] == "12.2"  # cuDriverGetVersion answered before cuInit hung
    assert (facts["cudart"]["status"], facts["cudart"]["version"]) == ("ok", "12.6")


@pytest.mark.fakegpu
def test_a_hung_child_is_killed_not_left_behind(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    from tests.fakenv import children_alive  # registered as a plugin above

    # A profile path of this test's own: another run of the suite on the machine has its own
    # hung children, with the shipped profile's path in their environment.
    profile = tmp_path / "cuinit-hang.toml"
    env = {**os.environ, **fake_nvidia("cuinit-hang")}
    profile.write_bytes(Path(env["FAKE_NVIDIA_PROFILE"]).read_bytes())
    env["FAKE_NVIDIA_PROFILE"] = str(profile)
    facts = cuda_driver.probe_cuda_driver(timeout=0.5, env=env)
    assert facts.error == "timeout"
    assert children_alive(env["FAKE_NVIDIA_PROFILE"]) == []


@pytest.mark.fakegpu
def test_a_cuinit_slower_than_the_timeout_is_a_timeout(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    from tests.fakenv import children_alive  # registered as a plugin above

    # The fake cuInit takes its profile's latency (the lent H100's 0.2 s by default):
    # a driver that needs a minute to initialise is stopped at the probe's timeout.
    env = {**os.environ, **fake_nvidia("h100-580")}
    profile = tmp_path / "slow-cuinit.toml"
    text = Path(env["FAKE_NVIDIA_PROFILE"]).read_text()
    profile.write_text(text.replace("[cuda]\n", "[cuda]\ninit_latency_ms = 60000\n"))
    env["FAKE_NVIDIA_PROFILE"] = str(profile)
    facts = cuda_driver.probe_cuda_driver(timeout=0.5, env=env)
    assert (facts.status, facts.error, facts.version) == ("error", "timeout", "13.0")
    assert "cuInit did not return within 0.5 s" in (facts.reason or "")
    assert children_alive(str(profile)) == []


def test_a_child_that_closes_its_output_and_hangs_is_killed_at_its_deadline() -> None:
    # The end of its output is not its end: it is reaped, killed at the deadline.
    from envcheck.probe.cuda_spawn import Child

    child = Child(["/bin/sh", "-c", "echo begun; exec >&- 2>&-; sleep 60"], os.environ, 0.5)
    out, _, status, timed_out = child.finish()
    assert (out, status, timed_out) == (b"begun\n", -9, True)
    assert child.finish() == (out, b"", status, timed_out)  # the same answer, nothing killed


@pytest.mark.fakegpu
def test_aborting_cuinit_is_a_crash_with_its_signal(probed_host: Probed) -> None:
    facts = probed_host("cuinit-abort")
    driver = facts["cuda_driver"]
    assert (driver["status"], driver["error"]) == ("error", "crashed")
    assert "SIGABRT" in driver["reason"]
    assert (facts["cudart"]["status"], facts["cudart"]["version"]) == ("ok", "12.6")


@pytest.mark.fakegpu
def test_no_libcuda_at_all_is_absent(probed_host: Probed) -> None:
    facts = probed_host("no-driver-pip")["cuda_driver"]
    assert (facts["status"], facts["error"]) == ("absent", None)
    # the file and the loader's own words; whether a driver is here is NVML's to say (the
    # judge tells a machine without one from an NVML without its libcuda)
    assert "libcuda.so.1 cannot be loaded from" in facts["reason"]
    assert "cannot open shared object file" in facts["reason"]


@pytest.mark.fakegpu
@pytest.mark.parametrize("profile", sorted(LIBRARIES), ids=sorted(LIBRARIES))
def test_the_library_a_paddle_process_would_load(probed_host: Probed, profile: str) -> None:
    facts = probed_host(profile)
    for kind, (version, origin, where) in zip(("cudart", "cudnn"), LIBRARIES[profile]):
        lib = facts[kind]
        assert (lib["status"], lib["version"], lib["origin"]) == ("ok", version, origin), kind
        assert lib["path"].endswith(where)
        assert lib["candidates"][0]["path"] == lib["path"]


@pytest.mark.fakegpu
def test_pip_cudnn_shadows_an_old_one_on_ld_library_path(probed_host: Probed) -> None:
    """The profile's two copies come first, in the order a Paddle process tries them; the
    machine's own cuDNN in the loader cache or /usr/local/cuda (a GPU workstation has one: the
    lent H100 has cuDNN 9.14 in /lib/x86_64-linux-gnu) may follow, and never comes before them."""
    cudnn = probed_host("a100x2-535")["cudnn"]
    found = [(c["version"], c["origin"]) for c in cudnn["candidates"]]
    assert found[:2] == [("9.5.1", "pip"), ("8.9.6", "LD_LIBRARY_PATH")]
    assert {origin for _, origin in found[2:]} <= {"system", "cuda-home"}
    assert "9.5.1 from pip wins over 8.9.6" in cudnn["reason"]
    assert "(LD_LIBRARY_PATH)" in cudnn["reason"]


@pytest.mark.fakegpu
def test_ld_library_path_order_decides_between_two_copies(
    fake_build: FakeBuild, tmp_path: Path
) -> None:
    """Two cudart 12 copies on LD_LIBRARY_PATH: the first directory wins, the note says so."""
    first, second = tmp_path / "first", tmp_path / "second"
    for d, version in ((first, "12.2"), (second, "12.9")):
        d.mkdir()
        shutil.copy(fake_build.cudart(version), d)
    env = {"LD_LIBRARY_PATH": f"{first}:{second}", "PATH": os.defpath}
    cudart, _, _ = cuda_libs.probe_cuda_libraries([], env, timeout=5.0)
    ours = [c for c in cudart.candidates if c.origin == "LD_LIBRARY_PATH"]
    assert [(c.version, Path(c.path).parent) for c in ours] == [("12.2", first), ("12.9", second)]
    assert (cudart.version, cudart.origin) == ("12.2", "LD_LIBRARY_PATH")
    assert f"12.9 at {second}/libcudart.so.12 (LD_LIBRARY_PATH)" in (cudart.reason or "")


@pytest.mark.fakegpu
def test_a_library_that_cannot_load_is_skipped_with_a_note(
    fake_build: FakeBuild, tmp_path: Path
) -> None:
    broken, good = tmp_path / "broken", tmp_path / "good"
    broken.mkdir()
    good.mkdir()
    (broken / "libcudnn.so.9").write_bytes(b"not an ELF file")
    shutil.copy(fake_build.cudnn("9.5.1"), good)
    env = {"LD_LIBRARY_PATH": f"{broken}:{good}", "PATH": os.defpath}
    _, cudnn, _ = cuda_libs.probe_cuda_libraries([], env)
    assert (cudnn.status, cudnn.version, cudnn.path) == ("ok", "9.5.1", str(good / "libcudnn.so.9"))
    assert cudnn.candidates[0].error and "cannot be loaded" in (cudnn.reason or "")


@pytest.mark.fakegpu
def test_the_loader_cache_libraries_are_found_and_the_driver_root_hides_libcuda(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    """The real loader cache (here: the /usr/local/cuda-13.0 runtime, no cuDNN) is read and every
    libcudart/libcudnn in it is a "system" candidate with the version the file itself reports.
    libcuda comes from the no-driver profile's empty driver root: absent even on a machine whose
    loader cache holds a real driver."""
    env = {
        "PATH": os.defpath,
        "ENVCHECK_DRIVER_ROOT": fake_nvidia("no-driver")["ENVCHECK_DRIVER_ROOT"],
    }
    driver, cudart, cudnn, _ = cuda_libs.probe_cuda([], env)
    assert driver.status == "absent" and "driver" in (driver.reason or "")
    cache = cuda_libs.loader_cache()
    for spec, facts in ((cuda_libs.CUDART, cudart), (cuda_libs.CUDNN, cudnn)):
        cached = {os.path.realpath(p) for name, p in cache if spec.file_name.fullmatch(name)}
        system = [c for c in facts.candidates if c.origin == "system"]
        assert {os.path.realpath(c.path) for c in system} == cached, spec.kind
        assert all(c.version for c in system), system
    if Path("/usr/local/cuda-13.0/lib/libcudart.so.13").exists():  # this Debian box's toolkit
        assert (cudart.status, cudart.version, cudart.origin) == ("ok", "13.0", "system")


@pytest.mark.fakegpu
def test_the_driver_root_libcuda_wins_over_the_loader_path(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    """libcuda of a T4 host on LD_LIBRARY_PATH (where the loader finds it), the driver root of
    an H100 host: the probe loads the root's copy, by path."""
    t4, h100 = fake_nvidia("t4-470"), fake_nvidia("h100-580")
    env = {
        **os.environ,
        **t4,
        "ENVCHECK_DRIVER_ROOT": h100["ENVCHECK_DRIVER_ROOT"],
        "FAKE_NVIDIA_PROFILE": h100["FAKE_NVIDIA_PROFILE"],
    }
    facts = cuda_driver.probe_cuda_driver(timeout=5.0, env=env)
    assert (facts.status, facts.version) == ("ok", "13.0")
    assert (facts.library or "").endswith("/driver/libcuda.so.580.65.06")
    hidden = {**env, "ENVCHECK_DRIVER_ROOT": fake_nvidia("no-driver")["ENVCHECK_DRIVER_ROOT"]}
    absent = cuda_driver.probe_cuda_driver(timeout=5.0, env=hidden)
    assert absent.status == "absent" and "/lib/libcuda.so.1" in (absent.reason or "")


# Pure parsers ----------------------------------------------------------------------------------

LDCONFIG_P = """\
540 libs found in cache `/etc/ld.so.cache'
\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1
\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcudart.so.13
\tlibcudart.so (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcudart.so
\tlibcudnn.so.8 (libc6) => /usr/lib/i386-linux-gnu/libcudnn.so.8
\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6
"""


def test_ldconfig_output_is_parsed_for_this_architecture_only() -> None:
    assert cuda_libs.parse_ldconfig(LDCONFIG_P, "x86-64") == [
        ("libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"),
        ("libcudart.so.13", "/usr/local/cuda-13.0/lib/libcudart.so.13"),
        ("libcudart.so", "/usr/local/cuda-13.0/lib/libcudart.so"),
        ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
    ]
    assert ("libcudnn.so.8", "/usr/lib/i386-linux-gnu/libcudnn.so.8") in cuda_libs.parse_ldconfig(
        LDCONFIG_P
    )


def test_one_candidate_per_file_versioned_name_first(tmp_path: Path) -> None:
    (tmp_path / "libcudart.so.12").write_bytes(b"x")
    (tmp_path / "libcudart.so").symlink_to("libcudart.so.12")
    (tmp_path / "libcudart_static.a").write_bytes(b"x")
    found = cuda_libs.find_candidates(cuda_libs.CUDART, [], {"LD_LIBRARY_PATH": str(tmp_path)}, [])
    ours = [c for c in found if c.origin == "LD_LIBRARY_PATH"]
    assert [Path(c.path).name for c in ours] == ["libcudart.so.12"]


def test_origins_come_in_the_order_a_paddle_process_tries_them(tmp_path: Path) -> None:
    site, ld, cached, home = (tmp_path / n for n in ("site", "ld", "cache", "home"))
    for d in (site / "nvidia/cudnn/lib", ld, cached, home / "lib64"):
        d.mkdir(parents=True)
        (d / "libcudnn.so.9").write_bytes(d.name.encode())
    env = {"LD_LIBRARY_PATH": str(ld), "CUDA_HOME": str(home)}
    cache = [("libcudnn.so.9", str(cached / "libcudnn.so.9")), ("libcudnn_ops.so.9", "/x")]
    found = cuda_libs.find_candidates(cuda_libs.CUDNN, [str(site)], env, cache)
    origins = [c.origin for c in found][:4]
    # every word of the vocabulary a saved facts file is checked against, in the search order
    assert (
        origins
        == ["pip", "LD_LIBRARY_PATH", "system", "cuda-home"]
        == list(get_args(LibraryOrigin))
    )


def test_the_smoke_protocol_spells_the_library_origins_as_the_facts_do() -> None:
    # The workload's standalone copy (it runs where envcheck is not installed) and the facts'
    # own, kept apart so that the doctor's static tier never imports the smoke.
    from envcheck.contracts import facts

    assert get_args(facts.LibraryOrigin) == get_args(LibraryOrigin)


@pytest.mark.parametrize(
    ("candidates", "status", "reason"),
    [
        ([], "absent", "no libcudnn.so in pip packages"),
        ([LibraryCandidate("/a/libcudnn.so.9", error="bad ELF")], "error", "none could be loaded"),
        (
            [
                LibraryCandidate("/a/libcudnn.so.9", "9.5.1", "pip"),
                LibraryCandidate("/b/libcudnn.so.9", "9.5.1", "system"),
            ],
            "ok",
            "duplicate copies of 9.5.1",
        ),
    ],
    ids=["nothing", "unloadable", "duplicate"],
)
def test_library_facts(candidates: list[LibraryCandidate], status: str, reason: str) -> None:
    facts = cuda_libs.library_facts(cuda_libs.CUDNN, candidates)
    assert facts.status == status
    assert reason in (facts.reason or "")


# Surrogates too (undecodable file names), but no high+low pair: JSON reads that as one char.
ANY_TEXT = st.text(st.characters(blacklist_categories=())).filter(
    lambda s: not re.search("[\ud800-\udbff][\udc00-\udfff]", s)
)


@given(st.dictionaries(ANY_TEXT, st.one_of(st.none(), st.booleans(), st.integers(), ANY_TEXT)))
def test_child_records_are_one_ascii_json_line(record: dict[str, str | int | bool | None]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _cuda_child.emit(record)
    line = out.getvalue()
    assert line.isascii() and line.count("\n") == 1 and line.endswith("\n")
    assert json.loads(line) == record


def _run(out: str, returncode: int = 0, failure: str | None = None) -> cuda_driver.ChildRun:
    return cuda_driver._parse_run(out.encode(), b"", returncode, failure, 1.5)


def test_child_output_with_a_library_that_prints_is_still_read() -> None:
    run = _run(
        'noise from a library\n{"step": "driver-load", "begin": true}\n'
        '{"step": "driver-load", "version": 12020, "library": "/l/libcuda.so.1"}\n'
        '{"step": "driver", "begin": true}\n{"step": "driver", "device_count": 4}\n'
    )
    facts = cuda_driver.driver_facts(run)
    assert (facts.status, facts.version, facts.device_count, facts.library) == (
        "ok",
        "12.2",
        4,
        "/l/libcuda.so.1",
    )


def test_child_killed_while_loading_a_library_leaves_the_driver_unknown() -> None:
    run = _run('{"step": "library", "path": "/x/libcudnn.so.9", "begin": true}\n', returncode=-11)
    assert (run.failure, run.detail) == ("crashed", "killed by SIGSEGV")
    facts = cuda_driver.driver_facts(run)
    assert facts.status == "unknown" and "/x/libcudnn.so.9" in (facts.reason or "")


def test_child_timeout_during_dlopen_of_libcuda() -> None:
    run = _run('{"step": "driver-load", "begin": true}\n', failure="timeout")
    facts = cuda_driver.driver_facts(run)
    assert (facts.status, facts.error) == ("error", "timeout")
    assert "dlopen(libcuda.so.1) did not return within 1.5 s" in (facts.reason or "")


def test_child_that_cannot_start_is_a_probe_failure() -> None:
    run = cuda_driver.ChildRun(failure="failed", detail="cannot start python3: no such file")
    facts = cuda_driver.driver_facts(run)
    assert (facts.status, facts.error) == ("error", "probe-failed")


def test_fake_build_without_gcc_fails_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture turns this into pytest.fail: a missing gcc must never skip the probe tests."""
    from tests import fakenv

    monkeypatch.setenv("PATH", str(tmp_path))  # no gcc on it
    with pytest.raises(fakenv.FakeBuildError, match="gcc is not installed"):
        fakenv.build(tmp_path / "out")


@pytest.mark.fakegpu
def test_the_cuda_child_runs_on_the_injected_variables(
    fake_nvidia: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CUDA driver child is a process of its own: given the command's LD_LIBRARY_PATH and
    profile, it loads the fake libcuda the process itself never sees (it once got the
    process's variables). NVML, loaded in this process, still meets the process's driver
    (envcheck/contracts/command_env.py), so no fake library is ever loaded here."""
    fake = fake_nvidia("h100-580-lent")
    for name in ("LD_LIBRARY_PATH", "FAKE_NVIDIA_PROFILE", "ENVCHECK_DRIVER_ROOT"):
        monkeypatch.delenv(name, raising=False)
    injected = {
        **ENV,
        "LD_LIBRARY_PATH": fake["LD_LIBRARY_PATH"],
        "FAKE_NVIDIA_PROFILE": fake["FAKE_NVIDIA_PROFILE"],
    }
    run = run_envcheck(["doctor", "--no-smoke", "--json"], env=injected)
    assert "Traceback" not in run.stderr, run.stderr
    cuda = json.loads(run.stdout)["host"]["cuda_driver"]
    assert (cuda["status"], cuda["version"], cuda["device_count"]) == ("ok", "13.0", 1), cuda
