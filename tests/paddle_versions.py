"""Paddle's generated `paddle/version/__init__.py`, recorded from real wheels, and a site-packages
that holds one: what the probe reads (envcheck/probe/paddle_build.py) without importing Paddle."""

from __future__ import annotations

from pathlib import Path

# Exact head of paddle/version/__init__.py in the PyPI paddlepaddle 3.3.1 CPU wheel (compat_facts §6b, W-331).
VERSION_331_CPU = """\
full_version     = '3.3.1'
major            = '3'
minor            = '3'
patch            = '1'
nccl_version     = '0'
rc               = '0'
cuda_version     = 'False'
cudnn_version    = 'False'
hip_version      = None
xpu_xre_version  = 'False'
xpu_xccl_version = 'False'
xpu_xhpc_version = 'False'
is_tagged        = True
commit           = '7688495538f4d6c1893f084dd238a402e8f68ab6'
with_mkl         = 'ON'
with_hml         = ''
cinn_version     = 'False'
tensorrt_version = 'None'
with_pip_cuda_libraries = 'ON'
with_pip_tensorrt       = 'OFF'
compiled_cuda_archs     = []

def show():
    pass
"""

# The PyPI paddlepaddle-gpu 2.6.2 cp311 wheel (W-262): no nccl, archs or pip-libraries fields.
VERSION_262_GPU = """\
full_version    = '2.6.2'
major           = '2'
minor           = '6'
patch           = '2'
rc              = '0'
cuda_version    = '11.8'
cudnn_version   = '8.6.0'
xpu_version     = 'False'
xpu_xccl_version = 'False'
istaged         = True
commit          = '8ce0de584c570589117e403322f3d1a0de6554e5'
with_mkl        = 'ON'
cinn_version    = 'False'
"""

VERSION_331_CU126 = (
    VERSION_331_CPU.replace("cuda_version     = 'False'", "cuda_version     = '12.6'")
    .replace("cudnn_version    = 'False'", "cudnn_version    = '9.5.1'")
    .replace("compiled_cuda_archs     = []", "compiled_cuda_archs     = [75, 80, 86, 89, 90]")
    .replace("nccl_version     = '0'", "nccl_version     = '22501'")
)


def make_site(tmp_path: Path, version_text: str, *dists: str) -> Path:
    site = tmp_path / "site-packages"
    (site / "paddle" / "version").mkdir(parents=True)
    (site / "paddle" / "version" / "__init__.py").write_text(version_text)
    for dist in dists:
        (site / f"{dist}.dist-info").mkdir()
    return site
