"""`envcheck fix`: the doctor's findings turned into a plan (`plan`, pure) and applied under a
lock, recorded, verified by a second smoke and rolled back when it fails (`apply`, the I/O)."""
