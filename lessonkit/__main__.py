import sys

from lessonkit.cli import main

sys.exit(main())
