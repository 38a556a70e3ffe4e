"""The command line, `python -m lessonkit` (commands) and its `accept` subcommand: the top layer
(base < evidence < pages < site < cli; tests/test_layout.py holds every module to its layer).

`main` is re-exported for the console script `lessonkit = "lessonkit.cli:main"`.
"""

from lessonkit.cli.commands import main

__all__ = ["main"]
