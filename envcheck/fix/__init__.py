"""`envcheck fix`: the doctor's findings turned into a plan (`plan`) and an outcome (`outcome`),
both pure; `runner/` applies the plan under a lock, recorded, verified by a second smoke and
rolled back when it fails."""
