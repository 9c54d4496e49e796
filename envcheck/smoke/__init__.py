"""Smoke training of the tutorial text classifier, in the selected container or a subprocess."""
