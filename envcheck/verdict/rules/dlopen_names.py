"""The library names the installed build will actually open.

A pip-CUDA build (3.x `with_pip_cuda_libraries`) opens the versioned `libcudnn.so.8` / `.so.9`
from `nvidia/cudnn/lib`. A non-pip build (the 2.x `.postNNN` and PyPI wheels, source builds)
`dlopen`s the unversioned `libcudnn.so` (DYNLOAD, compat_facts §5a): a host with only
`libcudnn.so.8` (Ubuntu's runtime package) loads cuDNN 8.9 by its versioned name, yet Paddle fails
with "Cannot load cudnn shared library" (§7 row 18).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import PaddleFacts
from envcheck.contracts.findings import Finding, fail
from envcheck.verdict.fixes import cudnn_link_fix
from envcheck.verdict.rules.libraries import pip_cuda_libraries

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


def check_unversioned_cudnn(ctx: Context) -> Iterable[Finding]:
    p = ctx.host.paddle
    dnn = ctx.host.cudnn
    if p.status != "ok" or not p.cuda or dnn.status != "ok" or not dnn.version:
        return
    if not dnn.unversioned_probed or dnn.unversioned or not _opens_unversioned(p):
        return
    yield fail(
        "cudnn.unversioned-missing",
        f"cuDNN {dnn.version} loads as {dnn.path}, but Paddle {p.version} (CUDA {p.cuda}) is not a "
        "pip-CUDA build: it opens the unversioned libcudnn.so, which no folder on its search path "
        'holds (Paddle: "Cannot load cudnn shared library")',
        fix=cudnn_link_fix(dnn.path, dnn.version),
        layer="cuda",
        found=dnn.path,
    )


def _opens_unversioned(p: PaddleFacts) -> bool:
    """True for a build that dlopens the unversioned names: its record says it is not a pip-CUDA
    build, or it is a 2.x build (2.x records nothing and ships no nvidia-* requirements)."""
    return pip_cuda_libraries(p) is False
