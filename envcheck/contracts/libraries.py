"""The CUDA libraries a Paddle GPU build opens by name besides the runtime and cuDNN, as its
dynamic loader names them (`paddle/phi/backends/dynload/dynamic_loader.cc`: GetCublasDsoHandle,
GetCublasLtDsoHandle, GetCUFFTDsoHandle, GetCurandDsoHandle, GetCusolverDsoHandle,
GetCusparseDsoHandle, GetNCCLDsoHandle). The probe opens their names; the matrix says which names
each build opens (`matrix/cuda_libraries.toml`); both read this list.
"""

from __future__ import annotations

# stem (the file is lib<stem>.so[.N]) -> the name people know it by
DYNLOAD_STEMS: dict[str, str] = {
    "cublas": "cuBLAS",
    "cublasLt": "cuBLASLt",
    "cufft": "cuFFT",
    "curand": "cuRAND",
    "cusolver": "cuSOLVER",
    "cusparse": "cuSPARSE",
    "nccl": "NCCL",
}

# NVIDIA's pip package (its name without the `-cu12` of its CUDA family) -> the libraries above
# it holds: what a pip-CUDA build's nvidia-* requirements bring.
PIP_PACKAGES: dict[str, tuple[str, ...]] = {
    "nvidia-cublas": ("cublas", "cublasLt"),
    "nvidia-cufft": ("cufft",),
    "nvidia-curand": ("curand",),
    "nvidia-cusolver": ("cusolver",),
    "nvidia-cusparse": ("cusparse",),
    "nvidia-nccl": ("nccl",),
}
