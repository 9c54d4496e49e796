import sys

from envcheck.entry import main

sys.exit(main())
