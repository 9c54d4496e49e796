"""The contracts between the layers: the facts the probes find, the findings and the report
the rules make of them, a saved report read back, versions, the exit codes and the one
expected-error type, and the command's environment. They import no other part of envcheck.
"""
