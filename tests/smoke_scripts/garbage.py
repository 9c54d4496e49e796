"""A smoke script that exits 0 but prints something other than one JSON line."""

print("Running verify PaddlePaddle program ...")
print("PaddlePaddle works well on 1 CPU.")
