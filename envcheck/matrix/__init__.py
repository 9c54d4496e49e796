"""The compatibility matrix: data in `matrix/*.toml`, typed in `model`, validated by `load`."""

from envcheck.matrix.load import ENV_VAR, load_matrix, matrix_dir
from envcheck.matrix.model import Matrix

__all__ = ["ENV_VAR", "Matrix", "load_matrix", "matrix_dir"]
