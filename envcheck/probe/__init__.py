"""Probes read the outside world into facts; none raises because something is absent."""
