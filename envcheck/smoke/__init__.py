"""Smoke training of the tutorial text classifier, in the selected container or a subprocess.

This folder is pure (the options, the plan, the parse of what came back); `runner/` runs it on
the host, `verdict/` judges the result, `workload/` travels into the container.
"""
