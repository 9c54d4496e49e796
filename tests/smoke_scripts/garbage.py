"""A smoke script that exits 0 but prints something other than one JSON line."""

from __future__ import annotations

print("Running verify PaddlePaddle program ...")
print("PaddlePaddle works well on 1 CPU.")
