"""What runs the smoke on the host: the container (spec, ownership labels, attach stream), the
subprocess of the target Python, the payload they carry, the NVML sampler.
"""
