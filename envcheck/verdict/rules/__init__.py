"""The judge's rules, one module per layer of the host (driver, GPUs, CUDA, the Paddle build and
its archs, environment variables, the container path). Each check is a pure function of
`envcheck.verdict.judge.Context`; `envcheck.verdict.judge.CHECKS` runs them in order.

Nothing is imported here.
"""
