"""The compatibility matrix: data in `matrix/*.toml`, typed in `model`, validated by `load`.

Nothing is imported here: `envcheck.matrix.model` must stay importable without the loader.
"""
