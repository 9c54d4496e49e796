"""Process exit codes: the contract scripts and CI gates rely on (documented in --help and README)."""

from enum import IntEnum, unique


@unique
class ExitStatus(IntEnum):
    OK = 0  # pass (warnings allowed)
    INCOMPATIBLE = 1  # the host cannot run the chosen Paddle build/image
    USAGE = 2  # bad flags or bad input (facts file, matrix, image reference)
    INTERNAL = 3  # a bug in envcheck
    ENVIRONMENT = 4  # could not act: daemon down, registry unreachable, no space
    SMOKE_FAILED = 5  # the smoke training crashed, timed out or did not learn
    CPU_FALLBACK = 6  # the smoke "worked" but never touched the GPU
    WRONG_RESULTS = 7  # the smoke ran but computed wrong numbers (known answers, loss)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: everything we created was removed (128 + SIGINT)


EXIT_CODES_HELP = """exit codes:
  0  pass (warnings allowed)
  1  incompatible: a check failed
  2  usage or bad input (flags, facts file, matrix, image reference)
  3  internal error (a bug in envcheck: please report it)
  4  environment: could not act (daemon down, registry unreachable, no space)
  5  smoke training failed (crash, timeout, loss did not fall)
  6  silent CPU fallback: a GPU was expected but the work ran on the CPU
  7  wrong results: the smoke's known-answer checks or its loss were wrong (e.g. zeros)
  130  interrupted (Ctrl-C, SIGTERM): what envcheck created was removed"""
