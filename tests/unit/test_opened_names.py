"""Which names the probe's child opens for a GPU build, and how it reads what the child said:
files under tmp_path and recorded child lines, no library loaded."""

from __future__ import annotations

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
    out = b"\n".join(
        [
            b'{"step": "open", "path": "libcublas.so", "begin": true}',
            b'{"step": "open", "path": "libcublas.so", "error": "libcublas.so: cannot open shared'
            b' object file: No such file or directory"}',
            b'{"step": "open", "path": "libcusolver.so", "begin": true}',
            b'{"step": "open", "path": "libcusolver.so", "error": "libnvJitLink.so.12: cannot'
            b' open shared object file: No such file or directory"}',
            b'{"step": "open", "path": "libcufft.so", "begin": true}',
            b'{"step": "open", "path": "libcufft.so", "file": "/usr/local/cuda/lib64/libcufft.so'
            b'.10.9.0.58", "origin": "loader"}',
            b'{"step": "open", "path": "libnccl.so", "begin": true}',
        ]
    )
    run = _parse_run(out, b"", -9, "timeout", 5.0)
    assert opened_library("libcublas.so", run).status == "absent"
    solver = opened_library("libcusolver.so", run)
    assert solver.status == "error" and "libnvJitLink.so.12" in (solver.reason or "")
    fft = opened_library("libcufft.so", run)
    assert fft.status == "ok" and fft.origin == "loader" and fft.path
    nccl = opened_library("libnccl.so", run)
    assert nccl.status == "unknown" and "while loading it" in (nccl.reason or "")
