"""lessonkit: the pure core of the course site (regions, evidence, transcripts, claims).

Nothing in this package imports MkDocs or CuPy; the hooks and the command line are
thin layers over it.
"""

from lessonkit.errors import LessonError, LessonErrors, split_notes, split_warnings

__all__ = ["LessonError", "LessonErrors", "split_notes", "split_warnings"]
