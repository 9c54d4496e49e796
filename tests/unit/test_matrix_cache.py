"""The matrix cache: parsed TOML as plain JSON keyed by the bytes, in a folder only we can
write; validation always runs on what it returns; nothing in it can run code."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.contracts.errors import MatrixError
from envcheck.matrix import cache
from envcheck.matrix.cache import CACHE_DIR_VAR
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR
from tests.paths import ROOT


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache" / "envcheck"
    monkeypatch.setenv(CACHE_DIR_VAR, str(folder))
    return folder


@pytest.fixture
def matrix_copy(tmp_path: Path, cache_folder: Path) -> Path:
    folder = tmp_path / "matrix"
    shutil.copytree(REPO_DIR, folder)
    return folder


def entry_for(folder: Path, toml: Path) -> Path:
    key = hashlib.sha256(cache._salt() + toml.read_bytes()).hexdigest()[:48]
    return folder / f"toml-{key}.json"


def test_second_load_comes_from_plain_json_entries_and_equals_the_first(
    matrix_copy: Path, cache_folder: Path
) -> None:
    first = load_matrix(str(matrix_copy), os.environ)
    entries = sorted(cache_folder.glob("toml-*.json"))
    assert len(entries) == len(list(matrix_copy.glob("*.toml")))
    for entry in entries:
        assert isinstance(json.loads(entry.read_text()), dict)
        assert (entry.stat().st_mode & 0o077) == 0
    assert (cache_folder.stat().st_mode & 0o777) == 0o700
    assert load_matrix(str(matrix_copy), os.environ) == first


def test_an_edit_of_the_same_size_and_mtime_is_reloaded_and_revalidated(matrix_copy: Path) -> None:
    load_matrix(str(matrix_copy), os.environ)
    gpus = matrix_copy / "gpus.toml"
    before = gpus.stat()
    text = gpus.read_text()
    edited = text.replace('compute_capability = "8.0"', 'compute_capability = "8.X"', 1)
    assert edited != text and len(edited) == len(text)
    gpus.write_text(edited)
    os.utime(gpus, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(MatrixError, match="compute_capability"):
        load_matrix(str(matrix_copy), os.environ)


def test_validation_runs_on_what_the_cache_returns(matrix_copy: Path, cache_folder: Path) -> None:
    """A cached document is only what tomllib returned: the loader's checks still see it."""
    load_matrix(str(matrix_copy), os.environ)
    gpus = matrix_copy / "gpus.toml"
    entry = entry_for(cache_folder, gpus)
    doc = json.loads(entry.read_text())
    doc["gpu"][0]["compute_capability"] = "bad"
    entry.write_text(json.dumps(doc))
    with pytest.raises(MatrixError, match="compute_capability"):
        load_matrix(str(matrix_copy), os.environ)


def test_a_planted_pickle_is_never_unpickled(
    matrix_copy: Path, cache_folder: Path, tmp_path: Path
) -> None:
    cache_folder.mkdir(parents=True, mode=0o700)
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    for toml in matrix_copy.glob("*.toml"):
        entry_for(cache_folder, toml).write_bytes(pickle.dumps(Boom()))
        (cache_folder / f"matrix-{toml.stem}.pickle").write_bytes(pickle.dumps(Boom()))
    assert load_matrix(str(matrix_copy), os.environ).newest_release()
    assert not marker.exists()


def test_a_folder_others_can_write_is_not_used(matrix_copy: Path, cache_folder: Path) -> None:
    cache_folder.mkdir(parents=True)
    cache_folder.chmod(0o777)
    assert cache.cache_dir(os.environ) is None
    load_matrix(str(matrix_copy), os.environ)
    assert not list(cache_folder.iterdir())


def test_a_folder_owned_by_someone_else_is_not_used(cache_folder: Path) -> None:
    cache_folder.mkdir(parents=True, mode=0o700)
    os.chown(cache_folder, 65534, 65534)  # nobody; the suite runs as root
    assert cache.cache_dir(os.environ) is None


def test_a_symlinked_folder_is_not_used(cache_folder: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    cache_folder.parent.mkdir(parents=True)
    cache_folder.symlink_to(real)
    assert cache.cache_dir(os.environ) is None


def test_entries_that_are_links_or_not_ours_are_misses(
    matrix_copy: Path, cache_folder: Path, tmp_path: Path
) -> None:
    cache_folder.mkdir(parents=True, mode=0o700)
    gpus = matrix_copy / "gpus.toml"
    poisoned = tmp_path / "poisoned.json"
    poisoned.write_text(json.dumps({"gpu": []}))
    entry_for(cache_folder, gpus).symlink_to(poisoned)
    assert cache._read(entry_for(cache_folder, gpus)) is None
    entry_for(cache_folder, gpus).unlink()
    entry_for(cache_folder, gpus).write_text(json.dumps({"gpu": []}))
    os.chown(entry_for(cache_folder, gpus), 65534, 65534)
    assert cache._read(entry_for(cache_folder, gpus)) is None
    assert load_matrix(str(matrix_copy), os.environ).gpus  # parsed from the file itself


def test_a_corrupt_entry_is_a_miss(matrix_copy: Path, cache_folder: Path) -> None:
    first = load_matrix(str(matrix_copy), os.environ)
    for entry in cache_folder.glob("toml-*.json"):
        entry.write_bytes(b"[" * 100_000)
    assert load_matrix(str(matrix_copy), os.environ) == first


def test_an_unusable_cache_location_still_loads(
    matrix_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_DIR_VAR, str(blocker / "cache"))
    assert load_matrix(str(matrix_copy), os.environ).newest_release()


def test_empty_cache_variable_turns_the_cache_off(
    matrix_copy: Path, cache_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_VAR, "")
    load_matrix(str(matrix_copy), os.environ)
    assert not cache_folder.exists()


def test_the_suite_runs_with_the_cache_off() -> None:
    assert os.environ.get(CACHE_DIR_VAR) == ""  # tests/conftest.py: every test parses the TOML


# A matrix load in a fresh interpreter, on its variables (the cache folder: without them the
# load used the user's own cache, warm or not); prints whether it imported the TOML parser.
LOAD_AND_SAY = (
    "import os, sys; from envcheck.matrix.load import load_matrix; "
    "load_matrix(sys.argv[1], os.environ); "
    "print(any(m in sys.modules for m in ('tomllib', 'tomli')))"
)


def test_a_load_from_the_cache_never_imports_the_toml_parser(
    matrix_copy: Path, cache_folder: Path
) -> None:
    """`tomllib` and its `datetime` are ~3 ms and ~0.4 MB of a doctor's start; a
    warm cache (the doctor's usual case) serves every file without them."""
    env = {**os.environ, CACHE_DIR_VAR: str(cache_folder)}
    say = [sys.executable, "-c", LOAD_AND_SAY, str(matrix_copy)]
    cwd = ROOT
    runs = [
        subprocess.run(say, env=env, cwd=cwd, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert [r.stdout.strip() for r in runs] == ["True", "False"]  # the miss parsed, the hit not


def test_the_key_still_names_the_toml_parser_by_its_file() -> None:
    """Found without importing it, the parser file in the salt is the module's own: the keys of
    entries written before stay valid, and a new tomli still changes them."""
    from envcheck.matrix.toml import tomllib

    assert cache._toml_parser_file() == tomllib.__file__
