"""The shipped matrix: it loads, cites its sources, flags what is unconfirmed, says what the fact
sheet says; and a broken matrix is reported whole (every problem, with file, entry and field)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envcheck.contracts.errors import MatrixError, UsageError
from envcheck.contracts.facts import read_fields
from envcheck.contracts.record import field, fields, record
from envcheck.matrix import fields as check
from envcheck.matrix import location as load_module
from envcheck.matrix.fields import Bad, specifier
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import ENV_VAR, REPO_DIR, matrix_dir
from envcheck.matrix.model import Matrix
from envcheck.matrix.schema import TABLES, table_of
from envcheck.matrix.toml import tomllib
from tests.matrix_rows import all_rows
from tests.paths import ROOT

# compat_facts.md §0: the only tags a row may cite.
SOURCE_TAGS = {
    "NV-RN", "NV-MVC", "NV-DC", "NV-cuFFT", "NV-curanddx", "CMAKE", "CUDART",
    "D-2.4", "D-2.5", "D-2.6", "D-3.0b", "D-dev", "PD-DOCS-now", "PD-IDX", "OCR-3.2", "OCR-3.0",
    "PX-3.1", "ERNIE", "PFORM", "CONDA", "SETUP", "CUDA.cmake-old", "PR52285", "PR78720",
    "PR79154", "PR79314", "PR79331", "GPURES", "PLACE", "DYNLOAD", "ENFORCE", "W-262", "W-331",
    "ISSUES", "3P", "ISSUES-LIB", "NV-APT",
    # matrix-audit.md §0a
    "NV-CC", "NV-DEP13", "NVCC13", "NVCC12.8", "DOCS#7159", "DOCS#7426", "DOCS#7684", "PR79269",
    # compat_facts.md §11: GPU generations, driver branches, CUDA 13.3/13.4
    "NV-OGKM", "NV-DIG", "NV-DC-615", "NV-DC-620", "NV-DRV-WIN-INF",
}  # fmt: skip
# A cited public issue or pull request of an official repository: "Paddle#76558", "PaddleX#4682",
# or a Paddle pull request as the fact sheet writes it: "PR79378".
ISSUE_TAG = re.compile(
    r"(Paddle|PaddleX|PaddleOCR|PaddleMIX|PaddleSeg|PaddleDetection|PaddleFleet)#\d+|PR\d+"
)


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture(scope="module")
def shipped() -> Matrix:
    return load_matrix(str(REPO_DIR))


# -- the shipped matrix ---------------------------------------------------------------------------


def test_shipped_matrix_loads_from_the_repo_folder_when_no_wheel_copy_exists() -> None:
    m = load_matrix()
    assert Path(m.path) in (REPO_DIR, load_module.SHIPPED_DIR)
    # 3.4.0 is in the matrix as reported (nightlies, third-party pins); the default target is the
    # newest release a first-party source confirms
    assert max(Version(r.version) for r in m.releases) == Version("3.4.0")
    assert m.newest_release().version == "3.3.1"
    assert set(m.registries) == {"dockerhub", "baidu", "baidu-legacy"}


def test_every_row_cites_a_source_tag_from_the_fact_sheet(shipped: Matrix) -> None:
    unknown = {
        (type(row).__name__, tag)
        for row in all_rows(shipped)
        for tag in (t.strip() for t in row.source.split(","))
        if tag not in SOURCE_TAGS and not ISSUE_TAG.fullmatch(tag)
    }
    assert not unknown


def test_third_party_only_rows_are_flagged_unconfirmed(shipped: Matrix) -> None:
    third_party_only = [row for row in all_rows(shipped) if row.source == "3P"]
    assert third_party_only
    assert all(not row.confirmed for row in third_party_only)


@pytest.mark.parametrize(
    "what",
    [
        "3.3.1 images (3P only)",
        "CUDA 13.0 arch set (derived)",
        "3.1.0 cu126 archs (3P report)",
        "3.1+ CPU tags (inferred pattern)",
        "K80 compute capability",
    ],
)
def test_facts_the_sheet_marks_unconfirmed_stay_unconfirmed(shipped: Matrix, what: str) -> None:
    candidates: dict[str, list[Any]] = {
        "3.3.1 images (3P only)": list(shipped.images_for("3.3.1", "gpu")),
        "CUDA 13.0 arch set (derived)": [shipped.archs_for_cuda("13.0")],
        "3.1.0 cu126 archs (3P report)": [
            b for b in shipped.builds_for("3.1.0") if b.archs and b.cuda == "12.6"
        ],
        "3.1+ CPU tags (inferred pattern)": [
            i for v in ("3.1.0", "3.2.0", "3.3.0", "3.3.1") for i in shipped.images_for(v, "cpu")
        ],
        "K80 compute capability": [shipped.gpu_model("Tesla K80")],
    }
    rows = candidates[what]
    assert rows and all(row is not None and not row.confirmed for row in rows)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (lambda m: m.toolkit_min_driver("12.9").min_driver, "575.51.03"),
        (lambda m: m.toolkit_min_driver("12.2").min_driver, "535.54.03"),
        (lambda m: m.toolkit_min_driver("11.4").min_driver, "470.42.01"),
        (lambda m: m.minor_compat_for("11.8").min_driver, "450.80.02"),
        (lambda m: m.minor_compat_for("12.9").min_driver, "525.60.13"),
        (lambda m: m.minor_compat_for("13.0").min_driver, "580.65.06"),
        (lambda m: 120 in m.archs_for_cuda("12.8").archs, True),
        (lambda m: 120 in m.archs_for_cuda("12.6").archs, False),
        (lambda m: 70 in m.archs_for_cuda("13.0").archs, False),
        (lambda m: 37 in m.archs_for_cuda("12.0").archs, False),
        (lambda m: m.gpu_model("NVIDIA A100-SXM4-80GB").compute_capability, "8.0"),
        (lambda m: m.gpu_model("NVIDIA A10G").compute_capability, "8.6"),
        (lambda m: m.gpu_model("NVIDIA GeForce RTX 5090").compute_capability, "12.0"),
        (
            lambda m: m.registries["baidu"],
            "ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddle",
        ),
        (lambda m: m.registries["baidu-legacy"], "registry.baidubce.com/paddlepaddle/paddle"),
        (
            lambda m: [b.archs for b in m.builds_for("2.6.2") if b.cuda == "11.8"],
            [(61, 70, 75, 80, 86)],
        ),
    ],
    ids=[
        "cu129-full-575",
        "cu122-ga-535.54",
        "cu114-ga-470.42",
        "11x-minor-compat-450.80.02",
        "12x-minor-compat-525.60.13",
        "13x-minor-compat-580",
        "sm120-needs-12.8",
        "no-sm120-in-12.6",
        "volta-gone-in-13.0",
        "kepler-gone-in-12.0",
        "a100-not-a10",
        "a10g",
        "rtx5090-sm120",
        "baidu-ccr-mirror",
        "baidu-2x-registry",
        "measured-262-cu118-archs",
    ],
)
def test_shipped_matrix_says_what_the_fact_sheet_says(
    shipped: Matrix, query: Callable[[Matrix], object], expected: object
) -> None:
    assert query(shipped) == expected


# Images whose wheel has no pip flavour of its own: their arch coverage is unknown by construction.
IMAGES_WITHOUT_PIP_BUILD = {
    "3.0.0-gpu-cuda12.3-cudnn9.0-trt8.6",  # official docs (DOCS#7159); no 3.0.0 cu123 wheel
}  # 3.2.2-gpu-cuda13.0-cudnn9.13 has its cu130 build (Paddle#76558)


def test_every_gpu_image_has_its_pip_build(shipped: Matrix) -> None:
    from envcheck.matrix.builds import build_for

    missing = {
        i.tag
        for i in shipped.images
        if i.kind == "gpu" and build_for(shipped, i.paddle, i.cuda) is None
    }
    assert missing == IMAGES_WITHOUT_PIP_BUILD


def test_every_gpu_build_has_an_arch_list_or_an_explicit_archs_unknown_marker(
    shipped: Matrix,
) -> None:
    """An unstated list must never read as "every arch the toolkit can target"."""
    silent = [
        f"{b.paddle} cu{b.cuda}"
        for b in shipped.builds
        if b.package == "paddlepaddle-gpu" and not b.archs and not b.archs_unknown
    ]
    assert silent == []
    assert all(b.archs_source for b in shipped.builds if b.archs)


def test_the_arch_lists_public_issues_show_are_the_matrix_rows(shipped: Matrix) -> None:
    """The audit's examples (docs/facts/matrix-audit.md): 2.5 CUDA 11 wheels 70 75 80 86
    (Paddle#55715); 3.0.0b2 cu123 61-90 (PaddleMIX#836); 3.1.x cu129 75 80 86 89 (PaddleX#4473);
    3.2.0 cu129 lacks 61 (PaddleX#4682)."""
    from envcheck.matrix.builds import build_for

    def build(paddle: str, cuda: str) -> Any:
        found = build_for(shipped, paddle, cuda)
        assert found is not None
        return found

    assert build("2.5.2", "11.7").archs == (70, 75, 80, 86)
    assert build("3.0.0b2", "12.3").archs == (61, 70, 75, 80, 86, 90)
    assert build("3.1.1", "12.9").archs == (75, 80, 86, 89)
    assert build("3.2.0", "12.9").archs_absent == (61,) and build("3.2.0", "12.9").archs_unknown
    # 10.2: the floor is per build: 2.5.2 cu102 keeps Kepler, its CUDA 11 wheels start at Volta
    release = shipped.release("2.5.2")
    assert release is not None
    assert build("2.5.2", "10.2").floor(release, "linux/amd64") == "3.5"
    assert build("2.5.2", "11.2").floor(release, "linux/amd64") == "7.0"


def test_build_driver_floors_follow_nvidia_not_papers(shipped: Matrix) -> None:
    """10.4: a build's driver floor is NVIDIA's minor-version compatibility for its CUDA major
    (cu126 and cu129 alike: 525.60.13); Paddle's stricter 550.54.14 stays a note."""
    from envcheck.matrix.compat import driver_support

    for cuda in ("12.6", "12.9"):
        support = driver_support("525.60.13", "12.0", cuda, shipped)
        assert support.level == "minor-compat" and support.minimum_driver == "525.60.13"
    cu126 = [b for b in shipped.builds_for("3.2.0") if b.cuda == "12.6"]
    assert [b.paddle_min_driver for b in cu126] == ["550.54.14"]


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("NVIDIA GeForce GTX 1080", "6.1"),
        ("NVIDIA GeForce RTX 2080 Ti", "7.5"),
        ("NVIDIA GeForce GTX 1650", "7.5"),
        ("Quadro RTX 6000", "7.5"),
        ("NVIDIA A30", "8.0"),
        ("NVIDIA A16", "8.6"),
        ("NVIDIA H20", "9.0"),
        ("NVIDIA H200", "9.0"),
        ("NVIDIA L20", "8.9"),
        ("NVIDIA B300 SXM6 AC", "10.3"),
        ("NVIDIA TITAN V", "7.0"),
        ("NVIDIA GeForce RTX 5050", "12.0"),
        ("NVIDIA RTX 4000 Ada Generation", "8.9"),
        ("NVIDIA RTX PRO 4000 Blackwell", "12.0"),
        ("Tesla M40 24GB", "5.2"),
        ("NVIDIA GeForce GTX 960M", "5.0"),
        ("NVIDIA RTX A3000", "8.6"),
        ("Quadro P4000", "6.1"),
    ],
)
def test_gpus_users_have_are_named_with_their_compute_capability(
    shipped: Matrix, name: str, cc: str
) -> None:
    model = shipped.gpu_model(name)
    assert model is not None and model.compute_capability == cc


def test_pyproject_ships_the_matrix_folder_inside_the_wheel() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["matrix"] == "envcheck/_matrix"
    assert load_module.SHIPPED_DIR == ROOT / "envcheck" / "_matrix"


# -- where the matrix comes from ------------------------------------------------------------------


def test_env_var_overrides_the_shipped_matrix(tmp_path: Path) -> None:
    copy = _copy_shipped(tmp_path / "mine")
    images = copy / "images.toml"
    images.write_text(
        images.read_text().replace('"docker.io/paddlepaddle/paddle"', '"mirror.example/paddle"')
    )
    m = load_matrix(None, {ENV_VAR: str(copy)})  # the command's variables
    assert m.path == str(copy) and m.registries["dockerhub"] == "mirror.example/paddle"


def test_explicit_path_beats_the_env_var(tmp_path: Path) -> None:
    variables = {ENV_VAR: str(tmp_path / "nowhere")}
    assert load_matrix(str(_copy_shipped(tmp_path / "flag")), variables).path == str(
        tmp_path / "flag"
    )


def test_wheel_copy_beats_the_repo_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_module, "SHIPPED_DIR", _copy_shipped(tmp_path / "_matrix"))
    assert matrix_dir() == (tmp_path / "_matrix", "shipped")
    monkeypatch.setattr(load_module, "SHIPPED_DIR", tmp_path / "absent")
    assert matrix_dir() == (REPO_DIR, "repository")


def _copy_shipped(dest: Path) -> Path:
    shutil.copytree(REPO_DIR, dest, ignore=shutil.ignore_patterns("*.md"))
    return dest


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p / "missing", "(from ENVCHECK_MATRIX): no such directory"),
        (lambda p: p, "(from ENVCHECK_MATRIX): no *.toml files"),
    ],
    ids=["typo-in-ENVCHECK_MATRIX", "folder-without-toml"],
)
def test_unusable_override_is_a_matrix_error(
    tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    with pytest.raises(MatrixError) as e:
        load_matrix(None, {ENV_VAR: str(make(tmp_path))})
    assert len(e.value.problems) == 1 and problem in e.value.problems[0]
    assert isinstance(e.value, UsageError)  # exit 2


# -- a broken matrix ------------------------------------------------------------------------------

BROKEN = {
    "cuda_drivers.toml": """
[[minor_compat]]
cuda_major = "12"
min_driver = "525.60.13"
source = "NV-RN"
confirmed = true

[[toolkt]]
cuda = "12.9.0"
""",
    "gpus.toml": """
[[gpu]]
names = ["X1"]
compute_capability = "8"
architecture = "Ampere"
source = "3P"
confirmed = false
""",
    "paddle.toml": """
[[release]]
version = "3.3.1"
min_compute_capability = "6.0"
source = "PD-DOCS-now"
confirmed = true

[[release]]
version = "3.3.1"
min_compute_capability = "6.0"
python = ">=3.9,<three"
confirmed = "yes"

[[build]]
paddle = "9.9.9"
package = "paddlepaddle-gpu"
cuda = "12.9"
pip = "python -m pip install paddlepaddle-gpu==9.9.9"
paddle_min_driver = "575.x"
source = "3P"
confirmed = false
colour = "red"
""",
    "images.toml": """
[[registry]]
name = "dockerhub"
ref = "docker.io/paddlepaddle/paddle"
source = "D-2.6"
confirmed = true

[[image]]
paddle = "3.3.1"
tag = "3.3.1-gpu-cuda12.9-cudnn9.9"
kind = "gpu"
cuda = 12.9
cudnn = "9.9"
registries = ["quay"]
source = "3P"
confirmed = false

[[image]]
paddle = "3.3.1"
tag = "3.3.1-gpu-cuda12.9-cudnn9.9"
kind = "gpu"
cuda = "12.6"
cudnn = "9.9"
registries = ["dockerhub"]
source = "3P"
confirmed = false
""",
}

BROKEN_PROBLEMS = [
    (
        "cuda_drivers.toml: minor_compat entry 1 (12): cuda_major: "
        "expected a positive integer, got str '12'"
    ),
    "cuda_drivers.toml: toolkt: unknown table (did you mean 'toolkit'?)",
    (
        "gpus.toml: gpu entry 1 (['X1']): compute_capability: not a compute capability: '8' "
        '(expected "major.minor", e.g. "8.6")'
    ),
    (
        "images.toml: image entry 1 (3.3.1-gpu-cuda12.9-cudnn9.9): cuda: expected a quoted string, "
        'got float 12.9 (write "12.9")'
    ),
    "paddle.toml: release entry 2 (3.3.1): source: missing",
    (
        "paddle.toml: release entry 2 (3.3.1): python: not a version specifier: '>=3.9,<three' "
        '(Invalid specifier: \'<three\'; e.g. ">=3.9,<3.14" or "==3.10.*")'
    ),
    "paddle.toml: release entry 2 (3.3.1): confirmed: expected true or false, got str 'yes'",
    (  # the build record's fields in its order: those a row must write first
        "paddle.toml: build entry 1 (9.9.9 paddlepaddle-gpu 12.9): colour: unknown field "
        "(known: paddle, package, pip, source, confirmed, cuda, cudnn, archs, archs_source, "
        "archs_unknown, archs_absent, archs_present, archs_platform, min_compute_capability, "
        "paddle_min_driver, cudart_static, note)"
    ),
    (
        "paddle.toml: build entry 1 (9.9.9 paddlepaddle-gpu 12.9): paddle_min_driver: "
        "not a dotted version: '575.x'"
    ),
    # an unstated list would read as every arch the toolkit targets: a GPU build that says
    # nothing of its archs is refused
    (
        "paddle.toml: build entry 1 (9.9.9 paddlepaddle-gpu 12.9): archs: missing (give the "
        'compiled archs with archs_source, or archs_unknown = "why")'
    ),
    # an x86 image is no answer for a Jetson: every image row names its platforms
    "images.toml: image entry 1 (3.3.1-gpu-cuda12.9-cudnn9.9): platforms: missing",
    "images.toml: image entry 2 (3.3.1-gpu-cuda12.9-cudnn9.9): platforms: missing",
    (
        "images.toml: image entry 2 (3.3.1-gpu-cuda12.9-cudnn9.9): duplicate of "
        "images.toml: image entry 1 (3.3.1-gpu-cuda12.9-cudnn9.9)"
    ),
    "paddle.toml: release entry 2 (3.3.1): duplicate of paddle.toml: release entry 1 (3.3.1)",
    (
        "paddle.toml: build entry 1 (9.9.9 paddlepaddle-gpu 12.9): paddle: "
        "no [[release]] with version 9.9.9"
    ),
    (
        "images.toml: image entry 1 (3.3.1-gpu-cuda12.9-cudnn9.9): registries: "
        "unknown ['quay'] (known: dockerhub)"
    ),
    (
        "images.toml: image entry 2 (3.3.1-gpu-cuda12.9-cudnn9.9): tag: "
        "'3.3.1-gpu-cuda12.9-cudnn9.9' does not contain -cuda12.6"
    ),
]


def test_a_broken_matrix_reports_every_problem_with_file_entry_and_field(tmp_path: Path) -> None:
    for name, text in BROKEN.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(MatrixError) as e:
        load_matrix(str(tmp_path))
    assert sorted(e.value.problems) == sorted(BROKEN_PROBLEMS)
    assert f"{len(BROKEN_PROBLEMS)} problem(s)" in e.value.message


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        # a compatible release needs two parts: the rules' SpecifierSet refuses it, so an arch
        # fact scoped "~=3" covered no release at all
        ("~=3", "Invalid specifier: '~=3'"),
        ("3.9", "Invalid specifier: '3.9'"),
        (">=3.9;<3.14", "Invalid specifier: '>=3.9;<3.14'"),
        (",", "no clause"),  # an empty set would match every version
    ],
    ids=["compatible-release-of-one-part", "no-operator", "semicolon", "no-clause"],
)
def test_a_specifier_the_rules_cannot_read_is_refused_on_load(written: str, problem: str) -> None:
    with pytest.raises(Bad, match=re.escape(problem)):
        specifier(written)


@pytest.mark.parametrize(
    "written", [">=3.9,<3.14", "==3.10.*", "==2.5.*", ">=3.9rc1", " >= 3.9 , <3.14 "]
)
def test_a_specifier_accepted_on_load_is_the_one_the_rules_read(written: str) -> None:
    assert specifier(written) == written
    assert SpecifierSet(written)  # as `envcheck.matrix.scope` reads it at run time


def test_toml_syntax_error_names_the_file_and_line_and_other_files_are_still_checked(
    tmp_path: Path,
) -> None:
    _copy_shipped(tmp_path / "m")
    (tmp_path / "m" / "gpus.toml").write_text('[[gpu]]\nnames = ["X"]\ncompute_capability = "8.0\n')
    (tmp_path / "m" / "extra.toml").write_text('[[release]]\nversion = "nope"\n')
    with pytest.raises(MatrixError) as e:
        load_matrix(str(tmp_path / "m"))
    syntax = [p for p in e.value.problems if p.startswith("gpus.toml: TOML syntax error")]
    assert len(syntax) == 1 and "line 3" in syntax[0]
    assert (
        "extra.toml: release entry 1 (nope): version: not a PEP 440 version: 'nope'"
        in e.value.problems
    )


def test_a_matrix_without_releases_or_registries_cannot_select(tmp_path: Path) -> None:
    (tmp_path / "gpus.toml").write_text("")
    with pytest.raises(MatrixError) as e:
        load_matrix(str(tmp_path))
    assert e.value.problems == [
        f"{tmp_path}: no [[release]] entries in any file",
        f"{tmp_path}: no [[registry]] entries in any file",
    ]


# -- the records are the schema -------------------------------------------------------------------


@pytest.mark.parametrize("table", list(TABLES), ids=list(TABLES))
def test_every_field_of_a_row_record_is_checked_as_written(table: str) -> None:
    """A row field without a check of its own would be read as a saved facts document is read,
    leniently: `cuda = 12.10` would load as "12.1" instead of being refused."""
    unchecked = [f.name for f in fields(TABLES[table].row) if not callable(f.metadata.get("check"))]
    assert unchecked == []


def test_a_field_added_to_a_row_record_is_a_key_of_its_table_checked_by_its_metadata() -> None:
    """Adding a matrix field is one line in its record: the table takes the key (optional when it
    has a default) and checks it as its metadata says, listed with every other problem of the
    row."""

    @record
    class Mirror:  # a row record as envcheck/matrix/model.py writes one, with a new field last
        name: str = field(metadata={"check": check.text, "ident": True})
        source: str = field(metadata={"check": check.text})
        confirmed: bool = field(metadata={"check": check.boolean})
        min_driver: str | None = field(default=None, metadata={"check": check.dotted})

    table = table_of("mirror", Mirror)
    assert table.keys == ("name", "source", "confirmed", "min_driver")
    assert table.required == {"name", "source", "confirmed"} and table.ident == ("name",)
    where = "mirrors.toml: mirror entry 1 (m)"
    values, problems = read_fields(
        Mirror, {"name": "m", "confirmed": "yes", "min_driver": "575.x"}, where
    )
    assert problems == [
        f"{where}: source: missing",
        f"{where}: confirmed: expected true or false, got str 'yes'",
        f"{where}: min_driver: not a dotted version: '575.x'",
    ]
    assert values == {"name": "m"}  # what checked out, for the checks across rows
    values, problems = read_fields(
        Mirror, {"name": "m", "source": "3P", "confirmed": False, "min_driver": "575.51.03"}, where
    )
    assert problems == [] and Mirror(**values).min_driver == "575.51.03"
    values, _ = read_fields(Mirror, {"name": "m", "source": "3P", "confirmed": True}, where)
    assert Mirror(**values).min_driver is None  # left out: its default


@pytest.mark.parametrize(
    ("table", "row", "field_name"),
    [
        (
            "build",
            (
                'paddle = "3.3.1"\npackage = "paddlepaddle"\ncudart_static = false\n'
                'pip = "python -m pip install paddlepaddle==3.3.1"'
            ),
            "cudart_static",
        ),
        (
            "image",
            (
                'paddle = "3.3.1"\ntag = "3.3.1"\nkind = "cpu"\ncudnn = "9.9"\n'
                'registries = ["dockerhub"]\nplatforms = ["linux/amd64"]'
            ),
            "cudnn",
        ),
    ],
    ids=["build-cudart_static", "image-cudnn"],
)
def test_a_cpu_row_leaves_out_every_field_its_record_marks_gpu_only(
    tmp_path: Path, table: str, row: str, field_name: str
) -> None:
    (tmp_path / "m.toml").write_text(
        '[[release]]\nversion = "3.3.1"\nmin_compute_capability = "6.0"\n'
        'source = "3P"\nconfirmed = false\n\n'
        '[[registry]]\nname = "dockerhub"\nref = "docker.io/paddlepaddle/paddle"\n'
        'source = "D-2.6"\nconfirmed = true\n\n'
        f'[[{table}]]\n{row}\nsource = "3P"\nconfirmed = false\n'
    )
    with pytest.raises(MatrixError) as e:
        load_matrix(str(tmp_path))
    assert f"{table} entry 1 (3.3.1" in e.value.problems[0]
    assert e.value.problems[0].endswith(f": {field_name}: must be absent for a CPU {table}")
