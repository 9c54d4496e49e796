from __future__ import annotations

import sys

from envcheck.entry import main

sys.exit(main())
