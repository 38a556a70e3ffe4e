"""Unicode folding for the rendered-page audit: what a reader takes a piece of text to say.

`shown(text)` is Unicode's compatibility normalisation (NFKC): mathematical alphanumerics
(U+1D400 on: 𝐑𝐀𝐂𝐄 is RACE), fullwidth and circled forms, superscript digits all become the
plain characters a reader reads them as. `skeleton(text)` goes on to fold look-alikes to one
letter each, character by character (so positions in it are positions in `shown(text)`), for
finding a tool's phrases however they are spelt: a Cyrillic С for a Latin C, a digit zero for
a capital O (`ERR0R SUMMARY`), a one or a capital I for a small l.

The look-alike table is written here rather than taken from a package: PyPI's maintained
options (confusable-homoglyphs, confusables) answer "is this string confusable?" from a
megabyte of data, where the audit needs one fold over the few phrases it looks for, and the
core keeps to the standard library. The pairs are those of Unicode's confusables list
(https://www.unicode.org/Public/security/latest/confusables.txt) for the Latin letters and
digits of those phrases.
"""

from __future__ import annotations

import unicodedata

# Cyrillic and Greek letters that Unicode's confusables list maps to a Latin letter (lower case:
# the skeleton is taken after lower-casing), and digits and marks a reader takes for letters.
_LOOKALIKE_PAIRS = (
    "а a", "в b", "с c", "е e", "һ h", "і i", "ј j", "к k", "м m", "н h", "о o", "р p", "ѕ s",
    "т t", "у y", "х x", "ү y", "ԁ d", "ԛ q", "ԝ w", "ɡ g",
    "α a", "β b", "ε e", "ζ z", "η n", "ι i", "κ k", "μ u", "ν v", "ο o", "ρ p", "τ t", "υ u",
    "χ x", "ω w",
    "0 o", "1 l", "i l", "| l", "ı l", "5 s",
)
_FOLD = {ord(pair[0]): pair[2] for pair in _LOOKALIKE_PAIRS}
# The letters of other scripts among them, in both cases: a Latin word with one in it hides it
# (lessonkit.pages.audit refuses such a word).
LOOKALIKE_LETTERS = frozenset(c for pair in _LOOKALIKE_PAIRS for c in (pair[0], pair[0].upper())
                              if not c.isascii() and c.isalpha())


def shown(text: str) -> str:
    """The text as a reader reads it: NFKC."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def skeleton(text: str) -> str:
    """`text` (already `shown`) lower-cased and with look-alikes folded, one character for one."""
    lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text) if not text.isascii() \
        else text.lower()
    return lowered.translate(_FOLD)


# Characters a reader does not see: Unicode's format characters (zero-width space and joiners, soft
# hyphen, bidirectional marks, ...) and the fillers that render as nothing.
_INVISIBLE_EXTRA = frozenset("\u034f\u115f\u1160\u3164\uffa0\u2800")  # fillers, a blank Braille cell


def is_selector(c: str) -> bool:
    """Whether `c` is a variation selector: it picks the form of the character before it (an emoji's)."""
    return "\ufe00" <= c <= "\ufe0f" or "\U000e0100" <= c <= "\U000e01ef"


def is_invisible(c: str) -> bool:
    """Whether a reader sees nothing of character `c` (a variation selector: nothing of its own)."""
    return c in _INVISIBLE_EXTRA or unicodedata.category(c) == "Cf" or is_selector(c)
