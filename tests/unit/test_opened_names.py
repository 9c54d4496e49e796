"""Which names the probe's child opens for a GPU build, and how it reads what the child said:
files under tmp_path and recorded child lines, no library loaded."""

from __future__ import annotations

import json
from pathlib import Path

from envcheck.probe.cuda_driver import _parse_run
from envcheck.probe.cuda_libs import dynload_names, opened_library


def test_every_name_a_folder_holds_and_the_unversioned_one_pip_folders_first(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site-packages"
    pip = site / "nvidia" / "cublas" / "lib"
    pip.mkdir(parents=True)
    (pip / "libcublas.so.12").write_bytes(b"")
    (pip / "libcublasLt.so.12").write_bytes(b"")
    ld = tmp_path / "ld"
    ld.mkdir()
    (ld / "libnccl.so.2").write_bytes(b"")
    (ld / "libcublas.so.11.11.3.6").write_bytes(b"")  # a file name, not a name anyone opens
    names = dict(dynload_names([str(site)], {"LD_LIBRARY_PATH": str(ld)}, []))
    assert names["libcublas.so"] == [str(pip)] and names["libcublas.so.12"] == [str(pip)]
    assert "libcublasLt.so.12" in names and "libcublas.so.11.11.3.6" not in names
    assert names["libnccl.so.2"] == [] and names["libnccl.so"] == []
    assert {"libcufft.so", "libcurand.so", "libcusolver.so", "libcusparse.so"} <= set(names)


def test_the_childs_lines_read_as_loaded_absent_error_or_not_probed() -> None:
    missing = "cannot open shared object file: No such file or directory"
    lines: list[dict[str, str | bool]] = [
        {"path": "libcublas.so", "begin": True},
        {"path": "libcublas.so", "error": f"libcublas.so: {missing}"},
        {"path": "libcusolver.so", "begin": True},
        {"path": "libcusolver.so", "error": f"libnvJitLink.so.12: {missing}"},
        {"path": "libcufft.so", "begin": True},
        {"path": "libcufft.so", "file": "/usr/local/cuda/lib64/libcufft.so.10", "origin": "loader"},
        {"path": "libnccl.so", "begin": True},
    ]
    out = "\n".join(json.dumps({"step": "open", **line}) for line in lines).encode()
    run = _parse_run(out, b"", -9, "timeout", 5.0)
    assert opened_library("libcublas.so", run).status == "absent"
    solver = opened_library("libcusolver.so", run)
    assert solver.status == "error" and "libnvJitLink.so.12" in (solver.reason or "")
    fft = opened_library("libcufft.so", run)
    assert fft.status == "ok" and fft.origin == "loader" and fft.path
    nccl = opened_library("libnccl.so", run)
    assert nccl.status == "unknown" and "while loading it" in (nccl.reason or "")


def test_a_pip_cuda_builds_own_requirements_are_read_with_their_markers(tmp_path: Path) -> None:
    from envcheck.probe.interpreter import Interpreter
    from envcheck.probe.paddle_build import probe_paddle
    from tests.paddle_versions import VERSION_331_CU126, make_site

    site = make_site(tmp_path, VERSION_331_CU126, "paddlepaddle_gpu-3.3.1")
    (site / "paddlepaddle_gpu-3.3.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: paddlepaddle-gpu\nVersion: 3.3.1\n"
        "Requires-Dist: numpy>=1.21\n"
        'Requires-Dist: nvidia-cublas-cu12==12.6.4.1; platform_system == "Linux"\n'
        'Requires-Dist: nvidia-cudnn-cu12==9.5.1.17; platform_system == "Windows"\n'
        "Requires-Dist: nvidia-nccl-cu12 (==2.25.1)\n"
    )
    target = Interpreter("/srv/venv/bin/python", "/srv/venv", (str(site),), "3.11.2")
    facts = probe_paddle(target)
    assert facts.cuda_requirements == ("nvidia-cublas-cu12==12.6.4.1", "nvidia-nccl-cu12==2.25.1")
