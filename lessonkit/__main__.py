"""`python -m lessonkit`: the command line (see lessonkit.cli.commands)."""

import sys

from lessonkit.cli.commands import main

sys.exit(main())
