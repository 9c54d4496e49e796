"""Facts reach every build they cover, the installed build is judged by its own release, and the
advice agrees with the finding. One test per class of wrong verdict, each from its own public
evidence (cited); the matrix is the shipped one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.matrix.scope import covers_release, one_build, release_in_scope
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s
from tests.inprocess import run_envcheck

MATRIX = load_matrix()

GTX1080 = {
    "index": 0,
    "name": "NVIDIA GeForce GTX 1080",
    "compute_capability": "6.1",
    "memory_total_mib": 8192,
}
H800 = {"index": 0, "name": "NVIDIA H800", "compute_capability": "9.0", "memory_total_mib": 81559}
M40 = {"index": 0, "name": "Tesla M40", "compute_capability": "5.2", "memory_total_mib": 12288}


def paddle(version: str, cuda: str, cudnn: str, archs: list[int] | None = None) -> dict[str, Any]:
    return {
        "status": "ok",
        "package": "paddlepaddle-gpu",
        "version": version,
        "cuda": cuda,
        "cudnn": cudnn,
        "compiled_cuda_archs": archs,
        "with_pip_cuda_libraries": version.startswith("3"),
    }


def doctor(host_doc: dict[str, Any], paddle: str | None = None, expect: bool = False) -> Report:
    host = host_from_document(host_doc)
    image = select_image(host, MATRIX, paddle=paddle)
    ctx = Context(host=host, matrix=MATRIX, image=image, expect_gpu=expect)
    return Report(host, tuple(judge(ctx)), image)


def found(report: Report) -> dict[str, str]:
    return {f.id: f.severity for f in report.findings}


def the(report: Report, id_: str) -> Any:
    return next(f for f in report.findings if f.id == id_)


def all_text(report: Report) -> str:
    return " ".join(f"{f.message} {f.fix or ''}" for f in report.findings)


# -- a fact of a release line reaches every member ------------------------------------------------


def test_a_250_post117_wheel_on_a_gtx1080_is_missing_its_arch_by_the_25_line_fact_paddle55715() -> (
    None
):
    # Paddle#55715: 2.5.0 post117 on a CC 6.1 GPU: "not compatible with Paddle installation with
    # arch: 70 75 80 86" (Paddle#56683: the same on Ubuntu with a GTX 1080). The matrix has rows
    # for 2.5.2 only; the fact covers the 2.5 line's CUDA 11 wheels.
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[GTX1080],
            paddle=paddle("2.5.0.post117", "11.7", "8.4.1"),
        )
    )
    missing = the(r, "paddle.arch-missing")
    assert missing.severity == "fail" and int(r.exit_status) == 1
    assert "70 75 80 86" in missing.message
    assert any("release line 2.5.x, CUDA 11 builds" in f for f in missing.observed["facts"])


def test_a_300rc_cu118_on_an_h800_lacks_sm90_by_the_3x_cu118_fact_paddlex3853() -> None:
    # PaddleX#3853: an H800 on the 3.0.0rc0 cu118 image gives garbled output; PaddleMIX#312: a
    # maintainer, "h100/h800 need the CUDA 12 Paddle build". A pre-release belongs to 3.x.
    r = doctor(
        s.host(
            driver=s.driver("535.161.08", "12.2"),
            gpus=[H800],
            paddle=paddle("3.0.0rc0", "11.8", "8.9.6", archs=[]),
        )
    )
    missing = the(r, "paddle.arch-missing")
    assert missing.severity == "fail" and "sm_90 missing" in missing.message
    assert any("Paddle 3.x, CUDA 11.8 builds" in f for f in missing.observed["facts"])


def test_explain_says_which_facts_and_scopes_decided_the_arch_verdicts(tmp_path: Path) -> None:
    host = s.host(
        driver=s.driver("535.104.05", "12.2"),
        gpus=[GTX1080],
        paddle=paddle("2.5.0.post117", "11.7", "8.4.1"),
    )
    (tmp_path / "facts.json").write_text(json.dumps(host))
    out = run_envcheck(
        ["doctor", "--facts", "facts.json", "--no-smoke", "--explain", "--no-color"],
        cwd=tmp_path,
    )
    assert "decided by: compiled for 70 75 80 86 (fact of release line 2.5.x" in out.stdout
    assert "arch facts:" in out.stdout  # the chosen image's, under its why


# -- the installed release's own floor -------------------------------------------------------------


def test_a_cc52_card_on_an_installed_300_fails_whatever_image_is_chosen_paddle74088() -> None:
    # Paddle#74088: a GTX 980 Ti (CC 5.2) on Linux with paddlepaddle-gpu==3.0.0: "not compatible
    # with Paddle installation with arch: 60 61 70 75 80 86", then CUDA error 209. Paddle 3.0
    # needs a GPU of compute capability over 6.0 (its docs: "超过 6.0", D-dev); the chosen image
    # may be an older release that still runs a Maxwell card, the installed build does not.
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[M40],
            paddle=paddle("3.0.0", "11.8", "8.9.6", archs=[]),
        )
    )
    low = the(r, "paddle.cc-too-low")
    assert low.severity == "fail" and int(r.exit_status) == 1
    assert "needs at least 6.0" in low.message and "release 3.0.0" in low.message


def test_a_pre_release_takes_the_floor_of_its_line() -> None:
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[M40],
            paddle=paddle("3.0.0b1", "11.8", "8.6.0", archs=[]),
        )
    )
    assert "release line 3.0.x" in the(r, "paddle.cc-too-low").message


# -- a GPU build with no usable driver -------------------------------------------------------------


def test_a_gpu_build_in_a_container_without_the_nvidia_runtime_is_the_silent_cpu_fallback() -> None:
    # Paddle#33540: a container started without the NVIDIA runtime: "You are using GPU version
    # Paddle, but your CUDA device is not set properly. CPU device will be used by default."
    r = doctor(
        s.host(
            driver={"status": "absent", "reason": "libnvidia-ml.so.1 not found", "gpus_present": 2},
            paddle=paddle("3.0.0", "11.8", "8.9.6", archs=[]),
        )
    )
    f = the(r, "paddle.gpu-build-no-driver")
    assert f.severity == "fail" and int(r.exit_status) == 1
    assert "install the NVIDIA driver" in f.fix and "--gpus all" in f.fix


def test_a_gpu_build_on_a_machine_without_gpu_needs_the_cpu_build_paddle74302() -> None:
    # Paddle#74302: paddlepaddle-gpu 3.0.0 on a CPU machine errors even with device='cpu';
    # Paddle#75290, a maintainer: install the CPU version.
    r = doctor(
        s.host(
            driver={"status": "absent", "reason": "libnvidia-ml.so.1 not found", "gpus_present": 0},
            paddle=paddle("3.0.0", "12.6", "9.5.1", archs=[]),
        )
    )
    f = the(r, "paddle.gpu-build-no-gpu")
    assert f.severity == "fail" and int(r.exit_status) == 1
    assert "paddlepaddle==" in f.fix


# -- the advice agrees with the finding ------------------------------------------------------------


def test_a_gtx1080_on_320_cu129_is_told_to_install_the_cu118_variant_paddlex4682() -> None:
    # PaddleX#4682: the GTX 1080 gets CUDA error 209 on 3.2.0 cu129 and runs 3.2.0 cu118.
    r = doctor(
        s.host(
            driver=s.driver("576.57", "12.9"),
            gpus=[GTX1080],
            paddle=paddle("3.2.0", "12.9", "9.9.0", archs=[]),
        )
    )
    fix = the(r, "paddle.arch-missing").fix
    assert "/stable/cu118/" in fix and "paddlepaddle-gpu==3.2.0" in fix
    assert "/stable/cu129/" not in fix


# -- multi-GPU nodes, and words ---------------------------------------------------------------------


def test_eight_identical_p40s_are_one_finding() -> None:
    p40s = [
        {"index": i, "name": "Tesla P40", "compute_capability": "6.1", "memory_total_mib": 24576}
        for i in range(8)
    ]
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=p40s,
            paddle=paddle("3.2.0", "12.9", "9.9.0", archs=[]),
        )
    )
    missing = [f for f in r.findings if f.id == "paddle.arch-missing"]
    assert len(missing) == 1 and missing[0].message.startswith("GPU 0–7 Tesla P40 is sm_61")
    assert missing[0].observed["indices"] == list(range(8))
    gpu_lines = [f for f in r.findings if f.layer == "gpu"]
    assert [f.message for f in gpu_lines] == [
        "GPU 0–7 Tesla P40, compute capability 6.1, 24576 MiB"
    ]


def test_no_python_none_in_any_text_when_a_saved_report_has_no_library_path() -> None:
    r = doctor(
        s.host(
            driver=s.driver("460.32.03", "11.2"),
            gpus=[s.T4],
            cuda_runtime={"status": "ok", "version": "11.2"},
            cudnn={"status": "ok", "version": "8.1.1"},
            paddle=paddle("2.6.2", "11.2", "8.2.1"),
        )
    )
    assert "None" not in all_text(r)


def test_arch_unverified_says_what_is_missing_not_that_3x_records_nothing() -> None:
    # 3.x always writes compiled_cuda_archs; a saved report without it lacks the list.
    r = doctor(
        s.host(
            driver=s.driver("575.57.08", "12.9"),
            gpus=[s.A100],
            paddle=paddle("3.3.1", "12.9", "9.9.0", archs=None),
        )
    )
    text = the(r, "paddle.arch-unverified").message
    assert "does not record its compiled archs" not in text
    assert "the saved facts lack its compiled_cuda_archs list" in text


# -- the library names the build will open ---------------------------------------------------------

CUDNN8_RUNTIME_ONLY = {
    "status": "ok",
    "version": "8.9.7",
    "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8",
    "origin": "system",
    "unversioned_probed": True,
}


def test_a_post_wheel_with_only_libcudnn_so_8_cannot_load_cudnn_paddle30694() -> None:
    # Paddle#30694: cuDNN 8 in /usr/lib/x86_64-linux-gnu as libcudnn.so.8 only; the non-pip
    # build dlopens libcudnn.so ("Cannot load cudnn shared library") until
    # `ln -s …/libcudnn.so.8 …/libcudnn.so`. Paddle#50195: the same on 2.4 (CUDA 11.7).
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            cuda_runtime={
                "status": "ok",
                "version": "11.7",
                "path": "/usr/local/cuda/lib64/libcudart.so.11.0",
            },
            cudnn=CUDNN8_RUNTIME_ONLY,
            paddle=paddle("2.5.2.post117", "11.7", "8.4.1"),
        )
    )
    f = the(r, "cudnn.unversioned-missing")
    assert f.severity == "fail" and int(r.exit_status) == 1
    assert "ln -s libcudnn.so.8 /usr/lib/x86_64-linux-gnu/libcudnn.so" in f.fix


def test_a_pip_cuda_build_opens_the_versioned_name_and_is_not_flagged() -> None:
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            cudnn=CUDNN8_RUNTIME_ONLY,
            paddle=paddle("3.0.0", "11.8", "8.9.6", archs=[80]),
        )
    )
    assert "cudnn.unversioned-missing" not in found(r)


def test_the_probe_finds_the_unversioned_link_only_where_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envcheck.probe import cuda_libs
    from envcheck.probe.cuda_libs import CUDNN, unversioned_on_path

    # this machine's own /usr/local/cuda stays out of it
    monkeypatch.setattr(cuda_libs, "CUDA_HOME_DEFAULT", str(tmp_path / "no-toolkit"))
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libcudnn.so.8").write_bytes(b"")
    env = {"LD_LIBRARY_PATH": str(lib), "CUDA_HOME": str(tmp_path / "none")}
    assert unversioned_on_path(CUDNN, env, []) is None
    (lib / "libcudnn.so").symlink_to("libcudnn.so.8")
    assert unversioned_on_path(CUDNN, env, []) == str(lib / "libcudnn.so")


def test_a_gtx1080_without_paddle_gets_the_variant_known_to_run_it_not_331_cu129_paddlex4682() -> (
    None
):
    # 3.3.1 cu129: nothing shows it holds sm_61, and the report shows sm_61 missing from the same
    # variant of 3.2.0; 3.2.0 cu118 runs the GTX 1080 (PaddleX#4682). The image and the install
    # command agree with the finding.
    r = doctor(
        s.host(
            driver=s.driver("576.57", "12.9"),
            gpus=[GTX1080],
            paddle=paddle("3.2.0", "12.9", "9.9.0", archs=[]),
        )
    )
    assert r.image is not None and r.image.tag == "3.2.0-gpu-cuda11.8-cudnn8.9"
    assert r.image.arch_known is True
    assert "sm_61 missing from Paddle 3.2.0 cu129" in (r.image.reason or "")
    assert "/stable/cu118/" in (r.image.pip_command or "")
    assert "/stable/cu118/" in the(r, "paddle.arch-missing").fix


def test_an_a100_without_paddle_still_gets_the_newest_release() -> None:
    # No report shows sm_80 missing anywhere: the newest confirmed release stays the default.
    r = doctor(s.host(driver=s.driver("576.57", "12.9"), gpus=[s.A100]))
    assert r.image is not None and r.image.paddle == "3.3.1"


def test_eight_k80s_below_the_floor_are_one_finding() -> None:
    k80s = [dict(s.K80, index=i) for i in range(8)]
    r = doctor(s.host(driver=s.driver("470.82.01", "11.4"), gpus=k80s), paddle="3.3.1")
    low = [f for f in r.findings if f.id == "gpu.cc-too-low"]
    assert len(low) == 1 and low[0].message.startswith(
        "GPU 0–7 Tesla K80 has compute capability 3.7"
    )


# -- the matrix made current ------------------------------------------------------------------------


def test_a_260_cu118_wheel_on_an_h100_lacks_sm90_by_the_26_line_fact_paddlehelix369() -> None:
    # The 2.6 docs map sm_90 to CUDA12 only (release/2.6 Tables.md); PaddleMIX#312, a maintainer
    # in the 2.6.0 era: "h100/h800 need the CUDA12 Paddle build"; PaddleHelix#369: H100 with
    # Runtime API 11.8, "compute capability ... 90, which is not supported by Paddle".
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.H100],
            paddle=paddle("2.6.0", "11.8", "8.6.0"),
        )
    )
    missing = the(r, "paddle.arch-missing")
    assert missing.severity == "fail" and "sm_90 missing" in missing.message
    assert any("release line 2.6.x, CUDA 11 builds" in f for f in missing.observed["facts"])


def test_the_33_docs_table_shows_hopper_on_the_cuda12_builds_docs7684() -> None:
    # PaddlePaddle/docs#7684 (the 3.3 install docs): Hopper sm_90 -> CUDA 12.6, 12.9, 13.0.
    r = doctor(s.host(driver=s.driver("575.57.08", "12.9"), gpus=[s.H100]))
    assert r.image is not None and r.image.tag == "3.3.1-gpu-cuda12.9-cudnn9.9"
    assert r.image.arch_known is True and r.image.arch_note is None
    assert any("DOCS#7684" in f for f in r.image.arch_facts)


# -- what a line covers (property) ---------------------------------------------------------------


@given(
    patch=st.integers(0, 9),
    post=st.sampled_from(["", ".post112", ".post117", ".post120"]),
    pre=st.sampled_from(["", "b1", "rc0", "rc2", ".dev20250717"]),
)
def test_every_wheel_of_the_25_line_meets_the_25_cuda11_fact(
    patch: int, post: str, pre: str
) -> None:
    # pre-releases, Paddle's .postNNN CUDA wheels and nightlies belong to the line
    version = f"2.5.{patch}{pre}{post}" if not pre.startswith(".dev") else f"2.5.{patch}{pre}"
    fact = next(f for f in MATRIX.arch_facts if f.id == "paddle2.5-cuda11-list")
    assert covers_release(fact, version)
    scoped = release_in_scope(MATRIX, version)
    assert scoped is not None and scoped[0].version.startswith("2.5.")


@pytest.mark.parametrize(
    ("requirement", "alone"),
    [
        ("paddlepaddle==3.3.1", True),  # the CPU build: on Paddle's CPU index and on PyPI
        ("paddlepaddle==2.6.2", True),
        ("paddlepaddle-gpu==2.6.2", True),  # the cu118 build PyPI carries; the others are .postNNN
        ("PaddlePaddle_GPU==2.6.2", True),  # a name as pip compares it
        ("paddlepaddle-gpu==2.6.2.post117", True),
        ("paddlepaddle-gpu==3.3.1", False),  # cu118, cu126, cu129, cu130: one version, 4 builds
        ("paddlepaddle-gpu==9.9.9", False),  # no row: nothing known of it
    ],
)
def test_a_pinned_requirement_is_one_build_only_where_no_other_variant_shares_it(
    requirement: str, alone: bool
) -> None:
    """Where Paddle's index does not answer, the fix may take a build from pip's configured index
    only when the pin itself says which build it is: a 3.x GPU version names a build per CUDA
    variant, and only its index tells them apart."""
    assert one_build(MATRIX, requirement) is alone
