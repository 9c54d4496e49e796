"""Renderers: turn a doctor `Report` (or a merged fleet) into Markdown, JUnit XML and GitHub
workflow commands. Nothing else in envcheck formats a verdict for CI."""
