"""`python -m lessonkit`: the command line (see lessonkit.cli)."""

import sys

from lessonkit.cli import main

sys.exit(main())
