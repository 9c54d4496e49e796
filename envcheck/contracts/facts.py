"""What the probes found: frozen records (envcheck/contracts/record.py) that round-trip to JSON,
and the reader and writer of every record envcheck reads back from JSON (`from_dict`, `to_dict`):
facts, the smoke workload's line, a saved report's image and smoke.

The same rules judge a live host or a saved `host` object (bug reports, fleets, tests), so every
field is optional: a missing key means "unknown", an unknown key is ignored. Each layer carries a
`status` (`ok` / `absent` / `error`) and, when not ok, the `reason` in words.

A record is its own schema: its annotations are the JSON types, and its fields' metadata say the
rest, for the reader here and for the published JSON Schema (envcheck/contracts/json_schema.py):
- `check`: a value the rules parse, parsed on the way in (`_check`: "dotted", "cc", "pep440",
  "count", "archs");
- `optional`: the key may be absent, which reads as None, and None is written as absent (a key
  the writer only sometimes wrote, or a saved report older than the field);
- `description`: what the field means, for the published schema.
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from packaging.version import InvalidVersion, Version

from envcheck.contracts.record import MISSING, Field, field, fields, is_record, record
from envcheck.contracts.versions import VersionParseError, parse_compute_capability, parse_dotted

Status = Literal["ok", "absent", "error", "unknown"]
# Where the probe found a copy of a CUDA library (envcheck/probe/cuda_libs.py, in its search
# order). The smoke workload says it with the same words, from its own standalone copy
# (envcheck/smoke/workload/protocol.py: it runs where envcheck is not installed; a test keeps them
# equal).
LibraryOrigin = Literal["pip", "LD_LIBRARY_PATH", "system", "cuda-home"]


OPTIONAL: typing.Final = {"optional": True}  # field metadata: absent is None, None is absent


def _checked(check: str) -> Any:
    """An optional string field a saved document must spell right: the judge parses it."""
    return field(default=None, metadata={"check": check})


def _count(description: str | None = None) -> Any:
    return field(
        default=None,
        metadata={"check": "count", **({"description": description} if description else {})},
    )


@record
class PciGpu:
    """An NVIDIA display or 3D controller on the PCI bus: `lspci -nn -d 10de:` (sysfs `device`)."""

    address: str  # "0000:17:00.0"
    device_id: str  # "1b80": the PCI device id of vendor 10de, four lower-case hex digits
    # the kernel driver bound to it (`lspci -k`: "nvidia", "vfio-pci", "nouveau"); None: none
    bound_to: str | None = field(default=None, metadata=OPTIONAL)


@record
class DriverFacts:
    """`nvidia-smi --query-gpu=driver_version --format=csv` plus the CUDA version in its header."""

    status: Status = "unknown"
    version: str | None = _checked("dotted")  # user-space driver (NVML), as printed: "535.104.05"
    cuda: str | None = _checked("dotted")  # highest CUDA the driver supports: "12.2"
    kernel_module: str | None = None  # /proc/driver/nvidia/version
    nvml_version: str | None = None
    error: str | None = None  # NVML error constant, e.g. "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    reason: str | None = None
    library: str | None = None  # the libnvidia-ml file that answered
    gpus_present: int | None = _count(
        "NVIDIA GPUs seen without NVML (sysfs PCI, /proc/driver/nvidia/gpus) when NVML failed;"
        " null when not read"
    )
    kernel_module_flavor: Literal["open", "proprietary"] | None = field(
        default=None,
        metadata={
            **OPTIONAL,
            "description": "The kernel module /proc/driver/nvidia/version names: the open modules"
            " (Turing and newer only) or the proprietary ones (none of Blackwell)",
        },
    )
    pci_gpus: tuple[PciGpu, ...] | None = field(
        default=None,
        metadata={
            **OPTIONAL,
            "description": "NVIDIA GPUs on the PCI bus with their device ids, read when NVML lists"
            " none (a driver branch or module flavour that ignores them); null when not read",
        },
    )
    kernel_log: tuple[str, ...] | None = field(
        default=None,
        metadata={
            **OPTIONAL,
            "description": "The kernel log's last NVRM lines (kern.log), read with pci_gpus when"
            " readable; null when not read",
        },
    )

    @property
    def named(self) -> str:
        """ "driver 535.104.05", or what a saved document left out (never "None")."""
        return f"driver {self.version}" if self.version else "the driver, version not recorded,"


@record
class GpuHealth:
    """`nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT,ECC` and the driver's recovery action: each
    None where this GPU or driver cannot say (NOT_SUPPORTED on GeForce, on a GPU without ECC, on
    a driver older than the query), which is no problem."""

    remap_pending: bool | None = None  # a row remap waits for a GPU reset (A100 and newer)
    remap_failure: bool | None = None  # a row could not be remapped: replace the GPU
    retired_pages_pending: bool | None = None  # pages wait for a reset to be retired (older GPUs)
    ecc_volatile_uncorrected: int | None = _count(
        "uncorrectable ECC errors since the driver was loaded (volatile counter)"
    )
    recovery_action: str | None = field(
        default=None,
        metadata={
            "description": "the driver's NVML_FI_DEV_GET_GPU_RECOVERY_ACTION without its prefix"
            ' ("NONE", "GPU_RESET", "NODE_REBOOT", "DRAIN_P2P", "DRAIN_AND_RESET", …)'
        },
    )


@record
class GpuFacts:
    """`nvidia-smi --query-gpu=index,name,uuid,compute_cap,memory.total,mig.mode.current`."""

    index: int = field(default=0, metadata={"check": "count"})
    name: str | None = None
    uuid: str | None = None
    compute_capability: str | None = _checked("cc")  # "8.0"
    memory_total_mib: int | None = _count()
    mig_mode: bool | None = None  # current MIG mode enabled
    mig_instances: int | None = _count()  # MIG devices CUDA can use when MIG is on (nvitop's walk)
    process_query: str | None = (
        None  # which per-process query the driver supports ("v3", "v2", None)
    )
    health: GpuHealth | None = field(
        default=None,
        metadata={**OPTIONAL, "description": "memory health as NVML reports it; absent: not read"},
    )


@record
class CudaDriverFacts:
    """`cuInit(0)`, `cuDriverGetVersion`, `cuDeviceGetCount` through libcuda.so.1, in a subprocess."""

    status: Status = "unknown"
    version: str | None = _checked("dotted")  # "12.2"
    device_count: int | None = _count()
    error: str | None = None  # CUresult name, "timeout", "crashed"
    reason: str | None = None
    library: str | None = None


@record
class LibraryCandidate:
    """One copy of a CUDA library the search found, where, and its version."""

    path: str  # required: a candidate is a file
    version: str | None = _checked("dotted")
    origin: LibraryOrigin = "system"  # where the probe found it: a saved one is checked on load
    error: str | None = None


@record
class LibraryFacts:
    """A CUDA user-space library a Paddle process would load (libcudart, libcudnn)."""

    status: Status = "unknown"
    version: str | None = _checked("dotted")  # of the file that would be loaded
    path: str | None = None
    origin: LibraryOrigin | None = None
    candidates: tuple[LibraryCandidate, ...] = ()
    reason: str | None = None
    # The unversioned `libcudnn.so` that a non-pip build dlopens (2.x `.postNNN` wheels, source
    # builds: DYNLOAD), where LD_LIBRARY_PATH, the loader cache or CUDA_HOME holds one; None when
    # none does. `unversioned_probed` False: not looked for (a facts file saved before it).
    unversioned: str | None = None
    unversioned_probed: bool = False


@record
class CompatNote:
    """The ELF note `.note.cuda.fwd_compatibility` of a CUDA forward-compatibility libcuda: the
    JSON object NVIDIA writes there (NVIDIA/nvidia-container-toolkit
    `cmd/nvidia-cdi-hook/cudacompat/cuda-elf-header.go` reads the same)."""

    cuda: str | None = None  # "CUDA Version": the CUDA this libcuda brings, "13.1"
    drivers: tuple[int, ...] = ()  # "Driver": the host driver branches it runs on, (535, 580)
    devices: tuple[int, ...] = ()  # "Device": the device classes it supports (NVIDIA numbers)
    format: int | None = None  # "Format"


@record
class CompatLibrary:
    """A CUDA forward-compatibility libcuda (the cuda-compat package, `/usr/local/cuda/compat`)
    on the host, with its note."""

    path: str  # required: a library is a file
    version: str | None = _checked("dotted")  # the driver it comes from, from its file name
    note: CompatNote | None = None  # None: no note (older than the note, or not a compat libcuda)
    loaded: bool = False  # on the loader's path (LD_LIBRARY_PATH), or the libcuda CUDA loaded
    error: str | None = None  # why the file could not be read


@record
class OpenedLibrary:
    """One name a Paddle GPU build dlopens (`libcublas.so`, `libcufft.so.11`), opened in the probe's
    child as Paddle's loader opens it: the build's pip folders first, then the loader's search."""

    name: str  # required: the name is what was asked
    status: Status = "unknown"  # ok: it loaded; absent: the loader could not open it
    path: str | None = None  # the file that loaded, symlinks resolved
    origin: Literal["pip", "loader"] | None = None  # a pip folder of the build, or dlopen's search
    reason: str | None = None  # the loader's message (a missing file, or a missing dependency)


@record
class PaddleFacts:
    """`python -c "import paddle; paddle.version.show()"`, read from the file without importing."""

    status: Status = "unknown"
    package: str | None = None  # "paddlepaddle" (CPU) | "paddlepaddle-gpu"
    version: str | None = _checked("pep440")
    cuda: str | None = _checked("dotted")  # None for a CPU build
    cudnn: str | None = _checked("dotted")
    compiled_cuda_archs: tuple[int, ...] | None = field(  # None = not recorded (2.x)
        default=None, metadata={"check": "archs"}
    )
    # 2.x records no list: the SASS / PTX archs read from the `.nv_fatbin` of its libpaddle.so and
    # libphi.so (`envcheck.probe.fatbin`), so a saved report carries them. None = not read.
    fatbin_archs: tuple[int, ...] | None = field(default=None, metadata={"check": "archs"})
    fatbin_ptx: tuple[int, ...] | None = field(default=None, metadata={"check": "archs"})
    with_pip_cuda_libraries: bool | None = None
    nccl: str | None = None
    location: str | None = None
    python: str | None = None  # the target interpreter
    reason: str | None = None
    python_reason: str | None = field(
        default=None,
        metadata={
            "description": "Why `python` is the interpreter judged, in words: --python, the"
            " active venv, the active conda environment, envcheck's own interpreter (and why);"
            " None where not recorded (a facts file saved before this field)."
        },
    )
    # Both "paddlepaddle" and "paddlepaddle-gpu" overwrite each other's files.
    distributions: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": "The pip distributions that installed `paddle` (dist-info folders"
            " beside it), e.g. both paddlepaddle and paddlepaddle-gpu; empty when none was found"
            " or not recorded (a facts file saved before this field)."
        },
    )
    cuda_requirements: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "description": "The build's own nvidia-* requirements that apply on this machine"
            " (its dist-info METADATA `Requires-Dist`, as `name==version`): the CUDA libraries a"
            " pip-CUDA build brings; null when not read (no dist-info, a report saved before it)."
        },
    )


@record
class NvidiaPin:
    """One `Requires-Dist: nvidia-…` of an installed distribution (torch, vLLM, JAX, Paddle)."""

    by: str  # the distribution that requires it, by its canonical name: "torch"
    requirement: str  # as written: 'nvidia-cudnn-cu12==9.5.1.17; platform_system == "Linux"'
    by_version: str | None = None  # the requiring distribution's version


@record
class NvidiaWheels:
    """NVIDIA's `nvidia-*` wheels in the judged interpreter's site-packages, and who pins them:
    `pip list | grep nvidia-` and each framework's `Requires-Dist`, read from the dist-info
    folders without importing anything."""

    installed: dict[str, str] = field(default_factory=dict)  # canonical name -> version
    pins: tuple[NvidiaPin, ...] = ()


@record
class EngineFacts:
    """`docker version` / `docker info`: the container engine, if any."""

    status: Status = "unknown"
    version: str | None = None
    api_version: str | None = None
    runtimes: tuple[str, ...] = ()
    default_runtime: str | None = None
    nvidia_runtime: bool | None = None
    cdi_devices: tuple[str, ...] = ()
    host: str | None = None
    reason: str | None = None
    denied: bool | None = None  # the socket refused us (permission), as opposed to no answer
    context: str | None = None  # the docker context that named `host` (None: DOCKER_HOST/default)


@record
class MachineFacts:
    """The machine: host name, OS release, kernel, architecture, and envcheck's own Python."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    arch: str | None = None
    python: str | None = None


@record
class WslFacts:
    """Windows Subsystem for Linux: the kernel release names it (`…-microsoft-standard-WSL2`);
    the Windows driver's libraries are in /usr/lib/wsl/lib and the GPU is /dev/dxg."""

    version: int = field(default=2, metadata={"check": "count"})  # 1 or 2
    kernel: str | None = None  # the kernel release that names it
    library_dir: str | None = None  # /usr/lib/wsl/lib, where it exists
    libcuda: bool = False  # libcuda.so.1 in library_dir
    libnvidia_ml: bool = False  # libnvidia-ml.so.1 in library_dir
    dxg: bool = False  # /dev/dxg exists
    # libcuda / libnvidia-ml files of a Linux driver package inside the distribution
    linux_driver: tuple[str, ...] = ()


@record
class HostFacts:
    """Every fact about the host, one field per layer: what the rules judge."""

    driver: DriverFacts = field(default_factory=DriverFacts)
    gpus: tuple[GpuFacts, ...] = ()
    cuda_driver: CudaDriverFacts = field(default_factory=CudaDriverFacts)
    cuda_runtime: LibraryFacts = field(default_factory=LibraryFacts)
    cudnn: LibraryFacts = field(default_factory=LibraryFacts)
    # The other CUDA libraries the installed GPU build opens by name (cuBLAS, cuFFT, NCCL, ...),
    # each name as the probe opened it; a name not here was not probed (a CPU build, a saved
    # report older than the probe): unknown, never absent.
    opened_libraries: tuple[OpenedLibrary, ...] = ()
    paddle: PaddleFacts = field(default_factory=PaddleFacts)
    engine: EngineFacts = field(default_factory=EngineFacts)
    env: dict[str, str] = field(default_factory=dict)
    machine: MachineFacts = field(default_factory=MachineFacts)
    wsl: WslFacts | None = field(
        default=None,
        metadata={**OPTIONAL, "description": "Windows Subsystem for Linux; null: not WSL"},
    )
    nvidia_wheels: NvidiaWheels | None = field(
        default=None,
        metadata={
            **OPTIONAL,
            "description": "nvidia-* wheels installed for the judged interpreter and the"
            " distributions that pin them; absent: not read",
        },
    )
    cuda_compat: tuple[CompatLibrary, ...] | None = field(
        default=None,
        metadata={
            **OPTIONAL,
            "description": "CUDA forward-compatibility libcuda files found on the host"
            " (/usr/local/cuda/compat, LD_LIBRARY_PATH); absent: not looked for",
        },
    )


class FactsError(ValueError):
    """A saved facts document has a value of the wrong type, or one the judge cannot read."""


class MissingKey(FactsError):
    """A required key is absent: in a union of records, the variant the object is not."""


class MissingSections(FactsError):
    """A facts document lacks a section every document envcheck writes holds."""


T = TypeVar("T")


def to_dict(obj: Any) -> Any:
    """Records -> plain JSON-ready values (tuples become lists); an `optional` field holding None
    is left out."""
    if is_record(obj) and not isinstance(obj, type):
        return {
            name: to_dict(value)
            for name, optional in _written(type(obj))  # type: ignore[arg-type]
            if (value := getattr(obj, name)) is not None or not optional
        }
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


@functools.cache
def _written(cls: type) -> tuple[tuple[str, bool], ...]:
    """(name, optional) per field, worked out once per class."""
    return tuple((f.name, bool(f.metadata.get("optional"))) for f in fields(cls))


def from_dict(cls: type[T], data: Any, where: str = "host", *, numbers_as_text: bool = True) -> T:
    """Build `cls` from a JSON object: missing keys keep their defaults (an `optional` one reads as
    None), unknown keys are ignored, a wrong type raises FactsError naming the path
    (`host.driver.version`). `numbers_as_text`: a number where text is expected is read as its
    text (`"cuda": 12.2` in a facts file written by hand); False for what a program wrote (the
    smoke workload's line, a report's smoke section), where it is a wrong type."""
    if not isinstance(data, dict):
        raise FactsError(f"{where}: expected an object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for name, hint, as_is, check, absent in _fields_of(cls):  # type: ignore[arg-type]
        if name in data:
            value = data[name]  # `_read`, written out: the fleet merge's hot path (~10% faster)
            if check is None or not callable(check):
                if type(value) not in as_is:  # exactly the field's JSON type: nothing to coerce
                    value = _coerce(hint, value, f"{where}.{name}", numbers_as_text)
                if check is not None and value is not None:
                    _check(check, value, f"{where}.{name}")
            else:
                value = _own_check(check, value, f"{where}.{name}")
            kwargs[name] = value
        elif absent is _REQUIRED:
            raise MissingKey(f"{where}.{name}: missing (required)")
        elif absent is None:
            kwargs[name] = None  # `optional` without a default: absent is None
    return cls(**kwargs)


def read_fields(cls: type, data: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """The fields of `cls` that `data` gives, read as `from_dict` reads them but with EVERY problem
    listed (`where: field: problem`), a missing required field among them: for rows written by
    hand (the matrix's), fixed in one pass. The values that checked out come back beside the
    problems; keys `cls` lacks are the caller's to report."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, hint, as_is, check, absent in _fields_of(cls):
        if name in data:
            try:
                values[name] = _read(data[name], hint, as_is, check, f"{where}: {name}")
            except FactsError as e:
                problems.append(str(e))
        elif absent is _REQUIRED:
            problems.append(f"{where}: {name}: missing")
    return values, problems


def _read(value: Any, hint: Any, as_is: frozenset[type], check: Any, where: str) -> Any:
    """One field's value: coerced to the field's type and checked by the word its metadata names
    (`_check`), or read by the field's own check. `from_dict` writes the same out in its loop."""
    if callable(check):
        return _own_check(check, value, where)
    if type(value) not in as_is:
        value = _coerce(hint, value, where)
    if check is not None and value is not None:
        _check(check, value, where)
    return value


def _own_check(check: Callable[[Any], Any], value: Any, where: str) -> Any:
    """A field's own check: a function of the value as written that returns it typed, raising
    ValueError in words. The matrix's (`envcheck.matrix.fields`) are strict, as TOML written by
    hand needs: `cuda = 12.10` is refused, where a saved facts document's 12.2 reads as "12.2"."""
    try:
        return check(value)
    except ValueError as e:
        raise FactsError(f"{where}: {e}") from e


_REQUIRED, _DEFAULT = object(), object()  # what an absent key gives: an error, the default


@functools.cache
def _fields_of(cls: type) -> tuple[tuple[str, Any, frozenset[type], Any, object], ...]:
    """(name, resolved type, the JSON types it takes as they are, check, what an absent key gives)
    per field, worked out once per class: resolving the string annotations on every call cost 4 of
    the 6 CPU seconds of merging 1,000 fleet reports, and `_coerce` on a plain string or null most
    of the rest."""
    found = fields(cls)
    # A check of its own reads the value without its type: a class with only such checks (a
    # matrix row) skips resolving the annotations: ~1 ms of every doctor, for the eleven tables.
    typed = any(not callable(f.metadata.get("check")) for f in found)
    hints = typing.get_type_hints(cls) if typed else {}
    return tuple(
        (
            f.name,
            hints.get(f.name),
            _as_is(hints.get(f.name)),
            f.metadata.get("check"),
            _absent(f),
        )
        for f in found
    )


def _absent(f: Field) -> object:
    if f.default is not MISSING or f.default_factory is not MISSING:
        return _DEFAULT
    return None if f.metadata.get("optional") else _REQUIRED


def is_required(f: Field) -> bool:
    """A JSON key the reader requires: no default, and not `optional`."""
    return _absent(f) is _REQUIRED


def _as_is(tp: Any) -> frozenset[type]:
    """The types `_coerce` returns unchanged for `tp`: `str | None` -> {str, NoneType}. `bool` is
    its own type (`type(True) is bool`), so an int field never takes true/false this way."""
    origin, args = _shape(tp)
    plain = (str, int, bool)
    if origin in (typing.Union, types.UnionType):
        return frozenset(a for a in args if a in plain or a is type(None))
    return frozenset({tp}) if tp in plain else frozenset()


@functools.cache
def _shape(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    return typing.get_origin(tp), typing.get_args(tp)


@functools.cache
def _takes_float(tp: Any) -> bool:
    """`tp` is float, or a union with float in it: the losses of a run, read by the thousand."""
    origin, args = _shape(tp)
    return tp is float or (origin in (typing.Union, types.UnionType) and float in args)


def _check(check: str | None, value: Any, where: str) -> None:
    """Values the judge will parse are parsed here first, so a bad one is named with its path
    (exit 2) instead of failing deep inside a rule."""
    if check is None or value is None:
        return
    try:
        if check == "dotted":
            parse_dotted(value)
        elif check == "cc":
            parse_compute_capability(value)
        elif check == "pep440":
            Version(value)
        elif check == "count" and not 0 <= value < 2**63:
            raise FactsError(f"{where}: expected a number >= 0 and < 2**63, got {_short(value)}")
        elif check == "archs" and any(not 0 <= arch < 1000 for arch in value):
            raise FactsError(f"{where}: CUDA archs are numbers like 80 or 90, got {list(value)}")
    except (VersionParseError, InvalidVersion, ValueError) as e:  # ValueError: over 4300 digits
        raise FactsError(f"{where}: {str(e)[:120]}") from e


def _coerce(tp: Any, value: Any, where: str, numbers_as_text: bool = True) -> Any:
    if type(value) is float and value - value == 0.0 and _takes_float(tp):
        return value  # a finite float where a number goes (inf - inf and nan - nan are nan)
    origin, args = _shape(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors: list[FactsError] = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, where, numbers_as_text)
            except FactsError as e:
                errors.append(e)
        # a union of records (the variants of one object): the variant whose keys are all there
        # says what is wrong, not the first one tried
        said = [e for e in errors if not isinstance(e, MissingKey)] or errors
        raise FactsError(str(said[0]) if said else f"{where}: unexpected null")
    if origin is Literal:
        if value not in args:
            raise FactsError(
                f"{where}: expected one of {', '.join(map(str, args))}, got {_short(value)}"
            )
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise FactsError(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]: a list of X
            return tuple(
                _coerce(args[0], v, f"{where}[{i}]", numbers_as_text) for i, v in enumerate(value)
            )
        if len(value) != len(args):  # tuple[X, Y]: a list of exactly those
            raise FactsError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(
            _coerce(a, v, f"{where}[{i}]", numbers_as_text)
            for i, (a, v) in enumerate(zip(args, value))
        )
    if origin is dict:
        if not isinstance(value, dict):
            raise FactsError(f"{where}: expected an object, got {type(value).__name__}")
        return {
            str(k): _coerce(args[1], v, f"{where}.{k}", numbers_as_text) for k, v in value.items()
        }
    if tp is bool:
        if not isinstance(value, bool):
            raise FactsError(f"{where}: expected true/false, got {_short(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FactsError(f"{where}: expected an integer, got {_short(value)}")
        return value
    if tp is float:  # JSON's number: an int is one, kept as written (`0`, not `0.0`)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FactsError(f"{where}: expected a number, got {_short(value)}")
        if not _finite(value):
            raise FactsError(f"{where}: not a finite number: {_short(value)}")
        return value
    if tp is type(None):  # a field that is always null in this variant of a record
        if value is not None:
            raise FactsError(f"{where}: expected null, got {_short(value)}")
        return None
    if tp is Any:  # a free-form part (a finding's observed values, a report's meta)
        return value
    if tp is str:
        if numbers_as_text and isinstance(value, (int, float)) and not isinstance(value, bool):
            return _number_text(value, where)  # "cuda": 12.2 written by hand
        if not isinstance(value, str):
            raise FactsError(f"{where}: expected a string, got {_short(value)}")
        return value
    if isinstance(tp, type) and is_record(tp):
        return from_dict(tp, value, where, numbers_as_text=numbers_as_text)
    raise FactsError(f"{where}: unsupported type {tp!r}")  # pragma: no cover


def _finite(value: float) -> bool:
    """An int past a float's range (10**400) is no finite number either: OverflowError."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number_text(value: float, where: str) -> str:
    text = repr(value) if isinstance(value, float) else f"{value:d}" if abs(value) < 10**30 else ""
    if not text or text in ("nan", "inf", "-inf"):
        raise FactsError(f"{where}: expected a string, got {_short(value)}")
    return text


def _short(value: Any) -> str:
    """A wrong value shown in a one-screen error: its type and a bounded repr."""
    shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return shown if len(shown) <= 60 else f"{type(value).__name__} {shown[:57]}..."


# What every document envcheck writes holds, and without which nothing was observed: `{}` read
# as "all unknown" judged no driver, no GPU and no Paddle as a pass.
REQUIRED_SECTIONS = ("driver", "gpus", "paddle")


def host_from_document(doc: Any) -> HostFacts:
    """Accept a bare `host` object or a whole saved report (`{"host": {...}, ...}`); either
    must hold the REQUIRED_SECTIONS (MissingSections names the ones it lacks)."""
    is_report = (
        isinstance(doc, dict)
        and isinstance(doc.get("host"), dict)
        and ("findings" in doc or set(doc) == {"host"})
    )
    host = doc["host"] if is_report else doc
    facts = from_dict(HostFacts, host)  # a wrong value is named first, where it is
    if isinstance(host, dict):
        missing = [name for name in REQUIRED_SECTIONS if name not in host]
        if missing:
            named = " and ".join(
                [", ".join(missing[:-1]), missing[-1]] if missing[:-1] else missing
            )
            raise MissingSections(
                f"no {named} section{'s' if len(missing) > 1 else ''}: nothing was observed "
                f"without them (a facts document holds at least {', '.join(REQUIRED_SECTIONS)})"
            )
    return facts


def usable_gpus(host: HostFacts) -> tuple[GpuFacts, ...]:
    """GPUs the driver reports, when the driver answered."""
    return host.gpus if host.driver.status == "ok" else ()


def unlisted_gpus(host: HostFacts) -> int:
    """NVIDIA GPUs the machine has while the driver cannot list them (a reboot pending): the
    plan stays a GPU plan, or a host one reboot from working would be sent to the CPU image."""
    d = host.driver
    return d.gpus_present or 0 if d.status != "ok" else 0
