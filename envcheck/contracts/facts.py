"""What the probes found: frozen records (envcheck/contracts/record.py) that round-trip to JSON.

The same rules judge a live host or a saved `host` object (bug reports, fleets, tests), so every
field is optional: a missing key means "unknown", an unknown key is ignored. Each layer carries a
`status` (`ok` / `absent` / `error`) and, when not ok, the `reason` in words.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from packaging.version import InvalidVersion, Version

from envcheck.contracts.record import MISSING, field, fields, is_record, record
from envcheck.contracts.versions import VersionParseError, parse_compute_capability, parse_dotted

Status = Literal["ok", "absent", "error", "unknown"]
# Where the probe found a copy of a CUDA library (envcheck/probe/cuda_libs.py, in its search
# order). The smoke workload says it with the same words, from its own standalone copy
# (envcheck/smoke/workload/protocol.py: it runs where envcheck is not installed; a test keeps them
# equal).
LibraryOrigin = Literal["pip", "LD_LIBRARY_PATH", "system", "cuda-home"]


def _checked(check: str) -> Any:
    """An optional string field a saved document must spell right: the judge parses it."""
    return field(default=None, metadata={"check": check})


def _count() -> Any:
    return field(default=None, metadata={"check": "count"})


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
    # NVIDIA GPUs seen without NVML (sysfs PCI, /proc/driver/nvidia/gpus) when NVML failed
    gpus_present: int | None = _count()


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
    # The pip distributions that installed `paddle` (dist-info folders beside it): both
    # "paddlepaddle" and "paddlepaddle-gpu" overwrite each other's files. () = none found, or not
    # recorded (a facts file saved before this field).
    distributions: tuple[str, ...] = ()


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
class HostFacts:
    """Every fact about the host, one field per layer: what the rules judge."""

    driver: DriverFacts = field(default_factory=DriverFacts)
    gpus: tuple[GpuFacts, ...] = ()
    cuda_driver: CudaDriverFacts = field(default_factory=CudaDriverFacts)
    cuda_runtime: LibraryFacts = field(default_factory=LibraryFacts)
    cudnn: LibraryFacts = field(default_factory=LibraryFacts)
    paddle: PaddleFacts = field(default_factory=PaddleFacts)
    engine: EngineFacts = field(default_factory=EngineFacts)
    env: dict[str, str] = field(default_factory=dict)
    machine: MachineFacts = field(default_factory=MachineFacts)


class FactsError(ValueError):
    """A saved facts document has a value of the wrong type, or one the judge cannot read."""


T = TypeVar("T")


def to_dict(obj: Any) -> Any:
    """Dataclasses -> plain JSON-ready values (tuples become lists)."""
    if is_record(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


def from_dict(cls: type[T], data: Any, where: str = "host") -> T:
    """Build `cls` from a JSON object: missing keys keep their defaults, unknown keys are ignored,
    a wrong type raises FactsError naming the path (`host.driver.version`)."""
    if not isinstance(data, dict):
        raise FactsError(f"{where}: expected an object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for name, hint, as_is, check, required in _fields_of(cls):  # type: ignore[arg-type]
        if name in data:
            value = data[name]  # `_read`, written out: the fleet merge's hot path (~10% faster)
            if check is None or not callable(check):
                if type(value) not in as_is:  # exactly the field's JSON type: nothing to coerce
                    value = _coerce(hint, value, f"{where}.{name}")
                if check is not None and value is not None:
                    _check(check, value, f"{where}.{name}")
            else:
                value = _own_check(check, value, f"{where}.{name}")
            kwargs[name] = value
        elif required:
            raise FactsError(f"{where}.{name}: missing (required)")
    return cls(**kwargs)


def read_fields(cls: type, data: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """The fields of `cls` that `data` gives, read as `from_dict` reads them but with EVERY problem
    listed (`where: field: problem`), a missing required field among them: for rows written by
    hand (the matrix's), fixed in one pass. The values that checked out come back beside the
    problems; keys `cls` lacks are the caller's to report."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, hint, as_is, check, required in _fields_of(cls):
        if name in data:
            try:
                values[name] = _read(data[name], hint, as_is, check, f"{where}: {name}")
            except FactsError as e:
                problems.append(str(e))
        elif required:
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


@functools.cache
def _fields_of(cls: type) -> tuple[tuple[str, Any, frozenset[type], Any, bool], ...]:
    """(name, resolved type, the JSON types it takes as they are, check, required) per field, worked
    out once per class: resolving the string annotations on every call cost 4 of the 6 CPU seconds
    of merging 1,000 fleet reports, and `_coerce` on a plain string or null most of the rest."""
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
            f.default is MISSING and f.default_factory is MISSING,
        )
        for f in found
    )


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


def _coerce(tp: Any, value: Any, where: str) -> Any:
    origin, args = _shape(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, where)
            except FactsError as e:
                errors.append(str(e))
        raise FactsError(errors[0] if errors else f"{where}: unexpected null")
    if origin is Literal:
        if value not in args:
            raise FactsError(
                f"{where}: expected one of {', '.join(map(str, args))}, got {_short(value)}"
            )
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise FactsError(f"{where}: expected a list, got {type(value).__name__}")
        return tuple(_coerce(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise FactsError(f"{where}: expected an object, got {type(value).__name__}")
        return {str(k): _coerce(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and is_record(tp):
        return from_dict(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise FactsError(f"{where}: expected true/false, got {_short(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FactsError(f"{where}: expected an integer, got {_short(value)}")
        return value
    if tp is str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _number_text(value, where)  # "cuda": 12.2 written by hand
        if not isinstance(value, str):
            raise FactsError(f"{where}: expected a string, got {_short(value)}")
        return value
    raise FactsError(f"{where}: unsupported type {tp!r}")  # pragma: no cover


def _number_text(value: float, where: str) -> str:
    text = repr(value) if isinstance(value, float) else f"{value:d}" if abs(value) < 10**30 else ""
    if not text or text in ("nan", "inf", "-inf"):
        raise FactsError(f"{where}: expected a string, got {_short(value)}")
    return text


def _short(value: Any) -> str:
    """A wrong value shown in a one-screen error: its type and a bounded repr."""
    shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return shown if len(shown) <= 60 else f"{type(value).__name__} {shown[:57]}..."


def host_from_document(doc: Any) -> HostFacts:
    """Accept a bare `host` object or a whole saved report (`{"host": {...}, ...}`)."""
    is_report = (
        isinstance(doc, dict)
        and isinstance(doc.get("host"), dict)
        and ("findings" in doc or set(doc) == {"host"})
    )
    return from_dict(HostFacts, doc["host"] if is_report else doc)


def usable_gpus(host: HostFacts) -> tuple[GpuFacts, ...]:
    """GPUs the driver reports, when the driver answered."""
    return host.gpus if host.driver.status == "ok" else ()


def unlisted_gpus(host: HostFacts) -> int:
    """NVIDIA GPUs the machine has while the driver cannot list them (a reboot pending): the
    plan stays a GPU plan, or a host one reboot from working would be sent to the CPU image."""
    d = host.driver
    return d.gpus_present or 0 if d.status != "ok" else 0
