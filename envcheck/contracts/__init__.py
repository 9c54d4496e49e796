"""The contracts between the layers: the facts the probes find, the findings and the report
the rules make of them, a saved report read back, versions, the exit codes and the one
expected-error type, the command's environment, and the engine's pull events that the pull, the
engine adapter and the progress display share. They import no other part of envcheck but the
standard-library helpers of `envcheck.digest`.
"""
