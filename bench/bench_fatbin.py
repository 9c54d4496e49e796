"""The fatbin reader on the real PyPI `paddlepaddle-gpu==2.6.2` wheel (cp311, 759 MB;
its libpaddle.so is 467 MB, its libphi.so 1.96 GB): the SASS/PTX archs it finds, the time it takes
and the memory it uses. The suite tests the reader on small ELF files; this script measures it on
what a 2.x host really has installed.

    .venv/bin/python bench/bench_fatbin.py                 # pip download into a temporary folder
    .venv/bin/python bench/bench_fatbin.py --wheel FILE    # an already downloaded wheel
    .venv/bin/python bench/bench_fatbin.py --hostile       # sparse hostile ELF files, no download

The wheel is downloaded with pip (`--no-deps`, the cp311 manylinux wheel) and its two libraries
extracted to the same temporary folder (about 3.2 GB in all; the script checks the free space
first and removes the folder at the end). Expected: SASS 61 70 75 80 86, no PTX (W-262, the
matrix's 2.6.2 cu118 row).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envcheck.probe.fatbin import library_archs, read_fatbin

LIBRARIES = ("paddle/base/libpaddle.so", "paddle/libs/libphi.so")
NEEDED_BYTES = 4 * 1024**3  # the wheel, its two libraries, headroom


def download(folder: Path) -> Path:
    free = shutil.disk_usage(folder).free
    if free < NEEDED_BYTES:
        sys.exit(f"only {free / 1024**3:.1f} GB free in {folder}; give --wheel FILE instead")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "paddlepaddle-gpu==2.6.2", "--no-deps"]
        + ["--only-binary=:all:", "--python-version", "3.11", "--platform", "manylinux1_x86_64"]
        + ["-d", str(folder), "--quiet"],
        check=True,
    )
    return next(folder.glob("paddlepaddle_gpu-2.6.2-*.whl"))


def extract(wheel: Path, folder: Path) -> list[Path]:
    paths = []
    with zipfile.ZipFile(wheel) as z:
        for name in LIBRARIES:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(name) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 16 * 1024 * 1024)
            paths.append(target)
    return paths


def measure(paths: list[Path]) -> None:
    for path in paths:
        with open(path, "rb") as f:
            found = read_fatbin(f)
        sass, ptx = found.compiled()
        counts = " ".join(f"sm_{a}×{n}" for a, n in sorted(found.sass.items()))
        print(f"{path.name} ({path.stat().st_size / 1e6:.0f} MB): entries {counts}")
        print(
            f"  compiled: SASS {' '.join(map(str, sass)) or '-'}; PTX {' '.join(map(str, ptx)) or '-'}"
        )
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    started = time.perf_counter()
    result = library_archs([str(p) for p in paths])
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    total = sum(p.stat().st_size for p in paths)
    print(f"library_archs(libpaddle.so, libphi.so) = {result}")
    print(
        f"time {elapsed:.3f} s for {total / 1e9:.2f} GB of libraries; peak Python allocations "
        f"{peak / 1024:.0f} KiB; process max RSS {rss_after / 1024:.0f} MiB "
        f"(+{(rss_after - rss_before) / 1024:.1f} MiB while reading)"
    )


def hostile(folder: Path) -> None:
    """Two sparse files whose headers claim far more than they hold (3 GiB of fatbin padding; a
    section-header table of 65,279 entries of 65,000 bytes): time and memory of reading each,
    which were 116 s and 4.2 GB of RSS before the reader bounded them."""
    from tests.fatbin_files import hostile_elf

    padding, table = folder / "libpadding.so", folder / "libtable.so"
    hostile_elf(padding, fatbin_at=4096, fatbin_size=3 << 30, size=4096 + (3 << 30))
    size = 4096 + 65_279 * 65_000
    hostile_elf(table, fatbin_at=0, fatbin_size=0, size=size, shentsize=65_000, shnum=65_279)
    for path in (padding, table):
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        result = library_archs([str(path)])
        elapsed = time.perf_counter() - started
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(
            f"{path.name} (claims {path.stat().st_size / 1e9:.1f} GB): {result} in {elapsed:.3f} s, "
            f"max RSS +{(rss_after - rss_before) / 1024:.1f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a downloaded paddlepaddle-gpu 2.6.2 wheel")
    parser.add_argument("--hostile", action="store_true", help="only the hostile ELF files")
    args = parser.parse_args()
    if args.hostile:
        with tempfile.TemporaryDirectory(prefix="bench-fatbin-") as tmp:
            hostile(Path(tmp))
        return
    with tempfile.TemporaryDirectory(prefix="bench-fatbin-") as tmp:
        folder = Path(tmp)
        wheel = args.wheel or download(folder)
        print(f"wheel: {wheel.name} ({wheel.stat().st_size / 1e6:.0f} MB)")
        measure(extract(wheel, folder))


if __name__ == "__main__":
    main()
