"""The page flow: a page's Markdown scanned for directives and claims, each claim resolved
against the evidence and judged, regions and transcripts rendered, and the page rules run.

Layer 3 of 5 (base < evidence < pages < site < cli); tests/test_layout.py holds every module
to its layer.
"""
