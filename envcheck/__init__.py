"""envcheck: can this machine really train PaddlePaddle models on its GPU?"""

__version__ = "0.1.0"
