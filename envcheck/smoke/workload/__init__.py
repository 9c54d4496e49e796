"""What travels into the container or the target interpreter: the workload script (`main.py`)
and its modules, Python 3.8, the standard library and Paddle only. The host imports nothing
here but `protocol` (what both sides agree on).
"""
