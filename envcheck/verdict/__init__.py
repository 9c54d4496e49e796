"""The verdict (pure): (facts, matrix, image choice) -> findings, one plan of fixes, the proof
the verdict rests on; drift, and fleets of saved reports. The rules per layer are in `rules/`.
"""
