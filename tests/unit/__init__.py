"""The unit lane: pure and in-process, well under a minute on two cores (`bash scripts/dev unit`).

Saved facts, the shipped matrix, the source read as text, files under tmp_path, and the CLI run
in this process (tests/inprocess.py). Nothing here needs what `scripts/dev setup` starts (the
engine, the registry, Slurm, Chromium: tests/unit/conftest.py refuses a test that asks for them),
loads the fake driver, imports Paddle or needs another Python; such a test is an integration one.
"""
