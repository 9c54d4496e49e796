"""The image (pure): parse its reference, choose the tag a host can run, describe one given by
name, and judge before pulling whether this host can run it (platforms, CUDA, the matrix).
"""
