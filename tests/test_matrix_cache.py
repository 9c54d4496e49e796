"""The matrix cache: a hit returns the same matrix, any change to the inputs is a fresh load."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envcheck.errors import MatrixError
from envcheck.matrix.cache import CACHE_DIR_VAR
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR


@pytest.fixture
def matrix_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_VAR, str(tmp_path / "cache"))
    folder = tmp_path / "matrix"
    shutil.copytree(REPO_DIR, folder)
    return folder


def test_second_load_comes_from_the_cache_and_equals_the_first(matrix_copy: Path, tmp_path: Path) -> None:
    first = load_matrix(str(matrix_copy))
    (cached,) = (tmp_path / "cache").glob("matrix-*.pickle")
    second = load_matrix(str(matrix_copy))
    assert second == first and cached.exists()


def test_an_edited_file_is_reloaded_and_revalidated(matrix_copy: Path) -> None:
    load_matrix(str(matrix_copy))
    gpus = matrix_copy / "gpus.toml"
    gpus.write_text(gpus.read_text() + '\n[[gpu]]\nnames = ["Z"]\ncompute_capability = "bad"\n'
                    'architecture = "X"\nsource = "3P"\nconfirmed = false\n')
    os.utime(gpus, ns=(1, 1))  # an mtime set back in time does not hide the edit: the size changed
    with pytest.raises(MatrixError, match="compute_capability"):
        load_matrix(str(matrix_copy))


def test_a_corrupt_cache_file_is_a_miss(matrix_copy: Path, tmp_path: Path) -> None:
    first = load_matrix(str(matrix_copy))
    (cached,) = (tmp_path / "cache").glob("matrix-*.pickle")
    cached.write_bytes(b"\x80\x05garbage")
    assert load_matrix(str(matrix_copy)) == first


def test_an_unwritable_cache_folder_still_loads(matrix_copy: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_DIR_VAR, str(blocker / "cache"))
    assert load_matrix(str(matrix_copy)).newest_release().version == "3.3.1"


def test_empty_cache_variable_turns_the_cache_off(matrix_copy: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VAR, "")
    load_matrix(str(matrix_copy))
    assert not (tmp_path / "cache").exists()
