"""Judging the smoke (pure): what the run printed and what NVML saw -> findings and the
report's `smoke` object.
"""
