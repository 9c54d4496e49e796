"""envcheck: can this machine really train PaddlePaddle models on its GPU?"""

from __future__ import annotations

__version__ = "0.1.0"
