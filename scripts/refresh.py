#!/usr/bin/env python3
"""Re-record a lesson's evidence on a GPU machine: .venv/bin/python scripts/refresh.py day62-racecheck [--only NAME[,NAME...]]."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lessonkit.evidence.refresh import main

if __name__ == "__main__":
    sys.exit(main())
