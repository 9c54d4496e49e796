"""What runs the smoke on the host: `check`, the whole smoke (plan, run, judge); the container
(spec, ownership labels, attach stream), the subprocess of the target Python, the payload they
carry, the NVML sampler.
"""
